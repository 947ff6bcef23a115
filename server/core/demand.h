/* The bounded memory of recent pods that the demand-fit ranking reads (docs/ranking.md):
 * the effective requests and lifetimes of the last DEMAND_SLOTS distinct pods frugal
 * saw in BestOptions and proposals, summarised as the cluster's recent demand (GiB per
 * core of all of them and of the long-lived ones, share of long-lived pods, and how
 * fast pods came lately).
 *
 * Thread-safe without locks: BestOptions runs on several gRPC worker threads at once.
 * A writer reserves each slot with an atomic add on the head and stores each field
 * with a relaxed atomic store; a reader sums the slots with relaxed loads. A summary
 * taken while a writer is halfway may mix one slot's old and new fields: the figures
 * are statistics over thousands of pods, and one torn slot moves them by nothing that
 * matters. The memory never grows: it is one fixed array, zeroed at init. */
#ifndef FRUGAL_DEMAND_H
#define FRUGAL_DEMAND_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pod.h"
#include "quantity.h"

#define DEMAND_SLOTS 4096
#define DEMAND_INDEX (2 * DEMAND_SLOTS) /* entries of the identity index, a power of two */
/* A pod created more than this before the latest pod of its request was held up (it
 * stayed pending, or a server that just started is asked about it): it counts as
 * arriving this long before, so that its own time does not stretch the rate's window. */
#define DEMAND_HELD_UP_MS (3600LL * 1000)

/* One remembered pod. used is 0 for a never-written slot. */
typedef struct demand_slot {
    _Atomic int64_t cpu_milli;
    _Atomic int64_t memory_bytes;
    _Atomic int64_t gpu;
    _Atomic uint8_t lifetime;   /* pod_lifetime_t */
    _Atomic uint8_t restricted; /* a GPU pod some GPU group of its request could not host */
    _Atomic uint8_t used;
    _Atomic int64_t seen_ms;   /* when it arrived, on the caller's clock; -1: not known */
    _Atomic uint64_t identity; /* pod_identity; 0: none */
} demand_slot_t;

typedef struct demand_memory {
    _Atomic uint64_t head;     /* slots written so far; the next goes to head % DEMAND_SLOTS */
    _Atomic int64_t newest_ms; /* the latest arrival remembered; -1: none */
    demand_slot_t slots[DEMAND_SLOTS];
    /* Which slot holds each remembered identity, so that a pod asked about again (it
     * stayed pending) is not remembered twice: open addressing, a few probes from the
     * identity's own bits. An entry whose slot has been overwritten since is stale,
     * and the next insert takes it. Races may remember a pod twice: statistics. */
    _Atomic uint64_t index_identity[DEMAND_INDEX];
    _Atomic uint32_t index_slot[DEMAND_INDEX];
} demand_memory_t;

/* What the ranking reads. */
typedef struct demand_summary {
    size_t pods;      /* remembered pods (<= DEMAND_SLOTS) */
    double cpu_cores; /* their summed requests */
    double memory_gib;
    double gpu;
    size_t gpu_pods;       /* of them, the pods that request GPUs ... */
    size_t gpu_restricted; /* ... and of those, the ones restricted to some GPU groups */
    double long_share;     /* share of pods whose lifetime is long or unknown */
    size_t long_pods;      /* of them, the pods whose lifetime is long or unknown ... */
    double long_cpu_cores; /* ... and their summed requests */
    double long_memory_gib;
    size_t timed_pods;     /* pods seen at a known time, without GPUs ... */
    size_t timed_gpu_pods; /* ... and with */
    int64_t oldest_ms;     /* the earliest such time; INT64_MAX when none */
    int64_t newest_ms;     /* the latest; -1 when none */
} demand_summary_t;

/* Zero m (no pod seen). */
void demand_init(demand_memory_t *m);

/* Remember n pods (lifetimes may be NULL: unknown), overwriting the oldest ones. */
void demand_record(demand_memory_t *m, const resources_t *pods, const pod_lifetime_t *lifetimes,
                   size_t n);

/* Pods to remember, in parallel arrays of n entries; every array but pods may be NULL. */
typedef struct demand_batch {
    const resources_t *pods;
    const pod_lifetime_t *lifetimes; /* NULL: unknown */
    const bool *restricted;          /* restricted to some of the GPU groups its request offered;
                                      * NULL: none is */
    const int64_t *seen_ms;          /* when each arrived on the caller's clock; NULL, or a negative
                                      * entry: at at_ms. A pod held up counts as arriving no
                                      * earlier than the latest pod remembered before, nor
                                      * DEMAND_HELD_UP_MS before the latest of the batch */
    const uint64_t *identities;      /* pod_identity; a pod already remembered under its (non-zero)
                                      * identity is not remembered again (its restricted mark and
                                      * a lifetime it lacked are added); NULL: none has one */
    size_t n;
    int64_t at_ms; /* -1: not known */
} demand_batch_t;

/* Remember the pods of b, overwriting the oldest ones. */
void demand_remember(demand_memory_t *m, const demand_batch_t *b);

/* When a request whose n pods arrived at arrivals_ms (-1: not known) came, on the pods'
 * clock: at its latest pod; otherwise_ms when none has a time. */
int64_t demand_request_ms(const int64_t *arrivals_ms, size_t n, int64_t otherwise_ms);

/* Summarise what m remembers into *out. */
void demand_summarize(const demand_memory_t *m, demand_summary_t *out);

#endif
