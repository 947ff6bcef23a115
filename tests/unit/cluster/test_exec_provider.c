/* The exec provider against small bash hooks written into a temporary directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cluster.h"
#include "cluster_nap.h"
#include "cluster_testing.h"
#include "metrics.h"
#include "provider.h"
#include "store_testing.h"

typedef struct fixture {
    char dir[64];
    char hook[128];
    machine_type_t mt;
    frugal_config_t cfg;
    provider_t *p;
    group_t g;
} fixture_t;

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Write the hook: a bash script with D set to the fixture's directory. */
static void write_hook(fixture_t *f, const char *body) {
    FILE *fp = fopen(f->hook, "w");
    assert_non_null(fp);
    fprintf(fp, "#!/bin/bash\nD=%s\n%s\n", f->dir, body);
    fclose(fp);
    assert_int_equal(chmod(f->hook, 0755), 0);
}

static char *read_all(fixture_t *f, const char *name) {
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", f->dir, name);
    FILE *fp = fopen(path, "r");
    if (fp == NULL)
        return strdup("");
    char *buf = calloc(1, 65536);
    size_t n = fread(buf, 1, 65535, fp);
    buf[n] = '\0';
    fclose(fp);
    return buf;
}

static size_t count_lines(fixture_t *f, const char *name) {
    char *s = read_all(f, name);
    size_t n = 0;
    for (char *c = s; *c; c++)
        n += *c == '\n';
    free(s);
    return n;
}

/* Whether pid runs: exists and is not a zombie (whose reaper may never come). */
static bool process_runs(pid_t pid) {
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *fp = fopen(path, "r");
    if (fp == NULL)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return paren != NULL && paren[1] == ' ' && paren[2] != 'Z';
}

static fixture_t *fixture_new(const char *body, int64_t timeout_ms, int32_t parallelism) {
    fixture_t *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/frugal-exec-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->hook, sizeof(f->hook), "%s/hook", f->dir);
    write_hook(f, body);
    f->mt.name = "n1-standard-2";
    f->mt.cpu_milli = 2000;
    f->mt.memory_bytes = 7680LL * 1024 * 1024;
    f->cfg.provider_kind = "exec";
    f->cfg.exec_command = f->hook;
    f->cfg.exec_timeout_ms = timeout_ms;
    f->cfg.exec_parallelism = parallelism;
    f->cfg.machine_types = &f->mt;
    f->cfg.machine_types_count = 1;
    frugal_err_t err = {0};
    assert_int_equal(provider_create(&f->cfg, &f->p, &err), 0);
    assert_ptr_equal(f->p->ops, &provider_exec_ops);

    group_t *g = &f->g;
    g->spec.id = strdup("g");
    g->spec.machine_type = strdup("n1-standard-2");
    g->spec.zone = strdup("z1");
    assert_int_equal(kv_list_put(&g->spec.labels, "a", "b"), 0);
    g->spec.taints.items = calloc(1, sizeof(taint_t));
    g->spec.taints.items[0].key = strdup("k");
    g->spec.taints.items[0].value = strdup("v");
    g->spec.taints.items[0].effect = strdup("NoSchedule");
    g->spec.taints.count = 1;
    g->max_size = 100;
    g->managed = true;
    g->exists = true;
    g->next_seq = 1;
    return f;
}

static void fixture_free(fixture_t *f) {
    provider_destroy(f->p);
    group_clear(&f->g);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
}

/* The cluster's second phase after a slot: its state was written, start the hooks. */
static void commit(fixture_t *f) {
    provider_commit_staged(f->p);
}

typedef bool (*pred_t)(const group_t *g);

/* Refresh (at now + skew_ms) every 20 ms until pred holds; false after limit_ms. */
static bool refresh_until(fixture_t *f, pred_t pred, int64_t skew_ms, int limit_ms) {
    int64_t end = clock_mono_ms() + limit_ms;
    do {
        bool changed = false;
        frugal_err_t err = {0};
        assert_int_equal(provider_refresh(f->p, &f->g, cluster_now_ms() + skew_ms, &changed, &err),
                         0);
        commit(f);
        if (pred(&f->g))
            return true;
        sleep_ms(20);
    } while (clock_mono_ms() < end);
    return false;
}

static bool all_running(const group_t *g) {
    for (size_t i = 0; i < g->instances_count; i++)
        if (g->instances[i].state != INSTANCE_RUNNING)
            return false;
    return true;
}

static bool first_has_error(const group_t *g) {
    return g->instances_count > 0 && g->instances[0].error_code != NULL;
}

static bool empty(const group_t *g) {
    return g->instances_count == 0;
}

static void increase(fixture_t *f, int32_t n) {
    frugal_err_t err = {0};
    assert_int_equal(provider_increase(f->p, &f->g, n, cluster_now_ms(), &err), 0);
    commit(f);
}

static const char hook_main[] =
    "case $1 in\n"
    "create) env | grep ^FRUGAL_ | sort > $D/env-$3; echo \"$2 $3\" >> $D/created\n"
    "        if [ -f $D/no-id ]; then echo; else echo \"openstack:///uuid-$3\"; fi\n"
    "        echo noise; exit 0;;\n"
    "delete) echo \"$3 $FRUGAL_INSTANCE\" >> $D/delete-attempts\n"
    "        if [ -f $D/fail-delete ]; then echo 'api says no' >&2; exit 1; fi\n"
    "        echo \"$3\" >> $D/deleted; exit 0;;\n"
    "create-group) echo \"$2\" >> $D/groups; exit 0;;\n"
    "delete-group) echo 'group busy' >&2; exit 1;;\n"
    "esac\nexit 2\n";

