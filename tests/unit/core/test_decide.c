/* Unit tests of the BestOptions decision (server/core/decide.c): the pricing route (the
 * template's instance type through the effective catalog, the group's spot settings,
 * the linear fallback), T summed over the distinct pods, the order of the rules that
 * leave an option out, the not-exist penalty for theoretical groups only, the zone
 * balance, and the never-empty answer. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "catalog.h"
#include "decide.h"
#include "pricing.h"

#define GIB (1024LL * 1024 * 1024)
#define assert_near(a, b) assert_true(fabs((a) - (b)) < 1e-9)

/* A cluster of 10 nodes prefers 4 cpu (the default table). Linear prices are the
 * catalog's; the damper is 0.5 cpu + 500Mi. */
static const char config_yaml[] = "ranking: {strategy: pricing-proposal}\n"
                                  "node_groups:\n"
                                  "  - {id: a, machine_type: n1-standard-2, max_size: 10}\n";

static int setup(void **state) {
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    if (config_load_string("test.yaml", config_yaml, strlen(config_yaml), &cfg, &errors) != 0) {
        free(errors);
        return -1;
    }
    *state = cfg;
    return 0;
}

static int teardown(void **state) {
    config_free(*state);
    return 0;
}

static node_info_t template_node(const char *type, int64_t cpu_milli, int64_t memory,
                                 const char *key) {
    node_info_t ni = {
        .name = "",
        .instance_type = (char *)type,
        .capacity = {cpu_milli, memory, 0},
        .similarity_key = (char *)key,
    };
    return ni;
}

/* Three distinct pods: 1 cpu + 1Gi, 500m + 512Mi, 2 cpu. */
static const resources_t pods[] = {{1000, GIB, 0}, {500, GIB / 2, 0}, {2000, 0, 0}};
static const uint32_t all_pods[] = {0, 1, 2, 0, 0};

static decide_option_t option(const char *id, int32_t count, const node_info_t *node) {
    decide_option_t o = {
        .group_id = id,
        .node_count = count,
        .node = node,
        .pods = all_pods,
        .pods_count = sizeof(all_pods) / sizeof(*all_pods),
    };
    return o;
}

static void decide(const frugal_config_t *cfg, const decide_option_t *opts, size_t n,
                   int64_t cluster_size, decide_result_t *res) {
    decide_request_t req = {opts, n,    pods, sizeof(pods) / sizeof(*pods), cluster_size, false,
                            0,    NULL, NULL};
    frugal_err_t err = {0};
    assert_int_equal(decide_best_options(cfg, &req, res, &err), 0);
}

static void test_pricing_route(void **state) {
    const frugal_config_t *cfg = *state;
    node_info_t known = template_node("n1-standard-2", 2000, 7680LL * 1024 * 1024, "k");
    node_info_t custom = template_node("custom-x", 2000, 8 * GIB, "c");
    node_info_t untyped = template_node(NULL, 4000, 16 * GIB, "u");
    decide_option_t opts[] = {
        option("on-demand", 1, &known),     option("spot", 1, &known),
        option("spot-override", 1, &known), option("custom", 1, &custom),
        option("custom-spot", 1, &custom),  option("foreign", 1, &untyped),
    };
    opts[1].group = (decide_group_t){.known = true, .exists = true, .spot = true, .spot_price = -1};
    opts[2].group =
        (decide_group_t){.known = true, .exists = true, .spot = true, .spot_price = 0.5};
    opts[4].group =
        (decide_group_t){.known = true, .exists = true, .spot = true, .spot_price = 0.07};
    /* Unknown group: its spot settings are not read. */
    opts[5].group = (decide_group_t){.known = false, .spot = true, .spot_price = 0.001};
    decide_result_t res;
    decide(cfg, opts, 6, 10, &res);
    assert_near(res.inputs[0].node_price, 0.095);
    assert_near(res.inputs[1].node_price, 0.02);
    assert_near(res.inputs[2].node_price, 0.5);
    /* Not in the catalog: linear from the template's capacity. */
    assert_near(res.inputs[3].node_price, 2 * CATALOG_LINEAR_CPU + 8 * CATALOG_LINEAR_MEMORY_GB);
    assert_near(res.inputs[4].node_price, 0.07);
    assert_near(res.inputs[5].node_price, 4 * CATALOG_LINEAR_CPU + 16 * CATALOG_LINEAR_MEMORY_GB);
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(res.skips[i], DECIDE_SKIP_NONE);
        assert_true(res.figures[i].scored);
        assert_near(res.figures[i].node_price, res.inputs[i].node_price);
    }
    decide_result_free(&res);
}

