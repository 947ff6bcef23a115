/* Unit tests of the state backend interface (server/cluster/state_backend.h): the file
 * backend's round trip and lock, and the cluster's side of a shared backend through a
 * fake one: commits name the groups they change, a lost race (FRUGAL_EABORTED) is
 * retried on the state the watch brought and still holds max_size, another replica's
 * commit is published, a follower does no provider work, a leader whose write was
 * fenced steps down without an error, and the first write of a start or a reload that
 * another replica beat is made again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster.h"
#include "config.h"
#include "provider.h"
#include "state_backend.h"
#include "store_testing.h"

/* ---- a fake shared backend ---- */

typedef struct fake {
    int commits;
    int loads;
    int aborts_left;   /* commits to refuse with FRUGAL_EABORTED */
    int32_t remote_to; /* on sync after an abort: deliver web-a at this target */
    bool leader;
    bool fence_next; /* the next provider-work commit finds the lease gone (a pause) */
    size_t last_changed;
    bool last_provider_work;
    state_watch_fn fn;
    void *arg;
    group_t *stored; /* web-a as "another replica" stored it */
} fake_t;

static int fake_load(state_backend_t *b, state_t *out, frugal_err_t *err) {
    ((fake_t *)b->impl)->loads++;
    memset(out, 0, sizeof(*out));
    return frugal_err_set(err, FRUGAL_ENOTFOUND, "empty");
}

static int fake_commit(state_backend_t *b, const state_commit_t *c, frugal_err_t *err) {
    fake_t *f = b->impl;
    f->last_changed = c->changed_count;
    f->last_provider_work = c->provider_work;
    if (f->fence_next && c->provider_work) {
        f->fence_next = false;
        f->leader = false;
        return frugal_err_set(err, FRUGAL_EPRECOND, "this replica lost the leadership");
    }
    if (f->aborts_left > 0) {
        f->aborts_left--;
        return frugal_err_set(err, FRUGAL_EABORTED, "another replica changed it first");
    }
    f->commits++;
    return 0;
}

static bool fake_leader(state_backend_t *b) {
    return ((fake_t *)b->impl)->leader;
}

static int fake_watch(state_backend_t *b, state_watch_fn fn, void *arg, frugal_err_t *err) {
    fake_t *f = b->impl;
    f->fn = fn;
    f->arg = arg;
    return 0;
}

/* The watch catches up: "another replica" grew web-a to remote_to. */
static int fake_sync(state_backend_t *b, int64_t deadline_ms, frugal_err_t *err) {
    (void)deadline_ms;
    fake_t *f = b->impl;
    if (f->stored != NULL && f->fn != NULL) {
        group_t g;
        assert_int_equal(group_copy(&g, f->stored), 0);
        g.target_size = f->remote_to;
        f->fn(f->arg, "web-a", &g);
        group_clear(&g);
    }
    return 0;
}

static const char *fake_describe(const state_backend_t *b) {
    return "fake";
}

static void fake_destroy(state_backend_t *b) {}

static const state_backend_ops_t fake_ops = {
    .kind = "fake",
    .load = fake_load,
    .commit = fake_commit,
    .leader = fake_leader,
    .watch = fake_watch,
    .sync = fake_sync,
    .describe = fake_describe,
    .destroy = fake_destroy,
};

typedef struct fx {
    frugal_config_t *cfg;
    provider_t *provider;
    cluster_t *c;
    fake_t fake;
    state_backend_t backend;
} fx_t;

/* The cluster on the fake backend, whose first aborts commits are lost to "another
 * replica". */
static int setup_losing(void **state, int aborts) {
    fx_t *f = calloc(1, sizeof(*f));
    const char *yaml = "provider: {kind: simulated, boot_seconds: 0}\n"
                       "node_groups:\n"
                       "  - {id: web-a, machine_type: n1-standard-2, min_size: 0, max_size: 10}\n"
                       "  - {id: web-b, machine_type: n1-standard-2, min_size: 0, max_size: 10}\n";
    char *errors = NULL;
    assert_int_equal(config_load_string("t.yaml", yaml, strlen(yaml), &f->cfg, &errors), 0);
    frugal_err_t err = {0};
    assert_int_equal(provider_create(f->cfg, &f->provider, &err), 0);
    f->fake.leader = true;
    f->fake.aborts_left = aborts;
    f->backend.ops = &fake_ops;
    f->backend.impl = &f->fake;
    assert_int_equal(cluster_open(f->cfg, f->provider, &f->backend, &f->c, &err), 0);
    assert_non_null(f->fake.fn); /* the cluster listens to other replicas */
    *state = f;
    return 0;
}