static void test_create_with_provider_id(void **state) {
    (void)state;
    fixture_t *f = fixture_new(hook_main, 10000, 4);
    increase(f, 2);
    assert_int_equal(f->g.instances_count, 2);
    assert_int_equal(f->g.target_size, 2);
    assert_int_equal(f->g.instances[0].state, INSTANCE_CREATING);
    assert_string_equal(f->g.instances[0].id, "frugal://g/g-1");
    assert_true(refresh_until(f, all_running, 0, 5000));
    assert_string_equal(f->g.instances[0].id, "openstack:///uuid-g-1");
    assert_string_equal(f->g.instances[1].id, "openstack:///uuid-g-2");
    assert_null(f->g.instances[0].error_code);
    char *env = read_all(f, "env-g-1");
    assert_non_null(strstr(env, "FRUGAL_CPU=2\n"));
    assert_non_null(strstr(env, "FRUGAL_GROUP=g\n"));
    assert_non_null(strstr(env, "FRUGAL_INSTANCE=g-1\n"));
    assert_non_null(strstr(env, "FRUGAL_LABELS=a=b\n"));
    assert_non_null(strstr(env, "FRUGAL_MACHINE_TYPE=n1-standard-2\n"));
    assert_non_null(strstr(env, "FRUGAL_MEMORY=7680Mi\n"));
    assert_non_null(strstr(env, "FRUGAL_PROVIDER_ID=frugal://g/g-1\n"));
    assert_non_null(strstr(env, "FRUGAL_TAINTS=k=v:NoSchedule\n"));
    assert_non_null(strstr(env, "FRUGAL_ZONE=z1\n"));
    free(env);
    fixture_free(f);
}

static void test_create_without_provider_id(void **state) {
    (void)state;
    fixture_t *f = fixture_new(hook_main, 10000, 4);
    char path[256];
    snprintf(path, sizeof(path), "%s/no-id", f->dir);
    fclose(fopen(path, "w"));
    increase(f, 1);
    assert_true(refresh_until(f, all_running, 0, 5000));
    assert_string_equal(f->g.instances[0].id, "frugal://g/g-1");
    fixture_free(f);
}

/* Long group ids (autoprovisioned ones can be) still give every instance its own id. */
static void test_long_group_id_unique_ids(void **state) {
    (void)state;
    fixture_t *f = fixture_new(hook_main, 10000, 4);
    free(f->g.spec.id);
    f->g.spec.id = strdup("nap-n1-highmem-4-us-central1-a-0123456789abcdef-0123456789abcd");
    f->g.next_seq = 9;
    increase(f, 3);
    assert_int_equal(f->g.instances_count, 3);
    for (size_t i = 0; i < 3; i++)
        for (size_t j = i + 1; j < 3; j++)
            assert_string_not_equal(f->g.instances[i].id, f->g.instances[j].id);
    assert_non_null(strstr(f->g.instances[2].id, "-0123456789abcd-11"));
    assert_true(refresh_until(f, all_running, 0, 5000));
    fixture_free(f);
}

static void test_out_of_resources(void **state) {
    (void)state;
    fixture_t *f =
        fixture_new("echo 'quota check' >&2; echo 'no more cores in z1' >&2; exit 3", 10000, 4);
    increase(f, 1);
    assert_true(refresh_until(f, first_has_error, 0, 5000));
    const instance_t *in = &f->g.instances[0];
    assert_int_equal(in->state, INSTANCE_CREATING);
    assert_string_equal(in->error_code, "OutOfResources");
    assert_string_equal(in->error_message, "no more cores in z1");
    assert_int_equal(in->error_class, 1);
    /* Not retried: it keeps its error until CA decreases the target. */
    sleep_ms(200);
    assert_false(refresh_until(f, empty, 60000, 100));
    frugal_err_t err = {0};
    assert_int_equal(provider_decrease_target(f->p, &f->g, -1, cluster_now_ms(), &err), 0);
    commit(f);
    assert_int_equal(f->g.instances_count, 0);
    assert_int_equal(f->g.target_size, 0);
    fixture_free(f);
}

static void test_create_failed(void **state) {
    (void)state;
    fixture_t *f = fixture_new("echo 'image not found' >&2; exit 1", 10000, 4);
    increase(f, 1);
    assert_true(refresh_until(f, first_has_error, 0, 5000));
    const instance_t *in = &f->g.instances[0];
    assert_int_equal(in->state, INSTANCE_CREATING);
    assert_string_equal(in->error_code, "CreateFailed");
    assert_string_equal(in->error_message, "hook create exited with status 1: image not found");
    assert_int_equal(in->error_class, 99);
    fixture_free(f);
}

static bool one_running_one_failed(const group_t *g) {
    return g->instances_count == 2 &&
           (g->instances[0].state == INSTANCE_RUNNING) +
                   (g->instances[1].state == INSTANCE_RUNNING) ==
               1 &&
           (g->instances[0].error_code != NULL) + (g->instances[1].error_code != NULL) == 1;
}

static uint64_t create_runs(const char *result) {
    return (uint64_t)metrics_cell_value(metrics_cell(METRICS_HOOK_RUNS, "create", result, NULL));
}

/* A create that printed the id another instance of the group has: refused, and counted
 * as a failed run (the hook exited 0, but what it made is no instance of frugal's), so
 * that the hook alerts see it. */
static void test_create_of_a_used_id_is_a_failed_run(void **state) {
    (void)state;
    metrics_reset_for_testing();
    fixture_t *f = fixture_new("[ \"$1\" = create ] && echo same-machine; exit 0", 10000, 1);
    increase(f, 2);
    assert_true(refresh_until(f, one_running_one_failed, 0, 5000));
    const instance_t *failed =
        f->g.instances[0].error_code != NULL ? &f->g.instances[0] : &f->g.instances[1];
    assert_string_equal(failed->error_code, "CreateFailed");
    assert_non_null(strstr(failed->error_message, "provider id same-machine, already used in g"));
    assert_int_equal(create_runs("ok"), 1);
    assert_int_equal(create_runs("failed"), 1);
    fixture_free(f);
}

/* A hook whose #! interpreter is missing: execve says ENOENT, as for a missing file;
 * the message names the interpreter line, not the hook that exists. */
