/* Unit tests of the cost-based ranking (server/core/ranking.c), with docs/ranking.md's numbers. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ranking.h"

static preferred_node_t default_table[] = {
    {2, 1000}, {6, 2000}, {20, 4000}, {80, 8000}, {300, 16000}, {-1, 32000},
};

static ranking_config_t default_config(void) {
    ranking_config_t cfg = {
        .strategy = RANKING_STRATEGY_PRICING_PROPOSAL,
        .damper = {500, 500 * 1024 * 1024, 0},
        .preferred_nodes = default_table,
        .preferred_nodes_count = sizeof(default_table) / sizeof(*default_table),
        .suppress_scale = 15,
        .gpu_unfitness = 1000,
        .not_exist_penalty = 2.0,
    };
    return cfg;
}

/* A cluster size whose preferred node is n1-standard-8 (8 cpu). */
#define CLUSTER_PREF_8 50

static ranking_input_t option(const char *id, int32_t count, double p, double t,
                              int64_t cpu_milli) {
    ranking_input_t in = {
        .group_id = id,
        .scorable = true,
        .node_count = count,
        .node_price = p,
        .pods_price = t,
        .node_cpu_milli = cpu_milli,
        .exists = true,
    };
    return in;
}

#define assert_near(a, b, eps) assert_true(fabs((a) - (b)) < (eps))

static void test_suppress_values(void **state) {
    (void)state;
    static const struct {
        int32_t n;
        double want;
    } cases[] = {
        {1, 4.000000}, {2, 3.800296},  {3, 3.602354},  {4, 3.407874},
        {5, 3.218439}, {10, 2.388851}, {20, 1.441325}, {50, 1.008712},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char got[32], want[32];
        snprintf(got, sizeof(got), "%.6f", ranking_suppress(4, cases[i].n, 15));
        snprintf(want, sizeof(want), "%.6f", cases[i].want);
        assert_string_equal(got, want);
    }
    /* A perfect fit stays 1 whatever the count. */
    assert_near(ranking_suppress(1, 7, 15), 1.0, 1e-12);
}

static void test_preferred_table(void **state) {
    (void)state;
    ranking_config_t cfg = default_config();
    static const struct {
        int64_t size, cpu;
    } cases[] = {
        {0, 1000},  {2, 1000},  {3, 2000},   {6, 2000},    {7, 4000},    {20, 4000},
        {21, 8000}, {80, 8000}, {81, 16000}, {300, 16000}, {301, 32000}, {100000, 32000},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
        assert_int_equal(ranking_preferred_cpu_milli(&cfg, cases[i].size), cases[i].cpu);
    ranking_config_t empty = cfg;
    empty.preferred_nodes_count = 0;
    assert_int_equal(ranking_preferred_cpu_milli(&empty, 5), 0);
}

/* The pricing design's table: n1-standard-2 (0.095), -8 (0.380) and a 32-cpu node
 * (0.795), X = 0.016, T = 0.003 per 0.1 cpu, preferred node n1-standard-8. */
static void check_design_table(double t, const double ratios[3], const double scores[3]) {
    ranking_config_t cfg = default_config();
    ranking_input_t in[3] = {
        option("n1-standard-2", 1, 0.095, t, 2000),
        option("n1-standard-8", 1, 0.380, t, 8000),
        option("big-32", 1, 0.795, t, 32000),
    };
    ranking_figures_t figs[3];
    size_t selected[3];
    size_t n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, in, 3, figs, selected);
    static const double unfitness[3] = {4, 1, 4};
    for (size_t i = 0; i < 3; i++) {
        char got[32], want[32];
        assert_true(figs[i].scored);
        snprintf(got, sizeof(got), "%.4f", figs[i].ratio);
        snprintf(want, sizeof(want), "%.4f", ratios[i]);
        assert_string_equal(got, want);
        snprintf(got, sizeof(got), "%.4f", figs[i].score);
        snprintf(want, sizeof(want), "%.4f", scores[i]);
        assert_string_equal(got, want);
        assert_near(figs[i].unfitness, unfitness[i], 1e-12);
        assert_near(figs[i].suppressed, unfitness[i], 1e-12);
    }
    /* The 8-cpu node wins. */
    assert_int_equal(n, 1);
    assert_int_equal(selected[0], 1);
}

static void test_design_table_small_pod(void **state) {
    (void)state;
    static const double ratios[3] = {5.8421, 20.8421, 42.6842};
    static const double scores[3] = {23.3684, 20.8421, 170.7368};
    check_design_table(0.003, ratios, scores);
}