static void test_figures_and_winner(void **state) {
    const frugal_config_t *cfg = *state;
    node_info_t n2 = template_node("n1-standard-2", 2000, 7680LL * 1024 * 1024, "2");
    node_info_t n4 = template_node("n1-standard-4", 4000, 15LL * GIB, "4");
    decide_option_t opts[] = {option("two", 4, &n2), option("four", 2, &n4)};
    decide_result_t res;
    decide(cfg, opts, 2, 10, &res);

    double x = pricing_linear(&cfg->pricing, &cfg->ranking.damper);
    double t = 0;
    for (size_t k = 0; k < sizeof(all_pods) / sizeof(*all_pods); k++)
        t += pricing_linear(&cfg->pricing, &pods[all_pods[k]]);
    assert_near(res.damper_price, x);
    assert_int_equal(res.preferred_cpu_milli, 4000);
    assert_true(res.any_scored);

    /* four: P = 0.19, 2 nodes, 4 cpu as preferred: unfitness 1. */
    const ranking_figures_t *f = &res.figures[1];
    assert_near(f->pods_price, t);
    assert_near(f->ratio, (0.19 * 2 + x) / (t + x));
    assert_near(f->unfitness, 1.0);
    assert_near(f->suppressed, 1.0);
    assert_near(f->score, f->ratio);
    /* two: P = 0.095, 4 nodes, unfitness 2 suppressed by the node count. */
    f = &res.figures[0];
    assert_near(f->ratio, (0.095 * 4 + x) / (t + x));
    assert_near(f->unfitness, 2.0);
    assert_near(f->suppressed, ranking_suppress(2.0, 4, cfg->ranking.suppress_scale));
    assert_near(f->score, f->suppressed * f->ratio);

    size_t want = res.figures[0].score < res.figures[1].score ? 0 : 1;
    assert_int_equal(res.selected_count, 1);
    assert_int_equal(res.selected[0], want);
    decide_result_free(&res);
}

static void test_left_out_in_order(void **state) {
    const frugal_config_t *cfg = *state;
    node_info_t ok = template_node("n1-standard-2", 2000, 7680LL * 1024 * 1024, "k");
    node_info_t nocpu = template_node("n1-standard-2", 0, GIB, "k");
    decide_option_t opts[] = {
        option("count", 0, NULL), option("pod", 1, NULL), option("template", 1, NULL),
        option("cpu", 1, &nocpu), option("ok", 1, &ok),
    };
    opts[0].bad_pod = true; /* the node count is looked at first */
    opts[1].bad_pod = true; /* then the pods, before the template */
    decide_result_t res;
    decide(cfg, opts, 5, 10, &res);
    assert_int_equal(res.skips[0], DECIDE_SKIP_NODE_COUNT);
    assert_int_equal(res.skips[1], DECIDE_SKIP_BAD_POD);
    assert_int_equal(res.skips[2], DECIDE_SKIP_NO_TEMPLATE);
    assert_int_equal(res.skips[3], DECIDE_SKIP_NO_CPU);
    assert_int_equal(res.skips[4], DECIDE_SKIP_NONE);
    for (size_t i = 0; i < 4; i++)
        assert_false(res.figures[i].scored);
    assert_int_equal(res.selected_count, 1);
    assert_int_equal(res.selected[0], 4);
    decide_result_free(&res);
}

