/* Unit tests of server/core/config.c and server/core/yaml_tree.c: defaults of an empty and of a
 * minimal config, the full reference example, overrides, and one test per error class
 * asserting the exact `FILE:LINE:COL: path: message` line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "catalog.h"
#include "config.h"
#include "pricing.h"
#include "yaml_tree.h"

/* ---- helpers ---- */

static frugal_config_t *load_ok(const char *text) {
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    int rc = config_load_string("t.yaml", text, strlen(text), &cfg, &errors);
    if (rc != 0) {
        fprintf(stderr, "unexpected errors:\n%s", errors != NULL ? errors : "(none)\n");
    }
    assert_int_equal(rc, 0);
    assert_null(errors);
    assert_non_null(cfg);
    return cfg;
}

/* The error text of a config that must fail. */
static char *load_err(const char *text) {
    frugal_config_t *cfg = (frugal_config_t *)(uintptr_t)1;
    char *errors = NULL;
    int rc = config_load_string("t.yaml", text, strlen(text), &cfg, &errors);
    assert_int_equal(rc, FRUGAL_EINVAL);
    assert_null(cfg);
    assert_non_null(errors);
    return errors;
}

static size_t count_lines(const char *s) {
    size_t n = 0;
    for (; *s; s++) {
        n += *s == '\n';
    }
    return n;
}

/* The config fails with exactly this one error line (without the newline). */
static void expect_error(const char *text, const char *line) {
    char *errors = load_err(text);
    char want[1024];
    snprintf(want, sizeof(want), "%s\n", line);
    if (strcmp(errors, want) != 0) {
        fprintf(stderr, "want: %sgot:  %s", want, errors);
    }
    assert_string_equal(errors, want);
    free(errors);
}

/* The config fails and one of its error lines is line. */
static void expect_error_among(const char *text, const char *line) {
    char *errors = load_err(text);
    char want[1024];
    snprintf(want, sizeof(want), "%s\n", line);
    bool found = strncmp(errors, want, strlen(want)) == 0;
    for (const char *p = errors; !found && (p = strchr(p, '\n')) != NULL; p++) {
        found = strncmp(p + 1, want, strlen(want)) == 0;
    }
    if (!found) {
        fprintf(stderr, "want: %sgot:\n%s", want, errors);
    }
    assert_true(found);
    free(errors);
}

static const char *PRODUCT_EXAMPLE =
    "listen:                          # one or more listeners, all serving every service\n"
    "  - address: 127.0.0.1:8086      # plaintext is allowed only on loopback or unix:PATH\n"
    "  - address: 0.0.0.0:8443\n"
    "    tls:\n"
    "      cert: /etc/frugal/tls/tls.crt\n"
    "      key: /etc/frugal/tls/tls.key\n"
    "      client_ca: /etc/frugal/tls/ca.crt   # when set, clients must present a cert\n"
    "allow_insecure: false            # true permits plaintext on non-loopback addresses\n"
    "max_message_bytes: 536870912     # receive limit\n"
    "state_file: /var/lib/frugal/state.yaml   # omitted: in-memory only (warned at start)\n"
    "\n"
    "provider:\n"
    "  kind: simulated                # simulated (default, embedded) | exec\n"
    "  # simulated: instances appear as creating, then running after `boot_seconds`\n"
    "  boot_seconds: 0\n"
    "\n"
    "pricing:                         # per hour; defaults are these\n"
    "  cpu: 0.033174                  # per core\n"
    "  memory_gib: 0.004446           # per GiB\n"
    "  gpu: 0.7                       # per GPU\n"
    "  catalog: builtin               # builtin GCE n1 list, or none\n"
    "\n"
    "machine_types:                   # added to (or overriding) the catalog\n"
    "  - name: n1-standard-2\n"
    "    cpu: 2\n"
    "    memory: 7.5Gi\n"
    "    gpu: 0                       # optional; gpu_type: nvidia-tesla-t4\n"
    "    price: 0.095                 # optional; else linear from pricing\n"
    "\n"
    "node_groups:\n"
    "  - id: pool-a\n"
    "    machine_type: n1-standard-2\n"
    "    zone: us-central1-a          # sets topology.kubernetes.io/zone on the template\n"
    "    min_size: 0\n"
    "    max_size: 10\n"
    "    labels: {team: web}\n"
    "    taints: [{key: dedicated, value: web, effect: NoSchedule}]\n"
    "    options: {scale_down_unneeded: 10m, max_node_provision: 15m}   # optional overrides\n"
    "  - id: main                     # a group frugal must count but never scale\n"
    "    machine_type: n1-standard-2\n"
    "    size: 2\n"
    "    managed: false\n"
    "\n"
    "autoprovisioning:                # node auto-provisioning; off unless enabled\n"
    "  enabled: true\n"
    "  prefix: nap                    # ids of autoprovisioned groups start with it\n"
    "  machine_types: [n1-standard-1, n1-standard-2, n1-standard-4, n1-highmem-4]\n"
    "  zones: [us-central1-a]\n"
    "  label_sets: [{}]               # label sets offered to pods with node selectors\n"
    "  limits: {min_cpu: 0, max_cpu: 64, min_memory: 0, max_memory: 256Gi}\n"
    "  max_node_groups: 50\n"
    "  empty_group_ttl: 10m           # an autoprovisioned group empty this long is deleted\n"
    "\n"
    "ranking:\n"
    "  damper: {cpu: 500m, memory: 500Mi}   # X in the formula: price of this pod\n"
    "  preferred_nodes:               # cluster size -> cpu cores\n"
    "    - {max_nodes: 2, cpu: 1}\n"
    "    - {max_nodes: 6, cpu: 2}\n"
    "    - {max_nodes: 20, cpu: 4}\n"
    "    - {max_nodes: 80, cpu: 8}\n"
    "    - {max_nodes: 300, cpu: 16}\n"
    "    - {cpu: 32}\n"
    "  suppress_scale: 15             # 15 in tanh((n-1)/15)\n"
    "  gpu_unfitness: 1000            # unfitness of any node with a GPU\n"
    "  not_exist_penalty: 2.0         # factor for a group that does not exist yet (NAP)\n";

static const char *GROUP_A = "node_groups:\n"
                             "  - id: a\n"
                             "    machine_type: n1-standard-2\n"
                             "    max_size: 3\n";

static void assert_default_ranking(const ranking_config_t *r) {
    static const int32_t max_nodes[] = {2, 6, 20, 80, 300, -1};
    static const int64_t cpu[] = {1000, 2000, 4000, 8000, 16000, 32000};
    assert_int_equal(r->damper.cpu_milli, 500);
    assert_int_equal(r->damper.memory_bytes, 500LL * 1024 * 1024);
    assert_int_equal(r->preferred_nodes_count, 6);
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(r->preferred_nodes[i].max_nodes, max_nodes[i]);
        assert_int_equal(r->preferred_nodes[i].cpu_milli, cpu[i]);
    }
    assert_true(r->suppress_scale == 15);
    assert_true(r->gpu_unfitness == 1000);
    assert_true(r->not_exist_penalty == 2.0);
}

/* ---- defaults and valid configs ---- */

/* An empty file is valid: every default, no configured group. */
static void test_empty_file_defaults(void **state) {
    (void)state;
    frugal_config_t *cfg = load_ok("# nothing but a comment\n");
    assert_string_equal(cfg->path, "t.yaml");
    assert_int_equal(cfg->listeners_count, 1);
    assert_string_equal(cfg->listeners[0].address, "127.0.0.1:8086");
    assert_null(cfg->listeners[0].tls_cert);
    assert_null(cfg->listeners[0].tls_key);
    assert_null(cfg->listeners[0].tls_client_ca);
    assert_false(cfg->allow_insecure);
    assert_int_equal(cfg->max_message_bytes, 536870912);
    assert_null(cfg->state_file);
    assert_string_equal(cfg->provider_kind, "simulated");
    assert_int_equal(cfg->boot_seconds, 0);
    assert_true(cfg->pricing.cpu == 0.033174);
    assert_true(cfg->pricing.memory_gib == 0.004446);
    assert_true(cfg->pricing.gpu == 0.7);
    assert_true(cfg->pricing.builtin_catalog);
    assert_int_equal(cfg->machine_types_count, catalog_machines_count);
    assert_int_equal(cfg->node_groups_count, 0);

    const machine_type_t *mt = config_find_machine_type(cfg, "n1-highmem-4");
    assert_non_null(mt);
    assert_int_equal(mt->cpu_milli, 4000);
    assert_int_equal(mt->memory_bytes, 26LL << 30);
    assert_int_equal(mt->gpu, 0);
    assert_null(mt->gpu_type);
    assert_true(mt->price == 0.2368);
    assert_true(mt->spot_price == 0.05);
    assert_null(config_find_machine_type(cfg, "n2-standard-2"));
    assert_null(config_find_node_group(cfg, "a"));

    const autoprov_config_t *ap = &cfg->autoprovisioning;
    assert_false(ap->enabled);
    assert_string_equal(ap->prefix, "nap");
    assert_int_equal(ap->machine_types_count, catalog_machines_count);
    assert_string_equal(ap->machine_types[0], cfg->machine_types[0].name);
    assert_int_equal(ap->zones_count, 0);
    assert_int_equal(ap->label_sets_count, 1);
    assert_int_equal(ap->label_sets[0].count, 0);
    assert_int_equal(ap->min_cpu_milli, 0);
    assert_int_equal(ap->max_cpu_milli, INT64_MAX);
    assert_int_equal(ap->min_memory_bytes, 0);
    assert_int_equal(ap->max_memory_bytes, INT64_MAX);
    assert_int_equal(ap->max_node_groups, 50);
    assert_int_equal(ap->empty_group_ttl_ms, 600000);
    assert_default_ranking(&cfg->ranking);
    config_free(cfg);

    cfg = load_ok("");
    assert_int_equal(cfg->listeners_count, 1);
    config_free(cfg);
    cfg = load_ok("---\n");
    assert_int_equal(cfg->node_groups_count, 0);
    config_free(cfg);
}

/* limits: the memory budget follows max_message_bytes unless given or the cgroup has a
 * limit, and must hold one message; the other limits have their documented defaults. */
