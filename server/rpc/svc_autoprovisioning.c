/* frugal.v1.Autoprovisioning (proto/frugal.proto): node auto-provisioning driven by a
 * client. Converts requests, validates them, calls the cluster (cluster_nap.h), the
 * template and the proposal modules, converts answers. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoprov.h"
#include "cluster.h"
#include "cluster_nap.h"
#include "codec.h"
#include "frugal.pb-c.h"
#include "k8s_name.h"
#include "pricing.h"
#include "propose.h"
#include "service.h"
#include "template.h"
#include "wire_names.h"

#define UNPACK(desc, request, out, err)                                                            \
    codec_unpack(AP_DESC(desc), request, (ProtobufCMessage **)(out), err)

static int require_enabled(const service_ctx_t *ctx, const char *what, frugal_err_t *err) {
    if (!ctx->cfg->autoprovisioning.enabled)
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "%s: autoprovisioning is disabled (set autoprovisioning.enabled)",
                              what);
    return 0;
}

/* ------------------------------------------------------------------------------------
 * GroupInfo of a published group (read lock held while it is packed)
 * ---------------------------------------------------------------------------------- */

typedef struct info_buf {
    AP(GroupInfo) info;
    AP(GroupInfo__LabelsEntry) * labels;
    AP(GroupInfo__LabelsEntry) * *label_ptrs;
    AP(Taint) * taints;
    AP(Taint) * *taint_ptrs;
} info_buf_t;

static void info_free(info_buf_t *b) {
    free(b->labels);
    free(b->label_ptrs);
    free(b->taints);
    free(b->taint_ptrs);
}

/* Strings are borrowed from g: pack before releasing the read lock. */
static int info_fill(const cluster_t *c, const group_t *g, info_buf_t *b, frugal_err_t *err) {
    AP(GroupInfo) init = AP_INIT(GROUP_INFO);
    memset(b, 0, sizeof(*b));
    b->info = init;
    size_t nl = g->spec.labels.count, nt = g->spec.taints.count;
    b->labels = calloc(nl ? nl : 1, sizeof(*b->labels));
    b->label_ptrs = calloc(nl ? nl : 1, sizeof(*b->label_ptrs));
    b->taints = calloc(nt ? nt : 1, sizeof(*b->taints));
    b->taint_ptrs = calloc(nt ? nt : 1, sizeof(*b->taint_ptrs));
    if (b->labels == NULL || b->label_ptrs == NULL || b->taints == NULL || b->taint_ptrs == NULL) {
        info_free(b);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < nl; i++) {
        AP(GroupInfo__LabelsEntry) e = AP_INIT(GROUP_INFO__LABELS_ENTRY);
        e.key = g->spec.labels.items[i].key;
        e.value = g->spec.labels.items[i].value;
        b->labels[i] = e;
        b->label_ptrs[i] = &b->labels[i];
    }
    for (size_t i = 0; i < nt; i++) {
        AP(Taint) t = AP_INIT(TAINT);
        t.key = g->spec.taints.items[i].key;
        t.value = g->spec.taints.items[i].value != NULL ? g->spec.taints.items[i].value : "";
        t.effect = g->spec.taints.items[i].effect;
        b->taints[i] = t;
        b->taint_ptrs[i] = &b->taints[i];
    }
    b->info.id = g->spec.id;
    b->info.exists = g->exists;
    b->info.autoprovisioned = g->autoprovisioned;
    b->info.machine_type = g->spec.machine_type;
    b->info.zone = g->spec.zone != NULL ? g->spec.zone : "";
    b->info.n_labels = nl;
    b->info.labels = b->label_ptrs;
    b->info.n_taints = nt;
    b->info.taints = b->taint_ptrs;
    b->info.min_size = g->min_size;
    /* What CA is told: max_size cut by the cluster-wide limits. */
    b->info.max_size = g->managed ? cluster_nap_max_size(c, g) : g->max_size;
    b->info.target_size = g->target_size;
    return 0;
}

