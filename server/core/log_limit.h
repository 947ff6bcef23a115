/* At most one log line per interval from one place, for events any peer can cause many
 * times over (a failed TLS handshake, a message gRPC refused): the line that is logged
 * carries how many were held back since the last one. Lock-free, safe from any thread. */
#ifndef FRUGAL_LOG_LIMIT_H
#define FRUGAL_LOG_LIMIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct log_limit {
    _Atomic int64_t next_ms; /* monotonic ms from which the next line may be logged */
    atomic_long held_back;
} log_limit_t;

/* Whether this event is logged now (then *held_back, when not NULL, gets the events
 * not logged since the last one), or counted and held back: one per interval_ms. A
 * zeroed log_limit_t logs its first event. */
bool log_limit_due(log_limit_t *l, int64_t interval_ms, long *held_back);

#endif
