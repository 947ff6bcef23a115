/* A bump (arena) allocator: many small allocations that all die together, freed at
 * once. Used where a request or a file is turned into many pieces with one lifetime
 * (the expander's streaming decoder, the CLI's request builders).
 *
 * Allocations come from blocks of a.block_size bytes (a bigger one gets a block of its
 * own, so the current block keeps its free room); every pointer is aligned for any
 * type (max_align_t). Not thread-safe: one arena per owner. */
#ifndef FRUGAL_ARENA_H
#define FRUGAL_ARENA_H

#include <stddef.h>

typedef struct arena_block arena_block_t;

typedef struct arena {
    arena_block_t *head; /* the block being filled first, then older ones */
    size_t block_size;   /* 0 reads as ARENA_BLOCK_DEFAULT */
} arena_t;

#define ARENA_BLOCK_DEFAULT (64 * 1024)

/* An empty arena ({0} is one too, with the default block size). */
#define ARENA_INIT                                                                                 \
    { NULL, 0 }

/* n bytes (n == 0 gives a valid unique pointer), uninitialised; NULL when out of
 * memory (the arena is then unchanged). */
void *arena_alloc(arena_t *a, size_t n);

/* count * size zeroed bytes; NULL when out of memory or when the product overflows. */
void *arena_calloc(arena_t *a, size_t count, size_t size);

/* A NUL-terminated copy of the n bytes at s (which may hold NULs); NULL when out of
 * memory. */
char *arena_strndup(arena_t *a, const void *s, size_t n);

/* A copy of the string s; NULL when out of memory. */
char *arena_strdup(arena_t *a, const char *s);

/* Free every allocation at once; the arena is empty again and may be reused. */
void arena_free(arena_t *a);

#endif
