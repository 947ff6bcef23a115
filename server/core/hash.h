/* The one 64-bit string hash of the tree: FNV-1a over the bytes, then the murmur3
 * finaliser, so that keys differing only in their last characters ("pool-a-17",
 * "pool-a-18") spread over a whole power-of-two table. */
#ifndef FRUGAL_HASH_H
#define FRUGAL_HASH_H

#include <stdint.h>

#define HASH_FNV_OFFSET 14695981039346656037ULL

/* One FNV-1a step: h updated with the byte c. */
static inline uint64_t hash_fnv_byte(uint64_t h, unsigned char c) {
    return (h ^ c) * 1099511628211ULL;
}

/* The murmur3 64-bit finaliser of h. */
static inline uint64_t hash_finish(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

#endif
