/* The Autoprovisioning handlers called directly (no network): each RPC's answer, each
 * refusal with its status and nothing changed, garbage input, and the service with
 * autoprovisioning disabled. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc.h>

#include "cluster.h"
#include "codec.h"
#include "demand.h"
#include "frugal.pb-c.h"
#include "k8s.h"
#include "k8s_name.h"
#include "provider.h"
#include "service.h"
#include "svc_harness.h"
#include "wire_names.h"

#define ZONE_A "us-central1-a"
#define ZONE_B "us-central1-b"

/* Limits: 32 cores. "main" counts 2 x 2 cores against them. */
static const char config_enabled[] =
    "node_groups:\n"
    "  - id: pool-a\n"
    "    machine_type: n1-standard-2\n"
    "    zone: " ZONE_A "\n"
    "    max_size: 5\n"
    "    labels: {team: web}\n"
    "    taints: [{key: dedicated, value: web, effect: NoSchedule}]\n"
    "  - id: main\n"
    "    machine_type: n1-standard-2\n"
    "    size: 2\n"
    "    managed: false\n"
    "machine_types:\n"
    "  - {name: t4-4, cpu: 4, memory: 15Gi, gpu: 1, gpu_type: nvidia-tesla-t4}\n"
    "autoprovisioning:\n"
    "  enabled: true\n"
    "  machine_types: [n1-standard-1, n1-standard-4, t4-4]\n"
    "  zones: [" ZONE_A ", " ZONE_B "]\n"
    "  label_sets: [{}, {disktype: ssd}]\n"
    "  limits: {max_cpu: 32}\n"
    "  max_node_groups: 2\n";

/* Limits that would cut pool-a's max_size to 4 if they applied. */
static const char config_disabled[] = "node_groups:\n"
                                      "  - id: pool-a\n"
                                      "    machine_type: n1-standard-2\n"
                                      "    max_size: 5\n"
                                      "autoprovisioning:\n"
                                      "  enabled: false\n"
                                      "  limits: {min_cpu: 1, max_cpu: 8}\n";

typedef svc_fx_t fx_t;

static int fx_setup(void **state) {
    *state = svc_fx_open(config_enabled);
    return 0;
}

static int fx_setup_disabled(void **state) {
    *state = svc_fx_open(config_disabled);
    return 0;
}

static int call(fx_t *f, const char *method, const ProtobufCMessage *req,
                const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp,
                frugal_err_t *err) {
    return svc_call(f, &service_autoprovisioning, method, req, resp_desc, resp, err);
}

/* The gRPC status of a call answered with no response kept. */
static grpc_status_code status_of(fx_t *f, const char *method, const ProtobufCMessage *req,
                                  frugal_err_t *err) {
    return frugal_err_status(call(f, method, req, NULL, NULL, err));
}

static size_t groups_count(fx_t *f) {
    cluster_read_lock(f->cluster);
    size_t n = cluster_groups_count(f->cluster);
    cluster_read_unlock(f->cluster);
    return n;
}

/* ------------------------------------------------------------------------------------
 * NewNodeGroup requests
 * ---------------------------------------------------------------------------------- */

#define NGR_MAX 8

typedef struct ngr {
    AP(NewNodeGroupRequest) req;
    AP(NewNodeGroupRequest__LabelsEntry) labels[NGR_MAX];
    AP(NewNodeGroupRequest__LabelsEntry) * label_ptrs[NGR_MAX];
    AP(NewNodeGroupRequest__SystemLabelsEntry) system[NGR_MAX];
    AP(NewNodeGroupRequest__SystemLabelsEntry) * system_ptrs[NGR_MAX];
    AP(Taint) taints[NGR_MAX];
    AP(Taint) * taint_ptrs[NGR_MAX];
    AP(NewNodeGroupRequest__ExtraResourcesEntry) extra[NGR_MAX];
    AP(NewNodeGroupRequest__ExtraResourcesEntry) * extra_ptrs[NGR_MAX];
} ngr_t;

static void ngr_init(ngr_t *r, const char *machine_type) {
    AP(NewNodeGroupRequest) init = AP_INIT(NEW_NODE_GROUP_REQUEST);
    memset(r, 0, sizeof(*r));
    r->req = init;
    r->req.machine_type = (char *)machine_type;
    r->req.labels = r->label_ptrs;
    r->req.system_labels = r->system_ptrs;
    r->req.taints = r->taint_ptrs;
    r->req.extra_resources = r->extra_ptrs;
}

