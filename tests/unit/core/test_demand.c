/* Unit tests of the memory of recent pods (server/core/demand.c) and of the demand-fit
 * strategy through decide_best_options: the memory never grows past DEMAND_SLOTS, even
 * with several writers at once; the summary's shape and lifetime share; demand-fit
 * sends memory-shaped pods to the highmem group, counts spare room in the demand's
 * shape (that of the recent pods that stay), in whole pods, keeps the GPU and not-exist
 * factors, and answers for pods never seen; demand-fit is the default;
 * ranking.cluster_size replaces the counted size; the demand-fit figures round-trip
 * through the debug string; the spare room is weighed by how fast pods came lately. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "decide.h"
#include "demand.h"
#include "hash.h"
#include "pricing.h"

#define GIB (1024LL * 1024 * 1024)

/* A new, empty memory (free it). */
static demand_memory_t *empty_memory(void) {
    demand_memory_t *m = malloc(sizeof(*m));
    assert_non_null(m);
    demand_init(m);
    return m;
}

static void test_bounded(void **state) {
    (void)state;
    demand_memory_t *m = empty_memory();
    demand_summary_t s;
    demand_summarize(m, &s);
    assert_int_equal(s.pods, 0);
    resources_t pods[3] = {{1000, 4 * GIB, 0}, {1000, 4 * GIB, 0}, {2000, 0, 0}};
    pod_lifetime_t lt[3] = {POD_LIFETIME_LONG, POD_LIFETIME_SHORT, POD_LIFETIME_UNKNOWN};
    demand_record(m, pods, lt, 3);
    demand_summarize(m, &s);
    assert_int_equal(s.pods, 3);
    assert_true(fabs(s.cpu_cores - 4.0) < 1e-9);
    assert_true(fabs(s.memory_gib - 8.0) < 1e-9);
    assert_true(fabs(s.long_share - 2.0 / 3.0) < 1e-9);
    /* The pods that stay (long or unknown), summed apart: the shape demand-fit reads. */
    assert_int_equal(s.long_pods, 2);
    assert_true(fabs(s.long_cpu_cores - 3.0) < 1e-9);
    assert_true(fabs(s.long_memory_gib - 4.0) < 1e-9);
    assert_int_equal(s.gpu_pods, 0);
    /* GPU pods are counted apart from the GPUs they take. */
    resources_t gpus[2] = {{1000, GIB, 1}, {1000, GIB, 4}};
    demand_record(m, gpus, NULL, 2);
    demand_summarize(m, &s);
    assert_int_equal(s.gpu_pods, 2);
    assert_true(fabs(s.gpu - 5.0) < 1e-9);
    for (int i = 0; i < 5000; i++)
        demand_record(m, pods, NULL, 3);
    demand_summarize(m, &s);
    assert_int_equal(s.pods, DEMAND_SLOTS);
    /* A batch larger than the memory keeps its last DEMAND_SLOTS pods. */
    resources_t *big = calloc(DEMAND_SLOTS * 2, sizeof(*big));
    for (size_t i = 0; i < DEMAND_SLOTS * 2; i++)
        big[i] = (resources_t){i < DEMAND_SLOTS ? 1000 : 3000, 0, 0};
    demand_record(m, big, NULL, DEMAND_SLOTS * 2);
    demand_summarize(m, &s);
    assert_int_equal(s.pods, DEMAND_SLOTS);
    assert_true(fabs(s.cpu_cores - 3.0 * DEMAND_SLOTS) < 1e-6);
    free(big);
    free(m);
}

static void *writer(void *arg) {
    demand_memory_t *m = arg;
    resources_t pods[7];
    for (int i = 0; i < 7; i++)
        pods[i] = (resources_t){500, GIB, 0};
    for (int i = 0; i < 20000; i++)
        demand_record(m, pods, NULL, 7);
    return NULL;
}

static void test_concurrent_writers(void **state) {
    (void)state;
    demand_memory_t *m = malloc(sizeof(*m));
    assert_non_null(m);
    demand_init(m);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, writer, m), 0);
    for (int k = 0; k < 100; k++) { /* readers run alongside */
        demand_summary_t s;
        demand_summarize(m, &s);
        assert_true(s.pods <= DEMAND_SLOTS);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    demand_summary_t s;
    demand_summarize(m, &s);
    assert_int_equal(s.pods, DEMAND_SLOTS);
    assert_true(fabs(s.cpu_cores - 0.5 * DEMAND_SLOTS) < 1e-6);
    assert_true(fabs(s.long_share - 1.0) < 1e-9);
    free(m);
}

static frugal_config_t *load(const char *yaml) {
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    if (config_load_string("t.yaml", yaml, strlen(yaml), &cfg, &errors) != 0) {
        fprintf(stderr, "%s", errors ? errors : "");
        free(errors);
        return NULL;
    }
    return cfg;
}

static node_info_t node(const char *type, int64_t cpu, int64_t mem, bool gpu) {
    node_info_t ni = {.name = "",
                      .instance_type = (char *)type,
                      .capacity = {cpu, mem, gpu},
                      .has_gpu = gpu,
                      .similarity_key = (char *)type};
    return ni;
}

/* A GPU node of `gpus` GPUs. */
static node_info_t gpu_node(const char *type, int64_t cpu, int64_t mem, int64_t gpus) {
    node_info_t ni = node(type, cpu, mem, true);
    ni.capacity.gpu = gpus;
    return ni;
}

static decide_option_t option(const char *id, const node_info_t *ni, const uint32_t *pods,
                              size_t n) {
    decide_option_t o = {.group_id = id,
                         .node_count = 1,
                         .node = ni,
                         .pods = pods,
                         .pods_count = n,
                         .group = {true, true, false, -1.0, 0, 0}};
    return o;
}

/* demand_remember of n pods without identities. */
static void remember_at(demand_memory_t *m, const resources_t *pods, const pod_lifetime_t *lt,
                        const bool *restricted, const int64_t *seen_ms, size_t n, int64_t at_ms) {
    demand_batch_t b = {pods, lt, restricted, seen_ms, NULL, n, at_ms};
    demand_remember(m, &b);
}

/* The memory keeps when each pod was seen; the summary counts the timed pods of each kind
 * and the oldest time. */
