/* The replay's deterministic random numbers: splitmix64 (replay_rng.h). */
#include "replay_rng.h"

static uint64_t replay_rng__mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* The seed is mixed before it becomes the state: the state steps by the same constant
 * at every draw, so a state of seed x constant would make seed s + 1 replay seed s's
 * numbers from its second draw on, and nearby seeds the same pods. */
void replay_rng_seed(replay_rng_t *r, uint64_t seed) {
    r->state = replay_rng__mix(seed + 0x2545F4914F6CDD1DULL);
}

uint64_t replay_rng_next(replay_rng_t *r) {
    return replay_rng__mix(r->state += 0x9E3779B97F4A7C15ULL);
}

double replay_rng_unit(replay_rng_t *r) {
    return (double)(replay_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

size_t replay_rng_below(replay_rng_t *r, size_t n) {
    return (size_t)(replay_rng_unit(r) * (double)n);
}