static int setup(void **state) {
    return setup_losing(state, 0);
}

/* Replicas started together on an empty prefix: the one whose first write lost loads the
 * state again and opens. */
static int setup_lost_first_write(void **state) {
    return setup_losing(state, 1);
}

static int teardown(void **state) {
    fx_t *f = *state;
    cluster_close(f->c);
    provider_destroy(f->provider);
    config_free(f->cfg);
    group_free(f->fake.stored);
    free(f);
    return 0;
}

static int32_t target_of(cluster_t *c, const char *id) {
    cluster_read_lock(c);
    int32_t t = cluster_find_group(c, id)->target_size;
    cluster_read_unlock(c);
    return t;
}

static void test_commit_names_the_changed_group(void **state) {
    fx_t *f = *state;
    frugal_err_t err = {0};
    assert_int_equal(cluster_increase_size(f->c, NULL, "web-a", 2, &err), 0);
    assert_int_equal(f->fake.last_changed, 1);
    assert_false(f->fake.last_provider_work);
    assert_int_equal(target_of(f->c, "web-a"), 2);
}

/* The loser of a race retries on the winner's state: 9 stored by the other replica, so
 * +1 fits and +2 is refused as past max_size, never committed. */
static void test_conflict_retries_on_the_new_state(void **state) {
    fx_t *f = *state;
    frugal_err_t err = {0};
    cluster_read_lock(f->c);
    assert_int_equal(group_dup(cluster_find_group(f->c, "web-a"), &f->fake.stored, &err), 0);
    cluster_read_unlock(f->c);
    f->fake.remote_to = 9;
    f->fake.aborts_left = 1;
    int before = f->fake.commits;
    assert_int_equal(cluster_increase_size(f->c, NULL, "web-a", 2, &err), FRUGAL_EPRECOND);
    assert_non_null(strstr(err.msg, "max_size"));
    assert_int_equal(f->fake.commits, before);
    assert_int_equal(target_of(f->c, "web-a"), 9);
    f->fake.aborts_left = 1;
    assert_int_equal(cluster_increase_size(f->c, NULL, "web-a", 1, &err), 0);
    assert_int_equal(target_of(f->c, "web-a"), 10);
}

static void test_open_after_a_lost_first_write(void **state) {
    fx_t *f = *state;
    assert_int_equal(f->fake.loads, 2);
    assert_int_equal(f->fake.commits, 1);
    assert_int_equal(target_of(f->c, "web-a"), 0);
}

/* Two replicas reload the same edit at once: the one whose commit lost applies it again. */
static void test_reload_retries_a_lost_commit(void **state) {
    fx_t *f = *state;
    const char *yaml = "provider: {kind: simulated, boot_seconds: 0}\n"
                       "node_groups:\n"
                       "  - {id: web-a, machine_type: n1-standard-2, min_size: 0, max_size: 12}\n"
                       "  - {id: web-b, machine_type: n1-standard-2, min_size: 0, max_size: 10}\n";
    frugal_config_t *next = NULL;
    char *errors = NULL;
    assert_int_equal(config_load_string("t.yaml", yaml, strlen(yaml), &next, &errors), 0);
    frugal_err_t err = {0};
    f->fake.aborts_left = 1;
    int before = f->fake.commits;
    assert_int_equal(cluster_reload(f->c, next, &err), 0);
    config_release(next);
    assert_int_equal(f->fake.commits, before + 1);
    cluster_read_lock(f->c);
    assert_int_equal(cluster_find_group(f->c, "web-a")->max_size, 12);
    cluster_read_unlock(f->c);
}

static void test_conflicts_give_up(void **state) {
    fx_t *f = *state;
    frugal_err_t err = {0};
    f->fake.aborts_left = 100;
    assert_int_equal(cluster_increase_size(f->c, NULL, "web-b", 1, &err), FRUGAL_EABORTED);
    assert_int_equal(target_of(f->c, "web-b"), 0);
    f->fake.aborts_left = 0;
}

