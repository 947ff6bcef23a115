/* A small open-addressing hash map from NUL-terminated string keys to void pointers:
 * the O(1) lookups of node groups by id and of instances by provider id.
 *
 * Keys are borrowed, not copied: a key must stay alive and unchanged while it is in the
 * map (the cluster points them at strings its groups own). Linear probing with
 * backward-shift deletion, so removals leave no tombstones and lookups stay short.
 * Not thread-safe: the caller locks. */
#ifndef FRUGAL_STRMAP_H
#define FRUGAL_STRMAP_H

#include <stddef.h>

typedef struct strmap strmap_t;

/* An empty map sized for about hint entries. FRUGAL_ENOMEM on allocation failure. */
int strmap_create(size_t hint, strmap_t **out);
void strmap_destroy(strmap_t *m);

size_t strmap_count(const strmap_t *m);

/* Grow so that the map holds count entries without allocating again: after
 * strmap_reserve(m, n) returns 0, strmap_put of new keys cannot fail while the map holds
 * at most n entries. FRUGAL_ENOMEM leaves the map unchanged. */
int strmap_reserve(strmap_t *m, size_t count);

/* The value stored under key, NULL when absent. */
void *strmap_get(const strmap_t *m, const char *key);

/* Insert key, or replace the key pointer and value of an equal key (then *old, when not
 * NULL, receives the previous value, else NULL). Returns 0 or FRUGAL_ENOMEM (map
 * unchanged); values may not be NULL (FRUGAL_EINVAL). */
int strmap_put(strmap_t *m, const char *key, void *value, void **old);

/* Remove key; returns its value, NULL when it was absent. */
void *strmap_remove(strmap_t *m, const char *key);

/* Iterate: start with *pos = 0; returns 0 at the end. Order is unspecified; the map must
 * not change during the iteration. */
int strmap_next(const strmap_t *m, size_t *pos, const char **key, void **value);

#endif
