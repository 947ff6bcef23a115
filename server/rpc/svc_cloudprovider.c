/* clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider: converts requests,
 * calls the cluster, pricing and template modules, converts answers. Reads both wire
 * generations (current preferred) and writes both (docs/wire.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "cluster.h"
#include "cluster_nap.h"
#include "codec.h"
#include "externalgrpc.pb-c.h"
#include "k8s.h"
#include "log.h"
#include "pod.h"
#include "pricing.h"
#include "service.h"
#include "template.h"
#include "wire_names.h"

typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Time meta_time_t;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Duration meta_duration_t;

/* Template node names CA gives the nodes it simulates: template-node-for-<id>-<random>. */
#define CA_TEMPLATE_NAME_PREFIX "template-node-for-"
/* CA's own defaults, used only when the caller sent no defaults and the group has no
 * override: a zero duration would make every new node look failed. */
#define CA_DEFAULT_SCALE_DOWN_UNNEEDED_NS (10LL * 60 * 1000000000)
#define CA_DEFAULT_SCALE_DOWN_UNREADY_NS (20LL * 60 * 1000000000)
#define CA_DEFAULT_MAX_NODE_PROVISION_NS (15LL * 60 * 1000000000)
#define CA_DEFAULT_UTILIZATION_THRESHOLD 0.5

#define UNPACK(type, desc, request, out, err)                                                      \
    codec_unpack(EG_DESC(desc), request, (ProtobufCMessage **)(out), err)

/* Groups CA may see: managed ones. Unmanaged groups are only counted; TargetSize still
 * answers for them (the size frugal counts), for operators. */
static const group_t *find_visible_group(cluster_t *c, const char *id) {
    const group_t *g = cluster_find_group(c, id);
    return g != NULL && g->managed ? g : NULL;
}

static void fill_node_group(cluster_t *c, const group_t *g, EG(NodeGroup) * out, char *debug,
                            size_t size) {
    snprintf(debug, size, "machine_type=%s%s%s target=%d%s%s", g->spec.machine_type,
             g->spec.zone != NULL ? " zone=" : "", g->spec.zone != NULL ? g->spec.zone : "",
             g->target_size, g->autoprovisioned ? " autoprovisioned" : "",
             g->exists ? "" : " theoretical");
    out->id = g->spec.id;
    out->minsize = g->min_size;
    out->maxsize = cluster_nap_max_size(c, g); /* max_size cut by the NAP limits */
    out->debug = debug;
}

static int cp_node_groups(service_ctx_t *ctx, grpc_byte_buffer *request, gpr_timespec deadline,
                          grpc_byte_buffer **response, frugal_err_t *err) {
    EG(NodeGroupsRequest) * req;
    int rc = UNPACK(NodeGroupsRequest, node_groups_request, request, &req, err);
    if (rc != 0)
        return rc;
    codec_free(req);

    cluster_read_lock(ctx->cluster);
    size_t n = cluster_groups_count(ctx->cluster);
    EG(NodeGroup) *groups = calloc(n ? n : 1, sizeof(*groups));
    EG(NodeGroup) **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
    char(*debug)[192] = calloc(n ? n : 1, sizeof(*debug));
    if (groups == NULL || ptrs == NULL || debug == NULL) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto out;
    }
    EG(NodeGroupsResponse) resp = EG_INIT(NODE_GROUPS_RESPONSE);
    for (size_t i = 0; i < n; i++) {
        const group_t *g = cluster_group_at(ctx->cluster, i);
        if (!g->managed)
            continue;
        EG(NodeGroup) init = EG_INIT(NODE_GROUP);
        groups[resp.n_nodegroups] = init;
        fill_node_group(ctx->cluster, g, &groups[resp.n_nodegroups], debug[resp.n_nodegroups],
                        sizeof(debug[0]));
        ptrs[resp.n_nodegroups] = &groups[resp.n_nodegroups];
        resp.n_nodegroups++;
    }
    resp.nodegroups = ptrs;
    rc = codec_reply(&resp.base, response, err);
out:
    cluster_read_unlock(ctx->cluster);
    free(groups);
    free(ptrs);
    free(debug);
    return rc;
}

