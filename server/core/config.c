/* The configuration loader: a YAML tree (yaml_tree.h) walked with one key table per
 * section, after h2o's configurator. A table entry names a key, the node type it
 * expects, the parser that stores it, and its default written as YAML text exactly as
 * examples/frugal-full.yaml shows it, so that a default goes through the same parser
 * and checks as a configured value. Tables are walked in their own order, not the document's, so a
 * section may rely on the ones listed before it (node groups on the catalog,
 * autoprovisioning on the node groups). Every problem is collected; loading fails at
 * the end when there was any.
 *
 * An empty file, or one without node_groups, is valid: it yields every default and no
 * configured group (a server that only offers autoprovisioned groups, or nothing yet). */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "cgroup.h"
#include "duration.h"
#include "hook_params.h"
#include "k8s_name.h"
#include "yaml_tree.h"

#define CONFIG_PATH_MAX 256

/* ---- load context and error collection ---- */

typedef struct load_ctx {
    const char *name; /* file name used in messages */
    char *errors;     /* collected lines */
    size_t errors_len;
    size_t errors_cap;
    size_t error_count;
    bool oom;
    frugal_config_t *cfg;
    const yaml_tree_node_t **group_nodes; /* mapping node of each cfg->node_groups[i] */
} load_ctx_t;

static void ctx_append(load_ctx_t *ctx, const char *s, size_t n) {
    if (ctx->errors_len + n + 1 > ctx->errors_cap) {
        size_t cap = ctx->errors_cap ? ctx->errors_cap : 256;
        while (cap < ctx->errors_len + n + 1) {
            cap *= 2;
        }
        char *p = realloc(ctx->errors, cap);
        if (p == NULL) {
            ctx->oom = true;
            return;
        }
        ctx->errors = p;
        ctx->errors_cap = cap;
    }
    memcpy(ctx->errors + ctx->errors_len, s, n);
    ctx->errors_len += n;
    ctx->errors[ctx->errors_len] = '\0';
}

static void ctx_error(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Record `NAME:LINE:COL: PATH: message` (path omitted when NULL or empty). */
static void ctx_error(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                      const char *fmt, ...) {
    char line[1024];
    int n;
    if (node != NULL) {
        n = snprintf(line, sizeof(line), "%s:%d:%d: ", ctx->name, node->line, node->column);
    } else {
        n = snprintf(line, sizeof(line), "%s: ", ctx->name);
    }
    if (n < 0 || (size_t)n >= sizeof(line)) {
        n = 0;
    }
    if (path != NULL && path[0] != '\0') {
        int m = snprintf(line + n, sizeof(line) - (size_t)n, "%s: ", path);
        if (m > 0 && (size_t)(n + m) < sizeof(line)) {
            n += m;
        }
    }
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    size_t len = m < 0 ? (size_t)n : (size_t)n + (size_t)m;
    if (len > sizeof(line) - 2) {
        len = sizeof(line) - 2;
    }
    line[len++] = '\n';
    ctx_append(ctx, line, len);
    ctx->error_count++;
}

static void *ctx_calloc(load_ctx_t *ctx, size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (p == NULL) {
        ctx->oom = true;
    }
    return p;
}

static char *ctx_strdup(load_ctx_t *ctx, const char *s) {
    char *p = strdup(s);
    if (p == NULL) {
        ctx->oom = true;
    }
    return p;
}

/* Grow *items (of *count elements of size bytes) by one zeroed element; NULL on OOM. */
static void *ctx_grow(load_ctx_t *ctx, void *items_ptr, size_t *count, size_t size) {
    void **items = items_ptr;
    char *p = realloc(*items, (*count + 1) * size);
    if (p == NULL) {
        ctx->oom = true;
        return NULL;
    }
    memset(p + *count * size, 0, size);
    *items = p;
    return p + (*count)++ * size;
}

/* out = base.key (or key at the top level); long paths are cut, never overflowed. */
static void path_join(char *out, const char *base, const char *key) {
    size_t n = 0;
    if (base != NULL && base[0] != '\0') {
        n = strnlen(base, CONFIG_PATH_MAX - 2);
        memmove(out, base, n);
        out[n++] = '.';
    }
    size_t k = strnlen(key, CONFIG_PATH_MAX - 1 - n);
    memcpy(out + n, key, k);
    out[n + k] = '\0';
}

static void path_index(char *out, const char *base, size_t i) {
    char index[32];
    int k = snprintf(index, sizeof(index), "[%zu]", i);
    size_t n = strnlen(base, CONFIG_PATH_MAX - 1 - (size_t)k);
    memmove(out, base, n);
    memcpy(out + n, index, (size_t)k + 1);
}

/* ---- key tables ---- */

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

static void section_parse(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                          const key_spec_t *specs, size_t n, void *base);

static const char *node_describe(const yaml_tree_node_t *node) {
    if (node->type == YAML_TREE_SCALAR) {
        return yaml_tree_is_null(node) ? "null" : "a scalar";
    }
    return yaml_tree_type_name(node->type);
}

/* Range check shared by the numeric parsers. */
static bool spec_check_range(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                             const key_spec_t *spec, double v) {
    if (spec->above_min && v <= spec->min) {
        ctx_error(ctx, node, path, "must be greater than %g, got %s", spec->min,
                  node->u.scalar.text);
        return false;
    }
    if (v < spec->min) {
        if (spec->min == 0) {
            ctx_error(ctx, node, path, "must not be negative, got %s", node->u.scalar.text);
        } else {
            ctx_error(ctx, node, path, "must be at least %g, got %s", spec->min,
                      node->u.scalar.text);
        }
        return false;
    }
    if (v > spec->max) {
        ctx_error(ctx, node, path, "must be at most %.0f, got %s", spec->max, node->u.scalar.text);
        return false;
    }
    return true;
}

/* A plain decimal integer ("12", "-3"); YAML's hex, octal and sexagesimal forms and
 * quoted strings are refused so that a typo never becomes a surprising number. */
static bool scalar_to_int64(const yaml_tree_node_t *node, int64_t *out) {
    const char *s = node->u.scalar.text;
    if (!node->u.scalar.plain) {
        return false;
    }
    const char *p = s + (s[0] == '+' || s[0] == '-');
    if (*p < '0' || *p > '9') {
        return false;
    }
    for (const char *q = p; *q; q++) {
        if (*q < '0' || *q > '9') {
            return false;
        }
    }
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE) {
        return false;
    }
    *out = (int64_t)v;
    return true;
}

static bool scalar_to_double(const yaml_tree_node_t *node, double *out) {
    const char *s = node->u.scalar.text;
    if (!node->u.scalar.plain || s[0] == '\0') {
        return false;
    }
    for (const char *q = s; *q; q++) {
        if (!((*q >= '0' && *q <= '9') || *q == '.' || *q == '-' || *q == '+' || *q == 'e' ||
              *q == 'E')) {
            return false;
        }
    }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end != '\0' || errno == ERANGE || !isfinite(v)) {
        return false;
    }
    *out = v;
    return true;
}

static bool parse_bool(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path, void *field,
                       const key_spec_t *spec) {
    const char *s = node->u.scalar.text;
    if (node->u.scalar.plain) {
        if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0) {
            *(bool *)field = true;
            return true;
        }
        if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0 || strcmp(s, "FALSE") == 0) {
            *(bool *)field = false;
            return true;
        }
    }
    ctx_error(ctx, node, path, "expected true or false, got \"%s\"", s);
    return false;
}

/* Read node as an integer within spec's range into *v, reporting why not. */
static bool int_check(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                      const key_spec_t *spec, int64_t *v) {
    if (!scalar_to_int64(node, v)) {
        ctx_error(ctx, node, path, "expected an integer, got \"%s\"", node->u.scalar.text);
        return false;
    }
    return spec_check_range(ctx, node, path, spec, (double)*v);
}

static bool parse_int64(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                        void *field, const key_spec_t *spec) {
    int64_t v;
    if (!int_check(ctx, node, path, spec, &v)) {
        return false;
    }
    *(int64_t *)field = v;
    return true;
}

static bool parse_int32(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                        void *field, const key_spec_t *spec) {
    int64_t v;
    if (!int_check(ctx, node, path, spec, &v)) {
        return false;
    }
    if (v > INT32_MAX || v < INT32_MIN) {
        ctx_error(ctx, node, path, "must be at most %d, got %s", INT32_MAX, node->u.scalar.text);
        return false;
    }
    *(int32_t *)field = (int32_t)v;
    return true;
}

static bool parse_double(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                         void *field, const key_spec_t *spec) {
    double v;
    if (!scalar_to_double(node, &v)) {
        ctx_error(ctx, node, path, "expected a number, got \"%s\"", node->u.scalar.text);
        return false;
    }
    if (!spec_check_range(ctx, node, path, spec, v)) {
        return false;
    }
    *(double *)field = v;
    return true;
}

/* Replace the string at field by a copy of node's text. */
static bool store_scalar(load_ctx_t *ctx, const yaml_tree_node_t *node, void *field) {
    char *s = ctx_strdup(ctx, node->u.scalar.text);
    if (s == NULL)
        return false;
    free(*(char **)field);
    *(char **)field = s;
    return true;
}

/* A non-empty string; any scalar qualifies ("zone: 1" is the string "1"). */
static bool parse_string(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                         void *field, const key_spec_t *spec) {
    if (node->u.scalar.len == 0) {
        ctx_error(ctx, node, path, "must not be empty");
        return false;
    }
    if (strlen(node->u.scalar.text) != node->u.scalar.len) {
        ctx_error(ctx, node, path, "must not contain a NUL character");
        return false;
    }
    return store_scalar(ctx, node, field);
}

static bool quantity_check(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           const key_spec_t *spec, int rc, int64_t v, const frugal_err_t *err) {
    if (rc != 0) {
        ctx_error(ctx, node, path, "invalid quantity \"%s\": %s", node->u.scalar.text, err->msg);
        return false;
    }
    if (spec->above_min && (double)v <= spec->min) {
        ctx_error(ctx, node, path, "must be greater than 0, got %s", node->u.scalar.text);
        return false;
    }
    if (v < 0 && spec->min >= 0) {
        ctx_error(ctx, node, path, "must not be negative, got %s", node->u.scalar.text);
        return false;
    }
    return true;
}

/* A CPU quantity ("2", "0.5", "500m") in milli-cores. */
static bool parse_cpu(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path, void *field,
                      const key_spec_t *spec) {
    frugal_err_t err = {0};
    int64_t v = 0;
    int rc = quantity_parse_milli(node->u.scalar.text, &v, &err);
    if (!quantity_check(ctx, node, path, spec, rc, v, &err)) {
        return false;
    }
    *(int64_t *)field = v;
    return true;
}

/* A memory quantity ("7.5Gi", "500Mi", "1000000") in bytes. */
static bool parse_bytes(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                        void *field, const key_spec_t *spec) {
    frugal_err_t err = {0};
    int64_t v = 0;
    int rc = quantity_parse_value(node->u.scalar.text, &v, &err);
    if (!quantity_check(ctx, node, path, spec, rc, v, &err)) {
        return false;
    }
    *(int64_t *)field = v;
    return true;
}

static bool duration_check(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           int64_t *ns) {
    const char *s = node->u.scalar.text;
    if (s[0] == '-') {
        ctx_error(ctx, node, path, "must not be negative, got %s", s);
        return false;
    }
    if (duration_parse(s, ns, NULL) != 0) {
        ctx_error(ctx, node, path, "invalid duration \"%s\" (expected e.g. 45s, 10m, 1h30m)", s);
        return false;
    }
    return true;
}

/* Check a duration and store it in *field as an int64_t count of unit nanoseconds. */
static bool duration_store(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           void *field, int64_t unit_ns) {
    int64_t ns;
    if (!duration_check(ctx, node, path, &ns)) {
        return false;
    }
    *(int64_t *)field = ns / unit_ns;
    return true;
}

static bool parse_duration_ms(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                              void *field, const key_spec_t *spec) {
    return duration_store(ctx, node, path, field, 1000000);
}

/* A group option duration: CA reads a zero one as "every new node failed" (or never
 * scales down), so it must be positive. */
static bool parse_positive_duration_ns(load_ctx_t *ctx, const yaml_tree_node_t *node,
                                       const char *path, void *field, const key_spec_t *spec) {
    int64_t ns;
    if (!duration_check(ctx, node, path, &ns))
        return false;
    if (ns <= 0) {
        ctx_error(ctx, node, path, "must be greater than 0, got %s", node->u.scalar.text);
        return false;
    }
    *(int64_t *)field = ns;
    return true;
}

