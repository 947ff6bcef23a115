/* Cost-based ranking: see ranking.h and docs/ranking.md. */
#include "ranking.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

double ranking_suppress(double unfitness, int32_t node_count, double scale) {
    return (unfitness - 1.0) * (1.0 - tanh((double)(node_count - 1) / scale)) + 1.0;
}

int64_t ranking_preferred_cpu_milli(const ranking_config_t *cfg, int64_t cluster_size) {
    if (cfg->preferred_nodes_count == 0)
        return 0;
    for (size_t i = 0; i < cfg->preferred_nodes_count; i++) {
        const preferred_node_t *p = &cfg->preferred_nodes[i];
        if (p->max_nodes < 0 || cluster_size <= p->max_nodes)
            return p->cpu_milli;
    }
    return cfg->preferred_nodes[cfg->preferred_nodes_count - 1].cpu_milli;
}

/* score = suppressed x ratio (x not_exist_penalty): out is scored when that is a
 * finite non-negative number, left zeroed otherwise. */
static void ranking__finish(const ranking_config_t *cfg, const ranking_input_t *in, double ratio,
                            double unfitness, double suppressed, ranking_figures_t *out) {
    double penalty = in->exists ? 1.0 : cfg->not_exist_penalty;
    double score = suppressed * ratio * penalty;
    if (!isfinite(score) || score < 0.0)
        return;
    out->scored = true;
    out->penalty = penalty;
    out->node_price = in->node_price;
    out->nodes_price = in->node_price * in->node_count;
    out->pods_price = in->pods_price;
    out->ratio = ratio;
    out->unfitness = unfitness;
    out->suppressed = suppressed;
    out->score = score;
}

void ranking_score(const ranking_config_t *cfg, double damper_price, int64_t pref_cpu_milli,
                   const ranking_input_t *in, ranking_figures_t *out) {
    memset(out, 0, sizeof(*out));
    if (!in->scorable || in->node_count <= 0 || in->node_cpu_milli <= 0)
        return;
    double c = in->node_price * in->node_count;
    double denom = in->pods_price + damper_price;
    if (!(denom > 0.0))
        return;
    double ratio = (c + damper_price) / denom;
    double pref = (double)pref_cpu_milli, node = (double)in->node_cpu_milli;
    double unfitness = pref_cpu_milli > 0 ? fmax(pref / node, node / pref) : 1.0;
    double suppressed = in->has_gpu
                            ? cfg->gpu_unfitness
                            : ranking_suppress(unfitness, in->node_count, cfg->suppress_scale);
    ranking__finish(cfg, in, ratio, unfitness, suppressed, out);
    if (out->scored) {
        out->damper_price = damper_price;
        out->pref_cpu = pref / 1000.0;
    }
}

void ranking_score_demand_fit(const ranking_config_t *cfg, const ranking_input_t *in,
                              ranking_figures_t *out) {
    memset(out, 0, sizeof(*out));
    if (!in->scorable || in->node_count <= 0 || in->node_cpu_milli <= 0)
        return;
    double c = in->node_price * in->node_count;
    double value = in->pods_price + in->left_out_pods_price + in->use_share * in->spare_value;
    if (!(value > 0.0))
        return;
    double ratio = (c + in->left_out_nodes_price) / value;
    double gpu_factor = in->gpu_unused ? cfg->gpu_unfitness : 1.0;
    ranking__finish(cfg, in, ratio, gpu_factor, gpu_factor, out);
    if (out->scored)
        out->pods_ratio = in->pods_price > 0.0 ? c / in->pods_price : c;
}

bool ranking_scores_tie(double a, double b) {
    double m = fmax(fabs(a), fabs(b));
    return fabs(a - b) <= RANKING_TIE_RELATIVE * m;
}

/* A tied option in the zone balance: similar options (equal keys) sort together, each
 * run in balance order (the group with fewer nodes now, then the option buying fewer
 * nodes, then request order), so that the first of a run is the one it keeps. */
typedef struct ranking__tied {
    const char *key;
    int64_t group_nodes;
    int32_t node_count;
    size_t index;
} ranking__tied_t;