/* ------------------------------------------------------------------------------------
 * GetAvailableMachineTypes
 * ---------------------------------------------------------------------------------- */

static int ap_get_available_machine_types(service_ctx_t *ctx, grpc_byte_buffer *request,
                                          gpr_timespec deadline, grpc_byte_buffer **response,
                                          frugal_err_t *err) {
    AP(GetAvailableMachineTypesRequest) * req;
    int rc = UNPACK(get_available_machine_types_request, request, &req, err);
    if (rc != 0)
        return rc;
    codec_free(req);
    const frugal_config_t *cfg = ctx->cfg;
    const autoprov_config_t *ap = &cfg->autoprovisioning;
    size_t n = ap->machine_types_count;
    AP(MachineType) *types = calloc(n ? n : 1, sizeof(*types));
    AP(MachineType) **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
    if (types == NULL || ptrs == NULL) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto out;
    }
    AP(GetAvailableMachineTypesResponse) resp = AP_INIT(GET_AVAILABLE_MACHINE_TYPES_RESPONSE);
    for (size_t i = 0; i < n; i++) {
        const machine_type_t *mt = config_find_machine_type(cfg, ap->machine_types[i]);
        if (mt == NULL)
            continue;
        AP(MachineType) t = AP_INIT(MACHINE_TYPE);
        t.name = mt->name;
        t.cpu_milli = mt->cpu_milli;
        t.memory_bytes = mt->memory_bytes;
        t.gpu = mt->gpu;
        t.gpu_type = mt->gpu_type != NULL ? mt->gpu_type : "";
        t.price = pricing_machine_price(cfg, mt, false, -1);
        types[resp.n_machine_types] = t;
        ptrs[resp.n_machine_types] = &types[resp.n_machine_types];
        resp.n_machine_types++;
    }
    resp.machine_types = ptrs;
    rc = codec_reply(&resp.base, response, err);
out:
    free(types);
    free(ptrs);
    return rc;
}

/* ------------------------------------------------------------------------------------
 * NewNodeGroup
 * ---------------------------------------------------------------------------------- */

/* Add key=value to the sorted list l; a key already present with another value is
 * refused (what names the map for the message). */
static int kv_add(kv_list_t *l, const char *key, const char *value, const char *what,
                  frugal_err_t *err) {
    bool found;
    size_t at = kv_list_find(l, key, &found);
    if (found && strcmp(l->items[at].value, value) != 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "%s: key %s given twice (\"%s\" and \"%s\")",
                              what, key, l->items[at].value, value);
    if (kv_list_put(l, key, value) < 0)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    return 0;
}

