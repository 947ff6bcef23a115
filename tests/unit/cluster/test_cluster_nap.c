/* Unit tests of node auto-provisioning on the cluster (server/cluster/cluster_nap.c): theoretical
 * groups at open, creation by the first increase, the limit example on live groups,
 * max_node_groups, the min limit on DeleteNodes, NewNodeGroup/Create/Delete, persistence, and the
 * empty-group TTL driven by a fake clock. Real config, simulated provider, a state file in a temp
 * dir. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "autoprov.h"
#include "cluster.h"
#include "cluster_nap.h"
#include "cluster_testing.h"
#include "config.h"
#include "log.h"
#include "provider.h"
#include "store_testing.h"

#define ZONE "us-central1-a"
#define HM "nap-n1-highmem-4-" ZONE
#define S1 "nap-n1-standard-1-" ZONE
#define S4 "nap-n1-standard-4-" ZONE

static int64_t fake_now = 1700000000000LL;

static int64_t fake_clock(void) {
    return fake_now;
}

typedef struct fx {
    char dir[64];
    char state[128];
    frugal_config_t *cfg;
    provider_t *provider;
    cluster_t *c;
} fx_t;

/* The design's limit example with autoprovisioning over three types and two label sets. */
static void fx_open(fx_t *f, const char *extra) {
    char yaml[2048];
    snprintf(yaml, sizeof(yaml),
             "state_file: %s\n"
             "node_groups:\n"
             "  - {id: main, machine_type: n1-standard-2, zone: " ZONE
             ", size: 2, managed: false}\n"
             "  - {id: as, machine_type: n1-standard-16, zone: " ZONE
             ", min_size: 0, max_size: 2, size: 1}\n"
             "autoprovisioning:\n"
             "  machine_types: [n1-standard-1, n1-standard-4, n1-highmem-4]\n"
             "  zones: [" ZONE "]\n"
             "  label_sets: [{}, {disktype: ssd}]\n"
             "  empty_group_ttl: 1m\n"
             "%s",
             f->state, extra);
    char *errors = NULL;
    if (config_load_string("nap.yaml", yaml, strlen(yaml), &f->cfg, &errors) != 0)
        fail_msg("config: %s", errors != NULL ? errors : "?");
    frugal_err_t err = {0};
    if (provider_create(f->cfg, &f->provider, &err) != 0 ||
        store_testing_cluster_open(f->cfg, f->provider, &f->c, &err) != 0)
        fail_msg("open: %s", err.msg);
}

static void fx_close(fx_t *f) {
    store_testing_cluster_close(f->c);
    provider_destroy(f->provider);
    config_free(f->cfg);
    f->c = NULL;
    f->provider = NULL;
    f->cfg = NULL;
}

static int setup(void **state) {
    fx_t *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/frugal-test-nap-XXXXXX");
    if (mkdtemp(f->dir) == NULL)
        return -1;
    snprintf(f->state, sizeof(f->state), "%s/state.yaml", f->dir);
    cluster_set_clock_for_testing(fake_clock);
    log_set_level(LOG_LEVEL_ERROR);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fx_t *f = *state;
    if (f->c != NULL)
        fx_close(f);
    unlink(f->state);
    char tmp[160];
    snprintf(tmp, sizeof(tmp), "%s.tmp", f->state);
    unlink(tmp);
    snprintf(tmp, sizeof(tmp), "%s.prev", f->state);
    unlink(tmp);
    rmdir(f->dir);
    free(f);
    cluster_set_clock_for_testing(NULL);
    return 0;
}

/* Read a group's fields under the read lock; exists -1 when the group is absent. */
typedef struct snap {
    int exists;
    bool autoprovisioned;
    int32_t target;
    int32_t max; /* advertised */
    size_t instances;
} snap_t;