/* Parse text (a default from a table) as if it had been written in the file. */
static void spec_apply_default(load_ctx_t *ctx, const key_spec_t *spec, const char *path,
                               void *field) {
    yaml_tree_node_t *tree = NULL;
    yaml_tree_error_t err;
    if (yaml_tree_load(spec->default_text, strlen(spec->default_text), &tree, &err) != 0 ||
        tree == NULL || (tree->type != spec->type)) {
        ctx_error(ctx, NULL, path, "internal error: bad default \"%s\"", spec->default_text);
        yaml_tree_free(tree);
        return;
    }
    spec->parse(ctx, tree, path, field, spec);
    yaml_tree_free(tree);
}

/* Walk a mapping with a key table: refuse unknown and duplicate keys, check each
 * value's node type, parse it or apply the default. node NULL (absent or null) parses
 * as an empty mapping. */
static void section_parse(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                          const key_spec_t *specs, size_t n, void *base) {
    const yaml_tree_node_t *values[32] = {0};
    const yaml_tree_node_t *keys[32] = {0};
    char sub[CONFIG_PATH_MAX];

    if (n > sizeof(keys) / sizeof(keys[0])) {
        ctx_error(ctx, node, path, "internal error: key table too long");
        return;
    }
    if (node != NULL && yaml_tree_is_null(node)) {
        node = NULL;
    }
    bool wrong_type = node != NULL && node->type != YAML_TREE_MAPPING;
    if (wrong_type) {
        ctx_error(ctx, node, path, "expected a mapping, got %s", node_describe(node));
        node = NULL;
    }
    for (size_t i = 0; node != NULL && i < node->u.mapping.count; i++) {
        const yaml_tree_node_t *k = node->u.mapping.items[i].key;
        if (k->type != YAML_TREE_SCALAR) {
            ctx_error(ctx, k, path, "keys must be scalars, got %s", node_describe(k));
            continue;
        }
        size_t j = 0;
        while (j < n && strcmp(specs[j].name, k->u.scalar.text) != 0) {
            j++;
        }
        path_join(sub, path, k->u.scalar.text);
        if (j == n) {
            ctx_error(ctx, k, sub, "unknown key");
        } else if (keys[j] != NULL) {
            ctx_error(ctx, k, sub, "duplicate key (first at line %d)", keys[j]->line);
        } else {
            keys[j] = k;
            values[j] = node->u.mapping.items[i].value;
        }
    }
    for (size_t j = 0; j < n; j++) {
        const key_spec_t *spec = &specs[j];
        const yaml_tree_node_t *v = values[j];
        void *field = (char *)base + spec->offset;
        path_join(sub, path, spec->name);
        if (v != NULL && yaml_tree_is_null(v)) {
            v = NULL;
        }
        if (v == NULL) {
            if (spec->required) {
                if (wrong_type) {
                    /* already reported */
                } else if (keys[j] != NULL) {
                    ctx_error(ctx, keys[j], sub, "a value is required");
                } else {
                    ctx_error(ctx, node, path, "missing required key \"%s\"", spec->name);
                }
            } else if (spec->default_text != NULL) {
                spec_apply_default(ctx, spec, sub, field);
            } else if (spec->type != YAML_TREE_SCALAR) {
                spec->parse(ctx, NULL, sub, field, spec);
            }
            continue;
        }
        if (v->type != spec->type) {
            ctx_error(ctx, v, sub, "expected %s, got %s",
                      spec->type == YAML_TREE_SCALAR ? "a value" : yaml_tree_type_name(spec->type),
                      node_describe(v));
            /* Still give a section its defaults, so later sections do not cascade. */
            if (spec->default_text != NULL) {
                spec_apply_default(ctx, spec, sub, field);
            } else if (spec->type != YAML_TREE_SCALAR) {
                spec->parse(ctx, NULL, sub, field, spec);
            }
            continue;
        }
        if (spec->parse(ctx, v, sub, field, spec) && spec->has_offset >= 0) {
            *(bool *)((char *)base + spec->has_offset) = true;
        }
    }
}

/* Items of a sequence node; 0 for NULL or any other node type. */
static size_t seq_count(const yaml_tree_node_t *node) {
    return node != NULL && node->type == YAML_TREE_SEQUENCE ? node->u.sequence.count : 0;
}

/* ---- labels and taints ---- */

/* A mapping of label keys to values ({team: web}); null values are "". */
static bool parse_labels(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                         void *field, const key_spec_t *spec) {
    kv_list_t *out = field;
    char sub[CONFIG_PATH_MAX];
    bool ok = true;
    kv_list_clear(out);
    if (node == NULL || yaml_tree_is_null(node)) {
        return true;
    }
    if (node->type != YAML_TREE_MAPPING) {
        ctx_error(ctx, node, path, "expected a mapping, got %s", node_describe(node));
        return false;
    }
    for (size_t i = 0; i < node->u.mapping.count; i++) {
        const yaml_tree_node_t *k = node->u.mapping.items[i].key;
        const yaml_tree_node_t *v = node->u.mapping.items[i].value;
        if (k->type != YAML_TREE_SCALAR) {
            ctx_error(ctx, k, path, "label keys must be scalars, got %s", node_describe(k));
            ok = false;
            continue;
        }
        path_join(sub, path, k->u.scalar.text);
        const char *problem = k8s_name_key_problem(k->u.scalar.text);
        if (problem != NULL) {
            ctx_error(ctx, k, sub, "invalid label key \"%s\": %s", k->u.scalar.text, problem);
            ok = false;
            continue;
        }
        const char *value = "";
        if (v->type != YAML_TREE_SCALAR) {
            ctx_error(ctx, v, sub, "expected a value, got %s", node_describe(v));
            ok = false;
            continue;
        }
        if (!yaml_tree_is_null(v)) {
            value = v->u.scalar.text;
        }
        problem = k8s_name_value_problem(value);
        if (problem != NULL) {
            ctx_error(ctx, v, sub, "invalid label value \"%s\": %s", value, problem);
            ok = false;
            continue;
        }
        bool dup = false;
        for (size_t j = 0; j < out->count; j++) {
            dup = dup || strcmp(out->items[j].key, k->u.scalar.text) == 0;
        }
        if (dup) {
            ctx_error(ctx, k, sub, "duplicate label key");
            ok = false;
            continue;
        }
        kv_t *kv = ctx_grow(ctx, &out->items, &out->count, sizeof(kv_t));
        if (kv == NULL) {
            return false;
        }
        kv->key = ctx_strdup(ctx, k->u.scalar.text);
        kv->value = ctx_strdup(ctx, value);
    }
    if (out->count > 1) {
        qsort(out->items, out->count, sizeof(kv_t), kv_compare);
    }
    return ok;
}

static bool parse_taint_key(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                            void *field, const key_spec_t *spec) {
    const char *problem = k8s_name_key_problem(node->u.scalar.text);
    if (problem != NULL) {
        ctx_error(ctx, node, path, "invalid taint key \"%s\": %s", node->u.scalar.text, problem);
        return false;
    }
    return parse_string(ctx, node, path, field, spec);
}

static bool parse_taint_value(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                              void *field, const key_spec_t *spec) {
    const char *problem = k8s_name_value_problem(node->u.scalar.text);
    if (problem != NULL) {
        ctx_error(ctx, node, path, "invalid taint value \"%s\": %s", node->u.scalar.text, problem);
        return false;
    }
    return store_scalar(ctx, node, field);
}

static bool parse_taint_effect(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                               void *field, const key_spec_t *spec) {
    const char *s = node->u.scalar.text;
    if (!k8s_name_is_taint_effect(s)) {
        ctx_error(ctx, node, path,
                  "invalid taint effect \"%s\" (expected NoSchedule, PreferNoSchedule or "
                  "NoExecute)",
                  s);
        return false;
    }
    return parse_string(ctx, node, path, field, spec);
}

static const key_spec_t taint_keys[] = {
    KEY_REQ("key", YAML_TREE_SCALAR, parse_taint_key, taint_t, key),
    KEY("value", YAML_TREE_SCALAR, parse_taint_value, taint_t, value, NULL),
    KEY_REQ("effect", YAML_TREE_SCALAR, parse_taint_effect, taint_t, effect),
};

static bool parse_taints(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                         void *field, const key_spec_t *spec) {
    taint_list_t *out = field;
    char sub[CONFIG_PATH_MAX];
    for (size_t i = 0; i < seq_count(node); i++) {
        const yaml_tree_node_t *item = node->u.sequence.items[i];
        path_index(sub, path, i);
        size_t before = ctx->error_count;
        taint_t t = {0};
        section_parse(ctx, item, sub, taint_keys, TABLE_LEN(taint_keys), &t);
        if (t.value == NULL) {
            t.value = ctx_strdup(ctx, "");
        }
        if (ctx->error_count == before && taint_list_has(out, t.key, t.effect)) {
            ctx_error(ctx, item, sub, "duplicate taint %s:%s", t.key, t.effect);
        }
        taint_t *slot = ctx->error_count == before && t.value != NULL
                            ? ctx_grow(ctx, &out->items, &out->count, sizeof(taint_t))
                            : NULL;
        if (slot == NULL) {
            free(t.key);
            free(t.value);
            free(t.effect);
            continue;
        }
        *slot = t;
    }
    return true;
}

/* ---- listeners ---- */

static const key_spec_t tls_keys[] = {
    KEY("cert", YAML_TREE_SCALAR, parse_string, listener_config_t, tls_cert, NULL),
    KEY("key", YAML_TREE_SCALAR, parse_string, listener_config_t, tls_key, NULL),
    KEY("client_ca", YAML_TREE_SCALAR, parse_string, listener_config_t, tls_client_ca, NULL),
};

/* tls: {cert, key, client_ca}, stored in the listener itself (offset 0 of it). */
static bool parse_tls(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path, void *field,
                      const key_spec_t *spec) {
    listener_config_t *l = field;
    if (node == NULL) {
        return true;
    }
    section_parse(ctx, node, path, tls_keys, TABLE_LEN(tls_keys), l);
    if (node->type != YAML_TREE_MAPPING) {
        return false;
    }
    if (l->tls_cert == NULL && l->tls_key == NULL) {
        ctx_error(ctx, node, path, "cert and key are required for a TLS listener");
    } else if (l->tls_cert == NULL) {
        ctx_error(ctx, node, path, "key is set without cert");
    } else if (l->tls_key == NULL) {
        ctx_error(ctx, node, path, "cert is set without key");
    }
    return true;
}

/* The names of listen[].services, bit k is LISTENER_SERVICE_* 1 << k; each also by its
 * fully qualified gRPC service name (the same names as rpc/wire_names.h). */
static const char *const names_of_services[] = {"cloudprovider", "expander", "autoprovisioning",
                                                "health"};
static const char *const grpc_names_of_services[] = {
    "clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider", "grpcplugin.Expander",
    "frugal.v1.Autoprovisioning", "grpc.health.v1.Health"};

/* services: [cloudprovider, expander, autoprovisioning, health]; absent: all of them. */
static bool parse_services(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           void *field, const key_spec_t *spec) {
    unsigned *services = field;
    if (node == NULL) {
        *services = LISTENER_SERVICES_ALL;
        return true;
    }
    if (seq_count(node) == 0) {
        ctx_error(ctx, node, path, "at least one service is required");
        return false;
    }
    *services = LISTENER_SERVICE_HEALTH;
    char sub[CONFIG_PATH_MAX];
    for (size_t i = 0; i < node->u.sequence.count; i++) {
        const yaml_tree_node_t *item = node->u.sequence.items[i];
        path_index(sub, path, i);
        size_t k = 0;
        while (k < TABLE_LEN(names_of_services) &&
               (item->type != YAML_TREE_SCALAR ||
                (strcmp(item->u.scalar.text, names_of_services[k]) != 0 &&
                 strcmp(item->u.scalar.text, grpc_names_of_services[k]) != 0))) {
            k++;
        }
        if (k == TABLE_LEN(names_of_services)) {
            ctx_error(ctx, item, sub,
                      "unknown service (expected cloudprovider, expander, autoprovisioning or "
                      "health, or their gRPC service names)");
        } else {
            *services |= 1u << k;
        }
    }
    return true;
}