static void test_follower_does_no_provider_work(void **state) {
    fx_t *f = *state;
    frugal_err_t err = {0};
    assert_int_equal(cluster_increase_size(f->c, NULL, "web-a", 1, &err), 0);
    f->fake.leader = false;
    int before = f->fake.commits;
    assert_int_equal(cluster_refresh(f->c, NULL, &err), 0);
    assert_int_equal(f->fake.commits, before);
    f->fake.leader = true;
    assert_int_equal(cluster_refresh(f->c, NULL, &err), 0); /* creating -> running */
    assert_int_equal(f->fake.commits, before + 1);
    assert_true(f->fake.last_provider_work);
}

/* Paused past the lease between the leader check and the write: the store fences the
 * write, and the replica steps down quietly (no error: the new leader does the work);
 * as leader again, the same refresh commits. */
static void test_fenced_refresh_steps_down(void **state) {
    fx_t *f = *state;
    frugal_err_t err = {0};
    assert_int_equal(cluster_increase_size(f->c, NULL, "web-a", 1, &err), 0);
    int before = f->fake.commits;
    f->fake.fence_next = true;
    assert_int_equal(cluster_refresh(f->c, NULL, &err), 0);
    assert_int_equal(err.code, 0);
    assert_int_equal(f->fake.commits, before);
    f->fake.leader = true;
    assert_int_equal(cluster_refresh(f->c, NULL, &err), 0);
    assert_int_equal(f->fake.commits, before + 1);
}

/* Another replica's mutation committed first: the refresh runs again on it, and commits. */
static void test_refresh_retries_after_conflict(void **state) {
    fx_t *f = *state;
    frugal_err_t err = {0};
    assert_int_equal(cluster_increase_size(f->c, NULL, "web-a", 1, &err), 0);
    int before = f->fake.commits;
    f->fake.aborts_left = 1;
    assert_int_equal(cluster_refresh(f->c, NULL, &err), 0);
    assert_int_equal(f->fake.commits, before + 1);
    assert_true(f->fake.last_provider_work);
}

/* A refused write while still leader (conflicts every time) is a failure, and says so. */
static void test_refused_refresh_as_leader_fails(void **state) {
    fx_t *f = *state;
    frugal_err_t err = {0};
    assert_int_equal(cluster_increase_size(f->c, NULL, "web-a", 1, &err), 0);
    f->fake.aborts_left = 100;
    assert_int_not_equal(cluster_refresh(f->c, NULL, &err), 0);
    assert_int_not_equal(err.code, 0);
    f->fake.aborts_left = 0;
}

/* ---- the file backend ---- */

static void test_file_backend_round_trip(void **state) {
    char dir[] = "/tmp/frugal-test-backend-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/state", dir);
    state_backend_t *b = NULL, *other = NULL;
    frugal_err_t err = {0};
    assert_int_equal(state_backend_file_create(path, &b, &err), 0);
    assert_string_equal(b->ops->kind, "file");
    assert_int_equal(state_backend_lock(b, &err), 0);
    assert_int_equal(state_backend_file_create(path, &other, &err), 0);
    assert_int_equal(state_backend_lock(other, &err), FRUGAL_EEXISTS);
    state_backend_destroy(other);
    assert_true(state_backend_leader(b));
    state_t st;
    assert_int_equal(state_backend_load(b, &st, &err), FRUGAL_ENOTFOUND);
    group_spec_t spec = {.id = "web-a", .machine_type = "n1-standard-2"};
    group_t *g = NULL;
    assert_int_equal(group_new(&spec, &g), 0);
    g->managed = true;
    g->exists = true;
    g->max_size = 5;
    g->target_size = 3;
    const group_t *view[] = {g};
    state_commit_t c = {.view = view, .count = 1, .changed = view, .changed_count = 1};
    assert_int_equal(state_backend_commit(b, &c, &err), 0);
    assert_int_equal(state_backend_load(b, &st, &err), 0);
    assert_int_equal(st.count, 1);
    assert_int_equal(st.groups[0].target_size, 3);
    state_free(&st);
    group_free(g);
    char *desc = strdup(state_backend_describe(b));
    state_backend_destroy(b);
    assert_non_null(strstr(desc, path));
    free(desc);
    unlink(path);
    char lock[140];
    snprintf(lock, sizeof(lock), "%s.lock", path);
    unlink(lock);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commit_names_the_changed_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conflict_retries_on_the_new_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conflicts_give_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_after_a_lost_first_write, setup_lost_first_write,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reload_retries_a_lost_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_follower_does_no_provider_work, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fenced_refresh_steps_down, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refresh_retries_after_conflict, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_refresh_as_leader_fails, setup, teardown),
        cmocka_unit_test(test_file_backend_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
