#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster.h"
#include "cluster_testing.h"
#include "log.h"
#include "provider.h"
#include "state.h"
#include "store_testing.h"

/* ------------------------------------------------------------------------------------
 * Fixture: a hand-built config (config_load is not used), a simulated provider, a
 * state file in a fresh temporary directory, and a controllable clock.
 * ---------------------------------------------------------------------------------- */

static int64_t fake_now = 1700000000000;
static int64_t fake_clock(void) {
    return fake_now;
}

typedef struct fx {
    frugal_config_t cfg;
    node_group_config_t ngs[4];
    provider_t *p;
    cluster_t *c;
    char dir[64];
    char path[128];
} fx_t;

static void ng_init(node_group_config_t *ng, const char *id, int32_t min, int32_t max, int32_t size,
                    bool managed) {
    memset(ng, 0, sizeof(*ng));
    ng->spec.id = (char *)id;
    ng->spec.machine_type = "n1-standard-2";
    ng->spec.zone = "us-central1-a";
    ng->spec.spot_price = -1;
    ng->min_size = min;
    ng->max_size = max;
    ng->size = size;
    ng->managed = managed;
}

/* pool-a [1, 10], pool-b [0, 5] size 3, main unmanaged size 2. */
static int fx_setup(void **state) {
    fx_t *f = calloc(1, sizeof(*f));
    strcpy(f->dir, "/tmp/frugal-cluster-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/state", f->dir);
    ng_init(&f->ngs[0], "pool-a", 1, 10, -1, true);
    ng_init(&f->ngs[1], "pool-b", 0, 5, 3, true);
    ng_init(&f->ngs[2], "main", 0, 0, 2, false);
    f->cfg.node_groups = f->ngs;
    f->cfg.node_groups_count = 3;
    f->cfg.state_file = f->path;
    f->cfg.provider_kind = "simulated";
    f->cfg.boot_seconds = 0;
    assert_int_equal(provider_create(&f->cfg, &f->p, NULL), 0);
    fake_now = 1700000000000;
    cluster_set_clock_for_testing(fake_clock);
    *state = f;
    return 0;
}

static int fx_teardown(void **state) {
    fx_t *f = *state;
    store_testing_cluster_close(f->c);
    provider_destroy(f->p);
    /* The state writer leaves PATH.tmp while it writes and keeps PATH.prev after. */
    char side[200];
    for (const char *const *ext = (const char *const[]){".tmp", ".prev", NULL}; *ext; ext++) {
        snprintf(side, sizeof(side), "%s%s", f->path, *ext);
        unlink(side);
    }
    unlink(f->path);
    assert_int_equal(rmdir(f->dir), 0);
    cluster_set_clock_for_testing(NULL);
    free(f);
    return 0;
}

static void fx_open(fx_t *f) {
    frugal_err_t err = {0};
    int rc = store_testing_cluster_open(&f->cfg, f->p, &f->c, &err);
    if (rc != 0)
        fail_msg("cluster_open: %s", err.msg);
}

static void fx_reopen(fx_t *f) {
    store_testing_cluster_close(f->c);
    f->c = NULL;
    fx_open(f);
}

/* The whole cluster as state-file text: equal snapshots mean nothing changed. */
static char *snapshot(cluster_t *c) {
    cluster_read_lock(c);
    size_t n = cluster_groups_count(c);
    const group_t **view = calloc(n + 1, sizeof(*view));
    for (size_t i = 0; i < n; i++)
        view[i] = cluster_group_at(c, i);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(state_format(view, n, &text, &len, NULL), 0);
    free(view);
    cluster_read_unlock(c);
    return text;
}

static char *read_file(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (fp == NULL)
        return strdup("");
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return buf;
}

/* Turn a state file's text into format version 1 in place (no checksums), so that a
 * test can edit it by hand: loading migrates it. */
static void unseal_v1(char *text) {
    char *w = text;
    for (char *r = text; *r != '\0';) {
        if ((strncmp(r, " crc=", 5) == 0 || strncmp(r, " sum=", 5) == 0) &&
            strspn(r + 5, "0123456789abcdef") == 8) {
            r += 13;
            continue;
        }
        if (strncmp(r, "version=2", 9) == 0) {
            memcpy(w, "version=1", 9);
            w += 9;
            r += 9;
            continue;
        }
        *w++ = *r++;
    }
    *w = '\0';
}

static void unlink_prev(const char *path) {
    char prev[300];
    snprintf(prev, sizeof(prev), "%s.prev", path);
    unlink(prev);
}