static void test_timed(void **state) {
    (void)state;
    demand_memory_t *m = empty_memory();
    demand_summary_t s;
    demand_summarize(m, &s);
    assert_int_equal(s.timed_pods, 0);
    assert_true(s.oldest_ms == INT64_MAX);
    resources_t cpu[2] = {{1000, GIB, 0}, {1000, GIB, 0}}, gpu[1] = {{1000, GIB, 1}};
    demand_record(m, cpu, NULL, 2); /* no time: not counted */
    remember_at(m, cpu, NULL, NULL, NULL, 2, 5000);
    remember_at(m, gpu, NULL, NULL, NULL, 1, 9000);
    demand_summarize(m, &s);
    assert_int_equal(s.pods, 5);
    assert_int_equal(s.timed_pods, 2);
    assert_int_equal(s.timed_gpu_pods, 1);
    assert_int_equal(s.oldest_ms, 5000);
    assert_int_equal(s.newest_ms, 9000);
    /* A pod created before the latest arrival remembered (9000) was held up: it counts
     * as arriving with it; a negative entry arrives at the call's time. */
    int64_t created[2] = {2000, -1};
    remember_at(m, cpu, NULL, NULL, created, 2, 12000);
    demand_summarize(m, &s);
    assert_int_equal(s.timed_pods, 4);
    assert_int_equal(s.oldest_ms, 5000);
    assert_int_equal(s.newest_ms, 12000);
    /* In a fresh memory (a restarted server) each pod counts at its creation. */
    demand_init(m);
    remember_at(m, cpu, NULL, NULL, created, 2, 12000);
    demand_summarize(m, &s);
    assert_int_equal(s.oldest_ms, 2000);
    assert_int_equal(s.newest_ms, 12000);
    free(m);
}

/* A pod remembered under its identity is not remembered again, however often it comes
 * (CA asks about a pending pod every loop); pods without one always are; once its slot
 * is overwritten, the pod is new again. */
static void test_identities(void **state) {
    (void)state;
    demand_memory_t *m = empty_memory();
    demand_summary_t s;
    resources_t pods[3] = {{1000, GIB, 0}, {2000, GIB, 0}, {3000, GIB, 0}};
    uint64_t ids[3] = {hash_finish(1), 0, hash_finish(3)};
    int64_t created[3] = {1000, 2000, 3000};
    demand_batch_t b = {pods, NULL, NULL, created, ids, 3, 5000};
    for (int i = 0; i < 5; i++)
        demand_remember(m, &b);
    demand_summarize(m, &s);
    assert_int_equal(s.pods, 2 + 5); /* the unnamed pod five times */
    assert_true(fabs(s.cpu_cores - (1 + 3 + 5 * 2)) < 1e-9);
    assert_int_equal(s.oldest_ms, 1000);
    /* Many distinct pods later (the ring wrapped twice), the first ones are new again. */
    resources_t one = {1000, GIB, 0};
    for (uint64_t k = 100; k < 100 + 2 * DEMAND_SLOTS; k++) {
        uint64_t id = hash_finish(k);
        demand_batch_t other = {&one, NULL, NULL, NULL, &id, 1, 6000};
        demand_remember(m, &other);
    }
    demand_summarize(m, &s);
    assert_int_equal(s.pods, DEMAND_SLOTS);
    assert_int_equal(s.oldest_ms, 6000);
    demand_remember(m, &b);
    demand_summarize(m, &s);
    assert_int_equal(s.oldest_ms, 6000); /* held up: at the latest arrival */
    assert_true(fabs(s.cpu_cores - (DEMAND_SLOTS - 3 + 1 + 2 + 3)) < 1e-9);
    free(m);
}

/* A pod created two days before the latest of its request (it stayed pending; the
 * server just started) counts as arriving DEMAND_HELD_UP_MS before that one. */
static void test_held_up(void **state) {
    (void)state;
    demand_memory_t *m = empty_memory();
    demand_summary_t s;
    resources_t pods[2] = {{1000, GIB, 0}, {1000, GIB, 0}};
    int64_t t = 1767225600000LL, created[2] = {t - 2 * 24 * 3600 * 1000LL, t};
    remember_at(m, pods, NULL, NULL, created, 2, t);
    demand_summarize(m, &s);
    assert_int_equal(s.oldest_ms, t - DEMAND_HELD_UP_MS);
    assert_int_equal(s.newest_ms, t);
    free(m);
}

/* A pod known already gets what a later call knows of it: its restricted mark (it came
 * first through a proposal, which does not know it), a lifetime it lacked. */
static void test_known_pod_completed(void **state) {
    (void)state;
    demand_memory_t *m = empty_memory();
    demand_summary_t s;
    resources_t gpu = {1000, GIB, 1};
    uint64_t id = hash_finish(7);
    demand_batch_t proposal = {&gpu, NULL, NULL, NULL, &id, 1, 1000};
    demand_remember(m, &proposal);
    demand_summarize(m, &s);
    assert_int_equal(s.gpu_restricted, 0);
    assert_int_equal(s.long_pods, 1); /* unknown lifetime counts as staying */
    bool restricted = true;
    pod_lifetime_t job = POD_LIFETIME_SHORT;
    demand_batch_t best = {&gpu, &job, &restricted, NULL, &id, 1, 2000};
    demand_remember(m, &best);
    demand_summarize(m, &s);
    assert_int_equal(s.pods, 1);
    assert_int_equal(s.gpu_restricted, 1);
    assert_int_equal(s.long_pods, 0);
    free(m);
}

/* One pod of 1.5 cores; a 2-core node fits it snugly, a 16-core node leaves room for 9
 * more. The spare room counts in full when the time is not known; by the share of it
 * that the recent arrivals fill within DECIDE_SPARE_HORIZON_LONG_H otherwise; not at all
 * when only one pod was ever seen. */
