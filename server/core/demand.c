/* The bounded memory of recent pods: see demand.h. */
#include "demand.h"

#include <string.h>

void demand_init(demand_memory_t *m) {
    atomic_init(&m->head, 0);
    for (size_t i = 0; i < DEMAND_SLOTS; i++) {
        demand_slot_t *s = &m->slots[i];
        atomic_init(&s->cpu_milli, 0);
        atomic_init(&s->memory_bytes, 0);
        atomic_init(&s->gpu, 0);
        atomic_init(&s->lifetime, 0);
        atomic_init(&s->restricted, 0);
        atomic_init(&s->used, 0);
        atomic_init(&s->seen_ms, -1);
    }
}

void demand_record(demand_memory_t *m, const resources_t *pods, const pod_lifetime_t *lifetimes,
                   size_t n) {
    demand_record_at(m, pods, lifetimes, NULL, NULL, n, -1);
}

void demand_record_at(demand_memory_t *m, const resources_t *pods, const pod_lifetime_t *lifetimes,
                      const bool *restricted, const int64_t *seen_ms, size_t n, int64_t at_ms) {
    if (n == 0)
        return;
    /* Only the last DEMAND_SLOTS pods of a large batch would survive anyway. */
    size_t skip = n > DEMAND_SLOTS ? n - DEMAND_SLOTS : 0;
    uint64_t at = atomic_fetch_add_explicit(&m->head, n - skip, memory_order_relaxed);
    for (size_t i = skip; i < n; i++, at++) {
        demand_slot_t *s = &m->slots[at % DEMAND_SLOTS];
        atomic_store_explicit(&s->cpu_milli, pods[i].cpu_milli, memory_order_relaxed);
        atomic_store_explicit(&s->memory_bytes, pods[i].memory_bytes, memory_order_relaxed);
        atomic_store_explicit(&s->gpu, pods[i].gpu, memory_order_relaxed);
        atomic_store_explicit(&s->lifetime,
                              (uint8_t)(lifetimes ? lifetimes[i] : POD_LIFETIME_UNKNOWN),
                              memory_order_relaxed);
        atomic_store_explicit(&s->restricted, (uint8_t)(restricted != NULL && restricted[i]),
                              memory_order_relaxed);
        int64_t seen = seen_ms != NULL && seen_ms[i] >= 0 ? seen_ms[i] : at_ms;
        atomic_store_explicit(&s->seen_ms, seen, memory_order_relaxed);
        atomic_store_explicit(&s->used, 1, memory_order_relaxed);
    }
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
