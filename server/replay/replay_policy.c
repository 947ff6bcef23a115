/* Replay policies: see replay.h. CA's expanders as cluster-autoscaler defines them
 * (random, most-pods, least-waste; ties broken at random as CA's fallback does), and
 * frugal's BestOptions strategies through the real decide_best_options. */
#include <stdlib.h>
#include <string.h>

#include "decide.h"
#include "hash.h"
#include "replay.h"

/* ---- CA's expanders ---- */

typedef struct replay__ca {
    replay_rng_t *rng;
} replay__ca_t;

static int replay__ca_init(void **state, const frugal_config_t *cfg, replay_rng_t *rng,
                           frugal_err_t *err) {
    (void)cfg;
    replay__ca_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    s->rng = rng;
    *state = s;
    return 0;
}

static void replay__ca_free(void *state) {
    free(state);
}

static int replay__random_choose(void *state, const replay_view_t *view,
                                 const replay_option_t *options, size_t n, size_t *chosen,
                                 frugal_err_t *err) {
    (void)view, (void)options, (void)err;
    *chosen = replay_rng_below(((replay__ca_t *)state)->rng, n);
    return 0;
}

/* The lowest score wins; equal scores are broken at random. */
static size_t replay__pick_lowest(replay_rng_t *rng, const double *score, size_t n) {
    size_t best = 0, ties = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || score[i] < score[best]) {
            best = i;
            ties = 1;
        } else if (score[i] == score[best] && replay_rng_below(rng, ++ties) == 0) {
            best = i; /* reservoir: each tied option equally likely */
        }
    }
    return best;
}

static int replay__scored_choose(void *state, const replay_view_t *view,
                                 const replay_option_t *options, size_t n, size_t *chosen,
                                 frugal_err_t *err, bool least_waste) {
    double *score = calloc(n, sizeof(*score));
    if (score == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const replay_option_t *o = &options[i];
        if (!least_waste) {
            score[i] = -(double)o->pods_count;
            continue;
        }
        /* CA's least-waste: unused share of the new nodes' cpu plus that of memory. */
        const resources_t *cap = &view->groups[o->group].info.capacity;
        double cpu = 0, mem = 0;
        for (size_t k = 0; k < o->pods_count; k++) {
            const replay_pod_t *p = &view->pods[view->pending[o->pods[k]]];
            cpu += (double)p->request.cpu_milli;
            mem += (double)p->request.memory_bytes;
        }
        double avail_cpu = (double)cap->cpu_milli * o->node_count;
        double avail_mem = (double)cap->memory_bytes * o->node_count;
        score[i] = (avail_cpu > 0 ? (avail_cpu - cpu) / avail_cpu : 0) +
                   (avail_mem > 0 ? (avail_mem - mem) / avail_mem : 0);
    }
    *chosen = replay__pick_lowest(((replay__ca_t *)state)->rng, score, n);
    free(score);
    return 0;
}

static int replay__most_pods_choose(void *state, const replay_view_t *view,
                                    const replay_option_t *options, size_t n, size_t *chosen,
                                    frugal_err_t *err) {
    return replay__scored_choose(state, view, options, n, chosen, err, false);
}

static int replay__least_waste_choose(void *state, const replay_view_t *view,
                                      const replay_option_t *options, size_t n, size_t *chosen,
                                      frugal_err_t *err) {
    return replay__scored_choose(state, view, options, n, chosen, err, true);
}

/* ---- frugal's strategies, through decide_best_options ---- */

typedef struct replay__frugal {
    frugal_config_t cfg; /* a shallow copy with ranking.strategy set */
    replay_rng_t *rng;
    demand_memory_t *demand; /* the memory of recent pods the server would keep */
} replay__frugal_t;