static void test_missing_interpreter(void **state) {
    (void)state;
    /* valgrind, which follows the guard's exec, dies itself on a failed execve. */
    if (getenv("FRUGAL_UNDER_VALGRIND") != NULL)
        skip();
    fixture_t *f = fixture_new("exit 0", 10000, 4);
    FILE *fp = fopen(f->hook, "w");
    assert_non_null(fp);
    fputs("#!/nonexistent/python9\nprint('x')\n", fp);
    fclose(fp);
    increase(f, 1);
    assert_true(refresh_until(f, first_has_error, 0, 5000));
    const instance_t *in = &f->g.instances[0];
    assert_string_equal(in->error_code, "CreateFailed");
    assert_non_null(strstr(in->error_message, "the interpreter its #! line names does not exist"));
    fixture_free(f);
}

/* An id longer than the output kept is cut short: refused, never stored cut. */
static void test_create_id_over_the_output_kept(void **state) {
    (void)state;
    fixture_t *f = fixture_new("head -c 70000 /dev/zero | tr '\\0' x", 10000, 4);
    increase(f, 1);
    assert_true(refresh_until(f, first_has_error, 0, 5000));
    const instance_t *in = &f->g.instances[0];
    assert_string_equal(in->id, "frugal://g/g-1");
    assert_string_equal(in->error_code, "CreateFailed");
    assert_string_equal(in->error_message,
                        "hook create printed a provider id over 64 KiB, cut short: refused");
    fixture_free(f);
}

static void test_timeout_kills_the_tree(void **state) {
    (void)state;
    fixture_t *f = fixture_new("sleep 30 & echo $! > $D/child; wait", 500, 4);
    int64_t t0 = clock_mono_ms();
    increase(f, 1);
    assert_true(refresh_until(f, first_has_error, 0, 5000));
    assert_true(clock_mono_ms() - t0 < 3000);
    const instance_t *in = &f->g.instances[0];
    assert_string_equal(in->error_code, "Timeout");
    assert_int_equal(in->error_class, 99);
    assert_non_null(strstr(in->error_message, "timed out after 500 ms"));
    /* The hook's child was killed with it, and reaped by the hook's guard: this process
     * (a subreaper, see main) has no zombie of it either. */
    char *pid = read_all(f, "child");
    assert_false(process_runs((pid_t)atoi(pid)));
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    free(pid);
    fixture_free(f);
}

/* A hook that exits leaving a program running in its group: the program ends with the
 * hook and is reaped (no zombie comes to this process, a subreaper); the hook's own
 * output still counts. */
static void test_exit_ends_what_the_hook_left(void **state) {
    (void)state;
    fixture_t *f = fixture_new("sleep 30 & echo $! > $D/child; echo real-1", 10000, 2);
    increase(f, 1);
    assert_true(refresh_until(f, all_running, 0, 5000));
    assert_string_equal(f->g.instances[0].id, "real-1");
    char *pid = read_all(f, "child");
    assert_false(process_runs((pid_t)atoi(pid)));
    free(pid);
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    fixture_free(f);
}

static void test_delete_success_and_retry(void **state) {
    (void)state;
    fixture_t *f = fixture_new(hook_main, 10000, 4);
    increase(f, 2);
    assert_true(refresh_until(f, all_running, 0, 5000));
    char flag[256];
    snprintf(flag, sizeof(flag), "%s/fail-delete", f->dir);
    fclose(fopen(flag, "w"));

    size_t idx = 0;
    frugal_err_t err = {0};
    assert_int_equal(provider_delete_instances(f->p, &f->g, &idx, 1, cluster_now_ms(), &err), 0);
    commit(f);
    assert_int_equal(f->g.target_size, 1);
    assert_int_equal(f->g.instances[0].state, INSTANCE_DELETING);
    /* The failed attempt keeps it deleting... */
    int64_t end = clock_mono_ms() + 5000;
    while (count_lines(f, "delete-attempts") < 1 && clock_mono_ms() < end)
        sleep_ms(20);
    assert_false(refresh_until(f, empty, 0, 500));
    assert_int_equal(f->g.instances_count, 2);
    assert_int_equal(f->g.instances[0].state, INSTANCE_DELETING);
    /* ...and is not retried before the backoff... */
    unlink(flag);
    assert_false(refresh_until(f, empty, 10000, 300));
    assert_int_equal(count_lines(f, "delete-attempts"), 1);
    /* ...but after it. */
    bool one_left = false;
    end = clock_mono_ms() + 5000;
    while (!one_left && clock_mono_ms() < end) {
        bool changed = false;
        provider_refresh(f->p, &f->g, cluster_now_ms() + 31000, &changed, &err);
        commit(f);
        one_left = f->g.instances_count == 1;
        sleep_ms(20);
    }
    assert_true(one_left);
    assert_string_equal(f->g.instances[0].id, "openstack:///uuid-g-2");
    char *deleted = read_all(f, "deleted");
    assert_string_equal(deleted, "openstack:///uuid-g-1\n");
    free(deleted);
    char *attempts = read_all(f, "delete-attempts");
    assert_string_equal(attempts, "openstack:///uuid-g-1 \nopenstack:///uuid-g-1 \n");
    free(attempts);
    fixture_free(f);
}

static void test_restart_reruns_pending_work(void **state) {
    (void)state;
    fixture_t *f = fixture_new(hook_main, 10000, 4);
    /* As the state file would bring them back: no job behind either. */
    group_t *g = &f->g;
    g->instances = calloc(3, sizeof(instance_t));
    g->instances[0].id = strdup("frugal://g/g-7");
    g->instances[0].state = INSTANCE_CREATING;
    g->instances[1].id = strdup("openstack:///old");
    g->instances[1].state = INSTANCE_DELETING;
    g->instances[2].id = strdup("frugal://g/g-8");
    g->instances[2].state = INSTANCE_CREATING;
    g->instances[2].error_code = strdup("OutOfResources");
    g->instances[2].error_message = strdup("full");
    g->instances[2].error_class = 1;
    g->instances_count = 3;
    g->target_size = 2;
    g->next_seq = 9;
    int64_t end = clock_mono_ms() + 5000;
    while (clock_mono_ms() < end &&
           !(g->instances_count == 2 && g->instances[0].state == INSTANCE_RUNNING)) {
        bool changed = false;
        frugal_err_t err = {0};
        assert_int_equal(provider_refresh(f->p, g, cluster_now_ms(), &changed, &err), 0);
        commit(f);
        sleep_ms(20);
    }
    assert_int_equal(g->instances_count, 2);
    assert_string_equal(g->instances[0].id, "openstack:///uuid-g-7");
    assert_int_equal(g->instances[0].state, INSTANCE_RUNNING);
    assert_string_equal(g->instances[1].id, "frugal://g/g-8"); /* errored: left to CA */
    char *created = read_all(f, "created");
    assert_string_equal(created, "g g-7\n");
    free(created);
    char *deleted = read_all(f, "deleted");
    assert_string_equal(deleted, "openstack:///old\n");
    free(deleted);
    fixture_free(f);
}