static void test_design_table_large_pod(void **state) {
    (void)state;
    static const double ratios[3] = {1.8197, 6.4918, 13.2951};
    static const double scores[3] = {7.2787, 6.4918, 53.1803};
    check_design_table(0.045, ratios, scores);
}

/* Score composition with node count: C = P x n and the suppressed unfitness. */
static void test_score_formula(void **state) {
    (void)state;
    ranking_config_t cfg = default_config();
    ranking_input_t in = option("a", 3, 0.095, 0.2, 2000);
    ranking_figures_t f;
    ranking_score(&cfg, 0.016, 8000, &in, &f);
    assert_true(f.scored);
    double ratio = (0.095 * 3 + 0.016) / (0.2 + 0.016);
    double suppressed = 3.0 * (1.0 - tanh(2.0 / 15.0)) + 1.0;
    assert_near(f.ratio, ratio, 1e-12);
    assert_near(f.unfitness, 4.0, 1e-12);
    assert_near(f.suppressed, suppressed, 1e-12);
    assert_near(f.score, ratio * suppressed, 1e-12);
    assert_near(f.node_price, 0.095, 1e-15);
    assert_near(f.nodes_price, 0.095 * 3, 1e-15);
    assert_near(f.pods_price, 0.2, 1e-15);
    assert_near(f.damper_price, 0.016, 1e-15);
    assert_near(f.pref_cpu, 8.0, 1e-15);
}

static void test_gpu_override(void **state) {
    (void)state;
    ranking_config_t cfg = default_config();
    /* The GPU node fits perfectly and costs the same, yet its suppressed unfitness is
     * gpu_unfitness whatever its node count: the plain node wins. */
    ranking_input_t in[2] = {
        option("gpu", 5, 0.38, 0.1, 8000),
        option("plain", 1, 0.38, 0.1, 2000),
    };
    in[0].has_gpu = true;
    ranking_figures_t figs[2];
    size_t selected[2];
    size_t n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, in, 2, figs, selected);
    assert_near(figs[0].suppressed, 1000.0, 1e-12);
    assert_near(figs[0].unfitness, 1.0, 1e-12);
    assert_near(figs[0].score, 1000.0 * (0.38 * 5 + 0.016) / (0.1 + 0.016), 1e-9);
    assert_int_equal(n, 1);
    assert_int_equal(selected[0], 1);

    /* Alone, a GPU option is still answered. */
    n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, in, 1, figs, selected);
    assert_int_equal(n, 1);
    assert_int_equal(selected[0], 0);
}

static void test_not_exist_penalty(void **state) {
    (void)state;
    ranking_config_t cfg = default_config();
    ranking_input_t in[2] = {
        option("nap", 1, 0.38, 0.1, 8000),
        option("existing", 1, 0.38, 0.1, 8000),
    };
    in[0].exists = false;
    in[0].similarity_key = "a";
    in[1].similarity_key = "b";
    ranking_figures_t figs[2];
    size_t selected[2];
    size_t n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, in, 2, figs, selected);
    assert_near(figs[0].score, 2.0 * figs[1].score, 1e-12);
    assert_int_equal(n, 1);
    assert_int_equal(selected[0], 1);

    /* More than twice cheaper, the group that does not exist yet still wins. */
    in[0].node_price = 0.1;
    n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, in, 2, figs, selected);
    assert_int_equal(n, 1);
    assert_int_equal(selected[0], 0);

    cfg.not_exist_penalty = 10;
    n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, in, 2, figs, selected);
    assert_int_equal(n, 1);
    assert_int_equal(selected[0], 1);

    /* The debug shows the penalty where it applies, so the figures multiply to the score. */
    char buf[512];
    ranking_format_figures(&figs[0], buf, sizeof(buf));
    assert_non_null(strstr(buf, " not_exist_penalty=10.000000"));
    assert_float_equal(figs[0].suppressed * figs[0].ratio * figs[0].penalty, figs[0].score, 1e-12);
    ranking_format_figures(&figs[1], buf, sizeof(buf));
    assert_null(strstr(buf, "not_exist_penalty"));
    in[0].spare_value = 0.05;
    ranking_score_demand_fit(&cfg, &in[0], &figs[0]);
    ranking_format_demand_figures(&figs[0], &in[0], buf, sizeof(buf));
    assert_non_null(strstr(buf, " not_exist_penalty=10.000000"));
}

