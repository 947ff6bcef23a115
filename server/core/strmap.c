#include "strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "hash.h"

typedef struct strmap_slot {
    const char *key; /* NULL: empty slot */
    void *value;
    uint64_t hash;
} strmap_slot_t;

struct strmap {
    strmap_slot_t *slots;
    size_t cap; /* power of two, >= 8 */
    size_t count;
};

/* hash.h's hash of a NUL-terminated key, in one pass. */
static uint64_t strmap__hash(const char *key) {
    uint64_t h = HASH_FNV_OFFSET;
    for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++)
        h = hash_fnv_byte(h, *p);
    return hash_finish(h);
}

/* Smallest power-of-two capacity keeping count entries at most 3/4 full. */
static size_t strmap__cap_for(size_t count) {
    size_t cap = 8;
    while (cap - cap / 4 < count) {
        if (cap > SIZE_MAX / 4)
            return 0;
        cap *= 2;
    }
    return cap;
}

static int strmap__resize(strmap_t *m, size_t cap) {
    strmap_slot_t *slots = calloc(cap, sizeof(*slots));
    if (slots == NULL)
        return FRUGAL_ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        strmap_slot_t *s = &m->slots[i];
        if (s->key == NULL)
            continue;
        size_t j = (size_t)s->hash & (cap - 1);
        while (slots[j].key != NULL)
            j = (j + 1) & (cap - 1);
        slots[j] = *s;
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

int strmap_create(size_t hint, strmap_t **out) {
    strmap_t *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return FRUGAL_ENOMEM;
    size_t cap = strmap__cap_for(hint);
    if (cap == 0 || (m->slots = calloc(cap, sizeof(*m->slots))) == NULL) {
        free(m);
        return FRUGAL_ENOMEM;
    }
    m->cap = cap;
    *out = m;
    return 0;
}

void strmap_destroy(strmap_t *m) {
    if (m == NULL)
        return;
    free(m->slots);
    free(m);
}

size_t strmap_count(const strmap_t *m) {
    return m->count;
}

int strmap_reserve(strmap_t *m, size_t count) {
    size_t cap = strmap__cap_for(count);
    if (cap == 0)
        return FRUGAL_ENOMEM;
    if (cap <= m->cap)
        return 0;
    return strmap__resize(m, cap);
}

/* Index of key's slot, or of the empty slot ending its probe sequence. */
static size_t strmap__probe(const strmap_t *m, const char *key, uint64_t hash) {
    size_t mask = m->cap - 1;
    size_t i = (size_t)hash & mask;
    for (;;) {
        const strmap_slot_t *s = &m->slots[i];
        if (s->key == NULL || (s->hash == hash && strcmp(s->key, key) == 0))
            return i;
        i = (i + 1) & mask;
    }
}

void *strmap_get(const strmap_t *m, const char *key) {
    size_t i = strmap__probe(m, key, strmap__hash(key));
    return m->slots[i].key != NULL ? m->slots[i].value : NULL;
}

int strmap_put(strmap_t *m, const char *key, void *value, void **old) {
    if (value == NULL)
        return FRUGAL_EINVAL;
    uint64_t hash = strmap__hash(key);
    size_t i = strmap__probe(m, key, hash);
    if (m->slots[i].key != NULL) {
        if (old != NULL)
            *old = m->slots[i].value;
        m->slots[i].key = key;
        m->slots[i].value = value;
        return 0;
    }
    if (old != NULL)
        *old = NULL;
    if (m->count + 1 > m->cap - m->cap / 4) {
        int rc = strmap__resize(m, m->cap * 2);
        if (rc != 0)
            return rc;
        i = strmap__probe(m, key, hash);
    }
    m->slots[i].key = key;
    m->slots[i].value = value;
    m->slots[i].hash = hash;
    m->count++;
    return 0;
}

void *strmap_remove(strmap_t *m, const char *key) {
    size_t mask = m->cap - 1;
    size_t i = strmap__probe(m, key, strmap__hash(key));
    if (m->slots[i].key == NULL)
        return NULL;
    void *value = m->slots[i].value;
    /* Backward-shift deletion: move later members of the cluster into the hole when
     * their home slot does not lie strictly between the hole and their position. */
    size_t hole = i;
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        strmap_slot_t *s = &m->slots[j];
        if (s->key == NULL)
            break;
        size_t home = (size_t)s->hash & mask;
        int stays = (hole <= j) ? (hole < home && home <= j) : (hole < home || home <= j);
        if (!stays) {
            m->slots[hole] = *s;
            hole = j;
        }
    }
    m->slots[hole].key = NULL;
    m->slots[hole].value = NULL;
    m->slots[hole].hash = 0;
    m->count--;
    return value;
}

int strmap_next(const strmap_t *m, size_t *pos, const char **key, void **value) {
    while (*pos < m->cap) {
        const strmap_slot_t *s = &m->slots[(*pos)++];
        if (s->key != NULL) {
            if (key != NULL)
                *key = s->key;
            if (value != NULL)
                *value = s->value;
            return 1;
        }
    }
    return 0;
}