static void write_file(const char *path, const char *text) {
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static int32_t target_of(cluster_t *c, const char *id) {
    cluster_read_lock(c);
    const group_t *g = cluster_find_group(c, id);
    int32_t t = g != NULL ? g->target_size : -1;
    cluster_read_unlock(c);
    return t;
}

static size_t instances_of(cluster_t *c, const char *id) {
    cluster_read_lock(c);
    const group_t *g = cluster_find_group(c, id);
    size_t n = g != NULL ? g->instances_count : 0;
    cluster_read_unlock(c);
    return n;
}

/* ------------------------------------------------------------------------------------
 * Tests
 * ---------------------------------------------------------------------------------- */

static void test_open_fresh(void **state) {
    fx_t *f = *state;
    fx_open(f);
    cluster_read_lock(f->c);
    assert_ptr_equal(cluster_config(f->c), &f->cfg);
    assert_int_equal(cluster_groups_count(f->c), 3);
    assert_string_equal(cluster_group_at(f->c, 0)->spec.id, "pool-a");
    assert_string_equal(cluster_group_at(f->c, 2)->spec.id, "main");
    assert_null(cluster_group_at(f->c, 3));
    const group_t *a = cluster_find_group(f->c, "pool-a");
    const group_t *b = cluster_find_group(f->c, "pool-b");
    const group_t *m = cluster_find_group(f->c, "main");
    assert_null(cluster_find_group(f->c, "nope"));
    assert_int_equal(a->target_size, 1); /* min_size */
    assert_int_equal(a->instances_count, 1);
    assert_int_equal(b->target_size, 3); /* size */
    assert_int_equal(b->instances_count, 3);
    assert_int_equal(m->target_size, 2);
    assert_int_equal(m->instances_count, 0);
    assert_false(m->managed);
    assert_true(a->exists);
    assert_string_equal(a->spec.zone, "us-central1-a");
    assert_ptr_not_equal(a->spec.id, f->ngs[0].spec.id); /* deep copy */
    assert_int_equal(cluster_node_count(f->c), 6);
    const instance_t *in = NULL;
    assert_ptr_equal(cluster_find_instance(f->c, "frugal://pool-b/pool-b-2", &in), b);
    assert_string_equal(in->id, "frugal://pool-b/pool-b-2");
    assert_int_equal(in->state, INSTANCE_CREATING);
    assert_int_equal(in->state_since_ms, fake_now);
    assert_null(cluster_find_instance(f->c, "frugal://pool-b/pool-b-9", &in));
    assert_null(in);
    cluster_read_unlock(f->c);
    /* The state file was written at open. */
    assert_int_equal(access(f->path, F_OK), 0);

    /* Refresh: creating -> running (boot_seconds 0). */
    assert_int_equal(cluster_refresh(f->c, NULL, NULL), 0);
    cluster_read_lock(f->c);
    b = cluster_find_group(f->c, "pool-b");
    for (size_t i = 0; i < b->instances_count; i++)
        assert_int_equal(b->instances[i].state, INSTANCE_RUNNING);
    cluster_read_unlock(f->c);
}

static void test_no_state_file(void **state) {
    fx_t *f = *state;
    f->cfg.state_file = NULL;
    fx_open(f);
    assert_int_equal(cluster_increase_size(f->c, NULL, "pool-a", 2, NULL), 0);
    assert_int_equal(target_of(f->c, "pool-a"), 3);
    assert_int_equal(cluster_persist(f->c, NULL), 0);
    assert_int_equal(access(f->path, F_OK), -1);
}

static void test_increase(void **state) {
    fx_t *f = *state;
    fx_open(f);
    frugal_err_t err = {0};
    assert_int_equal(cluster_increase_size(f->c, NULL, "pool-a", 6, &err), 0);
    assert_int_equal(target_of(f->c, "pool-a"), 7);
    assert_int_equal(instances_of(f->c, "pool-a"), 7);
    cluster_read_lock(f->c);
    assert_int_equal(cluster_node_count(f->c), 12);
    const instance_t *in = NULL;
    assert_non_null(cluster_find_instance(f->c, "frugal://pool-a/pool-a-7", &in));
    assert_int_equal(in->state, INSTANCE_CREATING);
    cluster_read_unlock(f->c);

    char *before = snapshot(f->c);
    char *file_before = read_file(f->path);
    assert_int_equal(cluster_increase_size(f->c, NULL, "pool-a", 5, &err), FRUGAL_EPRECOND);
    assert_string_equal(err.msg, "increase of pool-a by 5 would exceed max_size 10 (target 7)");
    char *after = snapshot(f->c);
    char *file_after = read_file(f->path);
    assert_string_equal(before, after);
    assert_string_equal(file_before, file_after);
    /* Exactly up to max is fine. */
    assert_int_equal(cluster_increase_size(f->c, NULL, "pool-a", 3, &err), 0);
    assert_int_equal(target_of(f->c, "pool-a"), 10);
    free(before);
    free(after);
    free(file_before);
    free(file_after);
}

/* A refused call, and that it changed neither memory nor the file. */
static void expect_refusal(fx_t *f, int got, int want_code, frugal_err_t *err, const char *want_msg,
                           const char *before, const char *file_before) {
    if (got != want_code)
        fail_msg("got %s (%s), wanted %s", frugal_err_name(got), err->msg,
                 frugal_err_name(want_code));
    if (want_msg != NULL && strcmp(err->msg, want_msg) != 0)
        fail_msg("message \"%s\", wanted \"%s\"", err->msg, want_msg);
    char *after = snapshot(f->c);
    char *file_after = read_file(f->path);
    assert_string_equal(before, after);
    assert_string_equal(file_before, file_after);
    free(after);
    free(file_after);
}

static void test_refusals(void **state) {
    fx_t *f = *state;
    fx_open(f);
    /* pool-a: 1 running; pool-b: 2 running + 2 creating (target 4). */
    assert_int_equal(cluster_refresh(f->c, NULL, NULL), 0);
    size_t idx_dummy = 0;
    (void)idx_dummy;
    const char *b3[] = {"frugal://pool-b/pool-b-3"};
    assert_int_equal(cluster_delete_nodes(f->c, NULL, "pool-b", b3, 1, NULL), 0);
    assert_int_equal(cluster_refresh(f->c, NULL, NULL), 0);
    assert_int_equal(cluster_increase_size(f->c, NULL, "pool-b", 2, NULL), 0);

    char *before = snapshot(f->c);
    char *fb = read_file(f->path);
    frugal_err_t err = {0};
    const char *a1[] = {"frugal://pool-a/pool-a-1"};
    const char *b1[] = {"frugal://pool-b/pool-b-1"};
    const char *nobody[] = {"frugal://pool-b/pool-b-99"};
    const char *twice[] = {"frugal://pool-b/pool-b-1", "frugal://pool-b/pool-b-1"};

    expect_refusal(f, cluster_increase_size(f->c, NULL, "nope", 1, &err), FRUGAL_ENOTFOUND, &err,
                   "node group \"nope\" not found", before, fb);
    expect_refusal(f, cluster_decrease_target_size(f->c, NULL, "nope", -1, &err), FRUGAL_ENOTFOUND,
                   &err, NULL, before, fb);
    expect_refusal(f, cluster_delete_nodes(f->c, NULL, "nope", b1, 1, &err), FRUGAL_ENOTFOUND, &err,
                   NULL, before, fb);
    expect_refusal(f, cluster_increase_size(f->c, NULL, NULL, 1, &err), FRUGAL_ENOTFOUND, &err,
                   NULL, before, fb);
    expect_refusal(f, cluster_increase_size(f->c, NULL, "pool-b", 0, &err), FRUGAL_EINVAL, &err,
                   "increase of pool-b: delta 0 must be positive", before, fb);
    expect_refusal(f, cluster_increase_size(f->c, NULL, "pool-b", -1, &err), FRUGAL_EINVAL, &err,
                   NULL, before, fb);
    expect_refusal(f, cluster_increase_size(f->c, NULL, "pool-b", INT32_MAX, &err), FRUGAL_EPRECOND,
                   &err, NULL, before, fb);
    expect_refusal(f, cluster_decrease_target_size(f->c, NULL, "pool-b", 0, &err), FRUGAL_EINVAL,
                   &err, "decrease of pool-b: delta 0 must be negative", before, fb);
    expect_refusal(f, cluster_decrease_target_size(f->c, NULL, "pool-b", 1, &err), FRUGAL_EINVAL,
                   &err, NULL, before, fb);
    expect_refusal(f, cluster_decrease_target_size(f->c, NULL, "pool-b", -3, &err), FRUGAL_EPRECOND,
                   &err,
                   "decrease of pool-b by -3 would go below the 2 running instances "
                   "(target 4, 2 not yet running)",
                   before, fb);
    expect_refusal(f, cluster_decrease_target_size(f->c, NULL, "pool-b", INT32_MIN, &err),
                   FRUGAL_EPRECOND, &err, NULL, before, fb);
    /* pool-a: min 1, one running: going under min. Add one creating first. */
    free(before);
    free(fb);
    assert_int_equal(cluster_increase_size(f->c, NULL, "pool-a", 1, NULL), 0);
    before = snapshot(f->c);
    fb = read_file(f->path);
    /* Both limits crossed (0 < min_size 1 and < 1 running): the configured one is named. */
    expect_refusal(f, cluster_decrease_target_size(f->c, NULL, "pool-a", -2, &err), FRUGAL_EPRECOND,
                   &err, "decrease of pool-a by -2 would go below min_size 1 (target 2)", before,
                   fb);
    assert_int_equal(cluster_refresh(f->c, NULL, NULL), 0);
    free(before);
    free(fb);
    before = snapshot(f->c);
    fb = read_file(f->path);
    /* pool-a has 2 running, min 1: deleting both goes under min_size. */
    const char *a12[] = {"frugal://pool-a/pool-a-1", "frugal://pool-a/pool-a-2"};
    expect_refusal(f, cluster_delete_nodes(f->c, NULL, "pool-a", a12, 2, &err), FRUGAL_EPRECOND,
                   &err, "deleting 2 nodes of pool-a would go below min_size 1 (target 2)", before,
                   fb);
    /* Foreign, unknown, duplicated, none. */
    expect_refusal(f, cluster_delete_nodes(f->c, NULL, "pool-a", b1, 1, &err), FRUGAL_EINVAL, &err,
                   "node frugal://pool-b/pool-b-1 is not an instance of node group pool-a "
                   "(it belongs to pool-b)",
                   before, fb);
    expect_refusal(f, cluster_delete_nodes(f->c, NULL, "pool-b", nobody, 1, &err), FRUGAL_EINVAL,
                   &err, "node frugal://pool-b/pool-b-99 is not an instance of node group pool-b",
                   before, fb);
    const char *mixed[] = {"frugal://pool-b/pool-b-1", "frugal://pool-a/pool-a-1"};
    expect_refusal(f, cluster_delete_nodes(f->c, NULL, "pool-b", mixed, 2, &err), FRUGAL_EINVAL,
                   &err, NULL, before, fb);
    expect_refusal(f, cluster_delete_nodes(f->c, NULL, "pool-b", twice, 2, &err), FRUGAL_EINVAL,
                   &err, "node frugal://pool-b/pool-b-1 given twice", before, fb);
    expect_refusal(f, cluster_delete_nodes(f->c, NULL, "pool-b", b1, 0, &err), FRUGAL_EINVAL, &err,
                   NULL, before, fb);
    /* Unmanaged group: every mutation refused. */
    expect_refusal(f, cluster_increase_size(f->c, NULL, "main", 1, &err), FRUGAL_EPRECOND, &err,
                   "node group main is not managed by frugal: cannot increase it", before, fb);
    expect_refusal(f, cluster_decrease_target_size(f->c, NULL, "main", -1, &err), FRUGAL_EPRECOND,
                   &err, NULL, before, fb);
    expect_refusal(f, cluster_delete_nodes(f->c, NULL, "main", a1, 1, &err), FRUGAL_EPRECOND, &err,
                   NULL, before, fb);
    free(before);
    free(fb);
}

static void test_decrease(void **state) {
    fx_t *f = *state;
    fx_open(f);
    assert_int_equal(cluster_refresh(f->c, NULL, NULL), 0); /* b-1..b-3 running */
    assert_int_equal(cluster_increase_size(f->c, NULL, "pool-b", 2, NULL),
                     0); /* b-4, b-5 creating */
    assert_int_equal(cluster_decrease_target_size(f->c, NULL, "pool-b", -1, NULL), 0);
    assert_int_equal(target_of(f->c, "pool-b"), 4);
    cluster_read_lock(f->c);
    assert_non_null(cluster_find_instance(f->c, "frugal://pool-b/pool-b-4", NULL));
    assert_null(cluster_find_instance(f->c, "frugal://pool-b/pool-b-5", NULL));
    assert_int_equal(cluster_node_count(f->c), 1 + 4 + 2);
    cluster_read_unlock(f->c);
    assert_int_equal(cluster_decrease_target_size(f->c, NULL, "pool-b", -1, NULL), 0);
    assert_int_equal(target_of(f->c, "pool-b"), 3);
    assert_int_equal(instances_of(f->c, "pool-b"), 3);
}

static void test_delete_nodes(void **state) {
    fx_t *f = *state;
    fx_open(f);
    assert_int_equal(cluster_refresh(f->c, NULL, NULL), 0);
    const char *ids[] = {"frugal://pool-b/pool-b-1", "frugal://pool-b/pool-b-3"};
    frugal_err_t err = {0};
    assert_int_equal(cluster_delete_nodes(f->c, NULL, "pool-b", ids, 2, &err), 0);
    assert_int_equal(target_of(f->c, "pool-b"), 1);
    cluster_read_lock(f->c);
    const instance_t *in = NULL;
    assert_non_null(cluster_find_instance(f->c, ids[0], &in));
    assert_int_equal(in->state, INSTANCE_DELETING);
    assert_int_equal(cluster_node_count(f->c), 1 + 1 + 2);
    cluster_read_unlock(f->c);
    /* A retry of the same deletion is a no-op, not a second decrement. */
    assert_int_equal(cluster_delete_nodes(f->c, NULL, "pool-b", ids, 2, &err), 0);
    assert_int_equal(target_of(f->c, "pool-b"), 1);
    /* After the provider's delay the instances are gone. */
    fake_now += 1;
    assert_int_equal(cluster_refresh(f->c, NULL, NULL), 0);
    assert_int_equal(instances_of(f->c, "pool-b"), 1);
    cluster_read_lock(f->c);
    assert_null(cluster_find_instance(f->c, ids[0], NULL));
    assert_non_null(cluster_find_instance(f->c, "frugal://pool-b/pool-b-2", NULL));
    cluster_read_unlock(f->c);
    /* Deleting the last one: pool-b min 0, now empty. */
    const char *last[] = {"frugal://pool-b/pool-b-2"};
    assert_int_equal(cluster_delete_nodes(f->c, NULL, "pool-b", last, 1, &err), 0);
    assert_int_equal(cluster_refresh(f->c, NULL, NULL), 0);
    cluster_read_lock(f->c);
    const group_t *b = cluster_find_group(f->c, "pool-b");
    assert_int_equal(b->target_size, 0);
    assert_int_equal(b->instances_count, 0);
    assert_int_equal(b->empty_since_ms, fake_now);
    cluster_read_unlock(f->c);
}

static void test_durable(void **state) {
    fx_t *f = *state;
    fx_open(f);
    assert_int_equal(cluster_increase_size(f->c, NULL, "pool-a", 4, NULL), 0);
    assert_int_equal(cluster_refresh(f->c, NULL, NULL), 0);
    const char *ids[] = {"frugal://pool-b/pool-b-2"};
    assert_int_equal(cluster_delete_nodes(f->c, NULL, "pool-b", ids, 1, NULL), 0);
    assert_int_equal(cluster_increase_size(f->c, NULL, "pool-b", 1, NULL), 0);
    char *before = snapshot(f->c);
    /* A second cluster on the same file while the first is still open: what it reads is
     * exactly what the first acknowledged. */
    cluster_t *other = NULL;
    provider_t *p2 = NULL;
    assert_int_equal(provider_create(&f->cfg, &p2, NULL), 0);
    frugal_err_t err = {0};
    assert_int_equal(store_testing_cluster_open(&f->cfg, p2, &other, &err), 0);
    char *seen = snapshot(other);
    assert_string_equal(before, seen);
    assert_int_equal(target_of(other, "pool-a"), 5);
    assert_int_equal(target_of(other, "pool-b"), 3);
    cluster_read_lock(other);
    const instance_t *in = NULL;
    assert_non_null(cluster_find_instance(other, ids[0], &in));
    assert_int_equal(in->state, INSTANCE_DELETING);
    cluster_read_unlock(other);
    /* Ids continue where they left off. */
    assert_int_equal(cluster_increase_size(other, NULL, "pool-b", 1, NULL), 0);
    cluster_read_lock(other);
    assert_non_null(cluster_find_instance(other, "frugal://pool-b/pool-b-5", NULL));
    cluster_read_unlock(other);
    store_testing_cluster_close(other);
    provider_destroy(p2);
    free(seen);
    free(before);
}

static void test_failed_write_changes_nothing(void **state) {
    fx_t *f = *state;
    fx_open(f);
    assert_int_equal(cluster_refresh(f->c, NULL, NULL), 0);
    assert_int_equal(cluster_increase_size(f->c, NULL, "pool-b", 1, NULL), 0);
    char *before = snapshot(f->c);
    /* Take the directory away: every write must fail. */
    assert_int_equal(unlink(f->path), 0);
    unlink_prev(f->path);
    assert_int_equal(rmdir(f->dir), 0);
    frugal_err_t err = {0};
    assert_int_equal(cluster_increase_size(f->c, NULL, "pool-a", 1, &err), FRUGAL_EIO);
    assert_non_null(strstr(err.msg, "state.tmp"));
    const char *ids[] = {"frugal://pool-b/pool-b-1"};
    assert_int_equal(cluster_delete_nodes(f->c, NULL, "pool-b", ids, 1, &err), FRUGAL_EIO);
    assert_int_equal(cluster_decrease_target_size(f->c, NULL, "pool-b", -1, &err), FRUGAL_EIO);
    assert_int_equal(cluster_persist(f->c, &err), FRUGAL_EIO);
    fake_now += 1000;
    assert_int_equal(cluster_increase_size(f->c, NULL, "pool-a", 1, &err), FRUGAL_EIO);
    char *after = snapshot(f->c);
    assert_string_equal(before, after);
    cluster_read_lock(f->c);
    assert_null(cluster_find_instance(f->c, "frugal://pool-a/pool-a-2", NULL));
    assert_int_equal(cluster_node_count(f->c), 1 + 4 + 2);
    cluster_read_unlock(f->c);
    /* Refresh would change pool-b-4 (creating -> running): it fails too, unchanged. */
    assert_int_equal(cluster_refresh(f->c, NULL, &err), FRUGAL_EIO);
    char *after2 = snapshot(f->c);
    assert_string_equal(before, after2);
    /* Bring the directory back: the next mutation succeeds. */
    assert_int_equal(mkdir(f->dir, 0755), 0);
    assert_int_equal(cluster_increase_size(f->c, NULL, "pool-a", 1, &err), 0);
    assert_int_equal(target_of(f->c, "pool-a"), 2);
    free(before);
    free(after);
    free(after2);
}

static void test_open_unwritable(void **state) {
    fx_t *f = *state;
    char bad[200];
    snprintf(bad, sizeof(bad), "%s/missing/state", f->dir);
    f->cfg.state_file = bad;
    frugal_err_t err = {0};
    assert_int_equal(store_testing_cluster_open(&f->cfg, f->p, &f->c, &err), FRUGAL_EIO);
    assert_null(f->c);
}

static void test_corrupt_rejected(void **state) {
    fx_t *f = *state;
    frugal_err_t err = {0};
    write_file(f->path, "frugal-state version=1\ngroup id=pool-a garbage\n");
    assert_int_equal(store_testing_cluster_open(&f->cfg, f->p, &f->c, &err), FRUGAL_EINVAL);
    assert_null(f->c);
    char want[200];
    snprintf(want, sizeof(want), "%s:2:", f->path);
    assert_non_null(strstr(err.msg, want));
    /* The file was left alone for the operator. */
    char *content = read_file(f->path);
    assert_string_equal(content, "frugal-state version=1\ngroup id=pool-a garbage\n");
    free(content);

    /* A file cut short (lost end record) is corrupt too. */
    unlink(f->path);
    fx_open(f);
    store_testing_cluster_close(f->c);
    f->c = NULL;
    content = read_file(f->path);
    unseal_v1(content);
    char *end = strstr(content, "end groups=");
    assert_non_null(end);
    *end = '\0';
    write_file(f->path, content);
    free(content);
    assert_int_equal(store_testing_cluster_open(&f->cfg, f->p, &f->c, &err), FRUGAL_EINVAL);
    assert_non_null(strstr(err.msg, "truncated"));

    /* Two groups claiming one instance. */
    unlink(f->path);
    fx_open(f);
    store_testing_cluster_close(f->c);
    f->c = NULL;
    content = read_file(f->path);
    unseal_v1(content);
    /* Rename pool-b's first instance to pool-a's id. */
    char *p = strstr(content, "frugal://pool-b/pool-b-1 ");
    assert_non_null(p);
    memcpy(p, "frugal://pool-a/pool-a-1", strlen("frugal://pool-a/pool-a-1"));
    memmove(p + strlen("frugal://pool-a/pool-a-1"), p + strlen("frugal://pool-b/pool-b-1"),
            strlen(p + strlen("frugal://pool-b/pool-b-1")) + 1);
    write_file(f->path, content);
    free(content);
    assert_int_equal(store_testing_cluster_open(&f->cfg, f->p, &f->c, &err), FRUGAL_EINVAL);
    assert_non_null(strstr(err.msg, "does not belong to the group it is listed under"));
}

/* Reopening the cluster from its file changes nothing: what it holds is what the file
 * holds. */
static void assert_reopens_same(fx_t *f) {
    char *s1 = snapshot(f->c);
    fx_reopen(f);
    char *s2 = snapshot(f->c);
    assert_string_equal(s1, s2);
    free(s1);
    free(s2);
}

/* Set pool-b's stored target to digit by hand (the file unsealed to version 1). */
static void edit_pool_b_target(fx_t *f, char digit) {
    store_testing_cluster_close(f->c);
    f->c = NULL;
    char *content = read_file(f->path);
    unseal_v1(content);
    char *t = strstr(strstr(content, "group id=pool-b "), " target=");
    assert_non_null(t);
    t[8] = digit;
    write_file(f->path, content);
    free(content);
    unlink_prev(f->path);
    fx_open(f);
}

/* A stored target that does not count the instances creating or running (a hand edit):
 * the missing ones are made, extra ones are counted. */
static void test_target_repaired(void **state) {
    fx_t *f = *state;
    fx_open(f);
    assert_int_equal(target_of(f->c, "pool-b"), 3);
    assert_int_equal(instances_of(f->c, "pool-b"), 3);
    edit_pool_b_target(f, '5');
    assert_int_equal(target_of(f->c, "pool-b"), 5);
    assert_int_equal(instances_of(f->c, "pool-b"), 5);
    cluster_read_lock(f->c);
    assert_non_null(cluster_find_instance(f->c, "frugal://pool-b/pool-b-5", NULL));
    cluster_read_unlock(f->c);
    edit_pool_b_target(f, '1');
    assert_int_equal(target_of(f->c, "pool-b"), 5);
    assert_int_equal(instances_of(f->c, "pool-b"), 5);
    /* and the repair is what the file now holds */
    assert_reopens_same(f);
}

static void test_reconcile(void **state) {
    fx_t *f = *state;
    f->ngs[1].size = 0; /* pool-b empty, so that the config may drop it */
    fx_open(f);
    assert_int_equal(cluster_increase_size(f->c, NULL, "pool-a", 7, NULL), 0); /* 8, creating */
    assert_int_equal(cluster_refresh(f->c, NULL, NULL), 0);                    /* all running */
    assert_int_equal(cluster_increase_size(f->c, NULL, "pool-a", 2, NULL),
                     0); /* 10: 8 run + 2 creating */
    store_testing_cluster_close(f->c);
    f->c = NULL;

    /* New config: the empty pool-b gone, pool-a max 5, main bigger, a new group pool-c. */
    f->ngs[0].max_size = 5;
    f->ngs[1] = f->ngs[2];
    f->ngs[1].size = 4;
    ng_init(&f->ngs[2], "pool-c", 2, 4, -1, true);
    f->cfg.node_groups_count = 3;
    fx_open(f);
    cluster_read_lock(f->c);
    assert_int_equal(cluster_groups_count(f->c), 3);
    assert_null(cluster_find_group(f->c, "pool-b"));
    assert_null(cluster_find_instance(f->c, "frugal://pool-b/pool-b-1", NULL));
    const group_t *a = cluster_find_group(f->c, "pool-a");
    assert_int_equal(a->target_size, 5);
    /* Both creating requests dropped, then the 3 newest running deleted. */
    size_t live = 0, deleting = 0;
    for (size_t i = 0; i < a->instances_count; i++) {
        live += a->instances[i].state == INSTANCE_RUNNING;
        deleting += a->instances[i].state == INSTANCE_DELETING;
    }
    assert_int_equal(live, 5);
    assert_int_equal(deleting, 3);
    const instance_t *in = NULL;
    assert_non_null(cluster_find_instance(f->c, "frugal://pool-a/pool-a-8", &in));
    assert_int_equal(in->state, INSTANCE_DELETING);
    assert_null(cluster_find_instance(f->c, "frugal://pool-a/pool-a-10", NULL));
    assert_int_equal(cluster_find_group(f->c, "main")->target_size, 4);
    assert_int_equal(cluster_find_group(f->c, "pool-c")->target_size, 2);
    assert_int_equal(cluster_node_count(f->c), 5 + 4 + 2);
    cluster_read_unlock(f->c);
    store_testing_cluster_close(f->c);
    f->c = NULL;

    /* Raise pool-a's min above its target: grown to min. */
    f->ngs[0].min_size = 5;
    f->ngs[0].max_size = 20;
    f->ngs[2].min_size = 3;
    fx_open(f);
    assert_int_equal(target_of(f->c, "pool-a"), 5);
    assert_int_equal(target_of(f->c, "pool-c"), 3);
    assert_int_equal(instances_of(f->c, "pool-c"), 3);
    /* The reconciled state is what the file now holds. */
    assert_reopens_same(f);
}

/* The open cluster closed, then a start with f's config refused with FRUGAL_EPRECOND and
 * a message holding want_msg, the state file left as it was. */
static void expect_start_refused(fx_t *f, const char *want_msg) {
    store_testing_cluster_close(f->c);
    f->c = NULL;
    char *file_before = read_file(f->path);
    frugal_err_t err = {0};
    assert_int_equal(store_testing_cluster_open(&f->cfg, f->p, &f->c, &err), FRUGAL_EPRECOND);
    assert_null(f->c);
    if (strstr(err.msg, want_msg) == NULL)
        fail_msg("message \"%s\", wanted \"%s\" in it", err.msg, want_msg);
    char *file_after = read_file(f->path);
    assert_string_equal(file_before, file_after);
    free(file_before);
    free(file_after);
}

static void test_autoprovisioned_persisted(void **state) {
    fx_t *f = *state;
    fx_open(f);
    store_testing_cluster_close(f->c);
    f->c = NULL;
    /* Append an autoprovisioned group with its full spec to the file. */
    char *content = read_file(f->path);
    unseal_v1(content);
    char *end = strstr(content, "end groups=");
    *end = '\0';
    char text[8192];
    snprintf(
        text, sizeof(text),
        "%sgroup id=nap-n1-standard-4-us-central1-a managed=1 autoprovisioned=1 exists=1 min=0 "
        "max=8 target=1 next_seq=2 empty_since=0 machine_type=n1-standard-4 "
        "zone=us-central1-a spot=0 spot_price=-1\n"
        "label key=team value=ml\n"
        "taint key=gpu value=a effect=NoSchedule\n"
        "resource key=nvidia.com/gpu value=1\n"
        "instance id=frugal://nap-n1-standard-4-us-central1-a/nap-n1-standard-4-us-central1-a-1 "
        "state=running since=5\n"
        "group id=nap-n1-standard-1 managed=1 autoprovisioned=1 exists=0 min=0 max=8 target=0 "
        "next_seq=1 empty_since=0 machine_type=n1-standard-1 spot=0 spot_price=-1\n"
        "group id=gpu-n1-standard-1 managed=1 autoprovisioned=1 exists=0 min=0 max=8 target=0 "
        "next_seq=1 empty_since=0 machine_type=n1-standard-1 spot=0 spot_price=-1\n"
        "end groups=6 instances=5\n",
        content);
    free(content);
    write_file(f->path, text);

    f->cfg.autoprovisioning.enabled = true;
    /* Limits as config.c defaults them: unlimited, 50 groups. */
    f->cfg.autoprovisioning.max_cpu_milli = INT64_MAX;
    f->cfg.autoprovisioning.max_memory_bytes = INT64_MAX;
    f->cfg.autoprovisioning.max_node_groups = 50;
    static char *allowed[] = {"n1-standard-1", "n1-standard-4"};
    f->cfg.autoprovisioning.machine_types = allowed;
    f->cfg.autoprovisioning.machine_types_count = 2;
    /* The catalog's entries of the two (a group whose type is in none cannot grow). */
    static machine_type_t types[] = {
        {"n1-standard-1", 1000, 3840LL << 20, 0, NULL, -1, -1, {0}},
        {"n1-standard-4", 4000, 15LL << 30, 0, NULL, -1, -1, {0}},
    };
    f->cfg.machine_types = types;
    f->cfg.machine_types_count = 2;
    f->cfg.autoprovisioning.prefix = "nap";
    fx_open(f);
    cluster_read_lock(f->c);
    /* The file's groups but the theoretical one under another prefix (gpu-), and the
     * theoretical group of n1-standard-4 in no zone. */
    assert_int_equal(cluster_groups_count(f->c), 6);
    assert_null(cluster_find_group(f->c, "gpu-n1-standard-1"));
    const group_t *g = cluster_find_group(f->c, "nap-n1-standard-4-us-central1-a");
    assert_non_null(g);
    assert_true(g->autoprovisioned);
    assert_true(g->managed);
    assert_true(g->exists);
    assert_string_equal(g->spec.machine_type, "n1-standard-4");
    assert_string_equal(g->spec.labels.items[0].value, "ml");
    assert_string_equal(g->spec.taints.items[0].value, "a");
    assert_string_equal(g->spec.extra_resources.items[0].key, "nvidia.com/gpu");
    assert_int_equal(g->max_size, 8);
    const group_t *t = cluster_find_group(f->c, "nap-n1-standard-1");
    assert_false(t->exists);
    assert_null(t->spec.zone);
    cluster_read_unlock(f->c);
    /* The first increase makes the theoretical group real. */
    assert_int_equal(cluster_increase_size(f->c, NULL, "nap-n1-standard-1", 2, NULL), 0);
    cluster_read_lock(f->c);
    t = cluster_find_group(f->c, "nap-n1-standard-1");
    assert_true(t->exists);
    assert_int_equal(t->target_size, 2);
    cluster_read_unlock(f->c);
    /* Survives a restart with its spec. */
    fx_reopen(f);
    cluster_read_lock(f->c);
    t = cluster_find_group(f->c, "nap-n1-standard-1");
    assert_non_null(t);
    assert_true(t->exists);
    assert_int_equal(t->target_size, 2);
    assert_string_equal(
        cluster_find_group(f->c, "nap-n1-standard-4-us-central1-a")->spec.taints.items[0].effect,
        "NoSchedule");
    cluster_read_unlock(f->c);

    /* Autoprovisioning turned off while its groups hold nodes: the start is refused (their
     * machines would be forgotten), the file untouched. */
    f->cfg.autoprovisioning.enabled = false;
    expect_start_refused(f, "node group nap-n1-standard-4-us-central1-a still has 1 node (target "
                            "size 1) but autoprovisioning is disabled: enable autoprovisioning "
                            "until it is empty");
}

/* A group removed from the config while it holds nodes: the start is refused, as a reload
 * is; once it is empty the start drops it. */
static void test_removed_group_on_start(void **state) {
    fx_t *f = *state;
    fx_open(f);
    assert_int_equal(cluster_refresh(f->c, NULL, NULL), 0); /* pool-b: 3 running */
    node_group_config_t all[3];
    memcpy(all, f->ngs, sizeof(all));
    f->ngs[1] = all[2]; /* pool-a and main */
    f->cfg.node_groups_count = 2;
    expect_start_refused(f, "node group pool-b still has 3 nodes (target size 3) but it is no "
                            "longer in the config: configure it again and scale it to 0 before "
                            "removing it");

    /* Configured again and emptied, it goes at the next start. */
    memcpy(f->ngs, all, sizeof(all));
    f->cfg.node_groups_count = 3;
    fx_open(f);
    const char *b[] = {"frugal://pool-b/pool-b-1", "frugal://pool-b/pool-b-2",
                       "frugal://pool-b/pool-b-3"};
    assert_int_equal(cluster_delete_nodes(f->c, NULL, "pool-b", b, 3, NULL), 0);
    assert_int_equal(cluster_refresh(f->c, NULL, NULL), 0);
    cluster_read_lock(f->c);
    assert_int_equal(cluster_find_group(f->c, "pool-b")->instances_count, 0);
    cluster_read_unlock(f->c);
    store_testing_cluster_close(f->c);
    f->c = NULL;
    f->ngs[1] = all[2];
    f->cfg.node_groups_count = 2;
    fx_open(f);
    cluster_read_lock(f->c);
    assert_null(cluster_find_group(f->c, "pool-b"));
    assert_int_equal(cluster_groups_count(f->c), 2);
    cluster_read_unlock(f->c);
}

/* ------------------------------------------------------------------------------------
 * Concurrency: many increasing threads never exceed max_size; readers meanwhile see
 * consistent groups.
 * ---------------------------------------------------------------------------------- */

typedef struct worker {
    cluster_t *c;
    int ok;
    int refused;
    int other;
} worker_t;

static int stop_readers;

static void *increase_worker(void *arg) {
    worker_t *w = arg;
    for (int i = 0; i < 4; i++) {
        frugal_err_t err = {0};
        int rc = cluster_increase_size(w->c, NULL, "pool-b", (i % 2) + 1, &err);
        if (rc == 0)
            w->ok += (i % 2) + 1;
        else if (rc == FRUGAL_EPRECOND)
            w->refused++;
        else
            w->other++;
        if (i == 2)
            cluster_refresh(w->c, NULL, NULL);
    }
    return NULL;
}

static int reader_violations; /* cmocka asserts are not thread-safe: count, check later */

static void *reader(void *arg) {
    cluster_t *c = arg;
    while (!__atomic_load_n(&stop_readers, __ATOMIC_ACQUIRE)) {
        cluster_read_lock(c);
        const group_t *g = cluster_find_group(c, "pool-b");
        int bad = g->target_size > g->max_size;
        size_t live = 0;
        for (size_t i = 0; i < g->instances_count; i++) {
            live += g->instances[i].state != INSTANCE_DELETING;
            const instance_t *in = NULL;
            bad |= cluster_find_instance(c, g->instances[i].id, &in) != g;
            bad |= in != &g->instances[i];
        }
        bad |= live != (size_t)g->target_size;
        cluster_read_unlock(c);
        if (bad)
            __atomic_add_fetch(&reader_violations, 1, __ATOMIC_RELAXED);
        /* Under valgrind, which runs one thread at a time, a reader that never yields
         * takes whole time slices from the writers: the test then ran for minutes. */
        sched_yield();
    }
    return NULL;
}

static void test_concurrent_increase(void **state) {
    fx_t *f = *state;
    f->ngs[1].max_size = 40;
    f->ngs[1].size = 0;
    fx_open(f);
    enum { THREADS = 32, READERS = 4 };
    pthread_t th[THREADS], rd[READERS];
    worker_t w[THREADS];
    memset(w, 0, sizeof(w));
    __atomic_store_n(&stop_readers, 0, __ATOMIC_RELEASE);
    for (int i = 0; i < READERS; i++)
        assert_int_equal(pthread_create(&rd[i], NULL, reader, f->c), 0);
    for (int i = 0; i < THREADS; i++) {
        w[i].c = f->c;
        assert_int_equal(pthread_create(&th[i], NULL, increase_worker, &w[i]), 0);
    }
    int ok = 0, refused = 0, other = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        ok += w[i].ok;
        refused += w[i].refused;
        other += w[i].other;
    }
    __atomic_store_n(&stop_readers, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < READERS; i++)
        pthread_join(rd[i], NULL);
    assert_int_equal(other, 0);
    assert_int_equal(reader_violations, 0);
    assert_true(refused > 0);
    /* Increments of 1 and 2 against a max of 40: the sum granted is the target. */
    int32_t target = target_of(f->c, "pool-b");
    assert_int_equal(ok, target);
    assert_true(target <= 40);
    assert_true(target >= 39);
    /* And it is what the file says. */
    fx_reopen(f);
    assert_int_equal(target_of(f->c, "pool-b"), target);
}

