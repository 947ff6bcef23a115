#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster.h"
#include "state.h"
#include "store_testing.h"

/* A group exercising every field, with values that need escaping. */
static void make_group(group_t *g) {
    memset(g, 0, sizeof(*g));
    g->spec.id = strdup("nap-n1-standard-4-us-central1-a-1a2b");
    g->spec.machine_type = strdup("n1-standard-4");
    g->spec.zone = strdup("us-central1-a");
    g->spec.spot = true;
    g->spec.spot_price = 0.0123456789;
    g->spec.labels.count = 2;
    g->spec.labels.items = calloc(2, sizeof(kv_t));
    g->spec.labels.items[0] = (kv_t){strdup("example.com/a"), strdup("")};
    g->spec.labels.items[1] = (kv_t){strdup("team"), strdup("web")};
    g->spec.taints.count = 1;
    g->spec.taints.items = calloc(1, sizeof(taint_t));
    g->spec.taints.items[0] = (taint_t){strdup("dedicated"), strdup(""), strdup("NoSchedule")};
    g->spec.extra_resources.count = 1;
    g->spec.extra_resources.items = calloc(1, sizeof(kv_t));
    g->spec.extra_resources.items[0] = (kv_t){strdup("nvidia.com/gpu"), strdup("1")};
    g->min_size = 0;
    g->max_size = 7;
    g->managed = true;
    g->autoprovisioned = true;
    g->exists = false;
    g->target_size = 2;
    g->next_seq = 12;
    g->empty_since_ms = 1700000000123;
    g->instances_count = 3;
    g->instances = calloc(3, sizeof(instance_t));
    g->instances[0] = (instance_t){strdup("gce://x/x-10"), INSTANCE_RUNNING, 5, NULL, NULL, 0};
    g->instances[1] = (instance_t){strdup("gce://x/x-11"),
                                   INSTANCE_CREATING,
                                   6,
                                   strdup("OUT_OF_RESOURCES"),
                                   strdup("web=100% \n\"x\" é"),
                                   1};
    g->instances[2] = (instance_t){strdup("gce://x/x 12%"), INSTANCE_DELETING, 7, NULL, NULL, 0};
}

static void make_plain(group_t *g, const char *id) {
    memset(g, 0, sizeof(*g));
    g->spec.id = strdup(id);
    g->spec.machine_type = strdup("n1-standard-2");
    g->spec.spot_price = -1;
    g->min_size = 1;
    g->max_size = 3;
    g->managed = true;
    g->exists = true;
    g->target_size = 1;
    g->next_seq = 1;
}

static void assert_groups_equal(const group_t *a, const group_t *b) {
    assert_string_equal(a->spec.id, b->spec.id);
    assert_string_equal(a->spec.machine_type, b->spec.machine_type);
    if (a->spec.zone == NULL)
        assert_null(b->spec.zone);
    else
        assert_string_equal(a->spec.zone, b->spec.zone);
    assert_int_equal(a->spec.spot, b->spec.spot);
    assert_true(a->spec.spot_price == b->spec.spot_price);
    assert_int_equal(a->spec.labels.count, b->spec.labels.count);
    for (size_t i = 0; i < a->spec.labels.count; i++) {
        assert_string_equal(a->spec.labels.items[i].key, b->spec.labels.items[i].key);
        assert_string_equal(a->spec.labels.items[i].value, b->spec.labels.items[i].value);
    }
    assert_int_equal(a->spec.taints.count, b->spec.taints.count);
    for (size_t i = 0; i < a->spec.taints.count; i++) {
        assert_string_equal(a->spec.taints.items[i].key, b->spec.taints.items[i].key);
        assert_string_equal(a->spec.taints.items[i].value, b->spec.taints.items[i].value);
        assert_string_equal(a->spec.taints.items[i].effect, b->spec.taints.items[i].effect);
    }
    assert_int_equal(a->spec.extra_resources.count, b->spec.extra_resources.count);
    for (size_t i = 0; i < a->spec.extra_resources.count; i++) {
        assert_string_equal(a->spec.extra_resources.items[i].key,
                            b->spec.extra_resources.items[i].key);
        assert_string_equal(a->spec.extra_resources.items[i].value,
                            b->spec.extra_resources.items[i].value);
    }
    assert_int_equal(a->min_size, b->min_size);
    assert_int_equal(a->max_size, b->max_size);
    assert_int_equal(a->managed, b->managed);
    assert_int_equal(a->autoprovisioned, b->autoprovisioned);
    assert_int_equal(a->exists, b->exists);
    assert_int_equal(a->target_size, b->target_size);
    assert_int_equal(a->next_seq, b->next_seq);
    assert_int_equal(a->empty_since_ms, b->empty_since_ms);
    assert_int_equal(a->instances_count, b->instances_count);
    for (size_t i = 0; i < a->instances_count; i++) {
        const instance_t *x = &a->instances[i];
        const instance_t *y = &b->instances[i];
        assert_string_equal(x->id, y->id);
        assert_int_equal(x->state, y->state);
        assert_int_equal(x->state_since_ms, y->state_since_ms);
        if (x->error_code == NULL) {
            assert_null(y->error_code);
        } else {
            assert_string_equal(x->error_code, y->error_code);
            assert_string_equal(x->error_message, y->error_message);
            assert_int_equal(x->error_class, y->error_class);
        }
    }
}

