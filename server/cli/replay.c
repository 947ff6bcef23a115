/* `frugal replay -c FILE WORKLOAD... [--strategy S]... [--seeds N] [--hours H]
 * [--scale-down-utilization F] [--placement P] [-o table|csv|json]`: what each scale-up strategy
 * would have cost on a workload (docs/replay.md). The simulation is replay/replay.h's; this file
 * reads the inputs, runs every (workload, strategy, seed) on the machine's cores, and prints mean
 * and min-max over the seeds. Runs are independent and deterministic: the figures do not depend on
 * how many threads ran them.
 *
 * Exit status: 0, 1 on unreadable or invalid input (PATH:LINE:COL: message), 2 on
 * usage errors (an unknown strategy included). */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "config.h"
#include "duration.h"
#include "log.h"
#include "pod.h"
#include "replay.h"
#include "replay_prom.h"
#include "replay_prom_source.h"
#include "timestamp.h"

#define REPLAY_MAX_STRATEGIES 16

/* One run, or (is_bound) the lower bound of one workload and seed. */
typedef struct replay_job {
    size_t workload, strategy;
    uint64_t seed;
    bool is_bound;
    replay_figures_t fig;
    replay_bound_t bound;
    int rc;
    frugal_err_t err;
    char *decisions; /* --decisions: the run's JSON lines, until they are written */
    size_t decisions_len;
    bool finished; /* under replay_cmd_t.decisions_lock */
} replay_job_t;

typedef struct replay_cmd {
    const frugal_config_t *cfg;
    replay_workload_t *workloads;
    size_t workloads_count;
    const replay_policy_ops_t *strategies[REPLAY_MAX_STRATEGIES];
    size_t strategies_count;
    size_t seeds;
    uint64_t first_seed; /* the runs' seeds are first_seed .. first_seed + seeds - 1 */
    double hours;
    replay_options_t opts;
    replay_job_t *jobs; /* the bounds first (the longest jobs), then the runs */
    size_t jobs_count, bounds_count;
    atomic_size_t next, done;
    bool progress;
    const char *decisions_path; /* --decisions FILE */
    cli_tmp_file_t decisions;
    pthread_mutex_t decisions_lock;
    size_t decisions_next; /* the first run whose lines are not written yet */
    bool unsaved_first;    /* workloads[0] is Prometheus' trace, in no file: no lines */
} replay_cmd_t;

static int replay__usage(FILE *f, int status) {
    size_t n;
    const replay_policy_ops_t *const *list = replay_policy_list(&n);
    fprintf(f,
            "usage: frugal replay -c FILE WORKLOAD... [--strategy S]... [--seeds N] "
            "[--first-seed K]\n"
            "           [--hours H] [--scale-down-utilization F] [--placement P]\n"
            "           [-o table|csv|json] [--restart-at H] [--decisions FILE]\n"
            "  WORKLOAD   a YAML mix or a JSON-lines trace (docs/replay.md)\n"
            "  --seeds N  runs per workload and strategy (default 12)\n"
            "  --first-seed K  the runs' seeds are K..K+N-1 (default 1): --seeds 1\n"
            "             --first-seed K runs seed K alone\n"
            "  --hours H  simulated time (default: 168 for a mix, a trace's span)\n"
            "  --scale-down-utilization F  also scale down nodes below utilisation F (0-1],\n"
            "             as CA does (default: only empty nodes)\n"
            "  --placement P  where the scheduler puts a pending pod among the existing nodes:\n"
            "             first-fit (default), least-allocated or most-allocated\n"
            "  --restart-at H  frugal's strategies restart at hour H, forgetting the pods\n"
            "             they remembered, as a restarted server does\n"
            "  --decisions FILE  write every decision of every run as JSON lines\n"
            "       frugal replay -c FILE --from-prometheus URL --since DURATION [--until TIME]\n"
            "           [--namespace REGEX] [--save-trace FILE] [--bearer-token-file FILE]\n"
            "           [--ca-file FILE] [--cert FILE --key FILE] [WORKLOAD...] [options above]\n"
            "  --from-prometheus URL  a trace from kube-state-metrics series in Prometheus\n"
            "  --since DURATION       how far back from --until (Go duration, e.g. 168h)\n"
            "  --until TIME           RFC 3339 or unix seconds (default: now)\n"
            "  --namespace REGEX      only the namespaces matching REGEX (PromQL =~)\n"
            "  --save-trace FILE      write the JSON-lines trace built\n"
            "  --bearer-token-file F, --ca-file F, --cert F --key F: access to Prometheus\n"
            "strategies (default: all):\n");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "  %-17s %s\n", list[i]->name, list[i]->summary);
    return status;
}

/* What a run's decisions are written with (--decisions). */
typedef struct replay_decisions_ctx {
    const replay_cmd_t *cmd;
    const replay_job_t *job;
    FILE *out;
} replay_decisions_ctx_t;

static void replay__decision_line(void *arg, const replay_decision_t *d) {
    const replay_decisions_ctx_t *x = arg;
    fputs("{\"workload\": ", x->out);
    log_json_fputs(x->out, x->cmd->workloads[x->job->workload].name);
    fprintf(x->out,
            ", \"strategy\": \"%s\", \"seed\": %" PRIu64 ", \"time_s\": %" PRId64 ", \"group\": ",
            x->cmd->strategies[x->job->strategy]->name, x->job->seed, d->time_s);
    log_json_fputs(x->out, d->group_id);
    fprintf(x->out,
            ", \"node_count\": %" PRId32 ", \"pods\": %zu, \"pending\": %zu, \"options\": %zu, "
            "\"figures\": ",
            d->node_count, d->pods, d->pending, d->options);
    log_json_fputs(x->out, d->why);
    fputs("}\n", x->out);
}