static snap_t snap(fx_t *f, const char *id) {
    snap_t s = {-1, false, 0, 0, 0};
    cluster_read_lock(f->c);
    const group_t *g = cluster_find_group(f->c, id);
    if (g != NULL) {
        s.exists = g->exists;
        s.autoprovisioned = g->autoprovisioned;
        s.target = g->target_size;
        s.max = cluster_nap_max_size(f->c, g);
        s.instances = g->instances_count;
    }
    cluster_read_unlock(f->c);
    return s;
}

static char *first_instance(fx_t *f, const char *id) {
    cluster_read_lock(f->c);
    const group_t *g = cluster_find_group(f->c, id);
    char *s = g != NULL && g->instances_count > 0 ? strdup(g->instances[0].id) : NULL;
    cluster_read_unlock(f->c);
    return s;
}

static void test_theoretical_groups_at_open(void **state) {
    fx_t *f = *state;
    fx_open(f, "  enabled: true\n");
    cluster_read_lock(f->c);
    /* 2 configured + 3 types x 1 zone x 2 label sets. */
    assert_int_equal(cluster_groups_count(f->c), 2 + 6);
    size_t hashed = 0;
    for (size_t i = 0; i < cluster_groups_count(f->c); i++) {
        const group_t *g = cluster_group_at(f->c, i);
        if (!g->autoprovisioned)
            continue;
        assert_false(g->exists);
        assert_true(g->managed);
        assert_int_equal(g->min_size, 0);
        assert_int_equal(g->max_size, AUTOPROV_GROUP_MAX_SIZE);
        assert_int_equal(g->target_size, 0);
        if (g->spec.labels.count == 1) {
            hashed++;
            assert_string_equal(g->spec.labels.items[0].key, "disktype");
            assert_int_equal(strlen(g->spec.id),
                             strlen("nap--" ZONE "-") + strlen(g->spec.machine_type) + 8);
        }
        assert_string_equal(g->spec.zone, ZONE);
    }
    assert_int_equal(hashed, 3);
    assert_non_null(cluster_find_group(f->c, HM));
    cluster_read_unlock(f->c);
    assert_true(cluster_nap_configured_shape(f->cfg, &cluster_find_group(f->c, HM)->spec));
}

static void test_disabled(void **state) {
    fx_t *f = *state;
    fx_open(f, "  enabled: false\n  limits: {max_cpu: 1}\n");
    cluster_read_lock(f->c);
    assert_int_equal(cluster_groups_count(f->c), 2);
    assert_int_equal(cluster_nap_max_size(f->c, cluster_find_group(f->c, "as")), 2);
    cluster_read_unlock(f->c);
    /* Limits only bind with autoprovisioning on. */
    assert_int_equal(cluster_increase_size(f->c, NULL, "as", 1, NULL), 0);
    group_spec_t spec = {0};
    spec.id = "nap-x";
    spec.machine_type = "n1-standard-1";
    bool added = true;
    frugal_err_t err = {0};
    assert_int_equal(cluster_nap_new_group(f->c, &spec, &added, &err), FRUGAL_EPRECOND);
    assert_false(added);
}