static void test_roundtrip(void **state) {
    (void)state;
    group_t g[2];
    make_group(&g[0]);
    make_plain(&g[1], "pool-b");
    const group_t *view[2] = {&g[0], &g[1]};
    char *text = NULL;
    size_t len = 0;
    frugal_err_t err = {0};
    assert_int_equal(state_format(view, 2, &text, &len, &err), 0);
    assert_int_equal(strlen(text), len);
    /* One record per line, nothing unescaped. */
    assert_non_null(strstr(text, "error_message=web=100%25%20%0A\"x\"%20%C3%A9"));
    assert_non_null(strstr(text, "end groups=2 instances=3 sum="));
    for (size_t i = 0; i < len; i++)
        assert_true((unsigned char)text[i] < 0x7f);

    state_t st;
    int rc = state_parse("mem", text, len, &st, &err);
    assert_int_equal(rc, 0);
    assert_int_equal(st.count, 2);
    assert_groups_equal(&g[0], &st.groups[0]);
    assert_groups_equal(&g[1], &st.groups[1]);
    state_free(&st);

    /* Formatting the parsed state gives the same bytes. */
    assert_int_equal(state_parse("mem", text, len, &st, &err), 0);
    const group_t *view2[2] = {&st.groups[0], &st.groups[1]};
    char *text2 = NULL;
    size_t len2 = 0;
    assert_int_equal(state_format(view2, 2, &text2, &len2, &err), 0);
    assert_string_equal(text, text2);
    state_free(&st);
    free(text2);
    free(text);
    group_clear(&g[0]);
    group_clear(&g[1]);
}

static void test_empty_cluster(void **state) {
    (void)state;
    char *text = NULL;
    size_t len = 0;
    state_t st;
    assert_int_equal(state_format(NULL, 0, &text, &len, NULL), 0);
    assert_int_equal(state_parse("mem", text, len, &st, NULL), 0);
    assert_int_equal(st.count, 0);
    state_free(&st);
    free(text);
}

#define HDR "frugal-state version=1\n"
#define GRP                                                                                        \
    "group id=a managed=1 autoprovisioned=0 exists=1 min=0 max=3 target=1 next_seq=2 "             \
    "empty_since=0 machine_type=m spot=0 spot_price=-1\n"
#define INST "instance id=frugal://a/a-1 state=running since=1\n"
#define END "end groups=1 instances=1\n"

/* Each corrupt text is rejected with EINVAL and a message naming name:line. */
static void expect_corrupt(const char *text, const char *where, const char *what) {
    state_t st;
    frugal_err_t err = {0};
    int rc = state_parse("state.txt", text, strlen(text), &st, &err);
    if (rc != FRUGAL_EINVAL || strstr(err.msg, where) == NULL || strstr(err.msg, what) == NULL)
        fail_msg("text:\n%s\ngot rc %d: %s\nwanted %s ... %s", text, rc, err.msg, where, what);
    assert_int_equal(st.count, 0);
    assert_null(st.groups);
}

