/* frugal.v1.Autoprovisioning (proto/frugal.proto): node auto-provisioning driven by a
 * client. Converts requests, validates them, calls the cluster (cluster_nap.h), the
 * template and the proposal modules, converts answers. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoprov.h"
#include "cluster.h"
#include "clock.h"
#include "cluster_nap.h"
#include "demand.h"
#include "frugal.pb-c.h"
#include "group_rules.h"
#include "pricing.h"
#include "propose.h"
#include "service.h"
#include "template.h"
#include "wire_names.h"

static int require_enabled(const service_ctx_t *ctx, const char *what, frugal_err_t *err) {
    if (!ctx->cfg->autoprovisioning.enabled)
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "%s: autoprovisioning is disabled (set autoprovisioning.enabled)",
                              what);
    return 0;
}

/* ------------------------------------------------------------------------------------
 * GroupInfo of a published group (copied under the read lock)
 * ---------------------------------------------------------------------------------- */

/* The labels of a GroupInfo or a Proposal (entry: the map's entry type), copied into
 * mem; NULL when out of memory. */
static void *labels_message(const kv_list_t *l, const ProtobufCMessageDescriptor *entry,
                            service_mem_t *mem) {
    /* protobuf-c lays out every map<string, string> entry alike: base, key, value. */
    _Static_assert(offsetof(AP(GroupInfo__LabelsEntry), value) ==
                       offsetof(AP(Proposal__LabelsEntry), value),
                   "map entries differ");
    AP(GroupInfo__LabelsEntry) **out = service_alloc(mem, l->count, sizeof(*out));
    for (size_t i = 0; out != NULL && i < l->count; i++) {
        if ((out[i] = service_message(mem, entry)) == NULL)
            return NULL;
        out[i]->key = service_strdup(mem, l->items[i].key);
        out[i]->value = service_strdup(mem, l->items[i].value);
    }
    return out;
}

/* The taints of a GroupInfo or a Proposal, copied into mem; NULL when out of memory. */
static AP(Taint) * *taints_message(const taint_list_t *l, service_mem_t *mem) {
    AP(Taint) **out = service_alloc(mem, l->count, sizeof(*out));
    for (size_t i = 0; out != NULL && i < l->count; i++) {
        if ((out[i] = service_message(mem, AP_DESC(taint))) == NULL)
            return NULL;
        out[i]->key = service_strdup(mem, l->items[i].key);
        out[i]->value = service_strdup(mem, l->items[i].value);
        out[i]->effect = service_strdup(mem, l->items[i].effect);
    }
    return out;
}

/* The GroupInfo of g, copied into mem (the cluster's read lock is held); NULL when out
 * of memory. */
static AP(GroupInfo) * group_info(const cluster_t *c, const group_t *g, service_mem_t *mem) {
    AP(GroupInfo) *info = service_message(mem, AP_DESC(group_info));
    if (info == NULL ||
        (info->labels = labels_message(&g->spec.labels, AP_DESC(group_info__labels_entry), mem)) ==
            NULL ||
        (info->taints = taints_message(&g->spec.taints, mem)) == NULL)
        return NULL;
    info->n_labels = g->spec.labels.count;
    info->n_taints = g->spec.taints.count;
    info->id = service_strdup(mem, g->spec.id);
    info->exists = g->exists;
    info->autoprovisioned = g->autoprovisioned;
    info->machine_type = service_strdup(mem, g->spec.machine_type);
    info->zone = service_strdup(mem, g->spec.zone);
    /* What CA is told: min_size raised by the cluster-wide minimums, max_size cut by the
     * maxima, as NodeGroups advertises them. */
    info->min_size = g->min_size;
    info->max_size = g->max_size;
    if (g->managed) {
        cluster_nap_survey_t survey;
        cluster_nap_survey(c, &survey);
        cluster_nap_sizes(c, &survey, g, &info->min_size, &info->max_size);
    }
    info->target_size = g->target_size;
    return info;
}