static const char *node_label(const EG(ExternalGrpcNode) * node, const char *key) {
    for (size_t i = 0; i < node->n_labels; i++)
        if (strcmp(node->labels[i]->key, key) == 0)
            return node->labels[i]->value;
    return NULL;
}

/* The group named by a CA template node: template-node-for-<id>-<random>, or our own
 * template-<id>. Ids may contain dashes, so candidate ids are tried from the longest
 * down, each an O(1) lookup: pricing calls come many times per loop. */
static const group_t *group_from_template_name(cluster_t *c, const char *name) {
    size_t ca_prefix = strlen(CA_TEMPLATE_NAME_PREFIX);
    if (strncmp(name, "template-", 9) != 0)
        return NULL;
    if (strncmp(name, CA_TEMPLATE_NAME_PREFIX, ca_prefix) != 0)
        return cluster_find_group(c, name + 9);
    char id[256];
    size_t len = strlen(name + ca_prefix);
    if (len >= sizeof(id))
        return NULL;
    memcpy(id, name + ca_prefix, len + 1);
    for (size_t k = len; k > 0; k--) {
        if (id[k - 1] != '-')
            continue;
        id[k - 1] = '\0';
        const group_t *g = cluster_find_group(c, id);
        if (g != NULL)
            return g;
    }
    return NULL;
}

/* The group a node belongs to (docs/wire.md), the one resolution of every handler: its
 * provider id (an instance of a group), then, when by_name (pricing: CA's template
 * nodes carry no provider id), its name as a template node's, then its
 * frugal.io/node-group label. NULL when none matches. Managed or not: the caller
 * decides. With the cluster's read lock held. */
static const group_t *resolve_node_group(cluster_t *c, const EG(ExternalGrpcNode) * node,
                                         bool by_name) {
    const group_t *g = NULL;
    if (node->providerid[0] != '\0')
        g = cluster_find_instance(c, node->providerid, NULL);
    if (g == NULL && by_name && node->name[0] != '\0')
        g = group_from_template_name(c, node->name);
    if (g == NULL) {
        const char *label = node_label(node, FRUGAL_LABEL_NODE_GROUP);
        if (label != NULL)
            g = cluster_find_group(c, label);
    }
    return g;
}

static int cp_node_group_for_node(service_ctx_t *ctx, grpc_byte_buffer *request,
                                  gpr_timespec deadline, grpc_byte_buffer **response,
                                  frugal_err_t *err) {
    EG(NodeGroupForNodeRequest) * req;
    int rc = UNPACK(NodeGroupForNodeRequest, node_group_for_node_request, request, &req, err);
    if (rc != 0)
        return rc;
    if (req->node == NULL) {
        codec_free(req);
        return frugal_err_set(err, FRUGAL_EINVAL, "node is missing");
    }
    EG(NodeGroup) group = EG_INIT(NODE_GROUP);
    EG(NodeGroupForNodeResponse) resp = EG_INIT(NODE_GROUP_FOR_NODE_RESPONSE);
    resp.nodegroup = &group;
    char debug[192];
    cluster_read_lock(ctx->cluster);
    const group_t *g = resolve_node_group(ctx->cluster, req->node, false);
    if (g != NULL && g->managed)
        fill_node_group(ctx->cluster, g, &group, debug, sizeof(debug));
    rc = codec_reply(&resp.base, response, err);
    cluster_read_unlock(ctx->cluster);
    codec_free(req);
    return rc;
}

/* Hours between two instants; EINVAL when a bound is missing or the period is inverted. */
static int period_hours(int have_start, int64_t start_s, int32_t start_ns, int have_end,
                        int64_t end_s, int32_t end_ns, double *hours, frugal_err_t *err) {
    if (!have_start || !have_end)
        return frugal_err_set(err, FRUGAL_EINVAL,
                              "pricing period missing: set startTimestamp and endTimestamp "
                              "(or the legacy startTime and endTime)");
    /* In double: int64 seconds at the extremes would overflow a subtraction. */
    double seconds = ((double)end_s - (double)start_s) + ((double)end_ns - (double)start_ns) / 1e9;
    if (seconds < 0)
        return frugal_err_set(err, FRUGAL_EINVAL,
                              "pricing period inverted: end is %.3f s before start", -seconds);
    *hours = seconds / 3600.0;
    return 0;
}