static void test_limits(void **state) {
    (void)state;
    setenv("FRUGAL_CGROUP_ROOT", "/nonexistent/cgroup", 1); /* this machine's limit aside */
    frugal_config_t *cfg = load_ok("");
    assert_int_equal(cfg->limits.memory_bytes, 2LL * 536870912 + (64LL << 20));
    assert_int_equal(cfg->limits.receive_timeout_ms, 30000);
    assert_int_equal(cfg->limits.idle_timeout_ms, 300000);
    assert_int_equal(cfg->limits.max_concurrent_streams, 32);
    assert_int_equal(cfg->limits.max_calls_per_worker, 256);
    assert_int_equal(cfg->limits.max_header_bytes, 16384);
    assert_int_equal(cfg->autoprovisioning.max_theoretical_groups, 200);
    config_free(cfg);
    cfg = load_ok("max_message_bytes: 4Mi\nlimits: {receive_timeout: 2s}\n");
    assert_int_equal(cfg->limits.memory_bytes, 8LL * 1048576 + (64LL << 20));
    assert_int_equal(cfg->limits.receive_timeout_ms, 2000);
    config_free(cfg);
    /* 0 would cancel every call sent without a deadline; idle_timeout 0 turns it off */
    expect_error("limits: {receive_timeout: 0s}\n",
                 "t.yaml:1:27: limits.receive_timeout: must be greater than 0, got 0s");
    cfg = load_ok("limits: {idle_timeout: 0s}\n");
    assert_int_equal(cfg->limits.idle_timeout_ms, 0);
    config_free(cfg);
    /* a value left empty (a template's missing value) is not a silent default */
    expect_error("node_groups:\n  - {id: a, machine_type: n1-standard-2, max_size: ~}\n",
                 "t.yaml:2:52: node_groups[0].max_size: expected a value, got null (leave the key "
                 "out for its default)");
    expect_error("limits:\n  idle_timeout:\n",
                 "t.yaml:2:16: limits.idle_timeout: expected a value, got null (leave the key "
                 "out for its default)");
    cfg = load_ok("pricing:\nnode_groups:\n"); /* an empty section or list is empty */
    assert_int_equal(cfg->node_groups_count, 0);
    config_free(cfg);
    expect_error("max_message_bytes: 100m\n",
                 "t.yaml:1:20: max_message_bytes: must be a whole number of bytes, got 100m");
    expect_error("ops_listen: nohost\n",
                 "t.yaml:1:13: ops_listen: invalid address \"nohost\": expected HOST:PORT");
    /* not turned off by rounding down */
    expect_error("limits: {idle_timeout: 999us}\n",
                 "t.yaml:1:24: limits.idle_timeout: must be 0 or at least 1ms, got 999us");
    cfg = load_ok("limits: {memory: 2Gi}\n");
    assert_int_equal(cfg->limits.memory_bytes, 2LL << 30);
    assert_string_equal(cfg->limits.memory_source, "limits.memory");
    config_free(cfg);
    /* unset: 75 % of the container's (cgroup v2) limit; set: the config wins */
    char root[] = "/tmp/frugal-test-config-cgroup.XXXXXX", file[64];
    assert_non_null(mkdtemp(root));
    snprintf(file, sizeof(file), "%s/memory.max", root);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("1073741824\n", f);
    fclose(f);
    setenv("FRUGAL_CGROUP_ROOT", root, 1);
    cfg = load_ok("");
    assert_int_equal(cfg->limits.memory_bytes, 805306368);
    assert_false(cfg->limits.memory_source_unreadable);
    assert_non_null(strstr(cfg->limits.memory_source, "75% of the cgroup memory limit"));
    config_free(cfg);
    cfg = load_ok("limits: {memory: 2Gi}\n");
    assert_int_equal(cfg->limits.memory_bytes, 2LL << 30);
    config_free(cfg);
    f = fopen(file, "w"); /* unreadable: the default, flagged for a warning */
    assert_non_null(f);
    fputs("garbage\n", f);
    fclose(f);
    cfg = load_ok("");
    assert_int_equal(cfg->limits.memory_bytes, 2LL * 536870912 + (64LL << 20));
    assert_true(cfg->limits.memory_source_unreadable);
    config_free(cfg);
    unlink(file);
    rmdir(root);
    setenv("FRUGAL_CGROUP_ROOT", "/nonexistent/cgroup", 1);
    expect_error("max_message_bytes: 4194304\nlimits:\n  memory: 1Mi\n",
                 "t.yaml:3:11: limits.memory: 1048576 bytes cannot hold one message of "
                 "max_message_bytes (4194304)");
    /* Byte sizes are quantities, held to their ranges. */
    expect_error("limits: {max_header_bytes: 10}\n",
                 "t.yaml:1:28: limits.max_header_bytes: must be at least 1024, got 10");
    expect_error("limits: {memory: 0}\n", "t.yaml:1:18: limits.memory: must be at least 1, got 0");
    /* A byte the YAML reader refuses is placed by line and column, not only its offset. */
    expect_error("node_groups:\n  - id: \xff\n",
                 "t.yaml:2:9: invalid leading UTF-8 octet (byte offset 21)");
    expect_error("max_message_bytes: 3Gi\n",
                 "t.yaml:1:20: max_message_bytes: must be at most 2147483647, got 3Gi");
}

static void test_minimal_group_defaults(void **state) {
    (void)state;
    /* the smallest config: one group of an id and a machine type; max_size is 10 */
    frugal_config_t *cfg = load_ok("node_groups:\n"
                                   "  - {id: pool-a, machine_type: n1-standard-2,"
                                   " zone: us-central1-b}\n");
    assert_int_equal(cfg->node_groups_count, 1);
    const node_group_config_t *g = config_find_node_group(cfg, "pool-a");
    assert_non_null(g);
    assert_string_equal(g->spec.machine_type, "n1-standard-2");
    assert_string_equal(g->spec.zone, "us-central1-b");
    assert_int_equal(g->min_size, 0);
    assert_int_equal(g->max_size, 10);
    assert_int_equal(g->size, -1);
    assert_true(g->managed);
    assert_false(g->spec.spot);
    assert_true(g->spec.spot_price < 0);
    assert_int_equal(g->spec.labels.count, 0);
    assert_int_equal(g->spec.taints.count, 0);
    assert_int_equal(g->spec.extra_resources.count, 0);
    assert_false(g->options.has_scale_down_unneeded);
    assert_false(g->options.has_scale_down_utilization_threshold);
    assert_false(g->options.has_max_node_provision);
    assert_false(g->options.has_zero_or_max_node_scaling);
    assert_int_equal(g->scale_up_threshold, 70);
    assert_false(g->scale_on_starve);
    /* zones default to the groups' zones */
    assert_int_equal(cfg->autoprovisioning.zones_count, 1);
    assert_string_equal(cfg->autoprovisioning.zones[0], "us-central1-b");
    config_free(cfg);
}

static void test_product_example(void **state) {
    (void)state;
    frugal_config_t *cfg = load_ok(PRODUCT_EXAMPLE);
    assert_int_equal(cfg->listeners_count, 2);
    assert_string_equal(cfg->listeners[0].address, "127.0.0.1:8086");
    assert_null(cfg->listeners[0].tls_cert);
    assert_string_equal(cfg->listeners[1].address, "0.0.0.0:8443");
    assert_string_equal(cfg->listeners[1].tls_cert, "/etc/frugal/tls/tls.crt");
    assert_string_equal(cfg->listeners[1].tls_key, "/etc/frugal/tls/tls.key");
    assert_string_equal(cfg->listeners[1].tls_client_ca, "/etc/frugal/tls/ca.crt");
    assert_string_equal(cfg->state_file, "/var/lib/frugal/state.yaml");
    assert_int_equal(cfg->machine_types_count, catalog_machines_count);

    const machine_type_t *mt = config_find_machine_type(cfg, "n1-standard-2");
    assert_int_equal(mt->cpu_milli, 2000);
    assert_int_equal(mt->memory_bytes, 7680LL << 20);
    assert_true(mt->price == 0.095);
    assert_true(mt->spot_price < 0); /* a configured type replaces the builtin one */

    assert_int_equal(cfg->node_groups_count, 2);
    const node_group_config_t *a = &cfg->node_groups[0];
    assert_string_equal(a->spec.id, "pool-a");
    assert_int_equal(a->max_size, 10);
    assert_int_equal(a->spec.labels.count, 1);
    assert_string_equal(a->spec.labels.items[0].key, "team");
    assert_string_equal(a->spec.labels.items[0].value, "web");
    assert_int_equal(a->spec.taints.count, 1);
    assert_string_equal(a->spec.taints.items[0].key, "dedicated");
    assert_string_equal(a->spec.taints.items[0].value, "web");
    assert_string_equal(a->spec.taints.items[0].effect, "NoSchedule");
    assert_true(a->options.has_scale_down_unneeded);
    assert_int_equal(a->options.scale_down_unneeded_ns, 600LL * 1000000000);
    assert_true(a->options.has_max_node_provision);
    assert_int_equal(a->options.max_node_provision_ns, 900LL * 1000000000);
    assert_false(a->options.has_scale_down_unready);

    const node_group_config_t *m = config_find_node_group(cfg, "main");
    assert_false(m->managed);
    assert_int_equal(m->size, 2);
    assert_int_equal(m->min_size, 2);
    assert_int_equal(m->max_size, 2);
    assert_null(m->spec.zone);

    const autoprov_config_t *ap = &cfg->autoprovisioning;
    assert_true(ap->enabled);
    assert_int_equal(ap->machine_types_count, 4);
    assert_string_equal(ap->machine_types[3], "n1-highmem-4");
    assert_int_equal(ap->zones_count, 1);
    assert_int_equal(ap->label_sets_count, 1);
    assert_int_equal(ap->max_cpu_milli, 64000);
    assert_int_equal(ap->max_memory_bytes, 256LL << 30);
    assert_int_equal(ap->empty_group_ttl_ms, 600000);
    assert_default_ranking(&cfg->ranking);
    config_free(cfg);
}

/* A catalog type named without cpu and memory keeps the catalog's shape and prices, and
 * takes what is given (a spot price here). */
static void test_catalog_type_amended(void **state) {
    (void)state;
    frugal_config_t *cfg = load_ok("machine_types:\n  - {name: n1-standard-2, spot_price: 0.02}\n"
                                   "  - {name: n1-standard-4, cpu: 4, memory: 15Gi}\n");
    const machine_type_t *mt = config_find_machine_type(cfg, "n1-standard-2");
    assert_non_null(mt);
    assert_int_equal(mt->cpu_milli, 2000);
    assert_int_equal(mt->memory_bytes, 7680LL * 1024 * 1024);
    assert_true(mt->price == 0.095);
    assert_true(mt->spot_price == 0.02);
    mt = config_find_machine_type(cfg, "n1-standard-4");
    assert_true(mt->price < 0); /* restated: the shape is the config's, priced linearly */
    config_free(cfg);
}