static int check_label(const char *what, const char *key, const char *value, frugal_err_t *err) {
    /* The template sets these itself: a group saying otherwise would lie about its nodes. */
    if (k8s_name_is_reserved_label(key))
        return frugal_err_set(err, FRUGAL_EINVAL,
                              "%s: %s is set by frugal from the machine type and zone", what, key);
    if (!k8s_name_is_key(key))
        return frugal_err_set(err, FRUGAL_EINVAL,
                              "%s: invalid key \"%s\": want [prefix/]name, name 1-63 characters "
                              "of [A-Za-z0-9-_.] starting and ending alphanumeric",
                              what, key);
    if (!k8s_name_is_value(value))
        return frugal_err_set(err, FRUGAL_EINVAL,
                              "%s: invalid value \"%s\" for key %s: want at most 63 characters "
                              "of [A-Za-z0-9-_.] starting and ending alphanumeric",
                              what, value, key);
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
        if ((rc = check_label("labels", req->labels[i]->key, req->labels[i]->value, err)) != 0 ||
            (rc = kv_add(&spec->labels, req->labels[i]->key, req->labels[i]->value, "labels",
                         err)) != 0)
            return rc;
    }
    /* System labels go on the nodes like the others; a clash with a label is an error. */
    for (size_t i = 0; i < req->n_system_labels; i++) {
        const char *k = req->system_labels[i]->key, *v = req->system_labels[i]->value;
        if ((rc = check_label("system_labels", k, v, err)) != 0 ||
            (rc = kv_add(&spec->labels, k, v, "labels and system_labels", err)) != 0)
            return rc;
    }

    /* Kept sorted by taint_compare, like every taint list of a group. */
    for (size_t i = 0; i < req->n_taints; i++) {
        const AP(Taint) *t = req->taints[i];
        if (!k8s_name_is_key(t->key))
            return frugal_err_set(err, FRUGAL_EINVAL, "taints[%zu]: invalid key \"%s\"", i, t->key);
        if (!k8s_name_is_value(t->value))
            return frugal_err_set(err, FRUGAL_EINVAL,
                                  "taints[%zu]: invalid value \"%s\" for key %s", i, t->value,
                                  t->key);
        if (!k8s_name_is_taint_effect(t->effect))
            return frugal_err_set(err, FRUGAL_EINVAL,
                                  "taints[%zu]: invalid effect \"%s\" for key %s: want NoSchedule, "
                                  "PreferNoSchedule or NoExecute",
                                  i, t->effect, t->key);
        if (taint_list_has(&spec->taints, t->key, t->effect))
            return frugal_err_set(err, FRUGAL_EINVAL, "taints: %s:%s given twice", t->key,
                                  t->effect);
        if (taint_list_put(&spec->taints, t->key, t->value, t->effect) != 0)
            return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }

    for (size_t i = 0; i < req->n_extra_resources; i++) {
        const char *k = req->extra_resources[i]->key, *v = req->extra_resources[i]->value;
        int64_t q;
        frugal_err_t qerr;
        if (!k8s_name_is_key(k))
            return frugal_err_set(err, FRUGAL_EINVAL,
                                  "extra_resources: invalid resource name \"%s\"", k);
        if (quantity_parse_value(v, &q, &qerr) != 0 || q < 0)
            return frugal_err_set(err, FRUGAL_EINVAL,
                                  "extra_resources: %s: invalid quantity \"%s\"", k, v);
        if ((rc = kv_add(&spec->extra_resources, k, v, "extra_resources", err)) != 0)
            return rc;
    }

    spec->machine_type = strdup(req->machine_type);
    if (spec->machine_type == NULL || (zone != NULL && (spec->zone = strdup(zone)) == NULL))
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    spec->spot = false;
    spec->spot_price = -1;
    return autoprov_group_id(ap->prefix, spec->machine_type, spec->zone, &spec->labels,
                             &spec->taints, &spec->extra_resources, &spec->id, err);
}

static int ap_new_node_group(service_ctx_t *ctx, grpc_byte_buffer *request, gpr_timespec deadline,
                             grpc_byte_buffer **response, frugal_err_t *err) {
    AP(NewNodeGroupRequest) * req;
    int rc = UNPACK(new_node_group_request, request, &req, err);
    if (rc != 0)
        return rc;
    group_spec_t spec;
    memset(&spec, 0, sizeof(spec));
    uint8_t *node = NULL;
    size_t len = 0;
    bool added = false;
    if ((rc = require_enabled(ctx, "NewNodeGroup", err)) != 0 ||
        (rc = build_spec(ctx->cfg, req, &spec, err)) != 0 ||
        (rc = template_build(ctx->cfg, &spec, &node, &len, err)) != 0 ||
        (rc = cluster_nap_new_group(ctx->cluster, &spec, &added, err)) != 0)
        goto out;

    cluster_read_lock(ctx->cluster);
    const group_t *g = cluster_find_group(ctx->cluster, spec.id);
    info_buf_t info;
    if (g == NULL)
        rc = frugal_err_set(err, FRUGAL_EINTERNAL, "node group %s vanished", spec.id);
    else if ((rc = info_fill(ctx->cluster, g, &info, err)) == 0) {
        AP(NewNodeGroupResponse) resp = AP_INIT(NEW_NODE_GROUP_RESPONSE);
        resp.group = &info.info;
        resp.template_node.data = node;
        resp.template_node.len = len;
        rc = codec_reply(&resp.base, response, err);
        info_free(&info);
    }
    cluster_read_unlock(ctx->cluster);
out:
    free(node);
    group_spec_clear(&spec);
    codec_free(req);
    return rc;
}

