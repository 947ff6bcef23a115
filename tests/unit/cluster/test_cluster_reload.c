/* cluster_reload: what a new config changes on a running cluster, what it refuses (with
 * nothing changed), and the config snapshots calls hold across a reload. Also the state
 * file's single-writer lock. */
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
#include <unistd.h>

#include "cluster.h"
#include "provider.h"
#include "store_testing.h"

typedef struct fx {
    char dir[64];
    char state[128];
    frugal_config_t *cfg;
    provider_t *provider;
    cluster_t *cluster;
} fx_t;

/* The config text with pool-a's max_size and pool-b's machine-type price, plus extra. */
static frugal_config_t *load(fx_t *f, int max_a, const char *price, const char *extra) {
    char text[2048];
    snprintf(text, sizeof(text),
             "state_file: %s\n"
             "machine_types: [{name: t4, cpu: 4, memory: 16Gi, price: %s}]\n"
             "node_groups:\n"
             "  - {id: pool-a, machine_type: t4, min_size: 0, max_size: %d, labels: {a: b}}\n"
             "  - {id: pool-b, machine_type: t4, min_size: 1, max_size: 3}\n"
             "%s",
             f->state, price, max_a, extra);
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    if (config_load_string("t.yaml", text, strlen(text), &cfg, &errors) != 0)
        fail_msg("config: %s", errors);
    return cfg;
}