static size_t rate_pick_created(const frugal_config_t *cfg, demand_memory_t *m, bool timed,
                                int64_t now_ms, const int64_t *created, double *use_big) {
    node_info_t std2 = node("n1-standard-2", 2000, (int64_t)(7.5 * GIB), false);
    node_info_t std16 = node("n1-standard-16", 16000, 60 * GIB, false);
    resources_t pods[] = {{1500, 2 * GIB, 0}};
    pod_lifetime_t lts[] = {POD_LIFETIME_LONG};
    uint32_t refs[] = {0};
    decide_option_t opts[] = {option("small", &std2, refs, 1), option("big", &std16, refs, 1)};
    decide_request_t req = {opts, 2, pods, 1, 0, timed, now_ms, created, NULL};
    decide_result_t r;
    frugal_err_t err;
    assert_int_equal(decide_best_options_remember(cfg, &req, lts, NULL, m, &r, &err), 0);
    size_t pick = r.selected[0];
    assert_int_equal(r.selected_count, 1);
    *use_big = r.inputs[1].use_share;
    char buf[512];
    ranking_format_strategy_figures(cfg->ranking.strategy, &r.figures[1], &r.inputs[1], buf,
                                    sizeof(buf));
    assert_non_null(strstr(buf, " arrivals_per_hour="));
    decide_result_free(&r);
    return pick;
}

static size_t rate_pick(const frugal_config_t *cfg, demand_memory_t *m, bool timed, int64_t now_ms,
                        double *use_big) {
    return rate_pick_created(cfg, m, timed, now_ms, NULL, use_big);
}

static void test_demand_fit_arrival_rate(void **state) {
    (void)state;
    frugal_config_t *cfg = load("ranking: {strategy: demand-fit}\n");
    assert_non_null(cfg);
    demand_memory_t *m = malloc(sizeof(*m));
    assert_non_null(m);
    double use = 0;
    /* No clock (plan of old, direct calls): today's full credit, the big node wins. */
    demand_init(m);
    assert_int_equal(rate_pick(cfg, m, false, 0, &use), 1);
    assert_true(fabs(use - DECIDE_USE_LONG) < 1e-12);
    /* A fresh server's first pod: one pod is no sign of more; the snug node wins. */
    demand_init(m);
    assert_int_equal(rate_pick(cfg, m, true, 0, &use), 0);
    assert_true(use == 0.0);
    /* 200 pods an hour lately: the big node's room fills within minutes. */
    demand_init(m);
    resources_t web[] = {{1500, 2 * GIB, 0}};
    pod_lifetime_t lt[] = {POD_LIFETIME_LONG};
    for (int i = 0; i < 200; i++)
        remember_at(m, web, lt, NULL, NULL, 1, (int64_t)i * 18000);
    assert_int_equal(rate_pick(cfg, m, true, 3600000, &use), 1);
    assert_true(use > 0.95 && use < 1.0);
    /* One pod every 10 hours: the room would take days to fill; the snug node wins. */
    demand_init(m);
    for (int i = 0; i < 10; i++)
        remember_at(m, web, lt, NULL, NULL, 1, (int64_t)i * 36000000);
    assert_int_equal(rate_pick(cfg, m, true, 360000000, &use), 0);
    assert_true(use < 0.5);
    /* The same pods arriving by their creation times, as BestOptions reads them: the
     * watch ends at the latest creation even when the request's clock says earlier. */
    demand_init(m);
    for (int i = 0; i < 9; i++) {
        int64_t created = (int64_t)i * 36000000;
        assert_int_equal(rate_pick_created(cfg, m, true, 0, &created, &use), 0);
    }
    int64_t last = 9LL * 36000000;
    assert_int_equal(rate_pick_created(cfg, m, true, 0, &last, &use), 0);
    assert_true(use < 0.5);
    /* Two hundred pods created 18 s apart: a busy cluster, the big node again. */
    demand_init(m);
    for (int i = 0; i < 200; i++) {
        int64_t created = 1767225600000LL + (int64_t)i * 18000;
        rate_pick_created(cfg, m, true, created, &created, &use);
    }
    int64_t next = 1767225600000LL + 200LL * 18000;
    assert_int_equal(rate_pick_created(cfg, m, true, next, &next, &use), 1);
    assert_true(use > 0.95 && use < 1.0);
    free(m);
    config_free(cfg);
}