/* ------------------------------------------------------------------------------------
 * NodeGroupCreate, NodeGroupDelete, NodeGroupInfo
 * ---------------------------------------------------------------------------------- */

/* Pack a response holding the GroupInfo of id; desc-specific wrapping by the caller. */
static int reply_group(service_ctx_t *ctx, const char *id, bool create_response,
                       grpc_byte_buffer **response, frugal_err_t *err) {
    int rc;
    cluster_read_lock(ctx->cluster);
    const group_t *g = cluster_find_group(ctx->cluster, id);
    info_buf_t info;
    if (g == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOTFOUND, "node group \"%s\" not found", id);
    else if ((rc = info_fill(ctx->cluster, g, &info, err)) == 0) {
        if (create_response) {
            AP(NodeGroupCreateResponse) resp = AP_INIT(NODE_GROUP_CREATE_RESPONSE);
            resp.group = &info.info;
            rc = codec_reply(&resp.base, response, err);
        } else {
            AP(NodeGroupInfoResponse) resp = AP_INIT(NODE_GROUP_INFO_RESPONSE);
            resp.group = &info.info;
            rc = codec_reply(&resp.base, response, err);
        }
        info_free(&info);
    }
    cluster_read_unlock(ctx->cluster);
    return rc;
}

static int ap_node_group_create(service_ctx_t *ctx, grpc_byte_buffer *request,
                                gpr_timespec deadline, grpc_byte_buffer **response,
                                frugal_err_t *err) {
    AP(NodeGroupCreateRequest) * req;
    int rc = UNPACK(node_group_create_request, request, &req, err);
    if (rc != 0)
        return rc;
    if ((rc = require_enabled(ctx, "NodeGroupCreate", err)) == 0 &&
        (rc = cluster_nap_create_group(ctx->cluster, &ctx->call, req->id, err)) == 0)
        rc = reply_group(ctx, req->id, true, response, err);
    codec_free(req);
    return rc;
}

static int ap_node_group_delete(service_ctx_t *ctx, grpc_byte_buffer *request,
                                gpr_timespec deadline, grpc_byte_buffer **response,
                                frugal_err_t *err) {
    AP(NodeGroupDeleteRequest) * req;
    int rc = UNPACK(node_group_delete_request, request, &req, err);
    if (rc != 0)
        return rc;
    if ((rc = require_enabled(ctx, "NodeGroupDelete", err)) == 0 &&
        (rc = cluster_nap_delete_group(ctx->cluster, &ctx->call, req->id, err)) == 0) {
        AP(NodeGroupDeleteResponse) resp = AP_INIT(NODE_GROUP_DELETE_RESPONSE);
        rc = codec_reply(&resp.base, response, err);
    }
    codec_free(req);
    return rc;
}

static int ap_node_group_info(service_ctx_t *ctx, grpc_byte_buffer *request, gpr_timespec deadline,
                              grpc_byte_buffer **response, frugal_err_t *err) {
    AP(NodeGroupInfoRequest) * req;
    int rc = UNPACK(node_group_info_request, request, &req, err);
    if (rc != 0)
        return rc;
    rc = reply_group(ctx, req->id, false, response, err);
    codec_free(req);
    return rc;
}

/* ------------------------------------------------------------------------------------
 * GetResourceLimiter
 * ---------------------------------------------------------------------------------- */

