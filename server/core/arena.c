/* Bump allocator: see arena.h. */
#include "arena.h"

#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    max_align_t data[]; /* aligns the first allocation for any type */
};

#define ARENA_ALIGN (alignof(max_align_t))

void *arena_alloc(arena_t *a, size_t n) {
    if (n > SIZE_MAX - ARENA_ALIGN - sizeof(arena_block_t))
        return NULL;
    n = n == 0 ? ARENA_ALIGN : (n + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1);
    arena_block_t *b = a->head;
    if (b != NULL && b->cap - b->used >= n) {
        void *p = (char *)b->data + b->used;
        b->used += n;
        return p;
    }
    size_t block = a->block_size != 0 ? a->block_size : ARENA_BLOCK_DEFAULT;
    bool own = n > block; /* too big to share: a block of its own */
    size_t cap = own ? n : block;
    arena_block_t *nb = malloc(sizeof(*nb) + cap);
    if (nb == NULL)
        return NULL;
    nb->cap = cap;
    nb->used = n;
    if (own && b != NULL) {
        /* Behind the head, which keeps filling its free room. */
        nb->next = b->next;
        b->next = nb;
    } else {
        nb->next = b;
        a->head = nb;
    }
    return nb->data;
}

void *arena_calloc(arena_t *a, size_t count, size_t size) {
    if (size != 0 && count > SIZE_MAX / size)
        return NULL;
    void *p = arena_alloc(a, count * size);
    if (p != NULL)
        memset(p, 0, count * size);
    return p;
}

char *arena_strndup(arena_t *a, const void *s, size_t n) {
    if (n == SIZE_MAX)
        return NULL;
    char *p = arena_alloc(a, n + 1);
    if (p == NULL)
        return NULL;
    if (n > 0)
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *arena_strdup(arena_t *a, const char *s) {
    return arena_strndup(a, s, strlen(s));
}

void arena_free(arena_t *a) {
    for (arena_block_t *b = a->head, *next; b != NULL; b = next) {
        next = b->next;
        free(b);
    }
    a->head = NULL;
}
