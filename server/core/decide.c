/* The BestOptions decision: see decide.h. */
#include "decide.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "left_out.h"
#include "pricing.h"

/* P of an option: its template's instance type priced from the effective catalog, with
 * the group's spot settings; a template of no known type is priced at the group's spot
 * price override when it has one, else linearly from its capacity. */
static double decide__node_price(const frugal_config_t *cfg, const node_info_t *ni,
                                 const decide_group_t *g) {
    bool spot = g->known && g->spot;
    double spot_price = g->known ? g->spot_price : -1.0;
    const machine_type_t *mt =
        ni->instance_type != NULL ? config_find_machine_type(cfg, ni->instance_type) : NULL;
    if (mt != NULL)
        return pricing_machine_price(cfg, mt, spot, spot_price);
    if (spot && spot_price >= 0)
        return spot_price;
    return pricing_linear(&cfg->pricing, &ni->capacity);
}

static decide_skip_t decide__check(const decide_option_t *o) {
    if (o->node_count <= 0)
        return DECIDE_SKIP_NODE_COUNT;
    if (o->bad_pod)
        return DECIDE_SKIP_BAD_POD;
    if (o->node == NULL)
        return DECIDE_SKIP_NO_TEMPLATE;
    if (o->node->capacity.cpu_milli <= 0)
        return DECIDE_SKIP_NO_CPU;
    return DECIDE_SKIP_NONE;
}

/* GiB per core of the demand the spare room is judged against: the recent pods that
 * stay (what occupies the cluster: a Job's pod is gone within hours, a ReplicaSet's
 * stays for days) when frugal remembers enough of them, else every recent pod, else
 * the request's own distinct pods; 0 when none requests cpu (then only spare cpu
 * counts). */
static double decide__gib_per_core(const decide_request_t *req, const decide_demand_t *dd) {
    const demand_summary_t *d = dd->recent;
    if (d != NULL && d->long_pods >= DECIDE_DEMAND_MIN_PODS && d->long_cpu_cores > 0)
        return d->long_memory_gib / d->long_cpu_cores;
    if (d != NULL && d->pods >= DECIDE_DEMAND_MIN_PODS && d->cpu_cores > 0)
        return d->memory_gib / d->cpu_cores;
    double cpu = 0, mem = 0;
    for (size_t i = 0; i < req->pods_count; i++) {
        cpu += (double)req->pods[i].cpu_milli / 1000.0;
        mem += (double)req->pods[i].memory_bytes / (1024.0 * 1024.0 * 1024.0);
    }
    return cpu > 0 ? mem / cpu : 0.0;
}

/* Whether no pod of the request asks for cpu, memory or GPUs (BestEffort pods). */
static bool decide__pods_request_nothing(const decide_request_t *req) {
    for (size_t i = 0; i < req->pods_count; i++)
        if (req->pods[i].cpu_milli > 0 || req->pods[i].memory_bytes > 0 || req->pods[i].gpu > 0)
            return false;
    return true;
}

/* How many pods of the kind (with GPUs or without) reached frugal per hour lately: the
 * remembered ones seen at a known time, over the time the memory has watched (since the
 * oldest timed pod of either kind: few pods of a kind in a long watch are a low rate,
 * not the burst rate of their own short span). 0 when
 * not known: the request has no time, or every such pod came at once (a burst of
 * unknown rate); the spare room then counts in full. -1 when fewer than two such pods
 * were ever seen: one pod is no sign that more will come. */
static double decide__arrivals_per_hour(const decide_request_t *req, const decide_demand_t *dd,
                                        bool gpu) {
    const demand_summary_t *d = dd->recent;
    if (d == NULL || !req->timed)
        return 0.0;
    size_t n = gpu ? d->timed_gpu_pods : d->timed_pods;
    if (n < 2)
        return -1.0;
    /* A pod may have arrived after the request's clock says (creation times are
     * another clock than the caller's): the watch ends at the latest arrival. */
    int64_t now = d->newest_ms > req->now_ms ? d->newest_ms : req->now_ms;
    if (now <= d->oldest_ms)
        return 0.0;
    return (double)(n - 1) * 3600000.0 / (double)(now - d->oldest_ms);
}

/* The share of k spare pods' room used over a horizon in which m pods arrive, slot j
 * filled after j/m of it: 1 when the rate is not known (m == 0), 0 when none is
 * expected (m < 0). */