/* The period of a pricing request: the current Timestamp fields when either is set,
 * else the legacy meta.v1.Time ones. */
static int request_hours(const Google__Protobuf__Timestamp *start,
                         const Google__Protobuf__Timestamp *end, const meta_time_t *legacy_start,
                         const meta_time_t *legacy_end, double *hours, frugal_err_t *err) {
    if (start != NULL || end != NULL)
        return period_hours(start != NULL, start ? start->seconds : 0, start ? start->nanos : 0,
                            end != NULL, end ? end->seconds : 0, end ? end->nanos : 0, hours, err);
    return period_hours(legacy_start != NULL, legacy_start ? legacy_start->seconds : 0,
                        legacy_start ? legacy_start->nanos : 0, legacy_end != NULL,
                        legacy_end ? legacy_end->seconds : 0, legacy_end ? legacy_end->nanos : 0,
                        hours, err);
}

static int node_hourly_price(service_ctx_t *ctx, const EG(ExternalGrpcNode) * node, double *price,
                             frugal_err_t *err) {
    const frugal_config_t *cfg = ctx->cfg;
    cluster_read_lock(ctx->cluster);
    const group_t *g = resolve_node_group(ctx->cluster, node, true);
    double p = g != NULL ? pricing_group_node_price(cfg, &g->spec) : -1;
    cluster_read_unlock(ctx->cluster);
    if (p < 0) {
        const char *type = node_label(node, K8S_LABEL_INSTANCE_TYPE);
        const machine_type_t *mt = type != NULL ? config_find_machine_type(cfg, type) : NULL;
        if (mt != NULL)
            p = pricing_machine_price(cfg, mt, false, -1);
    }
    if (p < 0)
        return frugal_err_set(err, FRUGAL_ENOTFOUND,
                              "cannot price node \"%s\" (provider id \"%s\"): no group matches its "
                              "provider id, name or %s label, and its %s label is not a known "
                              "machine type",
                              node->name, node->providerid, FRUGAL_LABEL_NODE_GROUP,
                              K8S_LABEL_INSTANCE_TYPE);
    *price = p;
    return 0;
}

static int cp_pricing_node_price(service_ctx_t *ctx, grpc_byte_buffer *request,
                                 gpr_timespec deadline, grpc_byte_buffer **response,
                                 frugal_err_t *err) {
    EG(PricingNodePriceRequest) * req;
    int rc = UNPACK(PricingNodePriceRequest, pricing_node_price_request, request, &req, err);
    if (rc != 0)
        return rc;
    double hours = 0, hourly = 0;
    if (req->node == NULL)
        rc = frugal_err_set(err, FRUGAL_EINVAL, "node is missing");
    if (rc == 0)
        rc = request_hours(req->starttimestamp, req->endtimestamp, req->starttime, req->endtime,
                           &hours, err);
    if (rc == 0)
        rc = node_hourly_price(ctx, req->node, &hourly, err);
    if (rc == 0) {
        EG(PricingNodePriceResponse) resp = EG_INIT(PRICING_NODE_PRICE_RESPONSE);
        resp.price = hourly * hours;
        rc = codec_reply(&resp.base, response, err);
    }
    codec_free(req);
    return rc;
}