static const key_spec_t listener_keys[] = {
    KEY_REQ("address", YAML_TREE_SCALAR, parse_string, listener_config_t, address),
    KEY("services", YAML_TREE_SEQUENCE, parse_services, listener_config_t, services, NULL),
    /* offset 0: parse_tls fills the listener itself */
    KEY("tls", YAML_TREE_MAPPING, parse_tls, listener_config_t, address, NULL),
};

/* NULL when address is host:port (port 1-65535, IPv6 in brackets) or unix:PATH, else
 * the reason; *loopback tells whether only this machine can reach it. */
static const char *address_problem(const char *address, bool *loopback) {
    *loopback = false;
    if (strncmp(address, "unix:", 5) == 0) {
        *loopback = true;
        return address[5] == '\0' ? "unix: needs a socket path" : NULL;
    }
    const char *colon = strrchr(address, ':');
    if (colon == NULL) {
        return "expected HOST:PORT or unix:PATH";
    }
    const char *port = colon + 1;
    size_t digits = strspn(port, "0123456789");
    if (digits == 0 || port[digits] != '\0' || digits > 5 || atoi(port) < 1 || atoi(port) > 65535) {
        return "port must be a number from 1 to 65535";
    }
    size_t hlen = (size_t)(colon - address);
    char host[256];
    if (hlen == 0) {
        return "missing host (use 0.0.0.0 or [::] for every interface)";
    }
    if (hlen >= sizeof(host)) {
        return "host is too long";
    }
    memcpy(host, address, hlen);
    host[hlen] = '\0';
    unsigned char buf[16];
    if (host[0] == '[') {
        if (hlen < 3 || host[hlen - 1] != ']') {
            return "an IPv6 address must be written [ADDRESS]:PORT";
        }
        host[hlen - 1] = '\0';
        if (inet_pton(AF_INET6, host + 1, buf) != 1) {
            return "invalid IPv6 address";
        }
        static const unsigned char v6_loopback[16] = {[15] = 1};
        *loopback = memcmp(buf, v6_loopback, 16) == 0;
        return NULL;
    }
    if (strchr(host, ':') != NULL) {
        return "an IPv6 address must be written [ADDRESS]:PORT";
    }
    if (inet_pton(AF_INET, host, buf) == 1) {
        *loopback = buf[0] == 127;
        return NULL;
    }
    for (size_t i = 0; i < hlen; i++) {
        if (!isalnum((unsigned char)host[i]) && host[i] != '-' && host[i] != '.' &&
            host[i] != '_') {
            return "invalid host name";
        }
    }
    *loopback = strcmp(host, "localhost") == 0;
    return NULL;
}

static void listener_free(listener_config_t *l) {
    free(l->address);
    free(l->tls_cert);
    free(l->tls_key);
    free(l->tls_client_ca);
}

/* listen: a non-empty sequence. Relies on allow_insecure having been parsed. */
static bool parse_listeners(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                            void *field, const key_spec_t *spec) {
    frugal_config_t *cfg = ctx->cfg;
    char sub[CONFIG_PATH_MAX];
    char addr_path[CONFIG_PATH_MAX];
    for (size_t i = 0; i < cfg->listeners_count; i++) {
        listener_free(&cfg->listeners[i]);
    }
    free(cfg->listeners);
    cfg->listeners = NULL;
    cfg->listeners_count = 0;
    if (seq_count(node) == 0) {
        ctx_error(ctx, node, path, "at least one listener is required");
        return false;
    }
    for (size_t i = 0; i < node->u.sequence.count; i++) {
        const yaml_tree_node_t *item = node->u.sequence.items[i];
        listener_config_t l = {0};
        size_t before = ctx->error_count;
        path_index(sub, path, i);
        section_parse(ctx, item, sub, listener_keys, TABLE_LEN(listener_keys), &l);
        const yaml_tree_node_t *an = yaml_tree_mapping_get(item, "address");
        path_join(addr_path, sub, "address");
        if (l.address != NULL) {
            bool loopback;
            const char *problem = address_problem(l.address, &loopback);
            if (problem != NULL) {
                ctx_error(ctx, an, addr_path, "invalid address \"%s\": %s", l.address, problem);
            } else if (!loopback && yaml_tree_mapping_get(item, "tls") == NULL &&
                       !cfg->allow_insecure && l.services != LISTENER_SERVICE_HEALTH) {
                /* Health alone tells nothing and changes nothing: probes may have it. */
                ctx_error(ctx, an, addr_path,
                          "plaintext listener on non-loopback address \"%s\": configure tls "
                          "or set allow_insecure: true",
                          l.address);
            }
            for (size_t j = 0; j < cfg->listeners_count; j++) {
                if (strcmp(cfg->listeners[j].address, l.address) == 0) {
                    ctx_error(ctx, an, addr_path, "duplicate listener address \"%s\"", l.address);
                }
            }
        }
        listener_config_t *slot =
            ctx->error_count == before
                ? ctx_grow(ctx, &cfg->listeners, &cfg->listeners_count, sizeof(l))
                : NULL;
        if (slot == NULL) {
            listener_free(&l);
            continue;
        }
        *slot = l;
    }
    return true;
}

/* ops_listen: HOST:PORT of the plain-HTTP ops endpoint (health, readiness, metrics). */
static bool parse_ops_listen(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                             void *field, const key_spec_t *spec) {
    if (!parse_string(ctx, node, path, field, spec) || *(char **)field == NULL)
        return false;
    const char *address = *(char **)field;
    bool loopback;
    const char *problem = strncmp(address, "unix:", 5) == 0 ? "the ops endpoint needs HOST:PORT"
                                                            : address_problem(address, &loopback);
    if (problem != NULL)
        ctx_error(ctx, node, path, "invalid address \"%s\": %s", address, problem);
    for (size_t j = 0; problem == NULL && j < ctx->cfg->listeners_count; j++)
        if (strcmp(ctx->cfg->listeners[j].address, address) == 0)
            ctx_error(ctx, node, path, "\"%s\" is also a gRPC listener", address);
    return true;
}

/* ---- provider and pricing ---- */

static bool parse_provider_kind(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                void *field, const key_spec_t *spec) {
    const char *s = node->u.scalar.text;
    if (strcmp(s, "simulated") != 0 && strcmp(s, "exec") != 0) {
        ctx_error(ctx, node, path, "unknown provider kind \"%s\" (expected simulated or exec)", s);
        return false;
    }
    return parse_string(ctx, node, path, field, spec);
}

/* The exec hook: an absolute path to an executable file (checked here, so that `frugal
 * check` catches a typo; the server checks again when it starts the provider). */
static bool parse_exec_command(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                               void *field, const key_spec_t *spec) {
    const char *s = node->u.scalar.text;
    if (s[0] != '/') {
        ctx_error(ctx, node, path, "must be an absolute path, got \"%s\"", s);
        return false;
    }
    struct stat st;
    if (stat(s, &st) != 0 || !S_ISREG(st.st_mode) || access(s, X_OK) != 0) {
        ctx_error(ctx, node, path, "%s is not an executable file", s);
        return false;
    }
    return parse_string(ctx, node, path, field, spec);
}

/* ---- exec hook parameters (rules in hook_params.c) ---- */

/* The scalar key of entry i of mapping node with its path in sub, or NULL (reported). */
static const char *mapping_key(load_ctx_t *ctx, const yaml_tree_node_t *node, size_t i,
                               const char *path, char *sub) {
    const yaml_tree_node_t *k = node->u.mapping.items[i].key;
    if (k->type != YAML_TREE_SCALAR || yaml_tree_is_null(k)) {
        ctx_error(ctx, k, path, "keys must be strings, got %s", node_describe(k));
        return NULL;
    }
    path_join(sub, path, k->u.scalar.text);
    return k->u.scalar.text;
}

/* The earlier key of node (before entry i) that maps to the same variable as key. */
static const yaml_tree_node_t *params_collision(const yaml_tree_node_t *node, size_t i,
                                                const char *key) {
    for (size_t j = 0; j < i; j++) {
        const yaml_tree_node_t *k = node->u.mapping.items[j].key;
        if (k->type == YAML_TREE_SCALAR && hook_param_key_problem(k->u.scalar.text) == NULL &&
            hook_param_keys_collide(k->u.scalar.text, key))
            return k;
    }
    return NULL;
}

/* A mapping of hook parameters to strings ({image: debian-12}); a null value is "". */
static bool parse_hook_params(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                              void *field, const key_spec_t *spec) {
    kv_list_t *out = field;
    char sub[CONFIG_PATH_MAX], var[sizeof(HOOK_PARAM_PREFIX) + HOOK_PARAM_KEY_MAX];
    kv_list_clear(out);
    for (size_t i = 0; node != NULL && node->type == YAML_TREE_MAPPING && i < node->u.mapping.count;
         i++) {
        const yaml_tree_node_t *k = node->u.mapping.items[i].key;
        const yaml_tree_node_t *v = node->u.mapping.items[i].value;
        const char *key = mapping_key(ctx, node, i, path, sub);
        const char *problem = key != NULL ? hook_param_key_problem(key) : NULL;
        const yaml_tree_node_t *first = NULL;
        if (key == NULL)
            continue;
        if (problem != NULL) {
            ctx_error(ctx, k, sub, "invalid parameter name \"%s\": %s", key, problem);
        } else if ((first = params_collision(node, i, key)) != NULL) {
            hook_param_env_name(key, var, sizeof(var));
            ctx_error(ctx, k, sub, "\"%s\" and \"%s\" (line %d) are both passed as %s", key,
                      first->u.scalar.text, first->line, var);
        } else if (v->type != YAML_TREE_SCALAR) {
            ctx_error(ctx, v, sub, "expected a string, got %s", node_describe(v));
        } else if ((problem = hook_param_value_problem(v->u.scalar.text, v->u.scalar.len))) {
            ctx_error(ctx, v, sub, "value %s", problem);
        } else {
            kv_t *kv = ctx_grow(ctx, &out->items, &out->count, sizeof(kv_t));
            if (kv == NULL)
                return false;
            kv->key = ctx_strdup(ctx, key);
            kv->value = ctx_strdup(ctx, yaml_tree_is_null(v) ? "" : v->u.scalar.text);
        }
    }
    if (out->count > 1)
        qsort(out->items, out->count, sizeof(kv_t), kv_compare);
    return true;
}

/* The content of the file at path into *out (malloc'ed, NUL-terminated) and *len, or
 * why not (written to buf). */
static const char *env_file_read(const char *path, char **out, size_t *len, char *buf,
                                 size_t size) {
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (f == NULL || fstat(fileno(f), &st) != 0) {
        snprintf(buf, size, "cannot read %s: %s", path, strerror(errno));
        if (f != NULL)
            fclose(f);
        return buf;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(buf, size, "cannot read %s: not a regular file", path);
        fclose(f);
        return buf;
    }
    char *data = malloc(HOOK_PARAM_VALUE_MAX + 2);
    *len = data != NULL ? fread(data, 1, HOOK_PARAM_VALUE_MAX + 1, f) : 0;
    bool failed = data == NULL || ferror(f);
    fclose(f);
    const char *problem = failed ? "cannot be read" : hook_param_value_problem(data, *len);
    if (problem != NULL) {
        snprintf(buf, size, "%s %s", path, problem);
        free(data);
        return buf;
    }
    data[*len] = '\0';
    *out = data;
    return NULL;
}

/* {VARIABLE: /path}: each file's content, read now, is passed to the hook as VARIABLE. */
static bool parse_env_files(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                            void *field, const key_spec_t *spec) {
    kv_list_t *out = field;
    char sub[CONFIG_PATH_MAX], why[CONFIG_PATH_MAX + 64];
    kv_list_clear(out);
    for (size_t i = 0; node != NULL && node->type == YAML_TREE_MAPPING && i < node->u.mapping.count;
         i++) {
        const yaml_tree_node_t *k = node->u.mapping.items[i].key;
        const yaml_tree_node_t *v = node->u.mapping.items[i].value;
        const char *key = mapping_key(ctx, node, i, path, sub);
        const char *problem = key != NULL ? hook_param_key_problem(key) : NULL;
        bool found = false;
        if (key == NULL)
            continue;
        if (problem == NULL)
            kv_list_find(out, key, &found);
        if (problem != NULL) {
            ctx_error(ctx, k, sub, "invalid variable name \"%s\": %s", key, problem);
        } else if (strncmp(key, "FRUGAL_", 7) == 0) {
            ctx_error(ctx, k, sub, "invalid variable name \"%s\": FRUGAL_ names are frugal's own",
                      key);
        } else if (found) {
            ctx_error(ctx, k, sub, "duplicate variable \"%s\"", key);
        } else if (v->type != YAML_TREE_SCALAR || yaml_tree_is_null(v) ||
                   v->u.scalar.text[0] != '/') {
            ctx_error(ctx, v, sub, "expected the absolute path of a file");
        } else {
            char *content = NULL;
            size_t len = 0;
            if ((problem = env_file_read(v->u.scalar.text, &content, &len, why, sizeof(why)))) {
                ctx_error(ctx, v, sub, "%s", problem);
                continue;
            }
            int rc = kv_list_put(out, key, content);
            free(content);
            if (rc != 0) {
                ctx->oom = true;
                return false;
            }
        }
    }
    return true;
}