static int ranking__tied_cmp(const void *pa, const void *pb) {
    const ranking__tied_t *a = pa, *b = pb;
    int c = strcmp(a->key, b->key);
    if (c != 0)
        return c;
    if (a->group_nodes != b->group_nodes)
        return a->group_nodes < b->group_nodes ? -1 : 1;
    if (a->node_count != b->node_count)
        return a->node_count < b->node_count ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Clear keep[i] of every tied option that loses the zone balance to a similar one: in
 * n log n, since a request may carry thousands of tied groups. False: out of memory. */
static bool ranking__balance(const ranking_input_t *in, size_t n, bool *keep) {
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += keep[i] && in[i].similarity_key != NULL;
    if (count < 2)
        return true;
    ranking__tied_t *t = malloc(count * sizeof(*t));
    if (t == NULL)
        return false;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (keep[i] && in[i].similarity_key != NULL)
            t[k++] =
                (ranking__tied_t){in[i].similarity_key, in[i].group_nodes, in[i].node_count, i};
    qsort(t, count, sizeof(*t), ranking__tied_cmp);
    for (k = 1; k < count; k++)
        if (strcmp(t[k].key, t[k - 1].key) == 0)
            keep[t[k].index] = false;
    free(t);
    return true;
}

/* Whether option in is a GPU node for pods that request GPUs. */
static bool ranking__gpu_for_gpu_pods(const ranking_input_t *in) {
    return in->has_gpu && !in->gpu_unused;
}

/* demand-fit's winner for interchangeable GPU pods: among the scored GPU options for GPU
 * pods hosting no less (T) than the lowest-scored one (best), the lowest pods_ratio; on a tie in it
 * the lower score, then the first. A node of exactly the pods' GPUs is an exact fit, and a larger
 * one gains nothing in packing: its spare GPUs are a promise that only costs when it is not kept,
 * so the option that is cheaper for what it runs now wins. */
static size_t ranking__exact_gpu_pick(const ranking_input_t *in, const ranking_figures_t *f,
                                      size_t n, size_t best) {
    size_t pick = best;
    for (size_t i = 0; i < n; i++) {
        if (!f[i].scored || i == pick || !ranking__gpu_for_gpu_pods(&in[i]))
            continue;
        if (f[i].pods_price < f[best].pods_price &&
            !ranking_scores_tie(f[i].pods_price, f[best].pods_price))
            continue;
        bool same = ranking_scores_tie(f[i].pods_ratio, f[pick].pods_ratio);
        if ((!same && f[i].pods_ratio < f[pick].pods_ratio) ||
            (same && f[i].score < f[pick].score && !ranking_scores_tie(f[i].score, f[pick].score)))
            pick = i;
    }
    return pick;
}

size_t ranking_select(const ranking_config_t *cfg, double damper_price, int64_t cluster_size,
                      const ranking_input_t *in, size_t n, ranking_figures_t *figures,
                      size_t *selected) {
    int64_t pref = ranking_preferred_cpu_milli(cfg, cluster_size);
    size_t best = n;
    for (size_t i = 0; i < n; i++) {
        if (cfg->strategy == RANKING_STRATEGY_DEMAND_FIT)
            ranking_score_demand_fit(cfg, &in[i], &figures[i]);
        else
            ranking_score(cfg, damper_price, pref, &in[i], &figures[i]);
        if (figures[i].scored && (best == n || figures[i].score < figures[best].score))
            best = i;
    }
    if (best == n) {
        for (size_t i = 0; i < n; i++)
            selected[i] = i;
        return n;
    }

    /* For GPU pods on GPU nodes when the GPU pods are interchangeable (one GPU each, any
     * GPU group) the spare GPUs do not decide (ranking__exact_gpu_pick). When the GPU
     * demand is mixed, a larger node's spare GPUs are room no 1-GPU node offers
     * (docs/ranking.md), and the spare room decides as for cpu. */
    bool exact_gpu = cfg->strategy == RANKING_STRATEGY_DEMAND_FIT &&
                     ranking__gpu_for_gpu_pods(&in[best]) && !in[best].gpu_mixed;
    if (exact_gpu)
        best = ranking__exact_gpu_pick(in, figures, n, best);
    bool small[64];
    bool *keep = n <= 64 ? small : calloc(n, sizeof(*keep));
    size_t count = 0;
    for (size_t i = 0; keep != NULL && i < n; i++)
        keep[i] =
            figures[i].scored && ranking_scores_tie(figures[i].score, figures[best].score) &&
            (!exact_gpu || ranking_scores_tie(figures[i].pods_ratio, figures[best].pods_ratio));
    if (keep == NULL || !ranking__balance(in, n, keep)) {
        /* Without memory for the balance, answer the best alone: still a valid answer. */
        if (keep != small)
            free(keep);
        selected[0] = best;
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        if (keep[i])
            selected[count++] = i;
    if (keep != small)
        free(keep);
    return count;
}

/* " not_exist_penalty=F" after the figures of a group that does not exist yet. */
static const char *ranking__penalty(const ranking_figures_t *f, char *buf, size_t size) {
    buf[0] = '\0';
    if (f->penalty != 1.0 && f->penalty != 0.0)
        snprintf(buf, size, " not_exist_penalty=%f", f->penalty);
    return buf;
}

int ranking_format_demand_figures(const ranking_figures_t *f, const ranking_input_t *in, char *buf,
                                  size_t size) {
    char left[96] = "", penalty[48];
    if (in->left_out_pods_price > 0.0)
        snprintf(left, sizeof(left), " left_out_nodes_price=%f left_out_pods_price=%f",
                 in->left_out_nodes_price, in->left_out_pods_price);
    return snprintf(buf, size,
                    "strategy=demand-fit node_price=%f pods_price=%f spare_value=%f use=%f "
                    "arrivals_per_hour=%f gib_per_core=%f gpu_factor=%f mixed_gpu=%d ratio=%f "
                    "pods_ratio=%f score=%f%s%s%s",
                    f->node_price, f->pods_price, in->spare_value, in->use_share,
                    in->arrivals_per_hour, in->gib_per_core, f->suppressed, in->gpu_mixed ? 1 : 0,
                    f->ratio, f->pods_ratio, f->score, left,
                    f->most_pods_first ? " most_pods_first=1" : "",
                    ranking__penalty(f, penalty, sizeof(penalty)));
}

int ranking_format_strategy_figures(ranking_strategy_t strategy, const ranking_figures_t *f,
                                    const ranking_input_t *in, char *buf, size_t size) {
    if (strategy == RANKING_STRATEGY_DEMAND_FIT)
        return ranking_format_demand_figures(f, in, buf, size);
    return ranking_format_figures(f, buf, size);
}

int ranking_format_figures(const ranking_figures_t *f, char *buf, size_t size) {
    char penalty[48];
    return snprintf(buf, size,
                    "node_price=%f pods_price=%f ratio=%f unfitness=%f suppressed=%f score=%f%s",
                    f->node_price, f->pods_price, f->ratio, f->unfitness, f->suppressed, f->score,
                    ranking__penalty(f, penalty, sizeof(penalty)));
}

int ranking_parse_figures(const char *debug, ranking_figures_t *out) {
    return ranking_parse_figures_after(debug, RANKING_DEBUG_SEPARATOR, out);
}

int ranking_parse_figures_after(const char *debug, const char *separator, ranking_figures_t *out) {
    const char *p = NULL, *q = debug;
    while ((q = strstr(q, separator)) != NULL) {
        p = q + strlen(separator);
        q = p;
    }
    if (!p)
        return FRUGAL_EINVAL;
    ranking_figures_t f = {.scored = true};
    if (strncmp(p, "strategy=demand-fit ", 20) == 0) {
        double spare, use, rate, shape;
        int mixed;
        /* Servers from before the arrival-rate weighing wrote no arrivals_per_hour: a newer
         * ctl still reads their figures. */
        if (sscanf(p + 20,
                   "node_price=%lf pods_price=%lf spare_value=%lf use=%lf arrivals_per_hour=%lf "
                   "gib_per_core=%lf gpu_factor=%lf mixed_gpu=%d ratio=%lf pods_ratio=%lf "
                   "score=%lf",
                   &f.node_price, &f.pods_price, &spare, &use, &rate, &shape, &f.suppressed, &mixed,
                   &f.ratio, &f.pods_ratio, &f.score) != 11 &&
            sscanf(p + 20,
                   "node_price=%lf pods_price=%lf spare_value=%lf use=%lf gib_per_core=%lf "
                   "gpu_factor=%lf mixed_gpu=%d ratio=%lf pods_ratio=%lf score=%lf",
                   &f.node_price, &f.pods_price, &spare, &use, &shape, &f.suppressed, &mixed,
                   &f.ratio, &f.pods_ratio, &f.score) != 10)
            return FRUGAL_EINVAL;
        f.mixed_gpu = mixed != 0;
        f.unfitness = f.suppressed;
        *out = f;
        return 0;
    }
    /* Servers of 2026-11-29 and 30 wrote C, X and pref_cpu too. */
    if (sscanf(p,
               "node_price=%lf nodes_price=%lf pods_price=%lf damper_price=%lf pref_cpu=%lf "
               "ratio=%lf unfitness=%lf suppressed=%lf score=%lf",
               &f.node_price, &f.nodes_price, &f.pods_price, &f.damper_price, &f.pref_cpu, &f.ratio,
               &f.unfitness, &f.suppressed, &f.score) != 9 &&
        sscanf(p, "node_price=%lf pods_price=%lf ratio=%lf unfitness=%lf suppressed=%lf score=%lf",
               &f.node_price, &f.pods_price, &f.ratio, &f.unfitness, &f.suppressed, &f.score) != 6)
        return FRUGAL_EINVAL;
    *out = f;
    return 0;
}
