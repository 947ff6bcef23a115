/* The data model: a node group and its instances as the cluster publishes them, the
 * state file stores them and the providers change them. Plain structs that own their
 * members, with their deep copies and releases; no locks, no I/O. */
#ifndef FRUGAL_GROUP_H
#define FRUGAL_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "errors.h"

/* Values equal the InstanceState enum of CA's externalgrpc protocol. */
typedef enum instance_state {
    INSTANCE_RUNNING = 1,
    INSTANCE_CREATING = 2,
    INSTANCE_DELETING = 3,
} instance_state_t;

typedef struct instance {
    char *id; /* provider id: frugal://<group>/<name> for the simulated provider */
    instance_state_t state;
    int64_t state_since_ms; /* wall clock (ms since the epoch) when it entered state */
    char *error_code;       /* NULL when no error; with CREATING: the scale-up failed */
    char *error_message;
    int32_t error_class; /* CA: 1 = out of resources, 99 = other */
} instance_t;

typedef struct group {
    group_spec_t spec; /* owned deep copy */
    int32_t min_size;
    int32_t max_size;
    bool managed; /* false: counted, never scaled, not listed to CA */
    bool autoprovisioned;
    bool exists; /* false: a theoretical NAP group, created by its first increase */
    int32_t target_size;
    instance_t *instances;
    size_t instances_count;
    uint64_t next_seq;      /* number of the next instance name */
    int64_t empty_since_ms; /* NAP: when the group last became empty, 0 when not empty */
    group_options_t options;
} group_t;

/* Deep copies and releases (a spec's: group_spec_copy, group_spec_clear in config.h).
 * A copy that fails returns FRUGAL_ENOMEM and leaves dst zeroed; *_clear frees the
 * members and zeroes the struct (clearing a zeroed struct is a no-op). */
int instance_copy(instance_t *dst, const instance_t *src);
void instance_clear(instance_t *inst);
int group_copy(group_t *dst, const group_t *src);
void group_clear(group_t *g);

/* A new heap group with a copy of spec, no instances, next_seq 1 and every other member
 * zero, into *out. 0, or FRUGAL_ENOMEM (*out NULL). */
int group_new(const group_spec_t *spec, group_t **out);

/* A heap deep copy of g into *out. 0, or FRUGAL_ENOMEM naming the group (*out NULL). */
int group_dup(const group_t *g, group_t **out, frugal_err_t *err);

/* Clear and free a heap group; NULL is a no-op. */
void group_free(group_t *g);

/* Fill *inst as g's new instance number seq: id frugal://<group>/<group>-<seq>, state
 * creating since now_ms. 0, or FRUGAL_ENOMEM (inst untouched). */
int instance_init_new(instance_t *inst, const group_t *g, uint64_t seq, int64_t now_ms);

/* The NAME of one of frugal's own instance ids frugal://<group>/NAME of group; "" when
 * id is not such an id (a hook's real provider id, or another group's) or names nothing. */
const char *instance_name_in_group(const char *id, const char *group);

/* How many creating instances a DecreaseTargetSize by delta drops (*drop): 0, or
 * FRUGAL_EINVAL for a delta that is not negative, FRUGAL_EPRECOND when fewer instances of
 * g than that are still creating (CA may only cancel what has not started). */
int group_check_decrease(const group_t *g, int32_t delta, size_t *drop, frugal_err_t *err);

/* Whether instances indexes[0..n) of g may be deleted: 0, or FRUGAL_EINVAL for an index out
 * of range or more instances than the target. */
int group_check_delete(const group_t *g, const size_t *indexes, size_t n, frugal_err_t *err);

/* Remove the newest `drop` instances of g that are still creating (freeing them), keeping
 * the others in order. The caller has checked there are at least that many. */
void group_drop_creating(group_t *g, size_t drop);

#endif