static void test_parallelism_bound(void **state) {
    (void)state;
    fixture_t *f = fixture_new("mkdir -p $D/run; touch $D/run/$3\n"
                               "ls $D/run | wc -l >> $D/counts\n"
                               "sleep 0.3; rm $D/run/$3",
                               10000, 2);
    int64_t t0 = clock_mono_ms();
    increase(f, 6);
    assert_true(refresh_until(f, all_running, 0, 10000));
    int64_t took = clock_mono_ms() - t0;
    assert_true(took >= 850); /* three rounds of 0.3 s */
    char *counts = read_all(f, "counts");
    int max = 0;
    for (char *s = counts; *s;) {
        int n = (int)strtol(s, &s, 10);
        max = n > max ? n : max;
        while (*s == '\n' || *s == ' ')
            s++;
    }
    free(counts);
    assert_true(max >= 1 && max <= 2);
    fixture_free(f);
}

static void test_decrease_cancels_and_cleans_orphans(void **state) {
    (void)state;
    fixture_t *f = fixture_new("case $1 in\n"
                               "create) echo $3 >> $D/created; sleep 0.4; echo real-$3;;\n"
                               "delete) echo $3 >> $D/deleted;;\n"
                               "esac",
                               10000, 1);
    increase(f, 2);
    int64_t end = clock_mono_ms() + 5000;
    while (count_lines(f, "created") < 1 && clock_mono_ms() < end)
        sleep_ms(10);
    frugal_err_t err = {0};
    assert_int_equal(provider_decrease_target(f->p, &f->g, -2, cluster_now_ms(), &err), 0);
    commit(f);
    /* g-1 was being created: it stays, deleting, until the machine it makes is deleted
     * (a restart meanwhile would run that delete too); g-2 never starts. */
    assert_int_equal(f->g.instances_count, 1);
    assert_int_equal(f->g.instances[0].state, INSTANCE_DELETING);
    assert_int_equal(f->g.target_size, 0);
    end = clock_mono_ms() + 5000;
    while (count_lines(f, "deleted") < 1 && clock_mono_ms() < end) {
        bool changed = false;
        provider_refresh(f->p, &f->g, cluster_now_ms(), &changed, &err);
        commit(f);
        sleep_ms(20);
    }
    char *deleted = read_all(f, "deleted");
    assert_string_equal(deleted, "real-g-1\n");
    free(deleted);
    assert_true(refresh_until(f, empty, 0, 2000));
    sleep_ms(300);
    char *created = read_all(f, "created");
    assert_string_equal(created, "g-1\n");
    free(created);
    fixture_free(f);
}

/* After a restart nothing says whether an instance's create ran (frugal may have died
 * after the hook made the machine): dropping it runs its delete with the placeholder id
 * rather than leaking a machine; one whose create said exit 3 (nothing made) just goes. */
static void test_decrease_after_a_restart_deletes(void **state) {
    (void)state;
    fixture_t *f = fixture_new("case $1 in\n"
                               "create) echo $3 >> $D/created; echo real-$3;;\n"
                               "delete) echo $3 >> $D/deleted;;\n"
                               "esac",
                               10000, 1);
    /* Two instances as a state file brings them back: creating, no job; the second
     * failed with OutOfResources before the restart. */
    f->g.instances = calloc(2, sizeof(instance_t));
    assert_int_equal(instance_init_new(&f->g.instances[0], &f->g, 1, cluster_now_ms()), 0);
    assert_int_equal(instance_init_new(&f->g.instances[1], &f->g, 2, cluster_now_ms()), 0);
    f->g.instances[1].error_code = strdup("OutOfResources");
    f->g.instances[1].error_message = strdup("no cores");
    f->g.instances_count = 2;
    f->g.target_size = 2;
    f->g.next_seq = 3;
    frugal_err_t err = {0};
    assert_int_equal(provider_decrease_target(f->p, &f->g, -2, cluster_now_ms(), &err), 0);
    commit(f);
    assert_int_equal(f->g.instances_count, 1);
    assert_string_equal(f->g.instances[0].id, "frugal://g/g-1");
    assert_int_equal(f->g.instances[0].state, INSTANCE_DELETING);
    assert_true(refresh_until(f, empty, 0, 5000));
    char *deleted = read_all(f, "deleted");
    assert_string_equal(deleted, "frugal://g/g-1\n");
    free(deleted);
    char *created = read_all(f, "created");
    assert_string_equal(created, ""); /* no create ran */
    free(created);
    fixture_free(f);
}

/* A create queued again after a restart (the worker busy with another one) is no
 * first create: dropping its instance runs its delete, with the placeholder id. */
