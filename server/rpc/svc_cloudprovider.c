/* clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider: converts requests,
 * calls the cluster, pricing and template modules, converts answers. Reads both wire
 * generations (current preferred) and writes both (docs/wire.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

#include "catalog.h"
#include "cluster.h"
#include "cluster_nap.h"
#include "instance_id.h"
#include "k8s_name.h"
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

/* Groups CA may see: managed ones. Unmanaged groups are only counted; TargetSize still
 * answers for them (the size frugal counts), for operators. */
static const group_t *find_visible_group(cluster_t *c, const char *id) {
    const group_t *g = cluster_find_group(c, id);
    return g != NULL && g->managed ? g : NULL;
}

/* NOT_FOUND for a group find_visible_group does not return, saying whether it is unknown
 * or unmanaged (configured, counted, never scaled: CA is not told of it). */
static int group_not_visible(cluster_t *c, const char *id, frugal_err_t *err) {
    return frugal_err_set(err, FRUGAL_ENOTFOUND,
                          cluster_find_group(c, id) != NULL
                              ? "node group \"%s\" is unmanaged: frugal does not scale it, so CA "
                                "is not told of it"
                              : "node group \"%s\" not found",
                          id);
}

/* With the cluster's read lock held: what out points to is copied into mem. */
static void fill_node_group(cluster_t *c, const cluster_nap_survey_t *survey, const group_t *g,
                            EG(NodeGroup) * out, service_mem_t *mem) {
    char debug[192];
    snprintf(debug, sizeof(debug), "machine_type=%s%s%s target=%d%s%s", g->spec.machine_type,
             g->spec.zone != NULL ? " zone=" : "", g->spec.zone != NULL ? g->spec.zone : "",
             g->target_size, g->autoprovisioned ? " autoprovisioned" : "",
             g->exists ? "" : " theoretical");
    out->id = service_strdup(mem, g->spec.id);
    /* min_size raised by the NAP minimums, max_size cut by the NAP maxima */
    cluster_nap_sizes(c, survey, g, &out->minsize, &out->maxsize);
    out->debug = service_strdup(mem, debug);
}

/* An autoprovisioned group whose machine type left the catalog has no template. While it
 * holds nodes CA builds their group's node info from them; once it holds nothing CA
 * would ask for the template, and 1.25-1.28 fail their whole loop on the UNIMPLEMENTED
 * answer (1.29 and later skip it). Such a group is not listed until it expires. */
static bool listed_group(const frugal_config_t *cfg, const group_t *g) {
    return g->managed && (!g->autoprovisioned || g->target_size > 0 || g->instances_count > 0 ||
                          config_find_machine_type(cfg, g->spec.machine_type) != NULL);
}

static int cp_node_groups(service_ctx_t *ctx, const void *request, void *response,
                          service_mem_t *mem, frugal_err_t *err) {
    EG(NodeGroupsResponse) *resp = response;
    cluster_read_lock(ctx->cluster);
    size_t n = cluster_groups_count(ctx->cluster);
    cluster_nap_survey_t survey;
    cluster_nap_survey(ctx->cluster, &survey);
    resp->nodegroups = service_alloc(mem, n, sizeof(*resp->nodegroups));
    for (size_t i = 0; resp->nodegroups != NULL && i < n; i++) {
        const group_t *g = cluster_group_at(ctx->cluster, i);
        if (!listed_group(ctx->cfg, g))
            continue;
        EG(NodeGroup) *group = service_message(mem, EG_DESC(node_group));
        if (group == NULL)
            break;
        fill_node_group(ctx->cluster, &survey, g, group, mem);
        resp->nodegroups[resp->n_nodegroups++] = group;
    }
    cluster_read_unlock(ctx->cluster);
    return mem->out_of_memory ? frugal_err_set(err, FRUGAL_ENOMEM, "out of memory") : 0;
}

