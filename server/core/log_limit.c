#include "log_limit.h"

#include "clock.h"

bool log_limit_due(log_limit_t *l, int64_t interval_ms, long *held_back) {
    int64_t now = clock_mono_ms();
    int64_t next = atomic_load(&l->next_ms);
    if (now < next || !atomic_compare_exchange_strong(&l->next_ms, &next, now + interval_ms)) {
        atomic_fetch_add(&l->held_back, 1);
        return false;
    }
    long held = atomic_exchange(&l->held_back, 0);
    if (held_back != NULL)
        *held_back = held;
    return true;
}