static double decide__spare_filled(double k, double m) {
    if (m < 0.0)
        return 0.0;
    if (m == 0.0 || k < 1.0)
        return 1.0;
    if (k <= m)
        return 1.0 - (k + 1.0) / (2.0 * m);
    double whole = floor(m);
    return (whole - whole * (whole + 1.0) / (2.0 * m)) / k;
}

/* How many pods room for `room` pods of the average size hosts. Less than one hosts
 * none: the first pod must fit whole. Beyond it, pods that vary in size leave on
 * average half a pod of the room unused, wherever the room ends (counting only whole
 * average pods, floor(room), would make a node's worth jump at every whole pod, and
 * the pods that come are not all the average one). */
static double decide__pods_in_room(double room) {
    return room + 1e-9 < 1.0 ? 0.0 : room - 0.5;
}

/* demand-fit's inputs of one scorable option r (P and T set): the room its nodes leave
 * after its pods, counted in pods of the demand's shape and priced; the share of it
 * expected to be used, by the recent arrival rate of pods without GPUs (rates[0]) or
 * with (rates[1]), unless the option is for GPU pods and the GPU demand is mixed. */
static void decide__demand_fit(const frugal_config_t *cfg, const decide_request_t *req,
                               const decide_demand_t *dd, const decide_option_t *o,
                               double gib_per_core, const double rates[2], bool gpu_mixed,
                               ranking_input_t *r) {
    double cpu = 0, mem = 0, gpu = 0, long_lived = 0;
    for (size_t k = 0; k < o->pods_count; k++) {
        const resources_t *p = &req->pods[o->pods[k]];
        cpu += (double)p->cpu_milli / 1000.0;
        mem += (double)p->memory_bytes / (1024.0 * 1024.0 * 1024.0);
        gpu += (double)p->gpu;
        long_lived +=
            dd->pod_lifetimes == NULL || dd->pod_lifetimes[o->pods[k]] != POD_LIFETIME_SHORT;
    }
    const resources_t *cap = &o->node->capacity;
    double n = (double)o->node_count, pods = o->pods_count > 0 ? (double)o->pods_count : 1.0;
    double spare_cpu = fmax(0.0, n * (double)cap->cpu_milli / 1000.0 - cpu);
    double spare_mem = fmax(0.0, n * (double)cap->memory_bytes / (1024.0 * 1024.0 * 1024.0) - mem);
    double spare_gpu = fmax(0.0, n * (double)cap->gpu - gpu);
    /* The pod the spare room is counted in: the option's average pod, its memory per
     * core blended (geometric mean) with the cluster's recent demand. */
    double pc = cpu / pods, pm = mem / pods, pg = gpu / pods;
    if (pc > 0 && gib_per_core > 0)
        pm = pc * sqrt(fmax(pm / pc, 1e-9) * gib_per_core);
    double room = INFINITY;
    if (pc > 0)
        room = fmin(room, spare_cpu / pc);
    if (pm > 0)
        room = fmin(room, spare_mem / pm);
    double fits = isfinite(room) ? decide__pods_in_room(room) : INFINITY;
    /* GPUs come whole and so do a GPU pod's: the GPU room is counted exactly. */
    if (pg > 0)
        fits = fmin(fits, floor(spare_gpu / pg + 1e-9));
    /* A node runs at most its "pods" capacity (kubelet's --max-pods, 110 by default): small
     * pods use up its pod slots before its cpu or memory. */
    if (o->node->max_pods > 0)
        fits = fmin(fits, fmax(0.0, n * (double)o->node->max_pods - (double)o->pods_count));
    fits = isfinite(fits) ? fits : 0.0;
    resources_t one = {(int64_t)(pc * 1000.0), (int64_t)(pm * 1024.0 * 1024.0 * 1024.0),
                       (int64_t)ceil(pg)};
    r->spare_value = fits * pricing_linear(&cfg->pricing, &one);
    double share = long_lived / pods;
    double rate = rates[gpu > 0], long_m = 0.0, short_m = 0.0;
    /* Under mixed GPU demand the pods that take any model land on the GPUs that pricier
     * nodes free, and never reach frugal: their rate understates the demand for spare
     * GPUs, which count in full (m = 0). */
    if (!(gpu > 0 && gpu_mixed)) {
        long_m = rate < 0.0 ? -1.0 : rate * DECIDE_SPARE_HORIZON_LONG_H;
        short_m = rate < 0.0 ? -1.0 : rate * DECIDE_SPARE_HORIZON_SHORT_H;
    }
    r->arrivals_per_hour = rate > 0.0 ? rate : 0.0;
    r->use_share = DECIDE_USE_LONG * share * decide__spare_filled(fits, long_m) +
                   DECIDE_USE_SHORT * (1.0 - share) * decide__spare_filled(fits, short_m);
    r->gib_per_core = pc > 0 ? pm / pc : gib_per_core;
    r->gpu_unused = o->node->has_gpu && gpu == 0;
    r->gpu_mixed = gpu_mixed;
}