static void test_decrease_of_a_requeued_create_deletes(void **state) {
    (void)state;
    fixture_t *f = fixture_new("case $1 in\n"
                               "create) echo $3 >> $D/created; sleep 1; echo real-$3;;\n"
                               "delete) echo $3 >> $D/deleted;;\n"
                               "esac",
                               10000, 1);
    increase(f, 1); /* g-1: its create holds the only worker for a second */
    int64_t end = clock_mono_ms() + 5000;
    while (count_lines(f, "created") < 1 && clock_mono_ms() < end)
        sleep_ms(10);
    /* g-2 as a state file brings it back: creating, no job. A refresh queues its create
     * again, behind g-1's. */
    f->g.instances = realloc(f->g.instances, 2 * sizeof(instance_t));
    memset(&f->g.instances[1], 0, sizeof(instance_t));
    assert_int_equal(instance_init_new(&f->g.instances[1], &f->g, 2, cluster_now_ms()), 0);
    f->g.instances_count = 2;
    f->g.target_size = 2;
    f->g.next_seq = 3;
    bool changed = false;
    frugal_err_t err = {0};
    assert_int_equal(provider_refresh(f->p, &f->g, cluster_now_ms(), &changed, &err), 0);
    commit(f);
    assert_int_equal(provider_decrease_target(f->p, &f->g, -1, cluster_now_ms(), &err), 0);
    commit(f);
    assert_int_equal(f->g.instances_count, 2);
    assert_string_equal(f->g.instances[1].id, "frugal://g/g-2");
    assert_int_equal(f->g.instances[1].state, INSTANCE_DELETING);
    end = clock_mono_ms() + 5000;
    while (count_lines(f, "deleted") < 1 && clock_mono_ms() < end) {
        provider_refresh(f->p, &f->g, cluster_now_ms(), &changed, &err);
        commit(f);
        sleep_ms(20);
    }
    char *deleted = read_all(f, "deleted");
    assert_string_equal(deleted, "frugal://g/g-2\n");
    free(deleted);
    char *created = read_all(f, "created");
    assert_string_equal(created, "g-1\n"); /* g-2's queued create was cancelled */
    free(created);
    fixture_free(f);
}

static void test_group_hooks(void **state) {
    (void)state;
    fixture_t *f = fixture_new(hook_main, 10000, 4);
    f->g.exists = false;
    frugal_err_t err = {0};
    assert_int_equal(provider_create_group(f->p, &f->g, &err), 0);
    assert_true(f->g.exists);
    char *groups = read_all(f, "groups");
    assert_string_equal(groups, "g\n");
    free(groups);
    assert_int_equal(provider_delete_group(f->p, &f->g, &err), FRUGAL_EUNAVAIL);
    assert_string_equal(err.msg, "delete-group of node group g failed: hook delete-group exited "
                                 "with status 1: group busy");
    assert_true(f->g.exists);
    fixture_free(f);
}

static void test_destroy_kills_running_hooks(void **state) {
    (void)state;
    fixture_t *f = fixture_new("echo started >> $D/started; sleep 60", 60000, 2);
    increase(f, 3);
    int64_t end = clock_mono_ms() + 5000;
    while (count_lines(f, "started") < 2 && clock_mono_ms() < end)
        sleep_ms(10);
    int64_t t0 = clock_mono_ms();
    provider_destroy(f->p);
    f->p = NULL;
    int64_t took = clock_mono_ms() - t0;
    assert_true(took < 8000);
    /* Every hook was reaped: this process has no children left. */
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    assert_int_equal(count_lines(f, "started"), 2); /* the queued third never ran */
    fixture_free(f);
}

/* release (the leadership was lost): the running hooks are killed at once, the queued
 * one never runs, nothing is busy; the next refresh (leader again) queues all three anew. */
static void test_release_kills_running_hooks(void **state) {
    (void)state;
    fixture_t *f = fixture_new("echo started >> $D/started; exec sleep 60", 60000, 2);
    increase(f, 3);
    int64_t end = clock_mono_ms() + 5000;
    while (count_lines(f, "started") < 2 && clock_mono_ms() < end)
        sleep_ms(10);
    assert_int_equal(count_lines(f, "started"), 2);
    int64_t t0 = clock_mono_ms();
    provider_release(f->p);
    /* The workers kill and reap their hooks within a poll slice, then drop the jobs. */
    while (provider_busy(f->p, &f->g) && clock_mono_ms() - t0 < 2000)
        sleep_ms(10);
    assert_true(clock_mono_ms() - t0 < 2000);
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    provider_release(f->p); /* nothing left: a no-op */
    sleep_ms(100);
    assert_int_equal(count_lines(f, "started"), 2);
    bool changed = false;
    frugal_err_t err = {0};
    assert_int_equal(provider_refresh(f->p, &f->g, cluster_now_ms(), &changed, &err), 0);
    commit(f);
    assert_true(provider_busy(f->p, &f->g));
    end = clock_mono_ms() + 5000;
    while (count_lines(f, "started") < 4 && clock_mono_ms() < end)
        sleep_ms(10);
    assert_int_equal(count_lines(f, "started"), 4);
    provider_release(f->p); /* rather than destroy's grace */
    fixture_free(f);
}

static uint64_t leak_gauge(void) {
    return metrics_cell_value(metrics_cell(METRICS_RECONCILE_UNKNOWN, "g", NULL, NULL));
}

/* A leak the last list showed is no longer reported once this replica stops listing:
 * the leadership lost, or reconciliation turned off by a reload. */
static void test_leak_gauge_zeroed_when_listing_stops(void **state) {
    (void)state;
    metrics_reset_for_testing();
    fixture_t *f =
        fixture_new("[ \"$1\" = list ] && echo 'test://stray running'; exit 0", 20000, 2);
    f->cfg.exec_reconcile_interval_ms = 1000;
    f->cfg.exec_reconcile_missing_after = 2;
    for (int round = 0; round < 2; round++) {
        int64_t end = clock_mono_ms() + 5000;
        while (leak_gauge() != 1 && clock_mono_ms() < end) {
            bool changed = false;
            frugal_err_t err = {0};
            assert_int_equal(provider_refresh(f->p, &f->g, cluster_now_ms(), &changed, &err), 0);
            commit(f);
            sleep_ms(20);
        }
        assert_int_equal(leak_gauge(), 1);
        if (round == 0) {
            provider_release(f->p);
        } else {
            f->cfg.exec_reconcile_interval_ms = 0;
            provider_configure(f->p, &f->cfg);
        }
        assert_int_equal(leak_gauge(), 0);
    }
    fixture_free(f);
}

/* The fence (a shared store's leadership lease): the hook's guard kills the hook and
 * what it started when the lease runs out, by itself; the job leaves no result (the
 * instance stays creating, without error, for the leader to run again), and no hook
 * starts while the lease is out. The synchronous group hooks (a call this replica
 * answers) are not fenced. */
