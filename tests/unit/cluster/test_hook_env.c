/* Unit tests of providers/hook_env.c and providers/hook_output.c: the environment a hook
 * gets (parameters merged default < machine type < group, autoprovisioned groups with
 * their machine type's, the FRUGAL_* description, kubelet's label and taint syntax,
 * env_from_files, a reloaded config) and what a hook prints (provider ids, list lines). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "group.h"
#include "hook_env.h"
#include "hook_output.h"

static frugal_config_t *load(const char *text) {
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    int rc = config_load_string("t.yaml", text, strlen(text), &cfg, &errors);
    if (rc != 0)
        fprintf(stderr, "%s", errors);
    assert_int_equal(rc, 0);
    return cfg;
}

/* The value of name in envp, NULL when absent; fails when it is there twice. */
static const char *env_get(char **envp, const char *name) {
    const char *found = NULL;
    size_t len = strlen(name);
    for (char **e = envp; *e != NULL; e++) {
        if (strncmp(*e, name, len) == 0 && (*e)[len] == '=') {
            assert_null(found);
            found = *e + len + 1;
        }
    }
    return found;
}

static group_t *group_of(const frugal_config_t *cfg, const char *id) {
    const node_group_config_t *ng = config_find_node_group(cfg, id);
    assert_non_null(ng);
    group_t *g = NULL;
    assert_int_equal(group_new(&ng->spec, &g), 0);
    return g;
}

static const char *const base_config =
    "provider:\n  kind: exec\n  command: /bin/true\n"
    "  params: {image: debian, user-data: default, network: net0}\n"
    "  env_from_files: {OS_TOKEN: %s, HOME: %s}\n"
    "machine_types:\n"
    "  - {name: gpu-box, cpu: 8, memory: 32Gi, gpu: 2, gpu_type: nvidia-tesla-t4, price: 1.25,\n"
    "     spot_price: 0.4, provider_params: {flavor: g2, user.data: typed}}\n"
    "node_groups:\n"
    "  - id: pool-a\n    machine_type: gpu-box\n    zone: europe-west4-b\n    max_size: 3\n"
    "    spot: true\n"
    "    labels: {team: ml, node.kubernetes.io/instance-type: custom}\n"
    "    taints: [{key: gpu, value: 'true', effect: NoSchedule}, {key: dedicated, effect: "
    "NoExecute}]\n"
    "    provider_params: {USER_DATA: grouped, image: ubuntu}\n"
    "  - id: pool-b\n    machine_type: n1-standard-2\n    max_size: 3\n";

static frugal_config_t *load_base(const char *token_file, const char *home_file) {
    char text[2048];
    snprintf(text, sizeof(text), base_config, token_file, home_file);
    return load(text);
}