static int cp_pricing_pod_price(service_ctx_t *ctx, grpc_byte_buffer *request,
                                gpr_timespec deadline, grpc_byte_buffer **response,
                                frugal_err_t *err) {
    EG(PricingPodPriceRequest) * req;
    int rc = UNPACK(PricingPodPriceRequest, pricing_pod_price_request, request, &req, err);
    if (rc != 0)
        return rc;
    double hours = 0;
    resources_t r;
    /* The current pod_bytes wins over the legacy embedded pod when both are present. */
    const ProtobufCBinaryData *pod = req->pod_bytes.len > 0 ? &req->pod_bytes : &req->pod;
    if (pod->len == 0)
        rc = frugal_err_set(err, FRUGAL_EINVAL, "pod is missing (neither pod_bytes nor pod set)");
    if (rc == 0)
        rc = request_hours(req->starttimestamp, req->endtimestamp, req->starttime, req->endtime,
                           &hours, err);
    if (rc == 0)
        rc = pod_decode_request(pod->data, pod->len, &r, err);
    if (rc == 0) {
        EG(PricingPodPriceResponse) resp = EG_INIT(PRICING_POD_PRICE_RESPONSE);
        resp.price = pricing_linear(&ctx->cfg->pricing, &r) * hours;
        rc = codec_reply(&resp.base, response, err);
    }
    codec_free(req);
    return rc;
}

static int cp_gpu_label(service_ctx_t *ctx, grpc_byte_buffer *request, gpr_timespec deadline,
                        grpc_byte_buffer **response, frugal_err_t *err) {
    EG(GPULabelRequest) * req;
    int rc = UNPACK(GPULabelRequest, gpulabel_request, request, &req, err);
    if (rc != 0)
        return rc;
    codec_free(req);
    EG(GPULabelResponse) resp = EG_INIT(GPULABEL_RESPONSE);
    resp.label = (char *)FRUGAL_GPU_LABEL;
    return codec_reply(&resp.base, response, err);
}

static bool name_listed(char **names, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

/* GPU types: the builtin catalog's (when in use) and those of configured machine types. */
static int cp_get_available_gpu_types(service_ctx_t *ctx, grpc_byte_buffer *request,
                                      gpr_timespec deadline, grpc_byte_buffer **response,
                                      frugal_err_t *err) {
    EG(GetAvailableGPUTypesRequest) * req;
    int rc =
        UNPACK(GetAvailableGPUTypesRequest, get_available_gputypes_request, request, &req, err);
    if (rc != 0)
        return rc;
    codec_free(req);
    const frugal_config_t *cfg = ctx->cfg;
    size_t n = cfg->machine_types_count + (cfg->pricing.builtin_catalog ? catalog_gpus_count : 0);
    typedef EG(GetAvailableGPUTypesResponse__GpuTypesEntry) entry_t;
    entry_t *entries = calloc(n ? n : 1, sizeof(*entries));
    entry_t **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
    char **names = calloc(n ? n : 1, sizeof(*names));
    Google__Protobuf__Any *anys = calloc(n ? n : 1, sizeof(*anys));
    if (entries == NULL || ptrs == NULL || names == NULL || anys == NULL) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto out;
    }
    EG(GetAvailableGPUTypesResponse) resp = EG_INIT(GET_AVAILABLE_GPUTYPES_RESPONSE);
    for (size_t i = 0; i < n; i++) {
        const char *gpu_type;
        if (i < cfg->machine_types_count)
            gpu_type = cfg->machine_types[i].gpu > 0 ? cfg->machine_types[i].gpu_type : NULL;
        else
            gpu_type = catalog_gpus[i - cfg->machine_types_count].name;
        if (gpu_type == NULL || name_listed(names, resp.n_gputypes, gpu_type))
            continue;
        entry_t init = EG_INIT(GET_AVAILABLE_GPUTYPES_RESPONSE__GPU_TYPES_ENTRY);
        Google__Protobuf__Any any = GOOGLE__PROTOBUF__ANY__INIT;
        size_t k = resp.n_gputypes++;
        entries[k] = init;
        anys[k] = any;
        names[k] = (char *)gpu_type;
        entries[k].key = (char *)gpu_type;
        entries[k].value = &anys[k];
        ptrs[k] = &entries[k];
    }
    resp.gputypes = ptrs;
    rc = codec_reply(&resp.base, response, err);
out:
    free(entries);
    free(ptrs);
    free(names);
    free(anys);
    return rc;
}