static void test_nothing_scored_selects_all(void **state) {
    const frugal_config_t *cfg = *state;
    decide_option_t opts[] = {option("a", 1, NULL), option("b", -1, NULL)};
    decide_result_t res;
    decide(cfg, opts, 2, 10, &res);
    assert_false(res.any_scored);
    assert_int_equal(res.selected_count, 2);
    assert_int_equal(res.selected[0], 0);
    assert_int_equal(res.selected[1], 1);
    decide_result_free(&res);

    decide(cfg, NULL, 0, 10, &res);
    assert_int_equal(res.selected_count, 0);
    assert_false(res.any_scored);
    decide_result_free(&res);
}

/* BestEffort pods request nothing: demand-fit's T and spare room are 0 for every option,
 * so the formula (whose X prices them) decides, and says so, rather than no one; without
 * its preferred node size, which demand-fit does not have, so the cheapest node wins
 * in a cluster of any size. */
static void test_demand_fit_lets_the_formula_rank_besteffort_pods(void **state) {
    (void)state;
    static const char yaml[] = "node_groups:\n"
                               "  - {id: big, machine_type: n1-standard-32, max_size: 10}\n"
                               "  - {id: small, machine_type: n1-standard-2, max_size: 10}\n";
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    assert_int_equal(config_load_string("t.yaml", yaml, strlen(yaml), &cfg, &errors), 0);
    assert_int_equal(cfg->ranking.strategy, RANKING_STRATEGY_DEMAND_FIT);
    static const resources_t empty[] = {{0, 0, 0}, {0, 0, 0}};
    static const uint32_t both[] = {0, 1};
    node_info_t n32 = template_node("n1-standard-32", 32000, 120LL * GIB, "32");
    node_info_t n2 = template_node("n1-standard-2", 2000, 7680LL * 1024 * 1024, "2");
    decide_option_t opts[] = {option("big", 1, &n32), option("small", 1, &n2)};
    for (size_t i = 0; i < 2; i++)
        opts[i].pods = both, opts[i].pods_count = 2;
    decide_request_t req = {opts, 2, empty, 2, 10, false, 0, NULL, NULL};
    decide_result_t res;
    frugal_err_t err = {0};
    assert_int_equal(decide_best_options(cfg, &req, &res, &err), 0);
    assert_true(res.any_scored);
    assert_int_equal(res.strategy, RANKING_STRATEGY_PRICING_PROPOSAL);
    assert_int_equal(res.selected_count, 1);
    assert_int_equal(res.selected[0], 1); /* the cheap node */
    decide_result_free(&res);

    /* 200 nodes: the formula alone would prefer 16 cores and buy the 32-core node. */
    req.cluster_size = 200;
    assert_int_equal(decide_best_options(cfg, &req, &res, &err), 0);
    assert_int_equal(res.strategy, RANKING_STRATEGY_PRICING_PROPOSAL);
    assert_int_equal(res.preferred_cpu_milli, 0);
    assert_int_equal(res.selected_count, 1);
    assert_int_equal(res.selected[0], 1);
    assert_near(res.figures[0].unfitness, 1.0);
    assert_near(res.figures[1].unfitness, 1.0);
    decide_result_free(&res);
    req.cluster_size = 10;

    /* One pod that requests something: demand-fit decides as configured. */
    static const resources_t one[] = {{0, 0, 0}, {500, GIB, 0}};
    req.pods = one;
    assert_int_equal(decide_best_options(cfg, &req, &res, &err), 0);
    assert_int_equal(res.strategy, RANKING_STRATEGY_DEMAND_FIT);
    assert_true(res.any_scored);
    decide_result_free(&res);
    config_free(cfg);
}