static void temp_file(char *path, size_t size, const char *data) {
    snprintf(path, size, "/tmp/frugal-test-env-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
    close(fd);
}

static void test_env_of_configured_group(void **state) {
    (void)state;
    char token[64], home[64];
    temp_file(token, sizeof(token), "tok\n");
    temp_file(home, sizeof(home), "/var/lib/hook");
    setenv("FRUGAL_STALE", "x", 1);
    setenv("KEEP_ME", "kept", 1);
    setenv("HOME", "/root", 1);
    frugal_config_t *cfg = load_base(token, home);
    group_t *g = group_of(cfg, "pool-a");
    char **envp = hook_env_build(cfg, g, "pool-a-1", "frugal://pool-a/pool-a-1");
    assert_non_null(envp);
    assert_string_equal(env_get(envp, "FRUGAL_PARAM_IMAGE"), "ubuntu");
    assert_string_equal(env_get(envp, "FRUGAL_PARAM_USER_DATA"), "grouped");
    assert_string_equal(env_get(envp, "FRUGAL_PARAM_FLAVOR"), "g2");
    assert_string_equal(env_get(envp, "FRUGAL_PARAM_NETWORK"), "net0");
    assert_string_equal(env_get(envp, "FRUGAL_SPOT"), "true");
    assert_string_equal(env_get(envp, "FRUGAL_GPU"), "2");
    assert_string_equal(env_get(envp, "FRUGAL_GPU_TYPE"), "nvidia-tesla-t4");
    assert_string_equal(env_get(envp, "FRUGAL_PRICE"), "0.4");
    assert_string_equal(env_get(envp, "FRUGAL_CPU"), "8");
    assert_string_equal(env_get(envp, "FRUGAL_INSTANCE"), "pool-a-1");
    assert_string_equal(env_get(envp, "FRUGAL_PROVIDER_ID"), "frugal://pool-a/pool-a-1");
    assert_string_equal(env_get(envp, "FRUGAL_NODE_LABELS"),
                        "cloud.google.com/gke-accelerator=nvidia-tesla-t4,"
                        "node.kubernetes.io/instance-type=custom,team=ml,"
                        "topology.kubernetes.io/region=europe-west4,"
                        "topology.kubernetes.io/zone=europe-west4-b");
    assert_string_equal(env_get(envp, "FRUGAL_NODE_TAINTS"),
                        "gpu=true:NoSchedule,dedicated:NoExecute");
    assert_string_equal(env_get(envp, "FRUGAL_TAINTS"), "gpu=true:NoSchedule,dedicated=:NoExecute");
    assert_string_equal(env_get(envp, "OS_TOKEN"), "tok\n");
    assert_string_equal(env_get(envp, "HOME"), "/var/lib/hook"); /* the file wins */
    assert_string_equal(env_get(envp, "KEEP_ME"), "kept");
    assert_null(env_get(envp, "FRUGAL_STALE"));
    hook_env_free(envp);
    group_free(g);

    /* A group without params or spot: defaults, on-demand price, no GPU. */
    g = group_of(cfg, "pool-b");
    envp = hook_env_build(cfg, g, "pool-b-1", "frugal://pool-b/pool-b-1");
    assert_string_equal(env_get(envp, "FRUGAL_PARAM_IMAGE"), "debian");
    assert_string_equal(env_get(envp, "FRUGAL_PARAM_USER_DATA"), "default");
    assert_null(env_get(envp, "FRUGAL_PARAM_FLAVOR"));
    assert_string_equal(env_get(envp, "FRUGAL_SPOT"), "false");
    assert_string_equal(env_get(envp, "FRUGAL_GPU"), "0");
    assert_string_equal(env_get(envp, "FRUGAL_GPU_TYPE"), "");
    assert_string_equal(env_get(envp, "FRUGAL_PRICE"), "0.095");
    assert_string_equal(env_get(envp, "FRUGAL_NODE_LABELS"),
                        "node.kubernetes.io/instance-type=n1-standard-2");
    assert_string_equal(env_get(envp, "FRUGAL_NODE_TAINTS"), "");
    hook_env_free(envp);
    group_free(g);
    config_free(cfg);
    unsetenv("FRUGAL_STALE");
    unsetenv("KEEP_ME");
    unlink(token);
    unlink(home);
}

/* An autoprovisioned group gets the defaults and its machine type's parameters, even
 * when a configured group of the same id existed. */
static void test_env_of_autoprovisioned_group(void **state) {
    (void)state;
    char token[64], home[64];
    temp_file(token, sizeof(token), "t");
    temp_file(home, sizeof(home), "h");
    frugal_config_t *cfg = load_base(token, home);
    group_spec_t spec = {.id = "pool-a", .machine_type = "gpu-box", .spot_price = -1};
    group_t *g = NULL;
    assert_int_equal(group_new(&spec, &g), 0);
    g->autoprovisioned = true;
    char **envp = hook_env_build(cfg, g, "", "");
    assert_string_equal(env_get(envp, "FRUGAL_PARAM_IMAGE"), "debian");
    assert_string_equal(env_get(envp, "FRUGAL_PARAM_USER_DATA"), "typed");
    assert_string_equal(env_get(envp, "FRUGAL_PARAM_FLAVOR"), "g2");
    assert_string_equal(env_get(envp, "FRUGAL_PRICE"), "1.25");
    assert_string_equal(env_get(envp, "FRUGAL_CPU"), "8");
    hook_env_free(envp);
    group_free(g);

    /* NewNodeGroup's extra resources: the machine the hook makes is the template's. */
    assert_int_equal(kv_list_put(&spec.extra_resources, "cpu", "2"), 0);
    assert_int_equal(kv_list_put(&spec.extra_resources, "memory", "1Gi"), 0);
    assert_int_equal(kv_list_put(&spec.extra_resources, "nvidia.com/gpu", "1"), 0);
    assert_int_equal(group_new(&spec, &g), 0);
    g->autoprovisioned = true;
    envp = hook_env_build(cfg, g, "", "");
    assert_string_equal(env_get(envp, "FRUGAL_CPU"), "10");
    assert_string_equal(env_get(envp, "FRUGAL_MEMORY"), "33Gi");
    assert_string_equal(env_get(envp, "FRUGAL_GPU"), "3");
    hook_env_free(envp);
    group_free(g);
    kv_list_clear(&spec.extra_resources);
    config_free(cfg);
    unlink(token);
    unlink(home);
}

/* A reloaded config: the next environment has its parameters. */
static void test_env_follows_config(void **state) {
    (void)state;
    frugal_config_t *a = load("provider: {kind: exec, command: /bin/true, params: {v: one}}\n"
                              "node_groups: [{id: p, machine_type: n1-standard-1, max_size: 1}]\n");
    frugal_config_t *b = load("provider: {kind: exec, command: /bin/true, params: {v: two}}\n"
                              "node_groups: [{id: p, machine_type: n1-standard-1, max_size: 1,\n"
                              "  provider_params: {w: x}}]\n");
    group_t *g = group_of(a, "p");
    char **ea = hook_env_build(a, g, "p-1", "id");
    char **eb = hook_env_build(b, g, "p-1", "id");
    assert_string_equal(env_get(ea, "FRUGAL_PARAM_V"), "one");
    assert_null(env_get(ea, "FRUGAL_PARAM_W"));
    assert_string_equal(env_get(eb, "FRUGAL_PARAM_V"), "two");
    assert_string_equal(env_get(eb, "FRUGAL_PARAM_W"), "x");
    hook_env_free(ea);
    hook_env_free(eb);
    group_free(g);
    config_free(a);
    config_free(b);
}

static void test_provider_id_rules(void **state) {
    (void)state;
    char why[96];
    assert_null(hook_output_id_problem("libvirt://host/5c1e-uuid", why, sizeof(why)));
    assert_null(hook_output_id_problem("openstack:///a?b=c", why, sizeof(why)));
    assert_string_equal(hook_output_id_problem("a b", why, sizeof(why)),
                        "holds whitespace at byte 2");
    assert_string_equal(hook_output_id_problem("ab\tc", why, sizeof(why)),
                        "holds whitespace at byte 3");
    assert_string_equal(hook_output_id_problem("a\x1b[0m", why, sizeof(why)),
                        "holds the control character 0x1b at byte 2");
    assert_string_equal(hook_output_id_problem("x\x7f", why, sizeof(why)),
                        "holds the control character 0x7f at byte 2");
    /* Beyond ASCII: a space that makes one id read as two words, a C1 control, a
     * character nobody sees; letters are text. */
    assert_string_equal(hook_output_id_problem("test://g-1\xc2\xa0running", why, sizeof(why)),
                        "holds whitespace U+00A0 at byte 11");
    assert_string_equal(hook_output_id_problem("a\xe3\x80\x80"
                                               "b",
                                               why, sizeof(why)),
                        "holds whitespace U+3000 at byte 2");
    assert_string_equal(hook_output_id_problem("a\xc2\x85", why, sizeof(why)),
                        "holds the control character U+0085 at byte 2");
    assert_string_equal(hook_output_id_problem("a\xc2\x9b[2J", why, sizeof(why)),
                        "holds the control character U+009B at byte 2");
    assert_string_equal(hook_output_id_problem("\xef\xbb\xbf"
                                               "id",
                                               why, sizeof(why)),
                        "holds the invisible character U+FEFF at byte 1");
    assert_string_equal(hook_output_id_problem("i\xe2\x80\x8b"
                                               "d",
                                               why, sizeof(why)),
                        "holds the invisible character U+200B at byte 2");
    assert_string_equal(hook_output_id_problem("x\xe2\x80\xaey", why, sizeof(why)),
                        "holds the invisible character U+202E at byte 2");
    assert_null(hook_output_id_problem("libvirt://h\xc3\xb4"
                                       "te/\xe6\x9c\xba",
                                       why, sizeof(why)));
    /* What the state file could not read back, and frugal's own placeholders. */
    assert_string_equal(hook_output_id_problem("id-\xff\xfe", why, sizeof(why)),
                        "is not UTF-8 text");
    assert_string_equal(hook_output_id_problem("frugal://g2/g2-1", why, sizeof(why)),
                        "uses frugal's own placeholder scheme frugal://");
    assert_string_equal(hook_output_id_problem("", why, sizeof(why)),
                        "is empty or holds a NUL byte");
}

static void test_list_parsing(void **state) {
    (void)state;
    hook_listing_t l = {0};
    char why[128];
    const char *text = "libvirt://h/a running\n\n  libvirt://h/b\t shutoff \r\nlibvirt://h/c\n"
                       "libvirt://h/a running\n";
    assert_int_equal(hook_output_parse_list(text, strlen(text), &l, why, sizeof(why)), 0);
    assert_int_equal(l.count, 3);
    assert_string_equal(l.items[0].id, "libvirt://h/a");
    assert_string_equal(l.items[0].state, "running");
    assert_string_equal(l.items[1].id, "libvirt://h/b");
    assert_string_equal(l.items[1].state, "shutoff");
    assert_string_equal(l.items[2].state, "");
    assert_true(hook_listing_has(&l, "libvirt://h/c"));
    assert_false(hook_listing_has(&l, "libvirt://h/d"));
    hook_listing_clear(&l);

    assert_int_equal(hook_output_parse_list("", 0, &l, why, sizeof(why)), 0);
    assert_int_equal(l.count, 0);

    text = "a running\nb running extra\n";
    assert_int_equal(hook_output_parse_list(text, strlen(text), &l, why, sizeof(why)), -1);
    assert_string_equal(why, "line 2: more than PROVIDER_ID [STATE]");
    assert_int_equal(l.count, 0);
    assert_null(l.items);

    const char nul[] = "a\nb\0c\n";
    assert_int_equal(hook_output_parse_list(nul, sizeof(nul) - 1, &l, why, sizeof(why)), -1);
    assert_string_equal(why, "line 2: the provider id holds the control character 0x00 at byte 2");
    text = "a\x01 running\n";
    assert_int_equal(hook_output_parse_list(text, strlen(text), &l, why, sizeof(why)), -1);
    assert_string_equal(why, "line 1: the provider id holds the control character 0x01 at byte 2");
    text = "  id-1  run\x01ning\n"; /* bytes of the line, blanks included */
    assert_int_equal(hook_output_parse_list(text, strlen(text), &l, why, sizeof(why)), -1);
    assert_string_equal(why, "line 1: the state holds the control character 0x01 at byte 12");
    text = "ok running\nbad\xff\xfeid running\n";
    assert_int_equal(hook_output_parse_list(text, strlen(text), &l, why, sizeof(why)), -1);
    assert_string_equal(why, "line 2: the provider id is not UTF-8 text");
    assert_int_equal(l.count, 0);
    text = "ok running\nid2 \xc3\x28\n";
    assert_int_equal(hook_output_parse_list(text, strlen(text), &l, why, sizeof(why)), -1);
    assert_string_equal(why, "line 2: the state is not UTF-8 text");
    /* A repeated id is no exception: its line must be well formed too. */
    text = "ok running\nok \xff\xfe\n";
    assert_int_equal(hook_output_parse_list(text, strlen(text), &l, why, sizeof(why)), -1);
    assert_string_equal(why, "line 2: the state is not UTF-8 text");
    assert_int_equal(l.count, 0);
    /* A non-breaking space is no separator: the line is not PROVIDER_ID [STATE], and
     * the whole list is ignored rather than its id taken as "a<NBSP>running". */
    text = "ok running\ntest://g-1\xc2\xa0running\n";
    assert_int_equal(hook_output_parse_list(text, strlen(text), &l, why, sizeof(why)), -1);
    assert_string_equal(why, "line 2: the provider id holds whitespace U+00A0 at byte 11");
    assert_int_equal(l.count, 0);
    text = "ok run\xc2\x9bning\n";
    assert_int_equal(hook_output_parse_list(text, strlen(text), &l, why, sizeof(why)), -1);
    assert_string_equal(why, "line 1: the state holds the control character U+009B at byte 7");
    text = "libvirt://h/\xc3\xa9t\xc3\xa9 running\n"; /* UTF-8 beyond ASCII is text */
    assert_int_equal(hook_output_parse_list(text, strlen(text), &l, why, sizeof(why)), 0);
    assert_int_equal(l.count, 1);
    hook_listing_clear(&l);
}

/* The delete of a machine a create made runs with the create's environment, the
 * provider id replaced; frugal's own ids name their instance within their group only. */
static void test_orphan_env_and_own_ids(void **state) {
    (void)state;
    char *envp[] = {"A=1", "FRUGAL_PROVIDER_ID=frugal://g/g-1", "FRUGAL_GROUP=g", NULL};
    char **o = hook_env_with_provider_id(envp, "libvirt://h/x");
    assert_non_null(o);
    assert_string_equal(env_get(o, "FRUGAL_PROVIDER_ID"), "libvirt://h/x");
    assert_string_equal(env_get(o, "A"), "1");
    assert_string_equal(env_get(o, "FRUGAL_GROUP"), "g");
    assert_null(o[3]);
    hook_env_free(o);
    assert_string_equal(instance_name_in_group("frugal://g/g-1", "g"), "g-1");
    assert_string_equal(instance_name_in_group("frugal://gg/g-1", "g"), "");
    assert_string_equal(instance_name_in_group("frugal://g-a/x", "g"), "");
    assert_string_equal(instance_name_in_group("libvirt://g/x", "g"), "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_of_configured_group),
        cmocka_unit_test(test_env_of_autoprovisioned_group),
        cmocka_unit_test(test_env_follows_config),
        cmocka_unit_test(test_provider_id_rules),
        cmocka_unit_test(test_list_parsing),
        cmocka_unit_test(test_orphan_env_and_own_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