static void test_ties_in_request_order(void **state) {
    (void)state;
    ranking_config_t cfg = default_config();
    ranking_input_t in[4] = {
        option("worse", 1, 0.5, 0.1, 8000),
        option("b", 1, 0.38, 0.1, 8000),
        option("c", 1, 0.38, 0.1, 8000),
        option("a", 1, 0.38 * (1 + 1e-12), 0.1, 8000),
    };
    in[1].similarity_key = "b";
    in[2].similarity_key = "c";
    in[3].similarity_key = "a";
    ranking_figures_t figs[4];
    size_t selected[4];
    size_t n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, in, 4, figs, selected);
    assert_int_equal(n, 3);
    assert_int_equal(selected[0], 1);
    assert_int_equal(selected[1], 2);
    assert_int_equal(selected[2], 3);

    /* 1e-6 relative is not a tie. */
    in[3].node_price = 0.38 * (1 + 1e-6);
    n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, in, 4, figs, selected);
    assert_int_equal(n, 2);
    assert_int_equal(selected[0], 1);
    assert_int_equal(selected[1], 2);

    /* ... unless it is the cheaper one. */
    in[3].node_price = 0.38 * (1 - 1e-6);
    n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, in, 4, figs, selected);
    assert_int_equal(n, 1);
    assert_int_equal(selected[0], 3);

    assert_true(ranking_scores_tie(1.0, 1.0 + 5e-10));
    assert_false(ranking_scores_tie(1.0, 1.0 + 2e-9));
}

/* Many tied options of three similar sets and some of none: each set keeps the group
 * with the fewest nodes, the others all stay, in request order. */
static void test_zone_balance_many(void **state) {
    (void)state;
    ranking_config_t cfg = default_config();
    enum { N = 300 };
    static ranking_input_t in[N];
    static ranking_figures_t figs[N];
    static size_t selected[N];
    static const char *const keys[] = {"n1-standard-8|a", "n1-standard-8|b", "n1-standard-8|c",
                                       NULL};
    for (size_t i = 0; i < N; i++) {
        in[i] = option("g", 2, 0.1, 0.1, 8000);
        in[i].similarity_key = keys[i % 4];
        in[i].group_nodes = (int64_t)((i * 7919) % 1000); /* no two alike */
    }
    size_t n = ranking_select(&cfg, 0.1, CLUSTER_PREF_8, in, N, figs, selected);
    assert_int_equal(n, 3 + N / 4);
    size_t fewest[3] = {N, N, N};
    for (size_t i = 0; i < N; i++) {
        size_t k = i % 4;
        if (k < 3 && (fewest[k] == N || in[i].group_nodes < in[fewest[k]].group_nodes))
            fewest[k] = i;
    }
    for (size_t j = 0, i = 0; i < N; i++) {
        if (i % 4 == 3 || i == fewest[0] || i == fewest[1] || i == fewest[2])
            assert_int_equal(selected[j++], i);
    }
}

static void test_zone_balance(void **state) {
    (void)state;
    ranking_config_t cfg = default_config();
    /* With a perfect fit (suppressed 1) and X = 0.1: 2 nodes at 0.1 with T = 0.1 score
     * 0.3 / 0.2 = 1.5; 1 node at 0.1 with T = 1/30 scores 0.2 / (0.4/3) = 1.5. */
    ranking_input_t in[5] = {
        option("pool-a", 2, 0.1, 0.1, 8000),        /* similar, 2 nodes */
        option("pool-b", 1, 0.1, 1.0 / 30.0, 8000), /* similar, 1 node: wins the set */
        option("other", 2, 0.1, 0.1, 8000),         /* tied, not similar: stays */
        option("pool-c", 1, 0.1, 1.0 / 30.0, 8000), /* similar, 1 node, later: out */
        option("pool-d", 1, 0.3, 0.1, 8000),        /* similar but not tied */
    };
    in[0].similarity_key = "n1-standard-8|team=web";
    in[1].similarity_key = "n1-standard-8|team=web";
    in[2].similarity_key = "n1-standard-8|team=db";
    in[3].similarity_key = "n1-standard-8|team=web";
    in[4].similarity_key = "n1-standard-8|team=web";
    ranking_figures_t figs[5];
    size_t selected[5];
    size_t n = ranking_select(&cfg, 0.1, CLUSTER_PREF_8, in, 5, figs, selected);
    assert_true(ranking_scores_tie(figs[0].score, figs[1].score));
    assert_int_equal(n, 2);
    assert_int_equal(selected[0], 1);
    assert_int_equal(selected[1], 2);

    /* Equal node counts: the first in request order. */
    in[1].node_count = 2;
    in[1].pods_price = 0.1;
    in[3].node_count = 2;
    in[3].pods_price = 0.1;
    n = ranking_select(&cfg, 0.1, CLUSTER_PREF_8, in, 5, figs, selected);
    assert_int_equal(n, 2);
    assert_int_equal(selected[0], 0);
    assert_int_equal(selected[1], 2);

    /* Equal options: the group with the fewest nodes now wins, whatever the order. */
    in[0].group_nodes = 3;
    in[1].group_nodes = 1;
    in[3].group_nodes = 2;
    n = ranking_select(&cfg, 0.1, CLUSTER_PREF_8, in, 5, figs, selected);
    assert_int_equal(n, 2);
    assert_int_equal(selected[0], 1);
    assert_int_equal(selected[1], 2);

    /* Without similarity keys every tied option stays. */
    for (size_t i = 0; i < 5; i++)
        in[i].similarity_key = NULL;
    n = ranking_select(&cfg, 0.1, CLUSTER_PREF_8, in, 5, figs, selected);
    assert_int_equal(n, 4);
}