static int cp_cleanup(service_ctx_t *ctx, grpc_byte_buffer *request, gpr_timespec deadline,
                      grpc_byte_buffer **response, frugal_err_t *err) {
    EG(CleanupRequest) * req;
    int rc = UNPACK(CleanupRequest, cleanup_request, request, &req, err);
    if (rc != 0)
        return rc;
    codec_free(req);
    rc = cluster_persist(ctx->cluster, err);
    if (rc != 0)
        return rc;
    EG(CleanupResponse) resp = EG_INIT(CLEANUP_RESPONSE);
    return codec_reply(&resp.base, response, err);
}

static int cp_refresh(service_ctx_t *ctx, grpc_byte_buffer *request, gpr_timespec deadline,
                      grpc_byte_buffer **response, frugal_err_t *err) {
    EG(RefreshRequest) * req;
    int rc = UNPACK(RefreshRequest, refresh_request, request, &req, err);
    if (rc != 0)
        return rc;
    codec_free(req);
    rc = cluster_refresh(ctx->cluster, &ctx->call, err);
    if (rc != 0)
        return rc;
    EG(RefreshResponse) resp = EG_INIT(REFRESH_RESPONSE);
    return codec_reply(&resp.base, response, err);
}

static int cp_target_size(service_ctx_t *ctx, grpc_byte_buffer *request, gpr_timespec deadline,
                          grpc_byte_buffer **response, frugal_err_t *err) {
    EG(NodeGroupTargetSizeRequest) * req;
    int rc = UNPACK(NodeGroupTargetSizeRequest, node_group_target_size_request, request, &req, err);
    if (rc != 0)
        return rc;
    cluster_read_lock(ctx->cluster);
    const group_t *g = cluster_find_group(ctx->cluster, req->id);
    EG(NodeGroupTargetSizeResponse) resp = EG_INIT(NODE_GROUP_TARGET_SIZE_RESPONSE);
    if (g == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOTFOUND, "node group \"%s\" not found", req->id);
    else
        resp.targetsize = g->target_size;
    cluster_read_unlock(ctx->cluster);
    if (rc == 0)
        rc = codec_reply(&resp.base, response, err);
    codec_free(req);
    return rc;
}

static int cp_increase_size(service_ctx_t *ctx, grpc_byte_buffer *request, gpr_timespec deadline,
                            grpc_byte_buffer **response, frugal_err_t *err) {
    EG(NodeGroupIncreaseSizeRequest) * req;
    int rc =
        UNPACK(NodeGroupIncreaseSizeRequest, node_group_increase_size_request, request, &req, err);
    if (rc != 0)
        return rc;
    rc = cluster_increase_size(ctx->cluster, &ctx->call, req->id, req->delta, err);
    codec_free(req);
    if (rc != 0)
        return rc;
    EG(NodeGroupIncreaseSizeResponse) resp = EG_INIT(NODE_GROUP_INCREASE_SIZE_RESPONSE);
    return codec_reply(&resp.base, response, err);
}

static int cp_decrease_target_size(service_ctx_t *ctx, grpc_byte_buffer *request,
                                   gpr_timespec deadline, grpc_byte_buffer **response,
                                   frugal_err_t *err) {
    EG(NodeGroupDecreaseTargetSizeRequest) * req;
    int rc = UNPACK(NodeGroupDecreaseTargetSizeRequest, node_group_decrease_target_size_request,
                    request, &req, err);
    if (rc != 0)
        return rc;
    rc = cluster_decrease_target_size(ctx->cluster, &ctx->call, req->id, req->delta, err);
    codec_free(req);
    if (rc != 0)
        return rc;
    EG(NodeGroupDecreaseTargetSizeResponse)
    resp = EG_INIT(NODE_GROUP_DECREASE_TARGET_SIZE_RESPONSE);
    return codec_reply(&resp.base, response, err);
}