static void test_overrides(void **state) {
    (void)state;
    frugal_config_t *cfg = load_ok(
        "listen:\n"
        "  - address: unix:/run/frugal.sock\n"
        "  - address: '[::1]:9000'\n"
        "  - address: localhost:9001\n"
        "  - address: 10.0.0.1:9002\n"
        "allow_insecure: true\n"
        "max_message_bytes: 1048576\n"
        "provider: {boot_seconds: 30}\n"
        "pricing: {cpu: 0.05, memory_gib: 0.01, gpu: 1.5, catalog: none}\n"
        "machine_types:\n"
        "  - {name: g4, cpu: 3.5, memory: 16Gi, gpu: 2, gpu_type: nvidia-tesla-t4, price: 1.2,"
        " spot_price: 0.4}\n"
        "  - {name: small, cpu: 500m, memory: 1G}\n"
        "node_groups:\n"
        "  - id: gpu\n"
        "    machine_type: g4\n"
        "    zone: z1\n"
        "    min_size: 1\n"
        "    max_size: 4\n"
        "    size: 2\n"
        "    spot: true\n"
        "    spot_price: 0.3\n"
        "    labels: {example.com/tier: '1', b: \"\", a: x}\n"
        "    taints: [{key: nvidia.com/gpu, effect: NoExecute}]\n"
        "    options:\n"
        "      scale_down_unneeded: 1h30m\n"
        "      scale_down_unready: 45s\n"
        "      max_node_provision: 1.5h\n"
        "      scale_down_utilization_threshold: 0.5\n"
        "      scale_down_gpu_utilization_threshold: 0.25\n"
        "      zero_or_max_node_scaling: true\n"
        "      ignore_daemonsets_utilization: false\n"
        "  - {id: s1, machine_type: small, zone: z2, max_size: 1}\n"
        "  - {id: s2, machine_type: small, zone: z1, max_size: 1}\n"
        "autoprovisioning:\n"
        "  enabled: true\n"
        "  prefix: auto\n"
        "  label_sets: [{}, {pool: batch}]\n"
        "  limits: {max_cpu: 100, max_memory: 1Ti}\n"
        "  max_node_groups: 5\n"
        "  empty_group_ttl: 90s\n"
        "ranking:\n"
        "  damper: {cpu: 1}\n"
        "  preferred_nodes: [{max_nodes: 10, cpu: 2}, {cpu: 500m}]\n"
        "  suppress_scale: 3.5\n"
        "  gpu_unfitness: 50\n"
        "  not_exist_penalty: 1\n");
    assert_int_equal(cfg->listeners_count, 4);
    assert_string_equal(cfg->listeners[1].address, "[::1]:9000");
    assert_true(cfg->allow_insecure);
    assert_int_equal(cfg->max_message_bytes, 1048576);
    assert_int_equal(cfg->boot_seconds, 30);
    assert_false(cfg->pricing.builtin_catalog);
    assert_true(cfg->pricing.gpu == 1.5);
    assert_int_equal(cfg->machine_types_count, 2);
    assert_null(config_find_machine_type(cfg, "n1-standard-1"));
    const machine_type_t *g4 = config_find_machine_type(cfg, "g4");
    assert_int_equal(g4->cpu_milli, 3500);
    assert_int_equal(g4->memory_bytes, 16LL << 30);
    assert_int_equal(g4->gpu, 2);
    assert_string_equal(g4->gpu_type, "nvidia-tesla-t4");
    assert_true(g4->price == 1.2);
    assert_true(g4->spot_price == 0.4);
    const machine_type_t *small = config_find_machine_type(cfg, "small");
    assert_int_equal(small->cpu_milli, 500);
    assert_int_equal(small->memory_bytes, 1000000000);
    assert_true(small->price < 0);
    assert_true(small->spot_price < 0);

    const node_group_config_t *g = config_find_node_group(cfg, "gpu");
    assert_int_equal(g->size, 2);
    assert_true(g->spec.spot);
    assert_true(g->spec.spot_price == 0.3);
    /* labels come sorted by key */
    assert_int_equal(g->spec.labels.count, 3);
    assert_string_equal(g->spec.labels.items[0].key, "a");
    assert_string_equal(g->spec.labels.items[1].key, "b");
    assert_string_equal(g->spec.labels.items[1].value, "");
    assert_string_equal(g->spec.labels.items[2].key, "example.com/tier");
    assert_string_equal(g->spec.labels.items[2].value, "1");
    assert_string_equal(g->spec.taints.items[0].value, "");
    assert_string_equal(g->spec.taints.items[0].effect, "NoExecute");
    assert_int_equal(g->options.scale_down_unneeded_ns, 5400LL * 1000000000);
    assert_int_equal(g->options.scale_down_unready_ns, 45LL * 1000000000);
    assert_int_equal(g->options.max_node_provision_ns, 5400LL * 1000000000);
    assert_true(g->options.scale_down_utilization_threshold == 0.5);
    assert_true(g->options.scale_down_gpu_utilization_threshold == 0.25);
    assert_true(g->options.has_zero_or_max_node_scaling && g->options.zero_or_max_node_scaling);
    assert_true(g->options.has_ignore_daemonsets_utilization);
    assert_false(g->options.ignore_daemonsets_utilization);

    const autoprov_config_t *ap = &cfg->autoprovisioning;
    assert_string_equal(ap->prefix, "auto");
    assert_int_equal(ap->machine_types_count, 2);
    assert_int_equal(ap->zones_count, 2); /* distinct, in group order */
    assert_string_equal(ap->zones[0], "z1");
    assert_string_equal(ap->zones[1], "z2");
    assert_int_equal(ap->label_sets_count, 2);
    assert_string_equal(ap->label_sets[1].items[0].value, "batch");
    assert_int_equal(ap->max_cpu_milli, 100000);
    assert_int_equal(ap->max_memory_bytes, 1LL << 40);
    assert_int_equal(ap->max_node_groups, 5);
    assert_int_equal(ap->empty_group_ttl_ms, 90000);

    const ranking_config_t *r = &cfg->ranking;
    assert_int_equal(r->damper.cpu_milli, 1000);
    assert_int_equal(r->damper.memory_bytes, 500LL << 20);
    assert_int_equal(r->preferred_nodes_count, 2);
    assert_int_equal(r->preferred_nodes[0].max_nodes, 10);
    assert_int_equal(r->preferred_nodes[1].max_nodes, -1);
    assert_int_equal(r->preferred_nodes[1].cpu_milli, 500);
    assert_true(r->suppress_scale == 3.5);
    assert_true(r->gpu_unfitness == 50);
    assert_true(r->not_exist_penalty == 1);
    config_free(cfg);
}

static void test_machine_type_adds_to_catalog(void **state) {
    (void)state;
    frugal_config_t *cfg = load_ok("machine_types: [{name: custom-6, cpu: 6, memory: 24Gi}]\n"
                                   "node_groups:\n"
                                   "  - {id: c, machine_type: custom-6, max_size: 2}\n"
                                   "  - {id: d, machine_type: n1-standard-4, max_size: 2}\n");
    assert_int_equal(cfg->machine_types_count, catalog_machines_count + 1);
    assert_non_null(config_find_machine_type(cfg, "custom-6"));
    assert_int_equal(cfg->autoprovisioning.machine_types_count, catalog_machines_count + 1);
    config_free(cfg);
}

/* A spot group whose template differs from an on-demand group's only in zone is that
 * group's twin: CA balances the two as one set at different prices. Groups CA does not
 * see (unmanaged) are nobody's twin. */
static void test_spot_twin(void **state) {
    (void)state;
    frugal_config_t *cfg = load_ok(
        "node_groups:\n"
        "  - {id: od, machine_type: n1-standard-8, max_size: 1, labels: {team: web}, zone: a}\n"
        "  - {id: sp, machine_type: n1-standard-8, max_size: 1, labels: {team: web}, zone: b, "
        "spot: true}\n"
        "  - {id: sp-labelled, machine_type: n1-standard-8, spot: true, max_size: 1,\n"
        "     labels: {team: web, cloud.google.com/gke-spot: 'true'}}\n"
        "  - {id: sp-other-type, machine_type: n1-standard-4, max_size: 1, labels: {team: web}, "
        "spot: true}\n"
        "  - {id: sp-tainted, machine_type: n1-standard-8, max_size: 1, labels: {team: web}, spot: "
        "true,\n"
        "     taints: [{key: spot, effect: NoSchedule}]}\n"
        "  - {id: sp-unmanaged, machine_type: n1-standard-8, size: 1, managed: false,\n"
        "     labels: {team: web}, spot: true}\n");
    size_t n = cfg->node_groups_count;
    assert_int_equal(config_spot_twin(cfg, 0), n); /* on demand itself */
    assert_int_equal(config_spot_twin(cfg, 1), 0);
    assert_int_equal(config_spot_twin(cfg, 2), n);
    assert_int_equal(config_spot_twin(cfg, 3), n);
    assert_int_equal(config_spot_twin(cfg, 4), n);
    assert_int_equal(config_spot_twin(cfg, 5), n); /* CA never sees an unmanaged group */
    char msg[400];
    config_format_spot_twin_warning("sp", "od", msg, sizeof(msg));
    assert_non_null(strstr(msg, "\"sp\" (spot) and \"od\" (on demand)"));
    config_free(cfg);
}

/* Whether the config of head and groups gets warning (its text into msg). */
static bool warning_of(bool (*warning)(const frugal_config_t *, char *, size_t), const char *head,
                       const char *groups, char *msg, size_t size) {
    char text[512];
    snprintf(text, sizeof(text), "%s%s", head, groups);
    frugal_config_t *cfg = load_ok(text);
    bool warned = warning(cfg, msg, size);
    config_free(cfg);
    return warned;
}