static void test_unscorable_left_out(void **state) {
    (void)state;
    ranking_config_t cfg = default_config();
    ranking_input_t in[4] = {
        option("no-template", 1, 0.01, 0.1, 8000),
        option("zero-count", 0, 0.01, 0.1, 8000),
        option("ok", 3, 0.38, 0.1, 8000),
        option("no-cpu", 1, 0.01, 0.1, 0),
    };
    in[0].scorable = false;
    ranking_figures_t figs[4];
    size_t selected[4];
    size_t n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, in, 4, figs, selected);
    assert_false(figs[0].scored);
    assert_false(figs[1].scored);
    assert_true(figs[2].scored);
    assert_false(figs[3].scored);
    assert_int_equal(n, 1);
    assert_int_equal(selected[0], 2);
}

static void test_never_empty(void **state) {
    (void)state;
    ranking_config_t cfg = default_config();
    ranking_input_t in[3] = {
        option("a", 1, 0.1, 0.1, 8000),
        option("b", -1, 0.1, 0.1, 8000),
        option("c", 1, 0.1, 0.1, 8000),
    };
    in[0].scorable = false;
    in[2].scorable = false;
    ranking_figures_t figs[3];
    size_t selected[3];
    size_t n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, in, 3, figs, selected);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(selected[i], i);
        assert_false(figs[i].scored);
    }
    assert_int_equal(ranking_select(&cfg, 0.016, CLUSTER_PREF_8, in, 0, figs, selected), 0);

    /* A zero damper with free pods cannot be scored either. */
    ranking_input_t free_pods = option("free", 1, 0.1, 0.0, 8000);
    n = ranking_select(&cfg, 0.0, CLUSTER_PREF_8, &free_pods, 1, figs, selected);
    assert_int_equal(n, 1);
    assert_false(figs[0].scored);
}

static void test_many_options(void **state) {
    (void)state;
    ranking_config_t cfg = default_config();
    enum { N = 200 };
    ranking_input_t in[N];
    ranking_figures_t figs[N];
    size_t selected[N];
    for (size_t i = 0; i < N; i++) {
        in[i] = option("g", 1, 0.38, 0.1, 8000);
        in[i].similarity_key = i % 2 ? "odd" : "even";
    }
    size_t n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, in, N, figs, selected);
    assert_int_equal(n, 2);
    assert_int_equal(selected[0], 0);
    assert_int_equal(selected[1], 1);
}

/* A GPU option under demand-fit for pods that request GPUs: P, T, the priced spare
 * room it leaves (use 1). */
static ranking_input_t spare_option(const char *id, int32_t count, double p, double t,
                                    double spare) {
    ranking_input_t in = option(id, count, p, t, 8000);
    in.spare_value = spare;
    in.use_share = 1.0;
    in.has_gpu = true;
    return in;
}

/* demand-fit for interchangeable GPU pods on GPU nodes: the option that costs least per
 * unit of the pods it hosts now wins, whatever the spare GPUs make of the score; an
 * option hosting less than the best is never preferred for its lower pods_ratio; under
 * mixed GPU demand, on plain nodes and on GPU nodes for pods without GPUs the score
 * alone decides. */
