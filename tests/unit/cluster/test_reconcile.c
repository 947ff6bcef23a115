/* Unit tests of providers/reconcile.c: which running instances a list misses and when
 * they are replaced, what is never judged (creating, deleting, created within the last
 * interval), unknown machines only when the round can tell and not when another group
 * holds them, and the per-group records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "group.h"
#include "reconcile.h"

#define NOW 1000000
#define INTERVAL 10000

/* A group with instances ids[i] in states[i] since since[i]. */
static group_t *make_group(size_t n, const char *const *ids, const instance_state_t *states,
                           const int64_t *since) {
    group_spec_t spec = {.id = "pool-a", .machine_type = "n1-standard-1", .spot_price = -1};
    group_t *g = NULL;
    assert_int_equal(group_new(&spec, &g), 0);
    g->instances = calloc(n, sizeof(*g->instances));
    for (size_t i = 0; i < n; i++) {
        g->instances[i].id = strdup(ids[i]);
        g->instances[i].state = states[i];
        g->instances[i].state_since_ms = since[i];
    }
    g->instances_count = n;
    g->target_size = (int32_t)n;
    return g;
}

static void listing(hook_listing_t *l, const char *text) {
    char why[128];
    assert_int_equal(hook_output_parse_list(text, strlen(text), l, why, sizeof(why)), 0);
}

static const reconcile_policy_t policy = {.interval_ms = INTERVAL, .missing_after = 2};

static void test_missing_then_replaced(void **state) {
    (void)state;
    const char *ids[] = {"m://a", "m://b", "m://c"};
    instance_state_t st[] = {INSTANCE_RUNNING, INSTANCE_RUNNING, INSTANCE_RUNNING};
    int64_t since[] = {0, 0, 0};
    group_t *g = make_group(3, ids, st, since);
    reconcile_t r = {0};
    reconcile_group_t *rg = reconcile_group(&r, "pool-a");
    assert_ptr_equal(reconcile_group(&r, "pool-a"), rg);
    hook_listing_t l = {0};
    reconcile_verdict_t v;

    /* a and c missing once: nothing yet */
    listing(&l, "m://b running\n");
    rg->listed_ms = NOW;
    assert_int_equal(reconcile_judge(rg, g, &r, &l, &policy, true, &v), 0);
    assert_int_equal(v.replace_count, 0);
    assert_int_equal(rg->misses_count, 2);
    reconcile_verdict_clear(&v);
    hook_listing_clear(&l);

    /* c is back (its count starts over), a missing twice: replaced */
    listing(&l, "m://b\nm://c\n");
    rg->listed_ms = NOW + INTERVAL;
    assert_int_equal(reconcile_judge(rg, g, &r, &l, &policy, true, &v), 0);
    assert_int_equal(v.replace_count, 1);
    assert_int_equal(v.replace[0], 0);
    assert_int_equal(rg->misses_count, 0);
    reconcile_verdict_clear(&v);

    /* c missing once after it came back: one miss, not two */
    hook_listing_clear(&l);
    listing(&l, "m://a\nm://b\n");
    assert_int_equal(reconcile_judge(rg, g, &r, &l, &policy, true, &v), 0);
    assert_int_equal(v.replace_count, 0);
    assert_int_equal(rg->misses_count, 1);
    assert_string_equal(rg->misses[0].id, "m://c");
    reconcile_verdict_clear(&v);

    /* missing_after 1: at the first miss */
    const reconcile_policy_t eager = {.interval_ms = INTERVAL, .missing_after = 1};
    hook_listing_clear(&l);
    listing(&l, "");
    assert_int_equal(reconcile_judge(rg, g, &r, &l, &eager, true, &v), 0);
    assert_int_equal(v.replace_count, 3);
    assert_int_equal(v.replace[2], 2);
    reconcile_verdict_clear(&v);
    hook_listing_clear(&l);
    reconcile_clear(&r);
    assert_null(r.groups);
    group_free(g);
}

/* Creating, deleting, and running since less than an interval before the list: never
 * missing, and their counts are dropped. */
static void test_never_judged(void **state) {
    (void)state;
    const char *ids[] = {"m://creating", "m://deleting", "m://young", "m://edge", "m://old"};
    instance_state_t st[] = {INSTANCE_CREATING, INSTANCE_DELETING, INSTANCE_RUNNING,
                             INSTANCE_RUNNING, INSTANCE_RUNNING};
    int64_t since[] = {0, 0, NOW - INTERVAL + 1, NOW - INTERVAL, 0};
    group_t *g = make_group(5, ids, st, since);
    reconcile_t r = {0};
    reconcile_group_t *rg = reconcile_group(&r, "pool-a");
    rg->listed_ms = NOW;
    hook_listing_t l = {0};
    reconcile_verdict_t v;
    const reconcile_policy_t eager = {.interval_ms = INTERVAL, .missing_after = 1};
    assert_int_equal(reconcile_judge(rg, g, &r, &l, &eager, true, &v), 0);
    assert_int_equal(v.replace_count, 2);
    assert_int_equal(v.replace[0], 3); /* running since exactly an interval before */
    assert_int_equal(v.replace[1], 4);
    reconcile_verdict_clear(&v);
    reconcile_clear(&r);
    group_free(g);
}