/* Pods are unpriced only when every resource is: then no option can be scored. */
static void test_unpriced_pods(void **state) {
    (void)state;
    const char *groups = "node_groups: [{id: a, machine_type: n1-standard-1, max_size: 1}]\n";
    const char *cases[][2] = {
        {"pricing: {cpu: 0, memory_gib: 0, gpu: 0}\n", "1"},
        {"pricing: {cpu: 0, memory_gib: 0}\n", "0"}, /* the GPU keeps its default price */
        {"pricing: {memory_gib: 0, gpu: 0}\n", "0"},
        {"", "0"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char msg[300] = "";
        bool warned =
            warning_of(config_unpriced_pods_warning, cases[i][0], groups, msg, sizeof(msg));
        assert_int_equal(warned, cases[i][1][0] == '1');
        if (warned)
            assert_non_null(strstr(msg, "BestOptions can score no option"));
    }
}

/* A damper that costs nothing leaves BestEffort pods' options unscorable. */
static void test_unpriced_damper(void **state) {
    (void)state;
    const char *groups = "node_groups: [{id: a, machine_type: n1-standard-1, max_size: 1}]\n";
    const char *cases[][2] = {
        {"ranking: {damper: {cpu: 0, memory: 0}}\n", "1"},
        {"ranking: {damper: {cpu: 0}}\n", "0"}, /* memory keeps its default 500Mi */
        {"ranking: {damper: {cpu: 0}}\npricing: {memory_gib: 0}\n", "1"},
        {"ranking: {damper: {cpu: 0, memory: 0}}\npricing: {cpu: 0, memory_gib: 0, gpu: 0}\n",
         "0"}, /* config_unpriced_pods_warning says it */
        {"", "0"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char msg[300] = "";
        bool warned =
            warning_of(pricing_unpriced_damper_warning, cases[i][0], groups, msg, sizeof(msg));
        assert_int_equal(warned, cases[i][1][0] == '1');
        if (warned)
            assert_non_null(strstr(msg, "ranking.damper is priced at 0"));
    }
}

/* A machine type larger than the autoprovisioning maxima alone can never be added. */
static void test_autoprov_limits_warning(void **state) {
    (void)state;
    const char *groups = "node_groups: [{id: a, machine_type: n1-standard-8, max_size: 3},\n"
                         "              {id: b, machine_type: n1-standard-8, max_size: 3}]\n";
    const char *cases[][2] = {
        {"autoprovisioning: {enabled: true, machine_types: [n1-standard-2, n1-standard-16],\n"
         "                   limits: {max_cpu: 8}}\n",
         "one node of n1-standard-16 is larger than the limits alone (max_cpu 8 cores, "
         "max_memory unlimited), so groups of that type can never grow"},
        {"autoprovisioning: {enabled: true, machine_types: [n1-standard-2, n1-standard-8],\n"
         "                   limits: {max_cpu: 64, max_memory: 16Gi}}\n",
         "one node of n1-standard-8 is larger than the limits alone (max_cpu 64 cores, "
         "max_memory 16 GiB), so groups of that type can never grow"},
        {"autoprovisioning: {enabled: true, machine_types: [n1-standard-4, n1-standard-2],\n"
         "                   limits: {max_cpu: 3.5}}\n",
         "one node of n1-standard-8, n1-standard-4 is larger than the limits alone (max_cpu "
         "3.5 cores, max_memory unlimited), so groups of those types can never grow"},
        {"autoprovisioning: {enabled: true, machine_types: [n1-standard-2],\n"
         "                   limits: {max_cpu: 8}}\n",
         NULL},
        {"autoprovisioning: {enabled: false, limits: {max_cpu: 1}}\n", NULL},
        /* the catalog's 96-core types, allowed by default, are not the user's choice */
        {"autoprovisioning: {enabled: true, limits: {max_cpu: 64}}\n", NULL},
        {"autoprovisioning: {enabled: true, limits: {max_cpu: 4}}\n",
         "one node of n1-standard-8 is larger than the limits alone (max_cpu 4 cores, "
         "max_memory unlimited), so groups of that type can never grow"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char msg[512] = "";
        bool warned =
            warning_of(config_autoprov_limits_warning, cases[i][0], groups, msg, sizeof(msg));
        assert_int_equal(warned, cases[i][1] != NULL);
        if (warned)
            assert_string_equal(msg + strlen("autoprovisioning.limits: "), cases[i][1]);
    }
}

static void test_load_file(void **state) {
    (void)state;
    char path[] = "/tmp/frugal-test-config-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "node_groups:\n  - {id: a, machine_type: n1-standard-1, max_size: x}\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);

    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    assert_int_equal(config_load(path, &cfg, &errors), FRUGAL_EINVAL);
    assert_null(cfg);
    char want[512];
    snprintf(want, sizeof(want),
             "%s:2:52: node_groups[0].max_size: expected an integer, got \"x\"\n", path);
    assert_string_equal(errors, want);
    free(errors);

    FILE *f = fopen(path, "w");
    fputs(GROUP_A, f);
    fclose(f);
    assert_int_equal(config_load(path, &cfg, &errors), 0);
    assert_null(errors);
    assert_string_equal(cfg->path, path);
    assert_int_equal(cfg->node_groups_count, 1);
    config_free(cfg);
    unlink(path);

    assert_int_equal(config_load("/nonexistent/frugal.yaml", &cfg, &errors), FRUGAL_EIO);
    assert_null(cfg);
    assert_string_equal(errors, "/nonexistent/frugal.yaml: cannot read: No such file or "
                                "directory\n");
    free(errors);
}

static void test_example_config_loads(void **state) {
    (void)state;
    const char *dir = getenv("FRUGAL_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof(path), "%s/examples/frugal.yaml", dir != NULL ? dir : ".");
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    int rc = config_load(path, &cfg, &errors);
    if (rc != 0) {
        fprintf(stderr, "%s", errors != NULL ? errors : "?\n");
    }
    assert_int_equal(rc, 0);
    assert_string_equal(cfg->listeners[0].address, "127.0.0.1:8086");
    assert_null(cfg->listeners[0].tls_cert);
    assert_null(cfg->state_file);
    assert_string_equal(cfg->provider_kind, "simulated");
    assert_true(cfg->node_groups_count >= 3);
    bool unmanaged = false;
    for (size_t i = 0; i < cfg->node_groups_count; i++) {
        unmanaged = unmanaged || !cfg->node_groups[i].managed;
    }
    assert_true(unmanaged);
    config_free(cfg);
}

/* ---- one test per error class ---- */

static void test_err_yaml_syntax(void **state) {
    (void)state;
    expect_error("node_groups:\n  - id: a\n   bad: [\n",
                 "t.yaml:3:4: did not find expected '-' indicator while parsing a block "
                 "collection (line 2, column 3)");
    expect_error("a: 1\n---\nb: 2\n", "t.yaml:2:1: only one YAML document is allowed");
    expect_error("x: &a 1\ny: *a\n", "t.yaml:1:4: YAML anchors are not supported");
    expect_error("node_groups: [{id: &i a, machine_type: n1-standard-2, max_size: 3}]\n",
                 "t.yaml:1:20: YAML anchors are not supported");
    expect_error("x: 1\ny: *a\n", "t.yaml:2:4: YAML aliases are not supported");
    expect_error("- 1\n", "t.yaml:1:1: the configuration must be a mapping, got a sequence");
}

static void test_err_unknown_keys(void **state) {
    (void)state;
    expect_error("listn: []\n", "t.yaml:1:1: listn: unknown key");
    expect_error("node_groups:\n"
                 "  - id: a\n"
                 "    machine_type: n1-standard-2\n"
                 "    max_size: 3\n"
                 "    colour: blue\n",
                 "t.yaml:5:5: node_groups[0].colour: unknown key");
    expect_error("node_groups:\n"
                 "  - {id: a, machine_type: n1-standard-2, max_size: 3,"
                 " options: {scale_down_unneded: 1m}}\n",
                 "t.yaml:2:65: node_groups[0].options.scale_down_unneded: unknown key");
    expect_error("listen:\n  - address: 0.0.0.0:443\n    tls: {cert: c, key: k, ca: x}\n",
                 "t.yaml:3:28: listen[0].tls.ca: unknown key");
    expect_error("ranking: {damper: {gpu: 1}}\n", "t.yaml:1:20: ranking.damper.gpu: unknown key");
    expect_error("autoprovisioning: {limits: {max_gpu: 1}}\n",
                 "t.yaml:1:29: autoprovisioning.limits.max_gpu: unknown key");
    expect_error("allow_insecure: true\nallow_insecure: false\n",
                 "t.yaml:2:1: allow_insecure: duplicate key (first at line 1)");
}

/* Two offered shapes with one autoprovisioned group id: refused, naming both (the second
 * would never be offered). Names that are not DNS labels are mapped and hashed apart. */
static void test_err_autoprov_ids_collide(void **state) {
    (void)state;
    expect_error("machine_types:\n"
                 "  - {name: a-b, cpu: 2, memory: 8Gi}\n"
                 "  - {name: a, cpu: 4, memory: 16Gi}\n"
                 "autoprovisioning: {enabled: true, machine_types: [a-b, a], zones: [c, b-c]}\n",
                 "t.yaml:4:19: autoprovisioning: machine type a-b in zone c and machine type a in "
                 "zone b-c get the same autoprovisioned node group id nap-a-b-c: rename one of "
                 "them");
    frugal_config_t *cfg = load_ok("machine_types:\n"
                                   "  - {name: m5.large, cpu: 2, memory: 8Gi}\n"
                                   "  - {name: m5-large, cpu: 2, memory: 8Gi}\n"
                                   "autoprovisioning: {enabled: true, machine_types: [m5.large, "
                                   "m5-large], zones: [z1]}\n");
    config_release(cfg);
}

static void test_err_wrong_types(void **state) {
    (void)state;
    expect_error("node_groups:\n  - {id: a, machine_type: n1-standard-2, min_size: abc, "
                 "max_size: 3}\n",
                 "t.yaml:2:52: node_groups[0].min_size: expected an integer, got \"abc\"");
    expect_error("node_groups:\n  - {id: a, machine_type: n1-standard-2, max_size: \"3\"}\n",
                 "t.yaml:2:52: node_groups[0].max_size: expected an integer, got \"3\"");
    expect_error("pricing: [1, 2]\n", "t.yaml:1:10: pricing: expected a mapping, got a sequence");
    expect_error("listen: {address: 127.0.0.1:1}\n",
                 "t.yaml:1:9: listen: expected a sequence, got a mapping");
    expect_error("allow_insecure: yes\n",
                 "t.yaml:1:17: allow_insecure: expected true or false, got \"yes\"");
    /* A core-schema tag says what a plain scalar already is; !!str makes it a string. */
    frugal_config_t *tagged =
        load_ok("allow_insecure: !!bool true\nmax_message_bytes: !!int 1048576\n");
    assert_true(tagged->allow_insecure);
    assert_int_equal(tagged->max_message_bytes, 1048576);
    config_free(tagged);
    expect_error("allow_insecure: !!str true\n",
                 "t.yaml:1:17: allow_insecure: expected true or false, got \"true\"");
    /* one error only: a bad managed does not make the group unmanaged */
    expect_error("node_groups:\n  - {id: a, machine_type: n1-standard-2, min_size: 0, max_size: "
                 "3, managed: yes}\n",
                 "t.yaml:2:77: node_groups[0].managed: expected true or false, got \"yes\"");
    expect_error("pricing: {cpu: cheap}\n",
                 "t.yaml:1:16: pricing.cpu: expected a number, got \"cheap\"");
    expect_error("state_file: [a]\n", "t.yaml:1:13: state_file: expected a value, got a sequence");
    expect_error("node_groups:\n  - {id: a, machine_type: n1-standard-2, max_size: 3,"
                 " labels: [a]}\n",
                 "t.yaml:2:63: node_groups[0].labels: expected a mapping, got a sequence");
    expect_error("node_groups: [a]\n", "t.yaml:1:15: node_groups[0]: expected a mapping, got a "
                                       "scalar");
    /* an empty item is a null mapping: its keys are missing there */
    expect_error_among("node_groups:\n  -\n",
                       "t.yaml:2:4: node_groups[0]: missing required key \"id\"");
}

static void test_err_sizes(void **state) {
    (void)state;
    expect_error("node_groups:\n  - {id: a, machine_type: n1-standard-2, min_size: -1, "
                 "max_size: 3}\n",
                 "t.yaml:2:52: node_groups[0].min_size: must not be negative, got -1");
    expect_error("node_groups:\n  - {id: a, machine_type: n1-standard-2, min_size: 5, "
                 "max_size: 3}\n",
                 "t.yaml:2:52: node_groups[0].min_size: min_size 5 is greater than max_size 3");
    expect_error("node_groups:\n  - {id: a, machine_type: n1-standard-2, max_size: 3, size: 4}\n",
                 "t.yaml:2:61: node_groups[0].size: size 4 is outside [min_size 0, max_size 3]");
    expect_error("node_groups:\n  - {id: a, machine_type: n1-standard-2, min_size: 11}\n",
                 "t.yaml:2:52: node_groups[0].min_size: min_size 11 is greater than max_size 10 "
                 "(the default: set max_size)");
    expect_error("node_groups:\n  - {id: a, machine_type: n1-standard-2, managed: false}\n",
                 "t.yaml:2:5: node_groups[0]: missing required key \"size\" (an unmanaged group "
                 "has a fixed size)");
    expect_error("node_groups:\n  - {id: a, machine_type: n1-standard-2, managed: false, "
                 "size: 1, max_size: 3}\n",
                 "t.yaml:2:77: node_groups[0].max_size: not allowed for an unmanaged group (set "
                 "size)");
    expect_error("node_groups:\n  - {machine_type: n1-standard-2, max_size: 3}\n",
                 "t.yaml:2:5: node_groups[0]: missing required key \"id\"");
    expect_error("node_groups:\n  - {id: a, machine_type: n1-standard-2, max_size: 3000000000}\n",
                 "t.yaml:2:52: node_groups[0].max_size: must be at most 2147483647, got "
                 "3000000000");
}

static void test_err_machine_types(void **state) {
    (void)state;
    expect_error("node_groups:\n  - {id: a, machine_type: n9-huge, max_size: 3}\n",
                 "t.yaml:2:27: node_groups[0].machine_type: unknown machine type \"n9-huge\"");
    expect_error("pricing: {catalog: none}\n"
                 "node_groups:\n  - {id: a, machine_type: n1-standard-2, max_size: 3}\n",
                 "t.yaml:3:27: node_groups[0].machine_type: unknown machine type "
                 "\"n1-standard-2\" (pricing.catalog is none)");
    expect_error("autoprovisioning:\n  machine_types: [n1-standard-1, n9-huge]\n",
                 "t.yaml:2:34: autoprovisioning.machine_types[1]: unknown machine type "
                 "\"n9-huge\"");
    expect_error("machine_types:\n"
                 "  - {name: m, cpu: 1, memory: 1Gi}\n"
                 "  - {name: m, cpu: 2, memory: 2Gi}\n",
                 "t.yaml:3:12: machine_types[1].name: duplicate machine type \"m\" (first at "
                 "line 2)");
    expect_error("machine_types:\n  - {name: \"m 1\", cpu: 1, memory: 1Gi}\n",
                 "t.yaml:2:12: machine_types[0].name: invalid label value \"m 1\": must be "
                 "empty or 1-63 characters of [A-Za-z0-9._-], starting and ending with an "
                 "alphanumeric (it labels the nodes)");
    expect_error("machine_types:\n  - {name: m, cpu: 1, memory: 1Gi, gpu: 1, gpu_type: a/b}\n",
                 "t.yaml:2:54: machine_types[0].gpu_type: invalid label value \"a/b\": must be "
                 "empty or 1-63 characters of [A-Za-z0-9._-], starting and ending with an "
                 "alphanumeric (it labels the nodes)");
    /* a value's line break does not split its error line */
    expect_error("node_groups:\n  - {id: a, machine_type: n1-standard-2, max_size: 3, zone: "
                 "\"x\\ny\"}\n",
                 "t.yaml:2:61: node_groups[0].zone: invalid label value \"x?y\": must be empty or "
                 "1-63 characters of [A-Za-z0-9._-], starting and ending with an alphanumeric "
                 "(it labels the nodes)");
    expect_error("node_groups:\n  - {id: a, machine_type: n1-standard-2, max_size: 3, zone: "
                 "\"-x\"}\n",
                 "t.yaml:2:61: node_groups[0].zone: invalid label value \"-x\": must be empty or "
                 "1-63 characters of [A-Za-z0-9._-], starting and ending with an alphanumeric "
                 "(it labels the nodes)");
    expect_error("machine_types:\n  - {name: m, memory: 1Gi}\n",
                 "t.yaml:2:5: machine_types[0]: missing required key \"cpu\"");
    expect_error("machine_types:\n  - {name: m, price: 1}\n",
                 "t.yaml:2:5: machine_types[0]: missing required key \"cpu\"\n"
                 "t.yaml:2:5: machine_types[0]: missing required key \"memory\"");
    expect_error("machine_types:\n  - {name: n1-standard-2, cpu: 2}\n",
                 "t.yaml:2:5: machine_types[0]: missing required key \"memory\" (give cpu and "
                 "memory, or neither to keep the catalog's)");
    expect_error("machine_types:\n  - {name: m, cpu: 0, memory: 1Gi}\n",
                 "t.yaml:2:20: machine_types[0].cpu: must be greater than 0, got 0");
    expect_error("pricing: {catalog: aws}\n",
                 "t.yaml:1:20: pricing.catalog: unknown catalog \"aws\" (expected builtin or "
                 "none)");
    expect_error("pricing: {catalog: aws}\n"
                 "node_groups:\n  - {id: a, machine_type: n1-standard-2, max_size: 3}\n",
                 "t.yaml:1:20: pricing.catalog: unknown catalog \"aws\" (expected builtin or "
                 "none)");
}

static void test_err_duplicate_ids(void **state) {
    (void)state;
    expect_error("node_groups:\n"
                 "  - {id: a, machine_type: n1-standard-2, max_size: 3}\n"
                 "  - {id: a, machine_type: n1-standard-4, max_size: 3}\n",
                 "t.yaml:3:10: node_groups[1].id: duplicate node group id \"a\" (first at line "
                 "2)");
    expect_error("node_groups:\n  - {id: Pool_A, machine_type: n1-standard-2, max_size: 3}\n",
                 "t.yaml:2:10: node_groups[0].id: invalid id \"Pool_A\": must be 1-63 lowercase "
                 "alphanumerics or '-', starting and ending with an alphanumeric");
    expect_error("autoprovisioning: {enabled: true}\n"
                 "node_groups:\n  - {id: nap-x, machine_type: n1-standard-2, max_size: 3}\n",
                 "t.yaml:3:10: node_groups[0].id: id \"nap-x\" starts with the autoprovisioning "
                 "prefix \"nap-\"");
}

static void test_err_quantities(void **state) {
    (void)state;
    char *errors = load_err("machine_types:\n  - {name: m, cpu: 1, memory: 7.5Gx}\n");
    assert_non_null(strstr(errors, "t.yaml:2:31: machine_types[0].memory: invalid quantity "
                                   "\"7.5Gx\": "));
    assert_int_equal(count_lines(errors), 1);
    free(errors);
    errors = load_err("ranking: {damper: {cpu: lots}}\n");
    assert_non_null(strstr(errors, "t.yaml:1:25: ranking.damper.cpu: invalid quantity \"lots\""));
    free(errors);
    expect_error("autoprovisioning: {limits: {max_memory: -1Gi}}\n",
                 "t.yaml:1:41: autoprovisioning.limits.max_memory: must not be negative, got "
                 "-1Gi");
}

static void test_err_durations(void **state) {
    (void)state;
    expect_error("autoprovisioning: {empty_group_ttl: 10 minutes}\n",
                 "t.yaml:1:37: autoprovisioning.empty_group_ttl: invalid duration \"10 "
                 "minutes\" (expected e.g. 45s, 10m, 1h30m)");
    expect_error("autoprovisioning: {empty_group_ttl: 600}\n",
                 "t.yaml:1:37: autoprovisioning.empty_group_ttl: invalid duration \"600\" "
                 "(expected e.g. 45s, 10m, 1h30m)");
    expect_error("node_groups:\n  - {id: a, machine_type: n1-standard-2, max_size: 3,"
                 " options: {max_node_provision: -5m}}\n",
                 "t.yaml:2:85: node_groups[0].options.max_node_provision: must not be negative, "
                 "got -5m");
    expect_error("node_groups:\n  - {id: a, machine_type: n1-standard-2, max_size: 3,"
                 " options: {max_node_provision: 0s}}\n",
                 "t.yaml:2:85: node_groups[0].options.max_node_provision: must be greater than 0, "
                 "got 0s");
    expect_error("node_groups:\n  - {id: a, machine_type: n1-standard-2, max_size: 3,"
                 " options: {scale_down_utilization_threshold: 1.5}}\n",
                 "t.yaml:2:99: node_groups[0].options.scale_down_utilization_threshold: must be "
                 "at most 1, got 1.5");
}

static void test_err_taints_and_labels(void **state) {
    (void)state;
    const char *head = "node_groups:\n  - id: a\n    machine_type: n1-standard-2\n"
                       "    max_size: 3\n";
    char text[1024];
    snprintf(text, sizeof(text), "%s    taints: [{key: k, effect: NoSchedul}]\n", head);
    expect_error(text, "t.yaml:5:31: node_groups[0].taints[0].effect: invalid taint effect "
                       "\"NoSchedul\": want NoSchedule, PreferNoSchedule or NoExecute");
    snprintf(text, sizeof(text), "%s    taints: [{key: k}]\n", head);
    expect_error(text, "t.yaml:5:14: node_groups[0].taints[0]: missing required key \"effect\"");
    snprintf(text, sizeof(text),
             "%s    taints: [{key: k, effect: NoSchedule}, {key: k, value: v, effect: "
             "NoSchedule}]\n",
             head);
    expect_error(text, "t.yaml:5:44: node_groups[0].taints[1]: taint k:NoSchedule given twice");
    snprintf(text, sizeof(text), "%s    taints: [{key: -bad, effect: NoSchedule}]\n", head);
    expect_error(text, "t.yaml:5:20: node_groups[0].taints[0].key: invalid taint key \"-bad\": "
                       "name must be 1-63 characters of [A-Za-z0-9._-], starting and ending with "
                       "an alphanumeric, after an optional DNS prefix and '/'");
    snprintf(text, sizeof(text), "%s    labels: {Example.COM/x: y}\n", head);
    expect_error(text, "t.yaml:5:14: node_groups[0].labels.Example.COM/x: invalid label key "
                       "\"Example.COM/x\": prefix must be a DNS subdomain (lowercase "
                       "alphanumerics, '-' and '.', at most 253 characters)");
    snprintf(text, sizeof(text), "%s    labels: {team: \"web team\"}\n", head);
    expect_error(
        text,
        "t.yaml:5:20: node_groups[0].labels.team: invalid label value \"web "
        "team\" for key team: must be empty or 1-63 characters of [A-Za-z0-9._-], starting and "
        "ending with an alphanumeric");
    snprintf(text, sizeof(text),
             "%s    labels: {a: "
             "x234567890123456789012345678901234567890123456789012345678901234}\n",
             head);
    expect_error_among(
        text, "t.yaml:5:17: node_groups[0].labels.a: invalid label value "
              "\"x234567890123456789012345678901234567890123456789012345678901234\""
              " for key a: must be empty or 1-63 characters of [A-Za-z0-9._-], starting and "
              "ending with an alphanumeric");
    expect_error("autoprovisioning: {label_sets: [{ok: yes}, {\"a b\": c}]}\n",
                 "t.yaml:1:45: autoprovisioning.label_sets[1].a b: invalid label key \"a b\": "
                 "name must be 1-63 characters of [A-Za-z0-9._-], starting and ending with an "
                 "alphanumeric, after an optional DNS prefix and '/'");
    /* What NewNodeGroup refuses, a label set refuses too: a template that contradicts its
     * machine type or zone, or a group label that names another group. */
    expect_error("autoprovisioning: {label_sets: [{topology.kubernetes.io/zone: b}]}\n",
                 "t.yaml:1:34: autoprovisioning.label_sets[0].topology.kubernetes.io/zone: label "
                 "topology.kubernetes.io/zone is set by frugal from the machine type and zone");
    expect_error("autoprovisioning: {label_sets: [{frugal.io/node-group: web}]}\n",
                 "t.yaml:1:34: autoprovisioning.label_sets[0].frugal.io/node-group: label "
                 "frugal.io/node-group names a node's group: an operator sets it on the nodes "
                 "of a configured group, never on an autoprovisioned one");
    /* The group's index in the file, though an invalid group before it is not kept. */
    expect_error_among("node_groups:\n  - {id: a, machine_type: n1-standard-2}\n"
                       "  - {id: nap-x, machine_type: n1-standard-2, max_size: 1}\n"
                       "autoprovisioning: {enabled: true}\n",
                       "t.yaml:3:10: node_groups[1].id: id \"nap-x\" starts with the "
                       "autoprovisioning prefix \"nap-\"");
}

static void test_err_provider(void **state) {
    (void)state;
    expect_error("provider: {kind: exec}\n",
                 "t.yaml:1:11: provider: missing required key \"command\" (provider kind exec)");
    expect_error("provider:\n  kind: exec\n  command: bin/hook\n",
                 "t.yaml:3:12: provider.command: must be an absolute path, got \"bin/hook\"");
    expect_error("provider:\n  kind: exec\n  command: /nonexistent/frugal-hook\n",
                 "t.yaml:3:12: provider.command: /nonexistent/frugal-hook is not an executable "
                 "file");
    expect_error("provider:\n  kind: exec\n  command: /bin/sh\n  boot_seconds: 5\n",
                 "t.yaml:4:3: provider.boot_seconds: only valid with provider kind simulated");
    expect_error("provider:\n  kind: exec\n  command: /bin/sh\n  parallelism: 0\n",
                 "t.yaml:4:16: provider.parallelism: must be at least 1, got 0");
    expect_error("provider:\n  kind: exec\n  command: /bin/sh\n  timeout: 0s\n",
                 "t.yaml:4:12: provider.timeout: must be at least 1ms, got 0s");
    expect_error("provider:\n  kind: exec\n  command: /bin/sh\n  timeout: soon\n",
                 "t.yaml:4:12: provider.timeout: invalid duration \"soon\" (expected e.g. 45s, "
                 "10m, 1h30m)");
    expect_error("provider:\n  command: /bin/sh\n",
                 "t.yaml:2:3: provider.command: only valid with provider kind exec");
    expect_error_among("provider:\n  kind: simulated\n  timeout: 1m\n  parallelism: 2\n",
                       "t.yaml:3:3: provider.timeout: only valid with provider kind exec");
    expect_error_among("provider:\n  kind: simulated\n  timeout: 1m\n  parallelism: 2\n",
                       "t.yaml:4:3: provider.parallelism: only valid with provider kind exec");
    expect_error("provider:\n  kind: aws\n",
                 "t.yaml:2:9: provider.kind: unknown provider kind \"aws\" (expected simulated "
                 "or exec)");
    expect_error("provider: {boot_seconds: -1}\n",
                 "t.yaml:1:26: provider.boot_seconds: must not be negative, got -1");
}

static void test_exec_provider_keys(void **state) {
    (void)state;
    const char *text = "provider:\n  kind: exec\n  command: /bin/sh\n  timeout: 90s\n"
                       "  parallelism: 8\n";
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    assert_int_equal(config_load_string("t.yaml", text, strlen(text), &cfg, &errors), 0);
    assert_string_equal(cfg->provider_kind, "exec");
    assert_string_equal(cfg->exec_command, "/bin/sh");
    assert_int_equal(cfg->exec_timeout_ms, 90000);
    assert_int_equal(cfg->exec_parallelism, 8);
    config_free(cfg);
    text = "provider: {kind: exec, command: /bin/sh}\n";
    assert_int_equal(config_load_string("t.yaml", text, strlen(text), &cfg, &errors), 0);
    assert_int_equal(cfg->exec_timeout_ms, 600000);
    assert_int_equal(cfg->exec_parallelism, 4);
    config_free(cfg);
}

static void test_err_listeners(void **state) {
    (void)state;
    expect_error("listen:\n  - address: 127.0.0.1\n",
                 "t.yaml:2:14: listen[0].address: invalid address \"127.0.0.1\": expected "
                 "HOST:PORT or unix:PATH");
    expect_error("listen:\n  - address: 127.0.0.1:70000\n",
                 "t.yaml:2:14: listen[0].address: invalid address \"127.0.0.1:70000\": port must "
                 "be a number from 1 to 65535");
    expect_error("listen:\n  - address: 127.0.0.1:0\n",
                 "t.yaml:2:14: listen[0].address: invalid address \"127.0.0.1:0\": port must be "
                 "a number from 1 to 65535");
    expect_error("listen:\n  - address: ::1:80\n",
                 "t.yaml:2:14: listen[0].address: invalid address \"::1:80\": an IPv6 address "
                 "must be written [ADDRESS]:PORT");
    expect_error("listen:\n  - address: 0.0.0.0:8086\n",
                 "t.yaml:2:14: listen[0].address: plaintext listener on non-loopback address "
                 "\"0.0.0.0:8086\": configure tls or set allow_insecure: true");
    frugal_config_t *upper = load_ok("listen:\n  - address: LOCALHOST:8086\n"); /* loopback */
    config_free(upper);
    frugal_config_t *mapped = load_ok("listen:\n  - address: '[::ffff:127.0.0.2]:8086'\n");
    config_free(mapped); /* an IPv4 loopback address written as IPv6 */
    expect_error("listen:\n  - address: '[::ffff:10.0.0.1]:8086'\n",
                 "t.yaml:2:14: listen[0].address: plaintext listener on non-loopback address "
                 "\"[::ffff:10.0.0.1]:8086\": configure tls or set allow_insecure: true");
    expect_error("listen:\n  - address: \"[::]:8086\"\n",
                 "t.yaml:2:14: listen[0].address: plaintext listener on non-loopback address "
                 "\"[::]:8086\": configure tls or set allow_insecure: true");
    expect_error("listen:\n  - address: 0.0.0.0:8443\n    tls: {cert: /c}\n",
                 "t.yaml:3:10: listen[0].tls: cert is set without key");
    expect_error("listen:\n  - address: 0.0.0.0:8443\n    tls: {key: /k, client_ca: /ca}\n",
                 "t.yaml:3:10: listen[0].tls: key is set without cert");
    expect_error("listen: []\n", "t.yaml:1:9: listen: at least one listener is required");
    expect_error("listen:\n  - address: unix:/a\n  - address: unix:/a\n",
                 "t.yaml:3:14: listen[1].address: duplicate listener address \"unix:/a\"");
    expect_error("listen:\n  - address: 127.0.0.1:8086\n  - address: localhost\n",
                 "t.yaml:3:14: listen[1].address: invalid address \"localhost\": expected "
                 "HOST:PORT or unix:PATH");
    /* Sockets that collide although the strings differ: gRPC would fail to bind the second. */
    expect_error("listen:\n  - address: 127.0.0.1:8086\n  - address: localhost:8086\n",
                 "t.yaml:3:14: listen[1].address: listener address \"localhost:8086\" binds the "
                 "same port as \"127.0.0.1:8086\"");
    expect_error("allow_insecure: true\nlisten:\n  - address: 127.0.0.1:8086\n"
                 "  - address: 0.0.0.0:8086\n",
                 "t.yaml:4:14: listen[1].address: listener address \"0.0.0.0:8086\" binds the "
                 "same port as \"127.0.0.1:8086\"");
    expect_error("allow_insecure: true\nlisten:\n  - address: \"[::]:8086\"\n"
                 "  - address: \"[::1]:8086\"\n",
                 "t.yaml:4:14: listen[1].address: listener address \"[::1]:8086\" binds the same "
                 "port as \"[::]:8086\"");
    expect_error("allow_insecure: true\nlisten:\n  - address: 0.0.0.0:8086\n"
                 "  - address: \"[::1]:8086\"\n",
                 "t.yaml:4:14: listen[1].address: listener address \"[::1]:8086\" binds the same "
                 "port as \"0.0.0.0:8086\"");
    frugal_config_t *apart = load_ok("allow_insecure: true\nlisten:\n  - address: 127.0.0.1:8086\n"
                                     "  - address: 127.0.0.1:8087\n  - address: \"[::1]:8086\"\n"
                                     "  - address: 0.0.0.0:8088\n  - address: \"[::1]:8089\"\n");
    assert_int_equal(apart->listeners_count, 5);
    config_free(apart);
    expect_error("listen:\n  - {tls: {cert: /c, key: /k}}\n",
                 "t.yaml:2:5: listen[0]: missing required key \"address\"");

    /* services: health always; health alone may be plaintext anywhere (probes) */
    expect_error("listen:\n  - {address: \"unix:/a\", services: [expander, billing]}\n",
                 "t.yaml:2:47: listen[0].services[1]: unknown service (expected cloudprovider, "
                 "expander, autoprovisioning or health, or their gRPC service names)");
    expect_error("listen:\n  - {address: \"unix:/a\", services: [expander, grpcplugin.Expander]}\n",
                 "t.yaml:2:47: listen[0].services[1]: service expander listed twice");
    expect_error("listen:\n  - {address: \"unix:/a\", services: []}\n",
                 "t.yaml:2:36: listen[0].services: at least one service is required");
    expect_error("listen:\n  - {address: 0.0.0.0:8088, services: [health, expander]}\n",
                 "t.yaml:2:15: listen[0].address: plaintext listener on non-loopback address "
                 "\"0.0.0.0:8088\": configure tls or set allow_insecure: true");
    frugal_config_t *svc = load_ok("listen:\n  - {address: 0.0.0.0:8088, services: [health]}\n"
                                   "  - {address: \"unix:/b\", services: [expander]}\n"
                                   "  - {address: \"unix:/c\"}\n");
    assert_int_equal(svc->listeners[0].services, LISTENER_SERVICE_HEALTH);
    assert_int_equal(svc->listeners[1].services,
                     LISTENER_SERVICE_EXPANDER | LISTENER_SERVICE_HEALTH);
    assert_int_equal(svc->listeners[2].services, LISTENER_SERVICES_ALL);
    char names[80];
    config_format_services(svc->listeners[1].services, names, sizeof(names));
    assert_string_equal(names, "expander, health");
    config_free(svc);
    /* the fully qualified gRPC service names, mixed with the short ones */
    svc = load_ok("listen:\n  - {address: 0.0.0.0:8088, services: [grpc.health.v1.Health]}\n"
                  "  - {address: \"unix:/b\", services: [grpcplugin.Expander, "
                  "clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider, "
                  "frugal.v1.Autoprovisioning]}\n"
                  "  - {address: \"unix:/c\", services: [grpcplugin.Expander, cloudprovider]}\n");
    assert_int_equal(svc->listeners[0].services, LISTENER_SERVICE_HEALTH);
    assert_int_equal(svc->listeners[1].services, LISTENER_SERVICES_ALL);
    assert_int_equal(svc->listeners[2].services, LISTENER_SERVICE_EXPANDER |
                                                     LISTENER_SERVICE_CLOUDPROVIDER |
                                                     LISTENER_SERVICE_HEALTH);
    config_free(svc);
    expect_error("listen:\n  - {address: \"unix:/a\", services: [grpcplugin.expander]}\n",
                 "t.yaml:2:37: listen[0].services[0]: unknown service (expected cloudprovider, "
                 "expander, autoprovisioning or health, or their gRPC service names)");

    /* allow_insecure applies wherever it appears in the file */
    frugal_config_t *cfg = load_ok("listen: [{address: 0.0.0.0:8086}]\nallow_insecure: true\n");
    config_free(cfg);
    cfg = load_ok("listen: [{address: 0.0.0.0:8443, tls: {cert: /c, key: /k}}]\n");
    config_free(cfg);
}

static void test_err_autoprovisioning(void **state) {
    (void)state;
    expect_error("autoprovisioning:\n  limits: {min_cpu: 8, max_cpu: 4}\n",
                 "t.yaml:2:21: autoprovisioning.limits.min_cpu: min_cpu is greater than max_cpu");
    expect_error("autoprovisioning:\n  limits: {min_memory: 2Gi, max_memory: 1Gi}\n",
                 "t.yaml:2:24: autoprovisioning.limits.min_memory: min_memory is greater than "
                 "max_memory");
    expect_error("autoprovisioning: {zones: [a, b, a]}\n",
                 "t.yaml:1:34: autoprovisioning.zones[2]: duplicate entry \"a\"");
    expect_error("autoprovisioning: {prefix: NAP}\n",
                 "t.yaml:1:28: autoprovisioning.prefix: invalid prefix \"NAP\": must be 1-20 "
                 "lowercase alphanumerics or '-', starting and ending with an alphanumeric");
    expect_error("autoprovisioning: {max_node_groups: -2}\n",
                 "t.yaml:1:37: autoprovisioning.max_node_groups: must not be negative, got -2");
    expect_error("autoprovisioning: {enabled: true, machine_types: []}\n",
                 "t.yaml:1:50: autoprovisioning.machine_types: autoprovisioning is enabled but "
                 "offers no machine type (omit the key for every machine type)");
    expect_error("autoprovisioning: {enabled: true, label_sets: []}\n",
                 "t.yaml:1:47: autoprovisioning.label_sets: autoprovisioning is enabled but "
                 "offers no label set (omit the key for one empty set)");
    expect_error("autoprovisioning: {label_sets: [{a: b}, {}, {a: b}]}\n",
                 "t.yaml:1:45: autoprovisioning.label_sets[2]: duplicate label set");
    expect_error("autoprovisioning: {zones: [us-a, \"us b\"]}\n",
                 "t.yaml:1:34: autoprovisioning.zones[1]: invalid label value \"us b\": must be "
                 "empty or 1-63 characters of [A-Za-z0-9._-], starting and ending with an "
                 "alphanumeric (it labels the nodes)");
}

static void test_err_ranking(void **state) {
    (void)state;
    expect_error("ranking:\n  preferred_nodes: [{max_nodes: 5, cpu: 1}, {max_nodes: 5, cpu: 2},"
                 " {cpu: 4}]\n",
                 "t.yaml:2:57: ranking.preferred_nodes[1].max_nodes: max_nodes must be "
                 "ascending: 5 follows 5");
    expect_error_among("ranking:\n  preferred_nodes: [{cpu: 1}, {max_nodes: 5, cpu: 2}]\n",
                       "t.yaml:2:21: ranking.preferred_nodes[0]: only the last entry may omit "
                       "max_nodes");
    expect_error("ranking:\n  preferred_nodes: [{max_nodes: 5, cpu: 2}]\n",
                 "t.yaml:2:21: ranking.preferred_nodes[0]: the last entry must omit max_nodes: "
                 "it covers every larger cluster");
    expect_error("ranking: {suppress_scale: 0}\n",
                 "t.yaml:1:27: ranking.suppress_scale: must be greater than 0, got 0");
}

static void test_err_prices(void **state) {
    (void)state;
    expect_error("pricing: {memory_gib: -0.1}\n",
                 "t.yaml:1:23: pricing.memory_gib: must not be negative, got -0.1");
    expect_error("machine_types:\n  - {name: m, cpu: 1, memory: 1Gi, price: -1}\n",
                 "t.yaml:2:43: machine_types[0].price: must not be negative, got -1");
    expect_error("node_groups:\n  - {id: a, machine_type: n1-standard-2, max_size: 3,"
                 " spot_price: -0.5}\n",
                 "t.yaml:2:67: node_groups[0].spot_price: must not be negative, got -0.5");
}

/* Every problem is reported, in document order (line, then column). */
static void test_multiple_errors(void **state) {
    (void)state;
    char *errors = load_err("listen: [{address: 0.0.0.0:1}]\n"
                            "bogus: 1\n"
                            "pricing: {cpu: -1, gpu: x}\n"
                            "node_groups:\n"
                            "  - {id: a, machine_type: nope, max_size: 3}\n"
                            "  - {id: a, machine_type: n1-standard-1, min_size: 4, max_size: 3}\n"
                            "ranking: {gpu_unfitness: many}\n");
    assert_string_equal(
        errors, "t.yaml:1:20: listen[0].address: plaintext listener on non-loopback address "
                "\"0.0.0.0:1\": configure tls or set allow_insecure: true\n"
                "t.yaml:2:1: bogus: unknown key\n"
                "t.yaml:3:16: pricing.cpu: must not be negative, got -1\n"
                "t.yaml:3:25: pricing.gpu: expected a number, got \"x\"\n"
                "t.yaml:5:27: node_groups[0].machine_type: unknown machine type \"nope\"\n"
                "t.yaml:6:10: node_groups[1].id: duplicate node group id \"a\" (first at line 5)\n"
                "t.yaml:6:52: node_groups[1].min_size: min_size 4 is greater than max_size 3\n"
                "t.yaml:7:26: ranking.gpu_unfitness: expected a number, got \"many\"\n");
    free(errors);
}

/* ---- yaml_tree ---- */

static void test_yaml_tree_positions(void **state) {
    (void)state;
    const char *text = "a:\n  - x\n  - {b: 'c'}\n";
    yaml_tree_node_t *root = NULL;
    yaml_tree_error_t err;
    assert_int_equal(yaml_tree_load(text, strlen(text), &root, &err), 0);
    assert_int_equal(root->type, YAML_TREE_MAPPING);
    const yaml_tree_node_t *a = yaml_tree_mapping_get(root, "a");
    assert_int_equal(a->type, YAML_TREE_SEQUENCE);
    assert_int_equal(a->u.sequence.count, 2);
    assert_int_equal(a->u.sequence.items[0]->line, 2);
    assert_int_equal(a->u.sequence.items[0]->column, 5);
    const yaml_tree_node_t *b = yaml_tree_mapping_get(a->u.sequence.items[1], "b");
    assert_string_equal(b->u.scalar.text, "c");
    assert_false(b->u.scalar.plain);
    assert_int_equal(b->line, 3);
    assert_int_equal(b->column, 9);
    assert_null(yaml_tree_mapping_get(root, "z"));
    yaml_tree_free(root);

    char deep[400];
    memset(deep, '[', 200);
    deep[200] = '\0';
    assert_int_equal(yaml_tree_load(deep, strlen(deep), &root, &err), -1);
    assert_null(root);
    assert_string_equal(err.message, "nesting deeper than 64 levels");
}

static void test_ops_listen(void **state) {
    (void)state;
    frugal_config_t *cfg = load_ok("node_groups: []\n");
    assert_null(cfg->ops_listen); /* off by default */
    config_free(cfg);
    cfg = load_ok("ops_listen: 0.0.0.0:8087\n");
    assert_string_equal(cfg->ops_listen, "0.0.0.0:8087");
    config_free(cfg);
    char *errors = load_err("ops_listen: unix:/run/ops.sock\n");
    assert_non_null(strstr(errors, "t.yaml:1:13: ops_listen: invalid address"));
    assert_non_null(strstr(errors, "needs HOST:PORT"));
    free(errors);
    errors = load_err("ops_listen: 127.0.0.1:99999\n");
    assert_non_null(strstr(errors, "port must be a number"));
    free(errors);
    errors = load_err("listen: [{address: \"127.0.0.1:8086\"}]\nops_listen: 127.0.0.1:8086\n");
    assert_non_null(strstr(errors, "binds the same port as the gRPC listener"));
    free(errors);
    errors = load_err("listen: [{address: \"127.0.0.1:8086\"}]\nops_listen: 0.0.0.0:8086\n");
    assert_non_null(strstr(errors, "t.yaml:2:13: ops_listen: \"0.0.0.0:8086\" binds the same port "
                                   "as the gRPC listener \"127.0.0.1:8086\""));
    free(errors);
}

/* Escalator's keys: set, and a threshold of 0 or above 100 rejected where it is. */
static void test_scale_up_threshold(void **state) {
    (void)state;
    frugal_config_t *cfg = load_ok("node_groups:\n"
                                   "  - {id: a, machine_type: n1-standard-2, max_size: 3,"
                                   " scale_up_threshold: 100, scale_on_starve: true}\n");
    assert_int_equal(cfg->node_groups[0].scale_up_threshold, 100);
    assert_true(cfg->node_groups[0].scale_on_starve);
    config_free(cfg);
    expect_error("node_groups:\n"
                 "  - id: a\n"
                 "    machine_type: n1-standard-2\n"
                 "    max_size: 3\n"
                 "    scale_up_threshold: 0\n",
                 "t.yaml:5:25: node_groups[0].scale_up_threshold: must be greater than 0, got 0");
    expect_error("node_groups:\n"
                 "  - {id: a, machine_type: n1-standard-2, max_size: 3, scale_up_threshold: 101}\n",
                 "t.yaml:2:75: node_groups[0].scale_up_threshold: must be at most 100, got 101");
}

/* state: the file backend (state_file's long form) and etcd, with their checks. */
static void test_state_section(void **state) {
    (void)state;
    frugal_config_t *cfg = load_ok("state_file: /x/s\n");
    assert_int_equal(cfg->state.backend, STATE_BACKEND_FILE);
    assert_string_equal(cfg->state.path, "/x/s");
    config_free(cfg);
    cfg = load_ok("state: {backend: file, path: /x/s}\n");
    assert_int_equal(cfg->state.backend, STATE_BACKEND_FILE);
    assert_string_equal(cfg->state_file, "/x/s");
    config_free(cfg);
    cfg = load_ok("");
    assert_int_equal(cfg->state.backend, STATE_BACKEND_MEMORY);
    config_free(cfg);
    cfg = load_ok("state:\n  backend: etcd\n  endpoints: [https://e0:2379, https://e1:2379]\n"
                  "  prefix: /frugal/prod/\n  tls: {ca: /c, cert: /t, key: /k}\n"
                  "  lease_ttl: 15s\n");
    assert_int_equal(cfg->state.backend, STATE_BACKEND_ETCD);
    assert_null(cfg->state_file);
    assert_int_equal(cfg->state.endpoints_count, 2);
    assert_string_equal(cfg->state.endpoints[1], "https://e1:2379");
    assert_string_equal(cfg->state.prefix, "/frugal/prod/");
    assert_string_equal(cfg->state.tls_key, "/k");
    assert_int_equal(cfg->state.lease_ttl_ms, 15000);
    assert_int_equal(cfg->state.request_timeout_ms, 2000);
    config_free(cfg);
}

static void test_state_errors(void **state) {
    (void)state;
    expect_error("state_file: /a\nstate: {backend: file, path: /b}\n",
                 "t.yaml:2:8: state: state and state_file are exclusive (state_file: PATH is "
                 "short for state: {backend: file, path: PATH})");
    expect_error("state: {backend: s3}\n",
                 "t.yaml:1:18: state.backend: unknown state backend \"s3\" (expected file or "
                 "etcd)");
    expect_error("state: {path: /a}\n", "t.yaml:1:8: state: missing required key \"backend\"");
    expect_error("state: {backend: file}\n",
                 "t.yaml:1:8: state: missing required key \"path\" (backend file)");
    expect_error("state: {backend: file, path: /a, prefix: /p/}\n",
                 "t.yaml:1:34: state.prefix: only valid with backend etcd");
    expect_error("state: {backend: etcd, prefix: /p/}\n",
                 "t.yaml:1:8: state: missing required key \"endpoints\" (backend etcd)");
    expect_error("state: {backend: etcd, endpoints: [http://a:1]}\n",
                 "t.yaml:1:8: state: missing required key \"prefix\" (backend etcd)");
    expect_error("state: {backend: etcd, endpoints: [a:1], prefix: /p/}\n",
                 "t.yaml:1:36: state.endpoints[0]: endpoint \"a:1\": must start with http:// or "
                 "https://");
    expect_error("state: {backend: etcd, endpoints: [http://a:99999], prefix: /p/}\n",
                 "t.yaml:1:36: state.endpoints[0]: endpoint \"http://a:99999\": the port must "
                 "be a number from 1 to 65535");
    expect_error("state: {backend: etcd, endpoints: [http://a:1, https://b:1], prefix: /p/}\n",
                 "t.yaml:1:35: state.endpoints: mixes http:// and https:// endpoints");
    expect_error("state: {backend: etcd, endpoints: [http://a:1], prefix: p}\n",
                 "t.yaml:1:57: state.prefix: must start and end with / and name something, got "
                 "\"p\"");
    expect_error("state: {backend: etcd, endpoints: [http://a:1], prefix: //}\n",
                 "t.yaml:1:57: state.prefix: must not hold an empty segment (//), got \"//\"");
    expect_error("state: {backend: etcd, endpoints: [http://a:1], prefix: /a//b/}\n",
                 "t.yaml:1:57: state.prefix: must not hold an empty segment (//), got \"/a//b/\"");
    expect_error("state: {backend: etcd, endpoints: [http://a:1], prefix: \"/a\\0b/\"}\n",
                 "t.yaml:1:57: state.prefix: must not hold a NUL byte");
    expect_error("state: {backend: etcd, endpoints: [http://a:1], prefix: /p/, tls: {ca: /c}}\n",
                 "t.yaml:1:67: state.tls: needs https:// endpoints");
    expect_error("state: {backend: etcd, endpoints: [https://a:1], prefix: /p/, tls: {cert: /c}}"
                 "\n",
                 "t.yaml:1:68: state.tls: cert is set without key");
    expect_error("state: {backend: etcd, endpoints: [http://a:1], prefix: /p/, lease_ttl: 1s}\n",
                 "t.yaml:1:73: state.lease_ttl: must be from 2s to 5m, got 1s");
    expect_error("state: {backend: etcd, endpoints: [http://a:1], prefix: /p/, path: /x}\n",
                 "t.yaml:1:62: state.path: only valid with backend file");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ops_listen),
        cmocka_unit_test(test_empty_file_defaults),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_minimal_group_defaults),
        cmocka_unit_test(test_scale_up_threshold),
        cmocka_unit_test(test_product_example),
        cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_catalog_type_amended),
        cmocka_unit_test(test_machine_type_adds_to_catalog),
        cmocka_unit_test(test_spot_twin),
        cmocka_unit_test(test_unpriced_pods),
        cmocka_unit_test(test_unpriced_damper),
        cmocka_unit_test(test_autoprov_limits_warning),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_example_config_loads),
        cmocka_unit_test(test_err_yaml_syntax),
        cmocka_unit_test(test_err_unknown_keys),
        cmocka_unit_test(test_err_wrong_types),
        cmocka_unit_test(test_err_sizes),
        cmocka_unit_test(test_err_machine_types),
        cmocka_unit_test(test_err_duplicate_ids),
        cmocka_unit_test(test_err_quantities),
        cmocka_unit_test(test_err_durations),
        cmocka_unit_test(test_err_taints_and_labels),
        cmocka_unit_test(test_err_provider),
        cmocka_unit_test(test_exec_provider_keys),
        cmocka_unit_test(test_err_listeners),
        cmocka_unit_test(test_err_autoprovisioning),
        cmocka_unit_test(test_err_ranking),
        cmocka_unit_test(test_err_prices),
        cmocka_unit_test(test_multiple_errors),
        cmocka_unit_test(test_err_autoprov_ids_collide),
        cmocka_unit_test(test_yaml_tree_positions),
        cmocka_unit_test(test_state_section),
        cmocka_unit_test(test_state_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
