/* The monotonic clock (CLOCK_MONOTONIC), the one every deadline, timeout and duration
 * measurement of frugal is taken on: it never jumps with the wall clock. The wall clock
 * only where a time is set beside times from elsewhere (pods' creation times). */
#ifndef FRUGAL_CLOCK_H
#define FRUGAL_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Milliseconds on the monotonic clock (arbitrary origin, shared by every process of
 * the machine, so a forked child compares it with its parent's). */
int64_t clock_mono_ms(void);

/* Milliseconds on the monotonic clock to the nanosecond (a fraction): for measuring
 * durations. */
double clock_mono_ms_exact(void);

/* Milliseconds since the epoch on the wall clock (CLOCK_REALTIME). */
int64_t clock_wall_ms(void);

/* The instant ms milliseconds (>= 0) from now on clock, as the absolute time pthread's
 * timed waits take (on the clock their condition or mutex waits on). */
struct timespec clock_timespec_in(clockid_t clock, int64_t ms);

#endif
