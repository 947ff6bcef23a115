/* The replay's deterministic random numbers: splitmix64 (replay_rng.h). */
#include "replay_rng.h"

void replay_rng_seed(replay_rng_t *r, uint64_t seed) {
    r->state = seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
}

uint64_t replay_rng_next(replay_rng_t *r) {
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

double replay_rng_unit(replay_rng_t *r) {
    return (double)(replay_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

size_t replay_rng_below(replay_rng_t *r, size_t n) {
    return (size_t)(replay_rng_unit(r) * (double)n);
}