static void ngr_label(ngr_t *r, const char *key, const char *value) {
    AP(NewNodeGroupRequest__LabelsEntry) e = AP_INIT(NEW_NODE_GROUP_REQUEST__LABELS_ENTRY);
    e.key = (char *)key;
    e.value = (char *)value;
    r->labels[r->req.n_labels] = e;
    r->label_ptrs[r->req.n_labels] = &r->labels[r->req.n_labels];
    r->req.n_labels++;
}

static void ngr_system_label(ngr_t *r, const char *key, const char *value) {
    AP(NewNodeGroupRequest__SystemLabelsEntry)
    e = AP_INIT(NEW_NODE_GROUP_REQUEST__SYSTEM_LABELS_ENTRY);
    e.key = (char *)key;
    e.value = (char *)value;
    r->system[r->req.n_system_labels] = e;
    r->system_ptrs[r->req.n_system_labels] = &r->system[r->req.n_system_labels];
    r->req.n_system_labels++;
}

static void ngr_taint(ngr_t *r, const char *key, const char *value, const char *effect) {
    AP(Taint) t = AP_INIT(TAINT);
    t.key = (char *)key;
    t.value = (char *)value;
    t.effect = (char *)effect;
    r->taints[r->req.n_taints] = t;
    r->taint_ptrs[r->req.n_taints] = &r->taints[r->req.n_taints];
    r->req.n_taints++;
}

static void ngr_extra(ngr_t *r, const char *key, const char *value) {
    AP(NewNodeGroupRequest__ExtraResourcesEntry)
    e = AP_INIT(NEW_NODE_GROUP_REQUEST__EXTRA_RESOURCES_ENTRY);
    e.key = (char *)key;
    e.value = (char *)value;
    r->extra[r->req.n_extra_resources] = e;
    r->extra_ptrs[r->req.n_extra_resources] = &r->extra[r->req.n_extra_resources];
    r->req.n_extra_resources++;
}

static int new_node_group(fx_t *f, ngr_t *r, AP(NewNodeGroupResponse) * *resp, frugal_err_t *err) {
    return call(f, "NewNodeGroup", &r->req.base, AP_DESC(new_node_group_response),
                (ProtobufCMessage **)resp, err);
}

/* A NewNodeGroup that must be refused as INVALID_ARGUMENT, adding no group; the message
 * must contain want. */
static void expect_invalid(fx_t *f, ngr_t *r, const char *want) {
    frugal_err_t err;
    size_t before = groups_count(f);
    assert_int_equal(frugal_err_status(new_node_group(f, r, NULL, &err)),
                     GRPC_STATUS_INVALID_ARGUMENT);
    if (strstr(err.msg, want) == NULL)
        fail_msg("want \"%s\" in \"%s\"", want, err.msg);
    assert_int_equal(groups_count(f), before);
}

static const char *info_label(const AP(GroupInfo) * g, const char *key) {
    for (size_t i = 0; i < g->n_labels; i++)
        if (strcmp(g->labels[i]->key, key) == 0)
            return g->labels[i]->value;
    return NULL;
}

/* The GroupInfo of id through NodeGroupInfo (caller frees *resp), or the status. */
static int group_info(fx_t *f, const char *id, AP(NodeGroupInfoResponse) * *resp,
                      frugal_err_t *err) {
    AP(NodeGroupInfoRequest) req = AP_INIT(NODE_GROUP_INFO_REQUEST);
    req.id = (char *)id;
    return call(f, "NodeGroupInfo", &req.base, AP_DESC(node_group_info_response),
                (ProtobufCMessage **)resp, err);
}

/* ------------------------------------------------------------------------------------
 * Tests
 * ---------------------------------------------------------------------------------- */