static int ap_get_resource_limiter(service_ctx_t *ctx, grpc_byte_buffer *request,
                                   gpr_timespec deadline, grpc_byte_buffer **response,
                                   frugal_err_t *err) {
    AP(GetResourceLimiterRequest) * req;
    int rc = UNPACK(get_resource_limiter_request, request, &req, err);
    if (rc != 0)
        return rc;
    codec_free(req);
    const autoprov_config_t *ap = &ctx->cfg->autoprovisioning;
    AP(ResourceLimit) cpu = AP_INIT(RESOURCE_LIMIT), mem = AP_INIT(RESOURCE_LIMIT);
    cpu.resource = "cpu";
    /* Whole cores: a min rounds up, a max down, so the limits are never loosened. */
    cpu.min = (ap->min_cpu_milli + 999) / 1000;
    cpu.max = ap->max_cpu_milli == INT64_MAX ? INT64_MAX : ap->max_cpu_milli / 1000;
    mem.resource = "memory";
    mem.min = ap->min_memory_bytes;
    mem.max = ap->max_memory_bytes;
    AP(ResourceLimit) * limits[2] = {&cpu, &mem};
    AP(GetResourceLimiterResponse) resp = AP_INIT(GET_RESOURCE_LIMITER_RESPONSE);
    resp.n_limits = 2;
    resp.limits = limits;
    return codec_reply(&resp.base, response, err);
}

/* ------------------------------------------------------------------------------------
 * ProposeNodeGroups
 * ---------------------------------------------------------------------------------- */

static bool group_exists(void *ctx, const char *id) {
    const group_t *g = cluster_find_group((cluster_t *)ctx, id);
    return g != NULL && g->exists;
}

typedef struct proposal_buf {
    AP(Proposal) * items;
    AP(Proposal) * *ptrs;
    AP(Proposal__LabelsEntry) * labels;
    AP(Proposal__LabelsEntry) * *label_ptrs;
    AP(Taint) * taints;
    AP(Taint) * *taint_ptrs;
    char **names;
    char **unschedulable;
} proposal_buf_t;

static void proposal_buf_free(proposal_buf_t *b) {
    free(b->items);
    free(b->ptrs);
    free(b->labels);
    free(b->label_ptrs);
    free(b->taints);
    free(b->taint_ptrs);
    free(b->names);
    free(b->unschedulable);
}

static int reply_proposals(const propose_pod_t *pods, const propose_result_t *res,
                           grpc_byte_buffer **response, frugal_err_t *err) {
    size_t n = res->count, nl = 0, nt = 0, np = 0;
    for (size_t i = 0; i < n; i++) {
        nl += res->proposals[i].labels.count;
        nt += res->proposals[i].taints.count;
        np += res->proposals[i].pods_count;
    }
    proposal_buf_t b;
    b.items = calloc(n + 1, sizeof(*b.items));
    b.ptrs = calloc(n + 1, sizeof(*b.ptrs));
    b.labels = calloc(nl + 1, sizeof(*b.labels));
    b.label_ptrs = calloc(nl + 1, sizeof(*b.label_ptrs));
    b.taints = calloc(nt + 1, sizeof(*b.taints));
    b.taint_ptrs = calloc(nt + 1, sizeof(*b.taint_ptrs));
    b.names = calloc(np + 1, sizeof(*b.names));
    b.unschedulable = calloc(res->unschedulable_count + 1, sizeof(*b.unschedulable));
    int rc;
    if (b.items == NULL || b.ptrs == NULL || b.labels == NULL || b.label_ptrs == NULL ||
        b.taints == NULL || b.taint_ptrs == NULL || b.names == NULL || b.unschedulable == NULL) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto out;
    }
    size_t il = 0, it = 0, ip = 0;
    for (size_t i = 0; i < n; i++) {
        const propose_proposal_t *p = &res->proposals[i];
        AP(Proposal) init = AP_INIT(PROPOSAL);
        AP(Proposal) *q = &b.items[i];
        *q = init;
        q->group_id = p->group_id;
        q->machine_type = p->machine_type->name;
        q->zone = p->zone != NULL ? (char *)p->zone : "";
        q->labels = &b.label_ptrs[il];
        for (size_t j = 0; j < p->labels.count; j++, il++) {
            AP(Proposal__LabelsEntry) e = AP_INIT(PROPOSAL__LABELS_ENTRY);
            e.key = p->labels.items[j].key;
            e.value = p->labels.items[j].value;
            b.labels[il] = e;
            b.label_ptrs[il] = &b.labels[il];
        }
        q->n_labels = p->labels.count;
        q->taints = &b.taint_ptrs[it];
        for (size_t j = 0; j < p->taints.count; j++, it++) {
            AP(Taint) t = AP_INIT(TAINT);
            t.key = p->taints.items[j].key;
            t.value = p->taints.items[j].value;
            t.effect = p->taints.items[j].effect;
            b.taints[it] = t;
            b.taint_ptrs[it] = &b.taints[it];
        }
        q->n_taints = p->taints.count;
        q->pods = &b.names[ip];
        for (size_t j = 0; j < p->pods_count; j++)
            b.names[ip++] = pods[p->pods[j]].name;
        q->n_pods = p->pods_count;
        q->node_count = p->node_count;
        q->score = p->figures.score;
        q->exists = p->exists;
        b.ptrs[i] = q;
    }
    for (size_t i = 0; i < res->unschedulable_count; i++)
        b.unschedulable[i] = pods[res->unschedulable[i]].name;
    AP(ProposeNodeGroupsResponse) resp = AP_INIT(PROPOSE_NODE_GROUPS_RESPONSE);
    resp.n_proposals = n;
    resp.proposals = b.ptrs;
    resp.n_unschedulable_pods = res->unschedulable_count;
    resp.unschedulable_pods = b.unschedulable;
    rc = codec_reply(&resp.base, response, err);