static void test_fence_ends_hooks_at_the_lease(void **state) {
    (void)state;
    fixture_t *f = fixture_new("[ $1 = create-group ] && { echo $2 >> $D/groups; exit 0; }\n"
                               "sleep 60 & echo $! >> $D/kids; echo started >> $D/started; wait",
                               60000, 2);
    increase(f, 1);
    int64_t end = clock_mono_ms() + 5000;
    while (count_lines(f, "started") < 1 && clock_mono_ms() < end)
        sleep_ms(10);
    assert_int_equal(count_lines(f, "started"), 1);
    char *kids = read_all(f, "kids");
    pid_t kid = (pid_t)atoi(kids);
    free(kids);
    assert_true(kid > 0);
    int64_t t0 = clock_mono_ms();
    provider_fence(f->p, t0 + 300);
    while (process_runs(kid) && clock_mono_ms() - t0 < 3000)
        sleep_ms(5);
    int64_t took = clock_mono_ms() - t0;
    assert_false(process_runs(kid));
    assert_true(took >= 300 && took < 1500);
    while (provider_busy(f->p, &f->g) && clock_mono_ms() - t0 < 3000)
        sleep_ms(10);
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* the guard reaped the group */
    assert_int_equal(errno, ECHILD);
    while (provider_busy(f->p, &f->g) && clock_mono_ms() - t0 < 3000)
        sleep_ms(10);
    assert_false(provider_busy(f->p, &f->g));
    bool changed = false;
    frugal_err_t err = {0};
    /* Refresh (as a leader would) with the lease still out: queued again, not started. */
    provider_fence(f->p, 0);
    assert_int_equal(provider_refresh(f->p, &f->g, cluster_now_ms(), &changed, &err), 0);
    commit(f);
    assert_null(f->g.instances[0].error_code);
    assert_int_equal(f->g.instances[0].state, INSTANCE_CREATING);
    end = clock_mono_ms() + 3000;
    while (provider_busy(f->p, &f->g) && clock_mono_ms() < end)
        sleep_ms(10);
    assert_false(provider_busy(f->p, &f->g));
    assert_int_equal(count_lines(f, "started"), 1);
    /* Leader again: the create runs anew. */
    provider_fence(f->p, INT64_MAX);
    assert_int_equal(provider_refresh(f->p, &f->g, cluster_now_ms(), &changed, &err), 0);
    commit(f);
    end = clock_mono_ms() + 5000;
    while (count_lines(f, "started") < 2 && clock_mono_ms() < end)
        sleep_ms(10);
    assert_int_equal(count_lines(f, "started"), 2);
    provider_release(f->p); /* rather than destroy's grace */

    provider_fence(f->p, 0);
    f->g.exists = false;
    assert_int_equal(provider_create_group(f->p, &f->g, &err), 0);
    assert_int_equal(count_lines(f, "groups"), 1);
    fixture_free(f);
}

/* Through the cluster: a real id replaces the placeholder in the provider-id index, and
 * an id another group holds already is not taken. */
static void test_cluster_indexes_real_ids(void **state) {
    (void)state;
    fixture_t *f = fixture_new("echo same-machine", 10000, 2);
    char text[512];
    snprintf(text, sizeof(text),
             "provider: {kind: exec, command: %s, timeout: 10s}\n"
             "node_groups:\n"
             "  - {id: a, machine_type: n1-standard-2, max_size: 3}\n"
             "  - {id: b, machine_type: n1-standard-2, max_size: 3}\n",
             f->hook);
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    assert_int_equal(config_load_string("t.yaml", text, strlen(text), &cfg, &errors), 0);
    provider_t *p = NULL;
    cluster_t *c = NULL;
    frugal_err_t err = {0};
    assert_int_equal(provider_create(cfg, &p, &err), 0);
    assert_int_equal(store_testing_cluster_open(cfg, p, &c, &err), 0);

    assert_int_equal(cluster_increase_size(c, NULL, "a", 1, &err), 0);
    const group_t *owner = NULL;
    int64_t end = clock_mono_ms() + 5000;
    while (owner == NULL && clock_mono_ms() < end) {
        assert_int_equal(cluster_refresh(c, NULL, &err), 0);
        cluster_read_lock(c);
        owner = cluster_find_instance(c, "same-machine", NULL);
        cluster_read_unlock(c);
        sleep_ms(20);
    }
    assert_non_null(owner);
    cluster_read_lock(c);
    assert_string_equal(cluster_find_instance(c, "same-machine", NULL)->spec.id, "a");
    assert_null(cluster_find_instance(c, "frugal://a/a-1", NULL));
    cluster_read_unlock(c);

    assert_int_equal(cluster_increase_size(c, NULL, "b", 1, &err), 0);
    for (int i = 0; i < 25; i++) {
        assert_int_equal(cluster_refresh(c, NULL, &err), 0);
        sleep_ms(20);
    }
    cluster_read_lock(c);
    const instance_t *in = NULL;
    assert_string_equal(cluster_find_instance(c, "same-machine", NULL)->spec.id, "a");
    assert_string_equal(cluster_find_instance(c, "frugal://b/b-1", &in)->spec.id, "b");
    assert_int_equal(in->state, INSTANCE_CREATING);
    cluster_read_unlock(c);

    store_testing_cluster_close(c);
    provider_destroy(p);
    config_free(cfg);
    fixture_free(f);
}

/* A cluster over the fixture's hook with text as its config; the caller frees all. */
static void open_cluster(const char *text, frugal_config_t **cfg, provider_t **p, cluster_t **c) {
    char *errors = NULL;
    if (config_load_string("t.yaml", text, strlen(text), cfg, &errors) != 0)
        fail_msg("config: %s", errors != NULL ? errors : "?");
    frugal_err_t err = {0};
    assert_int_equal(provider_create(*cfg, p, &err), 0);
    if (store_testing_cluster_open(*cfg, *p, c, &err) != 0)
        fail_msg("open: %s", err.msg);
}

static void close_cluster(frugal_config_t *cfg, provider_t *p, cluster_t *c) {
    store_testing_cluster_close(c);
    provider_destroy(p);
    config_free(cfg);
}

static bool log_has(fixture_t *f, const char *what) {
    char *log = read_all(f, "log");
    bool has = strstr(log, what) != NULL;
    free(log);
    return has;
}

