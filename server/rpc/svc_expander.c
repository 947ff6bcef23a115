/* grpcplugin.Expander/BestOptions (docs/wire.md, "grpcplugin.Expander"; docs/ranking.md).
 *
 * The request is walked in place over the received slices (expander_decode.c), every
 * option is converted to a decide_option_t (its decoded template node, its pods'
 * effective requests, the cluster's view of its group: spot settings, existence,
 * size), the decision is decide.c's (shared with `frugal plan`), and the answer is
 * written as fresh option headers followed by sub-slices of the request for the pods:
 * nothing big is copied, neither in nor out. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>
#include <grpc/support/time.h>

#include "clock.h"
#include "decide.h"
#include "expander_decode.h"
#include "log.h"
#include "metrics.h"
#include "node_info.h"
#include "ranking.h"
#include "service.h"
#include "testing/svc_expander_testing.h"
#include "wire_names.h"

/* Per template node of the request, decoded on first use. */
typedef struct expander__node_cache {
    int state; /* 0 not yet, 1 decoded, -1 undecodable */
    node_info_t info;
} expander__node_cache_t;

/* The decoded template node of group id, decoded once per request; NULL when the
 * request has none (*missing set) or it cannot be decoded. FRUGAL_ENOMEM in *rc. */
static const node_info_t *expander__template(const expander_request_t *req,
                                             expander__node_cache_t *nodes, const char *id,
                                             bool *missing, int *rc, frugal_err_t *err) {
    const expander_node_t *node = expander_request_find_node(req, id);
    *missing = node == NULL;
    if (node == NULL)
        return NULL;
    expander__node_cache_t *nc = &nodes[node - req->nodes];
    if (nc->state == 0) {
        frugal_err_t nerr = {0};
        nc->state = node_info_decode(node->data, node->len, &nc->info, &nerr) == 0 ? 1 : -1;
        if (nc->state < 0 && nerr.code == FRUGAL_ENOMEM)
            *rc = frugal_err_set(err, FRUGAL_ENOMEM, "%s", nerr.msg);
        else if (nc->state < 0)
            log_warn("BestOptions: group \"%s\": template node cannot be decoded: %s", id,
                     nerr.msg);
    }
    return nc->state == 1 ? &nc->info : NULL;
}

/* Say why option i was left out of the ranking. */
static void expander__log_skip(const expander_request_t *req, size_t i, decide_skip_t skip,
                               bool missing_node) {
    const expander_option_t *o = &req->options[i];
    switch (skip) {
    case DECIDE_SKIP_NONE:
        break;
    case DECIDE_SKIP_NODE_COUNT:
        log_warn("BestOptions: option %zu (group \"%s\"): node count %d is not positive, left out",
                 i, o->group_id, o->node_count);
        break;
    case DECIDE_SKIP_BAD_POD: {
        const expander_pod_t *p = &req->pods[req->pod_refs[o->pods_first + (size_t)o->bad_pod]];
        log_warn("BestOptions: option %zu (group \"%s\"): pod %d cannot be decoded (%s), left out",
                 i, o->group_id, o->bad_pod, p->error ? p->error : "invalid");
        break;
    }
    case DECIDE_SKIP_NO_TEMPLATE:
        if (missing_node)
            log_warn("BestOptions: option %zu: group \"%s\" has no template node in the request, "
                     "left out",
                     i, o->group_id);
        else
            log_warn("BestOptions: option %zu (group \"%s\"): undecodable template node, left out",
                     i, o->group_id);
        break;
    case DECIDE_SKIP_NO_CPU:
        log_warn("BestOptions: option %zu (group \"%s\"): template node has no cpu capacity, "
                 "left out",
                 i, o->group_id);
        break;
    }
}

/* The fields of one option on the decision line, under the given keys. */
#define EXPANDER__OPTION_FIELDS 9
static const char *const expander__winner_keys[EXPANDER__OPTION_FIELDS] = {"node_group",
                                                                           "nodes",
                                                                           "price",
                                                                           "pods_price",
                                                                           "score",
                                                                           "ratio",
                                                                           "unfitness",
                                                                           "suppressed_unfitness",
                                                                           "not_exist_penalty"};