/* Lookups by provider id with thousands of nodes. */
static void test_many_instances(void **state) {
    fx_t *f = *state;
    f->ngs[1].max_size = 5000;
    f->cfg.state_file = NULL;
    fx_open(f);
    assert_int_equal(cluster_increase_size(f->c, NULL, "pool-b", 4997, NULL), 0);
    assert_int_equal(cluster_refresh(f->c, NULL, NULL), 0);
    cluster_read_lock(f->c);
    const group_t *b = cluster_find_group(f->c, "pool-b");
    assert_int_equal(b->instances_count, 5000);
    char id[64];
    for (int i = 1; i <= 5000; i++) {
        snprintf(id, sizeof(id), "frugal://pool-b/pool-b-%d", i);
        const instance_t *in = NULL;
        assert_ptr_equal(cluster_find_instance(f->c, id, &in), b);
        assert_string_equal(in->id, id);
        assert_int_equal(in->state, INSTANCE_RUNNING);
    }
    cluster_read_unlock(f->c);
}

static void test_copy_helpers(void **state) {
    (void)state;
    group_t g;
    memset(&g, 0, sizeof(g));
    g.spec.id = strdup("x");
    g.spec.machine_type = strdup("m");
    g.spec.labels.count = 1;
    g.spec.labels.items = calloc(1, sizeof(kv_t));
    g.spec.labels.items[0] = (kv_t){strdup("k"), strdup("v")};
    g.instances_count = 1;
    g.instances = calloc(1, sizeof(instance_t));
    g.instances[0].id = strdup("i");
    g.instances[0].error_code = strdup("E");
    g.target_size = 1;
    group_t copy;
    assert_int_equal(group_copy(&copy, &g), 0);
    assert_ptr_not_equal(copy.spec.id, g.spec.id);
    assert_string_equal(copy.spec.labels.items[0].value, "v");
    assert_string_equal(copy.instances[0].error_code, "E");
    assert_null(copy.instances[0].error_message);
    assert_null(copy.spec.zone);
    group_clear(&g);
    group_clear(&copy);
    group_clear(&copy); /* idempotent */
}

int main(void) {
    log_set_level(LOG_LEVEL_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_fresh, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_no_state_file, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_increase, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_refusals, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_decrease, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_delete_nodes, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_durable, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_failed_write_changes_nothing, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_open_unwritable, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_rejected, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_target_repaired, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reconcile, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_autoprovisioned_persisted, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_removed_group_on_start, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_increase, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_many_instances, fx_setup, fx_teardown),
        cmocka_unit_test(test_copy_helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