static int cp_delete_nodes(service_ctx_t *ctx, grpc_byte_buffer *request, gpr_timespec deadline,
                           grpc_byte_buffer **response, frugal_err_t *err) {
    EG(NodeGroupDeleteNodesRequest) * req;
    int rc =
        UNPACK(NodeGroupDeleteNodesRequest, node_group_delete_nodes_request, request, &req, err);
    if (rc != 0)
        return rc;
    const char **ids = calloc(req->n_nodes ? req->n_nodes : 1, sizeof(*ids));
    if (ids == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < req->n_nodes; i++) {
        ids[i] = req->nodes[i]->providerid;
        if (ids[i][0] == '\0')
            rc = frugal_err_set(err, FRUGAL_EINVAL, "node \"%s\" has no providerID",
                                req->nodes[i]->name);
    }
    if (rc == 0 && req->n_nodes == 0)
        rc = frugal_err_set(err, FRUGAL_EINVAL, "no nodes to delete");
    if (rc == 0)
        rc = cluster_delete_nodes(ctx->cluster, &ctx->call, req->id, ids, req->n_nodes, err);
    free(ids);
    codec_free(req);
    if (rc != 0)
        return rc;
    EG(NodeGroupDeleteNodesResponse) resp = EG_INIT(NODE_GROUP_DELETE_NODES_RESPONSE);
    return codec_reply(&resp.base, response, err);
}

static int cp_nodes(service_ctx_t *ctx, grpc_byte_buffer *request, gpr_timespec deadline,
                    grpc_byte_buffer **response, frugal_err_t *err) {
    EG(NodeGroupNodesRequest) * req;
    int rc = UNPACK(NodeGroupNodesRequest, node_group_nodes_request, request, &req, err);
    if (rc != 0)
        return rc;
    EG(Instance) *instances = NULL, **ptrs = NULL;
    EG(InstanceStatus) *statuses = NULL;
    EG(InstanceErrorInfo) *errors = NULL;
    cluster_read_lock(ctx->cluster);
    const group_t *g = cluster_find_group(ctx->cluster, req->id);
    if (g == NULL || !g->managed) {
        rc = frugal_err_set(err, FRUGAL_ENOTFOUND,
                            g == NULL ? "node group \"%s\" not found"
                                      : "node group \"%s\" is unmanaged: frugal does not track "
                                        "its instances",
                            req->id);
        goto out;
    }
    size_t n = g->instances_count ? g->instances_count : 1;
    instances = calloc(n, sizeof(*instances));
    ptrs = calloc(n, sizeof(*ptrs));
    statuses = calloc(n, sizeof(*statuses));
    errors = calloc(n, sizeof(*errors));
    if (instances == NULL || ptrs == NULL || statuses == NULL || errors == NULL) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < g->instances_count; i++) {
        const instance_t *inst = &g->instances[i];
        EG(Instance) instance_init = EG_INIT(INSTANCE);
        EG(InstanceStatus) status_init = EG_INIT(INSTANCE_STATUS);
        instances[i] = instance_init;
        statuses[i] = status_init;
        instances[i].id = inst->id;
        instances[i].status = &statuses[i];
        statuses[i].instancestate = (EG(InstanceStatus__InstanceState))inst->state;
        if (inst->error_code != NULL) {
            EG(InstanceErrorInfo) error_init = EG_INIT(INSTANCE_ERROR_INFO);
            errors[i] = error_init;
            errors[i].errorcode = inst->error_code;
            errors[i].errormessage = inst->error_message != NULL ? inst->error_message : "";
            errors[i].instanceerrorclass = inst->error_class;
            statuses[i].errorinfo = &errors[i];
        }
        ptrs[i] = &instances[i];
    }
    EG(NodeGroupNodesResponse) resp = EG_INIT(NODE_GROUP_NODES_RESPONSE);
    resp.n_instances = g->instances_count;
    resp.instances = ptrs;
    rc = codec_reply(&resp.base, response, err);
out:
    cluster_read_unlock(ctx->cluster);
    free(instances);
    free(ptrs);
    free(statuses);
    free(errors);
    codec_free(req);
    return rc;
}

