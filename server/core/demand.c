/* The bounded memory of recent pods: see demand.h. */
#include "demand.h"

#include <string.h>

#define DEMAND__PROBES 8

void demand_init(demand_memory_t *m) {
    atomic_init(&m->head, 0);
    atomic_init(&m->newest_ms, -1);
    for (size_t i = 0; i < DEMAND_SLOTS; i++) {
        demand_slot_t *s = &m->slots[i];
        atomic_init(&s->cpu_milli, 0);
        atomic_init(&s->memory_bytes, 0);
        atomic_init(&s->gpu, 0);
        atomic_init(&s->lifetime, 0);
        atomic_init(&s->restricted, 0);
        atomic_init(&s->used, 0);
        atomic_init(&s->seen_ms, -1);
        atomic_init(&s->identity, 0);
    }
    for (size_t i = 0; i < DEMAND_INDEX; i++) {
        atomic_init(&m->index_identity[i], 0);
        atomic_init(&m->index_slot[i], 0);
    }
}

/* Whether index entry e still names the slot that holds its identity. */
static bool demand__entry_live(const demand_memory_t *m, size_t e, uint64_t identity) {
    uint32_t slot = atomic_load_explicit(&m->index_slot[e], memory_order_relaxed);
    return slot < DEMAND_SLOTS &&
           atomic_load_explicit(&m->slots[slot].identity, memory_order_relaxed) == identity;
}

/* The slot that holds identity, or -1 when the memory does not hold it. */
static int64_t demand__find(const demand_memory_t *m, uint64_t identity) {
    for (size_t p = 0; p < DEMAND__PROBES; p++) {
        size_t e = (size_t)(identity + p) & (DEMAND_INDEX - 1);
        uint64_t at = atomic_load_explicit(&m->index_identity[e], memory_order_relaxed);
        if (at == 0)
            return -1;
        if (at == identity && demand__entry_live(m, e, identity))
            return atomic_load_explicit(&m->index_slot[e], memory_order_relaxed);
    }
    return -1;
}

/* A pod remembered before comes again: what this call knows and the first did not (it
 * came first through a proposal, or a later request restricts it) is added. */
static void demand__complete(demand_memory_t *m, size_t slot, const demand_batch_t *b, size_t i) {
    demand_slot_t *s = &m->slots[slot];
    if (b->restricted != NULL && b->restricted[i])
        atomic_store_explicit(&s->restricted, 1, memory_order_relaxed);
    if (b->lifetimes != NULL && b->lifetimes[i] != POD_LIFETIME_UNKNOWN &&
        atomic_load_explicit(&s->lifetime, memory_order_relaxed) == POD_LIFETIME_UNKNOWN)
        atomic_store_explicit(&s->lifetime, (uint8_t)b->lifetimes[i], memory_order_relaxed);
}

/* Point the index at slot for identity: the first free, stale or own entry among the
 * probes, else the first probe (whatever pod it names is forgotten: it may be counted
 * again if it comes back). */
static void demand__index(demand_memory_t *m, uint64_t identity, uint32_t slot) {
    size_t e = (size_t)identity & (DEMAND_INDEX - 1);
    for (size_t p = 0; p < DEMAND__PROBES; p++) {
        size_t q = (size_t)(identity + p) & (DEMAND_INDEX - 1);
        uint64_t at = atomic_load_explicit(&m->index_identity[q], memory_order_relaxed);
        if (at == 0 || at == identity || !demand__entry_live(m, q, at)) {
            e = q;
            break;
        }
    }
    atomic_store_explicit(&m->index_slot[e], slot, memory_order_relaxed);
    atomic_store_explicit(&m->index_identity[e], identity, memory_order_relaxed);
}

void demand_record(demand_memory_t *m, const resources_t *pods, const pod_lifetime_t *lifetimes,
                   size_t n) {
    demand_batch_t b = {pods, lifetimes, NULL, NULL, NULL, n, -1};
    demand_remember(m, &b);
}

/* Raise m's newest arrival to at least t. */
static void demand__newest(demand_memory_t *m, int64_t t) {
    int64_t cur = atomic_load_explicit(&m->newest_ms, memory_order_relaxed);
    while (t > cur && !atomic_compare_exchange_weak_explicit(
                          &m->newest_ms, &cur, t, memory_order_relaxed, memory_order_relaxed))
        ;
}

/* When pod i of b arrived (-1: not known). */
static int64_t demand__arrival(const demand_batch_t *b, size_t i) {
    return b->seen_ms != NULL && b->seen_ms[i] >= 0 ? b->seen_ms[i] : b->at_ms;
}