static void test_demand_fit_shape(void **state) {
    (void)state;
    frugal_config_t *cfg = load("ranking: {strategy: demand-fit}\n");
    assert_non_null(cfg);
    assert_int_equal(cfg->ranking.strategy, RANKING_STRATEGY_DEMAND_FIT);
    node_info_t std8 = node("n1-standard-8", 8000, 30 * GIB, false);
    node_info_t mem8 = node("n1-highmem-8", 8000, 52 * GIB, false);
    node_info_t cpu8 = node("n1-highcpu-8", 8000, (int64_t)(7.2 * GIB), false);
    /* Two memory-shaped pods (1 core, 6 GiB), never seen before: no demand memory. */
    resources_t pods[] = {{1000, 6 * GIB, 0}};
    uint32_t refs[] = {0, 0};
    decide_option_t opts[] = {option("std", &std8, refs, 2), option("mem", &mem8, refs, 2),
                              option("cpu", &cpu8, refs, 1)};
    decide_request_t req = {opts, 3, pods, 1, 0, false, 0, NULL, NULL};
    decide_result_t r;
    frugal_err_t err;
    assert_int_equal(decide_best_options(cfg, &req, &r, &err), 0);
    assert_int_equal(r.selected_count, 1);
    assert_int_equal(r.selected[0], 1);
    /* The option's shape: 6 GiB per core; mem-8 has 6 cores and 40 GiB left: 6 more
     * pods' worth of room in that shape. */
    assert_true(fabs(r.inputs[1].gib_per_core - 6.0) < 1e-9);
    assert_true(r.inputs[1].spare_value > r.inputs[0].spare_value);
    assert_true(fabs(r.inputs[1].use_share - DECIDE_USE_LONG) < 1e-12);
    char buf[512];
    ranking_format_strategy_figures(cfg->ranking.strategy, &r.figures[1], &r.inputs[1], buf,
                                    sizeof(buf));
    assert_non_null(strstr(buf, "strategy=demand-fit node_price="));
    char debug[600];
    snprintf(debug, sizeof(debug), "ca%s%s", RANKING_DEBUG_SEPARATOR, buf);
    ranking_figures_t back;
    assert_int_equal(ranking_parse_figures(debug, &back), 0);
    assert_true(fabs(back.suppressed - 1.0) < 1e-9);
    assert_true(fabs(back.score - r.figures[1].score) < 1e-5);
    decide_result_free(&r);

    /* A cluster whose recent demand is cpu-shaped pulls the shape down: Job pods also
     * count their room at DECIDE_USE_SHORT. */
    demand_summary_t d = {.pods = 100, .cpu_cores = 100, .memory_gib = 100, .long_share = 0};
    pod_lifetime_t lts[] = {POD_LIFETIME_SHORT};
    decide_demand_t dd = {lts, &d, DECIDE_GPU_MIX_UNKNOWN};
    assert_int_equal(decide_best_options_demand(cfg, &req, &dd, &r, &err), 0);
    assert_true(fabs(r.inputs[1].gib_per_core - sqrt(6.0)) < 1e-9);
    assert_true(fabs(r.inputs[1].use_share - DECIDE_USE_SHORT) < 1e-12);
    decide_result_free(&r);

    /* With enough pods that stay remembered, their shape (8 GiB per core) is the
     * cluster's, whatever the Jobs ask. mem-8 keeps 6 cores and 40 GiB: room for
     * 40 / sqrt(6 x 8) = 5.77 pods of 1 core and sqrt(48) GiB, of which pods of varying
     * size use all but half a pod. cpu-8 keeps 7 cores and 1.2 GiB, less than one pod's
     * memory: no room at all. */
    d.long_pods = DECIDE_DEMAND_MIN_PODS;
    d.long_cpu_cores = 16;
    d.long_memory_gib = 128;
    assert_int_equal(decide_best_options_demand(cfg, &req, &dd, &r, &err), 0);
    assert_true(fabs(r.inputs[1].gib_per_core - sqrt(48.0)) < 1e-9);
    resources_t one = {1000, (int64_t)(sqrt(48.0) * GIB), 0};
    double pods_room = 40.0 / ((double)one.memory_bytes / GIB);
    assert_true(fabs(r.inputs[1].spare_value -
                     (pods_room - 0.5) * pricing_linear(&cfg->pricing, &one)) < 1e-9);
    assert_true(r.inputs[2].spare_value == 0.0);
    decide_result_free(&r);
    config_free(cfg);
}

/* The spare room in pods: none below one pod's worth, the room less half a pod from one
 * pod on, and GPUs counted whole. */
static void test_demand_fit_pods_in_room(void **state) {
    (void)state;
    frugal_config_t *cfg = load("ranking: {strategy: demand-fit}\n");
    assert_non_null(cfg);
    /* One 2-core, 2 GiB pod on nodes of 3, 4 and 5.5 cores (memory to spare): room for
     * 0.5, 1 and 1.75 pods, counted as 0, 0.5 and 1.25. */
    node_info_t n3 = node("x3", 3000, 64 * GIB, false), n4 = node("x4", 4000, 64 * GIB, false);
    node_info_t n5 = node("x5", 5500, 64 * GIB, false);
    resources_t pods[] = {{2000, 2 * GIB, 0}};
    uint32_t refs[] = {0};
    decide_option_t opts[] = {option("a", &n3, refs, 1), option("b", &n4, refs, 1),
                              option("c", &n5, refs, 1)};
    decide_request_t req = {opts, 3, pods, 1, 0, false, 0, NULL, NULL};
    decide_result_t r;
    frugal_err_t err;
    assert_int_equal(decide_best_options(cfg, &req, &r, &err), 0);
    double pod = pricing_linear(&cfg->pricing, &pods[0]);
    assert_true(r.inputs[0].spare_value == 0.0);
    assert_true(fabs(r.inputs[1].spare_value - 0.5 * pod) < 1e-9);
    assert_true(fabs(r.inputs[2].spare_value - 1.25 * pod) < 1e-9);
    decide_result_free(&r);

    /* A 1-GPU pod on a 4-GPU node with cpu for 10 more: 3 GPUs, 3 pods, exactly. */
    node_info_t g4 = gpu_node("g4", 44000, 64 * GIB, 4);
    resources_t gpod[] = {{4000, 4 * GIB, 1}};
    decide_option_t gopt[] = {option("g", &g4, refs, 1)};
    decide_request_t greq = {gopt, 1, gpod, 1, 0, false, 0, NULL, NULL};
    assert_int_equal(decide_best_options(cfg, &greq, &r, &err), 0);
    assert_true(fabs(r.inputs[0].spare_value - 3 * pricing_linear(&cfg->pricing, &gpod[0])) < 1e-9);
    decide_result_free(&r);
    config_free(cfg);
}

static void test_demand_fit_gpu_and_theoretical(void **state) {
    (void)state;
    frugal_config_t *cfg = load("ranking: {strategy: demand-fit}\n");
    assert_non_null(cfg);
    node_info_t std8 = node("n1-standard-8", 8000, 30 * GIB, false);
    node_info_t gpu = node(NULL, 8000, 30 * GIB, true);
    resources_t pods[] = {{1000, GIB, 0}};
    uint32_t refs[] = {0};
    decide_option_t opts[] = {option("gpu", &gpu, refs, 1), option("std", &std8, refs, 1)};
    decide_request_t req = {opts, 2, pods, 1, 0, false, 0, NULL, NULL};
    decide_result_t r;
    frugal_err_t err;
    assert_int_equal(decide_best_options(cfg, &req, &r, &err), 0);
    assert_int_equal(r.selected[0], 1);
    assert_true(r.inputs[0].gpu_unused);
    assert_true(fabs(r.figures[0].suppressed - cfg->ranking.gpu_unfitness) < 1e-9);
    decide_result_free(&r);
    /* The same group, not created yet, pays not_exist_penalty. */
    decide_option_t twins[] = {option("new", &std8, refs, 1), option("old", &std8, refs, 1)};
    twins[0].group.exists = false;
    twins[0].node = &std8;
    node_info_t other = std8;
    other.similarity_key = "other";
    twins[1].node = &other;
    req.options = twins;
    assert_int_equal(decide_best_options(cfg, &req, &r, &err), 0);
    assert_int_equal(r.selected_count, 1);
    assert_int_equal(r.selected[0], 1);
    assert_true(fabs(r.figures[0].score / r.figures[1].score - cfg->ranking.not_exist_penalty) <
                1e-9);
    decide_result_free(&r);
    config_free(cfg);
}

