/* Label and taint lists: see labels.h. */
#include <stdlib.h>
#include <string.h>

#include "labels.h"

int labels_strdup(char **dst, const char *src) {
    *dst = NULL;
    if (src == NULL)
        return 0;
    *dst = strdup(src);
    return *dst != NULL ? 0 : FRUGAL_ENOMEM;
}

void kv_list_clear(kv_list_t *l) {
    for (size_t i = 0; i < l->count; i++) {
        free(l->items[i].key);
        free(l->items[i].value);
    }
    free(l->items);
    l->items = NULL;
    l->count = 0;
}

int kv_list_copy(kv_list_t *dst, const kv_list_t *src) {
    memset(dst, 0, sizeof(*dst));
    if (src->count == 0)
        return 0;
    dst->items = calloc(src->count, sizeof(kv_t));
    if (dst->items == NULL)
        return FRUGAL_ENOMEM;
    for (size_t i = 0; i < src->count; i++) {
        dst->count = i + 1;
        if (labels_strdup(&dst->items[i].key, src->items[i].key) != 0 ||
            labels_strdup(&dst->items[i].value, src->items[i].value) != 0) {
            kv_list_clear(dst);
            return FRUGAL_ENOMEM;
        }
    }
    return 0;
}

size_t kv_list_find(const kv_list_t *l, const char *key, bool *found) {
    size_t lo = 0, hi = l->count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(l->items[mid].key, key);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

int kv_list_put(kv_list_t *l, const char *key, const char *value) {
    bool found;
    size_t at = kv_list_find(l, key, &found);
    if (found)
        return strcmp(l->items[at].value, value) == 0 ? 0 : 1;
    kv_t *items = realloc(l->items, (l->count + 1) * sizeof(*items));
    if (items == NULL)
        return FRUGAL_ENOMEM;
    l->items = items;
    char *k = strdup(key), *v = strdup(value);
    if (k == NULL || v == NULL) {
        free(k);
        free(v);
        return FRUGAL_ENOMEM;
    }
    memmove(&items[at + 1], &items[at], (l->count - at) * sizeof(*items));
    items[at].key = k;
    items[at].value = v;
    l->count++;
    return 0;
}

bool kv_list_equal(const kv_list_t *a, const kv_list_t *b) {
    if (a->count != b->count)
        return false;
    for (size_t i = 0; i < a->count; i++)
        if (strcmp(a->items[i].key, b->items[i].key) != 0 ||
            strcmp(a->items[i].value, b->items[i].value) != 0)
            return false;
    return true;
}

int kv_compare(const void *a, const void *b) {
    return strcmp(((const kv_t *)a)->key, ((const kv_t *)b)->key);
}

void taint_list_clear(taint_list_t *l) {
    for (size_t i = 0; i < l->count; i++) {
        free(l->items[i].key);
        free(l->items[i].value);
        free(l->items[i].effect);
    }
    free(l->items);
    l->items = NULL;
    l->count = 0;
}

int taint_list_copy(taint_list_t *dst, const taint_list_t *src) {
    memset(dst, 0, sizeof(*dst));
    if (src->count == 0)
        return 0;
    dst->items = calloc(src->count, sizeof(taint_t));
    if (dst->items == NULL)
        return FRUGAL_ENOMEM;
    for (size_t i = 0; i < src->count; i++) {
        dst->count = i + 1;
        if (labels_strdup(&dst->items[i].key, src->items[i].key) != 0 ||
            labels_strdup(&dst->items[i].value, src->items[i].value) != 0 ||
            labels_strdup(&dst->items[i].effect, src->items[i].effect) != 0) {
            taint_list_clear(dst);
            return FRUGAL_ENOMEM;
        }
    }
    return 0;
}

int taint_compare(const taint_t *a, const taint_t *b) {
    int c = strcmp(a->key, b->key);
    if (c == 0)
        c = strcmp(a->value, b->value);
    if (c == 0)
        c = strcmp(a->effect, b->effect);
    return c;
}

int taint_list_put(taint_list_t *l, const char *key, const char *value, const char *effect) {
    taint_t t = {(char *)key, (char *)value, (char *)effect};
    size_t at = 0;
    while (at < l->count) {
        int c = taint_compare(&l->items[at], &t);
        if (c == 0)
            return 0;
        if (c > 0)
            break;
        at++;
    }
    taint_t *items = realloc(l->items, (l->count + 1) * sizeof(*items));
    if (items == NULL)
        return FRUGAL_ENOMEM;
    l->items = items;
    taint_t copy = {strdup(key), strdup(value), strdup(effect)};
    if (copy.key == NULL || copy.value == NULL || copy.effect == NULL) {
        free(copy.key);
        free(copy.value);
        free(copy.effect);
        return FRUGAL_ENOMEM;
    }
    memmove(&items[at + 1], &items[at], (l->count - at) * sizeof(*items));
    items[at] = copy;
    l->count++;
    return 0;
}

bool taint_list_equal(const taint_list_t *a, const taint_list_t *b) {
    if (a->count != b->count)
        return false;
    for (size_t i = 0; i < a->count; i++)
        if (taint_compare(&a->items[i], &b->items[i]) != 0)
            return false;
    return true;
}

bool taint_list_has(const taint_list_t *l, const char *key, const char *effect) {
    for (size_t i = 0; i < l->count; i++)
        if (strcmp(l->items[i].key, key) == 0 && strcmp(l->items[i].effect, effect) == 0)
            return true;
    return false;
}
