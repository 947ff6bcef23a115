/* Unit tests of the exec hook parameters in the config (server/core/config.c with the
 * rules of server/core/hook_params.c): provider.params, machine_types[].provider_params,
 * node_groups[].provider_params and provider.env_from_files, accepted and refused with
 * their exact `FILE:LINE:COL: path: message` line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "hook_params.h"

#define EXEC_HEAD "provider:\n  kind: exec\n  command: /bin/true\n"

static frugal_config_t *load_ok(const char *text) {
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    int rc = config_load_string("t.yaml", text, strlen(text), &cfg, &errors);
    if (rc != 0)
        fprintf(stderr, "unexpected errors:\n%s", errors != NULL ? errors : "(none)\n");
    assert_int_equal(rc, 0);
    assert_null(errors);
    return cfg;
}

/* The config fails with exactly this one error line (without the newline). */
static void expect_error(const char *text, const char *line) {
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    assert_int_equal(config_load_string("t.yaml", text, strlen(text), &cfg, &errors),
                     FRUGAL_EINVAL);
    assert_null(cfg);
    assert_non_null(errors);
    char want[1024];
    snprintf(want, sizeof(want), "%s\n", line);
    if (strcmp(errors, want) != 0)
        fprintf(stderr, "want: %sgot:  %s", want, errors);
    assert_string_equal(errors, want);
    free(errors);
}

static const char *value_of(const kv_list_t *l, const char *key) {
    for (size_t i = 0; i < l->count; i++) {
        if (strcmp(l->items[i].key, key) == 0)
            return l->items[i].value;
    }
    return NULL;
}

