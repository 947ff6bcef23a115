/* State-file write benchmark: state_format and state_save (write PATH.tmp, fsync,
 * rename, fsync the directory) of a cluster of GROUPS groups with INSTANCES instances
 * each, as every mutation does. Prints the text size and per-write timings.
 *
 *   bench_state_file [--groups N] [--instances N] [--writes N] [--dir DIR]
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "state.h"
#include "state_file.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void make_group(group_t *g, int i, int instances) {
    char id[64];
    memset(g, 0, sizeof(*g));
    snprintf(id, sizeof(id), "pool-%d", i);
    g->spec.id = strdup(id);
    g->spec.machine_type = strdup("n1-standard-4");
    g->spec.zone = strdup("us-central1-a");
    g->spec.spot_price = -1;
    g->min_size = 0;
    g->max_size = 1000;
    g->managed = true;
    g->exists = true;
    g->target_size = instances;
    g->next_seq = (uint64_t)instances + 1;
    g->instances_count = (size_t)instances;
    g->instances = calloc((size_t)instances > 0 ? (size_t)instances : 1, sizeof(instance_t));
    for (int j = 0; j < instances; j++) {
        char iid[160];
        snprintf(iid, sizeof(iid), "frugal://%s/%s-%d", id, id, j + 1);
        g->instances[j].id = strdup(iid);
        g->instances[j].state = INSTANCE_RUNNING;
        g->instances[j].state_since_ms = 1795000000000 + j;
    }
}

static void report(const char *what, double *t, int n) {
    qsort(t, (size_t)n, sizeof(*t), cmp_double);
    printf("%-14s p50 %8.3f ms  p99 %8.3f ms\n", what, t[n / 2], t[(n * 99) / 100]);
}

int main(int argc, char **argv) {
    int groups = 50, instances = 20, writes = 200;
    const char *dir = "/tmp";
    static const struct option opts[] = {{"groups", required_argument, NULL, 'g'},
                                         {"instances", required_argument, NULL, 'i'},
                                         {"writes", required_argument, NULL, 'w'},
                                         {"dir", required_argument, NULL, 'd'},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'g')
            groups = atoi(optarg);
        else if (c == 'i')
            instances = atoi(optarg);
        else if (c == 'w')
            writes = atoi(optarg);
        else if (c == 'd')
            dir = optarg;
        else
            return 2;
    }
    group_t *g = calloc((size_t)groups, sizeof(*g));
    const group_t **view = calloc((size_t)groups, sizeof(*view));
    for (int i = 0; i < groups; i++) {
        make_group(&g[i], i, instances);
        view[i] = &g[i];
    }
    char path[512];
    snprintf(path, sizeof(path), "%s/bench-state-%d.yaml", dir, (int)getpid());
    double *fmt = calloc((size_t)writes, sizeof(double));
    double *save = calloc((size_t)writes, sizeof(double));
    double *load = calloc((size_t)writes, sizeof(double));
    size_t len = 0;
    frugal_err_t err = {0};
    for (int k = 0; k < writes; k++) {
        char *text = NULL;
        double t0 = clock_mono_ms_exact();
        if (state_format(view, (size_t)groups, &text, &len, &err) != 0)
            return 1;
        fmt[k] = clock_mono_ms_exact() - t0;
        free(text);
        t0 = clock_mono_ms_exact();
        if (state_save(path, view, (size_t)groups, &err) != 0) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        save[k] = clock_mono_ms_exact() - t0;
        state_t st;
        t0 = clock_mono_ms_exact();
        if (state_load(path, &st, &err) != 0) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        load[k] = clock_mono_ms_exact() - t0;
        state_free(&st);
    }
    printf("%d groups x %d instances: %zu bytes, %d writes\n", groups, instances, len, writes);
    report("format", fmt, writes);
    report("save (fsync)", save, writes);
    report("load", load, writes);
    unlink(path);
    char extra[600];
    snprintf(extra, sizeof(extra), "%s.prev", path);
    unlink(extra);
    for (int i = 0; i < groups; i++)
        group_clear(&g[i]);
    free(g);
    free(view);
    free(fmt);
    free(save);
    free(load);
    return 0;
}