static int replay__frugal_init(void **state, const frugal_config_t *cfg, replay_rng_t *rng,
                               frugal_err_t *err, ranking_strategy_t strategy) {
    replay__frugal_t *s = calloc(1, sizeof(*s));
    demand_memory_t *m = malloc(sizeof(*m));
    if (s == NULL || m == NULL) {
        free(s);
        free(m);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    demand_init(m);
    s->cfg = *cfg;
    s->cfg.ranking.strategy = strategy;
    s->rng = rng;
    s->demand = m;
    *state = s;
    return 0;
}

static int replay__pricing_init(void **state, const frugal_config_t *cfg, replay_rng_t *rng,
                                frugal_err_t *err) {
    return replay__frugal_init(state, cfg, rng, err, RANKING_STRATEGY_PRICING_PROPOSAL);
}

static int replay__demand_fit_init(void **state, const frugal_config_t *cfg, replay_rng_t *rng,
                                   frugal_err_t *err) {
    return replay__frugal_init(state, cfg, rng, err, RANKING_STRATEGY_DEMAND_FIT);
}

/* A restarted server starts with an empty memory of recent pods. */
static void replay__frugal_restart(void *state) {
    replay__frugal_t *s = state;
    demand_init(s->demand);
}

static void replay__frugal_free(void *state) {
    replay__frugal_t *s = state;
    if (s != NULL)
        free(s->demand);
    free(s);
}

/* A trace pod's identity, as pod_identity gives a live pod's: never 0. */
static uint64_t replay__pod_identity(uint32_t index) {
    uint64_t h = hash_finish((uint64_t)index + 1);
    return h != 0 ? h : 1;
}

/* The options as BestOptions would receive them: every option carries its pods, the
 * distinct pods are the loop's pending pods; then the decision, and CA's random
 * fallback among several winners. */
static int replay__frugal_choose(void *state, const replay_view_t *view,
                                 const replay_option_t *options, size_t n, size_t *chosen,
                                 frugal_err_t *err) {
    replay__frugal_t *s = state;
    size_t m = view->pending_count ? view->pending_count : 1;
    decide_option_t *opts = calloc(n, sizeof(*opts));
    resources_t *pods = calloc(m, sizeof(*pods));
    pod_lifetime_t *lts = calloc(m, sizeof(*lts));
    int64_t *created = calloc(m, sizeof(*created));
    uint64_t *identities = calloc(m, sizeof(*identities));
    int rc = 0;
    if (!opts || !pods || !lts || !created || !identities) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t k = 0; k < view->pending_count; k++) {
        pods[k] = view->pods[view->pending[k]].request;
        lts[k] = view->pods[view->pending[k]].lifetime;
        created[k] = view->pods[view->pending[k]].arrive_s * 1000; /* CA's creationTimestamp */
        identities[k] = replay__pod_identity(view->pending[k]);    /* and its uid */
    }
    for (size_t i = 0; i < n; i++) {
        const replay_option_t *o = &options[i];
        const replay_group_t *g = &view->groups[o->group];
        opts[i] = (decide_option_t){
            .group_id = g->cfg->spec.id,
            .node_count = o->node_count,
            .node = &g->info,
            .pods = o->pods,
            .pods_count = o->pods_count,
            .group = {true, true, g->cfg->spec.spot, g->cfg->spec.spot_price, g->nodes,
                      g->cfg->max_size},
        };
    }
    /* As BestOptions reads a live request: it came at its latest pod's creation. */
    int64_t now_ms = demand_request_ms(created, view->pending_count, view->now_s * 1000);
    decide_request_t req = {opts, n,      pods,    view->pending_count, view->cluster_nodes,
                            true, now_ms, created, identities};
    decide_result_t res;
    if ((rc = decide_best_options_remember(&s->cfg, &req, lts, NULL, s->demand, &res, err)) != 0)
        goto done;
    *chosen =
        res.selected[res.selected_count > 1 ? replay_rng_below(s->rng, res.selected_count) : 0];
    if (view->why != NULL)
        ranking_format_strategy_figures(res.strategy, &res.figures[*chosen], &res.inputs[*chosen],
                                        view->why, view->why_size);
    decide_result_free(&res);
done:
    free(opts);
    free(pods);
    free(lts);
    free(created);
    free(identities);
    return rc;
}

/* ---- the table ---- */

static const replay_policy_ops_t replay__random = {
    .name = "random",
    .summary = "CA's random expander: any option",
    .init = replay__ca_init,
    .choose = replay__random_choose,
    .free = replay__ca_free,
};
static const replay_policy_ops_t replay__most_pods = {
    .name = "most-pods",
    .summary = "CA's most-pods expander: the option that schedules the most pods",
    .init = replay__ca_init,
    .choose = replay__most_pods_choose,
    .free = replay__ca_free,
};
static const replay_policy_ops_t replay__least_waste = {
    .name = "least-waste",
    .summary = "CA's least-waste expander: the least unused cpu + memory share",
    .init = replay__ca_init,
    .choose = replay__least_waste_choose,
    .free = replay__ca_free,
};
static const replay_policy_ops_t replay__pricing = {
    .name = "pricing-proposal",
    .summary = "frugal's BestOptions with ranking.strategy: pricing-proposal",
    .init = replay__pricing_init,
    .choose = replay__frugal_choose,
    .free = replay__frugal_free,
    .restart = replay__frugal_restart,
};
static const replay_policy_ops_t replay__demand_fit = {
    .name = "demand-fit",
    .summary = "frugal's BestOptions with ranking.strategy: demand-fit",
    .init = replay__demand_fit_init,
    .choose = replay__frugal_choose,
    .free = replay__frugal_free,
    .restart = replay__frugal_restart,
};

/* ---- Escalator: the simulation scales each group itself (replay.c) ---- */

static int replay__escalator_init(void **state, const frugal_config_t *cfg, replay_rng_t *rng,
                                  frugal_err_t *err) {
    (void)cfg, (void)rng, (void)err;
    *state = NULL;
    return 0;
}

static int replay__escalator_choose(void *state, const replay_view_t *view,
                                    const replay_option_t *options, size_t n, size_t *chosen,
                                    frugal_err_t *err) {
    (void)state, (void)view, (void)options, (void)n;
    *chosen = 0;
    return frugal_err_set(err, FRUGAL_EINVAL, "escalator does not choose among options");
}

static void replay__escalator_free(void *state) {
    (void)state;
}

const replay_policy_ops_t replay_policy_escalator = {
    .name = "escalator",
    .summary = "Escalator: every group scaled up by its utilisation delta, down by tainting",
    .init = replay__escalator_init,
    .choose = replay__escalator_choose,
    .free = replay__escalator_free,
};

static const replay_policy_ops_t *const replay__policies[] = {
    &replay__random,  &replay__most_pods,  &replay__least_waste,
    &replay__pricing, &replay__demand_fit, &replay_policy_escalator,
};

const replay_policy_ops_t *const *replay_policy_list(size_t *count) {
    *count = sizeof(replay__policies) / sizeof(replay__policies[0]);
    return replay__policies;
}

const replay_policy_ops_t *replay_policy_find(const char *name) {
    size_t n;
    const replay_policy_ops_t *const *list = replay_policy_list(&n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i]->name, name) == 0)
            return list[i];
    return NULL;
}
