/* Label and taint lists: the key=value maps (labels, node selectors, extra resources) and
 * taint lists of node groups, pods and proposals. A list owns its strings; a cleared list
 * is empty and may be reused. "Sorted" lists are kept ordered by kv_compare or
 * taint_compare with unique entries. Names are not validated here (see k8s_name.h). */
#ifndef FRUGAL_LABELS_H
#define FRUGAL_LABELS_H

#include <stdbool.h>
#include <stddef.h>

#include "errors.h"

typedef struct kv {
    char *key;
    char *value;
} kv_t;

typedef struct kv_list {
    kv_t *items; /* sorted by key, keys unique */
    size_t count;
} kv_list_t;

typedef struct taint {
    char *key;
    char *value;  /* "" when absent */
    char *effect; /* NoSchedule | PreferNoSchedule | NoExecute */
} taint_t;

typedef struct taint_list {
    taint_t *items;
    size_t count;
} taint_list_t;

/* *dst = a copy of src (NULL stays NULL). 0 or FRUGAL_ENOMEM. */
int labels_strdup(char **dst, const char *src);

/* Free every entry and leave l empty. */
void kv_list_clear(kv_list_t *l);
/* *dst = a deep copy of src, same order (dst's old content is not freed). 0 or
 * FRUGAL_ENOMEM, with dst left empty. */
int kv_list_copy(kv_list_t *dst, const kv_list_t *src);
/* Position of key in the sorted list l, or where it would be inserted (*found false). */
size_t kv_list_find(const kv_list_t *l, const char *key, bool *found);
/* Insert a copy of key=value into the sorted list l. 0; 1 when key is there with
 * another value (l unchanged); FRUGAL_ENOMEM (l unchanged). */
int kv_list_put(kv_list_t *l, const char *key, const char *value);
/* Whether a and b hold the same keys and values in the same order. */
bool kv_list_equal(const kv_list_t *a, const kv_list_t *b);
/* qsort comparator of kv_t by key. */
int kv_compare(const void *a, const void *b);

/* Free every entry and leave l empty. */
void taint_list_clear(taint_list_t *l);
/* *dst = a deep copy of src, same order (dst's old content is not freed). 0 or
 * FRUGAL_ENOMEM, with dst left empty. */
int taint_list_copy(taint_list_t *dst, const taint_list_t *src);
/* Order of taints by key, then value, then effect (all non-NULL). */
int taint_compare(const taint_t *a, const taint_t *b);
/* Insert a copy of the taint into the sorted list l unless it is there. 0 or
 * FRUGAL_ENOMEM (l unchanged). */
int taint_list_put(taint_list_t *l, const char *key, const char *value, const char *effect);
/* Whether a and b hold the same taints in the same order. */
bool taint_list_equal(const taint_list_t *a, const taint_list_t *b);
/* Whether l holds a taint of key with effect, whatever its value: Kubernetes allows a
 * node one taint per key and effect, so a second one is a duplicate. */
bool taint_list_has(const taint_list_t *l, const char *key, const char *effect);

#endif