/* The limit example on live groups, the CA pattern, TC8 and the min limit. */
static void test_limits_on_the_cluster(void **state) {
    fx_t *f = *state;
    fx_open(f, "  enabled: true\n  limits: {min_cpu: 20, max_cpu: 32}\n");
    frugal_err_t err = {0};
    /* 20 cores used: 12 left. */
    assert_int_equal(snap(f, HM).max, 3);
    assert_int_equal(snap(f, S1).max, 12);
    assert_int_equal(snap(f, "as").max, 1);
    /* The first increase creates the theoretical group. */
    assert_int_equal(cluster_increase_size(f->c, NULL, HM, 2, &err), 0);
    snap_t hm = snap(f, HM);
    assert_int_equal(hm.exists, 1);
    assert_int_equal(hm.target, 2);
    assert_int_equal(hm.instances, 2);
    /* 28 used: one more n1-highmem-4, or up to 4 n1-standard-1; "as" cannot grow. */
    assert_int_equal(snap(f, HM).max, 3);
    assert_int_equal(snap(f, S1).max, 4);
    assert_int_equal(snap(f, "as").max, 1);
    assert_int_equal(cluster_increase_size(f->c, NULL, "as", 1, &err), FRUGAL_EEXHAUSTED);
    assert_non_null(strstr(err.msg, "max_cpu"));
    assert_int_equal(cluster_increase_size(f->c, NULL, HM, 2, &err), FRUGAL_EEXHAUSTED);
    /* TC8: no quota for an n1-standard-4 group: refused and not created. */
    assert_int_equal(cluster_increase_size(f->c, NULL, S4, 2, &err), FRUGAL_EEXHAUSTED);
    assert_int_equal(snap(f, S4).exists, 0);
    assert_int_equal(cluster_increase_size(f->c, NULL, S1, 4, &err), 0);
    assert_int_equal(snap(f, S4).max, 0);
    assert_int_equal(snap(f, HM).max, 2);
    /* Min limit: 32 - 16 < 20, 32 - 4 >= 20. */
    char *as_node = first_instance(f, "as");
    const char *ids[1] = {as_node};
    assert_int_equal(cluster_delete_nodes(f->c, NULL, "as", ids, 1, &err), FRUGAL_EPRECOND);
    assert_non_null(strstr(err.msg, "min_cpu"));
    assert_int_equal(snap(f, "as").target, 1);
    free(as_node);
    char *hm_node = first_instance(f, HM);
    ids[0] = hm_node;
    assert_int_equal(cluster_delete_nodes(f->c, NULL, HM, ids, 1, &err), 0);
    free(hm_node);
    assert_int_equal(snap(f, HM).target, 1);
}

static void test_max_node_groups(void **state) {
    fx_t *f = *state;
    fx_open(f, "  enabled: true\n  max_node_groups: 1\n");
    frugal_err_t err = {0};
    assert_int_equal(cluster_increase_size(f->c, NULL, S1, 1, &err), 0);
    assert_int_equal(snap(f, S4).max, 0);
    assert_int_equal(cluster_increase_size(f->c, NULL, S4, 1, &err), FRUGAL_EEXHAUSTED);
    assert_non_null(strstr(err.msg, "max_node_groups"));
    assert_int_equal(cluster_nap_create_group(f->c, NULL, S4, &err), FRUGAL_EEXHAUSTED);
    assert_int_equal(snap(f, S4).exists, 0);
    cluster_read_lock(f->c);
    assert_int_equal(cluster_nap_existing_groups(f->c), 1);
    cluster_read_unlock(f->c);
}

static group_spec_t ml_spec(char *id_buf) {
    static kv_t labels[] = {{"team", "ml"}};
    static taint_t taints[] = {{"dedicated", "ml", "NoSchedule"}};
    group_spec_t spec = {0};
    spec.machine_type = "n1-standard-4";
    spec.zone = ZONE;
    spec.labels = (kv_list_t){labels, 1};
    spec.taints = (taint_list_t){taints, 1};
    spec.spot_price = -1;
    char *id = NULL;
    assert_int_equal(autoprov_group_id("nap", spec.machine_type, spec.zone, &spec.labels,
                                       &spec.taints, NULL, &id, NULL),
                     0);
    strcpy(id_buf, id);
    free(id);
    spec.id = id_buf;
    return spec;
}