/* An option that leaves pods to a later scale-up is charged what they will cost there
 * (left_out.h): eight 1-core pods fill an n1-standard-8 exactly (score 0.38 / 0.3365 =
 * 1.129), two 9-core pods fit no such node; n1-standard-16 x2 hosts all ten (1.52 /
 * (1.0048 + its spare room 0.1818) = 1.281). Uncharged, the 8-core node would win; the
 * two 9-core pods take one 16-core node each later (1.52 for 0.668 of pods), so it
 * scores 1.90 / 1.0048 = 1.891 and the 16-core option wins. */
static void test_demand_fit_charges_pods_left_out(void **state) {
    (void)state;
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    static const char yaml[] = "node_groups:\n"
                               "  - {id: s8, machine_type: n1-standard-8, max_size: 10}\n"
                               "  - {id: s16, machine_type: n1-standard-16, max_size: 10}\n";
    assert_int_equal(config_load_string("t.yaml", yaml, strlen(yaml), &cfg, &errors), 0);
    static const resources_t mixed[] = {{1000, 2 * GIB, 0}, {1000, 2 * GIB, 0}, {1000, 2 * GIB, 0},
                                        {1000, 2 * GIB, 0}, {1000, 2 * GIB, 0}, {1000, 2 * GIB, 0},
                                        {1000, 2 * GIB, 0}, {1000, 2 * GIB, 0}, {9000, 8 * GIB, 0},
                                        {9000, 8 * GIB, 0}};
    static const uint32_t small[] = {0, 1, 2, 3, 4, 5, 6, 7},
                          all[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    node_info_t n8 = template_node("n1-standard-8", 8000, 30LL * GIB, "8");
    node_info_t n16 = template_node("n1-standard-16", 16000, 60LL * GIB, "16");
    decide_option_t opts[] = {option("s8", 1, &n8), option("s16", 2, &n16)};
    opts[0].pods = small, opts[0].pods_count = 8;
    opts[1].pods = all, opts[1].pods_count = 10;
    decide_request_t req = {opts, 2, mixed, 10, 10, false, 0, NULL, NULL};
    decide_result_t res;
    frugal_err_t err = {0};
    assert_int_equal(decide_best_options(cfg, &req, &res, &err), 0);
    assert_int_equal(res.selected_count, 1);
    assert_int_equal(res.selected[0], 1);
    assert_near(res.inputs[0].left_out_nodes_price, 1.52);
    assert_true(fabs(res.inputs[0].left_out_pods_price - 0.6683) < 0.001);
    assert_true(fabs(res.figures[0].score - 1.891) < 0.001);
    assert_true(fabs(res.figures[1].score - 1.281) < 0.001);
    assert_near(res.inputs[1].left_out_nodes_price, 0.0);
    char debug[512];
    ranking_format_demand_figures(&res.figures[0], &res.inputs[0], debug, sizeof(debug));
    assert_non_null(strstr(debug, " score=1.89"));
    assert_non_null(strstr(debug, " left_out_nodes_price=1.520000 left_out_pods_price=0.668"));
    ranking_format_demand_figures(&res.figures[1], &res.inputs[1], debug, sizeof(debug));
    assert_null(strstr(debug, "left_out"));
    decide_result_free(&res);
    config_free(cfg);
}

/* A node runs at most its "pods" capacity: the spare room of tiny pods stops at the free
 * pod slots (110 - 10 on one n1-standard-16), not at the cpu and memory left (310 more). */
static void test_spare_room_stops_at_the_pod_slots(void **state) {
    (void)state;
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    static const char yaml[] = "node_groups:\n"
                               "  - {id: s16, machine_type: n1-standard-16, max_size: 10}\n";
    assert_int_equal(config_load_string("t.yaml", yaml, strlen(yaml), &cfg, &errors), 0);
    static const resources_t tiny[10] = {{50, GIB / 16, 0}, {50, GIB / 16, 0}, {50, GIB / 16, 0},
                                         {50, GIB / 16, 0}, {50, GIB / 16, 0}, {50, GIB / 16, 0},
                                         {50, GIB / 16, 0}, {50, GIB / 16, 0}, {50, GIB / 16, 0},
                                         {50, GIB / 16, 0}};
    static const uint32_t all[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    node_info_t n16 = template_node("n1-standard-16", 16000, 60LL * GIB, "16");
    decide_option_t opts[] = {option("s16", 1, &n16)};
    opts[0].pods = all, opts[0].pods_count = 10;
    decide_request_t req = {opts, 1, tiny, 10, 10, false, 0, NULL, NULL};
    double spare[2];
    for (int capped = 0; capped < 2; capped++) {
        n16.max_pods = capped ? 110 : 0;
        decide_result_t res;
        frugal_err_t err = {0};
        assert_int_equal(decide_best_options(cfg, &req, &res, &err), 0);
        spare[capped] = res.inputs[0].spare_value;
        decide_result_free(&res);
    }
    /* Uncapped, the 15.5 spare cores hold 310 such pods, counted as 309.5 (room - 0.5). */
    assert_true(fabs(spare[1] / spare[0] - 100 / 309.5) < 1e-9);
    config_free(cfg);
}

static void test_theoretical_groups_pay_the_penalty(void **state) {
    const frugal_config_t *cfg = *state;
    node_info_t n4 = template_node("n1-standard-4", 4000, 15LL * GIB, "4");
    decide_option_t opts[] = {option("nap", 1, &n4), option("foreign", 1, &n4),
                              option("known", 1, &n4)};
    opts[0].group = (decide_group_t){.known = true, .exists = false, .spot_price = -1};
    opts[1].group = (decide_group_t){.known = false, .exists = false};
    opts[2].group = (decide_group_t){.known = true, .exists = true, .spot_price = -1};
    decide_result_t res;
    decide(cfg, opts, 3, 10, &res);
    assert_false(res.inputs[0].exists);
    assert_true(res.inputs[1].exists);
    assert_near(res.figures[0].score, res.figures[2].score * cfg->ranking.not_exist_penalty);
    assert_near(res.figures[1].score, res.figures[2].score);
    decide_result_free(&res);
}

static void test_zone_balance_by_group_size(void **state) {
    const frugal_config_t *cfg = *state;
    node_info_t za = template_node("n1-standard-4", 4000, 15LL * GIB, "same");
    node_info_t zb = template_node("n1-standard-4", 4000, 15LL * GIB, "same");
    decide_option_t opts[] = {option("za", 1, &za), option("zb", 1, &zb)};
    opts[0].group = (decide_group_t){.known = true, .exists = true, .spot_price = -1, .nodes = 3};
    opts[1].group = (decide_group_t){.known = true, .exists = true, .spot_price = -1, .nodes = 1};
    decide_result_t res;
    decide(cfg, opts, 2, 10, &res);
    assert_int_equal(res.selected_count, 1);
    assert_int_equal(res.selected[0], 1);
    assert_int_equal(res.inputs[1].group_nodes, 1);
    decide_result_free(&res);

    /* A group frugal does not know counts as empty. */
    opts[1].group = (decide_group_t){.known = false, .nodes = 7};
    decide(cfg, opts, 2, 10, &res);
    assert_int_equal(res.inputs[1].group_nodes, 0);
    assert_int_equal(res.selected[0], 1);
    decide_result_free(&res);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pricing_route),
        cmocka_unit_test(test_figures_and_winner),
        cmocka_unit_test(test_left_out_in_order),
        cmocka_unit_test(test_nothing_scored_selects_all),
        cmocka_unit_test(test_demand_fit_lets_the_formula_rank_besteffort_pods),
        cmocka_unit_test(test_demand_fit_charges_pods_left_out),
        cmocka_unit_test(test_spare_room_stops_at_the_pod_slots),
        cmocka_unit_test(test_theoretical_groups_pay_the_penalty),
        cmocka_unit_test(test_zone_balance_by_group_size),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