static void test_machine_types(void **state) {
    fx_t *f = *state;
    frugal_err_t err;
    AP(GetAvailableMachineTypesRequest) req = AP_INIT(GET_AVAILABLE_MACHINE_TYPES_REQUEST);
    AP(GetAvailableMachineTypesResponse) * resp;
    assert_int_equal(call(f, "GetAvailableMachineTypes", &req.base,
                          AP_DESC(get_available_machine_types_response), (ProtobufCMessage **)&resp,
                          &err),
                     0);
    /* The allowed types, in the config's order. */
    assert_int_equal(resp->n_machine_types, 3);
    assert_string_equal(resp->machine_types[0]->name, "n1-standard-1");
    assert_int_equal(resp->machine_types[0]->cpu_milli, 1000);
    assert_int_equal(resp->machine_types[0]->gpu, 0);
    assert_string_equal(resp->machine_types[0]->gpu_type, "");
    assert_true(resp->machine_types[0]->price > 0);
    assert_string_equal(resp->machine_types[1]->name, "n1-standard-4");
    assert_int_equal(resp->machine_types[1]->cpu_milli, 4000);
    assert_string_equal(resp->machine_types[2]->name, "t4-4");
    assert_int_equal(resp->machine_types[2]->memory_bytes, 15LL << 30);
    assert_int_equal(resp->machine_types[2]->gpu, 1);
    assert_string_equal(resp->machine_types[2]->gpu_type, "nvidia-tesla-t4");
    assert_true(resp->machine_types[2]->price > resp->machine_types[1]->price);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
}

static void test_resource_limiter(void **state) {
    fx_t *f = *state;
    frugal_err_t err;
    AP(GetResourceLimiterRequest) req = AP_INIT(GET_RESOURCE_LIMITER_REQUEST);
    AP(GetResourceLimiterResponse) * resp;
    assert_int_equal(call(f, "GetResourceLimiter", &req.base,
                          AP_DESC(get_resource_limiter_response), (ProtobufCMessage **)&resp, &err),
                     0);
    assert_int_equal(resp->n_limits, 2);
    assert_string_equal(resp->limits[0]->resource, "cpu");
    assert_int_equal(resp->limits[0]->min, 0);
    assert_int_equal(resp->limits[0]->max, 32);
    assert_string_equal(resp->limits[1]->resource, "memory");
    assert_int_equal(resp->limits[1]->min, 0);
    assert_int_equal(resp->limits[1]->max, INT64_MAX); /* no memory limit */
    protobuf_c_message_free_unpacked(&resp->base, NULL);
}

/* A new shape: a theoretical group with every label and the taints in taint_compare
 * order (key, value, effect), its template, and the same request again is the same
 * group. */
static void test_new_node_group(void **state) {
    fx_t *f = *state;
    frugal_err_t err;
    size_t before = groups_count(f);
    ngr_t r;
    ngr_init(&r, "n1-standard-4");
    ngr_label(&r, "team", "ml");
    ngr_system_label(&r, "frugal.io/pool", "ml");
    ngr_taint(&r, "dedicated", "ml", "NoSchedule");
    ngr_taint(&r, "dedicated", "zz", "NoExecute");
    ngr_taint(&r, "a", "", "PreferNoSchedule");
    AP(NewNodeGroupResponse) * resp;
    assert_int_equal(new_node_group(f, &r, &resp, &err), 0);
    const AP(GroupInfo) *g = resp->group;
    assert_non_null(g);
    assert_int_equal(strncmp(g->id, "nap-n1-standard-4-" ZONE_A "-", 32), 0);
    assert_int_equal(strlen(g->id), 32 + 8);
    assert_false(g->exists);
    assert_true(g->autoprovisioned);
    assert_string_equal(g->machine_type, "n1-standard-4");
    assert_string_equal(g->zone, ZONE_A); /* the first allowed zone */
    assert_int_equal(g->n_labels, 2);
    assert_string_equal(info_label(g, "team"), "ml");
    assert_string_equal(info_label(g, "frugal.io/pool"), "ml");
    assert_int_equal(g->n_taints, 3);
    assert_string_equal(g->taints[0]->key, "a");
    assert_string_equal(g->taints[1]->value, "ml");
    assert_string_equal(g->taints[1]->effect, "NoSchedule");
    assert_string_equal(g->taints[2]->value, "zz");
    assert_string_equal(g->taints[2]->effect, "NoExecute");
    assert_int_equal(g->min_size, 0);
    /* 32 cores, 4 used by main: room for 7 nodes of 4 cores. */
    assert_int_equal(g->max_size, 7);
    assert_int_equal(g->target_size, 0);
    assert_int_equal(groups_count(f), before + 1);

    k8s_node_t *node = k8s__io__api__core__v1__node__unpack(NULL, resp->template_node.len,
                                                            resp->template_node.data);
    assert_non_null(node);
    bool team = false, zone = false;
    for (size_t i = 0; i < node->metadata->n_labels; i++) {
        team = team || (strcmp(node->metadata->labels[i]->key, "team") == 0 &&
                        strcmp(node->metadata->labels[i]->value, "ml") == 0);
        zone = zone || (strcmp(node->metadata->labels[i]->key, K8S_LABEL_ZONE) == 0 &&
                        strcmp(node->metadata->labels[i]->value, ZONE_A) == 0);
    }
    assert_true(team && zone);
    assert_int_equal(node->spec->n_taints, 3);
    k8s__io__api__core__v1__node__free_unpacked(node, NULL);

    /* The same shape, taints in another order: the same group, nothing added. */
    char *id = strdup(g->id);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    ngr_init(&r, "n1-standard-4");
    ngr_taint(&r, "a", "", "PreferNoSchedule");
    ngr_taint(&r, "dedicated", "ml", "NoSchedule");
    ngr_taint(&r, "dedicated", "zz", "NoExecute");
    ngr_system_label(&r, "frugal.io/pool", "ml");
    ngr_label(&r, "team", "ml");
    assert_int_equal(new_node_group(f, &r, &resp, &err), 0);
    assert_string_equal(resp->group->id, id);
    assert_int_equal(groups_count(f), before + 1);
    protobuf_c_message_free_unpacked(&resp->base, NULL);

    /* A zone asked for, and extra resources: another shape. */
    ngr_init(&r, "t4-4");
    r.req.zone = ZONE_B;
    ngr_extra(&r, "example.com/fpga", "2");
    assert_int_equal(new_node_group(f, &r, &resp, &err), 0);
    assert_int_equal(strncmp(resp->group->id, "nap-t4-4-" ZONE_B "-", 23), 0);
    assert_string_equal(resp->group->zone, ZONE_B);
    assert_int_equal(groups_count(f), before + 2);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    free(id);
}