static void test_new_create_delete(void **state) {
    fx_t *f = *state;
    fx_open(f, "  enabled: true\n");
    frugal_err_t err = {0};
    char id[128];
    group_spec_t spec = ml_spec(id);
    bool added = false;
    assert_int_equal(cluster_nap_new_group(f->c, &spec, &added, &err), 0);
    assert_true(added);
    assert_int_equal(snap(f, id).exists, 0);
    assert_true(snap(f, id).autoprovisioned);
    assert_false(cluster_nap_configured_shape(f->cfg, &spec));
    /* Same shape again: nothing changes; another shape under the same id: refused. */
    assert_int_equal(cluster_nap_new_group(f->c, &spec, &added, &err), 0);
    assert_false(added);
    group_spec_t other = spec;
    other.machine_type = "n1-standard-1";
    assert_int_equal(cluster_nap_new_group(f->c, &other, &added, &err), FRUGAL_EEXISTS);

    assert_int_equal(cluster_nap_create_group(f->c, NULL, id, &err), 0);
    assert_int_equal(snap(f, id).exists, 1);
    assert_int_equal(cluster_nap_create_group(f->c, NULL, id, &err), FRUGAL_EEXISTS);
    assert_int_equal(cluster_nap_create_group(f->c, NULL, "as", &err), FRUGAL_EPRECOND);
    assert_int_equal(cluster_nap_create_group(f->c, NULL, "nope", &err), FRUGAL_ENOTFOUND);

    /* Deletions: configured, theoretical of the config, non-empty, unknown. */
    assert_int_equal(cluster_nap_delete_group(f->c, NULL, "as", &err), FRUGAL_EPRECOND);
    assert_int_equal(cluster_nap_delete_group(f->c, NULL, HM, &err), FRUGAL_EPRECOND);
    assert_int_equal(cluster_nap_delete_group(f->c, NULL, "nope", &err), FRUGAL_ENOTFOUND);
    assert_int_equal(cluster_increase_size(f->c, NULL, id, 1, &err), 0);
    assert_int_equal(cluster_nap_delete_group(f->c, NULL, id, &err), FRUGAL_EPRECOND);
    assert_non_null(strstr(err.msg, "not empty"));

    /* Persisted with its spec across a restart. */
    fx_close(f);
    fx_open(f, "  enabled: true\n");
    assert_int_equal(snap(f, id).exists, 1);
    assert_int_equal(snap(f, id).target, 1);
    cluster_read_lock(f->c);
    const group_t *g = cluster_find_group(f->c, id);
    assert_int_equal(g->spec.taints.count, 1);
    assert_string_equal(g->spec.taints.items[0].key, "dedicated");
    cluster_read_unlock(f->c);

    /* Emptied, it can be deleted: a NewNodeGroup shape disappears. */
    char *node = first_instance(f, id);
    const char *ids[1] = {node};
    assert_int_equal(cluster_delete_nodes(f->c, NULL, id, ids, 1, &err), 0);
    free(node);
    assert_int_equal(cluster_refresh(f->c, NULL, &err), 0); /* the deleting instance goes */
    assert_int_equal(cluster_nap_delete_group(f->c, NULL, id, &err), 0);
    assert_int_equal(snap(f, id).exists, -1);
}

/* TC7 with a fake clock: empty for empty_group_ttl (1 min) -> deleted. */
static void test_ttl(void **state) {
    fx_t *f = *state;
    fx_open(f, "  enabled: true\n");
    frugal_err_t err = {0};
    char id[128];
    group_spec_t spec = ml_spec(id);
    bool added;
    assert_int_equal(cluster_increase_size(f->c, NULL, HM, 1, &err), 0);
    assert_int_equal(cluster_nap_new_group(f->c, &spec, &added, &err), 0);
    assert_int_equal(cluster_nap_create_group(f->c, NULL, id, &err), 0);

    char *node = first_instance(f, HM);
    const char *ids[1] = {node};
    assert_int_equal(cluster_delete_nodes(f->c, NULL, HM, ids, 1, &err), 0);
    free(node);
    assert_int_equal(cluster_refresh(f->c, NULL, &err), 0);
    assert_int_equal(snap(f, HM).instances, 0);

    fake_now += 59 * 1000;
    assert_int_equal(cluster_refresh(f->c, NULL, &err), 0);
    assert_int_equal(snap(f, HM).exists, 1);
    assert_int_equal(snap(f, id).exists, 1);

    fake_now += 2 * 1000;
    assert_int_equal(cluster_refresh(f->c, NULL, &err), 0);
    /* The config's shape becomes theoretical again; the NewNodeGroup one disappears. */
    assert_int_equal(snap(f, HM).exists, 0);
    assert_int_equal(snap(f, HM).target, 0);
    assert_int_equal(snap(f, id).exists, -1);

    /* A theoretical group does not expire, and comes back to life on increase. */
    fake_now += 10 * 60 * 1000;
    assert_int_equal(cluster_refresh(f->c, NULL, &err), 0);
    assert_int_equal(snap(f, HM).exists, 0);
    assert_int_equal(cluster_increase_size(f->c, NULL, HM, 1, &err), 0);
    assert_int_equal(snap(f, HM).exists, 1);
    /* Its empty clock restarted at creation: not deleted at the next tick. */
    assert_int_equal(cluster_refresh(f->c, NULL, &err), 0);
    assert_int_equal(snap(f, HM).exists, 1);

    /* A NewNodeGroup group never created is forgotten after the TTL too. */
    assert_int_equal(cluster_nap_new_group(f->c, &spec, &added, &err), 0);
    fake_now += 61 * 1000;
    assert_int_equal(cluster_refresh(f->c, NULL, &err), 0);
    assert_int_equal(snap(f, id).exists, -1);
    assert_int_equal(snap(f, HM).exists, 1);
}

