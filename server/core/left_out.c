/* Pods left to a later scale-up: see left_out.h. */
#include "left_out.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "binpack.h"
#include "errors.h"
#include "hash.h"

typedef struct left_out__item {
    size_t host; /* the option whose nodes will host the pod */
    double size; /* the pod's largest share of one of those nodes */
    size_t pod;
} left_out__item_t;

/* What one option leaves out, to reuse for another that leaves out the same pods (CA
 * offers many groups whose nodes are too small for the same large pods). */
typedef struct left_out__seen {
    uint64_t hash;
    size_t count;
} left_out__seen_t;

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

/* The scratch of one call. */
typedef struct left_out__work {
    size_t *host, *set, *mark, *set_size, *set_start, *by_set, *order;
    double *host_ratio;
    left_out__item_t *items;
    resources_t *bins;
    int64_t *slots;
    left_out__seen_t *seen;
} left_out__work_t;

static void left_out__work_free(left_out__work_t *w) {
    free(w->host), free(w->set), free(w->mark), free(w->set_size), free(w->set_start);
    free(w->by_set), free(w->order), free(w->host_ratio), free(w->items), free(w->bins),
        free(w->slots), free(w->seen);
}

/* Each pod's set and host (the option that hosts pods at the lowest price now), each
 * set's pods in pod order (by_set from set_start[s], set_size[s] of them). */
static void left_out__sets(const left_out_option_t *options, size_t n, size_t m,
                           left_out__work_t *w) {
    for (size_t p = 0; p < m; p++)
        w->host[p] = n, w->set[p] = SIZE_MAX, w->host_ratio[p] = INFINITY;
    for (size_t i = 0; i < n; i++) {
        const left_out_option_t *o = &options[i];
        if (!o->in_play)
            continue;
        double ratio = o->pods_price > 0.0 ? o->nodes_price / o->pods_price : INFINITY;
        for (size_t k = 0; k < o->pods_count; k++) {
            size_t p = o->pods[k];
            if (p >= m)
                continue;
            w->set[p] = o->set < n ? o->set : 0;
            if (ratio < w->host_ratio[p])
                w->host_ratio[p] = ratio, w->host[p] = i;
        }
    }
    memset(w->set_size, 0, n * sizeof(*w->set_size));
    for (size_t p = 0; p < m; p++)
        if (w->set[p] != SIZE_MAX)
            w->set_size[w->set[p]]++;
    for (size_t s = 0, at = 0; s < n; at += w->set_size[s], s++)
        w->set_start[s] = at;
    memset(w->mark, 0, n * sizeof(*w->mark)); /* the fill of each set, for now */
    for (size_t p = 0; p < m; p++)
        if (w->set[p] != SIZE_MAX)
            w->by_set[w->set_start[w->set[p]] + w->mark[w->set[p]]++] = p;
}

int left_out_charge(const resources_t *pods, const double *pod_prices, size_t pods_count,
                    const left_out_option_t *options, size_t n, double *cost, double *value) {
    memset(cost, 0, n * sizeof(*cost));
    memset(value, 0, n * sizeof(*value));
    if (n < 2 || pods_count == 0)
        return 0;
    size_t m = pods_count, big = m > n ? m : n;
    left_out__work_t w = {
        .host = malloc(m * sizeof(size_t)),
        .set = malloc(m * sizeof(size_t)),
        .mark = calloc(big, sizeof(size_t)),
        .set_size = malloc(n * sizeof(size_t)),
        .set_start = malloc(n * sizeof(size_t)),
        .by_set = malloc(m * sizeof(size_t)),
        .order = malloc(m * sizeof(size_t)),
        .host_ratio = malloc(m * sizeof(double)),
        .items = malloc(m * sizeof(left_out__item_t)),
        .bins = malloc(m * sizeof(resources_t)),
        .slots = malloc(m * sizeof(int64_t)),
        .seen = calloc(n, sizeof(left_out__seen_t)),
    };
    if (!w.host || !w.set || !w.mark || !w.set_size || !w.set_start || !w.by_set || !w.order ||
        !w.host_ratio || !w.items || !w.bins || !w.slots || !w.seen) {
        left_out__work_free(&w);
        return FRUGAL_ENOMEM;
    }
    left_out__sets(options, n, m, &w);
    memset(w.mark, 0, big * sizeof(*w.mark));
    for (size_t i = 0; i < n; i++) {
        const left_out_option_t *o = &options[i];
        if (!o->in_play)
            continue;
        size_t own = 0, s = o->set < n ? o->set : 0;
        for (size_t k = 0; k < o->pods_count; k++) {
            size_t p = o->pods[k];
            if (p < m && w.mark[p] != i + 1)
                w.mark[p] = i + 1, own++;
        }
        if (own == w.set_size[s])
            continue; /* it hosts its whole set */
        size_t count = 0;
        uint64_t hash = HASH_FNV_OFFSET; /* over the indexes of the left-out pods */
        for (size_t k = 0; k < w.set_size[s]; k++) {
            size_t p = w.by_set[w.set_start[s] + k];
            /* A pod that requests nothing fits wherever a pod slot is free: charged only
             * for the slot, where its host's nodes have a limit. */
            if (w.mark[p] == i + 1 || w.host[p] == n ||
                (!(pod_prices[p] > 0.0) && options[w.host[p]].max_pods <= 0))
                continue;
            const resources_t *r = &pods[p], *cap = &options[w.host[p]].node;
            double size = fmax(left_out__share(r->cpu_milli, cap->cpu_milli),
                               left_out__share(r->memory_bytes, cap->memory_bytes));
            if (r->gpu > 0)
                size = fmax(size, left_out__share(r->gpu, cap->gpu));
            w.items[count++] = (left_out__item_t){w.host[p], size, p};
            value[i] += pod_prices[p];
            for (unsigned b = 0; b < sizeof(p); b++)
                hash = hash_fnv_byte(hash, (unsigned char)(p >> (8 * b)));
        }
        w.seen[i] = (left_out__seen_t){hash, count};
        size_t same = 0;
        while (same < i && !(options[same].in_play && options[same].set == o->set &&
                             w.seen[same].count == count && w.seen[same].hash == hash))
            same++;
        if (same < i) {
            cost[i] = cost[same];
            continue;
        }
        qsort(w.items, count, sizeof(*w.items), left_out__cmp);
        for (size_t a = 0, b; a < count; a = b) {
            for (b = a; b < count && w.items[b].host == w.items[a].host; b++)
                ;
            const left_out_option_t *h = &options[w.items[a].host];
            for (size_t k = a; k < b; k++)
                w.order[k - a] = w.items[k].pod;
            cost[i] += (double)binpack_first_fit(pods, w.order, b - a, &h->node, h->max_pods,
                                                 w.bins, w.slots) *
                       h->node_price;
        }
    }
    left_out__work_free(&w);
    return 0;
}