/* Whether the request carries a GPU pod that takes several GPUs or that some GPU option
 * of the request does not carry (its model is named, or it is too large for some GPU
 * nodes); flags[i], when flags is not NULL, whether pod i is such a pod. An option that
 * reaches its group's max_size may leave pods out for want of nodes: it does not count.
 * scratch holds pods_count entries. */
static bool decide__gpu_mixed(const decide_request_t *req, size_t *scratch, bool *flags) {
    size_t gpu_options = 0;
    memset(scratch, 0, req->pods_count * sizeof(*scratch));
    for (size_t i = 0; i < req->options_count; i++) {
        const decide_option_t *o = &req->options[i];
        if (o->node == NULL || !o->node->has_gpu || o->node_count <= 0 ||
            (o->group.known && o->group.max_size > 0 &&
             o->group.nodes + o->node_count >= o->group.max_size))
            continue;
        gpu_options++;
        for (size_t k = 0; k < o->pods_count; k++)
            if (o->pods[k] < req->pods_count)
                scratch[o->pods[k]]++;
    }
    bool any = false;
    for (size_t i = 0; i < req->pods_count; i++) {
        const resources_t *p = &req->pods[i];
        bool mixed = p->gpu > 1 || (p->gpu > 0 && scratch[i] < gpu_options);
        if (flags != NULL)
            flags[i] = mixed;
        any = any || mixed;
    }
    return any;
}

/* Whether the cluster runs nodes of an offered GPU group that costs more per GPU (by more
 * than RANKING_GPU_PRICE_TOLERANCE) than the cheapest GPU group offered: the nodes on whose
 * free GPUs a pod that takes any model lands at a higher price. Options scored (P set). */
static bool decide__pricier_gpu_nodes(const decide_request_t *req, const decide_result_t *out) {
    double lowest = INFINITY;
    for (size_t pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < req->options_count; i++) {
            const decide_option_t *o = &req->options[i];
            if (out->skips[i] != DECIDE_SKIP_NONE || !o->node->has_gpu ||
                o->node->capacity.gpu <= 0)
                continue;
            double per_gpu = out->inputs[i].node_price / (double)o->node->capacity.gpu;
            if (pass == 0)
                lowest = fmin(lowest, per_gpu);
            else if (o->group.known && o->group.nodes > 0 &&
                     per_gpu > lowest * (1.0 + RANKING_GPU_PRICE_TOLERANCE))
                return true;
        }
    }
    return false;
}