/* NewNodeGroup past max_theoretical_groups is RESOURCE_EXHAUSTED naming the limit; the
 * config's own theoretical groups do not count, and an unused one expiring after
 * empty_group_ttl makes room again. */
static void test_max_theoretical_groups(void **state) {
    fx_t *f = *state;
    fx_open(f, "  enabled: true\n  max_theoretical_groups: 2\n");
    frugal_err_t err = {0};
    char ids[3][128];
    group_spec_t specs[3];
    static const char *teams[3] = {"a", "b", "c"};
    kv_t labels[3];
    bool added;
    for (int i = 0; i < 3; i++) {
        specs[i] = ml_spec(ids[i]);
        labels[i] = (kv_t){"team", (char *)teams[i]};
        specs[i].labels = (kv_list_t){&labels[i], 1};
        char *id = NULL;
        assert_int_equal(autoprov_group_id("nap", specs[i].machine_type, specs[i].zone,
                                           &specs[i].labels, &specs[i].taints, NULL, &id, NULL),
                         0);
        strcpy(ids[i], id);
        free(id);
    }
    assert_int_equal(cluster_nap_new_group(f->c, &specs[0], &added, &err), 0);
    fake_now += 30 * 1000;
    assert_int_equal(cluster_nap_new_group(f->c, &specs[1], &added, &err), 0);
    assert_int_equal(cluster_nap_new_group(f->c, &specs[2], &added, &err), FRUGAL_EEXHAUSTED);
    assert_non_null(strstr(err.msg, "max_theoretical_groups 2 reached"));
    assert_int_equal(snap(f, ids[2]).exists, -1);
    /* The same shape again is no new group: still fine. */
    assert_int_equal(cluster_nap_new_group(f->c, &specs[0], &added, &err), 0);
    assert_false(added);
    /* Created, a group no longer counts. */
    assert_int_equal(cluster_nap_create_group(f->c, NULL, ids[1], &err), 0);
    assert_int_equal(cluster_nap_new_group(f->c, &specs[2], &added, &err), 0);
    assert_int_equal(cluster_nap_new_group(f->c, &specs[1], &added, &err), 0);
    /* The first one, unused for the TTL (1m), is forgotten: room for one more. */
    fake_now += 31 * 1000;
    assert_int_equal(cluster_refresh(f->c, NULL, &err), 0);
    assert_int_equal(snap(f, ids[0]).exists, -1);
    cluster_read_lock(f->c);
    assert_int_equal(cluster_nap_theoretical_groups(f->c), 1);
    cluster_read_unlock(f->c);
    assert_int_equal(cluster_nap_new_group(f->c, &specs[0], &added, &err), 0);
    assert_true(added);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_theoretical_groups_at_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disabled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits_on_the_cluster, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_node_groups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_create_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ttl, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_theoretical_groups, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