/* The exact GPU fit (docs/ranking.md) wins only while every GPU pod takes one GPU and could go
 * to every GPU group: a 4-GPU
 * node for one 1-GPU pod, whose spare GPUs score it a hair below the exact 1-GPU node at
 * the same price per GPU, loses to it; once the recent pods or the request's own include
 * a pod of several GPUs or one restricted to some GPU groups, and a pricier GPU group
 * runs nodes, the spare room decides and the 4-GPU node wins. */
static void test_demand_fit_gpu_mixed(void **state) {
    (void)state;
    frugal_config_t *cfg = load("machine_types:\n"
                                "  - {name: t4x1, cpu: 8, memory: 30Gi, gpu: 1, price: 0.73}\n"
                                "  - {name: t4x4, cpu: 32, memory: 120Gi, gpu: 4, price: 2.919}\n"
                                "  - {name: a100x1, cpu: 12, memory: 85Gi, gpu: 1, price: 3.67}\n");
    assert_non_null(cfg);
    node_info_t one = gpu_node("t4x1", 8000, 30 * GIB, 1);
    node_info_t four = gpu_node("t4x4", 32000, 120 * GIB, 4);
    node_info_t a100 = gpu_node("a100x1", 12000, 85 * GIB, 1);
    resources_t pods[] = {{2000, 8 * GIB, 1}, {8000, 32 * GIB, 2}};
    uint32_t refs[] = {0};
    /* An A100 group, five times the price per GPU, runs a node. */
    decide_option_t opts[] = {option("t4-4", &four, refs, 1), option("t4-1", &one, refs, 1),
                              option("a100-1", &a100, refs, 1)};
    opts[2].group.nodes = 1;
    decide_request_t req = {opts, 3, pods, 1, 0, false, 0, NULL, NULL};
    demand_summary_t d = {.pods = 100,
                          .cpu_cores = 200,
                          .memory_gib = 800,
                          .gpu = 100,
                          .gpu_pods = 100,
                          .long_pods = 100,
                          .long_cpu_cores = 200,
                          .long_memory_gib = 800,
                          .long_share = 1};
    decide_demand_t dd = {NULL, &d, DECIDE_GPU_MIX_UNKNOWN};
    decide_result_t r;
    frugal_err_t err;
    assert_int_equal(decide_best_options_demand(cfg, &req, &dd, &r, &err), 0);
    assert_false(r.inputs[0].gpu_mixed);
    assert_true(r.figures[0].score < r.figures[1].score);
    assert_int_equal(r.selected_count, 1);
    assert_int_equal(r.selected[0], 1);
    char buf[512];
    ranking_format_strategy_figures(cfg->ranking.strategy, &r.figures[1], &r.inputs[1], buf,
                                    sizeof(buf));
    assert_non_null(strstr(buf, " mixed_gpu=0 "));
    decide_result_free(&r);

    /* A recent pod took 4 GPUs: 103 GPUs over 100 GPU pods. */
    d.gpu = 103;
    assert_int_equal(decide_best_options_demand(cfg, &req, &dd, &r, &err), 0);
    assert_true(r.inputs[0].gpu_mixed && r.inputs[1].gpu_mixed);
    assert_int_equal(r.selected_count, 1);
    assert_int_equal(r.selected[0], 0);
    ranking_format_strategy_figures(cfg->ranking.strategy, &r.figures[0], &r.inputs[0], buf,
                                    sizeof(buf));
    char debug[600];
    snprintf(debug, sizeof(debug), "ca%s%s", RANKING_DEBUG_SEPARATOR, buf);
    ranking_figures_t back;
    assert_int_equal(ranking_parse_figures(debug, &back), 0);
    assert_true(back.mixed_gpu);
    assert_true(fabs(back.score - r.figures[0].score) < 1e-5);
    decide_result_free(&r);

    /* Ten GPU pods in ten hours: the 4-GPU node's three spare GPUs are weighed by that
     * rate while the GPU pods are interchangeable, and count in full once the demand is
     * mixed: the pods that take any model then land on the GPUs pricier nodes free,
     * without reaching frugal, so the rate understates them. */
    d.timed_gpu_pods = 10;
    d.oldest_ms = 0;
    d.newest_ms = 10 * 3600000LL;
    req.timed = true;
    req.now_ms = d.newest_ms;
    assert_int_equal(decide_best_options_demand(cfg, &req, &dd, &r, &err), 0);
    assert_true(r.inputs[0].gpu_mixed);
    assert_true(r.inputs[0].arrivals_per_hour > 0.8 && r.inputs[0].arrivals_per_hour < 1.0);
    assert_true(fabs(r.inputs[0].use_share - DECIDE_USE_LONG) < 1e-12);
    decide_result_free(&r);
    d.gpu = 100;
    assert_int_equal(decide_best_options_demand(cfg, &req, &dd, &r, &err), 0);
    assert_false(r.inputs[0].gpu_mixed);
    assert_true(r.inputs[0].use_share < 0.98 && r.inputs[0].use_share > 0.9);
    decide_result_free(&r);
    d.gpu = 103;
    req.timed = false;

    /* Mixed demand, but no node of a pricier GPU group runs: the exact fit wins. */
    opts[2].group.nodes = 0;
    assert_int_equal(decide_best_options_demand(cfg, &req, &dd, &r, &err), 0);
    assert_false(r.inputs[0].gpu_mixed);
    assert_int_equal(r.selected[0], 1);
    decide_result_free(&r);
    opts[2].group.nodes = 1;

    /* A recent GPU pod was restricted to some GPU groups (it named a model). */
    d.gpu = 100;
    d.gpu_restricted = 1;
    assert_int_equal(decide_best_options_demand(cfg, &req, &dd, &r, &err), 0);
    assert_true(r.inputs[0].gpu_mixed);
    assert_int_equal(r.selected[0], 0);
    decide_result_free(&r);
    d.gpu_restricted = 0;

    /* The request's own 2-GPU pod does the same. */
    req.pods_count = 2;
    assert_int_equal(decide_best_options_demand(cfg, &req, &dd, &r, &err), 0);
    assert_true(r.inputs[0].gpu_mixed);
    assert_int_equal(r.selected[0], 0);
    decide_result_free(&r);

    /* So does a 1-GPU pod of the request that some GPU option does not carry: the A100
     * group carries only pod 1 (pod 0 names the T4). */
    resources_t two[] = {{2000, 8 * GIB, 1}, {2000, 8 * GIB, 1}};
    uint32_t both[] = {0, 1}, only1[] = {1};
    decide_option_t three[] = {option("t4-4", &four, both, 2), option("t4-1", &one, both, 2),
                               option("a100-1", &a100, only1, 1)};
    three[1].node_count = 2;
    three[2].group.nodes = 1;
    decide_request_t req3 = {three, 3, two, 2, 0, false, 0, NULL, NULL};
    assert_int_equal(decide_best_options_demand(cfg, &req3, &dd, &r, &err), 0);
    assert_true(r.inputs[0].gpu_mixed);
    decide_result_free(&r);
    /* Unless that group reaches its max_size with the option: then it may have left pod 0
     * out for want of nodes, and pod 0 does not count as restricted. */
    three[2].group.max_size = 2;
    assert_int_equal(decide_best_options_demand(cfg, &req3, &dd, &r, &err), 0);
    assert_false(r.inputs[0].gpu_mixed);
    decide_result_free(&r);
    three[2].group.max_size = 3;
    assert_int_equal(decide_best_options_demand(cfg, &req3, &dd, &r, &err), 0);
    assert_true(r.inputs[0].gpu_mixed);
    decide_result_free(&r);
    three[2].group.max_size = 0;
    three[2].pods = both;
    three[2].pods_count = 2;
    three[2].node_count = 2;
    assert_int_equal(decide_best_options_demand(cfg, &req3, &dd, &r, &err), 0);
    assert_false(r.inputs[0].gpu_mixed);
    decide_result_free(&r);

    /* Remembered: a restricted pod seen once lets the spare room decide for later requests whose
     * own pods are all unrestricted (once enough GPU pods are known, below that the demand
     * is not yet known: test_demand_fit_gpu_building). */
    demand_memory_t *m = empty_memory();
    req.pods_count = 1;
    for (int i = 0; i < DECIDE_DEMAND_MIN_PODS; i++) {
        assert_int_equal(decide_best_options_remember(cfg, &req, NULL, NULL, m, &r, &err), 0);
        decide_result_free(&r);
    }
    assert_int_equal(decide_best_options_remember(cfg, &req, NULL, NULL, m, &r, &err), 0);
    assert_false(r.inputs[0].gpu_mixed);
    decide_result_free(&r);
    three[2].pods = only1;
    three[2].pods_count = 1;
    assert_int_equal(decide_best_options_remember(cfg, &req3, NULL, NULL, m, &r, &err), 0);
    decide_result_free(&r);
    demand_summary_t seen;
    demand_summarize(m, &seen);
    assert_int_equal(seen.gpu_pods, DECIDE_DEMAND_MIN_PODS + 3);
    assert_int_equal(seen.gpu_restricted, 1);
    assert_int_equal(decide_best_options_remember(cfg, &req, NULL, NULL, m, &r, &err), 0);
    assert_true(r.inputs[0].gpu_mixed);
    decide_result_free(&r);
    free(m);
    config_free(cfg);
}