/* 0 (off), or how often the hook lists each group's machines: at least 1s. */
static bool parse_reconcile_interval(load_ctx_t *ctx, const yaml_tree_node_t *node,
                                     const char *path, void *field, const key_spec_t *spec) {
    if (!parse_duration_ms(ctx, node, path, field, spec))
        return false;
    int64_t ms = *(int64_t *)field;
    if (ms != 0 && ms < 1000) {
        ctx_error(ctx, node, path, "must be 0 (off) or at least 1s, got %s", node->u.scalar.text);
        return false;
    }
    return true;
}

static const key_spec_t provider_keys[] = {
    KEY("kind", YAML_TREE_SCALAR, parse_provider_kind, frugal_config_t, provider_kind, "simulated"),
    KEY_RANGE("boot_seconds", parse_int64, frugal_config_t, boot_seconds, "0", 0, 86400 * 365,
              false),
    KEY("command", YAML_TREE_SCALAR, parse_exec_command, frugal_config_t, exec_command, NULL),
    KEY("timeout", YAML_TREE_SCALAR, parse_duration_ms, frugal_config_t, exec_timeout_ms, "10m"),
    KEY_RANGE("parallelism", parse_int32, frugal_config_t, exec_parallelism, "4", 1, 256, false),
    KEY("params", YAML_TREE_MAPPING, parse_hook_params, frugal_config_t, exec_params, NULL),
    KEY("env_from_files", YAML_TREE_MAPPING, parse_env_files, frugal_config_t, exec_env_files,
        NULL),
    KEY("reconcile_interval", YAML_TREE_SCALAR, parse_reconcile_interval, frugal_config_t,
        exec_reconcile_interval_ms, "0"),
    KEY_RANGE("reconcile_missing_after", parse_int32, frugal_config_t, exec_reconcile_missing_after,
              "2", 1, 1000, false),
    KEY("reconcile_delete_unknown", YAML_TREE_SCALAR, parse_bool, frugal_config_t,
        exec_reconcile_delete_unknown, "false"),
};

/* Keys that belong to one kind only: given with the other kind they are errors. */
static void provider_check_kind(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path) {
    static const char *const exec_only[] = {"command",
                                            "timeout",
                                            "parallelism",
                                            "params",
                                            "env_from_files",
                                            "reconcile_interval",
                                            "reconcile_missing_after",
                                            "reconcile_delete_unknown"};
    char sub[CONFIG_PATH_MAX];
    const frugal_config_t *cfg = ctx->cfg;
    if (node == NULL || node->type != YAML_TREE_MAPPING || cfg->provider_kind == NULL) {
        return;
    }
    bool exec = strcmp(cfg->provider_kind, "exec") == 0;
    for (size_t i = 0; i < node->u.mapping.count; i++) {
        const yaml_tree_node_t *k = node->u.mapping.items[i].key;
        if (k->type != YAML_TREE_SCALAR) {
            continue;
        }
        bool only_exec = false;
        for (size_t j = 0; j < TABLE_LEN(exec_only); j++) {
            only_exec = only_exec || strcmp(k->u.scalar.text, exec_only[j]) == 0;
        }
        path_join(sub, path, k->u.scalar.text);
        if (only_exec && !exec) {
            ctx_error(ctx, k, sub, "only valid with provider kind exec");
        } else if (exec && strcmp(k->u.scalar.text, "boot_seconds") == 0) {
            ctx_error(ctx, k, sub, "only valid with provider kind simulated");
        }
    }
    const yaml_tree_node_t *tn = yaml_tree_mapping_get(node, "timeout");
    int64_t ns = 0;
    if (exec && tn != NULL && tn->type == YAML_TREE_SCALAR &&
        duration_parse(tn->u.scalar.text, &ns, NULL) == 0 && ns < 1000000) {
        path_join(sub, path, "timeout");
        ctx_error(ctx, tn, sub, "must be at least 1ms, got %s", tn->u.scalar.text);
    }
    const yaml_tree_node_t *cmd = yaml_tree_mapping_get(node, "command");
    if (exec && (cmd == NULL || yaml_tree_is_null(cmd))) {
        ctx_error(ctx, node, path, "missing required key \"command\" (provider kind exec)");
    }
}

static bool parse_provider(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           void *field, const key_spec_t *spec) {
    section_parse(ctx, node, path, provider_keys, TABLE_LEN(provider_keys), ctx->cfg);
    provider_check_kind(ctx, node, path);
    return true;
}

static bool parse_catalog_kind(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                               void *field, const key_spec_t *spec) {
    const char *s = node->u.scalar.text;
    if (strcmp(s, "builtin") == 0 || strcmp(s, "none") == 0) {
        *(bool *)field = strcmp(s, "builtin") == 0;
        return true;
    }
    ctx_error(ctx, node, path, "unknown catalog \"%s\" (expected builtin or none)", s);
    return false;
}

static const key_spec_t pricing_keys[] = {
    KEY_RANGE("cpu", parse_double, pricing_config_t, cpu, "0.033174", 0, INFINITY, false),
    KEY_RANGE("memory_gib", parse_double, pricing_config_t, memory_gib, "0.004446", 0, INFINITY,
              false),
    KEY_RANGE("gpu", parse_double, pricing_config_t, gpu, "0.7", 0, INFINITY, false),
    KEY("catalog", YAML_TREE_SCALAR, parse_catalog_kind, pricing_config_t, builtin_catalog,
        "builtin"),
};

static bool parse_pricing(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                          void *field, const key_spec_t *spec) {
    section_parse(ctx, node, path, pricing_keys, TABLE_LEN(pricing_keys), field);
    return true;
}

/* ---- machine types: the effective catalog ---- */

static const key_spec_t machine_type_keys[] = {
    KEY_REQ("name", YAML_TREE_SCALAR, parse_string, machine_type_t, name),
    KEY_REQ_RANGE("cpu", parse_cpu, machine_type_t, cpu_milli, 0, INFINITY, true),
    KEY_REQ_RANGE("memory", parse_bytes, machine_type_t, memory_bytes, 0, INFINITY, true),
    KEY_RANGE("gpu", parse_int32, machine_type_t, gpu, "0", 0, INT32_MAX, false),
    KEY("gpu_type", YAML_TREE_SCALAR, parse_string, machine_type_t, gpu_type, NULL),
    KEY_RANGE("price", parse_double, machine_type_t, price, NULL, 0, INFINITY, false),
    KEY_RANGE("spot_price", parse_double, machine_type_t, spot_price, NULL, 0, INFINITY, false),
    KEY("provider_params", YAML_TREE_MAPPING, parse_hook_params, machine_type_t, provider_params,
        NULL),
};

static void machine_type_free(machine_type_t *mt) {
    free(mt->name);
    free(mt->gpu_type);
    kv_list_clear(&mt->provider_params);
}

/* Builtin entries first (when pricing.catalog is builtin), then each configured type
 * replaces the entry of the same name or is appended. Relies on pricing. */
static bool parse_machine_types(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                void *field, const key_spec_t *spec) {
    frugal_config_t *cfg = ctx->cfg;
    char sub[CONFIG_PATH_MAX];
    size_t builtin = 0;
    if (cfg->pricing.builtin_catalog) {
        for (size_t i = 0; i < catalog_machines_count; i++) {
            const catalog_machine_t *cm = &catalog_machines[i];
            machine_type_t *mt =
                ctx_grow(ctx, &cfg->machine_types, &cfg->machine_types_count, sizeof(*mt));
            if (mt == NULL) {
                return false;
            }
            mt->name = ctx_strdup(ctx, cm->name);
            mt->cpu_milli = (int64_t)cm->cpu * 1000;
            mt->memory_bytes = catalog_machine_memory_bytes(cm);
            mt->price = cm->price;
            mt->spot_price = cm->preemptible_price;
            if (mt->name == NULL) {
                return false;
            }
        }
        builtin = cfg->machine_types_count;
    }
    const yaml_tree_node_t **names = ctx_calloc(ctx, seq_count(node), sizeof(*names));
    if (names == NULL) {
        return false;
    }
    for (size_t i = 0; i < seq_count(node); i++) {
        const yaml_tree_node_t *item = node->u.sequence.items[i];
        machine_type_t mt = {.price = -1, .spot_price = -1};
        size_t before = ctx->error_count;
        path_index(sub, path, i);
        section_parse(ctx, item, sub, machine_type_keys, TABLE_LEN(machine_type_keys), &mt);
        names[i] = yaml_tree_mapping_get(item, "name");
        if (mt.name == NULL || ctx->error_count != before) {
            machine_type_free(&mt);
            continue;
        }
        bool dup = false;
        for (size_t j = 0; j < i && !dup; j++) {
            if (names[j] != NULL && names[j]->type == YAML_TREE_SCALAR &&
                strcmp(names[j]->u.scalar.text, mt.name) == 0) {
                char name_path[CONFIG_PATH_MAX];
                path_join(name_path, sub, "name");
                ctx_error(ctx, names[i], name_path,
                          "duplicate machine type \"%s\" (first at line %d)", mt.name,
                          names[j]->line);
                dup = true;
            }
        }
        size_t k = 0;
        while (k < builtin && strcmp(cfg->machine_types[k].name, mt.name) != 0) {
            k++;
        }
        machine_type_t *slot = NULL;
        if (!dup && k < builtin) {
            slot = &cfg->machine_types[k];
            machine_type_free(slot);
        } else if (!dup) {
            slot = ctx_grow(ctx, &cfg->machine_types, &cfg->machine_types_count, sizeof(mt));
        }
        if (slot == NULL) {
            machine_type_free(&mt);
            continue;
        }
        *slot = mt;
    }
    free(names);
    return true;
}

/* ---- node groups ---- */

static const key_spec_t options_keys[] = {
    KEY_OPT("scale_down_utilization_threshold", parse_double, group_options_t,
            scale_down_utilization_threshold, has_scale_down_utilization_threshold, 0, 1),
    KEY_OPT("scale_down_gpu_utilization_threshold", parse_double, group_options_t,
            scale_down_gpu_utilization_threshold, has_scale_down_gpu_utilization_threshold, 0, 1),
    KEY_OPT("scale_down_unneeded", parse_positive_duration_ns, group_options_t,
            scale_down_unneeded_ns, has_scale_down_unneeded, -INFINITY, INFINITY),
    KEY_OPT("scale_down_unready", parse_positive_duration_ns, group_options_t,
            scale_down_unready_ns, has_scale_down_unready, -INFINITY, INFINITY),
    KEY_OPT("max_node_provision", parse_positive_duration_ns, group_options_t,
            max_node_provision_ns, has_max_node_provision, -INFINITY, INFINITY),
    KEY_OPT("zero_or_max_node_scaling", parse_bool, group_options_t, zero_or_max_node_scaling,
            has_zero_or_max_node_scaling, -INFINITY, INFINITY),
    KEY_OPT("ignore_daemonsets_utilization", parse_bool, group_options_t,
            ignore_daemonsets_utilization, has_ignore_daemonsets_utilization, -INFINITY, INFINITY),
};

static bool parse_group_options(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                void *field, const key_spec_t *spec) {
    section_parse(ctx, node, path, options_keys, TABLE_LEN(options_keys), field);
    return true;
}