static const char *const expander__runner_up_keys[EXPANDER__OPTION_FIELDS] = {
    "runner_up",
    "runner_up_nodes",
    "runner_up_price",
    "runner_up_pods_price",
    "runner_up_score",
    "runner_up_ratio",
    "runner_up_unfitness",
    "runner_up_suppressed_unfitness",
    "runner_up_not_exist_penalty"};

/* o NULL (no such option): every field without a value. */
static void expander__option_fields(log_field_t *f, const char *const *keys,
                                    const expander_option_t *o, const ranking_figures_t *fig) {
    if (o == NULL) {
        for (size_t i = 0; i < EXPANDER__OPTION_FIELDS; i++)
            f[i] = LOG_STR(keys[i], NULL);
        return;
    }
    f[0] = LOG_STR(keys[0], o->group_id);
    f[1] = LOG_INT(keys[1], o->node_count);
    f[2] = LOG_NUM(keys[2], fig->node_price);
    f[3] = LOG_NUM(keys[3], fig->pods_price);
    f[4] = LOG_NUM(keys[4], fig->score);
    f[5] = LOG_NUM(keys[5], fig->ratio);
    f[6] = LOG_NUM(keys[6], fig->unfitness);
    f[7] = LOG_NUM(keys[7], fig->suppressed);
    f[8] = LOG_NUM(keys[8], fig->penalty);
}

/* demand-fit's own terms of an option's score, for the decision line. */
#define EXPANDER__DEMAND_FIELDS 7
static const char *const expander__winner_demand_keys[EXPANDER__DEMAND_FIELDS] = {
    "spare_value",        "use",       "arrivals_per_hour",
    "pods_ratio",         "mixed_gpu", "left_out_nodes_price",
    "left_out_pods_price"};
static const char *const expander__runner_up_demand_keys[EXPANDER__DEMAND_FIELDS] = {
    "runner_up_spare_value",        "runner_up_use",       "runner_up_arrivals_per_hour",
    "runner_up_pods_ratio",         "runner_up_mixed_gpu", "runner_up_left_out_nodes_price",
    "runner_up_left_out_pods_price"};

static void expander__demand_fields(log_field_t *f, const char *const *keys,
                                    const ranking_input_t *in, const ranking_figures_t *fig) {
    if (in == NULL) {
        for (size_t i = 0; i < EXPANDER__DEMAND_FIELDS; i++)
            f[i] = LOG_STR(keys[i], NULL);
        return;
    }
    f[0] = LOG_NUM(keys[0], in->spare_value);
    f[1] = LOG_NUM(keys[1], in->use_share);
    f[2] = LOG_NUM(keys[2], in->arrivals_per_hour);
    f[3] = LOG_NUM(keys[3], fig->pods_ratio);
    f[4] = LOG_INT(keys[4], in->gpu_mixed ? 1 : 0);
    f[5] = LOG_NUM(keys[5], in->left_out_nodes_price);
    f[6] = LOG_NUM(keys[6], in->left_out_pods_price);
}

/* frugal_expander_options_unscored_total's reason, by decide_skip_t. */
static const char *const expander__unscored_reasons[] = {[DECIDE_SKIP_NONE] = "no_score",
                                                         [DECIDE_SKIP_NODE_COUNT] = "node_count",
                                                         [DECIDE_SKIP_BAD_POD] = "bad_pod",
                                                         [DECIDE_SKIP_NO_TEMPLATE] = "no_template",
                                                         [DECIDE_SKIP_NO_CPU] = "no_cpu_capacity"};

void expander_metrics_declare(cluster_t *c) {
    size_t reasons = sizeof(expander__unscored_reasons) / sizeof(*expander__unscored_reasons);
    for (size_t i = 0; i < reasons; i++)
        metrics_cell(METRICS_EXPANDER_UNSCORED, expander__unscored_reasons[i], NULL, NULL);
    if (c == NULL)
        return;
    cluster_read_lock(c);
    for (size_t i = 0; i < cluster_groups_count(c); i++)
        metrics_own_group(METRICS_EXPANDER_DECISIONS, cluster_group_at(c, i)->spec.id);
    cluster_read_unlock(c);
}