static int cp_template_node_info(service_ctx_t *ctx, grpc_byte_buffer *request,
                                 gpr_timespec deadline, grpc_byte_buffer **response,
                                 frugal_err_t *err) {
    EG(NodeGroupTemplateNodeInfoRequest) * req;
    int rc = UNPACK(NodeGroupTemplateNodeInfoRequest, node_group_template_node_info_request,
                    request, &req, err);
    if (rc != 0)
        return rc;
    uint8_t *node = NULL;
    size_t len = 0;
    cluster_read_lock(ctx->cluster);
    const group_t *g = find_visible_group(ctx->cluster, req->id);
    if (g == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOTFOUND, "node group \"%s\" not found", req->id);
    else
        rc = template_build(ctx->cfg, &g->spec, &node, &len, err);
    cluster_read_unlock(ctx->cluster);
    if (rc == 0) {
        /* Both generations: the legacy embedded message and the current bytes. */
        EG(NodeGroupTemplateNodeInfoResponse)
        resp = EG_INIT(NODE_GROUP_TEMPLATE_NODE_INFO_RESPONSE);
        resp.nodeinfo.data = node;
        resp.nodeinfo.len = len;
        resp.nodebytes.data = node;
        resp.nodebytes.len = len;
        rc = codec_reply(&resp.base, response, err);
    }
    free(node);
    codec_free(req);
    return rc;
}

/* A duration the caller sent as default, from either generation (current preferred);
 * fallback when it sent none. */
static int64_t default_duration_ns(const Google__Protobuf__Duration *current,
                                   const meta_duration_t *legacy, int64_t fallback) {
    /* Only a positive duration that fits in int64 nanoseconds is a usable default; CA
     * reads zero (or garbage) as "every new node failed". */
    int64_t ns;
    if (current != NULL && current->seconds >= 0 &&
        !__builtin_mul_overflow(current->seconds, 1000000000LL, &ns) &&
        !__builtin_add_overflow(ns, (int64_t)current->nanos, &ns) && ns > 0)
        return ns;
    if (legacy != NULL && legacy->has_duration && legacy->duration > 0)
        return legacy->duration;
    return fallback;
}

typedef struct duration_pair {
    Google__Protobuf__Duration current;
    meta_duration_t legacy;
} duration_pair_t;

static void set_duration(duration_pair_t *pair, int64_t ns, Google__Protobuf__Duration **current,
                         meta_duration_t **legacy) {
    Google__Protobuf__Duration c = GOOGLE__PROTOBUF__DURATION__INIT;
    K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Duration l =
        K8S__IO__APIMACHINERY__PKG__APIS__META__V1__DURATION__INIT;
    c.seconds = ns / 1000000000LL;
    c.nanos = (int32_t)(ns % 1000000000LL);
    l.has_duration = 1;
    l.duration = ns;
    pair->current = c;
    pair->legacy = l;
    *current = &pair->current;
    *legacy = &pair->legacy;
}