/* Every refusal of NewNodeGroup: INVALID_ARGUMENT naming the problem, nothing added. The
 * names are held to the rules the config holds its own to. */
static void test_new_node_group_refusals(void **state) {
    fx_t *f = *state;
    ngr_t r;
    char long_name[80], key[160];
    memset(long_name, 'a', 64);
    long_name[64] = '\0';

    ngr_init(&r, "");
    expect_invalid(f, &r, "machine_type is required");
    ngr_init(&r, "no-such-type");
    expect_invalid(f, &r, "unknown machine type");
    ngr_init(&r, "n1-standard-2"); /* in the catalog, not allowed */
    expect_invalid(f, &r, "not allowed for autoprovisioning");
    ngr_init(&r, "n1-standard-1");
    r.req.zone = "europe-west1-b";
    expect_invalid(f, &r, "zone europe-west1-b is not allowed");

    /* Label keys: a 64-character name, and a 64-character DNS label in the prefix
     * (which the config refuses too). */
    ngr_init(&r, "n1-standard-1");
    ngr_label(&r, long_name, "x");
    expect_invalid(f, &r, "labels: invalid label key");
    snprintf(key, sizeof(key), "%s.example.com/team", long_name);
    ngr_init(&r, "n1-standard-1");
    ngr_label(&r, key, "x");
    expect_invalid(f, &r, "labels: invalid label key");
    ngr_init(&r, "n1-standard-1");
    ngr_label(&r, "-bad", "x");
    expect_invalid(f, &r, "labels: invalid label key \"-bad\"");
    ngr_init(&r, "n1-standard-1");
    ngr_system_label(&r, "Example.com/x", "x");
    expect_invalid(f, &r, "system_labels: invalid label key");
    ngr_init(&r, "n1-standard-1");
    ngr_label(&r, "team", "bad value");
    expect_invalid(f, &r, "labels: invalid label value \"bad value\" for key team");
    ngr_init(&r, "n1-standard-1");
    ngr_label(&r, "team", long_name);
    expect_invalid(f, &r, "for key team");

    /* Labels the template sets itself, the GPU label included. */
    ngr_init(&r, "n1-standard-1");
    ngr_label(&r, K8S_LABEL_INSTANCE_TYPE, "n1-standard-96");
    expect_invalid(f, &r, "is set by frugal");
    ngr_init(&r, "n1-standard-1");
    ngr_system_label(&r, K8S_LABEL_ZONE, ZONE_B);
    expect_invalid(f, &r, "is set by frugal");
    ngr_init(&r, "n1-standard-1");
    ngr_label(&r, FRUGAL_GPU_LABEL, "nvidia-tesla-t4");
    expect_invalid(f, &r, "is set by frugal");
    ngr_init(&r, "n1-standard-1");
    ngr_label(&r, K8S_LABEL_HOSTNAME, "node-1");
    expect_invalid(f, &r, "is set by frugal");
    ngr_init(&r, "n1-standard-1");
    ngr_label(&r, FRUGAL_LABEL_NODE_GROUP, "web-a");
    expect_invalid(f, &r, "labels: label frugal.io/node-group names a node's group");

    ngr_init(&r, "n1-standard-1");
    ngr_label(&r, "team", "a");
    ngr_system_label(&r, "team", "b");
    expect_invalid(f, &r, "system_labels: label team given twice");

    /* Taints. */
    ngr_init(&r, "n1-standard-1");
    ngr_taint(&r, "bad key", "x", "NoSchedule");
    expect_invalid(f, &r, "taints[0]: invalid taint key");
    ngr_init(&r, "n1-standard-1");
    ngr_taint(&r, long_name, "x", "NoSchedule");
    expect_invalid(f, &r, "taints[0]: invalid taint key");
    ngr_init(&r, "n1-standard-1");
    ngr_taint(&r, "dedicated", "-x", "NoSchedule");
    expect_invalid(f, &r, "taints[0]: invalid taint value");
    ngr_init(&r, "n1-standard-1");
    ngr_taint(&r, "dedicated", "x", "NoSchedule");
    ngr_taint(&r, "dedicated", "y", "Sometimes");
    expect_invalid(f, &r, "taints[1]: invalid taint effect \"Sometimes\"");
    /* One taint per key and effect, whatever the values. */
    ngr_init(&r, "n1-standard-1");
    ngr_taint(&r, "dedicated", "x", "NoSchedule");
    ngr_taint(&r, "dedicated", "y", "NoSchedule");
    expect_invalid(f, &r, "taints[1]: taint dedicated:NoSchedule given twice");

    /* Extra resources. */
    ngr_init(&r, "n1-standard-1");
    ngr_extra(&r, "bad name", "1");
    expect_invalid(f, &r, "invalid resource name");
    ngr_init(&r, "n1-standard-1");
    ngr_extra(&r, "example.com/fpga", "lots");
    expect_invalid(f, &r, "invalid quantity \"lots\"");
    ngr_init(&r, "n1-standard-1");
    ngr_extra(&r, "example.com/fpga", "-1");
    expect_invalid(f, &r, "invalid quantity");
}