static const key_spec_t group_keys[] = {
    KEY_REQ("id", YAML_TREE_SCALAR, parse_string, node_group_config_t, spec.id),
    KEY_REQ("machine_type", YAML_TREE_SCALAR, parse_string, node_group_config_t, spec.machine_type),
    KEY("zone", YAML_TREE_SCALAR, parse_string, node_group_config_t, spec.zone, NULL),
    KEY_RANGE("min_size", parse_int32, node_group_config_t, min_size, "0", 0, INT32_MAX, false),
    KEY_RANGE("max_size", parse_int32, node_group_config_t, max_size, NULL, 0, INT32_MAX, false),
    KEY_RANGE("size", parse_int32, node_group_config_t, size, NULL, 0, INT32_MAX, false),
    KEY("managed", YAML_TREE_SCALAR, parse_bool, node_group_config_t, managed, "true"),
    KEY("labels", YAML_TREE_MAPPING, parse_labels, node_group_config_t, spec.labels, NULL),
    KEY("taints", YAML_TREE_SEQUENCE, parse_taints, node_group_config_t, spec.taints, NULL),
    KEY("options", YAML_TREE_MAPPING, parse_group_options, node_group_config_t, options, NULL),
    KEY("spot", YAML_TREE_SCALAR, parse_bool, node_group_config_t, spec.spot, "false"),
    KEY_RANGE("spot_price", parse_double, node_group_config_t, spec.spot_price, NULL, 0, INFINITY,
              false),
    KEY_RANGE("scale_up_threshold", parse_int32, node_group_config_t, scale_up_threshold, "70", 0,
              100, true),
    KEY("scale_on_starve", YAML_TREE_SCALAR, parse_bool, node_group_config_t, scale_on_starve,
        "false"),
    KEY("provider_params", YAML_TREE_MAPPING, parse_hook_params, node_group_config_t,
        provider_params, NULL),
};

static void group_spec_release(group_spec_t *s) {
    free(s->id);
    free(s->machine_type);
    free(s->zone);
    kv_list_clear(&s->labels);
    taint_list_clear(&s->taints);
    kv_list_clear(&s->extra_resources);
}

/* Sizes of one group: managed groups need max_size and min <= size <= max; unmanaged
 * groups have a fixed size that stands for min and max alike. */
static void group_check_sizes(load_ctx_t *ctx, const yaml_tree_node_t *item, const char *path,
                              node_group_config_t *g) {
    char sub[CONFIG_PATH_MAX];
    const yaml_tree_node_t *min_n = yaml_tree_mapping_get(item, "min_size");
    const yaml_tree_node_t *max_n = yaml_tree_mapping_get(item, "max_size");
    const yaml_tree_node_t *size_n = yaml_tree_mapping_get(item, "size");
    if (!g->managed) {
        if (min_n != NULL && !yaml_tree_is_null(min_n)) {
            path_join(sub, path, "min_size");
            ctx_error(ctx, min_n, sub, "not allowed for an unmanaged group (set size)");
        }
        if (max_n != NULL && !yaml_tree_is_null(max_n)) {
            path_join(sub, path, "max_size");
            ctx_error(ctx, max_n, sub, "not allowed for an unmanaged group (set size)");
        }
        if (size_n == NULL || yaml_tree_is_null(size_n)) {
            ctx_error(ctx, item, path,
                      "missing required key \"size\" (an unmanaged group has a "
                      "fixed size)");
        } else if (g->size >= 0) {
            g->min_size = g->max_size = g->size;
        }
        return;
    }
    if (max_n == NULL || yaml_tree_is_null(max_n)) {
        ctx_error(ctx, item, path, "missing required key \"max_size\"");
        return;
    }
    if (g->max_size < 0) {
        return; /* already reported */
    }
    if (g->min_size > g->max_size) {
        path_join(sub, path, "min_size");
        ctx_error(ctx, min_n, sub, "min_size %" PRId32 " is greater than max_size %" PRId32,
                  g->min_size, g->max_size);
        return;
    }
    if (g->size >= 0 && (g->size < g->min_size || g->size > g->max_size)) {
        path_join(sub, path, "size");
        ctx_error(ctx, size_n, sub,
                  "size %" PRId32 " is outside [min_size %" PRId32 ", max_size %" PRId32 "]",
                  g->size, g->min_size, g->max_size);
    }
}

/* Relies on the effective catalog (machine_types). */
static bool parse_node_groups(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                              void *field, const key_spec_t *spec) {
    frugal_config_t *cfg = ctx->cfg;
    char sub[CONFIG_PATH_MAX];
    char key_path[CONFIG_PATH_MAX];
    size_t n = seq_count(node);
    const yaml_tree_node_t **ids = ctx_calloc(ctx, n, sizeof(*ids));
    ctx->group_nodes = ctx_calloc(ctx, n, sizeof(*ctx->group_nodes));
    if (ids == NULL || ctx->group_nodes == NULL) {
        free(ids);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        const yaml_tree_node_t *item = node->u.sequence.items[i];
        node_group_config_t g = {.max_size = -1, .size = -1, .spec.spot_price = -1};
        size_t before = ctx->error_count;
        path_index(sub, path, i);
        section_parse(ctx, item, sub, group_keys, TABLE_LEN(group_keys), &g);
        if (item->type == YAML_TREE_MAPPING) {
            group_check_sizes(ctx, item, sub, &g);
        }
        const yaml_tree_node_t *id_n = yaml_tree_mapping_get(item, "id");
        ids[i] = g.spec.id != NULL ? id_n : NULL;
        path_join(key_path, sub, "id");
        if (g.spec.id != NULL && !k8s_name_is_dns_label(g.spec.id)) {
            ctx_error(ctx, id_n, key_path,
                      "invalid id \"%s\": must be 1-63 lowercase alphanumerics or '-', starting "
                      "and ending with an alphanumeric",
                      g.spec.id);
        }
        for (size_t j = 0; g.spec.id != NULL && j < i; j++) {
            if (ids[j] != NULL && strcmp(ids[j]->u.scalar.text, g.spec.id) == 0) {
                ctx_error(ctx, id_n, key_path, "duplicate node group id \"%s\" (first at line %d)",
                          g.spec.id, ids[j]->line);
                break;
            }
        }
        if (g.spec.machine_type != NULL &&
            config_find_machine_type(cfg, g.spec.machine_type) == NULL) {
            path_join(key_path, sub, "machine_type");
            ctx_error(ctx, yaml_tree_mapping_get(item, "machine_type"), key_path,
                      "unknown machine type \"%s\"%s", g.spec.machine_type,
                      cfg->pricing.builtin_catalog ? "" : " (pricing.catalog is none)");
        }
        node_group_config_t *slot =
            ctx->error_count == before
                ? ctx_grow(ctx, &cfg->node_groups, &cfg->node_groups_count, sizeof(g))
                : NULL;
        if (slot == NULL) {
            group_spec_release(&g.spec);
            kv_list_clear(&g.provider_params);
            continue;
        }
        ctx->group_nodes[cfg->node_groups_count - 1] = item;
        *slot = g;
    }
    free(ids);
    return true;
}

/* ---- autoprovisioning ---- */

static void strings_free(char **items, size_t count) {
    for (size_t i = 0; i < count; i++) {
        free(items[i]);
    }
    free(items);
}

/* A sequence of distinct non-empty strings. */
static void parse_strings(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                          char ***items, size_t *count) {
    char sub[CONFIG_PATH_MAX];
    for (size_t i = 0; i < seq_count(node); i++) {
        const yaml_tree_node_t *item = node->u.sequence.items[i];
        path_index(sub, path, i);
        if (item->type != YAML_TREE_SCALAR || yaml_tree_is_null(item)) {
            ctx_error(ctx, item, sub, "expected a string, got %s", node_describe(item));
            continue;
        }
        bool dup = false;
        for (size_t j = 0; j < *count && !dup; j++) {
            dup = strcmp((*items)[j], item->u.scalar.text) == 0;
        }
        if (dup) {
            ctx_error(ctx, item, sub, "duplicate entry \"%s\"", item->u.scalar.text);
            continue;
        }
        char *s = NULL;
        if (!parse_string(ctx, item, sub, &s, NULL)) {
            continue;
        }
        char **slot = ctx_grow(ctx, items, count, sizeof(char *));
        if (slot == NULL) {
            free(s);
            return;
        }
        *slot = s;
    }
}

/* Relies on the effective catalog. Absent: every machine type of the catalog. */
static bool parse_ap_machine_types(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                   void *field, const key_spec_t *spec) {
    frugal_config_t *cfg = ctx->cfg;
    autoprov_config_t *ap = &cfg->autoprovisioning;
    if (node == NULL) {
        for (size_t i = 0; i < cfg->machine_types_count; i++) {
            char **slot =
                ctx_grow(ctx, &ap->machine_types, &ap->machine_types_count, sizeof(char *));
            if (slot == NULL || (*slot = ctx_strdup(ctx, cfg->machine_types[i].name)) == NULL) {
                return false;
            }
        }
        return true;
    }
    parse_strings(ctx, node, path, &ap->machine_types, &ap->machine_types_count);
    char sub[CONFIG_PATH_MAX];
    for (size_t i = 0; i < node->u.sequence.count; i++) {
        const yaml_tree_node_t *item = node->u.sequence.items[i];
        if (item->type == YAML_TREE_SCALAR && !yaml_tree_is_null(item) &&
            config_find_machine_type(cfg, item->u.scalar.text) == NULL) {
            path_index(sub, path, i);
            ctx_error(ctx, item, sub, "unknown machine type \"%s\"", item->u.scalar.text);
        }
    }
    return true;
}

/* Relies on the node groups. Absent: the distinct zones of the groups, in order. */
static bool parse_ap_zones(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           void *field, const key_spec_t *spec) {
    frugal_config_t *cfg = ctx->cfg;
    autoprov_config_t *ap = &cfg->autoprovisioning;
    if (node != NULL) {
        parse_strings(ctx, node, path, &ap->zones, &ap->zones_count);
        return true;
    }
    for (size_t i = 0; i < cfg->node_groups_count; i++) {
        const char *zone = cfg->node_groups[i].spec.zone;
        bool seen = zone == NULL;
        for (size_t j = 0; j < ap->zones_count && !seen; j++) {
            seen = strcmp(ap->zones[j], zone) == 0;
        }
        if (seen) {
            continue;
        }
        char **slot = ctx_grow(ctx, &ap->zones, &ap->zones_count, sizeof(char *));
        if (slot == NULL || (*slot = ctx_strdup(ctx, zone)) == NULL) {
            return false;
        }
    }
    return true;
}

static bool parse_ap_label_sets(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                void *field, const key_spec_t *spec) {
    autoprov_config_t *ap = &ctx->cfg->autoprovisioning;
    char sub[CONFIG_PATH_MAX];
    for (size_t i = 0; i < seq_count(node); i++) {
        const yaml_tree_node_t *item = node->u.sequence.items[i];
        path_index(sub, path, i);
        kv_list_t l = {0};
        if (!parse_labels(ctx, item, sub, &l, NULL)) {
            kv_list_clear(&l);
            continue;
        }
        kv_list_t *slot = ctx_grow(ctx, &ap->label_sets, &ap->label_sets_count, sizeof(l));
        if (slot == NULL) {
            kv_list_clear(&l);
            return false;
        }
        *slot = l;
    }
    return true;
}

static const key_spec_t limits_keys[] = {
    KEY_RANGE("min_cpu", parse_cpu, autoprov_config_t, min_cpu_milli, "0", 0, INFINITY, false),
    KEY_RANGE("max_cpu", parse_cpu, autoprov_config_t, max_cpu_milli, NULL, 0, INFINITY, false),
    KEY_RANGE("min_memory", parse_bytes, autoprov_config_t, min_memory_bytes, "0", 0, INFINITY,
              false),
    KEY_RANGE("max_memory", parse_bytes, autoprov_config_t, max_memory_bytes, NULL, 0, INFINITY,
              false),
};

/* limits: stored in the autoprovisioning struct itself (offset 0 of it). */
static bool parse_ap_limits(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                            void *field, const key_spec_t *spec) {
    autoprov_config_t *ap = field;
    char sub[CONFIG_PATH_MAX];
    size_t before = ctx->error_count;
    section_parse(ctx, node, path, limits_keys, TABLE_LEN(limits_keys), ap);
    if (ctx->error_count != before) {
        return false;
    }
    if (ap->min_cpu_milli > ap->max_cpu_milli) {
        path_join(sub, path, "min_cpu");
        ctx_error(ctx, yaml_tree_mapping_get(node, "min_cpu"), sub,
                  "min_cpu is greater than max_cpu");
    }
    if (ap->min_memory_bytes > ap->max_memory_bytes) {
        path_join(sub, path, "min_memory");
        ctx_error(ctx, yaml_tree_mapping_get(node, "min_memory"), sub,
                  "min_memory is greater than max_memory");
    }
    return true;
}

