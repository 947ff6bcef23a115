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

#include "cgroup.h"

#define DEFAULT_BYTES ((int64_t)1140850688)

/* A fresh directory standing in for /sys/fs/cgroup. */
static int make_root(void **state) {
    char *dir = strdup("/tmp/frugal-test-cgroup.XXXXXX");
    assert_non_null(mkdtemp(dir));
    *state = dir;
    return 0;
}

static int remove_root(void **state) {
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", (char *)*state);
    assert_int_equal(system(cmd), 0);
    free(*state);
    return 0;
}

/* root/rel with text, its directories made as needed. */
static void write_file(const char *root, const char *rel, const char *text) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    for (char *slash = strchr(path + strlen(root) + 1, '/'); slash != NULL;
         slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        mkdir(path, 0755);
        *slash = '/';
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static cgroup_limit_t budget_of(const char *root, const char *self, int64_t *out, char *why,
                                size_t size) {
    *out = -1;
    return cgroup_memory_budget(root, self, DEFAULT_BYTES, out, why, size);
}

static cgroup_limit_t budget(const char *root, int64_t *out, char *why, size_t size) {
    return budget_of(root, NULL, out, why, size);
}

static void test_v2_limit(void **state) {
    const char *root = *state;
    write_file(root, "memory.max", "1073741824\n");
    int64_t b;
    char why[640];
    assert_int_equal(budget(root, &b, why, sizeof(why)), CGROUP_LIMIT_SET);
    assert_int_equal(b, 805306368); /* 75 % of 1 GiB */
    assert_non_null(strstr(why, "75% of the cgroup memory limit 1073741824 bytes"));
    assert_non_null(strstr(why, "/memory.max"));
}

static void test_v2_max(void **state) {
    const char *root = *state;
    write_file(root, "memory.max", "max\n");
    int64_t b;
    char why[640];
    assert_int_equal(budget(root, &b, why, sizeof(why)), CGROUP_LIMIT_NONE);
    assert_int_equal(b, DEFAULT_BYTES);
    assert_non_null(strstr(why, "no cgroup memory limit"));
}

static void test_v1_limit_and_unlimited(void **state) {
    const char *root = *state;
    write_file(root, "memory/memory.limit_in_bytes", "536870912\n");
    int64_t b;
    char why[640];
    assert_int_equal(budget(root, &b, why, sizeof(why)), CGROUP_LIMIT_SET);
    assert_int_equal(b, 402653184);
    assert_non_null(strstr(why, "memory/memory.limit_in_bytes"));
    /* v1's "no limit" is the largest page-aligned int64 */
    write_file(root, "memory/memory.limit_in_bytes", "9223372036854771712\n");
    assert_int_equal(budget(root, &b, why, sizeof(why)), CGROUP_LIMIT_NONE);
    assert_int_equal(b, DEFAULT_BYTES);
}

static void test_v2_wins_over_v1(void **state) {
    const char *root = *state;
    write_file(root, "memory/memory.limit_in_bytes", "536870912\n");
    write_file(root, "memory.max", "2147483648\n");
    int64_t b;
    char why[640];
    assert_int_equal(budget(root, &b, why, sizeof(why)), CGROUP_LIMIT_SET);
    assert_int_equal(b, 1610612736);
}

static void test_no_cgroup_files(void **state) {
    int64_t b;
    char why[640];
    assert_int_equal(budget(*state, &b, why, sizeof(why)), CGROUP_LIMIT_NONE);
    assert_int_equal(b, DEFAULT_BYTES);
    assert_int_equal(budget("/nonexistent/cgroup", &b, why, sizeof(why)), CGROUP_LIMIT_NONE);
    assert_int_equal(b, DEFAULT_BYTES);
}

/* Unreadable or garbage: the default, with the reason; never an error. */
static void test_unreadable(void **state) {
    const char *root = *state;
    int64_t b;
    char why[640];
    write_file(root, "memory.max", "lots\n");
    assert_int_equal(budget(root, &b, why, sizeof(why)), CGROUP_LIMIT_UNREADABLE);
    assert_int_equal(b, DEFAULT_BYTES);
    assert_non_null(strstr(why, "cannot be read"));
    assert_non_null(strstr(why, "not a byte count: \"lots\""));
    write_file(root, "memory.max", "");
    assert_int_equal(budget(root, &b, why, sizeof(why)), CGROUP_LIMIT_UNREADABLE);
    write_file(root, "memory.max", "-5\n");
    assert_int_equal(budget(root, &b, why, sizeof(why)), CGROUP_LIMIT_UNREADABLE);
    /* a directory where the file should be: it exists but cannot be read as one */
    char path[256];
    snprintf(path, sizeof(path), "%s/memory.max", root);
    unlink(path);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(budget(root, &b, why, sizeof(why)), CGROUP_LIMIT_UNREADABLE);
    assert_int_equal(b, DEFAULT_BYTES);
    rmdir(path);
}

/* The process's own cgroup (its /proc/self/cgroup path under the mount) comes first: a
 * v2 host without a cgroup namespace, a systemd unit's MemoryMax. */
static void test_own_cgroup_first(void **state) {
    const char *root = *state;
    char self[512];
    snprintf(self, sizeof(self), "%s/self-cgroup", root);
    write_file(root, "self-cgroup", "0::/kubepods/pod1/ctr\n");
    write_file(root, "memory.max", "max\n");
    write_file(root, "kubepods/pod1/ctr/memory.max", "2147483648\n");
    int64_t b;
    char why[640];
    assert_int_equal(budget_of(root, self, &b, why, sizeof(why)), CGROUP_LIMIT_SET);
    assert_int_equal(b, 1610612736);
    assert_non_null(strstr(why, "/kubepods/pod1/ctr/memory.max"));
    /* without the self file, the root's: unlimited */
    assert_int_equal(budget(root, &b, why, sizeof(why)), CGROUP_LIMIT_NONE);
    /* a path that is not under this mount (a namespaced view): the root's file */
    write_file(root, "self-cgroup", "0::/elsewhere\n");
    write_file(root, "memory.max", "1073741824\n");
    assert_int_equal(budget_of(root, self, &b, why, sizeof(why)), CGROUP_LIMIT_SET);
    assert_int_equal(b, 805306368);
    /* "0::/": the root itself */
    write_file(root, "self-cgroup", "0::/\n");
    assert_int_equal(budget_of(root, self, &b, why, sizeof(why)), CGROUP_LIMIT_SET);
    assert_int_equal(b, 805306368);
}

static void test_own_cgroup_v1(void **state) {
    const char *root = *state;
    char self[512];
    snprintf(self, sizeof(self), "%s/self-cgroup", root);
    /* the memory controller among others on its line; other lines ignored */
    write_file(root, "self-cgroup", "5:cpu,cpuacct:/x\n4:blkio,memory:/docker/abc\n0::/\n");
    write_file(root, "memory/memory.limit_in_bytes", "9223372036854771712\n");
    write_file(root, "memory/docker/abc/memory.limit_in_bytes", "536870912\n");
    int64_t b;
    char why[640];
    assert_int_equal(budget_of(root, self, &b, why, sizeof(why)), CGROUP_LIMIT_SET);
    assert_int_equal(b, 402653184);
    assert_non_null(strstr(why, "memory/docker/abc/memory.limit_in_bytes"));
    /* an unreadable self file: the root's files */
    write_file(root, "self-cgroup", "garbage without colons\n");
    assert_int_equal(budget_of(root, self, &b, why, sizeof(why)), CGROUP_LIMIT_NONE);
    assert_int_equal(budget_of(root, "/nonexistent/self", &b, why, sizeof(why)), CGROUP_LIMIT_NONE);
}

static void test_root_from_environment(void **state) {
    (void)state;
    unsetenv("FRUGAL_CGROUP_ROOT");
    assert_string_equal(cgroup_root(), "/sys/fs/cgroup");
    assert_string_equal(cgroup_self(), "/proc/self/cgroup");
    setenv("FRUGAL_CGROUP_ROOT", "/tmp/x", 1);
    assert_string_equal(cgroup_root(), "/tmp/x");
    assert_null(cgroup_self());
    setenv("FRUGAL_CGROUP_ROOT", "", 1);
    assert_string_equal(cgroup_root(), "/sys/fs/cgroup");
    unsetenv("FRUGAL_CGROUP_ROOT");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_v2_limit, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_v2_max, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_v1_limit_and_unlimited, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_v2_wins_over_v1, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_no_cgroup_files, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_unreadable, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_own_cgroup_first, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_own_cgroup_v1, make_root, remove_root),
        cmocka_unit_test(test_root_from_environment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