/* NodeGroupCreate and NodeGroupDelete through a group's life, and their refusals. */
static void test_create_and_delete(void **state) {
    fx_t *f = *state;
    frugal_err_t err;
    ngr_t r;
    ngr_init(&r, "n1-standard-1");
    ngr_label(&r, "team", "tmp");
    AP(NewNodeGroupResponse) * made;
    assert_int_equal(new_node_group(f, &r, &made, &err), 0);
    char *id = strdup(made->group->id);
    protobuf_c_message_free_unpacked(&made->base, NULL);
    size_t before = groups_count(f);

    AP(NodeGroupCreateRequest) create = AP_INIT(NODE_GROUP_CREATE_REQUEST);
    AP(NodeGroupCreateResponse) * created;
    create.id = id;
    assert_int_equal(call(f, "NodeGroupCreate", &create.base, AP_DESC(node_group_create_response),
                          (ProtobufCMessage **)&created, &err),
                     0);
    assert_string_equal(created->group->id, id);
    assert_true(created->group->exists);
    assert_true(created->group->autoprovisioned);
    assert_string_equal(info_label(created->group, "team"), "tmp");
    protobuf_c_message_free_unpacked(&created->base, NULL);
    assert_int_equal(status_of(f, "NodeGroupCreate", &create.base, &err),
                     GRPC_STATUS_ALREADY_EXISTS);
    create.id = "nope";
    assert_int_equal(status_of(f, "NodeGroupCreate", &create.base, &err), GRPC_STATUS_NOT_FOUND);
    create.id = "pool-a";
    assert_int_equal(status_of(f, "NodeGroupCreate", &create.base, &err),
                     GRPC_STATUS_FAILED_PRECONDITION);

    /* A second one exists: max_node_groups (2) is reached for a third. */
    create.id = "nap-n1-standard-1-" ZONE_A;
    assert_int_equal(status_of(f, "NodeGroupCreate", &create.base, &err), 0);
    create.id = "nap-n1-standard-4-" ZONE_B;
    assert_int_equal(status_of(f, "NodeGroupCreate", &create.base, &err),
                     GRPC_STATUS_RESOURCE_EXHAUSTED);
    assert_non_null(strstr(err.msg, "max_node_groups"));
    AP(NodeGroupInfoResponse) * info;
    assert_int_equal(group_info(f, "nap-n1-standard-4-" ZONE_B, &info, &err), 0);
    assert_false(info->group->exists);
    assert_int_equal(info->group->max_size, 0); /* no more groups may exist */
    protobuf_c_message_free_unpacked(&info->base, NULL);

    /* Delete refusals: not empty, configured, unknown, a theoretical group of the config. */
    AP(NodeGroupDeleteRequest) del = AP_INIT(NODE_GROUP_DELETE_REQUEST);
    assert_int_equal(cluster_increase_size(f->cluster, NULL, "nap-n1-standard-1-" ZONE_A, 1, &err),
                     0);
    del.id = "nap-n1-standard-1-" ZONE_A;
    assert_int_equal(status_of(f, "NodeGroupDelete", &del.base, &err),
                     GRPC_STATUS_FAILED_PRECONDITION);
    assert_non_null(strstr(err.msg, "not empty"));
    del.id = "pool-a";
    assert_int_equal(status_of(f, "NodeGroupDelete", &del.base, &err),
                     GRPC_STATUS_FAILED_PRECONDITION);
    del.id = "nope";
    assert_int_equal(status_of(f, "NodeGroupDelete", &del.base, &err), GRPC_STATUS_NOT_FOUND);
    del.id = "nap-n1-standard-4-" ZONE_B;
    assert_int_equal(status_of(f, "NodeGroupDelete", &del.base, &err),
                     GRPC_STATUS_FAILED_PRECONDITION);
    assert_int_equal(groups_count(f), before);

    /* The empty group of NewNodeGroup's shape: deleted and forgotten. */
    del.id = id;
    AP(NodeGroupDeleteResponse) * deleted;
    assert_int_equal(call(f, "NodeGroupDelete", &del.base, AP_DESC(node_group_delete_response),
                          (ProtobufCMessage **)&deleted, &err),
                     0);
    protobuf_c_message_free_unpacked(&deleted->base, NULL);
    assert_int_equal(groups_count(f), before - 1);
    assert_int_equal(frugal_err_status(group_info(f, id, NULL, &err)), GRPC_STATUS_NOT_FOUND);
    free(id);
}