/* 0, or 1 after saying why --decisions FILE fails with errno value e. */
static int replay__decisions_status(const replay_cmd_t *c, int e) {
    if (e != 0)
        fprintf(stderr, "frugal replay: --decisions %s: %s\n", c->decisions_path, strerror(e));
    return e != 0;
}

/* Job j is done: write the lines of every finished run from decisions_next on, in job
 * order, so that at most the runs in flight and those done ahead of a slower one wait in
 * memory. A write error shows in the file's error flag (cli_tmp_close). */
static void replay__decisions_done(replay_cmd_t *c, replay_job_t *j) {
    pthread_mutex_lock(&c->decisions_lock);
    j->finished = true;
    while (c->decisions_next < c->jobs_count && c->jobs[c->decisions_next].finished) {
        replay_job_t *w = &c->jobs[c->decisions_next++];
        if (w->decisions_len > 0)
            fwrite(w->decisions, 1, w->decisions_len, c->decisions.f);
        free(w->decisions);
        w->decisions = NULL;
    }
    pthread_mutex_unlock(&c->decisions_lock);
}

/* One run; with --decisions its decisions go to the job's own buffer first: the runs go in
 * parallel, and the file has them in job order (replay__decisions_done). */
static int replay__run_job(replay_cmd_t *c, replay_job_t *j) {
    if (c->decisions_path == NULL)
        return replay_run_with(c->cfg, &c->workloads[j->workload], c->strategies[j->strategy],
                               j->seed, c->hours, &c->opts, &j->fig, &j->err);
    int rc;
    FILE *out = open_memstream(&j->decisions, &j->decisions_len);
    if (out == NULL) {
        rc = frugal_err_set(&j->err, FRUGAL_ENOMEM, "out of memory");
    } else {
        replay_decisions_ctx_t x = {c, j, out};
        replay_options_t opts = c->opts;
        opts.on_decision = replay__decision_line;
        opts.on_decision_ctx = &x;
        rc = replay_run_with(c->cfg, &c->workloads[j->workload], c->strategies[j->strategy],
                             j->seed, c->hours, &opts, &j->fig, &j->err);
        if (fclose(out) != 0 && rc == 0)
            rc = frugal_err_set(&j->err, FRUGAL_ENOMEM, "out of memory");
    }
    replay__decisions_done(c, j);
    return rc;
}

static void *replay__worker(void *arg) {
    replay_cmd_t *c = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&c->next, 1);
        if (i >= c->jobs_count)
            break;
        replay_job_t *j = &c->jobs[i];
        frugal_err_clear(&j->err);
        if (j->is_bound)
            j->rc = replay_bound(c->cfg, &c->workloads[j->workload], j->seed, c->hours, &j->bound,
                                 &j->err);
        else
            j->rc = replay__run_job(c, j);
        size_t d = atomic_fetch_add(&c->done, 1) + 1;
        if (c->progress)
            fprintf(stderr, "\rfrugal replay: %zu/%zu runs (%s, %s, seed %" PRIu64 ")\033[K", d,
                    c->jobs_count, c->workloads[j->workload].name,
                    j->is_bound ? "bound" : c->strategies[j->strategy]->name, j->seed);
    }
    return NULL;
}

static int replay__run_all(replay_cmd_t *c) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t threads = cpus < 1 ? 1 : cpus > 16 ? 16 : (size_t)cpus;
    pthread_t tid[16];
    size_t started = 0;
    for (size_t i = 1; i < threads; i++)
        if (pthread_create(&tid[started], NULL, replay__worker, c) == 0)
            started++;
    replay__worker(c);
    for (size_t i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    if (c->progress)
        fprintf(stderr, "\r\033[K");
    for (size_t i = 0; i < c->jobs_count; i++) {
        if (c->jobs[i].rc != 0) {
            fprintf(stderr, "frugal replay: %s\n", c->jobs[i].err.msg);
            return 1;
        }
    }
    return 0;
}

/* Mean, min and max of one figure over the seeds, and the sum of its squares. */
typedef struct replay_stat {
    double mean, min, max;
    size_t min_at, max_at; /* the indexes of the seeds that gave min and max */
    double sum_sq;         /* of the values, for the spread of the mean */
    bool undefined;        /* a ratio over nothing in some seed: shown as "-", empty, null */
} replay_stat_t;

typedef struct replay_row {
    const char *workload, *strategy;
    replay_stat_t cost, ratio, pending, nodes, drained, vs_random, vs_pricing, bound, cost_bound;
    bool has_random, has_pricing;
    const char *bound_error; /* NULL when every seed's bound is known */
    uint64_t bound_error_seed;
    int64_t pods, unhostable; /* of the first seed; the mean pods */
} replay_row_t;

/* v NAN: a ratio whose denominator is 0. */
static void replay__stat_add(replay_stat_t *s, double v, size_t k) {
    if (isnan(v)) {
        s->undefined = true;
        return;
    }
    if (k == 0 || v < s->min) {
        s->min = v;
        s->min_at = k;
    }
    if (k == 0 || v > s->max) {
        s->max = v;
        s->max_at = k;
    }
    s->mean += v;
    s->sum_sq += v * v;
}

/* Student's t at 97.5 % for df degrees of freedom: exact to three decimals up to 30,
 * then 1.96 + 2.5 / df, within 0.002 of it. */