static void test_corrupt(void **state) {
    (void)state;
    /* Sanity: the pieces make a valid file. */
    state_t st;
    const char *ok = "# comment\n\n" HDR GRP INST END;
    assert_int_equal(state_parse("state.txt", ok, strlen(ok), &st, NULL), 0);
    assert_int_equal(st.count, 1);
    state_free(&st);

    expect_corrupt("", "state.txt:1:", "empty state file");
    expect_corrupt("hello\n", "state.txt:1:", "not a frugal state file");
    expect_corrupt("frugal-state version=3\n" GRP END,
                   "state.txt:1:", "unsupported state format version 3");
    expect_corrupt(HDR GRP INST, "state.txt:3:", "truncated");
    expect_corrupt(HDR GRP INST "end groups=1 instances=2\n", "state.txt:4:", "end record counts");
    expect_corrupt(HDR GRP INST END INST, "state.txt:5:", "after the end record");
    expect_corrupt(HDR INST GRP END, "state.txt:2:", "before any group");
    expect_corrupt(HDR GRP "bogus x=1\n" END, "state.txt:3:", "unknown record type");
    expect_corrupt(HDR GRP "instance id=frugal://a/a-1 state=running since=1 color=red\n" END,
                   "state.txt:3:", "unknown field color");
    expect_corrupt(HDR GRP "instance id=frugal://a/a-1 since=1\n" END,
                   "state.txt:3:", "missing field state");
    expect_corrupt(HDR GRP "instance id=frugal://a/a-1 state=flying since=1\n" END,
                   "state.txt:3:", "unknown state");
    expect_corrupt(HDR GRP "instance id=frugal://a/a-1 state=running since=1x\n" END,
                   "state.txt:3:", "since: expected an integer");
    expect_corrupt(HDR GRP "instance id=frugal://a/a%2 state=running since=1\n" END,
                   "state.txt:3:", "bad escape");
    expect_corrupt(HDR GRP "instance id=frugal://a/a%00 state=running since=1\n" END,
                   "state.txt:3:", "NUL");
    expect_corrupt(HDR GRP INST INST "end groups=1 instances=2\n", "state.txt:4:", "listed twice");
    expect_corrupt(HDR GRP GRP END, "state.txt:3:", "group a listed twice");
    expect_corrupt(HDR GRP "label key=k value=v\nlabel key=k value=w\n" END,
                   "state.txt:4:", "label k given twice");
    /* a resource obeys the rules NewNodeGroup applies, in the same words */
    expect_corrupt(HDR GRP "resource key=example.com/fpga value=abc\n" END, "state.txt:3:",
                   "invalid quantity \"abc\" for resource example.com/fpga: want a quantity >= 0");
    expect_corrupt(HDR GRP "resource key=example.com/fpga value=-1\n" END,
                   "state.txt:3:", "invalid quantity \"-1\"");
    expect_corrupt(HDR GRP "resource key=bad/name/x value=1\n" END,
                   "state.txt:3:", "invalid resource name \"bad/name/x\"");
    expect_corrupt(HDR GRP "resource key=example.com/fpga value=1\n"
                           "resource key=example.com/fpga value=2\n" END,
                   "state.txt:4:", "resource example.com/fpga given twice");
    expect_corrupt(
        HDR "group id=a managed=1 autoprovisioned=0 exists=1 min=4 max=3 target=1 next_seq=2 "
            "empty_since=0 machine_type=m spot=0 spot_price=-1\n" END,
        "state.txt:2:", "min 4 > max 3");
    expect_corrupt(
        HDR "group id=a managed=2 autoprovisioned=0 exists=1 min=0 max=3 target=1 next_seq=2 "
            "empty_since=0 machine_type=m spot=0 spot_price=-1\n" END,
        "state.txt:2:", "managed");
    expect_corrupt(
        HDR "group id=a managed=1 autoprovisioned=0 exists=1 min=0 max=3 target=1 next_seq=2 "
            "empty_since=0 machine_type=m spot=1 spot_price=nan\n" END,
        "state.txt:2:", "spot_price: expected a finite number, got \"nan\"");
    /* next_seq 2 names the next instance a-2: one listed already would be named twice */
    expect_corrupt(HDR GRP "instance id=frugal://a/a-2 state=creating since=1\n" END,
                   "state.txt:3:",
                   "instance frugal://a/a-2 of group a: numbered 2, not below the group's "
                   "next_seq 2: a new instance would be given its id");
    expect_corrupt(HDR "group id=a id=b\n" END, "state.txt:2:", "given twice");
    expect_corrupt(HDR "group id=a target\n" END, "state.txt:2:", "expected key=value");
    expect_corrupt(HDR GRP
                   "instance id=frugal://a/a-1 state=running since=99999999999999999999\n" END,
                   "state.txt:3:", "since");
}

