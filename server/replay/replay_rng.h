/* The replay's deterministic random numbers: every random draw of a replay comes from
 * one replay_rng_t seeded by the run's seed (replay.h). */
#ifndef FRUGAL_REPLAY_RNG_H
#define FRUGAL_REPLAY_RNG_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64: tiny, fast, and good enough for sampling workloads. */
typedef struct replay_rng {
    uint64_t state;
} replay_rng_t;

void replay_rng_seed(replay_rng_t *r, uint64_t seed);
uint64_t replay_rng_next(replay_rng_t *r);
/* Uniform in [0, 1). */
double replay_rng_unit(replay_rng_t *r);
/* Uniform in [0, n); n > 0. */
size_t replay_rng_below(replay_rng_t *r, size_t n);

#endif