static int fx_setup(void **state) {
    fx_t *f = calloc(1, sizeof(*f));
    strcpy(f->dir, "/tmp/frugal-reload-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->state, sizeof(f->state), "%s/state", f->dir);
    f->cfg = load(f, 5, "0.2", "");
    assert_int_equal(provider_create(f->cfg, &f->provider, NULL), 0);
    assert_int_equal(store_testing_cluster_open(f->cfg, f->provider, &f->cluster, NULL), 0);
    *state = f;
    return 0;
}

static int fx_teardown(void **state) {
    fx_t *f = *state;
    store_testing_cluster_close(f->cluster);
    provider_destroy(f->provider);
    config_release(f->cfg);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

static int32_t target_of(cluster_t *c, const char *id) {
    cluster_read_lock(c);
    const group_t *g = cluster_find_group(c, id);
    int32_t t = g != NULL ? g->target_size : -1;
    cluster_read_unlock(c);
    return t;
}

/* Reload next (the caller's reference is dropped) and return the result. */
static int reload(fx_t *f, frugal_config_t *next, frugal_err_t *err) {
    frugal_err_clear(err);
    int rc = cluster_reload(f->cluster, next, err);
    config_release(next);
    return rc;
}

static void test_reload_applies(void **state) {
    fx_t *f = *state;
    frugal_err_t err;
    assert_int_equal(cluster_increase_size(f->cluster, NULL, "pool-a", 2, &err), 0);
    const frugal_config_t *before = cluster_config_acquire(f->cluster);
    assert_int_equal(
        reload(f,
               load(f, 8, "0.5", "  - {id: pool-c, machine_type: t4, min_size: 2, max_size: 4}\n"),
               &err),
        0);
    /* A call that took its snapshot before the reload keeps the old config whole. */
    assert_true(config_find_machine_type(before, "t4")->price == 0.2);
    config_release(before);
    const frugal_config_t *after = cluster_config_acquire(f->cluster);
    assert_true(config_find_machine_type(after, "t4")->price == 0.5);
    config_release(after);
    cluster_read_lock(f->cluster);
    const group_t *a = cluster_find_group(f->cluster, "pool-a");
    assert_int_equal(a->max_size, 8);
    assert_int_equal(a->target_size, 2);
    assert_int_equal(a->instances_count, 2);
    cluster_read_unlock(f->cluster);
    assert_int_equal(target_of(f->cluster, "pool-c"), 2);
    /* The new group and its nodes are durable: a start with the original config, which
     * lacks it, is refused while it has nodes; one with the new config resumes them. */
    store_testing_cluster_close(f->cluster);
    f->cluster = NULL;
    assert_int_equal(store_testing_cluster_open(f->cfg, f->provider, &f->cluster, &err),
                     FRUGAL_EPRECOND);
    assert_non_null(strstr(err.msg, "node group pool-c still has 2 nodes (target size 2) but it "
                                    "is no longer in the config"));
    frugal_config_t *next =
        load(f, 8, "0.5", "  - {id: pool-c, machine_type: t4, min_size: 2, max_size: 4}\n");
    assert_int_equal(store_testing_cluster_open(next, f->provider, &f->cluster, NULL), 0);
    assert_int_equal(target_of(f->cluster, "pool-c"), 2);
    assert_int_equal(target_of(f->cluster, "pool-a"), 2);
    store_testing_cluster_close(f->cluster);
    f->cluster = NULL;
    config_release(next);
}

static void test_reload_refusals_change_nothing(void **state) {
    fx_t *f = *state;
    frugal_err_t err;
    assert_int_equal(cluster_increase_size(f->cluster, NULL, "pool-a", 3, &err), 0);
    assert_int_equal(reload(f, load(f, 2, "0.5", ""), &err), FRUGAL_EPRECOND);
    assert_non_null(strstr(err.msg, "outside the new bounds"));
    frugal_config_t *no_b = load(f, 5, "0.5", "");
    /* pool-b (target 1) removed: refused, it still has a node */
    free(no_b->node_groups[1].spec.id);
    no_b->node_groups[1].spec.id = strdup("pool-z");
    no_b->node_groups[1].min_size = 0;
    assert_int_equal(reload(f, no_b, &err), FRUGAL_EPRECOND);
    assert_non_null(strstr(err.msg, "pool-b still has 1 node"));
    frugal_config_t *moved = load(f, 5, "0.5", "");
    free(moved->state_file);
    moved->state_file = strdup("/elsewhere");
    assert_int_equal(reload(f, moved, &err), FRUGAL_EPRECOND);
    assert_string_equal(err.msg, "state_file changes only with a restart");
    const frugal_config_t *cur = cluster_config_acquire(f->cluster);
    assert_ptr_equal(cur, f->cfg);
    config_release(cur);
    assert_int_equal(target_of(f->cluster, "pool-a"), 3);
    assert_int_equal(target_of(f->cluster, "pool-z"), -1);
}

static void test_reload_removes_empty_group(void **state) {
    fx_t *f = *state;
    frugal_err_t err;
    char text[512];
    snprintf(text, sizeof(text),
             "state_file: %s\n"
             "machine_types: [{name: t4, cpu: 4, memory: 16Gi, price: 0.2}]\n"
             "node_groups: [{id: pool-a, machine_type: t4, min_size: 0, max_size: 5}]\n",
             f->state);
    frugal_config_t *next = NULL; /* pool-a only; pool-a is empty */
    char *errors = NULL;
    assert_int_equal(config_load_string("t.yaml", text, strlen(text), &next, &errors), 0);
    frugal_config_t *keep_a = load(f, 5, "0.2", "");
    /* pool-b has its min_size node: first lower it to 0 and delete the node */
    keep_a->node_groups[1].min_size = 0;
    assert_int_equal(reload(f, keep_a, &err), 0);
    assert_int_equal(cluster_decrease_target_size(f->cluster, NULL, "pool-b", -1, &err), 0);
    assert_int_equal(target_of(f->cluster, "pool-b"), 0);
    cluster_refresh(f->cluster, NULL, &err);
    assert_int_equal(reload(f, next, &err), 0);
    assert_int_equal(target_of(f->cluster, "pool-b"), -1);
    assert_int_equal(target_of(f->cluster, "pool-a"), 0);
}

/* Autoprovisioning settings apply at once: a newly allowed machine type gets its
 * theoretical group, existing autoprovisioned groups stay. */
static void test_reload_autoprovisioning(void **state) {
    fx_t *f = *state;
    frugal_err_t err;
    assert_int_equal(
        reload(f, load(f, 5, "0.2", "autoprovisioning: {enabled: true, machine_types: [t4]}\n"),
               &err),
        0);
    cluster_read_lock(f->cluster);
    size_t before = cluster_groups_count(f->cluster);
    cluster_read_unlock(f->cluster);
    assert_int_equal(before, 3);
    assert_int_equal(reload(f,
                            load(f, 5, "0.2",
                                 "autoprovisioning: {enabled: true, machine_types: [t4, "
                                 "n1-standard-2]}\n"),
                            &err),
                     0);
    cluster_read_lock(f->cluster);
    size_t theoretical = 0;
    for (size_t i = 0; i < cluster_groups_count(f->cluster); i++) {
        const group_t *g = cluster_group_at(f->cluster, i);
        theoretical += g->autoprovisioned && !g->exists;
    }
    assert_int_equal(cluster_groups_count(f->cluster), 4);
    cluster_read_unlock(f->cluster);
    assert_int_equal(theoretical, 2);
}

/* Readers take snapshots while reloads swap the config: every snapshot is one whole
 * config (both of its prices agree), and none is freed under a reader (ASan). */
static int stop_readers;
static int torn_reads;

static void *snapshot_reader(void *arg) {
    cluster_t *c = arg;
    while (!__atomic_load_n(&stop_readers, __ATOMIC_ACQUIRE)) {
        const frugal_config_t *cfg = cluster_config_acquire(c);
        const machine_type_t *t4 = config_find_machine_type(cfg, "t4");
        if (t4 == NULL || t4->price * 10 != cfg->pricing.cpu)
            __atomic_fetch_add(&torn_reads, 1, __ATOMIC_RELAXED);
        config_release(cfg);
        sched_yield(); /* under valgrind, one thread runs at a time: let the reloads run */
    }
    return NULL;
}

static void test_reload_snapshots_whole(void **state) {
    fx_t *f = *state;
    frugal_err_t err;
    static const char *const prices[] = {"0.2", "0.5"};
    static const char *const cpu[] = {"pricing: {cpu: 2}\n", "pricing: {cpu: 5}\n"};
    assert_int_equal(reload(f, load(f, 5, prices[0], cpu[0]), &err), 0);
    stop_readers = 0;
    torn_reads = 0;
    pthread_t readers[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&readers[i], NULL, snapshot_reader, f->cluster), 0);
    for (int i = 1; i <= 50; i++)
        assert_int_equal(reload(f, load(f, 5, prices[i % 2], cpu[i % 2]), &err), 0);
    __atomic_store_n(&stop_readers, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 4; i++)
        pthread_join(readers[i], NULL);
    assert_int_equal(torn_reads, 0);
}

static void test_state_lock(void **state) {
    fx_t *f = *state;
    frugal_err_t err;
    int fd = -1, fd2 = -1;
    assert_int_equal(state_lock_acquire(f->state, &fd, &err), 0);
    assert_true(fd >= 0);
    /* flock locks belong to the open file: a second open in this process conflicts too */
    assert_int_equal(state_lock_acquire(f->state, &fd2, &err), FRUGAL_EEXISTS);
    assert_int_equal(fd2, -1);
    char want[64];
    snprintf(want, sizeof(want), "(pid %ld,", (long)getpid());
    assert_non_null(strstr(err.msg, want));
    state_lock_release(fd);
    assert_int_equal(state_lock_acquire(f->state, &fd2, &err), 0);
    state_lock_release(fd2);
    char bad[160];
    snprintf(bad, sizeof(bad), "%s/no/such/dir/state", f->dir);
    assert_int_equal(state_lock_acquire(bad, &fd, &err), FRUGAL_EIO);
    assert_non_null(strstr(err.msg, "cannot open state lock"));
    /* A second name of the state file through a symbolic link is refused, not given a
     * lock of its own. */
    char link[160];
    snprintf(link, sizeof(link), "%s/link-to-state", f->dir);
    assert_int_equal(symlink(f->state, link), 0);
    assert_int_equal(state_lock_acquire(link, &fd, &err), FRUGAL_EINVAL);
    assert_int_equal(fd, -1);
    assert_non_null(strstr(err.msg, "is a symbolic link (to "));
    assert_non_null(strstr(err.msg, "give the file's own path"));
    unlink(link);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reload_applies, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reload_refusals_change_nothing, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reload_removes_empty_group, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reload_autoprovisioning, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reload_snapshots_whole, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_state_lock, fx_setup, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