/* Union-find root of option i, halving the path. */
static size_t decide__root(size_t *parent, size_t i) {
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

/* The sets of the options in play (member[i]) related by their pods: two options that
 * carry a pod in common are in one set (set[i], the root of option i's), and so is every
 * option tied to either through others. first holds pods_count entries. */
static void decide__related_sets(const decide_request_t *req, const bool *member, size_t *set,
                                 size_t *first) {
    size_t n = req->options_count;
    for (size_t i = 0; i < n; i++)
        set[i] = i;
    for (size_t k = 0; k < req->pods_count; k++)
        first[k] = n;
    for (size_t i = 0; i < n; i++) {
        const decide_option_t *o = &req->options[i];
        if (!member[i])
            continue;
        for (size_t k = 0; k < o->pods_count; k++) {
            size_t pod = o->pods[k];
            if (pod >= req->pods_count)
                continue;
            if (first[pod] == n)
                first[pod] = i;
            else
                set[decide__root(set, i)] = decide__root(set, first[pod]);
        }
    }
    for (size_t i = 0; i < n; i++)
        set[i] = decide__root(set, i);
}

/* The best-scored option of each set other than the winner's, and the one of them that
 * serves the most pods, if it serves more than the winner: then the ranking is run again
 * over its set alone (its ties and zone balance), and its winners replace the others. */
static int decide__most_pods_first(const frugal_config_t *cfg, const decide_request_t *req,
                                   decide_result_t *out, frugal_err_t *err) {
    size_t n = req->options_count;
    if (n < 2)
        return 0; /* one option is one set */
    size_t *set = malloc(n * sizeof(*set)), *best = malloc(n * sizeof(*best));
    size_t *first = malloc((req->pods_count > 0 ? req->pods_count : 1) * sizeof(*first));
    bool *scored = malloc(n * sizeof(*scored));
    ranking_input_t *masked = NULL;
    ranking_figures_t *figures = NULL;
    int rc = 0;
    if (set == NULL || best == NULL || first == NULL || scored == NULL) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory relating %zu options", n);
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        scored[i] = out->figures[i].scored;
    decide__related_sets(req, scored, set, first);
    for (size_t i = 0; i < n; i++)
        best[i] = n;
    for (size_t i = 0; i < n; i++)
        if (out->figures[i].scored &&
            (best[set[i]] == n || out->figures[i].score < out->figures[best[set[i]]].score))
            best[set[i]] = i;
    size_t win = out->selected[0], pick = win;
    for (size_t s = 0; s < n; s++) {
        if (best[s] == n || s == set[win])
            continue;
        size_t pods = req->options[best[s]].pods_count, most = req->options[pick].pods_count;
        if (pods > most ||
            (pods == most && pick != win && out->figures[best[s]].score < out->figures[pick].score))
            pick = best[s];
    }
    if (pick == win)
        goto done;
    masked = malloc(n * sizeof(*masked));
    figures = malloc(n * sizeof(*figures));
    if (masked == NULL || figures == NULL) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory relating %zu options", n);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        masked[i] = out->inputs[i];
        masked[i].scorable = masked[i].scorable && set[i] == set[pick];
    }
    out->selected_count = ranking_select(&cfg->ranking, out->damper_price, out->cluster_size,
                                         masked, n, figures, out->selected);
    for (size_t k = 0; k < out->selected_count; k++)
        out->figures[out->selected[k]].most_pods_first = true;
    out->most_pods_first = true;
done:
    free(set);
    free(best);
    free(first);
    free(scored);
    free(masked);
    free(figures);
    return rc;
}

/* demand-fit's charge for the pods each option leaves to a later scale-up (left_out.h):
 * into the inputs' left_out_nodes_price and left_out_pods_price. */
static int decide__left_out(const decide_request_t *req, decide_result_t *out,
                            const double *pod_prices) {
    size_t n = req->options_count, m = req->pods_count > 0 ? req->pods_count : 1;
    size_t cap = n > 0 ? n : 1;
    bool *in_play = calloc(cap, sizeof(*in_play));
    size_t *set = malloc(cap * sizeof(*set)), *first = malloc(m * sizeof(*first));
    left_out_option_t *opts = calloc(cap, sizeof(*opts));
    double *cost = malloc(cap * sizeof(*cost)), *value = malloc(cap * sizeof(*value));
    int rc = FRUGAL_ENOMEM;
    if (in_play == NULL || set == NULL || first == NULL || opts == NULL || cost == NULL ||
        value == NULL)
        goto done;
    for (size_t i = 0; i < n; i++)
        in_play[i] = out->skips[i] == DECIDE_SKIP_NONE;
    decide__related_sets(req, in_play, set, first);
    for (size_t i = 0; i < n; i++) {
        const decide_option_t *o = &req->options[i];
        const ranking_input_t *r = &out->inputs[i];
        if (in_play[i])
            opts[i] = (left_out_option_t){.in_play = true,
                                          .set = set[i],
                                          .pods = o->pods,
                                          .pods_count = o->pods_count,
                                          .node = o->node->capacity,
                                          .max_pods = o->node->max_pods,
                                          .node_price = r->node_price,
                                          .nodes_price = r->node_price * (double)r->node_count,
                                          .pods_price = r->pods_price};
    }
    if ((rc = left_out_charge(req->pods, pod_prices, req->pods_count, opts, n, cost, value)) != 0)
        goto done;
    for (size_t i = 0; i < n; i++) {
        out->inputs[i].left_out_nodes_price = cost[i];
        out->inputs[i].left_out_pods_price = value[i];
    }
done:
    free(in_play);
    free(set);
    free(first);
    free(opts);
    free(cost);
    free(value);
    return rc;
}

void decide_result_free(decide_result_t *r) {
    free(r->skips);
    free(r->inputs);
    free(r->figures);
    free(r->selected);
    memset(r, 0, sizeof(*r));
}