/* The decision's metrics (frugal_expander_decisions_total per chosen option's group,
 * frugal_expander_options_unscored_total per reason) and its one info line: the winner
 * and the runner-up (the best other scored option) with every figure of their scores,
 * demand-fit's own terms too under that strategy. res NULL: the request had no
 * option. */
static void expander__log_decision(const expander_request_t *req, const decide_result_t *res,
                                   bool demand_fit) {
    const char *const *reasons = expander__unscored_reasons;
    size_t n = req->options_count;
    if (res == NULL || !res->any_scored) {
        for (size_t i = 0; res != NULL && i < n; i++)
            metrics_count(METRICS_EXPANDER_UNSCORED, reasons[res->skips[i]], NULL, NULL);
        log_fields(LOG_LEVEL_INFO, (log_field_t[]){LOG_INT("options", n)}, 1,
                   "BestOptions: no option could be scored, answering every option unchanged");
        return;
    }
    size_t win = res->selected[0];
    size_t second = n;
    for (size_t i = 0; i < n; i++) {
        if (res->skips[i] != DECIDE_SKIP_NONE || !res->figures[i].scored)
            metrics_count(METRICS_EXPANDER_UNSCORED, reasons[res->skips[i]], NULL, NULL);
        else if (i != win && (second == n || res->figures[i].score < res->figures[second].score))
            second = i;
    }
    for (size_t k = 0; k < res->selected_count; k++)
        metrics_count(METRICS_EXPANDER_DECISIONS, req->options[res->selected[k]].group_id, NULL,
                      NULL);
    log_field_t f[2 + 2 * EXPANDER__OPTION_FIELDS + 2 * EXPANDER__DEMAND_FIELDS + 3] = {
        LOG_INT("options", n), LOG_INT("selected", res->selected_count)};
    size_t count = 2;
    expander__option_fields(f + count, expander__winner_keys, &req->options[win],
                            &res->figures[win]);
    count += EXPANDER__OPTION_FIELDS;
    expander__option_fields(f + count, expander__runner_up_keys,
                            second < n ? &req->options[second] : NULL,
                            second < n ? &res->figures[second] : NULL);
    count += EXPANDER__OPTION_FIELDS;
    if (demand_fit) {
        expander__demand_fields(f + count, expander__winner_demand_keys, &res->inputs[win],
                                &res->figures[win]);
        count += EXPANDER__DEMAND_FIELDS;
        expander__demand_fields(f + count, expander__runner_up_demand_keys,
                                second < n ? &res->inputs[second] : NULL,
                                second < n ? &res->figures[second] : NULL);
        count += EXPANDER__DEMAND_FIELDS;
        f[count++] = LOG_INT("most_pods_first", res->most_pods_first ? 1 : 0);
    }
    f[count++] = LOG_NUM("damper_price", res->damper_price);
    f[count++] = LOG_INT("preferred_cpu_milli", res->preferred_cpu_milli);
    log_fields(LOG_LEVEL_INFO, f, count, "BestOptions: chose %s", req->options[win].group_id);
}

static atomic_bool unlabelled_template_warned;

/* Once a group has a ready node, CA sends a copy of it as the group's template: without
 * an instance-type label naming a catalog type, P is the linear price of its capacity,
 * not the group's machine type's (docs/ranking.md). Said once, naming the group. */
static void expander__warn_unlabelled(const frugal_config_t *cfg, const group_t *g,
                                      const node_info_t *node) {
    if (atomic_load(&unlabelled_template_warned) ||
        (node->instance_type != NULL && config_find_machine_type(cfg, node->instance_type)) ||
        atomic_exchange(&unlabelled_template_warned, true))
        return;
    log_warn("BestOptions: the template of node group \"%s\" (CA sends a copy of one of its "
             "nodes once it has one) has %s%s%s: priced linearly from its capacity, not as "
             "machine type %s; give the group's nodes that label (the exec hook's "
             "FRUGAL_NODE_LABELS carries it); logged once",
             g->spec.id, node->instance_type ? "node.kubernetes.io/instance-type " : "no ",
             node->instance_type ? node->instance_type : "node.kubernetes.io/instance-type label",
             node->instance_type ? ", not a machine type of the catalog" : "",
             g->spec.machine_type);
}