static double replay__t975(size_t df) {
    static const double t[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                               2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                               2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                               2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
    return df <= 30 ? t[df - 1] : 1.96 + 2.5 / (double)df;
}

/* The half-width of the 95 % confidence interval of s's mean (already divided by n) over
 * n seeds; NAN below two seeds. Paired by seed when s is a VS column: each value is
 * already one seed's cost over the base strategy's on the same seed. */
static double replay__ci95(const replay_stat_t *s, size_t n) {
    if (n < 2)
        return NAN;
    double var = (s->sum_sq - (double)n * s->mean * s->mean) / (double)(n - 1);
    return replay__t975(n - 1) * sqrt(var > 0 ? var : 0) / sqrt((double)n);
}

/* The index of strategy name among c's strategies, c->strategies_count when absent. */
static size_t replay__strategy_index(const replay_cmd_t *c, const char *name) {
    for (size_t k = 0; k < c->strategies_count; k++)
        if (strcmp(c->strategies[k]->name, name) == 0)
            return k;
    return c->strategies_count;
}

/* The figures of the run of workload w under strategy k with seed index seed (0-based). */
static const replay_figures_t *replay__run(const replay_cmd_t *c, size_t w, size_t k, size_t seed) {
    return &c->jobs[c->bounds_count + (w * c->strategies_count + k) * c->seeds + seed].fig;
}

/* Add to s the cost of job (w, k, seed) over that of strategy base on the same seed. */
static void replay__stat_vs(const replay_cmd_t *c, replay_stat_t *s, size_t w, size_t k,
                            size_t base, size_t seed) {
    const replay_figures_t *f = replay__run(c, w, k, seed);
    const replay_figures_t *b = replay__run(c, w, base, seed);
    /* Nothing bought by either (no pod ran yet): the same cost. */
    double vs = b->cost > 0 ? f->cost / b->cost : f->cost > 0 ? NAN : 1;
    replay__stat_add(s, vs, seed);
}

/* The bound of workload w's seed s (a trace has one, its pods are the same every seed). */
static const replay_job_t *replay__bound_of(const replay_cmd_t *c, size_t w, size_t s) {
    const replay_job_t *j = c->jobs;
    while (j->workload != w)
        j++;
    return c->workloads[w].is_trace ? j : j + s;
}

static void replay__rows(const replay_cmd_t *c, replay_row_t *rows) {
    size_t random = replay__strategy_index(c, "random");
    size_t pricing = replay__strategy_index(c, "pricing-proposal");
    for (size_t w = 0; w < c->workloads_count; w++) {
        for (size_t k = 0; k < c->strategies_count; k++) {
            replay_row_t *r = &rows[w * c->strategies_count + k];
            memset(r, 0, sizeof(*r));
            r->workload = c->workloads[w].name;
            r->strategy = c->strategies[k]->name;
            r->has_random = random < c->strategies_count;
            r->has_pricing = pricing < c->strategies_count;
            double pods = 0, unhost = 0;
            for (size_t s = 0; s < c->seeds; s++) {
                const replay_figures_t *f = replay__run(c, w, k, s);
                const replay_job_t *b = replay__bound_of(c, w, s);
                if (!b->bound.ok && r->bound_error == NULL) {
                    r->bound_error = b->bound.reason;
                    r->bound_error_seed = b->seed;
                }
                replay__stat_add(&r->bound, b->bound.cost, s);
                replay__stat_add(&r->cost_bound, b->bound.cost > 0 ? f->cost / b->bound.cost : NAN,
                                 s);
                replay__stat_add(&r->cost, f->cost, s);
                replay__stat_add(&r->ratio, f->ideal_cost > 0 ? f->cost / f->ideal_cost : NAN, s);
                replay__stat_add(&r->pending, f->pending_pod_minutes, s);
                replay__stat_add(&r->nodes, (double)f->nodes_bought, s);
                replay__stat_add(&r->drained, (double)f->nodes_drained, s);
                if (r->has_random)
                    replay__stat_vs(c, &r->vs_random, w, k, random, s);
                if (r->has_pricing)
                    replay__stat_vs(c, &r->vs_pricing, w, k, pricing, s);
                pods += (double)f->pods;
                unhost += (double)f->unhostable;
            }
            double n = (double)c->seeds;
            r->cost.mean /= n, r->ratio.mean /= n, r->pending.mean /= n, r->nodes.mean /= n;
            r->drained.mean /= n;
            r->vs_random.mean /= n, r->vs_pricing.mean /= n;
            r->bound.mean /= n, r->cost_bound.mean /= n;
            r->pods = (int64_t)(pods / n + 0.5);
            r->unhostable = (int64_t)(unhost / n + 0.5);
        }
    }
}

/* Where the pods no group can host come from, on stderr: the trace line and the pod of
 * each of the first REPLAY_UNHOSTABLE_NAMED such pods, or the family of the first, in the
 * first run of each workload (every run sees the same pods of a trace, and a family's
 * shapes are the same in every seed). */
static void replay__warn_unhostable(const replay_cmd_t *c) {
    for (size_t w = 0; w < c->workloads_count; w++) {
        const replay_figures_t *f = replay__run(c, w, 0, 0);
        const replay_workload_t *wl = &c->workloads[w];
        if (f->unhostable == 0)
            continue;
        if (wl->is_trace) {
            int64_t named =
                f->unhostable < REPLAY_UNHOSTABLE_NAMED ? f->unhostable : REPLAY_UNHOSTABLE_NAMED;
            for (int64_t k = 0; k < named; k++) {
                const replay_trace_pod_t *tp = &wl->trace[f->unhostable_shapes[k]];
                char line[32] = "", name[512];
                if (!(w == 0 && c->unsaved_first))
                    snprintf(line, sizeof(line), ":%zu", tp->line);
                fprintf(stderr,
                        "frugal replay: %s%s: pod %s: no node group can host this pod: "
                        "counted, not placed\n",
                        wl->path, line, pod_format_name(tp->pod, name, sizeof(name)));
            }
            fprintf(stderr, "frugal replay: %s: %" PRId64 " pod%s no node group can host%s\n",
                    wl->path, f->unhostable, f->unhostable == 1 ? "" : "s",
                    f->unhostable > named ? " (the first ones named above)" : "");
        } else
            fprintf(stderr,
                    "frugal replay: %s: family %s: some of its pods no node group can host: "
                    "counted, not placed (%" PRId64 " such pods in seed %" PRIu64 ")\n",
                    wl->path, wl->families[f->unhostable_shapes[0]].name, f->unhostable,
                    c->first_seed);
    }
}

static void replay__range(char *buf, size_t size, const replay_stat_t *s, const char *fmt) {
    if (s->undefined) {
        snprintf(buf, size, "-");
        return;
    }
    char a[32], b[32], m[32];
    snprintf(m, sizeof(m), fmt, s->mean);
    snprintf(a, sizeof(a), fmt, s->min);
    snprintf(b, sizeof(b), fmt, s->max);
    snprintf(buf, size, "%s [%s-%s]", m, a, b);
}

/* The simulated hours of workload w: --hours, else a week for a mix, a trace's span. */
static double replay__hours(const replay_cmd_t *c, size_t w) {
    if (c->hours > 0)
        return c->hours;
    const replay_workload_t *wl = &c->workloads[w];
    return wl->is_trace ? (double)wl->trace_span_s / 3600.0 : 168.0;
}

static void replay__print_table(const replay_cmd_t *c, const replay_row_t *rows) {
    for (size_t w = 0; w < c->workloads_count; w++) {
        const replay_row_t *r0 = &rows[w * c->strategies_count];
        printf("%s%s: %.1f h, %zu seeds", w ? "\n" : "", r0->workload, replay__hours(c, w),
               c->seeds);
        if (c->first_seed != 1 && c->seeds == 1)
            printf(" (seed %" PRIu64 ")", c->first_seed);
        else if (c->first_seed != 1)
            printf(" (%" PRIu64 " to %" PRIu64 ")", c->first_seed, c->first_seed + c->seeds - 1);
        printf(", %" PRId64 " pods per seed", r0->pods);
        if (r0->unhostable > 0)
            printf(", %" PRId64 " that no group can host (not placed)", r0->unhostable);
        if (c->workloads[w].trace_per_node > 0)
            printf(", %zu DaemonSet and static pods left out (they come with every node)",
                   c->workloads[w].trace_per_node);
        if (c->opts.scale_down_utilization > 0)
            printf(", nodes below utilisation %g scaled down", c->opts.scale_down_utilization);
        if (c->opts.placement != REPLAY_PLACE_FIRST_FIT)
            printf(", pods placed %s", replay_placement_name(c->opts.placement));
        if (c->opts.restart_at_h > 0)
            printf(", frugal restarted at %g h", c->opts.restart_at_h);
        printf("\n");
        if (r0->bound_error != NULL) {
            printf("  BOUND -: ");
            if (!c->workloads[w].is_trace)
                printf("seed %" PRIu64 ": ", r0->bound_error_seed);
            printf("%s\n", r0->bound_error);
        }
        /* NODES DRAINED (non-empty nodes scaled down) only when that can happen. */
        bool drains = c->opts.scale_down_utilization > 0;
        cli_table_t t = {.ncols = drains ? 10 : 9};
        cli_table_row(&t, "STRATEGY", "COST", "COST/IDEAL", "BOUND", "COST/BOUND",
                      "PENDING POD-MIN", "NODES BOUGHT", "VS RANDOM", "VS PRICING",
                      "NODES DRAINED");
        for (size_t k = 0; k < c->strategies_count; k++) {
            const replay_row_t *r = &rows[w * c->strategies_count + k];
            char cost[128], ratio[128], pend[128], nodes[128], vs[128] = "-", vsp[128] = "-";
            char drained[128];
            char bound[128] = "-", cost_bound[128] = "-";
            replay__range(cost, sizeof(cost), &r->cost, "%.2f");
            replay__range(ratio, sizeof(ratio), &r->ratio, "%.3f");
            if (r->bound_error == NULL) {
                replay__range(bound, sizeof(bound), &r->bound, "%.2f");
                replay__range(cost_bound, sizeof(cost_bound), &r->cost_bound, "%.3f");
            }
            replay__range(pend, sizeof(pend), &r->pending, "%.0f");
            replay__range(nodes, sizeof(nodes), &r->nodes, "%.0f");
            replay__range(drained, sizeof(drained), &r->drained, "%.0f");
            if (r->has_random)
                replay__range(vs, sizeof(vs), &r->vs_random, "%.3f");
            if (r->has_pricing)
                replay__range(vsp, sizeof(vsp), &r->vs_pricing, "%.3f");
            cli_table_row(&t, r->strategy, cost, ratio, bound, cost_bound, pend, nodes, vs, vsp,
                          drained);
        }
        cli_table_flush(&t, 2);
    }
}

static void replay__csv_stat(const replay_stat_t *s) {
    if (s->undefined)
        printf(",,,");
    else
        printf(",%.6f,%.6f,%.6f", s->mean, s->min, s->max);
}

/* A VS column's 95 % half-width: empty when the column is absent or with one seed. */
static void replay__csv_ci95(const replay_cmd_t *c, bool has, const replay_stat_t *s) {
    double h = has && !s->undefined ? replay__ci95(s, c->seeds) : NAN;
    if (isnan(h))
        printf(",");
    else
        printf(",%.6f", h);
}

/* A csv field as RFC 4180 has it: quoted, its quotes doubled, when it holds a comma, a
 * quote or a line break (a workload is named after its file). */
static void replay__csv_field(const char *s) {
    if (strpbrk(s, ",\"\r\n") == NULL) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s != '\0'; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

static void replay__print_csv(const replay_cmd_t *c, const replay_row_t *rows) {
    printf("workload,strategy,seeds,pods,unhostable");
    const char *names[] = {"cost",         "cost_ratio", "pending_pod_minutes",
                           "nodes_bought", "vs_random",  "vs_pricing"};
    for (size_t i = 0; i < 6; i++)
        printf(",%s_mean,%s_min,%s_max", names[i], names[i], names[i]);
    printf(",bound_mean,bound_min,bound_max,cost_bound_mean,cost_bound_min,cost_bound_max,"
           "bound_error,nodes_drained_mean,nodes_drained_min,nodes_drained_max,"
           "scale_down_utilization,placement,restart_at_hours,vs_random_ci95,vs_pricing_ci95\n");
    for (size_t i = 0; i < c->workloads_count * c->strategies_count; i++) {
        const replay_row_t *r = &rows[i];
        replay__csv_field(r->workload);
        putchar(',');
        replay__csv_field(r->strategy);
        printf(",%zu,%" PRId64 ",%" PRId64, c->seeds, r->pods, r->unhostable);
        replay__csv_stat(&r->cost);
        replay__csv_stat(&r->ratio);
        replay__csv_stat(&r->pending);
        replay__csv_stat(&r->nodes);
        if (r->has_random)
            replay__csv_stat(&r->vs_random);
        else
            printf(",,,");
        if (r->has_pricing)
            replay__csv_stat(&r->vs_pricing);
        else
            printf(",,,");
        if (r->bound_error == NULL) {
            replay__csv_stat(&r->bound);
            replay__csv_stat(&r->cost_bound);
            printf(",");
        } else {
            printf(",,,,,,,");
            replay__csv_field(r->bound_error);
        }
        replay__csv_stat(&r->drained);
        printf(",%g,%s,%g", c->opts.scale_down_utilization,
               replay_placement_name(c->opts.placement), c->opts.restart_at_h);
        replay__csv_ci95(c, r->has_random, &r->vs_random);
        replay__csv_ci95(c, r->has_pricing, &r->vs_pricing);
        printf("\n");
    }
}

/* "key": {"mean": ..., "min": ..., "max": ... with the object left open. */
static void replay__json_stat_open(const char *key, const replay_stat_t *s) {
    printf("\"%s\": {\"mean\": %.6f, \"min\": %.6f, \"max\": %.6f", key, s->mean, s->min, s->max);
}

/* The seeds that gave min and max, and the object's end. */
static void replay__json_stat_close(const replay_cmd_t *c, const replay_stat_t *s) {
    printf(", \"min_seed\": %" PRIu64 ", \"max_seed\": %" PRIu64 "}", c->first_seed + s->min_at,
           c->first_seed + s->max_at);
}

/* null for a ratio over nothing. */
static void replay__json_stat(const replay_cmd_t *c, const char *key, const replay_stat_t *s,
                              bool last) {
    if (s->undefined) {
        printf("\"%s\": null%s", key, last ? "" : ", ");
        return;
    }
    replay__json_stat_open(key, s);
    replay__json_stat_close(c, s);
    printf("%s", last ? "" : ", ");
}

/* A VS column's figures with the 95 % half-width of its mean (null with one seed). */
static void replay__json_vs(const replay_cmd_t *c, const char *key, const replay_stat_t *s) {
    if (s->undefined) {
        printf("\"%s\": null, ", key);
        return;
    }
    double h = replay__ci95(s, c->seeds);
    replay__json_stat_open(key, s);
    printf(", \"ci95\": ");
    if (isnan(h))
        printf("null");
    else
        printf("%.6f", h);
    replay__json_stat_close(c, s);
    printf(", ");
}

static void replay__print_json(const replay_cmd_t *c, const replay_row_t *rows) {
    printf("{\"seeds\": %zu, \"first_seed\": %" PRIu64 ", \"scale_down_utilization\": %g, "
           "\"placement\": \"%s\", \"restart_at_hours\": %g, \"results\": [",
           c->seeds, c->first_seed, c->opts.scale_down_utilization,
           replay_placement_name(c->opts.placement), c->opts.restart_at_h);
    for (size_t i = 0; i < c->workloads_count * c->strategies_count; i++) {
        const replay_row_t *r = &rows[i];
        printf("%s\n  {\"workload\": ", i ? "," : "");
        log_json_fputs(stdout, r->workload);
        printf(", \"strategy\": \"%s\", \"hours\": %g, \"pods\": %" PRId64
               ", \"unhostable\": %" PRId64 ", ",
               r->strategy, replay__hours(c, i / c->strategies_count), r->pods, r->unhostable);
        replay__json_stat(c, "cost", &r->cost, false);
        replay__json_stat(c, "cost_ratio", &r->ratio, false);
        replay__json_stat(c, "pending_pod_minutes", &r->pending, false);
        replay__json_stat(c, "nodes_bought", &r->nodes, false);
        replay__json_stat(c, "nodes_drained", &r->drained, false);
        if (r->has_random)
            replay__json_vs(c, "vs_random", &r->vs_random);
        if (r->has_pricing)
            replay__json_vs(c, "vs_pricing", &r->vs_pricing);
        if (r->bound_error == NULL) {
            replay__json_stat(c, "bound", &r->bound, false);
            replay__json_stat(c, "cost_bound", &r->cost_bound, true);
        } else {
            printf("\"bound\": null, \"cost_bound\": null, \"bound_error\": ");
            log_json_fputs(stdout, r->bound_error);
        }
        printf("}");
    }
    printf("\n]}\n");
}

static bool replay__positive(const char *s, double max, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* strtod also reads hexadecimal ("0x10"), which no one means as hours. */
    if (*s == '\0' || strpbrk(s, "xX") != NULL || *end != '\0' || errno != 0 || !(v > 0) || v > max)
        return false;
    *out = v;
    return true;
}

static bool replay__has_strategy(const replay_cmd_t *c, const replay_policy_ops_t *p) {
    for (size_t i = 0; i < c->strategies_count; i++)
        if (c->strategies[i] == p)
            return true;
    return false;
}

/* The longest replay: the longest trace's span. */
#define REPLAY_HOURS_MAX (REPLAY_SECONDS_MAX / 3600)

/* A number of hours for option opt (--hours, --restart-at): 0, or 2 once the refusal is
 * said. */
static int replay__hours_arg(const char *opt, const char *val, double *out) {
    if (replay__positive(val, REPLAY_HOURS_MAX, out))
        return 0;
    fprintf(stderr, "frugal replay: %s: expected a positive number of hours up to %d, got \"%s\"\n",
            opt, REPLAY_HOURS_MAX, val);
    return 2;
}

/* A whole number from 1 to max for option opt (--seeds, --first-seed), `what` naming it in
 * the refusal: 0, or 2 once the refusal is said. */
static int replay__whole_arg(const char *opt, const char *val, uint64_t max, const char *what,
                             uint64_t *out) {
    double v = 0;
    if (replay__positive(val, (double)max, &v) && v == (double)(uint64_t)v) {
        *out = (uint64_t)v;
        return 0;
    }
    fprintf(stderr, "frugal replay: %s: expected %s from 1 to %" PRIu64 ", got \"%s\"\n", opt, what,
            max, val);
    return 2;
}

/* --restart-at must fall before workload w's end. */
static int replay__restart_check(const replay_cmd_t *c, size_t w) {
    if (c->opts.restart_at_h <= 0 || c->opts.restart_at_h < replay__hours(c, w))
        return 0;
    fprintf(stderr, "frugal replay: --restart-at %g: not before the end of %s (%g h)\n",
            c->opts.restart_at_h, c->workloads[w].name, replay__hours(c, w));
    return 2;
}

/* "frugal replay: WHAT, got URL" on stderr, URL's password hidden. */
static void replay__url_usage(const char *what, const char *url) {
    char *shown = prom_http_url_shown(url);
    fprintf(stderr, "frugal replay: %s, got %s\n", what, shown != NULL ? shown : "(out of memory)");
    free(shown);
}

/* The range of --from-prometheus: --since is required with it, --until defaults to now;
 * the Prometheus options without --from-prometheus are usage errors. */
static int replay__prom_args(replay_prom_source_t *p, const char *since, const char *until) {
    if (p->http.url == NULL) {
        if (since || until || p->namespace_re || p->save_trace || p->http.bearer_token_file ||
            p->http.ca_file || p->http.cert_file || p->http.key_file) {
            fprintf(stderr, "frugal replay: --since, --until, --namespace, --save-trace and the "
                            "access options go with --from-prometheus URL\n");
            return 2;
        }
        return 0;
    }
    /* libcurl also reads file:// and ftp://, which are no Prometheus. */
    if (strncasecmp(p->http.url, "http://", 7) != 0 &&
        strncasecmp(p->http.url, "https://", 8) != 0) {
        replay__url_usage("--from-prometheus: expected an http:// or https:// URL", p->http.url);
        return 2;
    }
    /* The API path goes after the URL: a query or fragment would stand before it. */
    const char *qf = strpbrk(p->http.url, "?#");
    if (qf != NULL) {
        replay__url_usage(*qf == '?' ? "--from-prometheus: a URL with a query (?...) cannot take "
                                       "the API path"
                                     : "--from-prometheus: a URL with a fragment (#...) cannot "
                                       "take the API path",
                          p->http.url);
        return 2;
    }
    if (p->namespace_re != NULL && strlen(p->namespace_re) > REPLAY_PROM_REGEX_MAX) {
        fprintf(stderr, "frugal replay: --namespace: longer than %d characters\n",
                REPLAY_PROM_REGEX_MAX);
        return 2;
    }
    int64_t ns = 0;
    frugal_err_t err;
    frugal_err_clear(&err);
    if (since == NULL) {
        fprintf(stderr, "frugal replay: --from-prometheus needs --since DURATION\n");
        return 2;
    }
    /* A trace spans at most REPLAY_SECONDS_MAX: a longer range would be queried in full,
     * then refused. */
    if (duration_parse(since, &ns, &err) != 0 || ns < DURATION_NS_PER_SEC ||
        ns / DURATION_NS_PER_SEC > REPLAY_SECONDS_MAX) {
        fprintf(stderr, "frugal replay: --since: expected a duration from 1s to %dh, got \"%s\"\n",
                REPLAY_SECONDS_MAX / 3600, since);
        return 2;
    }
    p->end_s = (int64_t)time(NULL);
    if (until != NULL && !timestamp_parse(until, &p->end_s)) {
        fprintf(stderr,
                "frugal replay: --until: expected RFC 3339 (2026-01-02T15:04:05Z) or unix "
                "seconds, got \"%s\"\n",
                until);
        return 2;
    }
    p->start_s = p->end_s - ns / DURATION_NS_PER_SEC;
    if ((p->http.cert_file == NULL) != (p->http.key_file == NULL)) {
        fprintf(stderr, "frugal replay: --cert and --key go together\n");
        return 2;
    }
    /* TLS files on a plain http:// URL would be ignored: a user who gave them expects TLS. */
    if ((p->http.ca_file || p->http.cert_file) && strncasecmp(p->http.url, "https://", 8) != 0) {
        replay__url_usage("--ca-file, --cert and --key need an https:// URL", p->http.url);
        return 2;
    }
    return 0;
}

/* Every option replay takes; each takes a value. */
static const char *const replay__options[] = {"-c",
                                              "--config",
                                              "-o",
                                              "--output",
                                              "--seeds",
                                              "--first-seed",
                                              "--hours",
                                              "--scale-down-utilization",
                                              "--placement",
                                              "--restart-at",
                                              "--decisions",
                                              "--from-prometheus",
                                              "--since",
                                              "--until",
                                              "--namespace",
                                              "--save-trace",
                                              "--bearer-token-file",
                                              "--ca-file",
                                              "--cert",
                                              "--key",
                                              "--strategy"};

static bool replay__known_option(const char *opt) {
    for (size_t i = 0; i < sizeof(replay__options) / sizeof(*replay__options); i++)
        if (strcmp(opt, replay__options[i]) == 0)
            return true;
    return false;
}

int cmd_replay(int argc, char **argv) {
    const char *config_path = NULL, *format = "table";
    const char **paths = cli_xcalloc((size_t)argc, sizeof(*paths));
    size_t npaths = 0;
    replay_cmd_t c;
    memset(&c, 0, sizeof(c));
    c.decisions_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    replay_prom_source_t prom;
    memset(&prom, 0, sizeof(prom));
    const char *since = NULL, *until = NULL;
    c.seeds = 12;
    c.first_seed = 1;
    int status = 0;
    for (int i = 1; i < argc && status == 0; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "-h") == 0 || strcmp(opt, "--help") == 0) {
            free(paths);
            return replay__usage(stdout, 0);
        }
        if (opt[0] != '-') {
            paths[npaths++] = opt;
            continue;
        }
        if (strcmp(opt, "--") == 0) { /* the rest are WORKLOAD files, whatever their names */
            while (++i < argc)
                paths[npaths++] = argv[i];
            break;
        }
        if (!replay__known_option(opt)) {
            fprintf(stderr, "frugal replay: unexpected argument \"%s\"\n", opt);
            status = replay__usage(stderr, 2);
            break;
        }
        if (i + 1 >= argc || argv[i + 1][0] == '\0') {
            fprintf(stderr, "frugal replay: %s needs a value\n", opt);
            status = 2;
            break;
        }
        const char *val = argv[++i];
        if (strcmp(opt, "-c") == 0 || strcmp(opt, "--config") == 0) {
            if (config_path != NULL) {
                fprintf(stderr, "frugal replay: -c given twice\n");
                status = 2;
            }
            config_path = val;
        } else if (strcmp(opt, "-o") == 0 || strcmp(opt, "--output") == 0) {
            format = val;
        } else if (strcmp(opt, "--seeds") == 0) {
            uint64_t n = 0;
            status = replay__whole_arg(opt, val, 10000, "a count", &n);
            c.seeds = (size_t)n;
        } else if (strcmp(opt, "--first-seed") == 0) {
            status = replay__whole_arg(opt, val, 1000000000, "a seed", &c.first_seed);
        } else if (strcmp(opt, "--hours") == 0) {
            if (replay__hours_arg(opt, val, &c.hours) != 0)
                status = 2;
        } else if (strcmp(opt, "--scale-down-utilization") == 0) {
            if (!replay__positive(val, 1, &c.opts.scale_down_utilization)) {
                fprintf(stderr,
                        "frugal replay: --scale-down-utilization: expected a fraction above 0 "
                        "and at most 1, got \"%s\"\n",
                        val);
                status = 2;
            }
        } else if (strcmp(opt, "--placement") == 0) {
            if (replay_placement_parse(val, &c.opts.placement) != 0) {
                fprintf(stderr,
                        "frugal replay: --placement: expected first-fit, least-allocated or "
                        "most-allocated, got \"%s\"\n",
                        val);
                status = 2;
            }
        } else if (strcmp(opt, "--restart-at") == 0) {
            if (replay__hours_arg(opt, val, &c.opts.restart_at_h) != 0)
                status = 2;
        } else if (strcmp(opt, "--decisions") == 0) {
            c.decisions_path = val;
        } else if (strcmp(opt, "--from-prometheus") == 0) {
            prom.http.url = val;
        } else if (strcmp(opt, "--since") == 0) {
            since = val;
        } else if (strcmp(opt, "--until") == 0) {
            until = val;
        } else if (strcmp(opt, "--namespace") == 0) {
            prom.namespace_re = val;
        } else if (strcmp(opt, "--save-trace") == 0) {
            prom.save_trace = val;
        } else if (strcmp(opt, "--bearer-token-file") == 0) {
            prom.http.bearer_token_file = val;
        } else if (strcmp(opt, "--ca-file") == 0) {
            prom.http.ca_file = val;
        } else if (strcmp(opt, "--cert") == 0) {
            prom.http.cert_file = val;
        } else if (strcmp(opt, "--key") == 0) {
            prom.http.key_file = val;
        } else if (strcmp(opt, "--strategy") == 0) {
            const replay_policy_ops_t *p = replay_policy_find(val);
            if (p == NULL) {
                fprintf(stderr, "frugal replay: unknown strategy \"%s\"\n", val);
                replay__usage(stderr, 2);
                status = 2;
            } else if (c.strategies_count == REPLAY_MAX_STRATEGIES) {
                fprintf(stderr, "frugal replay: at most %d strategies\n", REPLAY_MAX_STRATEGIES);
                status = 2;
            } else if (replay__has_strategy(&c, p)) {
                fprintf(stderr, "frugal replay: --strategy %s given twice\n", val);
                status = 2;
            } else {
                c.strategies[c.strategies_count++] = p;
            }
        } else {
            fprintf(stderr, "frugal replay: unexpected argument \"%s\"\n", opt);
            status = replay__usage(stderr, 2);
        }
    }
    /* first: --since alone is a missing --from-prometheus more than a missing WORKLOAD */
    if (status == 0)
        status = replay__prom_args(&prom, since, until);
    if (status == 0 && (config_path == NULL || (npaths == 0 && prom.http.url == NULL))) {
        fprintf(stderr, "frugal replay: %s is required\n",
                config_path == NULL ? "-c FILE" : "a WORKLOAD file or --from-prometheus URL");
        status = replay__usage(stderr, 2);
    }
    if (status == 0 && strcmp(format, "table") != 0 && strcmp(format, "csv") != 0 &&
        strcmp(format, "json") != 0) {
        fprintf(stderr, "frugal replay: unknown output format \"%s\" (table, csv or json)\n",
                format);
        status = 2;
    }
    if (status != 0) {
        free(paths);
        return status;
    }
    if (c.strategies_count == 0) {
        size_t n;
        const replay_policy_ops_t *const *list = replay_policy_list(&n);
        for (size_t i = 0; i < n && i < REPLAY_MAX_STRATEGIES; i++)
            c.strategies[c.strategies_count++] = list[i];
    }

    frugal_config_t *cfg = NULL;
    if (cmd_load_config(config_path, &cfg) != 0) {
        free(paths);
        return 1;
    }
    c.cfg = cfg;
    c.workloads = cli_xcalloc(npaths + 1, sizeof(*c.workloads));
    /* Before anything slow: a file that cannot be written is said at once. */
    if (c.decisions_path != NULL)
        status = replay__decisions_status(&c, cli_tmp_open(&c.decisions, c.decisions_path));
    if (status == 0) {
        frugal_err_t err;
        frugal_err_clear(&err);
        if (replay_prom_source_open_save(&prom, &err) != 0) {
            fprintf(stderr, "frugal replay: %s\n", err.msg);
            status = 1;
        }
    }
    /* The files first: a typo in one is said before minutes of queries. Prometheus'
     * trace, when asked for, takes the first place. */
    size_t first_file = prom.http.url != NULL ? 1 : 0;
    c.workloads_count = first_file;
    for (size_t i = 0; i < npaths && status == 0; i++) {
        char *text = NULL;
        size_t len = 0;
        int e = cli_read_file(paths[i], &text, &len);
        if (e != 0) {
            fprintf(stderr, "frugal replay: cannot read %s: %s\n", paths[i], strerror(e));
            status = 1;
            break;
        }
        frugal_err_t err;
        frugal_err_clear(&err);
        if (replay_workload_load(paths[i], text, len, &c.workloads[c.workloads_count], &err) != 0) {
            fprintf(stderr, "%s\n", err.msg);
            status = 1;
        } else {
            c.workloads_count++;
        }
        free(text);
    }
    for (size_t w = first_file; w < c.workloads_count && status == 0; w++)
        status = replay__restart_check(&c, w);
    replay_prom_built_t built = {0};
    if (status == 0 && prom.http.url != NULL) {
        frugal_err_t err;
        frugal_err_clear(&err);
        prom.progress = isatty(STDERR_FILENO);
        c.unsaved_first = prom.save_trace == NULL;
        curl_global_init(CURL_GLOBAL_DEFAULT);
        if (replay_prom_source_load(&prom, cfg, &c.workloads[0], &built, &err) != 0) {
            fprintf(stderr, "frugal replay: %s\n", err.msg);
            status = 1;
        } else {
            status = replay__restart_check(&c, 0);
        }
        curl_global_cleanup();
    }
    if (status == 0) {
        for (size_t w = 0; w < c.workloads_count; w++)
            c.bounds_count += c.workloads[w].is_trace ? 1 : c.seeds;
        c.jobs_count = c.bounds_count + c.workloads_count * c.strategies_count * c.seeds;
        c.jobs = cli_xcalloc(c.jobs_count, sizeof(*c.jobs));
        replay_job_t *j = c.jobs;
        for (size_t w = 0; w < c.workloads_count; w++)
            for (size_t s = 0; s < (c.workloads[w].is_trace ? 1 : c.seeds); s++, j++)
                *j = (replay_job_t){.workload = w, .seed = c.first_seed + s, .is_bound = true};
        for (size_t i = 0; i < c.jobs_count - c.bounds_count; i++, j++) {
            j->workload = i / (c.strategies_count * c.seeds);
            j->strategy = i / c.seeds % c.strategies_count;
            j->seed = c.first_seed + i % c.seeds;
        }
        c.progress = isatty(STDERR_FILENO);
        c.decisions_next = c.bounds_count;
        status = replay__run_all(&c);
    }
    if (c.decisions.f != NULL) {
        int closed = replay__decisions_status(&c, cli_tmp_close(&c.decisions, status == 0));
        status = status != 0 ? status : closed;
    }
    if (status == 0 && prom.http.url != NULL) {
        frugal_err_t err;
        frugal_err_clear(&err);
        if (replay_prom_source_finish(&prom, &built, &err) != 0) {
            fprintf(stderr, "frugal replay: %s\n", err.msg);
            status = 1;
        }
    }
    replay_prom_source_discard(&prom);
    replay_prom_built_free(&built);
    if (status == 0) {
        replay_row_t *rows = cli_xcalloc(c.workloads_count * c.strategies_count, sizeof(*rows));
        replay__warn_unhostable(&c);
        replay__rows(&c, rows);
        if (strcmp(format, "csv") == 0)
            replay__print_csv(&c, rows);
        else if (strcmp(format, "json") == 0)
            replay__print_json(&c, rows);
        else
            replay__print_table(&c, rows);
        free(rows);
        if (fflush(stdout) != 0)
            status = 1;
    }
    for (size_t i = 0; i < c.workloads_count; i++)
        replay_workload_free(&c.workloads[i]);
    free(c.workloads);
    for (size_t i = 0; i < c.jobs_count; i++)
        free(c.jobs[i].decisions);
    free(c.jobs);
    free(paths);
    config_free(cfg);
    return status;
}
