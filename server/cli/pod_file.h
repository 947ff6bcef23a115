/* The YAML files `frugal ctl` reads pods from: `propose PODS_FILE` (a list of pods, or
 * a mapping with only `pods:`) and each option's `pods:` of `best-options FILE`. One
 * reader, one strictness: every problem is reported as "FILE:LINE:COL: message", and a
 * key the schema does not have is an error.
 *
 * A pod entry is a mapping of
 *   name          string; the verb names unnamed pods
 *   namespace     string; default "default"
 *   cpu           quantity in milli-units (500m, 2)
 *   memory, gpu   quantities in whole units (64Mi, 1)
 *   node_selector {key: value}
 *   tolerations   [{key, operator, value, effect}], every field optional; an absent
 *                 operator is left unset (Kubernetes reads it as Equal)
 *   owner         the kind of the pod's controller (Job, ReplicaSet, ...); default none
 *   created       its creationTimestamp: RFC 3339 or unix seconds; default unset
 *   count         how many identical pods the entry stands for, 0..POD_FILE_COUNT_MAX,
 *                 default 1
 *
 * The helpers below (load, error, keys, scalar) are the building blocks the verbs use
 * for the rest of their files, so that those report alike. */
#ifndef FRUGAL_POD_FILE_H
#define FRUGAL_POD_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "errors.h"
#include "pod_spec.h"
#include "yaml_tree.h"

#define POD_FILE_COUNT_MAX 100000

typedef struct pod_file_pod {
    pod_spec_t spec; /* strings borrowed from the tree; node_selector and tolerations owned */
    long count;
    const yaml_tree_node_t *at; /* the entry, for the verb's own messages */
} pod_file_pod_t;

typedef struct pod_file_pods {
    pod_file_pod_t *items;
    size_t count;
} pod_file_pods_t;

/* Read and parse the YAML file at path into *root (NULL for an empty file; free with
 * yaml_tree_free). 0; FRUGAL_EIO ("PATH: reason") when it cannot be read;
 * FRUGAL_EINVAL ("PATH:LINE:COL: reason") when it is not YAML; FRUGAL_ENOMEM. */
int pod_file_load(const char *path, yaml_tree_node_t **root, frugal_err_t *err);

/* Set err to FRUGAL_EINVAL with "PATH:LINE:COL: <fmt...>" at node at (0:0 when NULL);
 * returns FRUGAL_EINVAL. */
int pod_file_error(frugal_err_t *err, const char *path, const yaml_tree_node_t *at, const char *fmt,
                   ...) __attribute__((format(printf, 4, 5)));

/* 0 when map is a mapping whose keys are all among keys (NULL-terminated); else
 * FRUGAL_EINVAL: "expected a mapping" or "unknown key K (expected one of a, b, ...)". */
int pod_file_check_keys(const char *path, const yaml_tree_node_t *map, const char *const *keys,
                        frugal_err_t *err);

/* *out = the text of map's scalar value under key, NULL when the key is absent or null.
 * 0, or FRUGAL_EINVAL ("KEY: expected a scalar"). */
int pod_file_scalar(const char *path, const yaml_tree_node_t *map, const char *key,
                    const char **out, frugal_err_t *err);

/* pod_file_scalar, then checked as a Kubernetes quantity (in milli-units when milli,
 * else whole units) that is not negative: FRUGAL_EINVAL ("KEY: invalid quantity \"X\""). */
int pod_file_quantity(const char *path, const yaml_tree_node_t *map, const char *key, bool milli,
                      const char **out, frugal_err_t *err);

/* Read list, a sequence of pod entries, into *out (empty when list is NULL or null).
 * 0, FRUGAL_EINVAL at the first problem (nothing returned), FRUGAL_ENOMEM. The result
 * borrows strings from the tree: free it before the tree. */
int pod_file_read_pods(const char *path, const yaml_tree_node_t *list, pod_file_pods_t *out,
                       frugal_err_t *err);

/* Pack copy k of entry e (pod_spec_pack): when e->count > 1 the copy is named NAME-k,
 * so that the copies are distinct pods, as CA sends them. */
int pod_file_pack_copy(pod_file_pod_t *e, long k, uint8_t **out, size_t *len, frugal_err_t *err);

/* Free what pod_file_read_pods returned; leaves *pods empty. */
void pod_file_pods_free(pod_file_pods_t *pods);

#endif