static void test_node_group_info(void **state) {
    fx_t *f = *state;
    frugal_err_t err;
    AP(NodeGroupInfoResponse) * resp;
    assert_int_equal(group_info(f, "pool-a", &resp, &err), 0);
    const AP(GroupInfo) *g = resp->group;
    assert_string_equal(g->id, "pool-a");
    assert_true(g->exists);
    assert_false(g->autoprovisioned);
    assert_string_equal(g->machine_type, "n1-standard-2");
    assert_string_equal(g->zone, ZONE_A);
    assert_string_equal(info_label(g, "team"), "web");
    assert_int_equal(g->n_taints, 1);
    assert_string_equal(g->taints[0]->key, "dedicated");
    assert_string_equal(g->taints[0]->value, "web");
    assert_string_equal(g->taints[0]->effect, "NoSchedule");
    assert_int_equal(g->max_size, 5); /* under what the limits allow */
    protobuf_c_message_free_unpacked(&resp->base, NULL);

    /* A theoretical group of the config's label sets. */
    assert_int_equal(group_info(f, "nap-n1-standard-4-" ZONE_A, &resp, &err), 0);
    assert_false(resp->group->exists);
    assert_true(resp->group->autoprovisioned);
    assert_int_equal(resp->group->n_labels, 0);
    assert_int_equal(resp->group->max_size, 7);
    protobuf_c_message_free_unpacked(&resp->base, NULL);

    assert_int_equal(frugal_err_status(group_info(f, "nope", NULL, &err)), GRPC_STATUS_NOT_FOUND);
    assert_int_equal(frugal_err_status(group_info(f, "", NULL, &err)), GRPC_STATUS_NOT_FOUND);
}

/* ------------------------------------------------------------------------------------
 * ProposeNodeGroups
 * ---------------------------------------------------------------------------------- */

typedef K8s__Io__Api__Core__V1__PodSpec__NodeSelectorEntry sel_entry_t;
typedef K8s__Io__Api__Core__V1__ResourceRequirements__RequestsEntry req_entry_t;

/* A packed v1.Pod default/name requesting cpu, with at most one nodeSelector pin
 * (key NULL: none). */