static bool parse_ap_prefix(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                            void *field, const key_spec_t *spec) {
    const char *s = node->u.scalar.text;
    if (!k8s_name_is_dns_label(s) || strlen(s) > 20) {
        ctx_error(ctx, node, path,
                  "invalid prefix \"%s\": must be 1-20 lowercase alphanumerics or '-', starting "
                  "and ending with an alphanumeric",
                  s);
        return false;
    }
    return parse_string(ctx, node, path, field, spec);
}

static const key_spec_t autoprov_keys[] = {
    KEY("enabled", YAML_TREE_SCALAR, parse_bool, autoprov_config_t, enabled, "false"),
    KEY("prefix", YAML_TREE_SCALAR, parse_ap_prefix, autoprov_config_t, prefix, "nap"),
    KEY("machine_types", YAML_TREE_SEQUENCE, parse_ap_machine_types, autoprov_config_t,
        machine_types, NULL),
    KEY("zones", YAML_TREE_SEQUENCE, parse_ap_zones, autoprov_config_t, zones, NULL),
    KEY("label_sets", YAML_TREE_SEQUENCE, parse_ap_label_sets, autoprov_config_t, label_sets,
        "[{}]"),
    /* offset 0: parse_ap_limits fills the autoprovisioning struct itself */
    KEY("limits", YAML_TREE_MAPPING, parse_ap_limits, autoprov_config_t, enabled, NULL),
    KEY_RANGE("max_node_groups", parse_int32, autoprov_config_t, max_node_groups, "50", 0,
              INT32_MAX, false),
    KEY("empty_group_ttl", YAML_TREE_SCALAR, parse_duration_ms, autoprov_config_t,
        empty_group_ttl_ms, "10m"),
    KEY_RANGE("max_theoretical_groups", parse_int32, autoprov_config_t, max_theoretical_groups,
              "200", 0, INT32_MAX, false),
};

/* Relies on the node groups: with autoprovisioning on, no configured id may look like
 * an autoprovisioned one. */
static bool parse_autoprov(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           void *field, const key_spec_t *spec) {
    frugal_config_t *cfg = ctx->cfg;
    autoprov_config_t *ap = field;
    ap->max_cpu_milli = INT64_MAX;
    ap->max_memory_bytes = INT64_MAX;
    section_parse(ctx, node, path, autoprov_keys, TABLE_LEN(autoprov_keys), ap);
    if (!ap->enabled || ap->prefix == NULL) {
        return true;
    }
    size_t plen = strlen(ap->prefix);
    for (size_t i = 0; i < cfg->node_groups_count; i++) {
        const char *id = cfg->node_groups[i].spec.id;
        if (strncmp(id, ap->prefix, plen) == 0 && id[plen] == '-') {
            char sub[CONFIG_PATH_MAX];
            snprintf(sub, sizeof(sub), "node_groups[%zu].id", i);
            ctx_error(ctx, yaml_tree_mapping_get(ctx->group_nodes[i], "id"), sub,
                      "id \"%s\" starts with the autoprovisioning prefix \"%s-\"", id, ap->prefix);
        }
    }
    return true;
}

/* ---- ranking ---- */

static const key_spec_t damper_keys[] = {
    KEY_RANGE("cpu", parse_cpu, resources_t, cpu_milli, "500m", 0, INFINITY, false),
    KEY_RANGE("memory", parse_bytes, resources_t, memory_bytes, "500Mi", 0, INFINITY, false),
};

static bool parse_damper(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                         void *field, const key_spec_t *spec) {
    section_parse(ctx, node, path, damper_keys, TABLE_LEN(damper_keys), field);
    return true;
}

static const key_spec_t preferred_keys[] = {
    KEY_RANGE("max_nodes", parse_int32, preferred_node_t, max_nodes, NULL, 1, INT32_MAX, false),
    KEY_REQ_RANGE("cpu", parse_cpu, preferred_node_t, cpu_milli, 0, INFINITY, true),
};

/* Strictly ascending max_nodes; only the last entry, which must exist, is unbounded. */
static bool parse_preferred_nodes(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                  void *field, const key_spec_t *spec) {
    ranking_config_t *r = &ctx->cfg->ranking;
    char sub[CONFIG_PATH_MAX];
    size_t before = ctx->error_count;
    if (seq_count(node) == 0) {
        ctx_error(ctx, node, path, "at least one entry is required");
        return false;
    }
    size_t n = node->u.sequence.count;
    free(r->preferred_nodes);
    r->preferred_nodes_count = 0;
    r->preferred_nodes = ctx_calloc(ctx, n, sizeof(preferred_node_t));
    if (r->preferred_nodes == NULL) {
        return false;
    }
    r->preferred_nodes_count = n;
    for (size_t i = 0; i < n; i++) {
        const yaml_tree_node_t *item = node->u.sequence.items[i];
        preferred_node_t *p = &r->preferred_nodes[i];
        size_t item_before = ctx->error_count;
        p->max_nodes = -1;
        path_index(sub, path, i);
        section_parse(ctx, item, sub, preferred_keys, TABLE_LEN(preferred_keys), p);
        if (ctx->error_count != item_before) {
            continue;
        }
        if (p->max_nodes < 0 && i + 1 < n) {
            ctx_error(ctx, item, sub, "only the last entry may omit max_nodes");
        } else if (p->max_nodes >= 0 && i + 1 == n) {
            ctx_error(ctx, item, sub,
                      "the last entry must omit max_nodes: it covers every larger cluster");
        } else if (i > 0 && p->max_nodes >= 0 && r->preferred_nodes[i - 1].max_nodes >= 0 &&
                   p->max_nodes <= r->preferred_nodes[i - 1].max_nodes) {
            char max_path[CONFIG_PATH_MAX];
            path_join(max_path, sub, "max_nodes");
            ctx_error(ctx, yaml_tree_mapping_get(item, "max_nodes"), max_path,
                      "max_nodes must be ascending: %" PRId32 " follows %" PRId32, p->max_nodes,
                      r->preferred_nodes[i - 1].max_nodes);
        }
    }
    return ctx->error_count == before;
}

static bool parse_strategy(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           void *field, const key_spec_t *spec) {
    int s = config_ranking_strategy_parse(node->u.scalar.text);
    if (s < 0) {
        ctx_error(ctx, node, path,
                  "unknown strategy \"%s\" (expected pricing-proposal or demand-fit)",
                  node->u.scalar.text);
        return false;
    }
    *(ranking_strategy_t *)field = (ranking_strategy_t)s;
    return true;
}

/* A node count (>= 1), or `auto`: RANKING_CLUSTER_SIZE_AUTO. */
static bool parse_cluster_size(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                               void *field, const key_spec_t *spec) {
    if (strcmp(node->u.scalar.text, "auto") == 0) {
        *(int64_t *)field = RANKING_CLUSTER_SIZE_AUTO;
        return true;
    }
    int64_t v;
    if (!scalar_to_int64(node, &v) || v < 1) {
        ctx_error(ctx, node, path, "expected auto or a node count >= 1, got \"%s\"",
                  node->u.scalar.text);
        return false;
    }
    *(int64_t *)field = v;
    return true;
}

static const key_spec_t ranking_keys[] = {
    KEY("strategy", YAML_TREE_SCALAR, parse_strategy, ranking_config_t, strategy, "demand-fit"),
    KEY("cluster_size", YAML_TREE_SCALAR, parse_cluster_size, ranking_config_t, cluster_size,
        "auto"),
    KEY("damper", YAML_TREE_MAPPING, parse_damper, ranking_config_t, damper, NULL),
    KEY("preferred_nodes", YAML_TREE_SEQUENCE, parse_preferred_nodes, ranking_config_t,
        preferred_nodes,
        "[{max_nodes: 2, cpu: 1}, {max_nodes: 6, cpu: 2}, {max_nodes: 20, cpu: 4},"
        " {max_nodes: 80, cpu: 8}, {max_nodes: 300, cpu: 16}, {cpu: 32}]"),
    KEY_RANGE("suppress_scale", parse_double, ranking_config_t, suppress_scale, "15", 0, INFINITY,
              true),
    KEY_RANGE("gpu_unfitness", parse_double, ranking_config_t, gpu_unfitness, "1000", 0, INFINITY,
              true),
    KEY_RANGE("not_exist_penalty", parse_double, ranking_config_t, not_exist_penalty, "2.0", 0,
              INFINITY, true),
};

static bool parse_ranking(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                          void *field, const key_spec_t *spec) {
    section_parse(ctx, node, path, ranking_keys, TABLE_LEN(ranking_keys), field);
    return true;
}

const char *config_ranking_strategy_name(ranking_strategy_t s) {
    return s == RANKING_STRATEGY_DEMAND_FIT ? "demand-fit" : "pricing-proposal";
}

int config_ranking_strategy_parse(const char *name) {
    if (strcmp(name, "pricing-proposal") == 0)
        return RANKING_STRATEGY_PRICING_PROPOSAL;
    if (strcmp(name, "demand-fit") == 0)
        return RANKING_STRATEGY_DEMAND_FIT;
    return -1;
}

bool config_simulated_exposed(const frugal_config_t *cfg, char *buf, size_t size) {
    if (cfg->provider_kind != NULL && strcmp(cfg->provider_kind, "simulated") != 0)
        return false;
    for (size_t i = 0; i < cfg->listeners_count; i++) {
        bool loopback = true;
        if (address_problem(cfg->listeners[i].address, &loopback) == NULL && !loopback) {
            snprintf(buf, size,
                     "provider kind simulated on listener %s, which other machines can reach: "
                     "scale-ups create no real machine (set provider.kind: exec to drive "
                     "your infrastructure; docs/hooks.md)",
                     cfg->listeners[i].address);
            return true;
        }
    }
    return false;
}

bool config_ranking_size_unknown(const frugal_config_t *cfg, char *buf, size_t size) {
    const ranking_config_t *r = &cfg->ranking;
    if (r->strategy != RANKING_STRATEGY_PRICING_PROPOSAL ||
        r->cluster_size != RANKING_CLUSTER_SIZE_AUTO || cfg->autoprovisioning.enabled)
        return false;
    for (size_t i = 0; i < cfg->node_groups_count; i++)
        if (cfg->node_groups[i].managed)
            return false;
    snprintf(buf, size,
             "ranking: the pricing-proposal strategy prefers a node size by cluster size, but "
             "frugal manages no group and cannot count the cluster's nodes; every option is "
             "ranked as for an empty cluster. Set ranking.cluster_size, or ranking.strategy: "
             "demand-fit");
    return true;
}

/* ---- state ---- */

static bool parse_state_backend(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                void *field, const key_spec_t *spec) {
    const char *s = node->u.scalar.text;
    state_config_t *st = &ctx->cfg->state;
    if (strcmp(s, "file") == 0) {
        st->backend = STATE_BACKEND_FILE;
    } else if (strcmp(s, "etcd") == 0) {
        st->backend = STATE_BACKEND_ETCD;
    } else {
        ctx_error(ctx, node, path, "unknown state backend \"%s\" (expected file or etcd)", s);
        return false;
    }
    return parse_string(ctx, node, path, field, spec);
}

/* http://HOST:PORT or https://HOST:PORT; NULL when fine, else the reason. */
static const char *endpoint_problem(const char *e) {
    const char *rest = strncmp(e, "https://", 8) == 0  ? e + 8
                       : strncmp(e, "http://", 7) == 0 ? e + 7
                                                       : NULL;
    if (rest == NULL)
        return "must start with http:// or https://";
    const char *colon = strrchr(rest, ':');
    if (colon == NULL || colon == rest)
        return "must be SCHEME://HOST:PORT";
    for (const char *p = rest; *p != '\0'; p++) {
        if (*p == '/' || *p == '?' || *p == '#' || *p == '@' || (unsigned char)*p <= ' ')
            return "must be SCHEME://HOST:PORT, without a path, user or spaces";
    }
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || port < 1 || port > 65535)
        return "the port must be a number from 1 to 65535";
    return NULL;
}

static bool parse_state_endpoints(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                  void *field, const key_spec_t *spec) {
    state_config_t *st = &ctx->cfg->state;
    char sub[CONFIG_PATH_MAX];
    if (node == NULL)
        return true;
    if (seq_count(node) == 0) {
        ctx_error(ctx, node, path, "at least one endpoint is required");
        return false;
    }
    size_t before = ctx->error_count;
    parse_strings(ctx, node, path, &st->endpoints, &st->endpoints_count);
    bool https = false, http = false;
    for (size_t i = 0; i < st->endpoints_count && ctx->error_count == before; i++) {
        const char *why = endpoint_problem(st->endpoints[i]);
        path_index(sub, path, i);
        if (why != NULL) {
            ctx_error(ctx, node->u.sequence.items[i], sub, "endpoint \"%s\": %s", st->endpoints[i],
                      why);
            continue;
        }
        https = https || strncmp(st->endpoints[i], "https://", 8) == 0;
        http = http || strncmp(st->endpoints[i], "http://", 7) == 0;
    }
    if (https && http)
        ctx_error(ctx, node, path, "mixes http:// and https:// endpoints");
    return ctx->error_count == before;
}

