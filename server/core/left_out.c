/* Pods left to a later scale-up: see left_out.h. */
#include "left_out.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

typedef struct left_out__item {
    size_t host; /* the option whose nodes will host the pod */
    double size; /* the pod's largest share of one of those nodes */
    size_t pod;
} left_out__item_t;

/* By host, then largest first (first-fit decreasing), then pod order. */
static int left_out__cmp(const void *a, const void *b) {
    const left_out__item_t *x = a, *y = b;
    if (x->host != y->host)
        return x->host < y->host ? -1 : 1;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return (x->pod > y->pod) - (x->pod < y->pod);
}

static double left_out__share(int64_t need, int64_t have) {
    return have > 0 ? (double)need / (double)have : (need > 0 ? INFINITY : 0.0);
}

/* The nodes of capacity node that items[0..count) take, first fit. bins has count rows. */
static size_t left_out__nodes(const resources_t *pods, const left_out__item_t *items, size_t count,
                              const resources_t *node, resources_t *bins) {
    size_t used = 0;
    for (size_t k = 0; k < count; k++) {
        const resources_t *p = &pods[items[k].pod];
        size_t b = 0;
        while (b < used && (bins[b].cpu_milli < p->cpu_milli ||
                            bins[b].memory_bytes < p->memory_bytes || bins[b].gpu < p->gpu))
            b++;
        if (b == used)
            bins[used++] = *node; /* a pod larger than a node still takes one */
        bins[b].cpu_milli -= p->cpu_milli;
        bins[b].memory_bytes -= p->memory_bytes;
        bins[b].gpu -= p->gpu;
    }
    return used;
}

int left_out_charge(const resources_t *pods, const double *pod_prices, size_t pods_count,
                    const left_out_option_t *options, size_t n, double *cost, double *value) {
    memset(cost, 0, n * sizeof(*cost));
    memset(value, 0, n * sizeof(*value));
    if (n < 2 || pods_count == 0)
        return 0;
    size_t m = pods_count;
    size_t *host = malloc(m * sizeof(*host)), *set = malloc(m * sizeof(*set));
    size_t *mark = calloc(m, sizeof(*mark));
    double *host_ratio = malloc(m * sizeof(*host_ratio));
    left_out__item_t *items = malloc(m * sizeof(*items));
    resources_t *bins = malloc(m * sizeof(*bins));
    int rc = 0;
    if (!host || !set || !mark || !host_ratio || !items || !bins) {
        rc = FRUGAL_ENOMEM;
        goto done;
    }
    /* Each pod's set, and the option that hosts pods at the lowest price now. */
    for (size_t p = 0; p < m; p++)
        host[p] = n, set[p] = SIZE_MAX, host_ratio[p] = INFINITY;
    for (size_t i = 0; i < n; i++) {
        const left_out_option_t *o = &options[i];
        if (!o->in_play)
            continue;
        double ratio = o->pods_price > 0.0 ? o->nodes_price / o->pods_price : INFINITY;
        for (size_t k = 0; k < o->pods_count; k++) {
            size_t p = o->pods[k];
            if (p >= m)
                continue;
            set[p] = o->set;
            if (ratio < host_ratio[p])
                host_ratio[p] = ratio, host[p] = i;
        }
    }
    for (size_t i = 0; i < n; i++) {
        const left_out_option_t *o = &options[i];
        if (!o->in_play)
            continue;
        for (size_t k = 0; k < o->pods_count; k++)
            if (o->pods[k] < m)
                mark[o->pods[k]] = i + 1;
        size_t count = 0;
        for (size_t p = 0; p < m; p++) {
            /* A pod that requests nothing fits wherever a pod fits: not charged. */
            if (set[p] != o->set || mark[p] == i + 1 || host[p] == n || !(pod_prices[p] > 0.0))
                continue;
            const resources_t *r = &pods[p], *cap = &options[host[p]].node;
            double size = fmax(left_out__share(r->cpu_milli, cap->cpu_milli),
                               left_out__share(r->memory_bytes, cap->memory_bytes));
            if (r->gpu > 0)
                size = fmax(size, left_out__share(r->gpu, cap->gpu));
            items[count++] = (left_out__item_t){host[p], size, p};
            value[i] += pod_prices[p];
        }
        qsort(items, count, sizeof(*items), left_out__cmp);
        for (size_t a = 0, b; a < count; a = b) {
            for (b = a; b < count && items[b].host == items[a].host; b++)
                ;
            const left_out_option_t *h = &options[items[a].host];
            cost[i] +=
                (double)left_out__nodes(pods, items + a, b - a, &h->node, bins) * h->node_price;
        }
    }
done:
    if (rc != 0) {
        memset(cost, 0, n * sizeof(*cost));
        memset(value, 0, n * sizeof(*value));
    }
    free(host);
    free(set);
    free(mark);
    free(host_ratio);
    free(items);
    free(bins);
    return rc;
}