static void test_demand_fit_exact_gpu(void **state) {
    (void)state;
    ranking_config_t cfg = default_config();
    cfg.strategy = RANKING_STRATEGY_DEMAND_FIT;
    /* A 4-GPU node for one 1-GPU pod, the spare counted as three more pods: 2.92 /
     * (0.75 + 2.25) = 0.973333; an exact 1-GPU node: 0.73 / 0.75 = 0.973333 too, a
     * hair above. The exact fit costs 0.973333 per unit now, the large node 3.893333. */
    ranking_input_t in[3] = {
        spare_option("t4-4", 1, 2.92, 0.75, 2.2501),
        spare_option("t4-1", 1, 0.73, 0.75, 0.0),
        spare_option("far", 1, 1.2, 0.75, 0.3),
    };
    ranking_figures_t figs[3];
    size_t selected[3];
    size_t n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, in, 3, figs, selected);
    assert_true(figs[0].score < figs[1].score);
    assert_near(figs[0].pods_ratio, 2.92 / 0.75, 1e-9);
    assert_near(figs[1].pods_ratio, 0.73 / 0.75, 1e-9);
    assert_int_equal(n, 1);
    assert_int_equal(selected[0], 1);

    /* Spare GPUs that make the large node score 20 % lower do not decide either. */
    in[0].spare_value = 3.0;
    n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, in, 3, figs, selected);
    assert_true(figs[0].score < figs[1].score / 1.2);
    assert_int_equal(n, 1);
    assert_int_equal(selected[0], 1);
    in[0].spare_value = 2.2501;

    /* A cpu option for other pods, cheaper per unit of what it hosts, is not a candidate:
     * the exact fit is chosen among the GPU options. */
    ranking_input_t with_cpu[2] = {in[0], spare_option("cpu", 1, 1.0, 1.0, 0.0)};
    with_cpu[1].has_gpu = false;
    n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, with_cpu, 2, figs, selected);
    assert_true(figs[1].pods_ratio < figs[0].pods_ratio && figs[1].score > figs[0].score);
    assert_int_equal(n, 1);
    assert_int_equal(selected[0], 0);

    /* An option hosting fewer pods now (lower T) is not preferred for its lower
     * pods_ratio: the best (hosting 1.5) stays. */
    ranking_input_t fewer[2] = {
        spare_option("more-pods", 1, 1.5, 1.5, 0.04),    /* score 0.974026, pods_ratio 1 */
        spare_option("fewer-pods", 1, 0.732, 0.75, 0.0), /* 0.976 and 0.976 */
    };
    n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, fewer, 2, figs, selected);
    assert_true(figs[1].pods_ratio < figs[0].pods_ratio);
    assert_int_equal(n, 1);
    assert_int_equal(selected[0], 0);

    /* When some GPU pods take several GPUs, the 4-GPU node's spare room is room a 1-GPU
     * node cannot offer, and its lower score wins. */
    in[0].gpu_mixed = in[1].gpu_mixed = in[2].gpu_mixed = true;
    n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, in, 3, figs, selected);
    assert_int_equal(n, 1);
    assert_int_equal(selected[0], 0);
    in[0].gpu_mixed = in[1].gpu_mixed = in[2].gpu_mixed = false;

    /* Plain nodes: the score alone decides. */
    in[0].has_gpu = in[1].has_gpu = in[2].has_gpu = false;
    n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, in, 3, figs, selected);
    assert_int_equal(n, 1);
    assert_int_equal(selected[0], 0);
    /* GPU nodes for pods that request no GPU: the same. */
    in[0].has_gpu = in[1].has_gpu = in[2].has_gpu = true;
    in[0].gpu_unused = in[1].gpu_unused = in[2].gpu_unused = true;
    n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, in, 3, figs, selected);
    assert_int_equal(n, 1);
    assert_int_equal(selected[0], 0);

    /* Equal in score and pods_ratio (similar groups of one shape): both stay for the
     * zone balance, which keeps the emptier group. */
    ranking_input_t zones[2] = {
        spare_option("zone-a", 1, 0.73, 0.75, 0.0),
        spare_option("zone-b", 1, 0.73, 0.75, 0.0),
    };
    zones[0].similarity_key = zones[1].similarity_key = "t4-1";
    zones[0].group_nodes = 3;
    zones[1].group_nodes = 1;
    n = ranking_select(&cfg, 0.016, CLUSTER_PREF_8, zones, 2, figs, selected);
    assert_int_equal(n, 1);
    assert_int_equal(selected[0], 1);
}