static bool parse_state_prefix(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                               void *field, const key_spec_t *spec) {
    const char *s = node->u.scalar.text;
    size_t n = strlen(s);
    if (n < 2 || s[0] != '/' || s[n - 1] != '/') {
        ctx_error(ctx, node, path, "must start and end with / and name something, got \"%s\"", s);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f) {
            ctx_error(ctx, node, path, "must be printable ASCII without spaces, got \"%s\"", s);
            return false;
        }
    }
    return parse_string(ctx, node, path, field, spec);
}

static const key_spec_t state_tls_keys[] = {
    KEY("ca", YAML_TREE_SCALAR, parse_string, state_config_t, tls_ca, NULL),
    KEY("cert", YAML_TREE_SCALAR, parse_string, state_config_t, tls_cert, NULL),
    KEY("key", YAML_TREE_SCALAR, parse_string, state_config_t, tls_key, NULL),
};

static bool parse_state_tls(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                            void *field, const key_spec_t *spec) {
    state_config_t *st = &ctx->cfg->state;
    if (node == NULL)
        return true;
    section_parse(ctx, node, path, state_tls_keys, TABLE_LEN(state_tls_keys), st);
    if ((st->tls_cert == NULL) != (st->tls_key == NULL))
        ctx_error(ctx, node, path, "%s is set without %s", st->tls_cert != NULL ? "cert" : "key",
                  st->tls_cert != NULL ? "key" : "cert");
    return true;
}

/* A duration within [lo_ms, hi_ms]. */
static bool state_duration(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           void *field, int64_t lo_ms, int64_t hi_ms, const char *lo,
                           const char *hi) {
    int64_t ms = 0;
    if (!duration_store(ctx, node, path, &ms, 1000000))
        return false;
    if (ms < lo_ms || ms > hi_ms) {
        ctx_error(ctx, node, path, "must be from %s to %s, got %s", lo, hi, node->u.scalar.text);
        return false;
    }
    *(int64_t *)field = ms;
    return true;
}

static bool parse_lease_ttl(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                            void *field, const key_spec_t *spec) {
    return state_duration(ctx, node, path, field, 2000, 300000, "2s", "5m");
}

static bool parse_request_timeout(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                  void *field, const key_spec_t *spec) {
    return state_duration(ctx, node, path, field, 100, 60000, "100ms", "1m");
}

static const key_spec_t state_keys[] = {
    KEY_REQ("backend", YAML_TREE_SCALAR, parse_state_backend, state_config_t, backend_name),
    KEY("path", YAML_TREE_SCALAR, parse_string, state_config_t, path, NULL),
    KEY("endpoints", YAML_TREE_SEQUENCE, parse_state_endpoints, state_config_t, endpoints, NULL),
    KEY("prefix", YAML_TREE_SCALAR, parse_state_prefix, state_config_t, prefix, NULL),
    KEY("tls", YAML_TREE_MAPPING, parse_state_tls, state_config_t, tls_ca, NULL),
    KEY("lease_ttl", YAML_TREE_SCALAR, parse_lease_ttl, state_config_t, lease_ttl_ms, "10s"),
    KEY("request_timeout", YAML_TREE_SCALAR, parse_request_timeout, state_config_t,
        request_timeout_ms, "2s"),
};

/* Keys of one backend given with the other, and the keys each backend requires. */
static void state_check_backend(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path) {
    static const char *const etcd_only[] = {"endpoints", "prefix", "tls", "lease_ttl",
                                            "request_timeout"};
    state_config_t *st = &ctx->cfg->state;
    char sub[CONFIG_PATH_MAX];
    bool etcd = st->backend == STATE_BACKEND_ETCD;
    for (size_t i = 0; i < node->u.mapping.count; i++) {
        const yaml_tree_node_t *k = node->u.mapping.items[i].key;
        if (k->type != YAML_TREE_SCALAR)
            continue;
        bool only_etcd = false;
        for (size_t j = 0; j < TABLE_LEN(etcd_only); j++)
            only_etcd = only_etcd || strcmp(k->u.scalar.text, etcd_only[j]) == 0;
        path_join(sub, path, k->u.scalar.text);
        if (only_etcd && !etcd)
            ctx_error(ctx, k, sub, "only valid with backend etcd");
        else if (etcd && strcmp(k->u.scalar.text, "path") == 0)
            ctx_error(ctx, k, sub, "only valid with backend file");
    }
    if (!etcd && st->path == NULL) {
        ctx_error(ctx, node, path, "missing required key \"path\" (backend file)");
    } else if (etcd) {
        if (st->endpoints_count == 0 && yaml_tree_mapping_get(node, "endpoints") == NULL)
            ctx_error(ctx, node, path, "missing required key \"endpoints\" (backend etcd)");
        if (st->prefix == NULL && yaml_tree_mapping_get(node, "prefix") == NULL)
            ctx_error(ctx, node, path, "missing required key \"prefix\" (backend etcd)");
        bool https = st->endpoints_count > 0 && strncmp(st->endpoints[0], "https://", 8) == 0;
        const yaml_tree_node_t *tls = yaml_tree_mapping_get(node, "tls");
        if (tls != NULL && !yaml_tree_is_null(tls) && st->endpoints_count > 0 && !https) {
            path_join(sub, path, "tls");
            ctx_error(ctx, tls, sub, "needs https:// endpoints");
        }
    }
}

static bool parse_state(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                        void *field, const key_spec_t *spec) {
    state_config_t *st = &ctx->cfg->state;
    if (node == NULL) {
        if (ctx->cfg->state_file != NULL) {
            st->backend = STATE_BACKEND_FILE;
            st->path = ctx_strdup(ctx, ctx->cfg->state_file);
        }
        return true;
    }
    if (ctx->cfg->state_file != NULL) {
        ctx_error(ctx, node, path,
                  "state and state_file are exclusive (state_file: PATH is short for "
                  "state: {backend: file, path: PATH})");
        return false;
    }
    size_t before = ctx->error_count;
    section_parse(ctx, node, path, state_keys, TABLE_LEN(state_keys), st);
    if (ctx->error_count == before)
        state_check_backend(ctx, node, path);
    if (ctx->error_count != before)
        return false;
    if (st->backend == STATE_BACKEND_FILE)
        ctx->cfg->state_file = ctx_strdup(ctx, st->path);
    return true;
}

static void state_config_free(state_config_t *st) {
    free(st->backend_name);
    free(st->path);
    strings_free(st->endpoints, st->endpoints_count);
    free(st->prefix);
    free(st->tls_ca);
    free(st->tls_cert);
    free(st->tls_key);
}

/* ---- limits ---- */

#define LIMITS_MEMORY_SLACK (64LL << 20)

static const key_spec_t limits_keys_top[] = {
    KEY_RANGE("memory", parse_bytes, limits_config_t, memory_bytes, NULL, 1, INFINITY, false),
    KEY("receive_timeout", YAML_TREE_SCALAR, parse_duration_ms, limits_config_t, receive_timeout_ms,
        "30s"),
    KEY("idle_timeout", YAML_TREE_SCALAR, parse_duration_ms, limits_config_t, idle_timeout_ms,
        "5m"),
    KEY_RANGE("max_concurrent_streams", parse_int32, limits_config_t, max_concurrent_streams, "100",
              1, INT32_MAX, false),
    KEY_RANGE("max_calls_per_worker", parse_int32, limits_config_t, max_calls_per_worker, "256", 1,
              1000000, false),
    KEY_RANGE("max_header_bytes", parse_bytes, limits_config_t, max_header_bytes, "16Ki", 1024,
              INT32_MAX, false),
};

/* Relies on max_message_bytes: a memory budget that is set must hold one message of the
 * largest size; unset, it follows the container (cgroup.h: 75 % of its limit), else room
 * for two messages of the largest size plus 64 MiB. */
static bool parse_limits(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                         void *field, const key_spec_t *spec) {
    limits_config_t *l = field;
    size_t before = ctx->error_count;
    section_parse(ctx, node, path, limits_keys_top, TABLE_LEN(limits_keys_top), l);
    if (ctx->error_count != before)
        return false;
    int64_t max_msg = ctx->cfg->max_message_bytes;
    if (l->memory_bytes == 0) {
        l->memory_source_unreadable =
            cgroup_memory_budget(cgroup_root(), 2 * max_msg + LIMITS_MEMORY_SLACK, &l->memory_bytes,
                                 l->memory_source,
                                 sizeof(l->memory_source)) == CGROUP_LIMIT_UNREADABLE;
        return true;
    }
    snprintf(l->memory_source, sizeof(l->memory_source), "limits.memory");
    if (l->memory_bytes < max_msg) {
        char sub[CONFIG_PATH_MAX];
        path_join(sub, path, "memory");
        ctx_error(ctx, yaml_tree_mapping_get(node, "memory"), sub,
                  "%" PRId64 " bytes cannot hold one message of max_message_bytes (%" PRId64 ")",
                  l->memory_bytes, max_msg);
        return false;
    }
    return true;
}

/* ---- top level ---- */

/* Order matters: each section may rely on those above it. */
static const key_spec_t top_keys[] = {
    KEY("allow_insecure", YAML_TREE_SCALAR, parse_bool, frugal_config_t, allow_insecure, "false"),
    KEY_RANGE("max_message_bytes", parse_int64, frugal_config_t, max_message_bytes, "536870912", 1,
              INT32_MAX, false),
    KEY("listen", YAML_TREE_SEQUENCE, parse_listeners, frugal_config_t, listeners,
        "[{address: \"127.0.0.1:8086\"}]"),
    KEY("ops_listen", YAML_TREE_SCALAR, parse_ops_listen, frugal_config_t, ops_listen, NULL),
    KEY("state_file", YAML_TREE_SCALAR, parse_string, frugal_config_t, state_file, NULL),
    KEY("state", YAML_TREE_MAPPING, parse_state, frugal_config_t, state, NULL),
    /* provider's keys live in frugal_config_t itself (provider_kind, boot_seconds) */
    KEY("provider", YAML_TREE_MAPPING, parse_provider, frugal_config_t, provider_kind, NULL),
    KEY("pricing", YAML_TREE_MAPPING, parse_pricing, frugal_config_t, pricing, NULL),
    KEY("machine_types", YAML_TREE_SEQUENCE, parse_machine_types, frugal_config_t, machine_types,
        NULL),
    KEY("node_groups", YAML_TREE_SEQUENCE, parse_node_groups, frugal_config_t, node_groups, NULL),
    KEY("autoprovisioning", YAML_TREE_MAPPING, parse_autoprov, frugal_config_t, autoprovisioning,
        NULL),
    KEY("ranking", YAML_TREE_MAPPING, parse_ranking, frugal_config_t, ranking, NULL),
    KEY("limits", YAML_TREE_MAPPING, parse_limits, frugal_config_t, limits, NULL),
};

int config_load_string(const char *name, const char *text, size_t len, frugal_config_t **out,
                       char **errors) {
    load_ctx_t ctx = {.name = name != NULL ? name : "<config>"};
    yaml_tree_node_t *root = NULL;
    yaml_tree_error_t yerr;
    int rc = FRUGAL_EINVAL;

    *out = NULL;
    if (errors != NULL) {
        *errors = NULL;
    }
    ctx.cfg = calloc(1, sizeof(*ctx.cfg));
    if (ctx.cfg == NULL || (ctx.cfg->path = strdup(ctx.name)) == NULL) {
        free(ctx.cfg);
        return FRUGAL_ENOMEM;
    }
    if (yaml_tree_load(text, len, &root, &yerr) != 0) {
        yaml_tree_node_t at = {.line = yerr.line, .column = yerr.column};
        ctx_error(&ctx, yerr.line > 0 ? &at : NULL, NULL, "%s", yerr.message);
    } else {
        if (root != NULL && root->type != YAML_TREE_MAPPING) {
            ctx_error(&ctx, root, NULL, "the configuration must be a mapping, got %s",
                      node_describe(root));
        }
        section_parse(&ctx, root != NULL && root->type == YAML_TREE_MAPPING ? root : NULL, "",
                      top_keys, TABLE_LEN(top_keys), ctx.cfg);
    }
    yaml_tree_free(root);
    free(ctx.group_nodes);
    if (ctx.oom) {
        rc = FRUGAL_ENOMEM;
    } else if (ctx.error_count == 0) {
        *out = ctx.cfg;
        ctx.cfg = NULL;
        rc = 0;
    }
    config_free(ctx.cfg);
    if (errors != NULL && rc != 0) {
        *errors = ctx.errors;
        ctx.errors = NULL;
    }
    free(ctx.errors);
    return rc;
}