void demand_remember(demand_memory_t *m, const demand_batch_t *b) {
    /* Only the last DEMAND_SLOTS pods of a large batch would survive anyway. */
    size_t skip = b->n > DEMAND_SLOTS ? b->n - DEMAND_SLOTS : 0;
    /* Held up: no arrival before the latest remembered one, nor more than
     * DEMAND_HELD_UP_MS before the latest of this batch. */
    int64_t floor = atomic_load_explicit(&m->newest_ms, memory_order_relaxed), latest = -1;
    for (size_t i = skip; i < b->n; i++) {
        int64_t t = demand__arrival(b, i);
        latest = t > latest ? t : latest;
    }
    if (latest >= 0 && latest - DEMAND_HELD_UP_MS > floor)
        floor = latest - DEMAND_HELD_UP_MS;
    for (size_t i = skip; i < b->n; i++) {
        uint64_t identity = b->identities != NULL ? b->identities[i] : 0;
        int64_t known = identity != 0 ? demand__find(m, identity) : -1;
        if (known >= 0) {
            demand__complete(m, (size_t)known, b, i);
            continue;
        }
        uint64_t at = atomic_fetch_add_explicit(&m->head, 1, memory_order_relaxed);
        uint32_t slot = (uint32_t)(at % DEMAND_SLOTS);
        demand_slot_t *s = &m->slots[slot];
        atomic_store_explicit(&s->cpu_milli, b->pods[i].cpu_milli, memory_order_relaxed);
        atomic_store_explicit(&s->memory_bytes, b->pods[i].memory_bytes, memory_order_relaxed);
        atomic_store_explicit(&s->gpu, b->pods[i].gpu, memory_order_relaxed);
        atomic_store_explicit(&s->lifetime,
                              (uint8_t)(b->lifetimes ? b->lifetimes[i] : POD_LIFETIME_UNKNOWN),
                              memory_order_relaxed);
        atomic_store_explicit(&s->restricted, (uint8_t)(b->restricted != NULL && b->restricted[i]),
                              memory_order_relaxed);
        int64_t seen = demand__arrival(b, i);
        if (seen >= 0 && seen < floor)
            seen = floor;
        atomic_store_explicit(&s->seen_ms, seen, memory_order_relaxed);
        atomic_store_explicit(&s->identity, identity, memory_order_relaxed);
        atomic_store_explicit(&s->used, 1, memory_order_relaxed);
        if (identity != 0)
            demand__index(m, identity, slot);
    }
    demand__newest(m, latest);
}

int64_t demand_request_ms(const int64_t *arrivals_ms, size_t n, int64_t otherwise_ms) {
    int64_t latest = -1;
    for (size_t i = 0; i < n; i++)
        latest = arrivals_ms[i] > latest ? arrivals_ms[i] : latest;
    return latest >= 0 ? latest : otherwise_ms;
}

void demand_summarize(const demand_memory_t *m, demand_summary_t *out) {
    memset(out, 0, sizeof(*out));
    out->oldest_ms = INT64_MAX;
    out->newest_ms = -1;
    for (size_t i = 0; i < DEMAND_SLOTS; i++) {
        const demand_slot_t *s = &m->slots[i];
        if (!atomic_load_explicit(&s->used, memory_order_relaxed))
            continue;
        double cpu = (double)atomic_load_explicit(&s->cpu_milli, memory_order_relaxed) / 1000.0;
        double mem = (double)atomic_load_explicit(&s->memory_bytes, memory_order_relaxed) /
                     (1024.0 * 1024.0 * 1024.0);
        out->pods++;
        out->cpu_cores += cpu;
        out->memory_gib += mem;
        int64_t gpu = atomic_load_explicit(&s->gpu, memory_order_relaxed);
        out->gpu += (double)gpu;
        out->gpu_pods += gpu > 0;
        out->gpu_restricted +=
            gpu > 0 && atomic_load_explicit(&s->restricted, memory_order_relaxed) != 0;
        int64_t seen = atomic_load_explicit(&s->seen_ms, memory_order_relaxed);
        if (seen >= 0) {
            out->timed_pods += gpu == 0;
            out->timed_gpu_pods += gpu > 0;
            out->oldest_ms = seen < out->oldest_ms ? seen : out->oldest_ms;
            out->newest_ms = seen > out->newest_ms ? seen : out->newest_ms;
        }
        if (atomic_load_explicit(&s->lifetime, memory_order_relaxed) != POD_LIFETIME_SHORT) {
            out->long_pods++;
            out->long_cpu_cores += cpu;
            out->long_memory_gib += mem;
        }
    }
    if (out->pods > 0)
        out->long_share = (double)out->long_pods / (double)out->pods;
}