/* GPU nodes being built: while frugal remembers fewer than DECIDE_DEMAND_MIN_PODS GPU pods
 * and they come at DECIDE_GPU_BUILD_PER_HOUR or faster, the spare GPUs decide, counted in
 * full (mixed_gpu=1), even while no pricier GPU node runs; not for the first GPU pod (one
 * pod is no sign of more), nor when they come slowly, nor from the sixteenth GPU pod on:
 * then interchangeable 1-GPU pods get the exact fit. */
static void test_demand_fit_gpu_building(void **state) {
    (void)state;
    frugal_config_t *cfg = load("machine_types:\n"
                                "  - {name: t4x1, cpu: 8, memory: 30Gi, gpu: 1, price: 0.73}\n"
                                "  - {name: t4x4, cpu: 32, memory: 120Gi, gpu: 4, price: 2.919}\n");
    assert_non_null(cfg);
    node_info_t one = gpu_node("t4x1", 8000, 30 * GIB, 1);
    node_info_t four = gpu_node("t4x4", 32000, 120 * GIB, 4);
    resources_t pods[] = {{2000, 8 * GIB, 1}};
    uint32_t refs[] = {0};
    decide_option_t opts[] = {option("t4-4", &four, refs, 1), option("t4-1", &one, refs, 1)};
    decide_request_t req = {opts, 2, pods, 1, 0, true, 3600000, NULL, NULL};
    demand_memory_t *m = empty_memory();
    decide_result_t r;
    frugal_err_t err;
    /* The first GPU pod. */
    assert_int_equal(decide_best_options_remember(cfg, &req, NULL, NULL, m, &r, &err), 0);
    assert_false(r.inputs[0].gpu_mixed);
    assert_int_equal(r.selected[0], 1);
    decide_result_free(&r);
    /* Fourteen more, a minute apart: 60 an hour. */
    for (int i = 2; i < DECIDE_DEMAND_MIN_PODS; i++) {
        req.now_ms += 60000;
        assert_int_equal(decide_best_options_remember(cfg, &req, NULL, NULL, m, &r, &err), 0);
        assert_true(r.inputs[0].gpu_mixed);
        assert_true(fabs(r.inputs[0].use_share - DECIDE_USE_LONG) < 1e-12);
        assert_true(r.inputs[0].spare_value > 0);
        assert_int_equal(r.selected_count, 1);
        assert_int_equal(r.selected[0], 0);
        decide_result_free(&r);
    }
    /* The sixteenth. */
    req.now_ms += 60000;
    assert_int_equal(decide_best_options_remember(cfg, &req, NULL, NULL, m, &r, &err), 0);
    assert_false(r.inputs[0].gpu_mixed);
    assert_int_equal(r.selected[0], 1);
    decide_result_free(&r);
    /* Slowly: one every ten minutes is 6 an hour. */
    demand_init(m);
    for (int i = 1; i < DECIDE_DEMAND_MIN_PODS; i++) {
        req.now_ms += 600000;
        assert_int_equal(decide_best_options_remember(cfg, &req, NULL, NULL, m, &r, &err), 0);
        assert_false(r.inputs[0].gpu_mixed);
        assert_int_equal(r.selected[0], 1);
        decide_result_free(&r);
    }
    free(m);
    config_free(cfg);
}

