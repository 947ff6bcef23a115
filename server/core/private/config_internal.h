/* Private to the configuration loader (config*.c): the key engine of config_keys.c
 * (the load context, key tables, typed value parsers, path building, error collection)
 * and each section's entry points, which config.c's top-level table lists. */
#ifndef FRUGAL_CONFIG_INTERNAL_H
#define FRUGAL_CONFIG_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "strbuf.h"
#include "yaml_tree.h"

#define CONFIG_PATH_MAX 256

/* The state of one load: the configuration being built and the problems found. */
typedef struct load_ctx {
    const char *name; /* file name used in messages */
    strbuf_t errors;  /* collected lines */
    size_t error_count;
    bool oom;
    frugal_config_t *cfg;
    const yaml_tree_node_t **group_nodes; /* mapping node of each cfg->node_groups[i] */
    size_t *group_items; /* its index in the file's node_groups (invalid ones are not kept) */
    /* The file's machine_types: a type refused there is named, not unknown, in groups. */
    const yaml_tree_node_t *machine_types_node;
} load_ctx_t;

typedef struct key_spec key_spec_t;

/* Store node (never NULL for scalars; NULL for an absent sequence or mapping, which
 * parses as empty) into field. Returns false after recording an error. */
typedef bool (*key_parse_fn)(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                             void *field, const key_spec_t *spec);

struct key_spec {
    const char *name;
    yaml_tree_type_t type; /* node type expected */
    key_parse_fn parse;
    size_t offset;            /* of the field in the section's struct */
    const char *default_text; /* YAML parsed in place of an absent key; NULL: none */
    bool required;
    double min; /* accepted range of numbers and quantities */
    double max;
    bool above_min;       /* min itself is excluded */
    ptrdiff_t has_offset; /* bool set when the key is given; -1: none */
};

#define KEY(n, t, fn, st, fld, def)                                                                \
    {                                                                                              \
        .name = (n), .type = (t), .parse = (fn), .offset = offsetof(st, fld),                      \
        .default_text = (def), .min = -INFINITY, .max = INFINITY, .has_offset = -1                 \
    }
#define KEY_REQ(n, t, fn, st, fld)                                                                 \
    {                                                                                              \
        .name = (n), .type = (t), .parse = (fn), .offset = offsetof(st, fld), .required = true,    \
        .min = -INFINITY, .max = INFINITY, .has_offset = -1                                        \
    }
#define KEY_RANGE(n, fn, st, fld, def, lo, hi, excl)                                               \
    {                                                                                              \
        .name = (n), .type = YAML_TREE_SCALAR, .parse = (fn), .offset = offsetof(st, fld),         \
        .default_text = (def), .min = (lo), .max = (hi), .above_min = (excl), .has_offset = -1     \
    }
#define KEY_REQ_RANGE(n, fn, st, fld, lo, hi, excl)                                                \
    {                                                                                              \
        .name = (n), .type = YAML_TREE_SCALAR, .parse = (fn), .offset = offsetof(st, fld),         \
        .required = true, .min = (lo), .max = (hi), .above_min = (excl), .has_offset = -1          \
    }
#define KEY_OPT(n, fn, st, fld, has, lo, hi)                                                       \
    {                                                                                              \
        .name = (n), .type = YAML_TREE_SCALAR, .parse = (fn), .offset = offsetof(st, fld),         \
        .min = (lo), .max = (hi), .has_offset = (ptrdiff_t)offsetof(st, has)                       \
    }
#define TABLE_LEN(t) (sizeof(t) / sizeof((t)[0]))

/* Sections stored in the struct of their parent key point at its offset 0. */
_Static_assert(offsetof(listener_config_t, address) == 0, "tls key table relies on it");
_Static_assert(offsetof(autoprov_config_t, enabled) == 0, "limits key table relies on it");

/* ---- the engine (config_keys.c) ---- */

/* Record `NAME:LINE:COL: PATH: message` (path omitted when NULL or empty); node NULL:
 * `NAME: PATH: message`. Loading fails at the end when anything was recorded. */
void config__error(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path, const char *fmt,
                   ...) __attribute__((format(printf, 4, 5)));

/* calloc/strdup that mark the load out of memory on failure (NULL then). */
void *config__calloc(load_ctx_t *ctx, size_t n, size_t size);
char *config__strdup(load_ctx_t *ctx, const char *s);

/* Grow *items (of *count elements of size bytes) by one zeroed element; NULL on OOM. */
void *config__grow(load_ctx_t *ctx, void *items_ptr, size_t *count, size_t size);

/* out (CONFIG_PATH_MAX bytes) = base.key (or key at the top level), or base[i]; long
 * paths are cut, never overflowed. */