/* *group: the GroupInfo of group id; FRUGAL_ENOTFOUND when there is none. */
static int find_group_info(service_ctx_t *ctx, const char *id, AP(GroupInfo) * *group,
                           service_mem_t *mem, frugal_err_t *err) {
    int rc = 0;
    cluster_read_lock(ctx->cluster);
    const group_t *g = cluster_find_group(ctx->cluster, id);
    if (g == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOTFOUND, "node group \"%s\" not found", id);
    else if ((*group = group_info(ctx->cluster, g, mem)) == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    cluster_read_unlock(ctx->cluster);
    return rc;
}

/* ------------------------------------------------------------------------------------
 * GetAvailableMachineTypes
 * ---------------------------------------------------------------------------------- */

static int ap_get_available_machine_types(service_ctx_t *ctx, const void *request, void *response,
                                          service_mem_t *mem, frugal_err_t *err) {
    AP(GetAvailableMachineTypesResponse) *resp = response;
    const frugal_config_t *cfg = ctx->cfg;
    const autoprov_config_t *ap = &cfg->autoprovisioning;
    size_t n = ap->machine_types_count;
    resp->machine_types = service_alloc(mem, n, sizeof(*resp->machine_types));
    if (resp->machine_types == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const machine_type_t *mt = config_find_machine_type(cfg, ap->machine_types[i]);
        if (mt == NULL)
            continue;
        AP(MachineType) *t = service_message(mem, AP_DESC(machine_type));
        if (t == NULL)
            return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        /* The configuration outlives the packing: its names are not copied. */
        t->name = mt->name;
        t->cpu_milli = mt->cpu_milli;
        t->memory_bytes = mt->memory_bytes;
        t->gpu = mt->gpu;
        t->gpu_type = mt->gpu_type != NULL ? mt->gpu_type : "";
        t->price = pricing_machine_price(cfg, mt, false, -1);
        resp->machine_types[resp->n_machine_types++] = t;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------
 * NewNodeGroup
 * ---------------------------------------------------------------------------------- */

/* Add a label of the request to spec's (what: the request's map); one a client may not
 * set, a bad key or value, or a key given with two values is refused. */
static int label_add(kv_list_t *l, const char *what, const char *key, const char *value,
                     frugal_err_t *err) {
    char why[FRUGAL_ERR_MSG_MAX];
    bool found;
    size_t at;
    /* The template sets the reserved ones itself: a group saying otherwise would lie about
     * its nodes. */
    if (group_rules_label(key, value, false, why, sizeof(why)) != GROUP_RULE_OK)
        return frugal_err_set(err, FRUGAL_EINVAL, "%s: %s", what, why);
    at = kv_list_find(l, key, &found);
    if (found && strcmp(l->items[at].value, value) != 0) {
        group_rules_label_twice(key, why, sizeof(why));
        return frugal_err_set(err, FRUGAL_EINVAL, "%s: %s", what, why);
    }
    if (kv_list_put(l, key, value) < 0)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    return 0;
}

static bool type_allowed(const autoprov_config_t *ap, const char *name) {
    for (size_t i = 0; i < ap->machine_types_count; i++)
        if (strcmp(ap->machine_types[i], name) == 0)
            return true;
    return false;
}

/* Validate req into spec (which the caller clears with group_spec_clear). */
static int build_spec(const frugal_config_t *cfg, const AP(NewNodeGroupRequest) * req,
                      group_spec_t *spec, frugal_err_t *err) {
    const autoprov_config_t *ap = &cfg->autoprovisioning;
    int rc;
    if (req->machine_type[0] == '\0')
        return frugal_err_set(err, FRUGAL_EINVAL, "machine_type is required");
    if (config_find_machine_type(cfg, req->machine_type) == NULL)
        return frugal_err_set(err, FRUGAL_EINVAL, "unknown machine type \"%s\"", req->machine_type);
    if (!type_allowed(ap, req->machine_type))
        return frugal_err_set(err, FRUGAL_EINVAL,
                              "machine type %s is not allowed for autoprovisioning "
                              "(autoprovisioning.machine_types)",
                              req->machine_type);
    const char *zone = NULL;
    if (req->zone[0] != '\0') {
        bool ok = false;
        for (size_t i = 0; i < ap->zones_count && !ok; i++)
            ok = strcmp(ap->zones[i], req->zone) == 0;
        if (!ok)
            return frugal_err_set(err, FRUGAL_EINVAL,
                                  "zone %s is not allowed for autoprovisioning "
                                  "(autoprovisioning.zones)",
                                  req->zone);
        zone = req->zone;
    } else if (ap->zones_count > 0) {
        zone = ap->zones[0];
    }

    for (size_t i = 0; i < req->n_labels; i++) {
        if ((rc = label_add(&spec->labels, "labels", req->labels[i]->key, req->labels[i]->value,
                            err)) != 0)
            return rc;
    }
    /* System labels go on the nodes like the others; a clash with a label is an error. */
    for (size_t i = 0; i < req->n_system_labels; i++) {
        if ((rc = label_add(&spec->labels, "system_labels", req->system_labels[i]->key,
                            req->system_labels[i]->value, err)) != 0)
            return rc;
    }

    /* Kept sorted by taint_compare, like every taint list of a group. */
    for (size_t i = 0; i < req->n_taints; i++) {
        const AP(Taint) *t = req->taints[i];
        char why[FRUGAL_ERR_MSG_MAX];
        if (group_rules_taint(t->key, t->value, t->effect, why, sizeof(why)) != GROUP_RULE_OK)
            return frugal_err_set(err, FRUGAL_EINVAL, "taints[%zu]: %s", i, why);
        if (taint_list_has(&spec->taints, t->key, t->effect)) {
            group_rules_taint_twice(t->key, t->effect, why, sizeof(why));
            return frugal_err_set(err, FRUGAL_EINVAL, "taints[%zu]: %s", i, why);
        }
        if (taint_list_put(&spec->taints, t->key, t->value, t->effect) != 0)
            return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }

    for (size_t i = 0; i < req->n_extra_resources; i++) {
        const char *k = req->extra_resources[i]->key, *v = req->extra_resources[i]->value;
        char why[FRUGAL_ERR_MSG_MAX];
        bool found;
        size_t at = kv_list_find(&spec->extra_resources, k, &found);
        if (group_rules_resource(k, v, why, sizeof(why)) != GROUP_RULE_OK)
            return frugal_err_set(err, FRUGAL_EINVAL, "extra_resources: %s", why);
        if (found && strcmp(spec->extra_resources.items[at].value, v) != 0) {
            group_rules_resource_twice(k, why, sizeof(why));
            return frugal_err_set(err, FRUGAL_EINVAL, "extra_resources: %s (\"%s\" and \"%s\")",
                                  why, spec->extra_resources.items[at].value, v);
        }
        if (kv_list_put(&spec->extra_resources, k, v) < 0)
            return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }

    spec->machine_type = strdup(req->machine_type);
    if (spec->machine_type == NULL || (zone != NULL && (spec->zone = strdup(zone)) == NULL))
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    spec->spot = false;
    spec->spot_price = -1;
    return autoprov_group_id(ap->prefix, spec->machine_type, spec->zone, &spec->labels,
                             &spec->taints, &spec->extra_resources, &spec->id, err);
}

static int ap_new_node_group(service_ctx_t *ctx, const void *request, void *response,
                             service_mem_t *mem, frugal_err_t *err) {
    const AP(NewNodeGroupRequest) *req = request;
    AP(NewNodeGroupResponse) *resp = response;
    group_spec_t spec;
    memset(&spec, 0, sizeof(spec));
    uint8_t *node = NULL;
    size_t len = 0;
    bool added = false;
    int rc;
    if ((rc = require_enabled(ctx, "NewNodeGroup", err)) != 0 ||
        (rc = build_spec(ctx->cfg, req, &spec, err)) != 0 ||
        (rc = template_build(ctx->cfg, &spec, &node, &len, err)) != 0 ||
        (rc = cluster_nap_new_group(ctx->cluster, &spec, &added, err)) != 0)
        goto out;
    rc = find_group_info(ctx, spec.id, &resp->group, mem, err);
    if (rc == FRUGAL_ENOTFOUND)
        rc = frugal_err_set(err, FRUGAL_EINTERNAL, "node group %s vanished", spec.id);
    if (rc == 0)
        resp->template_node = service_bytes(mem, node, len);
out:
    free(node);
    group_spec_clear(&spec);
    return rc;
}

/* ------------------------------------------------------------------------------------
 * NodeGroupCreate, NodeGroupDelete, NodeGroupInfo
 * ---------------------------------------------------------------------------------- */

static int ap_node_group_create(service_ctx_t *ctx, const void *request, void *response,
                                service_mem_t *mem, frugal_err_t *err) {
    const AP(NodeGroupCreateRequest) *req = request;
    AP(NodeGroupCreateResponse) *resp = response;
    int rc;
    if ((rc = require_enabled(ctx, "NodeGroupCreate", err)) != 0 ||
        (rc = cluster_nap_create_group(ctx->cluster, &ctx->call, req->id, err)) != 0)
        return rc;
    return find_group_info(ctx, req->id, &resp->group, mem, err);
}

static int ap_node_group_delete(service_ctx_t *ctx, const void *request, void *response,
                                service_mem_t *mem, frugal_err_t *err) {
    const AP(NodeGroupDeleteRequest) *req = request;
    int rc = require_enabled(ctx, "NodeGroupDelete", err);
    return rc != 0 ? rc : cluster_nap_delete_group(ctx->cluster, &ctx->call, req->id, err);
}

static int ap_node_group_info(service_ctx_t *ctx, const void *request, void *response,
                              service_mem_t *mem, frugal_err_t *err) {
    const AP(NodeGroupInfoRequest) *req = request;
    AP(NodeGroupInfoResponse) *resp = response;
    return find_group_info(ctx, req->id, &resp->group, mem, err);
}

/* ------------------------------------------------------------------------------------
 * GetResourceLimiter
 * ---------------------------------------------------------------------------------- */

static int ap_get_resource_limiter(service_ctx_t *ctx, const void *request, void *response,
                                   service_mem_t *mem, frugal_err_t *err) {
    AP(GetResourceLimiterResponse) *resp = response;
    const autoprov_config_t *ap = &ctx->cfg->autoprovisioning;
    AP(ResourceLimit) *cpu = service_message(mem, AP_DESC(resource_limit));
    AP(ResourceLimit) *memory = service_message(mem, AP_DESC(resource_limit));
    resp->limits = service_alloc(mem, 2, sizeof(*resp->limits));
    if (cpu == NULL || memory == NULL || resp->limits == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    cpu->resource = "cpu";
    memory->resource = "memory";
    cpu->max = memory->max = INT64_MAX; /* disabled, the limits bound nothing */
    if (ap->enabled) {
        /* Whole cores: a min rounds up, a max down, so the limits are never loosened. */
        cpu->min = (ap->min_cpu_milli + 999) / 1000;
        cpu->max = ap->max_cpu_milli == INT64_MAX ? INT64_MAX : ap->max_cpu_milli / 1000;
        memory->min = ap->min_memory_bytes;
        memory->max = ap->max_memory_bytes;
    }
    resp->n_limits = 2;
    resp->limits[0] = cpu;
    resp->limits[1] = memory;
    return 0;
}

/* ------------------------------------------------------------------------------------
 * ProposeNodeGroups
 * ---------------------------------------------------------------------------------- */

static bool group_exists(void *ctx, const char *id) {
    const group_t *g = cluster_find_group((cluster_t *)ctx, id);
    return g != NULL && g->exists;
}

/* The proposals of res for pods, copied into resp's memory. */
static int reply_proposals(const propose_pod_t *pods, const propose_result_t *res,
                           AP(ProposeNodeGroupsResponse) * resp, service_mem_t *mem,
                           frugal_err_t *err) {
    resp->proposals = service_alloc(mem, res->count, sizeof(*resp->proposals));
    resp->unschedulable_pods =
        service_alloc(mem, res->unschedulable_count, sizeof(*resp->unschedulable_pods));
    if (resp->proposals == NULL || resp->unschedulable_pods == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    for (size_t i = 0; i < res->count; i++) {
        const propose_proposal_t *p = &res->proposals[i];
        AP(Proposal) *q = service_message(mem, AP_DESC(proposal));
        if (q == NULL ||
            (q->labels = labels_message(&p->labels, AP_DESC(proposal__labels_entry), mem)) ==
                NULL ||
            (q->taints = taints_message(&p->taints, mem)) == NULL ||
            (q->pods = service_alloc(mem, p->pods_count, sizeof(*q->pods))) == NULL)
            return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        q->group_id = service_strdup(mem, p->group_id);
        q->machine_type = p->machine_type->name; /* the configuration's */
        q->zone = p->zone != NULL ? (char *)p->zone : "";
        q->n_labels = p->labels.count;
        q->n_taints = p->taints.count;
        for (size_t j = 0; j < p->pods_count; j++)
            q->pods[j] = service_strdup(mem, pods[p->pods[j]].name);
        q->n_pods = p->pods_count;
        q->node_count = p->node_count;
        q->score = p->figures.score;
        q->exists = p->exists;
        resp->proposals[i] = q;
    }
    resp->n_proposals = res->count;
    for (size_t i = 0; i < res->unschedulable_count; i++)
        resp->unschedulable_pods[i] = service_strdup(mem, pods[res->unschedulable[i]].name);
    resp->n_unschedulable_pods = res->unschedulable_count;
    return 0;
}

/* The pods CA asks proposals for are demand too, remembered as BestOptions remembers
 * its pods (by their creation times and identities: the same pods usually come to
 * BestOptions next, as options of the proposed groups). Out of memory: not remembered. */
static void ap_remember(demand_memory_t *memory, const propose_pod_t *pods, size_t n) {
    if (n == 0)
        return;
    resources_t *requests = calloc(n, sizeof(*requests));
    pod_lifetime_t *lifetimes = calloc(n, sizeof(*lifetimes));
    int64_t *created = calloc(n, sizeof(*created));
    uint64_t *identities = calloc(n, sizeof(*identities));
    if (requests != NULL && lifetimes != NULL && created != NULL && identities != NULL) {
        for (size_t i = 0; i < n; i++) {
            requests[i] = pods[i].request;
            lifetimes[i] = pods[i].lifetime;
            created[i] = pods[i].created_ms;
            identities[i] = pods[i].identity;
        }
        demand_batch_t b = {requests,
                            lifetimes,
                            NULL,
                            created,
                            identities,
                            n,
                            demand_request_ms(created, n, clock_wall_ms())};
        demand_remember(memory, &b);
    }
    free(requests);
    free(lifetimes);
    free(created);
    free(identities);
}

static int ap_propose_node_groups(service_ctx_t *ctx, const void *request, void *response,
                                  service_mem_t *mem, frugal_err_t *err) {
    const AP(ProposeNodeGroupsRequest) *req = request;
    int rc = 0;
    size_t n = req->n_pods, decoded = 0;
    propose_pod_t *pods = calloc(n ? n : 1, sizeof(*pods));
    if (pods == NULL) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto out;
    }
    for (; decoded < n; decoded++) {
        frugal_err_t perr = {0};
        rc = propose_pod_decode(req->pods[decoded].data, req->pods[decoded].len, &pods[decoded],
                                &perr);
        if (rc != 0) {
            rc = frugal_err_set(err, rc, "pods[%zu]: %s", decoded, perr.msg);
            goto out;
        }
    }
    if (ctx->cfg->ranking.strategy == RANKING_STRATEGY_DEMAND_FIT && ctx->demand != NULL)
        ap_remember(ctx->demand, pods, n);
    propose_result_t res;
    cluster_read_lock(ctx->cluster);
    propose_params_t params = {ctx->cfg, cluster_node_count(ctx->cluster), group_exists,
                               ctx->cluster};
    rc = propose_node_groups(&params, pods, n, &res, err);
    cluster_read_unlock(ctx->cluster);
    if (rc == 0) {
        rc = reply_proposals(pods, &res, response, mem, err);
        propose_result_clear(&res);
    }
out:
    for (size_t i = 0; i < decoded; i++)
        propose_pod_clear(&pods[i]);
    free(pods);
    return rc;
}

/* A method of the table: its path, its request and response types, its handler. */
#define AP_METHOD(path, type, fn)                                                                  \
    SERVICE_TYPED(path, AP_DESC(type##_request), AP_DESC(type##_response), fn)
#define AP_CHANGE(path, type, fn)                                                                  \
    SERVICE_TYPED_CHANGE(path, AP_DESC(type##_request), AP_DESC(type##_response), fn)

static const service_method_t autoprovisioning_methods[] = {
    AP_METHOD(WIRE_AP_GET_AVAILABLE_MACHINE_TYPES, get_available_machine_types,
              ap_get_available_machine_types),
    AP_CHANGE(WIRE_AP_NEW_NODE_GROUP, new_node_group, ap_new_node_group),
    AP_CHANGE(WIRE_AP_NODE_GROUP_CREATE, node_group_create, ap_node_group_create),
    AP_CHANGE(WIRE_AP_NODE_GROUP_DELETE, node_group_delete, ap_node_group_delete),
    AP_METHOD(WIRE_AP_NODE_GROUP_INFO, node_group_info, ap_node_group_info),
    AP_METHOD(WIRE_AP_GET_RESOURCE_LIMITER, get_resource_limiter, ap_get_resource_limiter),
    AP_METHOD(WIRE_AP_PROPOSE_NODE_GROUPS, propose_node_groups, ap_propose_node_groups),
};

const service_def_t service_autoprovisioning = {
    WIRE_SERVICE_AUTOPROVISIONING, autoprovisioning_methods,
    sizeof(autoprovisioning_methods) / sizeof(autoprovisioning_methods[0]),
    LISTENER_SERVICE_AUTOPROVISIONING};