static ProtobufCBinaryData pack_pod(const char *name, const char *cpu, const char *key,
                                    const char *value) {
    k8s_quantity_t q = K8S__IO__APIMACHINERY__PKG__API__RESOURCE__QUANTITY__INIT;
    q.string = (char *)cpu;
    req_entry_t rq = K8S__IO__API__CORE__V1__RESOURCE_REQUIREMENTS__REQUESTS_ENTRY__INIT;
    rq.key = "cpu";
    rq.value = &q;
    req_entry_t *rqs[1] = {&rq};
    k8s_resource_requirements_t rr = K8S__IO__API__CORE__V1__RESOURCE_REQUIREMENTS__INIT;
    rr.n_requests = 1;
    rr.requests = rqs;
    k8s_container_t ct = K8S__IO__API__CORE__V1__CONTAINER__INIT;
    ct.name = "main";
    ct.resources = &rr;
    k8s_container_t *cts[1] = {&ct};
    sel_entry_t sel = K8S__IO__API__CORE__V1__POD_SPEC__NODE_SELECTOR_ENTRY__INIT;
    sel.key = (char *)key;
    sel.value = (char *)value;
    sel_entry_t *sels[1] = {&sel};
    k8s_pod_spec_t spec = K8S__IO__API__CORE__V1__POD_SPEC__INIT;
    spec.n_containers = 1;
    spec.containers = cts;
    spec.n_nodeselector = key != NULL ? 1 : 0;
    spec.nodeselector = sels;
    k8s_object_meta_t meta = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__INIT;
    meta.name = (char *)name;
    meta.namespace_ = "default";
    k8s_pod_t pod = K8S__IO__API__CORE__V1__POD__INIT;
    pod.metadata = &meta;
    pod.spec = &spec;
    ProtobufCBinaryData out;
    out.len = k8s__io__api__core__v1__pod__get_packed_size(&pod);
    out.data = malloc(out.len);
    assert_non_null(out.data);
    k8s__io__api__core__v1__pod__pack(&pod, out.data);
    return out;
}

static const AP(Proposal) * serving(const AP(ProposeNodeGroupsResponse) * resp, const char *pod) {
    for (size_t i = 0; i < resp->n_proposals; i++)
        for (size_t j = 0; j < resp->proposals[i]->n_pods; j++)
            if (strcmp(resp->proposals[i]->pods[j], pod) == 0)
                return resp->proposals[i];
    return NULL;
}

static bool unschedulable(const AP(ProposeNodeGroupsResponse) * resp, const char *pod) {
    for (size_t i = 0; i < resp->n_unschedulable_pods; i++)
        if (strcmp(resp->unschedulable_pods[i], pod) == 0)
            return true;
    return false;
}

static void test_propose(void **state) {
    fx_t *f = *state;
    frugal_err_t err;
    ProtobufCBinaryData pods[5] = {
        pack_pod("ssd", "500m", "disktype", "ssd"),
        pack_pod("gpu", "1", FRUGAL_GPU_LABEL, "nvidia-tesla-t4"),
        pack_pod("huge", "64", NULL, NULL),
        pack_pod("bad-key", "1", "-bad", "x"),
        pack_pod("bad-value", "1", "team", "two words"),
    };
    AP(ProposeNodeGroupsRequest) req = AP_INIT(PROPOSE_NODE_GROUPS_REQUEST);
    req.n_pods = 5;
    req.pods = pods;
    AP(ProposeNodeGroupsResponse) * resp;
    /* demand-fit (the default) remembers the pods, each once however often CA asks. */
    demand_memory_t *memory = malloc(sizeof(*memory));
    assert_non_null(memory);
    demand_init(memory);
    f->ctx.demand = memory;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(call(f, "ProposeNodeGroups", &req.base,
                              AP_DESC(propose_node_groups_response), (ProtobufCMessage **)&resp,
                              &err),
                         0);
        if (i == 0)
            protobuf_c_message_free_unpacked(&resp->base, NULL);
    }
    f->ctx.demand = NULL;
    demand_summary_t recent;
    demand_summarize(memory, &recent);
    free(memory);
    assert_int_equal(recent.pods, 5);
    const AP(Proposal) *ssd = serving(resp, "default/ssd");
    assert_non_null(ssd);
    assert_int_equal(ssd->n_labels, 1);
    assert_string_equal(ssd->labels[0]->key, "disktype");
    assert_string_equal(ssd->labels[0]->value, "ssd");
    assert_int_equal(ssd->node_count, 1);
    /* The GPU label picks the GPU type and stays out of the label set (the template sets
     * it), like every reserved label. */
    const AP(Proposal) *gpu = serving(resp, "default/gpu");
    assert_non_null(gpu);
    assert_string_equal(gpu->machine_type, "t4-4");
    for (size_t i = 0; i < resp->n_proposals; i++)
        for (size_t j = 0; j < resp->proposals[i]->n_labels; j++)
            assert_false(k8s_name_is_reserved_label(resp->proposals[i]->labels[j]->key));
    /* Too big for every type; selectors no node label can match. */
    assert_true(unschedulable(resp, "default/huge"));
    assert_true(unschedulable(resp, "default/bad-key"));
    assert_true(unschedulable(resp, "default/bad-value"));
    assert_int_equal(resp->n_unschedulable_pods, 3);
    for (size_t i = 1; i < resp->n_proposals; i++)
        assert_true(resp->proposals[i - 1]->score <= resp->proposals[i]->score);
    protobuf_c_message_free_unpacked(&resp->base, NULL);

    /* A pod that is not a v1.Pod. */
    static uint8_t junk[] = {0xff, 0xff, 0xff};
    ProtobufCBinaryData bad[2] = {pods[0], {sizeof(junk), junk}};
    req.n_pods = 2;
    req.pods = bad;
    assert_int_equal(status_of(f, "ProposeNodeGroups", &req.base, &err),
                     GRPC_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(err.msg, "pods[1]"));
    for (size_t i = 0; i < 5; i++)
        free(pods[i].data);
}