/* Refresh c every 20 ms until the hook log holds what; false after limit_ms. */
static bool cluster_refresh_until_logged(fixture_t *f, cluster_t *c, const char *what,
                                         int limit_ms) {
    int64_t end = clock_mono_ms() + limit_ms;
    do {
        frugal_err_t err = {0};
        cluster_refresh(c, NULL, &err);
        if (log_has(f, what))
            return true;
        sleep_ms(20);
    } while (clock_mono_ms() < end);
    return false;
}

/* A state file that cannot be written fails the call, and no hook acts on the change
 * that was not published: neither the create of an increase nor the delete of
 * DeleteNodes. The failed increase's instance name is used by the next one. */
static void test_failed_write_runs_no_hook(void **state) {
    (void)state;
    fixture_t *f = fixture_new("echo \"$1 $2 $3\" >> $D/log", 10000, 2);
    char sdir[128], spath[160], text[1024];
    snprintf(sdir, sizeof(sdir), "%s/st", f->dir);
    snprintf(spath, sizeof(spath), "%s/state", sdir);
    assert_int_equal(mkdir(sdir, 0755), 0);
    snprintf(text, sizeof(text),
             "provider: {kind: exec, command: %s, timeout: 10s}\n"
             "state_file: %s\n"
             "node_groups:\n"
             "  - {id: a, machine_type: n1-standard-2, max_size: 3}\n",
             f->hook, spath);
    frugal_config_t *cfg = NULL;
    provider_t *p = NULL;
    cluster_t *c = NULL;
    open_cluster(text, &cfg, &p, &c);
    frugal_err_t err = {0};
    assert_int_equal(cluster_increase_size(c, NULL, "a", 1, &err), 0);
    assert_true(cluster_refresh_until_logged(f, c, "create a a-1\n", 5000));
    /* Until its result is applied, so that nothing is left to write. */
    const instance_t *in = NULL;
    int64_t end = clock_mono_ms() + 5000;
    for (;;) {
        assert_int_equal(cluster_refresh(c, NULL, &err), 0);
        cluster_read_lock(c);
        assert_non_null(cluster_find_instance(c, "frugal://a/a-1", &in));
        bool running = in->state == INSTANCE_RUNNING;
        cluster_read_unlock(c);
        if (running || clock_mono_ms() > end)
            break;
        sleep_ms(20);
    }

    /* Take the state file's directory away: every write fails. */
    assert_int_equal(unlink(spath), 0);
    char sprev[300];
    snprintf(sprev, sizeof(sprev), "%s.prev", spath);
    unlink(sprev);
    assert_int_equal(rmdir(sdir), 0);
    assert_int_equal(cluster_increase_size(c, NULL, "a", 1, &err), FRUGAL_EIO);
    const char *ids[] = {"frugal://a/a-1"};
    assert_int_equal(cluster_delete_nodes(c, NULL, "a", ids, 1, &err), FRUGAL_EIO);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(cluster_refresh(c, NULL, &err), 0); /* nothing to write */
        sleep_ms(20);
    }
    char *log = read_all(f, "log");
    assert_string_equal(log, "create a a-1\n");
    free(log);

    /* Writable again: the next increase makes a-2, never made before. */
    assert_int_equal(mkdir(sdir, 0755), 0);
    assert_int_equal(cluster_increase_size(c, NULL, "a", 1, &err), 0);
    assert_true(cluster_refresh_until_logged(f, c, "create a a-2\n", 5000));
    log = read_all(f, "log");
    assert_string_equal(log, "create a a-1\ncreate a a-2\n");
    free(log);
    close_cluster(cfg, p, c);
    fixture_free(f);
}

/* The results of a group that no longer exists (no refresh of a round sees it) are not
 * kept: a machine its create made is deleted. */
static void test_results_of_vanished_group_are_orphan_deleted(void **state) {
    (void)state;
    fixture_t *f = fixture_new("case $1 in\n"
                               "create) sleep 0.3; echo real-$3;;\n"
                               "delete) echo \"$3 $FRUGAL_PROVIDER_ID\" >> $D/deleted;;\n"
                               "esac",
                               10000, 2);
    group_t h;
    memset(&h, 0, sizeof(h));
    h.spec.id = strdup("h");
    h.spec.machine_type = strdup("n1-standard-2");
    h.managed = true;
    h.exists = true;
    h.max_size = 10;
    h.next_seq = 1;
    assert_false(provider_busy(f->p, &f->g));
    increase(f, 1);
    assert_true(provider_busy(f->p, &f->g));
    assert_false(provider_busy(f->p, &h));
    /* Rounds that refresh h alone: g is gone. */
    int64_t end = clock_mono_ms() + 5000;
    while (count_lines(f, "deleted") < 1 && clock_mono_ms() < end) {
        bool changed = false;
        frugal_err_t err = {0};
        assert_int_equal(provider_refresh(f->p, &h, cluster_now_ms(), &changed, &err), 0);
        commit(f);
        sleep_ms(20);
    }
    char *deleted = read_all(f, "deleted");
    assert_string_equal(deleted, "real-g-1 real-g-1\n");
    free(deleted);
    /* Nothing of g is kept. */
    end = clock_mono_ms() + 5000;
    while (provider_busy(f->p, &f->g) && clock_mono_ms() < end)
        sleep_ms(10);
    assert_false(provider_busy(f->p, &f->g));
    group_clear(&h);
    fixture_free(f);
}

static int64_t fake_now_ms = 1700000000000LL;

static int64_t fake_clock(void) {
    return fake_now_ms;
}

/* An autoprovisioned group emptied by DecreaseTargetSize while a create runs in it is
 * not deleted (TTL or NodeGroupDelete) until the create finished and the machine it
 * made was deleted. */
