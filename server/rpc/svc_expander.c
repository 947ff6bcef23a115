/* grpcplugin.Expander/BestOptions (docs/wire.md, "grpcplugin.Expander"; docs/ranking.md).
 *
 * The request is walked in place over the received slices (expander_decode.c), every
 * option is reduced to a ranking_input_t (node_info.c, pricing.c, the cluster for
 * spot settings, existence and size), ranked (ranking.c), and the answer is written as
 * fresh option headers followed by sub-slices of the request for the pods: nothing big
 * is copied, neither in nor out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>
#include <grpc/support/time.h>

#include "expander_decode.h"
#include "log.h"
#include "node_info.h"
#include "pricing.h"
#include "ranking.h"
#include "service.h"

/* Per template node of the request, decoded on first use. */
typedef struct expander__node_cache {
    int state; /* 0 not yet, 1 decoded, -1 undecodable */
    node_info_t info;
} expander__node_cache_t;

/* Rank req and build the answer into *out. cluster may be NULL (every group then
 * counts as existing, on-demand, in an empty cluster). Pure apart from the cluster's
 * read lock and logging; 0 or FRUGAL_ENOMEM. */
int expander__answer(const frugal_config_t *cfg, cluster_t *cluster, const expander_request_t *req,
                     expander_response_t *out, frugal_err_t *err);