int decide_best_options(const frugal_config_t *cfg, const decide_request_t *req,
                        decide_result_t *out, frugal_err_t *err) {
    return decide_best_options_demand(cfg, req, NULL, out, err);
}

int decide_best_options_remember(const frugal_config_t *cfg, const decide_request_t *req,
                                 const pod_lifetime_t *lifetimes, const bool *remember,
                                 demand_memory_t *memory, decide_result_t *out, frugal_err_t *err) {
    if (cfg->ranking.strategy != RANKING_STRATEGY_DEMAND_FIT)
        return decide_best_options_demand(cfg, req, NULL, out, err);
    demand_summary_t recent;
    decide_gpu_mix_t request_mix = DECIDE_GPU_MIX_UNKNOWN;
    if (memory != NULL) {
        size_t m = req->pods_count > 0 ? req->pods_count : 1;
        size_t *scratch = calloc(m, sizeof(*scratch));
        bool *mixed = calloc(m, sizeof(*mixed));
        if (scratch == NULL || mixed == NULL) {
            free(scratch);
            free(mixed);
            return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory remembering %zu pods",
                                  req->pods_count);
        }
        request_mix =
            decide__gpu_mixed(req, scratch, mixed) ? DECIDE_GPU_MIX_SOME : DECIDE_GPU_MIX_NONE;
        /* Each run of remembered pods in one call: no copy of the request is needed. */
        for (size_t i = 0; i < req->pods_count;) {
            size_t end = i;
            while (end < req->pods_count && (remember == NULL || remember[end]))
                end++;
            demand_batch_t b = {
                &req->pods[i],
                lifetimes != NULL ? &lifetimes[i] : NULL,
                &mixed[i],
                req->pod_seen_ms != NULL ? &req->pod_seen_ms[i] : NULL,
                req->pod_identities != NULL ? &req->pod_identities[i] : NULL,
                end - i,
                req->timed ? req->now_ms : -1,
            };
            demand_remember(memory, &b);
            i = end + 1;
        }
        free(scratch);
        free(mixed);
        demand_summarize(memory, &recent);
    }
    decide_demand_t dd = {lifetimes, memory != NULL ? &recent : NULL, request_mix};
    return decide_best_options_demand(cfg, req, &dd, out, err);
}

