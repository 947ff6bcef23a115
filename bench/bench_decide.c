/* The BestOptions decision alone, in process (docs/benchmarks.md): decide_best_options
 * for OPTIONS x PODS under each ranking strategy, with the demand memory recorded and
 * summarised as the server does under demand-fit. Isolates what a strategy costs from
 * the gRPC transfer that dominates bench_best_options. Every option carries every pod;
 * with --partial each leaves out a different quarter of them, which demand-fit charges
 * (left_out.h): its worst case. With --tied every option is the same node, one each, of
 * a group similar to no other: all tie, and the zone balance looks at every one.
 *   bench_decide [--sizes 200x1000,...] [--calls N] [--partial | --tied] */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "decide.h"
#include "demand.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static const char *const types[] = {"n1-standard-2", "n1-standard-8", "n1-highmem-4",
                                    "n1-highcpu-16", "n1-standard-32"};

int main(int argc, char **argv) {
    const char *sizes = "10x10,100x200,200x1000";
    int calls = 50;
    bool partial = false, tied = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc)
            sizes = argv[++i];
        else if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
            calls = atoi(argv[++i]);
        else if (strcmp(argv[i], "--partial") == 0)
            partial = true;
        else if (strcmp(argv[i], "--tied") == 0)
            tied = true;
        else {
            fprintf(stderr, "usage: %s [--sizes OxP,...] [--calls N] [--partial | --tied]\n",
                    argv[0]);
            return 2;
        }
    }
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    if (config_load_string("bench.yaml", "", 0, &cfg, &errors) != 0 || calls < 1) {
        fprintf(stderr, "bench: %s\n", errors ? errors : "bad arguments");
        return 1;
    }
    demand_memory_t *mem = malloc(sizeof(*mem));
    if (!mem)
        return 1;
    demand_init(mem);
    printf("%-8s %6s %-17s %8s %8s\n", "options", "pods", "strategy", "p50_ms", "p99_ms");
    char *list = strdup(sizes);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        size_t no = 0, np = 0;
        if (sscanf(tok, "%zux%zu", &no, &np) != 2 || no == 0 || np == 0)
            return 2;
        resources_t *pods = calloc(np, sizeof(*pods));
        pod_lifetime_t *lts = calloc(np, sizeof(*lts));
        uint32_t *refs = calloc(np, sizeof(*refs));
        uint32_t *quarters = calloc(4 * np, sizeof(*quarters)); /* option i: quarters[i % 4] */
        size_t quarter_count[4] = {0};
        node_info_t *nodes = calloc(no, sizeof(*nodes));
        decide_option_t *opts = calloc(no, sizeof(*opts));
        char(*keys)[32] = calloc(no, sizeof(*keys));
        double *ms = calloc((size_t)calls, sizeof(*ms));
        for (size_t k = 0; k < np; k++) {
            pods[k] = (resources_t){100 * (int64_t)(k % 15 + 1), (int64_t)(k % 7 + 1) << 28, 0};
            lts[k] = k % 3 ? POD_LIFETIME_LONG : POD_LIFETIME_SHORT;
            refs[k] = (uint32_t)k;
            for (size_t q = 0; q < 4; q++)
                if ((k + q) % 4 != 0)
                    quarters[q * np + quarter_count[q]++] = (uint32_t)k;
        }
        for (size_t i = 0; i < no; i++) {
            const machine_type_t *mt = config_find_machine_type(cfg, types[tied ? 0 : i % 5]);
            snprintf(keys[i], sizeof(keys[i]), "group-%zu", i);
            nodes[i] = (node_info_t){.name = "",
                                     .instance_type = mt->name,
                                     .capacity = {mt->cpu_milli, mt->memory_bytes, 0},
                                     .similarity_key = tied ? keys[i] : mt->name};
            opts[i] = (decide_option_t){.group_id = tied ? keys[i] : mt->name,
                                        .node_count = tied ? 1 : (int32_t)(i % 9 + 1),
                                        .node = &nodes[i],
                                        .pods = partial ? quarters + (i % 4) * np : refs,
                                        .pods_count = partial ? quarter_count[i % 4] : np,
                                        .group = {true, true, false, -1.0, (int64_t)i, 0}};
        }
        for (int s = 0; s < 2; s++) {
            cfg->ranking.strategy = (ranking_strategy_t)s;
            for (int c = 0; c < calls; c++) {
                double t0 = clock_mono_ms_exact();
                demand_summary_t d;
                decide_request_t req = {opts, no, pods, np, 30, false, 0, NULL, NULL};
                decide_demand_t dd = {NULL, NULL, DECIDE_GPU_MIX_UNKNOWN};
                if (s == RANKING_STRATEGY_DEMAND_FIT) {
                    demand_record(mem, pods, lts, np);
                    demand_summarize(mem, &d);
                    dd.pod_lifetimes = lts;
                    dd.recent = &d;
                }
                decide_result_t r;
                frugal_err_t err;
                if (decide_best_options_demand(cfg, &req, &dd, &r, &err) != 0)
                    return 1;
                decide_result_free(&r);
                ms[c] = clock_mono_ms_exact() - t0;
            }
            qsort(ms, (size_t)calls, sizeof(*ms), cmp_double);
            printf("%-8zu %6zu %-17s %8.3f %8.3f\n", no, np, config_ranking_strategy_name(s),
                   ms[calls / 2], ms[(size_t)(calls * 0.99)]);
        }
        free(pods), free(lts), free(refs), free(quarters), free(nodes), free(opts), free(ms);
        free(keys);
    }
    free(list);
    free(mem);
    config_free(cfg);
    return 0;
}