int expander__answer(const frugal_config_t *cfg, cluster_t *cluster, const expander_request_t *req,
                     expander_response_t *out, frugal_err_t *err) {
    size_t n = req->options_count;
    int rc = FRUGAL_ENOMEM;
    if (n == 0) {
        log_warn("BestOptions: empty request, answering no option");
        return expander_response_build(req, NULL, 0, NULL, out, err);
    }

    ranking_input_t *in = calloc(n, sizeof(*in));
    ranking_figures_t *figs = calloc(n, sizeof(*figs));
    size_t *selected = calloc(n, sizeof(*selected));
    char **debugs = calloc(n, sizeof(*debugs));
    double *pod_prices = calloc(req->pods_count ? req->pods_count : 1, sizeof(*pod_prices));
    expander__node_cache_t *nodes = calloc(req->nodes_count ? req->nodes_count : 1, sizeof(*nodes));
    if (!in || !figs || !selected || !debugs || !pod_prices || !nodes) {
        frugal_err_set(err, FRUGAL_ENOMEM, "out of memory ranking %zu options", n);
        goto done;
    }

    for (size_t i = 0; i < req->pods_count; i++)
        if (req->pods[i].rc == 0)
            pod_prices[i] = pricing_linear(&cfg->pricing, &req->pods[i].request);
    double damper = pricing_linear(&cfg->pricing, &cfg->ranking.damper);

    int64_t cluster_size = 0;
    if (cluster) {
        cluster_read_lock(cluster);
        cluster_size = cluster_node_count(cluster);
    }
    for (size_t i = 0; i < n; i++) {
        const expander_option_t *o = &req->options[i];
        ranking_input_t *r = &in[i];
        r->group_id = o->group_id;
        r->node_count = o->node_count;
        r->exists = true;
        if (o->node_count <= 0) {
            log_warn(
                "BestOptions: option %zu (group \"%s\"): node count %d is not positive, left out",
                i, o->group_id, o->node_count);
            continue;
        }
        if (o->bad_pod >= 0) {
            const expander_pod_t *p = &req->pods[req->pod_refs[o->pods_first + (size_t)o->bad_pod]];
            log_warn(
                "BestOptions: option %zu (group \"%s\"): pod %d cannot be decoded (%s), left out",
                i, o->group_id, o->bad_pod, p->error ? p->error : "invalid");
            continue;
        }
        const expander_node_t *node = expander_request_find_node(req, o->group_id);
        if (!node) {
            log_warn("BestOptions: option %zu: group \"%s\" has no template node in the request, "
                     "left out",
                     i, o->group_id);
            continue;
        }
        expander__node_cache_t *nc = &nodes[node - req->nodes];
        if (nc->state == 0) {
            frugal_err_t nerr = {0};
            nc->state = node_info_decode(node->data, node->len, &nc->info, &nerr) == 0 ? 1 : -1;
            if (nc->state < 0) {
                if (nerr.code == FRUGAL_ENOMEM) {
                    frugal_err_set(err, FRUGAL_ENOMEM, "%s", nerr.msg);
                    if (cluster)
                        cluster_read_unlock(cluster);
                    goto done;
                }
                log_warn("BestOptions: group \"%s\": template node cannot be decoded: %s",
                         o->group_id, nerr.msg);
            }
        }
        if (nc->state < 0) {
            log_warn("BestOptions: option %zu (group \"%s\"): undecodable template node, left out",
                     i, o->group_id);
            continue;
        }
        const node_info_t *ni = &nc->info;
        if (ni->capacity.cpu_milli <= 0) {
            log_warn("BestOptions: option %zu (group \"%s\"): template node has no cpu capacity, "
                     "left out",
                     i, o->group_id);
            continue;
        }

        const group_t *g = cluster ? cluster_find_group(cluster, o->group_id) : NULL;
        bool spot = g && g->spec.spot;
        double spot_price = g ? g->spec.spot_price : -1.0;
        const machine_type_t *mt =
            ni->instance_type ? config_find_machine_type(cfg, ni->instance_type) : NULL;
        if (mt)
            r->node_price = pricing_machine_price(cfg, mt, spot, spot_price);
        else if (spot && spot_price >= 0)
            r->node_price = spot_price;
        else
            r->node_price = pricing_linear(&cfg->pricing, &ni->capacity);

        double t = 0.0;
        for (size_t k = 0; k < o->pods_count; k++)
            t += pod_prices[req->pod_refs[o->pods_first + k]];
        r->pods_price = t;
        r->node_cpu_milli = ni->capacity.cpu_milli;
        r->has_gpu = ni->has_gpu;
        /* Only a group frugal knows to be theoretical (NAP) pays the not-exist penalty: a
         * group it does not know belongs to another provider and exists there. */
        r->exists = g == NULL || g->exists;
        r->group_nodes = g != NULL ? g->target_size : 0;
        r->similarity_key = ni->similarity_key;
        r->scorable = true;
    }
    if (cluster)
        cluster_read_unlock(cluster);

    size_t count = ranking_select(&cfg->ranking, damper, cluster_size, in, n, figs, selected);
    bool any = false;
    for (size_t i = 0; i < n; i++)
        any = any || figs[i].scored;
    if (!any) {
        log_warn(
            "BestOptions: none of the %zu options can be scored, answering all of them unchanged",
            n);
    } else {
        for (size_t k = 0; k < count; k++) {
            const expander_option_t *o = &req->options[selected[k]];
            char figures[256];
            ranking_format_figures(&figs[selected[k]], figures, sizeof(figures));
            size_t len = strlen(o->debug) + strlen(RANKING_DEBUG_SEPARATOR) + strlen(figures) + 1;
            if (!(debugs[k] = malloc(len))) {
                frugal_err_set(err, FRUGAL_ENOMEM, "out of memory ranking %zu options", n);
                goto done;
            }
            snprintf(debugs[k], len, "%s%s%s", o->debug, RANKING_DEBUG_SEPARATOR, figures);
            log_debug("BestOptions: selected \"%s\" x%d: %s", o->group_id, o->node_count, figures);
        }
    }
    rc = expander_response_build(req, selected, count, (const char *const *)debugs, out, err);

done:
    for (size_t i = 0; nodes && i < req->nodes_count; i++)
        if (nodes[i].state == 1)
            node_info_free(&nodes[i].info);
    for (size_t i = 0; debugs && i < n; i++)
        free(debugs[i]);
    free(debugs);
    free(nodes);
    free(pod_prices);
    free(selected);
    free(figs);
    free(in);
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
    if ((rc = expander__answer(ctx->cfg, ctx->cluster, req, &resp, err)) != 0)
        goto fail_answer;
    if ((rc = expander__check_deadline(deadline, "ranking", err)) != 0) {
        expander_response_free(&resp);
        goto fail_answer;
    }
    *response = expander__response_buffer(req, &slices, &resp);
    if (!*response)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory answering BestOptions");
    log_debug("BestOptions: %zu options, %zu pods (%zu distinct), %zu slices, %llu bytes in, "
              "%llu bytes out, handled in %.3f ms",
              req->options_count, req->pod_refs_count, req->pods_count, slices.count,
              (unsigned long long)req->total_bytes, (unsigned long long)resp.total_bytes,
              gpr_timespec_to_micros(gpr_time_sub(gpr_now(GPR_CLOCK_MONOTONIC), t0)) / 1000.0);
    expander_response_free(&resp);
fail_answer:
    expander_request_free(req);
fail_decode:
    expander__slices_release(&slices);
    return rc;
}

static const service_method_t expander_methods[] = {
    {"/grpcplugin.Expander/BestOptions", expander_best_options},
};

const service_def_t service_expander = {"grpcplugin.Expander", expander_methods,
                                        sizeof(expander_methods) / sizeof(*expander_methods)};