int expander__answer(const service_ctx_t *ctx, const expander_request_t *req,
                     expander_response_t *out, frugal_err_t *err) {
    const frugal_config_t *cfg = ctx->cfg;
    cluster_t *cluster = ctx->cluster;
    size_t n = req->options_count;
    int rc = FRUGAL_ENOMEM;
    if (n == 0) {
        log_warn("BestOptions: empty request, answering no option");
        expander__log_decision(req, NULL, false);
        return expander_response_build(req, NULL, 0, NULL, out, err);
    }

    decide_option_t *options = calloc(n, sizeof(*options));
    bool *missing = calloc(n, sizeof(*missing));
    char **debugs = calloc(n, sizeof(*debugs));
    size_t *order = calloc(n, sizeof(*order));
    resources_t *pods = calloc(req->pods_count ? req->pods_count : 1, sizeof(*pods));
    expander__node_cache_t *nodes = calloc(req->nodes_count ? req->nodes_count : 1, sizeof(*nodes));
    decide_result_t res = {0};
    size_t m = req->pods_count ? req->pods_count : 1;
    pod_lifetime_t *lifetimes = calloc(m, sizeof(*lifetimes));
    bool *decoded = calloc(m, sizeof(*decoded));
    int64_t *created = calloc(m, sizeof(*created));
    uint64_t *identities = calloc(m, sizeof(*identities));
    if (!options || !missing || !debugs || !order || !pods || !nodes || !lifetimes || !decoded ||
        !created || !identities) {
        frugal_err_set(err, FRUGAL_ENOMEM, "out of memory ranking %zu options", n);
        goto done;
    }

    /* Convert: the decoded request and the cluster's view of each group, as plain
     * structs (an undecodable pod has no request; its options are left out, and it is
     * not remembered as demand). A pod arrived when it was created; the request came at
     * its latest pod's creation, on the pods' clock (the wall clock when none has a
     * creation time). A pod is remembered once, however often CA asks (identities). */
    for (size_t i = 0; i < req->pods_count; i++) {
        const pod_summary_t *p = &req->pods[i].pod;
        decoded[i] = req->pods[i].rc == 0;
        if (decoded[i])
            pods[i] = p->request;
        lifetimes[i] = p->lifetime;
        created[i] = decoded[i] ? p->created_ms : -1;
        identities[i] = decoded[i] ? p->identity : 0;
    }
    decide_request_t dr = {options,
                           n,
                           pods,
                           req->pods_count,
                           0,
                           true,
                           demand_request_ms(created, req->pods_count, clock_wall_ms()),
                           created,
                           identities};
    int decode_rc = 0;
    if (cluster) {
        cluster_read_lock(cluster);
        dr.cluster_size = cluster_node_count(cluster);
    }
    for (size_t i = 0; i < n && decode_rc == 0; i++) {
        const expander_option_t *o = &req->options[i];
        decide_option_t *d = &options[i];
        d->group_id = o->group_id;
        d->node_count = o->node_count;
        d->bad_pod = o->bad_pod >= 0;
        d->pods = req->pod_refs + o->pods_first;
        d->pods_count = o->pods_count;
        d->node = expander__template(req, nodes, o->group_id, &missing[i], &decode_rc, err);
        const group_t *g = cluster ? cluster_find_group(cluster, o->group_id) : NULL;
        if (g)
            d->group = (decide_group_t){
                true, g->exists, g->spec.spot, g->spec.spot_price, g->target_size, g->max_size};
        if (g && d->node != NULL)
            expander__warn_unlabelled(cfg, g, d->node);
    }
    if (cluster)
        cluster_read_unlock(cluster);
    if (decode_rc != 0)
        goto done;

    if (decide_best_options_remember(cfg, &dr, lifetimes, decoded, ctx->demand, &res, err) != 0)
        goto done;
    for (size_t i = 0; i < n; i++)
        expander__log_skip(req, i, res.skips[i], missing[i]);
    expander__log_decision(req, &res, res.strategy == RANKING_STRATEGY_DEMAND_FIT);
    if (!res.any_scored) {
        log_warn(
            "BestOptions: none of the %zu options can be scored, answering all of them unchanged",
            n);
    }
    /* The winners, then (explain) every other option, each scored one with its figures
     * after the separator that says whether it won. */
    size_t answered = res.selected_count;
    for (size_t k = 0; k < res.selected_count; k++)
        order[k] = res.selected[k];
    if (ctx->explain && res.any_scored) {
        bool *won = calloc(n, sizeof(*won));
        if (won == NULL) {
            frugal_err_set(err, FRUGAL_ENOMEM, "out of memory ranking %zu options", n);
            goto done;
        }
        for (size_t k = 0; k < res.selected_count; k++)
            won[res.selected[k]] = true;
        for (size_t i = 0; i < n; i++)
            if (!won[i])
                order[answered++] = i;
        free(won);
    }
    for (size_t k = 0; res.any_scored && k < answered; k++) {
        size_t i = order[k];
        if (!res.figures[i].scored)
            continue;
        const expander_option_t *o = &req->options[i];
        const char *sep =
            k < res.selected_count ? RANKING_DEBUG_SEPARATOR : RANKING_DEBUG_NOT_CHOSEN;
        char figures[RANKING_FIGURES_MAX];
        ranking_format_strategy_figures(res.strategy, &res.figures[i], &res.inputs[i], figures,
                                        sizeof(figures));
        size_t len = strlen(o->debug) + strlen(sep) + strlen(figures) + 1;
        if (!(debugs[k] = malloc(len))) {
            frugal_err_set(err, FRUGAL_ENOMEM, "out of memory ranking %zu options", n);
            goto done;
        }
        snprintf(debugs[k], len, "%s%s%s", o->debug, sep, figures);
        if (k < res.selected_count)
            log_debug("BestOptions: selected \"%s\" x%d: %s", o->group_id, o->node_count, figures);
    }
    rc = expander_response_build(req, order, answered, (const char *const *)debugs, out, err);

done:
    for (size_t i = 0; nodes && i < req->nodes_count; i++)
        if (nodes[i].state == 1)
            node_info_free(&nodes[i].info);
    for (size_t i = 0; debugs && i < n; i++)
        free(debugs[i]);
    decide_result_free(&res);
    free(lifetimes);
    free(decoded);
    free(created);
    free(identities);
    free(debugs);
    free(order);
    free(nodes);
    free(pods);
    free(missing);
    free(options);
    return rc;
}