static void test_garbage_is_invalid_argument(void **state) {
    fx_t *f = *state;
    size_t before = groups_count(f);
    svc_expect_garbage_refused(f, &service_autoprovisioning);
    assert_int_equal(groups_count(f), before);
}

/* Without autoprovisioning the mutations are FAILED_PRECONDITION; the reads answer, with
 * the configured limits applied nowhere. */
static void test_disabled(void **state) {
    fx_t *f = *state;
    frugal_err_t err;
    ngr_t r;
    ngr_init(&r, "n1-standard-1");
    assert_int_equal(frugal_err_status(new_node_group(f, &r, NULL, &err)),
                     GRPC_STATUS_FAILED_PRECONDITION);
    assert_non_null(strstr(err.msg, "autoprovisioning is disabled"));
    AP(NodeGroupCreateRequest) create = AP_INIT(NODE_GROUP_CREATE_REQUEST);
    create.id = "pool-a";
    assert_int_equal(status_of(f, "NodeGroupCreate", &create.base, &err),
                     GRPC_STATUS_FAILED_PRECONDITION);
    AP(NodeGroupDeleteRequest) del = AP_INIT(NODE_GROUP_DELETE_REQUEST);
    del.id = "pool-a";
    assert_int_equal(status_of(f, "NodeGroupDelete", &del.base, &err),
                     GRPC_STATUS_FAILED_PRECONDITION);
    assert_int_equal(groups_count(f), 1);

    AP(NodeGroupInfoResponse) * info;
    assert_int_equal(group_info(f, "pool-a", &info, &err), 0);
    assert_int_equal(info->group->max_size, 5);
    protobuf_c_message_free_unpacked(&info->base, NULL);
    /* ... and the limits, which bound nothing, are none. */
    AP(GetResourceLimiterRequest) lreq = AP_INIT(GET_RESOURCE_LIMITER_REQUEST);
    AP(GetResourceLimiterResponse) * limits;
    assert_int_equal(call(f, "GetResourceLimiter", &lreq.base,
                          AP_DESC(get_resource_limiter_response), (ProtobufCMessage **)&limits,
                          &err),
                     0);
    assert_int_equal(limits->n_limits, 2);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(limits->limits[i]->min, 0);
        assert_int_equal(limits->limits[i]->max, INT64_MAX);
    }
    protobuf_c_message_free_unpacked(&limits->base, NULL);
}

int main(void) {
    grpc_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_machine_types, fx_setup, svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_resource_limiter, fx_setup, svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_new_node_group, fx_setup, svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_new_node_group_refusals, fx_setup, svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_create_and_delete, fx_setup, svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_node_group_info, fx_setup, svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_propose, fx_setup, svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_garbage_is_invalid_argument, fx_setup,
                                        svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_disabled, fx_setup_disabled, svc_fx_teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    grpc_shutdown();
    return failed;
}