out:
    proposal_buf_free(&b);
    return rc;
}

static int ap_propose_node_groups(service_ctx_t *ctx, grpc_byte_buffer *request,
                                  gpr_timespec deadline, grpc_byte_buffer **response,
                                  frugal_err_t *err) {
    AP(ProposeNodeGroupsRequest) * req;
    int rc = UNPACK(propose_node_groups_request, request, &req, err);
    if (rc != 0)
        return rc;
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
    if (ctx->cfg->ranking.strategy == RANKING_STRATEGY_DEMAND_FIT && ctx->demand != NULL) {
        /* The pods CA asks proposals for are demand too (lifetime not decoded: unknown). */
        resources_t *seen = calloc(n ? n : 1, sizeof(*seen));
        for (size_t i = 0; seen != NULL && i < n; i++)
            seen[i] = pods[i].request;
        if (seen != NULL)
            demand_record(ctx->demand, seen, NULL, n);
        free(seen);
    }
    propose_result_t res;
    cluster_read_lock(ctx->cluster);
    propose_params_t params = {ctx->cfg, cluster_node_count(ctx->cluster), group_exists,
                               ctx->cluster};
    rc = propose_node_groups(&params, pods, n, &res, err);
    cluster_read_unlock(ctx->cluster);
    if (rc == 0) {
        rc = reply_proposals(pods, &res, response, err);
        propose_result_clear(&res);
    }
out:
    for (size_t i = 0; i < decoded; i++)
        propose_pod_clear(&pods[i]);
    free(pods);
    codec_free(req);
    return rc;
}

static const service_method_t autoprovisioning_methods[] = {
    {WIRE_AP_GET_AVAILABLE_MACHINE_TYPES, ap_get_available_machine_types},
    {WIRE_AP_NEW_NODE_GROUP, ap_new_node_group},
    {WIRE_AP_NODE_GROUP_CREATE, ap_node_group_create},
    {WIRE_AP_NODE_GROUP_DELETE, ap_node_group_delete},
    {WIRE_AP_NODE_GROUP_INFO, ap_node_group_info},
    {WIRE_AP_GET_RESOURCE_LIMITER, ap_get_resource_limiter},
    {WIRE_AP_PROPOSE_NODE_GROUPS, ap_propose_node_groups},
};

const service_def_t service_autoprovisioning = {
    WIRE_SERVICE_AUTOPROVISIONING, autoprovisioning_methods,
    sizeof(autoprovisioning_methods) / sizeof(autoprovisioning_methods[0]),
    LISTENER_SERVICE_AUTOPROVISIONING};