/* The request's slices, referenced (not copied) through the byte buffer reader. */
typedef struct expander__slices {
    grpc_slice *slices;
    expander_segment_t *segs;
    size_t count;
} expander__slices_t;

static void expander__slices_release(expander__slices_t *s) {
    for (size_t i = 0; i < s->count; i++)
        grpc_slice_unref(s->slices[i]);
    free(s->slices);
    free(s->segs);
}

static int expander__slices_take(grpc_byte_buffer *buf, expander__slices_t *s, frugal_err_t *err) {
    memset(s, 0, sizeof(*s));
    grpc_byte_buffer_reader reader;
    if (!grpc_byte_buffer_reader_init(&reader, buf))
        return frugal_err_set(err, FRUGAL_EINVAL, "cannot read the BestOptions request");
    size_t cap = 0;
    grpc_slice slice;
    int rc = 0;
    while (grpc_byte_buffer_reader_next(&reader, &slice)) {
        if (s->count == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            grpc_slice *p = realloc(s->slices, ncap * sizeof(*p));
            if (!p) {
                grpc_slice_unref(slice);
                rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory reading BestOptions");
                break;
            }
            s->slices = p;
            cap = ncap;
        }
        s->slices[s->count++] = slice;
    }
    grpc_byte_buffer_reader_destroy(&reader);
    if (rc == 0 && !(s->segs = malloc((s->count ? s->count : 1) * sizeof(*s->segs))))
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory reading BestOptions");
    if (rc != 0) {
        expander__slices_release(s);
        return rc;
    }
    for (size_t i = 0; i < s->count; i++)
        s->segs[i] = (expander_segment_t){GRPC_SLICE_START_PTR(s->slices[i]),
                                          GRPC_SLICE_LENGTH(s->slices[i])};
    return 0;
}

/* The response as a byte buffer: the literal headers copied once, the echoed pods as
 * sub-slices (references) of the request's slices. */