static void test_labels_sorted_on_parse(void **state) {
    (void)state;
    const char *text = HDR GRP "label key=z value=1\nlabel key=b value=2\nlabel key=m value=3\n"
                               "end groups=1 instances=0\n";
    state_t st;
    assert_int_equal(state_parse("s", text, strlen(text), &st, NULL), 0);
    assert_int_equal(st.groups[0].spec.labels.count, 3);
    assert_string_equal(st.groups[0].spec.labels.items[0].key, "b");
    assert_string_equal(st.groups[0].spec.labels.items[1].key, "m");
    assert_string_equal(st.groups[0].spec.labels.items[2].key, "z");
    assert_null(st.groups[0].spec.zone);
    state_free(&st);
}

static void test_files(void **state) {
    (void)state;
    char dir[] = "/tmp/frugal-state-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[200], tmp[300];
    snprintf(path, sizeof(path), "%s/state", dir);
    snprintf(tmp, sizeof(tmp), "%s/state.tmp", dir);

    state_t st;
    frugal_err_t err = {0};
    assert_int_equal(state_load(path, &st, &err), FRUGAL_ENOTFOUND);

    group_t g;
    make_group(&g);
    const group_t *view[1] = {&g};
    assert_int_equal(state_save(path, view, 1, &err), 0);
    assert_int_equal(access(tmp, F_OK), -1);
    assert_int_equal(state_load(path, &st, &err), 0);
    assert_int_equal(st.count, 1);
    assert_groups_equal(&g, &st.groups[0]);
    state_free(&st);

    /* A corrupt file reports the path and line. */
    FILE *f = fopen(path, "w");
    fputs(HDR GRP "instance id=x\n", f);
    fclose(f);
    assert_int_equal(state_load(path, &st, &err), FRUGAL_EINVAL);
    char want[300];
    snprintf(want, sizeof(want), "%s:3: instance: missing field state", path);
    assert_string_equal(err.msg, want);

    /* A directory that does not exist: EIO, nothing created. */
    char bad[300];
    snprintf(bad, sizeof(bad), "%s/missing/state", dir);
    assert_int_equal(state_save(bad, view, 1, &err), FRUGAL_EIO);
    assert_non_null(strstr(err.msg, "missing/state.tmp"));

    /* The path is a directory: the rename fails and the temp file is cleaned up. */
    char sub[200];
    snprintf(sub, sizeof(sub), "%s/sub", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    char sub_file[300];
    snprintf(sub_file, sizeof(sub_file), "%s/x", sub);
    FILE *x = fopen(sub_file, "w");
    fclose(x);
    assert_int_equal(state_save(sub, view, 1, &err), FRUGAL_EIO);
    char sub_tmp[300];
    snprintf(sub_tmp, sizeof(sub_tmp), "%s.tmp", sub);
    assert_int_equal(access(sub_tmp, F_OK), -1);
    unlink(sub_file);
    rmdir(sub);

    group_clear(&g);
    unlink(path);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip), cmocka_unit_test(test_empty_cluster),
        cmocka_unit_test(test_corrupt),   cmocka_unit_test(test_labels_sorted_on_parse),
        cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