/* CA scales up one option a loop: when the best score serves pods that no option of the
 * other pods carries (a GPU pod beside cpu pods), the unrelated option that serves more
 * pods goes first, and says so; not when the options share a pod, nor for as many pods,
 * nor under pricing-proposal. */
static void test_demand_fit_most_pods_first(void **state) {
    (void)state;
    frugal_config_t *cfg = load("ranking: {strategy: demand-fit}\n");
    assert_non_null(cfg);
    node_info_t gpu = node(NULL, 8000, 30 * GIB, true);
    node_info_t std4 = node("n1-standard-4", 4000, 15 * GIB, false);
    node_info_t std2 = node("n1-standard-2", 2000, 7 * GIB, false);
    resources_t pods[] = {{6000, 24 * GIB, 1}, {1500, GIB, 0}, {1500, GIB, 0}, {1500, GIB, 0}};
    uint32_t gpu_pod[] = {0}, cpu_pods[] = {1, 2, 3}, one_cpu_pod[] = {1}, gpu_and_cpu[] = {0, 1};
    decide_option_t opts[] = {option("gpu", &gpu, gpu_pod, 1), option("std4", &std4, cpu_pods, 3),
                              option("std2", &std2, one_cpu_pod, 1)};
    opts[1].node_count = 2;
    decide_request_t req = {opts, 3, pods, 4, 0, false, 0, NULL, NULL};
    decide_result_t r;
    frugal_err_t err;
    assert_int_equal(decide_best_options(cfg, &req, &r, &err), 0);
    assert_true(r.figures[0].score < r.figures[1].score);
    assert_true(r.figures[0].score < r.figures[2].score);
    assert_true(r.most_pods_first);
    assert_int_equal(r.selected_count, 1);
    assert_int_equal(r.selected[0], 1);
    assert_true(r.figures[1].most_pods_first);
    assert_false(r.figures[0].most_pods_first);
    char buf[RANKING_FIGURES_MAX];
    ranking_format_strategy_figures(cfg->ranking.strategy, &r.figures[1], &r.inputs[1], buf,
                                    sizeof(buf));
    assert_non_null(strstr(buf, " score="));
    assert_non_null(strstr(buf, " most_pods_first=1"));
    ranking_format_strategy_figures(cfg->ranking.strategy, &r.figures[0], &r.inputs[0], buf,
                                    sizeof(buf));
    assert_null(strstr(buf, "most_pods_first"));
    decide_result_free(&r);

    /* The GPU option also carries a cpu pod: all three compete, the best score wins. */
    opts[0].pods = gpu_and_cpu;
    opts[0].pods_count = 2;
    assert_int_equal(decide_best_options(cfg, &req, &r, &err), 0);
    assert_false(r.most_pods_first);
    assert_int_equal(r.selected[0], 0);
    decide_result_free(&r);

    /* Unrelated again, but the cpu options serve no more pods than the GPU one. */
    opts[0].pods = gpu_pod;
    opts[0].pods_count = 1;
    req.options = (decide_option_t[]){opts[0], opts[2]};
    req.options_count = 2;
    assert_int_equal(decide_best_options(cfg, &req, &r, &err), 0);
    assert_false(r.most_pods_first);
    assert_int_equal(r.selected[0], 0);
    decide_result_free(&r);
    config_free(cfg);

    /* pricing-proposal answers the lowest score, as it always has. */
    cfg = load("ranking: {strategy: pricing-proposal}\n");
    assert_non_null(cfg);
    req.options = opts;
    req.options_count = 3;
    assert_int_equal(decide_best_options(cfg, &req, &r, &err), 0);
    assert_false(r.most_pods_first);
    size_t lowest = 0;
    for (size_t i = 1; i < 3; i++)
        if (r.figures[i].score < r.figures[lowest].score)
            lowest = i;
    assert_int_equal(r.selected[0], lowest);
    decide_result_free(&r);
    config_free(cfg);
}

static void test_cluster_size(void **state) {
    (void)state;
    frugal_config_t *cfg = load("ranking: {strategy: pricing-proposal, cluster_size: 50}\n");
    assert_non_null(cfg);
    assert_int_equal(cfg->ranking.strategy, RANKING_STRATEGY_PRICING_PROPOSAL);
    node_info_t std8 = node("n1-standard-8", 8000, 30 * GIB, false);
    resources_t pods[] = {{1000, GIB, 0}};
    uint32_t refs[] = {0};
    decide_option_t opts[] = {option("std", &std8, refs, 1)};
    decide_request_t req = {opts, 1, pods, 1, 0, false, 0, NULL, NULL};
    decide_result_t r;
    frugal_err_t err;
    assert_int_equal(decide_best_options(cfg, &req, &r, &err), 0);
    assert_int_equal(r.cluster_size, 50);
    assert_int_equal(r.preferred_cpu_milli, 8000); /* 21..80 nodes: 8 cpu */
    decide_result_free(&r);
    config_free(cfg);

    cfg = load("ranking: {strategy: pricing-proposal}\n");
    assert_int_equal(cfg->ranking.cluster_size, RANKING_CLUSTER_SIZE_AUTO);
    char why[512];
    assert_true(config_ranking_size_unknown(cfg, why, sizeof(why)));
    assert_non_null(strstr(why, "ranking.cluster_size"));
    config_free(cfg);
    cfg = load("ranking: {cluster_size: auto, strategy: pricing-proposal}\n"
               "node_groups: [{id: a, machine_type: n1-standard-2, max_size: 3}]\n");
    assert_false(config_ranking_size_unknown(cfg, why, sizeof(why)));
    config_free(cfg);
    /* an unmanaged group's size is counted: no warning; of size 0, a warning */
    cfg = load("ranking: {strategy: pricing-proposal}\n"
               "node_groups: [{id: u, machine_type: n1-standard-8, size: 3, managed: false}]\n");
    assert_false(config_ranking_size_unknown(cfg, why, sizeof(why)));
    config_free(cfg);
    cfg = load("ranking: {strategy: pricing-proposal}\n"
               "node_groups: [{id: u, machine_type: n1-standard-8, size: 0, managed: false}]\n");
    assert_true(config_ranking_size_unknown(cfg, why, sizeof(why)));
    config_free(cfg);
    cfg = load("ranking: {strategy: pricing-proposal, cluster_size: 12}\n");
    assert_false(config_ranking_size_unknown(cfg, why, sizeof(why)));
    config_free(cfg);
    /* demand-fit is the default, and it needs no cluster size: no warning. */
    cfg = load("");
    assert_int_equal(cfg->ranking.strategy, RANKING_STRATEGY_DEMAND_FIT);
    assert_false(config_ranking_size_unknown(cfg, why, sizeof(why)));
    config_free(cfg);
}