static grpc_byte_buffer *expander__response_buffer(const expander_request_t *req,
                                                   const expander__slices_t *in,
                                                   const expander_response_t *resp) {
    size_t literal_size = 0;
    for (size_t i = 0; i < resp->pieces_count; i++)
        if (resp->pieces[i].literal)
            literal_size += resp->pieces[i].len;
    grpc_slice literal = grpc_slice_from_copied_buffer((const char *)resp->literals, literal_size);
    grpc_slice_buffer out;
    grpc_slice_buffer_init(&out);
    for (size_t i = 0; i < resp->pieces_count; i++) {
        const expander_piece_t *pc = &resp->pieces[i];
        if (pc->len == 0)
            continue;
        if (pc->literal) {
            size_t at = (size_t)(pc->literal - resp->literals);
            grpc_slice_buffer_add(&out, grpc_slice_sub(literal, at, at + pc->len));
            continue;
        }
        size_t seg, off, left = pc->len;
        expander_request_locate(req, pc->start, &seg, &off);
        while (left > 0) {
            size_t take = GRPC_SLICE_LENGTH(in->slices[seg]) - off;
            if (take > left)
                take = left;
            grpc_slice_buffer_add(&out, grpc_slice_sub(in->slices[seg], off, off + take));
            left -= take;
            seg++;
            off = 0;
        }
    }
    grpc_byte_buffer *buf = grpc_raw_byte_buffer_create(out.slices, out.count);
    grpc_slice_buffer_destroy(&out);
    grpc_slice_unref(literal);
    return buf;
}

/* A caller gone past its deadline no longer wants the answer: stop between phases
 * rather than keep a worker busy for nothing. */
static int expander__check_deadline(gpr_timespec deadline, const char *phase, frugal_err_t *err) {
    if (gpr_time_cmp(gpr_now(GPR_CLOCK_MONOTONIC), deadline) <= 0)
        return 0;
    return frugal_err_set(err, FRUGAL_EDEADLINE, "BestOptions: deadline passed after %s", phase);
}

static int expander_best_options(service_ctx_t *ctx, grpc_byte_buffer *request,
                                 gpr_timespec deadline, grpc_byte_buffer **response,
                                 frugal_err_t *err) {
    gpr_timespec t0 = gpr_now(GPR_CLOCK_MONOTONIC);
    expander__slices_t slices;
    int rc = expander__slices_take(request, &slices, err);
    if (rc != 0)
        return rc;
    expander_request_t *req = NULL;
    if ((rc = expander_decode(slices.segs, slices.count, &req, err)) != 0)
        goto fail_decode;
    if ((rc = expander__check_deadline(deadline, "decoding", err)) != 0)
        goto fail_answer;
    expander_response_t resp;
    if ((rc = expander__answer(ctx, req, &resp, err)) != 0)
        goto fail_answer;
    if ((rc = expander__check_deadline(deadline, "ranking", err)) != 0) {
        expander_response_free(&resp);
        goto fail_answer;
    }
    *response = expander__response_buffer(req, &slices, &resp);
    if (!*response)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory answering BestOptions");
    log_debug("BestOptions: %zu options, %zu pods (%zu distinct), %zu slices, %llu bytes in, "
              "%llu bytes out (pods echoed: %s), handled in %.3f ms",
              req->options_count, req->pod_refs_count, req->pods_count, slices.count,
              (unsigned long long)req->total_bytes, (unsigned long long)resp.total_bytes,
              resp.pods ? resp.pods : "none answered",
              gpr_timespec_to_micros(gpr_time_sub(gpr_now(GPR_CLOCK_MONOTONIC), t0)) / 1000.0);
    expander_response_free(&resp);
fail_answer:
    expander_request_free(req);
fail_decode:
    expander__slices_release(&slices);
    return rc;
}

/* A raw method (service.h): unpacking the request whole would copy hundreds of MiB and
 * decode every repeated pod again; the streaming decoder does neither. */
static const service_method_t expander_methods[] = {
    SERVICE_RAW(WIRE_EXPANDER_BEST_OPTIONS, expander_best_options),
};

const service_def_t service_expander = {WIRE_SERVICE_EXPANDER, expander_methods,
                                        sizeof(expander_methods) / sizeof(*expander_methods),
                                        LISTENER_SERVICE_EXPANDER};