static int cp_get_options(service_ctx_t *ctx, grpc_byte_buffer *request, gpr_timespec deadline,
                          grpc_byte_buffer **response, frugal_err_t *err) {
    EG(NodeGroupAutoscalingOptionsRequest) * req;
    int rc = UNPACK(NodeGroupAutoscalingOptionsRequest, node_group_autoscaling_options_request,
                    request, &req, err);
    if (rc != 0)
        return rc;
    group_options_t o = {0};
    cluster_read_lock(ctx->cluster);
    const group_t *g = find_visible_group(ctx->cluster, req->id);
    if (g == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOTFOUND, "node group \"%s\" not found", req->id);
    else if (!config_group_has_options(&g->options))
        /* Only UNIMPLEMENTED makes CA >= 1.35 apply all of its own defaults, including the
         * MaxNodeStartupTime the protocol cannot carry (docs/wire.md). */
        rc =
            frugal_err_set(err, FRUGAL_EUNIMPL,
                           "node group \"%s\" has no option overrides: use your defaults", req->id);
    else
        o = g->options;
    cluster_read_unlock(ctx->cluster);
    if (rc != 0) {
        codec_free(req);
        return rc;
    }

    const EG(NodeGroupAutoscalingOptions) *d = req->defaults;
    EG(NodeGroupAutoscalingOptions) opts = EG_INIT(NODE_GROUP_AUTOSCALING_OPTIONS);
    opts.scaledownutilizationthreshold = o.has_scale_down_utilization_threshold
                                             ? o.scale_down_utilization_threshold
                                         : d != NULL ? d->scaledownutilizationthreshold
                                                     : CA_DEFAULT_UTILIZATION_THRESHOLD;
    opts.scaledowngpuutilizationthreshold = o.has_scale_down_gpu_utilization_threshold
                                                ? o.scale_down_gpu_utilization_threshold
                                            : d != NULL ? d->scaledowngpuutilizationthreshold
                                                        : CA_DEFAULT_UTILIZATION_THRESHOLD;
    opts.zeroormaxnodescaling = o.has_zero_or_max_node_scaling ? o.zero_or_max_node_scaling
                                : d != NULL                    ? d->zeroormaxnodescaling
                                                               : 0;
    opts.ignoredaemonsetsutilization = o.has_ignore_daemonsets_utilization
                                           ? o.ignore_daemonsets_utilization
                                       : d != NULL ? d->ignoredaemonsetsutilization
                                                   : 0;
    int64_t unneeded = o.has_scale_down_unneeded
                           ? o.scale_down_unneeded_ns
                           : default_duration_ns(d ? d->scaledownunneededduration : NULL,
                                                 d ? d->scaledownunneededtime : NULL,
                                                 CA_DEFAULT_SCALE_DOWN_UNNEEDED_NS);
    int64_t unready = o.has_scale_down_unready
                          ? o.scale_down_unready_ns
                          : default_duration_ns(d ? d->scaledownunreadyduration : NULL,
                                                d ? d->scaledownunreadytime : NULL,
                                                CA_DEFAULT_SCALE_DOWN_UNREADY_NS);
    int64_t provision = o.has_max_node_provision
                            ? o.max_node_provision_ns
                            : default_duration_ns(d ? d->maxnodeprovisionduration : NULL,
                                                  d ? d->maxnodeprovisiontime : NULL,
                                                  CA_DEFAULT_MAX_NODE_PROVISION_NS);
    duration_pair_t pairs[3];
    set_duration(&pairs[0], unneeded, &opts.scaledownunneededduration, &opts.scaledownunneededtime);
    set_duration(&pairs[1], unready, &opts.scaledownunreadyduration, &opts.scaledownunreadytime);
    set_duration(&pairs[2], provision, &opts.maxnodeprovisionduration, &opts.maxnodeprovisiontime);
    EG(NodeGroupAutoscalingOptionsResponse) resp = EG_INIT(NODE_GROUP_AUTOSCALING_OPTIONS_RESPONSE);
    resp.nodegroupautoscalingoptions = &opts;
    rc = codec_reply(&resp.base, response, err);
    codec_free(req);
    return rc;
}

static const service_method_t cloudprovider_methods[] = {
    {WIRE_CP_NODE_GROUPS, cp_node_groups},
    {WIRE_CP_NODE_GROUP_FOR_NODE, cp_node_group_for_node},
    {WIRE_CP_PRICING_NODE_PRICE, cp_pricing_node_price},
    {WIRE_CP_PRICING_POD_PRICE, cp_pricing_pod_price},
    {WIRE_CP_GPU_LABEL, cp_gpu_label},
    {WIRE_CP_GET_AVAILABLE_GPU_TYPES, cp_get_available_gpu_types},
    {WIRE_CP_CLEANUP, cp_cleanup},
    {WIRE_CP_REFRESH, cp_refresh},
    {WIRE_CP_TARGET_SIZE, cp_target_size},
    {WIRE_CP_INCREASE_SIZE, cp_increase_size},
    {WIRE_CP_DELETE_NODES, cp_delete_nodes},
    {WIRE_CP_DECREASE_TARGET_SIZE, cp_decrease_target_size},
    {WIRE_CP_NODES, cp_nodes},
    {WIRE_CP_TEMPLATE_NODE_INFO, cp_template_node_info},
    {WIRE_CP_GET_OPTIONS, cp_get_options},
};

const service_def_t service_cloudprovider = {WIRE_SERVICE_CLOUDPROVIDER, cloudprovider_methods,
                                             sizeof(cloudprovider_methods) /
                                                 sizeof(cloudprovider_methods[0]),
                                             LISTENER_SERVICE_CLOUDPROVIDER};