int decide_best_options_demand(const frugal_config_t *cfg, const decide_request_t *req,
                               const decide_demand_t *demand, decide_result_t *out,
                               frugal_err_t *err) {
    decide_demand_t none = {NULL, NULL, DECIDE_GPU_MIX_UNKNOWN};
    const decide_demand_t *dd = demand != NULL ? demand : &none;
    size_t n = req->options_count, m = n > 0 ? n : 1;
    memset(out, 0, sizeof(*out));
    out->skips = calloc(m, sizeof(*out->skips));
    out->inputs = calloc(m, sizeof(*out->inputs));
    out->figures = calloc(m, sizeof(*out->figures));
    out->selected = calloc(m, sizeof(*out->selected));
    /* A pod is priced once however many options carry it (CA repeats them all). */
    double *pod_prices = calloc(req->pods_count > 0 ? req->pods_count : 1, sizeof(*pod_prices));
    size_t *scratch = calloc(req->pods_count > 0 ? req->pods_count : 1, sizeof(*scratch));
    if (out->skips == NULL || out->inputs == NULL || out->figures == NULL ||
        out->selected == NULL || pod_prices == NULL || scratch == NULL) {
        free(pod_prices);
        free(scratch);
        decide_result_free(out);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory ranking %zu options", n);
    }
    for (size_t i = 0; i < req->pods_count; i++)
        pod_prices[i] = pricing_linear(&cfg->pricing, &req->pods[i]);
    out->damper_price = pricing_linear(&cfg->pricing, &cfg->ranking.damper);
    out->cluster_size = cfg->ranking.cluster_size != RANKING_CLUSTER_SIZE_AUTO
                            ? cfg->ranking.cluster_size
                            : req->cluster_size;
    out->preferred_cpu_milli = ranking_preferred_cpu_milli(&cfg->ranking, out->cluster_size);
    bool demand_fit = cfg->ranking.strategy == RANKING_STRATEGY_DEMAND_FIT;
    double gib_per_core = demand_fit ? decide__gib_per_core(req, dd) : 0.0;
    /* The arrival rates are the same for every option of a kind: read them once. */
    double rates[2] = {demand_fit ? decide__arrivals_per_hour(req, dd, false) : 0.0,
                       demand_fit ? decide__arrivals_per_hour(req, dd, true) : 0.0};
    /* Mixed GPU demand (docs/ranking.md): some GPU pods, among the recent ones or the
     * request's, take several GPUs or cannot go to every GPU group; it lets spare GPUs
     * decide, counted in full (not weighed by the arrival rate), only while the cluster
     * also runs GPU nodes pricier per GPU than the cheapest offered (checked below, once
     * P is known). */
    const demand_summary_t *rd = dd->recent;
    bool request_mixed = dd->request_gpu_mix == DECIDE_GPU_MIX_UNKNOWN
                             ? demand_fit && decide__gpu_mixed(req, scratch, NULL)
                             : dd->request_gpu_mix == DECIDE_GPU_MIX_SOME;
    bool gpu_mixed =
        demand_fit && ((rd != NULL && (rd->gpu > (double)rd->gpu_pods || rd->gpu_restricted > 0)) ||
                       request_mixed);

    for (size_t i = 0; i < n; i++) {
        const decide_option_t *o = &req->options[i];
        ranking_input_t *r = &out->inputs[i];
        r->group_id = o->group_id;
        r->node_count = o->node_count;
        r->exists = true;
        if ((out->skips[i] = decide__check(o)) != DECIDE_SKIP_NONE)
            continue;
        const node_info_t *ni = o->node;
        r->node_price = decide__node_price(cfg, ni, &o->group);
        double t = 0.0;
        for (size_t k = 0; k < o->pods_count; k++)
            t += pod_prices[o->pods[k]];
        r->pods_price = t;
        r->node_cpu_milli = ni->capacity.cpu_milli;
        r->has_gpu = ni->has_gpu;
        /* Only a group frugal knows to be theoretical pays the not-exist penalty: a
         * group it does not know belongs to another provider and exists there. */
        r->exists = !o->group.known || o->group.exists;
        r->group_nodes = o->group.known ? o->group.nodes : 0;
        r->similarity_key = ni->similarity_key;
        r->scorable = true;
    }
    free(scratch);
    /* GPU nodes being built: while frugal remembers too few GPU pods to tell interchangeable
     * demand from mixed, and they come fast (or all at once), the spare GPUs of the first
     * nodes are filled before pods leave holes elsewhere: they decide, counted in full, as
     * under mixed demand. */
    bool gpu_building = demand_fit && rd != NULL && rd->gpu_pods < DECIDE_DEMAND_MIN_PODS &&
                        (rates[1] == 0.0 || rates[1] >= DECIDE_GPU_BUILD_PER_HOUR);
    gpu_mixed = gpu_building || (gpu_mixed && decide__pricier_gpu_nodes(req, out));
    for (size_t i = 0; demand_fit && i < n; i++)
        if (out->skips[i] == DECIDE_SKIP_NONE)
            decide__demand_fit(cfg, req, dd, &req->options[i], gib_per_core, rates, gpu_mixed,
                               &out->inputs[i]);
    int rc = demand_fit ? decide__left_out(req, out, pod_prices) : 0;
    free(pod_prices);
    if (rc != 0) {
        decide_result_free(out);
        return frugal_err_set(err, rc, "out of memory ranking %zu options", n);
    }

    out->strategy = cfg->ranking.strategy;
    out->selected_count = ranking_select(&cfg->ranking, out->damper_price, out->cluster_size,
                                         out->inputs, n, out->figures, out->selected);
    for (size_t i = 0; i < n; i++)
        out->any_scored = out->any_scored || out->figures[i].scored;
    if (demand_fit && !out->any_scored && decide__pods_request_nothing(req)) {
        /* The formula prices such pods at X alone; without its preferred node size (which
         * demand-fit does not have), the cheapest nodes that fit win. */
        ranking_config_t formula = cfg->ranking;
        formula.strategy = RANKING_STRATEGY_PRICING_PROPOSAL;
        formula.preferred_nodes_count = 0;
        out->strategy = formula.strategy;
        out->preferred_cpu_milli = 0;
        demand_fit = false;
        out->selected_count = ranking_select(&formula, out->damper_price, out->cluster_size,
                                             out->inputs, n, out->figures, out->selected);
        for (size_t i = 0; i < n; i++)
            out->any_scored = out->any_scored || out->figures[i].scored;
    }
    if (demand_fit && out->any_scored && decide__most_pods_first(cfg, req, out, err) != 0) {
        decide_result_free(out);
        return FRUGAL_ENOMEM;
    }
    return 0;
}