static void expect_error(const char *yaml, const char *message) {
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    assert_int_not_equal(config_load_string("t.yaml", yaml, strlen(yaml), &cfg, &errors), 0);
    assert_non_null(errors);
    if (strstr(errors, message) == NULL)
        fail_msg("expected \"%s\" in \"%s\"", message, errors);
    free(errors);
}

static void test_config_errors(void **state) {
    (void)state;
    expect_error("ranking: {strategy: cheapest}\n",
                 "t.yaml:1:21: ranking.strategy: unknown strategy \"cheapest\"");
    expect_error("ranking:\n  cluster_size: -3\n",
                 "t.yaml:2:17: ranking.cluster_size: expected auto or a node count >= 1");
    expect_error("ranking: {cluster_size: lots}\n", "t.yaml:1:25: ranking.cluster_size:");
    assert_int_equal(config_ranking_strategy_parse("demand-fit"), RANKING_STRATEGY_DEMAND_FIT);
    assert_int_equal(config_ranking_strategy_parse("random"), -1);
    assert_string_equal(config_ranking_strategy_name(RANKING_STRATEGY_PRICING_PROPOSAL),
                        "pricing-proposal");
}

static void test_lifetime(void **state) {
    (void)state;
    assert_int_equal(pod_lifetime_of_kind("Job"), POD_LIFETIME_SHORT);
    assert_int_equal(pod_lifetime_of_kind("StatefulSet"), POD_LIFETIME_LONG);
    assert_int_equal(pod_lifetime_of_kind("ReplicaSet"), POD_LIFETIME_LONG);
    assert_int_equal(pod_lifetime_of_kind("Workflow"), POD_LIFETIME_UNKNOWN);
    assert_int_equal(pod_lifetime_of_kind(NULL), POD_LIFETIME_UNKNOWN);
}

/* decide_best_options_remember: under demand-fit the flagged pods (with their lifetimes)
 * join the memory before the decision reads it; other strategies leave it untouched. */
static void test_remember_then_decide(void **state) {
    (void)state;
    frugal_config_t *fit = load("ranking: {strategy: demand-fit}\n");
    frugal_config_t *pricing = load("ranking: {strategy: pricing-proposal}\n");
    assert_non_null(fit);
    assert_non_null(pricing);
    node_info_t std8 = node("n1-standard-8", 8000, 30 * GIB, false);
    resources_t pods[] = {{1000, 2 * GIB, 0}, {2000, 4 * GIB, 0}, {4000, 8 * GIB, 0}};
    pod_lifetime_t lts[] = {POD_LIFETIME_SHORT, POD_LIFETIME_LONG, POD_LIFETIME_SHORT};
    bool remember[] = {true, false, true};
    uint32_t refs[] = {0, 1, 2};
    decide_option_t opts[] = {option("std", &std8, refs, 3)};
    decide_request_t req = {opts, 1, pods, 3, 10, false, 0, NULL, NULL};
    demand_memory_t *m = calloc(1, sizeof(*m));
    demand_init(m);
    decide_result_t r;
    frugal_err_t err = {0};

    assert_int_equal(decide_best_options_remember(pricing, &req, lts, remember, m, &r, &err), 0);
    decide_result_free(&r);
    demand_summary_t s;
    demand_summarize(m, &s);
    assert_int_equal(s.pods, 0);

    assert_int_equal(decide_best_options_remember(fit, &req, lts, remember, m, &r, &err), 0);
    assert_int_equal(r.selected_count, 1);
    decide_result_free(&r);
    demand_summarize(m, &s);
    assert_int_equal(s.pods, 2); /* pods 0 and 2 */
    assert_true(fabs(s.cpu_cores - 5.0) < 1e-9);
    assert_int_equal(s.long_pods, 0); /* both short */

    /* remember NULL: every pod; lifetimes NULL: unknown, which counts as staying. */
    assert_int_equal(decide_best_options_remember(fit, &req, NULL, NULL, m, &r, &err), 0);
    decide_result_free(&r);
    demand_summarize(m, &s);
    assert_int_equal(s.pods, 5);
    assert_int_equal(s.long_pods, 3);
    /* No memory: the decision still answers. */
    assert_int_equal(decide_best_options_remember(fit, &req, lts, NULL, NULL, &r, &err), 0);
    assert_int_equal(r.selected_count, 1);
    decide_result_free(&r);
    free(m);
    config_free(fit);
    config_free(pricing);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounded),
        cmocka_unit_test(test_concurrent_writers),
        cmocka_unit_test(test_demand_fit_shape),
        cmocka_unit_test(test_demand_fit_pods_in_room),
        cmocka_unit_test(test_timed),
        cmocka_unit_test(test_identities),
        cmocka_unit_test(test_held_up),
        cmocka_unit_test(test_known_pod_completed),
        cmocka_unit_test(test_demand_fit_arrival_rate),
        cmocka_unit_test(test_demand_fit_gpu_and_theoretical),
        cmocka_unit_test(test_demand_fit_gpu_mixed),
        cmocka_unit_test(test_demand_fit_gpu_building),
        cmocka_unit_test(test_demand_fit_most_pods_first),
        cmocka_unit_test(test_cluster_size),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_lifetime),
        cmocka_unit_test(test_remember_then_decide),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