/* A temporary file holding len bytes of data; its path in path. */
static void temp_file(char *path, size_t size, const char *data, size_t len) {
    snprintf(path, size, "/tmp/frugal-test-params-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

/* ---- the pure rules ---- */

static void test_key_rules(void **state) {
    (void)state;
    assert_null(hook_param_key_problem("image"));
    assert_null(hook_param_key_problem("libvirt.uri"));
    assert_null(hook_param_key_problem("user-data_2"));
    assert_string_equal(hook_param_key_problem(""), "must not be empty");
    assert_string_equal(hook_param_key_problem("a b"), "must match [A-Za-z0-9_.-]+");
    assert_string_equal(hook_param_key_problem("a=b"), "must match [A-Za-z0-9_.-]+");
    assert_string_equal(hook_param_key_problem("é"), "must match [A-Za-z0-9_.-]+");
    char long_key[HOOK_PARAM_KEY_MAX + 2];
    memset(long_key, 'k', sizeof(long_key) - 1);
    long_key[sizeof(long_key) - 1] = '\0';
    assert_non_null(hook_param_key_problem(long_key));
    long_key[HOOK_PARAM_KEY_MAX] = '\0';
    assert_null(hook_param_key_problem(long_key));
}

static void test_env_name_mapping(void **state) {
    (void)state;
    char name[sizeof(HOOK_PARAM_PREFIX) + HOOK_PARAM_KEY_MAX];
    hook_param_env_name("libvirt.uri", name, sizeof(name));
    assert_string_equal(name, "FRUGAL_PARAM_LIBVIRT_URI");
    hook_param_env_name("user-data", name, sizeof(name));
    assert_string_equal(name, "FRUGAL_PARAM_USER_DATA");
    hook_param_env_name("Base_Image9", name, sizeof(name));
    assert_string_equal(name, "FRUGAL_PARAM_BASE_IMAGE9");
    assert_true(hook_param_keys_collide("user-data", "USER.DATA"));
    assert_true(hook_param_keys_collide("a_b", "a-b"));
    assert_false(hook_param_keys_collide("ab", "a_b"));
    assert_false(hook_param_keys_collide("a", "ab"));
}

static void test_value_rules(void **state) {
    (void)state;
    char big[HOOK_PARAM_VALUE_MAX + 1];
    memset(big, 'v', sizeof(big));
    assert_null(hook_param_value_problem(big, HOOK_PARAM_VALUE_MAX));
    assert_string_equal(hook_param_value_problem(big, HOOK_PARAM_VALUE_MAX + 1),
                        "is longer than 4 KiB (4096 bytes)");
    assert_string_equal(hook_param_value_problem("a\0b", 3), "holds a NUL character");
    assert_null(hook_param_value_problem("", 0));
    /* a file passed whole (env_from_files) may be longer: 64 KiB */
    static char file[HOOK_ENV_FILE_MAX + 1];
    memset(file, 'k', sizeof(file));
    assert_null(hook_env_file_problem(file, HOOK_PARAM_VALUE_MAX + 1));
    assert_null(hook_env_file_problem(file, HOOK_ENV_FILE_MAX));
    assert_string_equal(hook_env_file_problem(file, HOOK_ENV_FILE_MAX + 1),
                        "is longer than 64 KiB (65536 bytes)");
    assert_string_equal(hook_env_file_problem("a\0b", 3), "holds a NUL character");
}

/* Later layers win per variable name, whatever spelling of the key they use. */
static void test_merge_order(void **state) {
    (void)state;
    kv_list_t defaults = {0}, type = {0}, group = {0}, out = {0};
    assert_int_equal(kv_list_put(&defaults, "image", "debian"), 0);
    assert_int_equal(kv_list_put(&defaults, "user-data", "default"), 0);
    assert_int_equal(kv_list_put(&defaults, "network", "default-net"), 0);
    assert_int_equal(kv_list_put(&type, "user.data", "typed"), 0);
    assert_int_equal(kv_list_put(&type, "flavor", "m1"), 0);
    assert_int_equal(kv_list_put(&group, "USER_DATA", "grouped"), 0);
    assert_int_equal(kv_list_put(&group, "image", "ubuntu"), 0);
    const kv_list_t *layers[] = {&defaults, &type, NULL, &group};
    assert_int_equal(hook_params_merge(layers, 4, &out), 0);
    assert_int_equal(out.count, 4);
    assert_string_equal(value_of(&out, "FRUGAL_PARAM_IMAGE"), "ubuntu");
    assert_string_equal(value_of(&out, "FRUGAL_PARAM_USER_DATA"), "grouped");
    assert_string_equal(value_of(&out, "FRUGAL_PARAM_NETWORK"), "default-net");
    assert_string_equal(value_of(&out, "FRUGAL_PARAM_FLAVOR"), "m1");
    kv_list_clear(&out);
    const kv_list_t *two[] = {&defaults, &type};
    assert_int_equal(hook_params_merge(two, 2, &out), 0);
    assert_string_equal(value_of(&out, "FRUGAL_PARAM_USER_DATA"), "typed");
    kv_list_clear(&out);
    kv_list_clear(&defaults);
    kv_list_clear(&type);
    kv_list_clear(&group);
}

/* ---- the config ---- */

static void test_params_loaded(void **state) {
    (void)state;
    char secret[64];
    temp_file(secret, sizeof(secret), "s3cr=t\n", 7);
    char text[1024];
    snprintf(text, sizeof(text),
             EXEC_HEAD "  params: {libvirt.uri: 'qemu:///system', image: debian, empty: null, "
                       "n: 3}\n"
                       "  env_from_files: {OS_PASSWORD: %s}\n"
                       "machine_types:\n"
                       "  - {name: small, cpu: 1, memory: 1Gi, provider_params: {flavor: m1}}\n"
                       "node_groups:\n"
                       "  - id: a\n    machine_type: small\n    max_size: 2\n"
                       "    provider_params: {image: ubuntu}\n",
             secret);
    frugal_config_t *cfg = load_ok(text);
    assert_int_equal(cfg->exec_params.count, 4);
    assert_string_equal(value_of(&cfg->exec_params, "libvirt.uri"), "qemu:///system");
    assert_string_equal(value_of(&cfg->exec_params, "empty"), "");
    assert_string_equal(value_of(&cfg->exec_params, "n"), "3");
    assert_string_equal(value_of(&cfg->exec_env_files, "OS_PASSWORD"), "s3cr=t\n");
    const machine_type_t *mt = config_find_machine_type(cfg, "small");
    assert_string_equal(value_of(&mt->provider_params, "flavor"), "m1");
    assert_string_equal(value_of(&cfg->node_groups[0].provider_params, "image"), "ubuntu");
    assert_int_equal(config_find_machine_type(cfg, "n1-standard-1")->provider_params.count, 0);
    config_free(cfg);
    unlink(secret);
}

static void test_params_refused(void **state) {
    (void)state;
    expect_error(EXEC_HEAD "  params: {'bad key': x}\n",
                 "t.yaml:4:12: provider.params.bad key: invalid parameter name \"bad key\": "
                 "must match [A-Za-z0-9_.-]+");
    expect_error(EXEC_HEAD "  params:\n    user-data: a\n    user.data: b\n",
                 "t.yaml:6:5: provider.params.user.data: \"user.data\" and \"user-data\" (line 5) "
                 "are both passed as FRUGAL_PARAM_USER_DATA");
    expect_error(EXEC_HEAD "  params: {image: [a]}\n",
                 "t.yaml:4:19: provider.params.image: expected a string, got a sequence");
    expect_error(EXEC_HEAD "  params: {image: \"a\\0b\"}\n",
                 "t.yaml:4:19: provider.params.image: value holds a NUL character");
    char text[6000];
    int n = snprintf(text, sizeof(text), EXEC_HEAD "  params:\n    big: ");
    memset(text + n, 'x', HOOK_PARAM_VALUE_MAX + 1);
    snprintf(text + n + HOOK_PARAM_VALUE_MAX + 1, 2, "\n");
    expect_error(text, "t.yaml:5:10: provider.params.big: value is longer than 4 KiB (4096 bytes)");
    expect_error("provider:\n  kind: simulated\n  params: {a: b}\n",
                 "t.yaml:3:3: provider.params: only valid with provider kind exec");
    expect_error(
        EXEC_HEAD
        "machine_types:\n  - {name: s, cpu: 1, memory: 1Gi, provider_params: {'a/b': x}}\n",
        "t.yaml:5:54: machine_types[0].provider_params.a/b: invalid parameter name "
        "\"a/b\": must match [A-Za-z0-9_.-]+");
    expect_error(EXEC_HEAD
                 "node_groups:\n  - id: a\n    machine_type: n1-standard-1\n    max_size: 1\n"
                 "    provider_params: {A.b: 1, a-B: 2}\n",
                 "t.yaml:8:31: node_groups[0].provider_params.a-B: \"a-B\" and \"A.b\" (line 8) "
                 "are both passed as FRUGAL_PARAM_A_B");
    /* A type refused for its params is not also unknown to the group that names it. */
    expect_error(EXEC_HEAD "machine_types:\n"
                           "  - {name: mt, cpu: 2, memory: 4Gi, provider_params: {'bad key': x}}\n"
                           "node_groups:\n  - {id: g, machine_type: mt, max_size: 3}\n"
                           "autoprovisioning: {enabled: true, machine_types: [mt]}\n",
                 "t.yaml:5:55: machine_types[0].provider_params.bad key: invalid parameter name "
                 "\"bad key\": must match [A-Za-z0-9_.-]+");
    /* No hook reads them with the simulated provider (the default kind). */
    expect_error("machine_types:\n  - {name: s, cpu: 1, memory: 1Gi, provider_params: {a: x}}\n",
                 "t.yaml:2:53: machine_types[0].provider_params: only valid with provider kind "
                 "exec");
    expect_error("provider: {kind: simulated}\nnode_groups:\n  - id: a\n"
                 "    machine_type: n1-standard-1\n    max_size: 1\n    provider_params: {a: x}\n",
                 "t.yaml:6:22: node_groups[0].provider_params: only valid with provider kind exec");
}

/* A known_hosts of five hypervisors from `ssh-keyscan HOST` (rsa, ecdsa and ed25519
 * lines) is about 5 KiB: over a parameter's 4 KiB, within a file's 64 KiB. */
static void test_env_files_large(void **state) {
    (void)state;
    static char hosts[5 * 1024];
    char path[64], text[512];
    for (size_t i = 0; i < sizeof(hosts); i++)
        hosts[i] = (i % 100 == 99) ? '\n' : 'h';
    temp_file(path, sizeof(path), hosts, sizeof(hosts));
    snprintf(text, sizeof(text), EXEC_HEAD "  env_from_files: {LIBVIRT_KNOWN_HOSTS: %s}\n", path);
    frugal_config_t *cfg = load_ok(text);
    const char *got = value_of(&cfg->exec_env_files, "LIBVIRT_KNOWN_HOSTS");
    assert_non_null(got);
    assert_int_equal(strlen(got), sizeof(hosts));
    assert_memory_equal(got, hosts, sizeof(hosts));
    config_free(cfg);
    unlink(path);
}

static void test_env_files_refused(void **state) {
    (void)state;
    static char big[65 * 1024];
    char path[64], nul[64], text[512], want[512];
    memset(big, 'x', sizeof(big));
    temp_file(path, sizeof(path), big, sizeof(big));
    temp_file(nul, sizeof(nul), "a\0b", 3);
    snprintf(text, sizeof(text), EXEC_HEAD "  env_from_files: {TOKEN: %s}\n", path);
    snprintf(want, sizeof(want),
             "t.yaml:4:27: provider.env_from_files.TOKEN: %s is longer than 64 KiB (65536 bytes)",
             path);
    expect_error(text, want);
    snprintf(text, sizeof(text), EXEC_HEAD "  env_from_files: {TOKEN: %s}\n", nul);
    snprintf(want, sizeof(want),
             "t.yaml:4:27: provider.env_from_files.TOKEN: %s holds a NUL character", nul);
    expect_error(text, want);
    expect_error(EXEC_HEAD "  env_from_files: {TOKEN: /nonexistent/secret}\n",
                 "t.yaml:4:27: provider.env_from_files.TOKEN: cannot read /nonexistent/secret: "
                 "No such file or directory");
    expect_error(EXEC_HEAD "  env_from_files: {TOKEN: /tmp}\n",
                 "t.yaml:4:27: provider.env_from_files.TOKEN: cannot read /tmp: not a regular "
                 "file");
    /* A FIFO without a writer is refused at once (opening it must not wait for one). */
    char fifo[64];
    snprintf(fifo, sizeof(fifo), "/tmp/frugal-test-fifo-%d", (int)getpid());
    assert_int_equal(mkfifo(fifo, 0600), 0);
    snprintf(text, sizeof(text), EXEC_HEAD "  env_from_files: {TOKEN: %s}\n", fifo);
    snprintf(want, sizeof(want),
             "t.yaml:4:27: provider.env_from_files.TOKEN: cannot read %s: not a regular file",
             fifo);
    expect_error(text, want);
    unlink(fifo);
    expect_error(EXEC_HEAD "  env_from_files: {TOKEN: relative/path}\n",
                 "t.yaml:4:27: provider.env_from_files.TOKEN: expected the absolute path of a "
                 "file");
    expect_error(EXEC_HEAD "  env_from_files: {FRUGAL_GROUP: /etc/hostname}\n",
                 "t.yaml:4:20: provider.env_from_files.FRUGAL_GROUP: invalid variable name "
                 "\"FRUGAL_GROUP\": FRUGAL_ names are frugal's own");
    expect_error(EXEC_HEAD "  env_from_files: {'A B': /etc/hostname}\n",
                 "t.yaml:4:20: provider.env_from_files.A B: invalid variable name \"A B\": must "
                 "match [A-Za-z0-9_.-]+");
    unlink(path);
    unlink(nul);
}

/* Each file within its limit, all of them over what an environment may take: every
 * hook run would fail (execve: Argument list too long), so the config is refused. */
static void test_env_total_refused(void **state) {
    (void)state;
    static char content[HOOK_ENV_FILE_MAX];
    memset(content, 'x', sizeof(content));
    enum { FILES = HOOK_ENV_TOTAL_MAX / HOOK_ENV_FILE_MAX + 1 };
    char paths[FILES][64];
    static char text[FILES * 96 + 256];
    int n = snprintf(text, sizeof(text), EXEC_HEAD "  env_from_files:\n");
    for (int i = 0; i < FILES; i++) {
        temp_file(paths[i], sizeof(paths[i]), content, sizeof(content));
        n += snprintf(text + n, sizeof(text) - (size_t)n, "    F%d: %s\n", i, paths[i]);
    }
    char want[256];
    snprintf(want, sizeof(want),
             "t.yaml:5:5: provider.env_from_files: env_from_files would pass the hook "
             "%zu bytes, over the %d (1 MiB) a hook's environment may take",
             (size_t)FILES * (2 + 1 + HOOK_ENV_FILE_MAX + 1) + (FILES - 10) /* two-digit keys */,
             HOOK_ENV_TOTAL_MAX);
    expect_error(text, want);
    /* Two files fewer are within it. */
    snprintf(strstr(text, "    F15:"), 2, "\n");
    config_free(load_ok(text));
    for (int i = 0; i < FILES; i++)
        unlink(paths[i]);
}

/* Appends a block mapping of count parameters named <prefix>000.. at indent, each of
 * PARAM_BYTES: FRUGAL_PARAM_<PREFIX>NNN=<value> takes 13 + 4 + 1 + 4000 + 1 bytes. */
enum { PARAM_BYTES = 13 + 4 + 1 + 4000 + 1 };
static void add_params(char *text, size_t size, const char *indent, char prefix, int count) {
    static char value[4001];
    memset(value, 'x', 4000);
    for (int i = 0; i < count; i++) {
        size_t n = strlen(text);
        snprintf(text + n, size - n, "%s%c%03d: %s\n", indent, prefix, i, value);
    }
}

/* Every layer of a hook's parameters counts, merged as the hook gets them: a machine
 * type's or a group's provider_params that would take the environment over what execve
 * takes fail every hook of theirs, so they are refused where they are given. */
static void test_env_total_layers(void **state) {
    (void)state;
    enum { SIZE = 1600 * 4100 };
    char *text = malloc(SIZE);
    assert_non_null(text);
    char want[512];

    /* provider.params alone: named as such, where it is. */
    snprintf(text, SIZE, EXEC_HEAD "  params:\n");
    add_params(text, SIZE, "    ", 'a', 261);
    snprintf(want, sizeof(want),
             "t.yaml:5:5: provider.params: params would pass the hook %d bytes, over the %d "
             "(1 MiB) a hook's environment may take",
             261 * PARAM_BYTES, HOOK_ENV_TOTAL_MAX);
    expect_error(text, want);

    /* 100 provider parameters, then 161 of a machine type. */
    snprintf(text, SIZE, EXEC_HEAD "  params:\n");
    add_params(text, SIZE, "    ", 'a', 100);
    strcat(text, "machine_types:\n  - name: mt\n    cpu: 2\n    memory: 4Gi\n"
                 "    provider_params:\n");
    size_t type_at = strlen(text);
    add_params(text, SIZE, "      ", 'b', 161);
    snprintf(want, sizeof(want),
             "t.yaml:%d:7: machine_types[0].provider_params: these provider_params with "
             "provider.params and env_from_files would pass the hook %d bytes, over the %d "
             "(1 MiB) a hook's environment may take",
             4 + 100 + 6, 261 * PARAM_BYTES, HOOK_ENV_TOTAL_MAX);
    expect_error(text, want);

    /* 100 and 100 fit; a group's 61 more do not, but 61 that replace the type's do. */
    text[type_at] = '\0';
    add_params(text, SIZE, "      ", 'b', 100);
    strcat(text, "node_groups:\n  - id: g\n    machine_type: mt\n    provider_params:\n");
    size_t group_at = strlen(text);
    add_params(text, SIZE, "      ", 'b', 61);
    config_free(load_ok(text));
    text[group_at] = '\0';
    add_params(text, SIZE, "      ", 'c', 61);
    snprintf(want, sizeof(want),
             "t.yaml:%d:7: node_groups[0].provider_params: these provider_params with the "
             "machine type's, provider.params and env_from_files would pass the hook %d bytes, "
             "over the %d (1 MiB) a hook's environment may take",
             5 + 100 + 5 + 100 + 4, 261 * PARAM_BYTES, HOOK_ENV_TOTAL_MAX);
    expect_error(text, want);
    free(text);
}

static void test_reconcile_keys(void **state) {
    (void)state;
    frugal_config_t *cfg = load_ok(EXEC_HEAD);
    assert_int_equal(cfg->exec_reconcile_interval_ms, 0);
    assert_int_equal(cfg->exec_reconcile_missing_after, 2);
    assert_false(cfg->exec_reconcile_delete_unknown);
    config_free(cfg);
    cfg = load_ok(EXEC_HEAD "  reconcile_interval: 30s\n  reconcile_missing_after: 3\n"
                            "  reconcile_delete_unknown: true\n");
    assert_int_equal(cfg->exec_reconcile_interval_ms, 30000);
    assert_int_equal(cfg->exec_reconcile_missing_after, 3);
    assert_true(cfg->exec_reconcile_delete_unknown);
    config_free(cfg);
    expect_error(EXEC_HEAD "  reconcile_interval: 500ms\n",
                 "t.yaml:4:23: provider.reconcile_interval: must be 0 (off) or at least 1s, got "
                 "500ms");
    expect_error(EXEC_HEAD "  reconcile_missing_after: 0\n",
                 "t.yaml:4:28: provider.reconcile_missing_after: must be at least 1, got 0");
    expect_error("provider:\n  reconcile_interval: 1m\n",
                 "t.yaml:2:3: provider.reconcile_interval: only valid with provider kind exec");
}

/* The simulated provider on a listener other machines reach is worth a warning. */
static void test_simulated_exposed(void **state) {
    (void)state;
    char why[512];
    frugal_config_t *cfg = load_ok("allow_insecure: true\nlisten: [{address: '0.0.0.0:8086'}]\n");
    assert_true(config_simulated_exposed(cfg, why, sizeof(why)));
    assert_non_null(strstr(why, "provider kind simulated on listener 0.0.0.0:8086"));
    config_free(cfg);
    cfg = load_ok("listen: [{address: '127.0.0.1:8086'}, {address: 'unix:/tmp/f.sock'}]\n");
    assert_false(config_simulated_exposed(cfg, why, sizeof(why)));
    config_free(cfg);
    cfg = load_ok("allow_insecure: true\nlisten: [{address: '[::]:8086'}]\n" EXEC_HEAD);
    assert_false(config_simulated_exposed(cfg, why, sizeof(why)));
    config_free(cfg);
    /* Probes and the expander on the open port, the provider on loopback: no machine is
     * promised to anyone else. */
    cfg = load_ok("allow_insecure: true\nlisten:\n  - {address: '127.0.0.1:8086'}\n"
                  "  - {address: '0.0.0.0:8087', services: [grpc.health.v1.Health]}\n"
                  "  - {address: '0.0.0.0:8088', services: [grpcplugin.Expander]}\n");
    assert_false(config_simulated_exposed(cfg, why, sizeof(why)));
    config_free(cfg);
    cfg = load_ok("allow_insecure: true\nlisten:\n"
                  "  - {address: '0.0.0.0:8088', services: [frugal.v1.Autoprovisioning]}\n");
    assert_true(config_simulated_exposed(cfg, why, sizeof(why)));
    config_free(cfg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_rules),         cmocka_unit_test(test_env_total_refused),
        cmocka_unit_test(test_env_total_layers),  cmocka_unit_test(test_env_name_mapping),
        cmocka_unit_test(test_value_rules),       cmocka_unit_test(test_merge_order),
        cmocka_unit_test(test_params_loaded),     cmocka_unit_test(test_params_refused),
        cmocka_unit_test(test_env_files_large),   cmocka_unit_test(test_env_files_refused),
        cmocka_unit_test(test_simulated_exposed), cmocka_unit_test(test_reconcile_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