static void test_unknown_machines(void **state) {
    (void)state;
    const char *ids[] = {"m://a", "frugal://pool-a/pool-a-2"};
    instance_state_t st[] = {INSTANCE_RUNNING, INSTANCE_CREATING};
    int64_t since[] = {0, NOW};
    group_t *g = make_group(2, ids, st, since);
    reconcile_t r = {0};
    reconcile_group_t *rg = reconcile_group(&r, "pool-a");
    rg->listed_ms = NOW;
    hook_listing_t l = {0};
    reconcile_verdict_t v;
    listing(&l, "m://a\nm://leak shutoff\nfrugal://pool-a/pool-a-2\nm://leak2\n");
    assert_int_equal(reconcile_judge(rg, g, &r, &l, &policy, true, &v), 0);
    assert_true(v.unknown_judged);
    assert_int_equal(v.unknown_count, 2);
    assert_string_equal(v.unknown[0], "m://leak");
    assert_string_equal(v.unknown[1], "m://leak2");
    /* the leaks a list showed are known at the next one (warned once), and only them */
    assert_false(reconcile_leak_known(rg, "m://leak"));
    assert_int_equal(reconcile_note_leaks(rg, &v), 0);
    assert_true(reconcile_leak_known(rg, "m://leak") && reconcile_leak_known(rg, "m://leak2"));
    assert_false(reconcile_leak_known(rg, "m://a"));
    reconcile_verdict_clear(&v);
    /* a machine another group holds is not a leak: a hook that lists more than GROUP's */
    reconcile_group_t *other = reconcile_group(&r, "pool-b");
    const char *other_ids[] = {"m://leak2"};
    group_t *b = make_group(1, other_ids, st, since);
    assert_int_equal(reconcile_note_held(other, b), 0);
    assert_int_equal(reconcile_judge(rg, g, &r, &l, &policy, true, &v), 0);
    assert_int_equal(v.unknown_count, 1);
    assert_string_equal(v.unknown[0], "m://leak");
    assert_int_equal(v.foreign_count, 1);
    assert_string_equal(v.foreign[0], "m://leak2");
    reconcile_verdict_clear(&v);
    /* its own record does not count as another group's */
    assert_int_equal(reconcile_note_held(rg, g), 0);
    assert_int_equal(reconcile_judge(rg, g, &r, &l, &policy, true, &v), 0);
    assert_int_equal(v.unknown_count, 1);
    reconcile_verdict_clear(&v);
    group_free(b);
    /* a round with machine work in flight cannot tell */
    assert_int_equal(reconcile_judge(rg, g, &r, &l, &policy, false, &v), 0);
    assert_false(v.unknown_judged);
    assert_int_equal(v.unknown_count, 0);
    reconcile_verdict_clear(&v);
    hook_listing_clear(&l);
    reconcile_clear(&r);
    group_free(g);
}

static bool keep_b(void *arg, const char *group) {
    (void)arg;
    return strcmp(group, "b") == 0;
}

/* A list that shows none of two or more judged instances is not believed; one that
 * shows any of them is, and a group of one instance can lose it, unless machines nobody
 * holds are listed instead. */
static void test_credible(void **state) {
    (void)state;
    const char *ids[] = {"m://a", "m://b", "m://c"};
    instance_state_t st[] = {INSTANCE_RUNNING, INSTANCE_RUNNING, INSTANCE_CREATING};
    int64_t since[] = {0, 0, 0};
    group_t *g = make_group(3, ids, st, since);
    reconcile_t r = {0};
    reconcile_group_t *rg = reconcile_group(&r, "pool-a");
    rg->listed_ms = NOW;
    hook_listing_t l = {0};
    size_t judged = 0;
    listing(&l, "");
    assert_false(reconcile_credible(rg, g, &r, &l, &policy, &judged));
    assert_int_equal(judged, 2); /* the creating one is not judged */
    hook_listing_clear(&l);
    listing(&l, "m://zzz\n"); /* only machines frugal does not know */
    assert_false(reconcile_credible(rg, g, &r, &l, &policy, &judged));
    hook_listing_clear(&l);
    listing(&l, "m://b\n");
    assert_true(reconcile_credible(rg, g, &r, &l, &policy, &judged));
    hook_listing_clear(&l);
    g->instances_count = 1; /* one running instance: its absence is believed */
    listing(&l, "");
    assert_true(reconcile_credible(rg, g, &r, &l, &policy, &judged));
    assert_int_equal(judged, 1);
    hook_listing_clear(&l);
    /* ... unless the list shows machines no group holds in its place: a hook asking the
     * wrong project would have them deleted as leaks. Another group's machines do not
     * count (a hook may list more than GROUP's). */
    listing(&l, "other://prod-db-1\n");
    assert_false(reconcile_credible(rg, g, &r, &l, &policy, &judged));
    hook_listing_clear(&l);
    reconcile_group_t *other = reconcile_group(&r, "pool-b");
    const char *held[] = {"m://b-1"};
    instance_state_t held_st[] = {INSTANCE_RUNNING};
    group_t *gb = make_group(1, held, held_st, since);
    assert_int_equal(reconcile_note_held(other, gb), 0);
    listing(&l, "m://b-1\n");
    assert_true(reconcile_credible(rg, g, &r, &l, &policy, &judged));
    hook_listing_clear(&l);
    group_free(gb);
    g->instances_count = 3;
    reconcile_clear(&r);
    group_free(g);
}

static void test_records(void **state) {
    (void)state;
    reconcile_t r = {0};
    reconcile_group_t *a = reconcile_group(&r, "a");
    reconcile_group_t *b = reconcile_group(&r, "b");
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a->next_list_ms, 0); /* a new group is listed at once */
    reconcile_prune(&r, keep_b, NULL);
    assert_ptr_equal(r.groups, b);
    assert_null(b->next);
    reconcile_clear(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_then_replaced),
        cmocka_unit_test(test_never_judged),
        cmocka_unit_test(test_unknown_machines),
        cmocka_unit_test(test_credible),
        cmocka_unit_test(test_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