void config__path_join(char *out, const char *base, const char *key);
void config__path_index(char *out, const char *base, size_t i);

/* "null", "a scalar", "a sequence" or "a mapping": for "expected X, got Y". */
const char *config__node_describe(const yaml_tree_node_t *node);

/* A plain decimal integer ("12", "-3"); YAML's hex, octal and sexagesimal forms and
 * quoted strings are refused so that a typo never becomes a surprising number. */
bool config__scalar_to_int64(const yaml_tree_node_t *node, int64_t *out);

/* Key parsers (key_parse_fn): a boolean, integers and a double within the key's range,
 * a non-empty string (any scalar: "zone: 1" is "1"), a CPU quantity in milli-cores, a
 * memory quantity in bytes, a duration in ms, a positive duration in ns. */
bool config__parse_bool(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                        void *field, const key_spec_t *spec);
bool config__parse_int64(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                         void *field, const key_spec_t *spec);
bool config__parse_int32(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                         void *field, const key_spec_t *spec);
bool config__parse_double(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                          void *field, const key_spec_t *spec);
bool config__parse_string(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                          void *field, const key_spec_t *spec);
/* Whether a scalar node's text is a label value; else an error naming it. */
bool config__check_label_value(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path);
bool config__parse_label_value(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                               void *field, const key_spec_t *spec);
bool config__parse_cpu(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path, void *field,
                       const key_spec_t *spec);
bool config__parse_bytes(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                         void *field, const key_spec_t *spec);
bool config__parse_duration_ms(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                               void *field, const key_spec_t *spec);
/* A positive duration in milliseconds (at least 1ms). */
bool config__parse_positive_duration_ms(load_ctx_t *ctx, const yaml_tree_node_t *node,
                                        const char *path, void *field, const key_spec_t *spec);
bool config__parse_positive_duration_ns(load_ctx_t *ctx, const yaml_tree_node_t *node,
                                        const char *path, void *field, const key_spec_t *spec);

/* Replace the string at field by a copy of node's text. */
bool config__store_scalar(load_ctx_t *ctx, const yaml_tree_node_t *node, void *field);

/* Check a duration and store it in *field as an int64_t count of unit nanoseconds. */
bool config__duration_store(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                            void *field, int64_t unit_ns);

/* Walk a mapping with a key table: refuse unknown and duplicate keys, check each
 * value's node type, parse it or apply the default. node NULL (absent or null) parses
 * as an empty mapping. */
void config__section_parse(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           const key_spec_t *specs, size_t n, void *base);

/* Items of a sequence node; 0 for NULL or any other node type. */
size_t config__seq_count(const yaml_tree_node_t *node);

/* Whether the file's machine_types names name: a type refused there (its error is
 * reported) rather than unknown to whatever names it. */
bool config__machine_type_refused(const load_ctx_t *ctx, const char *name);

/* A sequence of distinct non-empty strings, appended to *items; and its release. */
void config__parse_strings(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           char ***items, size_t *count);
void config__strings_free(char **items, size_t count);

/* ---- the sections: parsers of the top-level keys, and their releases ---- */

/* config_server.c: listen (relies on allow_insecure), ops_listen, state, limits (relies
 * on max_message_bytes). */
bool config__parse_listeners(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                             void *field, const key_spec_t *spec);
bool config__parse_ops_listen(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                              void *field, const key_spec_t *spec);
bool config__parse_state(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                         void *field, const key_spec_t *spec);
bool config__parse_limits(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                          void *field, const key_spec_t *spec);
void config__listener_free(listener_config_t *l);
void config__state_config_free(state_config_t *st);

/* config_machines.c: provider, pricing, machine_types (relies on pricing), node_groups
 * (relies on machine_types); labels, also autoprovisioning's label sets. */
bool config__parse_provider(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                            void *field, const key_spec_t *spec);
bool config__parse_pricing(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           void *field, const key_spec_t *spec);
bool config__parse_machine_types(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                 void *field, const key_spec_t *spec);
bool config__parse_node_groups(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                               void *field, const key_spec_t *spec);
bool config__parse_labels(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                          void *field, const key_spec_t *spec);
/* The labels of an autoprovisioned shape: what the template sets (and frugal.io/node-group)
 * is refused, as NewNodeGroup refuses it. */
bool config__parse_nap_labels(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                              kv_list_t *out);
void config__machine_type_free(machine_type_t *mt);

/* config_ranking.c: autoprovisioning (relies on the node groups), ranking. */
bool config__parse_autoprov(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                            void *field, const key_spec_t *spec);
bool config__parse_ranking(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           void *field, const key_spec_t *spec);

#endif