/* The last entry of a key wins, as a protobuf map's does. */
static const char *node_label(const EG(ExternalGrpcNode) * node, const char *key) {
    for (size_t i = node->n_labels; i-- > 0;)
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

/* The group in a simulated instance's id, frugal://<group>/<name>, whether or not the
 * instance still exists (a node CA still lists after its deletion). */
static const group_t *group_from_simulated_id(cluster_t *c, const char *provider_id) {
    size_t len;
    const char *id = instance_id_group(provider_id, &len);
    char buf[K8S_NAME_MAX + 1]; /* a group id is a DNS label: a longer one names none */
    if (id == NULL || len >= sizeof(buf))
        return NULL;
    memcpy(buf, id, len);
    buf[len] = '\0';
    return cluster_find_group(c, buf);
}

/* The group a node belongs to (docs/wire.md), the one resolution of every handler: its
 * provider id (an instance of a group), then, when by_name (pricing: CA's template
 * nodes carry no provider id), the group a simulated instance's id names and its name as
 * a template node's, then its frugal.io/node-group label. NULL when none matches.
 * Managed or not: the caller decides. With the cluster's read lock held. */
static const group_t *resolve_node_group(cluster_t *c, const EG(ExternalGrpcNode) * node,
                                         bool by_name) {
    const group_t *g = NULL;
    if (node->providerid[0] != '\0')
        g = cluster_find_instance(c, node->providerid, NULL);
    if (g == NULL && by_name)
        g = group_from_simulated_id(c, node->providerid);
    if (g == NULL && by_name && node->name[0] != '\0')
        g = group_from_template_name(c, node->name);
    if (g == NULL) {
        const char *label = node_label(node, FRUGAL_LABEL_NODE_GROUP);
        if (label != NULL)
            g = cluster_find_group(c, label);
    }
    return g;
}

static int cp_node_group_for_node(service_ctx_t *ctx, const void *request, void *response,
                                  service_mem_t *mem, frugal_err_t *err) {
    const EG(NodeGroupForNodeRequest) *req = request;
    EG(NodeGroupForNodeResponse) *resp = response;
    if (req->node == NULL)
        return frugal_err_set(err, FRUGAL_EINVAL, "node is missing");
    resp->nodegroup = service_message(mem, EG_DESC(node_group));
    if (resp->nodegroup == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    cluster_read_lock(ctx->cluster);
    const group_t *g = resolve_node_group(ctx->cluster, req->node, false);
    if (g != NULL && g->managed) {
        cluster_nap_survey_t survey;
        cluster_nap_survey(ctx->cluster, &survey);
        fill_node_group(ctx->cluster, &survey, g, resp->nodegroup, mem);
    }
    cluster_read_unlock(ctx->cluster);
    return 0;
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

static int cp_pricing_node_price(service_ctx_t *ctx, const void *request, void *response,
                                 service_mem_t *mem, frugal_err_t *err) {
    const EG(PricingNodePriceRequest) *req = request;
    EG(PricingNodePriceResponse) *resp = response;
    double hours = 0, hourly = 0;
    int rc;
    if (req->node == NULL)
        return frugal_err_set(err, FRUGAL_EINVAL, "node is missing");
    if ((rc = request_hours(req->starttimestamp, req->endtimestamp, req->starttime, req->endtime,
                            &hours, err)) != 0 ||
        (rc = node_hourly_price(ctx, req->node, &hourly, err)) != 0)
        return rc;
    resp->price = hourly * hours;
    return 0;
}

static int cp_pricing_pod_price(service_ctx_t *ctx, const void *request, void *response,
                                service_mem_t *mem, frugal_err_t *err) {
    const EG(PricingPodPriceRequest) *req = request;
    EG(PricingPodPriceResponse) *resp = response;
    double hours = 0;
    resources_t r;
    int rc;
    /* The current pod_bytes wins over the legacy embedded pod when both are present. */
    const ProtobufCBinaryData *pod = req->pod_bytes.len > 0 ? &req->pod_bytes : &req->pod;
    if (pod->len == 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "pod is missing (neither pod_bytes nor pod set)");
    if ((rc = request_hours(req->starttimestamp, req->endtimestamp, req->starttime, req->endtime,
                            &hours, err)) != 0 ||
        (rc = pod_decode_request(pod->data, pod->len, &r, err)) != 0)
        return rc;
    resp->price = pricing_linear(&ctx->cfg->pricing, &r) * hours;
    return 0;
}

static int cp_gpu_label(service_ctx_t *ctx, const void *request, void *response, service_mem_t *mem,
                        frugal_err_t *err) {
    EG(GPULabelResponse) *resp = response;
    resp->label = (char *)FRUGAL_GPU_LABEL;
    return 0;
}

static bool type_listed(EG(GetAvailableGPUTypesResponse__GpuTypesEntry) * *entries, size_t n,
                        const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(entries[i]->key, name) == 0)
            return true;
    return false;
}

/* GPU types: the builtin catalog's (when in use) and those of configured machine types. */
static int cp_get_available_gpu_types(service_ctx_t *ctx, const void *request, void *response,
                                      service_mem_t *mem, frugal_err_t *err) {
    EG(GetAvailableGPUTypesResponse) *resp = response;
    const frugal_config_t *cfg = ctx->cfg;
    size_t n = cfg->machine_types_count + (cfg->pricing.builtin_catalog ? catalog_gpus_count : 0);
    resp->gputypes = service_alloc(mem, n, sizeof(*resp->gputypes));
    if (resp->gputypes == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *gpu_type;
        if (i < cfg->machine_types_count)
            gpu_type = cfg->machine_types[i].gpu > 0 ? cfg->machine_types[i].gpu_type : NULL;
        else
            gpu_type = catalog_gpus[i - cfg->machine_types_count].name;
        if (gpu_type == NULL || type_listed(resp->gputypes, resp->n_gputypes, gpu_type))
            continue;
        EG(GetAvailableGPUTypesResponse__GpuTypesEntry) *entry =
            service_message(mem, EG_DESC(get_available_gputypes_response__gpu_types_entry));
        Google__Protobuf__Any *any = service_message(mem, &google__protobuf__any__descriptor);
        if (entry == NULL || any == NULL)
            return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        /* The configuration outlives the packing: its names are not copied. */
        entry->key = (char *)gpu_type;
        entry->value = any;
        resp->gputypes[resp->n_gputypes++] = entry;
    }
    return 0;
}

static int cp_cleanup(service_ctx_t *ctx, const void *request, void *response, service_mem_t *mem,
                      frugal_err_t *err) {
    return cluster_persist(ctx->cluster, err);
}

static int cp_refresh(service_ctx_t *ctx, const void *request, void *response, service_mem_t *mem,
                      frugal_err_t *err) {
    return cluster_refresh(ctx->cluster, &ctx->call, err);
}

static int cp_target_size(service_ctx_t *ctx, const void *request, void *response,
                          service_mem_t *mem, frugal_err_t *err) {
    const EG(NodeGroupTargetSizeRequest) *req = request;
    EG(NodeGroupTargetSizeResponse) *resp = response;
    int rc = 0;
    cluster_read_lock(ctx->cluster);
    const group_t *g = cluster_find_group(ctx->cluster, req->id);
    if (g == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOTFOUND, "node group \"%s\" not found", req->id);
    else
        resp->targetsize = g->target_size;
    cluster_read_unlock(ctx->cluster);
    return rc;
}

static int cp_increase_size(service_ctx_t *ctx, const void *request, void *response,
                            service_mem_t *mem, frugal_err_t *err) {
    const EG(NodeGroupIncreaseSizeRequest) *req = request;
    return cluster_increase_size(ctx->cluster, &ctx->call, req->id, req->delta, err);
}

static int cp_decrease_target_size(service_ctx_t *ctx, const void *request, void *response,
                                   service_mem_t *mem, frugal_err_t *err) {
    const EG(NodeGroupDecreaseTargetSizeRequest) *req = request;
    return cluster_decrease_target_size(ctx->cluster, &ctx->call, req->id, req->delta, err);
}

static int cp_delete_nodes(service_ctx_t *ctx, const void *request, void *response,
                           service_mem_t *mem, frugal_err_t *err) {
    const EG(NodeGroupDeleteNodesRequest) *req = request;
    const char **ids = service_alloc(mem, req->n_nodes + 1, sizeof(*ids));
    if (ids == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    for (size_t i = 0; i < req->n_nodes; i++) {
        ids[i] = req->nodes[i]->providerid;
        if (ids[i][0] == '\0')
            return frugal_err_set(err, FRUGAL_EINVAL, "node \"%s\" has no providerID",
                                  req->nodes[i]->name);
    }
    return cluster_delete_nodes(ctx->cluster, &ctx->call, req->id, ids, req->n_nodes, err);
}

/* inst's status, its ids and error copied into mem (the cluster's lock is held). */
static EG(Instance) * instance_message(const instance_t *inst, service_mem_t *mem) {
    EG(Instance) *instance = service_message(mem, EG_DESC(instance));
    EG(InstanceStatus) *status = service_message(mem, EG_DESC(instance_status));
    if (instance == NULL || status == NULL)
        return NULL;
    instance->id = service_strdup(mem, inst->id);
    instance->status = status;
    status->instancestate = (EG(InstanceStatus__InstanceState))inst->state;
    if (inst->error_code != NULL) {
        EG(InstanceErrorInfo) *error = service_message(mem, EG_DESC(instance_error_info));
        if (error == NULL)
            return NULL;
        error->errorcode = service_strdup(mem, inst->error_code);
        error->errormessage = service_strdup(mem, inst->error_message);
        error->instanceerrorclass = inst->error_class;
        status->errorinfo = error;
    }
    return instance;
}

static int cp_nodes(service_ctx_t *ctx, const void *request, void *response, service_mem_t *mem,
                    frugal_err_t *err) {
    const EG(NodeGroupNodesRequest) *req = request;
    EG(NodeGroupNodesResponse) *resp = response;
    int rc = 0;
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
    resp->instances = service_alloc(mem, g->instances_count, sizeof(*resp->instances));
    for (size_t i = 0; resp->instances != NULL && i < g->instances_count; i++)
        if ((resp->instances[resp->n_instances++] = instance_message(&g->instances[i], mem)) ==
            NULL)
            break;
    if (mem->out_of_memory)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
out:
    cluster_read_unlock(ctx->cluster);
    return rc;
}

static int cp_template_node_info(service_ctx_t *ctx, const void *request, void *response,
                                 service_mem_t *mem, frugal_err_t *err) {
    const EG(NodeGroupTemplateNodeInfoRequest) *req = request;
    EG(NodeGroupTemplateNodeInfoResponse) *resp = response;
    uint8_t *node = NULL;
    size_t len = 0;
    int rc;
    cluster_read_lock(ctx->cluster);
    const group_t *g = find_visible_group(ctx->cluster, req->id);
    const machine_type_t *mt =
        g != NULL ? config_find_machine_type(ctx->cfg, g->spec.machine_type) : NULL;
    if (g == NULL)
        rc = group_not_visible(ctx->cluster, req->id, err);
    else if (mt == NULL)
        /* An autoprovisioned group resumed from the state after its machine type left
         * the catalog: any other error aborts CA's whole loop, this one makes CA skip
         * the group's template. */
        rc = frugal_err_set(err, FRUGAL_EUNIMPL,
                            "node group %s: machine type %s is no longer in the catalog: no "
                            "template",
                            g->spec.id, g->spec.machine_type);
    else
        rc = template_build_machine(mt, &g->spec, &node, &len, err);
    cluster_read_unlock(ctx->cluster);
    if (rc == 0) {
        /* Both generations: the legacy embedded message and the current bytes. */
        resp->nodeinfo = service_bytes(mem, node, len);
        resp->nodebytes = resp->nodeinfo;
    }
    free(node);
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

/* Whether defaults come from a CA older than 1.29: it sends the two scale-down times
 * in their legacy fields and no max node provision time in either generation. Such a CA
 * takes UNIMPLEMENTED for a failure (1.29 made it mean "not supported"), and 1.27 and
 * 1.28 read a group's max node provision time from options they have no field for: 0,
 * which fails every new node at once. */
static bool options_caller_before_1_29(const EG(NodeGroupAutoscalingOptions) * d) {
    return d != NULL && (d->scaledownunneededtime != NULL || d->scaledownunreadytime != NULL) &&
           d->maxnodeprovisiontime == NULL && d->maxnodeprovisionduration == NULL &&
           d->scaledownunneededduration == NULL && d->scaledownunreadyduration == NULL;
}

static atomic_bool options_old_caller_warned;

static int cp_get_options(service_ctx_t *ctx, const void *request, void *response,
                          service_mem_t *mem, frugal_err_t *err) {
    const EG(NodeGroupAutoscalingOptionsRequest) *req = request;
    EG(NodeGroupAutoscalingOptionsResponse) *resp = response;
    int rc = 0;
    bool overrides = false;
    group_options_t o = {0};
    cluster_read_lock(ctx->cluster);
    const group_t *g = find_visible_group(ctx->cluster, req->id);
    if (g == NULL)
        rc = group_not_visible(ctx->cluster, req->id, err);
    else if ((overrides = config_group_has_options(&g->options)))
        o = g->options;
    cluster_read_unlock(ctx->cluster);
    if (rc != 0)
        return rc;
    /* An answer without options means "apply your defaults" to every CA; it is the only
     * safe one for a CA older than 1.29, overrides or not (above). */
    if (options_caller_before_1_29(req->defaults)) {
        if (overrides && !atomic_exchange(&options_old_caller_warned, true))
            log_warn("NodeGroupGetOptions from a cluster-autoscaler older than 1.29: node "
                     "group \"%s\" and every other group with options overrides is answered "
                     "without them (CA 1.27 and 1.28 would read its max node provision time "
                     "as 0); CA's own defaults apply",
                     req->id);
        return 0;
    }
    /* No overrides: UNIMPLEMENTED makes CA apply all of its own defaults, including the
     * MaxNodeStartupTime the protocol cannot carry (docs/wire.md). */
    if (!overrides)
        return frugal_err_set(err, FRUGAL_EUNIMPL,
                              "node group \"%s\" has no option overrides: use your defaults",
                              req->id);

    const EG(NodeGroupAutoscalingOptions) *d = req->defaults;
    EG(NodeGroupAutoscalingOptions) *opts =
        service_message(mem, EG_DESC(node_group_autoscaling_options));
    duration_pair_t *pairs = service_alloc(mem, 3, sizeof(*pairs));
    if (opts == NULL || pairs == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    opts->scaledownutilizationthreshold = o.has_scale_down_utilization_threshold
                                              ? o.scale_down_utilization_threshold
                                          : d != NULL ? d->scaledownutilizationthreshold
                                                      : CA_DEFAULT_UTILIZATION_THRESHOLD;
    opts->scaledowngpuutilizationthreshold = o.has_scale_down_gpu_utilization_threshold
                                                 ? o.scale_down_gpu_utilization_threshold
                                             : d != NULL ? d->scaledowngpuutilizationthreshold
                                                         : CA_DEFAULT_UTILIZATION_THRESHOLD;
    opts->zeroormaxnodescaling = o.has_zero_or_max_node_scaling ? o.zero_or_max_node_scaling
                                 : d != NULL                    ? d->zeroormaxnodescaling
                                                                : 0;
    opts->ignoredaemonsetsutilization = o.has_ignore_daemonsets_utilization
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
    set_duration(&pairs[0], unneeded, &opts->scaledownunneededduration,
                 &opts->scaledownunneededtime);
    set_duration(&pairs[1], unready, &opts->scaledownunreadyduration, &opts->scaledownunreadytime);
    set_duration(&pairs[2], provision, &opts->maxnodeprovisionduration,
                 &opts->maxnodeprovisiontime);
    resp->nodegroupautoscalingoptions = opts;
    return 0;
}

/* A method of the table: its path, its request and response types, its handler. */
#define CP_METHOD(path, type, fn)                                                                  \
    SERVICE_TYPED(path, EG_DESC(type##_request), EG_DESC(type##_response), fn)
#define CP_CHANGE(path, type, fn)                                                                  \
    SERVICE_TYPED_CHANGE(path, EG_DESC(type##_request), EG_DESC(type##_response), fn)

static const service_method_t cloudprovider_methods[] = {
    CP_METHOD(WIRE_CP_NODE_GROUPS, node_groups, cp_node_groups),
    CP_METHOD(WIRE_CP_NODE_GROUP_FOR_NODE, node_group_for_node, cp_node_group_for_node),
    CP_METHOD(WIRE_CP_PRICING_NODE_PRICE, pricing_node_price, cp_pricing_node_price),
    CP_METHOD(WIRE_CP_PRICING_POD_PRICE, pricing_pod_price, cp_pricing_pod_price),
    CP_METHOD(WIRE_CP_GPU_LABEL, gpulabel, cp_gpu_label),
    CP_METHOD(WIRE_CP_GET_AVAILABLE_GPU_TYPES, get_available_gputypes, cp_get_available_gpu_types),
    CP_CHANGE(WIRE_CP_CLEANUP, cleanup, cp_cleanup),
    CP_CHANGE(WIRE_CP_REFRESH, refresh, cp_refresh),
    CP_METHOD(WIRE_CP_TARGET_SIZE, node_group_target_size, cp_target_size),
    CP_CHANGE(WIRE_CP_INCREASE_SIZE, node_group_increase_size, cp_increase_size),
    CP_CHANGE(WIRE_CP_DELETE_NODES, node_group_delete_nodes, cp_delete_nodes),
    CP_CHANGE(WIRE_CP_DECREASE_TARGET_SIZE, node_group_decrease_target_size,
              cp_decrease_target_size),
    CP_METHOD(WIRE_CP_NODES, node_group_nodes, cp_nodes),
    CP_METHOD(WIRE_CP_TEMPLATE_NODE_INFO, node_group_template_node_info, cp_template_node_info),
    CP_METHOD(WIRE_CP_GET_OPTIONS, node_group_autoscaling_options, cp_get_options),
};

const service_def_t service_cloudprovider = {WIRE_SERVICE_CLOUDPROVIDER, cloudprovider_methods,
                                             sizeof(cloudprovider_methods) /
                                                 sizeof(cloudprovider_methods[0]),
                                             LISTENER_SERVICE_CLOUDPROVIDER};