int config_load(const char *path, frugal_config_t **out, char **errors) {
    *out = NULL;
    if (errors != NULL) {
        *errors = NULL;
    }
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    size_t len = 0, cap = 0;
    if (f == NULL) {
        goto fail_io;
    }
    for (;;) {
        if (len + 4096 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *p = realloc(text, cap);
            if (p == NULL) {
                fclose(f);
                free(text);
                return FRUGAL_ENOMEM;
            }
            text = p;
        }
        size_t n = fread(text + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            break;
        }
    }
    if (ferror(f)) {
        fclose(f);
        goto fail_io;
    }
    fclose(f);
    int rc = config_load_string(path, text != NULL ? text : "", len, out, errors);
    free(text);
    return rc;

fail_io : {
    const char *reason = strerror(errno);
    free(text);
    if (errors != NULL) {
        size_t n = strlen(path) + strlen(reason) + 32;
        *errors = malloc(n);
        if (*errors != NULL) {
            snprintf(*errors, n, "%s: cannot read: %s\n", path, reason);
        }
    }
    return FRUGAL_EIO;
}
}

void config_free(frugal_config_t *cfg) {
    if (cfg == NULL) {
        return;
    }
    free(cfg->path);
    for (size_t i = 0; i < cfg->listeners_count; i++) {
        listener_free(&cfg->listeners[i]);
    }
    free(cfg->listeners);
    free(cfg->state_file);
    free(cfg->ops_listen);
    state_config_free(&cfg->state);
    free(cfg->provider_kind);
    free(cfg->exec_command);
    for (size_t i = 0; i < cfg->machine_types_count; i++) {
        machine_type_free(&cfg->machine_types[i]);
    }
    free(cfg->machine_types);
    for (size_t i = 0; i < cfg->node_groups_count; i++) {
        group_spec_release(&cfg->node_groups[i].spec);
        kv_list_clear(&cfg->node_groups[i].provider_params);
    }
    free(cfg->node_groups);
    kv_list_clear(&cfg->exec_params);
    kv_list_clear(&cfg->exec_env_files);
    autoprov_config_t *ap = &cfg->autoprovisioning;
    free(ap->prefix);
    strings_free(ap->machine_types, ap->machine_types_count);
    strings_free(ap->zones, ap->zones_count);
    for (size_t i = 0; i < ap->label_sets_count; i++) {
        kv_list_clear(&ap->label_sets[i]);
    }
    free(ap->label_sets);
    free(cfg->ranking.preferred_nodes);
    free(cfg);
}

const machine_type_t *config_find_machine_type(const frugal_config_t *cfg, const char *name) {
    for (size_t i = 0; name != NULL && i < cfg->machine_types_count; i++) {
        if (strcmp(cfg->machine_types[i].name, name) == 0) {
            return &cfg->machine_types[i];
        }
    }
    return NULL;
}

const node_group_config_t *config_find_node_group(const frugal_config_t *cfg, const char *id) {
    for (size_t i = 0; id != NULL && i < cfg->node_groups_count; i++) {
        if (strcmp(cfg->node_groups[i].spec.id, id) == 0) {
            return &cfg->node_groups[i];
        }
    }
    return NULL;
}

/* ---- summary ---- */

static const char *format_duration_ms(int64_t ms, char *buf, size_t size) {
    if (ms % 3600000 == 0 && ms != 0) {
        snprintf(buf, size, "%" PRId64 "h", ms / 3600000);
    } else if (ms % 60000 == 0 && ms != 0) {
        snprintf(buf, size, "%" PRId64 "m", ms / 60000);
    } else if (ms % 1000 == 0) {
        snprintf(buf, size, "%" PRId64 "s", ms / 1000);
    } else {
        snprintf(buf, size, "%" PRId64 "ms", ms);
    }
    return buf;
}

#define SUMMARY_MAX_GROUPS 12

void config_print_summary(const frugal_config_t *cfg, FILE *f) {
    char a[32], b[32], c[32], d[32];
    size_t managed = 0;
    for (size_t i = 0; i < cfg->node_groups_count; i++) {
        managed += cfg->node_groups[i].managed;
    }
    fprintf(f, "%s: OK\n", cfg->path);
    for (size_t i = 0; i < cfg->listeners_count; i++) {
        const listener_config_t *l = &cfg->listeners[i];
        char services[80] = "";
        if (l->services != LISTENER_SERVICES_ALL) {
            config_format_services(l->services, services + 2, sizeof(services) - 2);
            memcpy(services, "; ", 2);
        }
        fprintf(f, "%-18s%s (%s%s)\n", i == 0 ? "listen" : "", l->address,
                l->tls_cert == NULL        ? "plaintext"
                : l->tls_client_ca != NULL ? "TLS, client certificates required"
                                           : "TLS",
                services);
    }
    if (cfg->allow_insecure) {
        fprintf(f, "%-18s%s\n", "allow_insecure", "true");
    }
    if (cfg->state.backend == STATE_BACKEND_ETCD) {
        const state_config_t *st = &cfg->state;
        char t[32];
        fprintf(f, "%-18setcd, prefix %s, lease %s, %s, endpoints", "state", st->prefix,
                format_duration_ms(st->lease_ttl_ms, t, sizeof(t)),
                st->tls_cert != NULL                            ? "mutual TLS"
                : strncmp(st->endpoints[0], "https://", 8) == 0 ? "TLS"
                                                                : "plaintext");
        for (size_t i = 0; i < st->endpoints_count; i++)
            fprintf(f, "%s %s", i > 0 ? "," : "", st->endpoints[i]);
        fputc('\n', f);
    } else {
        fprintf(f, "%-18s%s\n", "state file",
                cfg->state_file != NULL ? cfg->state_file : "none (in-memory only)");
    }
    if (cfg->provider_kind != NULL && strcmp(cfg->provider_kind, "exec") == 0) {
        char t[32];
        fprintf(f, "%-18sexec %s, timeout %s, parallelism %d; max message %s\n", "provider",
                cfg->exec_command, format_duration_ms(cfg->exec_timeout_ms, t, sizeof(t)),
                (int)cfg->exec_parallelism,
                quantity_format_bytes(cfg->max_message_bytes, a, sizeof(a)));
    } else {
        fprintf(f, "%-18s%s, boot %" PRId64 " s; max message %s\n", "provider", cfg->provider_kind,
                cfg->boot_seconds, quantity_format_bytes(cfg->max_message_bytes, a, sizeof(a)));
    }
    fprintf(f, "%-18scpu %g/core, memory %g/GiB, gpu %g/GPU per hour; %zu machine types (%s)\n",
            "pricing", cfg->pricing.cpu, cfg->pricing.memory_gib, cfg->pricing.gpu,
            cfg->machine_types_count,
            cfg->pricing.builtin_catalog ? "builtin catalog + configured" : "configured only");
    fprintf(f, "%-18s%zu (%zu managed, %zu unmanaged)\n", "node groups", cfg->node_groups_count,
            managed, cfg->node_groups_count - managed);
    if (cfg->node_groups_count > 0) {
        fprintf(f, "  %-24s %-18s %-16s %5s %5s %5s  %s\n", "ID", "MACHINE TYPE", "ZONE", "MIN",
                "MAX", "SIZE", "MANAGED");
    }
    for (size_t i = 0; i < cfg->node_groups_count && i < SUMMARY_MAX_GROUPS; i++) {
        const node_group_config_t *g = &cfg->node_groups[i];
        char size[16] = "-";
        if (g->size >= 0) {
            snprintf(size, sizeof(size), "%" PRId32, g->size);
        }
        fprintf(f, "  %-24s %-18s %-16s %5" PRId32 " %5" PRId32 " %5s  %s\n", g->spec.id,
                g->spec.machine_type, g->spec.zone != NULL ? g->spec.zone : "-", g->min_size,
                g->max_size, size, g->managed ? "yes" : "no");
    }
    if (cfg->node_groups_count > SUMMARY_MAX_GROUPS) {
        fprintf(f, "  ... and %zu more\n", cfg->node_groups_count - SUMMARY_MAX_GROUPS);
    }
    const autoprov_config_t *ap = &cfg->autoprovisioning;
    if (!ap->enabled) {
        fprintf(f, "%-18s%s\n", "autoprovisioning", "disabled");
    } else {
        fprintf(f,
                "%-18senabled, prefix %s: %zu machine types x %zu zones x %zu label sets, "
                "at most %" PRId32 " groups, empty ttl %s\n",
                "autoprovisioning", ap->prefix, ap->machine_types_count, ap->zones_count,
                ap->label_sets_count, ap->max_node_groups,
                format_duration_ms(ap->empty_group_ttl_ms, a, sizeof(a)));
        fprintf(f, "%-18slimits cpu %s..%s, memory %s..%s\n", "",
                quantity_format_milli(ap->min_cpu_milli, a, sizeof(a)),
                quantity_format_milli_limit(ap->max_cpu_milli, b, sizeof(b)),
                quantity_format_bytes(ap->min_memory_bytes, c, sizeof(c)),
                quantity_format_bytes_limit(ap->max_memory_bytes, d, sizeof(d)));
    }
    const ranking_config_t *r = &cfg->ranking;
    fprintf(f, "%-18sdamper cpu %s memory %s; preferred cpu", "ranking",
            quantity_format_milli(r->damper.cpu_milli, a, sizeof(a)),
            quantity_format_bytes(r->damper.memory_bytes, b, sizeof(b)));
    for (size_t i = 0; i < r->preferred_nodes_count; i++) {
        const preferred_node_t *p = &r->preferred_nodes[i];
        quantity_format_milli(p->cpu_milli, a, sizeof(a));
        if (p->max_nodes >= 0) {
            fprintf(f, " <=%" PRId32 ":%s", p->max_nodes, a);
        } else {
            fprintf(f, " else:%s", a);
        }
    }
    fprintf(f, "\n%-18ssuppress_scale %g, gpu_unfitness %g, not_exist_penalty %g\n", "",
            r->suppress_scale, r->gpu_unfitness, r->not_exist_penalty);
    fprintf(f, "%-18sstrategy %s, cluster size ", "", config_ranking_strategy_name(r->strategy));
    if (r->cluster_size == RANKING_CLUSTER_SIZE_AUTO)
        fprintf(f, "auto\n");
    else
        fprintf(f, "%" PRId64 "\n", r->cluster_size);
}

bool config_group_has_options(const group_options_t *o) {
    return o->has_scale_down_utilization_threshold || o->has_scale_down_gpu_utilization_threshold ||
           o->has_scale_down_unneeded || o->has_scale_down_unready || o->has_max_node_provision ||
           o->has_zero_or_max_node_scaling || o->has_ignore_daemonsets_utilization;
}

void config_format_options_warning(const char *id, char *buf, size_t size) {
    snprintf(buf, size,
             "node group \"%s\" overrides options: cluster-autoscaler >= 1.35 will use a node "
             "startup time of 0 for it (kubernetes/autoscaler#10245)",
             id);
}

void config_format_services(unsigned services, char *buf, size_t size) {
    size_t n = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < TABLE_LEN(names_of_services); k++) {
        if ((services & (1u << k)) != 0 && n < size) {
            n += (size_t)snprintf(buf + n, size - n, "%s%s", n > 0 ? ", " : "",
                                  names_of_services[k]);
        }
    }
}

void config_retain(const frugal_config_t *cfg) {
    __atomic_fetch_add(&((frugal_config_t *)cfg)->extra_refs, 1, __ATOMIC_RELAXED);
}

void config_release(const frugal_config_t *cfg) {
    if (cfg != NULL &&
        __atomic_fetch_sub(&((frugal_config_t *)cfg)->extra_refs, 1, __ATOMIC_ACQ_REL) == 0) {
        config_free((frugal_config_t *)cfg);
    }
}