static void test_figures_round_trip(void **state) {
    (void)state;
    ranking_figures_t f = {.scored = true,
                           .node_price = 0.38,
                           .nodes_price = 0.76,
                           .pods_price = 0.003,
                           .damper_price = 0.016,
                           .pref_cpu = 8,
                           .ratio = 40.0,
                           .unfitness = 1.0,
                           .suppressed = 1.0,
                           .score = 40.0},
                      g;
    char buf[512];
    int len = ranking_format_figures(&f, buf, sizeof(buf));
    assert_true(len > 0 && (size_t)len < sizeof(buf));
    assert_string_equal(buf, "node_price=0.380000 pods_price=0.003000 ratio=40.000000 "
                             "unfitness=1.000000 suppressed=1.000000 score=40.000000");
    char debug[600];
    snprintf(debug, sizeof(debug), "ca says hi | x%s%s", RANKING_DEBUG_SEPARATOR, buf);
    assert_int_equal(ranking_parse_figures(debug, &g), 0);
    assert_true(g.scored);
    assert_near(g.node_price, 0.38, 1e-9);
    assert_near(g.pods_price, 0.003, 1e-9);
    assert_near(g.ratio, 40.0, 1e-9);
    assert_near(g.score, 40.0, 1e-9);
    /* The nine figures servers wrote for a while (with C, X, pref_cpu) still parse. */
    assert_int_equal(ranking_parse_figures(" | frugal: node_price=0.38 nodes_price=0.76 "
                                           "pods_price=0.003 damper_price=0.016 pref_cpu=8 "
                                           "ratio=20.8 unfitness=1 suppressed=1 score=20.8",
                                           &g),
                     0);
    assert_near(g.nodes_price, 0.76, 1e-9);
    assert_near(g.damper_price, 0.016, 1e-9);
    assert_near(g.score, 20.8, 1e-9);
    assert_int_equal(ranking_parse_figures("no figures", &g), FRUGAL_EINVAL);
    assert_int_equal(ranking_parse_figures(" | frugal: node_price=1", &g), FRUGAL_EINVAL);
}

/* demand-fit's figures, as this server writes them and as servers from before the
 * arrival rate did (no arrivals_per_hour): both parse. */
static void test_demand_figures_parse(void **state) {
    (void)state;
    const char *now = "strategy=demand-fit node_price=0.5 pods_price=0.2 spare_value=0.1 "
                      "use=0.9 arrivals_per_hour=12.5 gib_per_core=4 gpu_factor=1 mixed_gpu=0 "
                      "ratio=2.5 pods_ratio=1.5 score=2.25";
    const char *before = "strategy=demand-fit node_price=0.5 pods_price=0.2 spare_value=0.1 "
                         "use=0.9 gib_per_core=4 gpu_factor=1 mixed_gpu=1 ratio=2.5 "
                         "pods_ratio=1.5 score=2.25";
    const char *cases[] = {now, before};
    for (size_t i = 0; i < 2; i++) {
        char debug[600];
        snprintf(debug, sizeof(debug), "x%s%s", RANKING_DEBUG_SEPARATOR, cases[i]);
        ranking_figures_t g;
        assert_int_equal(ranking_parse_figures(debug, &g), 0);
        assert_near(g.node_price, 0.5, 1e-9);
        assert_near(g.pods_ratio, 1.5, 1e-9);
        assert_near(g.score, 2.25, 1e-9);
        assert_int_equal(g.mixed_gpu, i == 1);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_suppress_values),
        cmocka_unit_test(test_preferred_table),
        cmocka_unit_test(test_design_table_small_pod),
        cmocka_unit_test(test_design_table_large_pod),
        cmocka_unit_test(test_score_formula),
        cmocka_unit_test(test_gpu_override),
        cmocka_unit_test(test_not_exist_penalty),
        cmocka_unit_test(test_ties_in_request_order),
        cmocka_unit_test(test_zone_balance),
        cmocka_unit_test(test_unscorable_left_out),
        cmocka_unit_test(test_never_empty),
        cmocka_unit_test(test_many_options),
        cmocka_unit_test(test_demand_fit_exact_gpu),
        cmocka_unit_test(test_figures_round_trip),
        cmocka_unit_test(test_zone_balance_many),
        cmocka_unit_test(test_demand_figures_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