static void test_busy_group_is_not_deleted(void **state) {
    (void)state;
    fixture_t *f = fixture_new("echo \"$1 $2 $3\" >> $D/log\n"
                               "case $1 in create) sleep 1;; esac",
                               10000, 2);
    char text[1024];
    snprintf(text, sizeof(text),
             "provider: {kind: exec, command: %s, timeout: 10s}\n"
             "node_groups:\n"
             "  - {id: a, machine_type: n1-standard-2, max_size: 3}\n"
             "autoprovisioning:\n"
             "  enabled: true\n"
             "  machine_types: [n1-standard-2]\n"
             "  empty_group_ttl: 1m\n",
             f->hook);
    cluster_set_clock_for_testing(fake_clock);
    frugal_config_t *cfg = NULL;
    provider_t *p = NULL;
    cluster_t *c = NULL;
    open_cluster(text, &cfg, &p, &c);
    char id[100] = "";
    cluster_read_lock(c);
    for (size_t i = 0; i < cluster_groups_count(c); i++) {
        if (cluster_group_at(c, i)->autoprovisioned)
            snprintf(id, sizeof(id), "%s", cluster_group_at(c, i)->spec.id);
    }
    cluster_read_unlock(c);
    assert_true(id[0] != '\0');
    char create[512], orphan[512], delete_group[512];
    snprintf(create, sizeof(create), "create %s %s-1\n", id, id);
    snprintf(orphan, sizeof(orphan), "delete %s frugal://%s/%s-1\n", id, id, id);
    snprintf(delete_group, sizeof(delete_group), "delete-group %s \n", id);

    frugal_err_t err = {0};
    assert_int_equal(cluster_increase_size(c, NULL, id, 1, &err), 0);
    int64_t end = clock_mono_ms() + 5000;
    while (!log_has(f, create) && clock_mono_ms() < end)
        sleep_ms(10);
    assert_true(log_has(f, create));
    /* The create runs: dropping the instance empties the group... */
    assert_int_equal(cluster_decrease_target_size(c, NULL, id, -1, &err), 0);
    fake_now_ms += 120000;
    /* ...but it is busy: neither the TTL nor NodeGroupDelete deletes it. */
    assert_int_equal(cluster_refresh(c, NULL, &err), 0);
    assert_int_equal(cluster_nap_delete_group(c, NULL, id, &err), FRUGAL_EPRECOND);
    assert_false(log_has(f, "delete-group"));
    /* Once the create finished, its machine is deleted (the instance stayed, deleting,
     * until then); the group, empty from then on, goes after the TTL. */
    assert_true(cluster_refresh_until_logged(f, c, orphan, 5000));
    end = clock_mono_ms() + 5000;
    bool empty = false;
    while (!empty && clock_mono_ms() < end) {
        assert_int_equal(cluster_refresh(c, NULL, &err), 0);
        cluster_read_lock(c);
        const group_t *g = cluster_find_group(c, id);
        empty = g != NULL && g->instances_count == 0;
        cluster_read_unlock(c);
        sleep_ms(20);
    }
    assert_true(empty);
    fake_now_ms += 120000;
    assert_true(cluster_refresh_until_logged(f, c, delete_group, 5000));
    char *log = read_all(f, "log");
    char *o = strstr(log, orphan);
    char *dg = strstr(log, delete_group);
    assert_non_null(o);
    assert_true(o < dg);
    free(log);
    close_cluster(cfg, p, c);
    cluster_set_clock_for_testing(NULL);
    fixture_free(f);
}

/* A group hook that does not answer is killed at 3 s, within CA's 5 s call timeout,
 * and the call fails. */
static void test_group_hook_capped(void **state) {
    (void)state;
    fixture_t *f = fixture_new("case $1 in create-group) sleep 10;; esac", 60000, 1);
    f->g.exists = false;
    frugal_err_t err = {0};
    int64_t t0 = clock_mono_ms();
    assert_int_equal(provider_create_group(f->p, &f->g, &err), FRUGAL_EUNAVAIL);
    int64_t took = clock_mono_ms() - t0;
    assert_true(took >= 2500);
    assert_true(took < 4500);
    assert_false(f->g.exists);
    assert_non_null(strstr(err.msg, "timed out after 3000 ms"));
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    fixture_free(f);
}

static void test_bad_command(void **state) {
    (void)state;
    frugal_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.provider_kind = "exec";
    cfg.exec_command = "/nonexistent/hook";
    provider_t *p = NULL;
    frugal_err_t err = {0};
    assert_int_equal(provider_create(&cfg, &p, &err), FRUGAL_EINVAL);
    assert_null(p);
    assert_non_null(strstr(err.msg, "/nonexistent/hook is not executable"));
}

int main(void) {
    /* Whatever a hook's guard fails to reap would become this process's zombie: the
     * tests that look for children left over see it. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_with_provider_id),
        cmocka_unit_test(test_create_without_provider_id),
        cmocka_unit_test(test_long_group_id_unique_ids),
        cmocka_unit_test(test_out_of_resources),
        cmocka_unit_test(test_create_failed),
        cmocka_unit_test(test_create_of_a_used_id_is_a_failed_run),
        cmocka_unit_test(test_missing_interpreter),
        cmocka_unit_test(test_create_id_over_the_output_kept),
        cmocka_unit_test(test_timeout_kills_the_tree),
        cmocka_unit_test(test_delete_success_and_retry),
        cmocka_unit_test(test_restart_reruns_pending_work),
        cmocka_unit_test(test_parallelism_bound),
        cmocka_unit_test(test_decrease_cancels_and_cleans_orphans),
        cmocka_unit_test(test_decrease_after_a_restart_deletes),
        cmocka_unit_test(test_decrease_of_a_requeued_create_deletes),
        cmocka_unit_test(test_group_hooks),
        cmocka_unit_test(test_destroy_kills_running_hooks),
        cmocka_unit_test(test_release_kills_running_hooks),
        cmocka_unit_test(test_leak_gauge_zeroed_when_listing_stops),
        cmocka_unit_test(test_fence_ends_hooks_at_the_lease),
        cmocka_unit_test(test_exit_ends_what_the_hook_left),
        cmocka_unit_test(test_cluster_indexes_real_ids),
        cmocka_unit_test(test_bad_command),
        cmocka_unit_test(test_failed_write_runs_no_hook),
        cmocka_unit_test(test_results_of_vanished_group_are_orphan_deleted),
        cmocka_unit_test(test_busy_group_is_not_deleted),
        cmocka_unit_test(test_group_hook_capped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
