/* The key engine of the configuration loader (config_internal.h): error collection,
 * typed value parsers and the walk of a mapping with a key table. */
#include "config_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "k8s_name.h"
#include "quantity.h"
#include "utf8.h"

/* Record `NAME:LINE:COL: PATH: message` (path omitted when NULL or empty). */
void config__error(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path, const char *fmt,
                   ...) {
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
    /* One line per error: a value's line breaks (a quoted "a\nb") must not split it. */
    line[len] = '\0';
    utf8_scrub(line);
    line[len++] = '\n';
    strbuf_append(&ctx->errors, line, len);
    ctx->oom = ctx->oom || ctx->errors.failed;
    ctx->error_count++;
}

void *config__calloc(load_ctx_t *ctx, size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (p == NULL) {
        ctx->oom = true;
    }
    return p;
}

char *config__strdup(load_ctx_t *ctx, const char *s) {
    char *p = strdup(s);
    if (p == NULL) {
        ctx->oom = true;
    }
    return p;
}

/* Grow *items (of *count elements of size bytes) by one zeroed element; NULL on OOM. */
void *config__grow(load_ctx_t *ctx, void *items_ptr, size_t *count, size_t size) {
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
void config__path_join(char *out, const char *base, const char *key) {
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

void config__path_index(char *out, const char *base, size_t i) {
    char index[32];
    int k = snprintf(index, sizeof(index), "[%zu]", i);
    size_t n = strnlen(base, CONFIG_PATH_MAX - 1 - (size_t)k);
    memmove(out, base, n);
    memcpy(out + n, index, (size_t)k + 1);
}

const char *config__node_describe(const yaml_tree_node_t *node) {
    if (node->type == YAML_TREE_SCALAR) {
        return yaml_tree_is_null(node) ? "null" : "a scalar";
    }
    return yaml_tree_type_name(node->type);
}

/* Range check shared by the numeric parsers. */
static bool spec_check_range(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                             const key_spec_t *spec, double v) {
    if (spec->above_min && v <= spec->min) {
        config__error(ctx, node, path, "must be greater than %g, got %s", spec->min,
                      node->u.scalar.text);
        return false;
    }
    if (v < spec->min) {
        if (spec->min == 0) {
            config__error(ctx, node, path, "must not be negative, got %s", node->u.scalar.text);
        } else {
            config__error(ctx, node, path, "must be at least %g, got %s", spec->min,
                          node->u.scalar.text);
        }
        return false;
    }
    if (v > spec->max) {
        config__error(ctx, node, path, "must be at most %.0f, got %s", spec->max,
                      node->u.scalar.text);
        return false;
    }
    return true;
}

/* A plain decimal integer ("12", "-3"); YAML's hex, octal and sexagesimal forms and
 * quoted strings are refused so that a typo never becomes a surprising number. */
bool config__scalar_to_int64(const yaml_tree_node_t *node, int64_t *out) {
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

bool config__parse_bool(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                        void *field, const key_spec_t *spec) {
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
    config__error(ctx, node, path, "expected true or false, got \"%s\"", s);
    return false;
}

/* Read node as an integer within spec's range into *v, reporting why not. */
static bool int_check(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                      const key_spec_t *spec, int64_t *v) {
    if (!config__scalar_to_int64(node, v)) {
        config__error(ctx, node, path, "expected an integer, got \"%s\"", node->u.scalar.text);
        return false;
    }
    return spec_check_range(ctx, node, path, spec, (double)*v);
}

bool config__parse_int64(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                         void *field, const key_spec_t *spec) {
    int64_t v;
    if (!int_check(ctx, node, path, spec, &v)) {
        return false;
    }
    *(int64_t *)field = v;
    return true;
}

bool config__parse_int32(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                         void *field, const key_spec_t *spec) {
    int64_t v;
    if (!int_check(ctx, node, path, spec, &v)) {
        return false;
    }
    if (v > INT32_MAX || v < INT32_MIN) {
        config__error(ctx, node, path, "must be at most %d, got %s", INT32_MAX,
                      node->u.scalar.text);
        return false;
    }
    *(int32_t *)field = (int32_t)v;
    return true;
}

bool config__parse_double(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                          void *field, const key_spec_t *spec) {
    double v;
    if (!scalar_to_double(node, &v)) {
        config__error(ctx, node, path, "expected a number, got \"%s\"", node->u.scalar.text);
        return false;
    }
    if (!spec_check_range(ctx, node, path, spec, v)) {
        return false;
    }
    *(double *)field = v;
    return true;
}

/* Replace the string at field by a copy of node's text. */
bool config__store_scalar(load_ctx_t *ctx, const yaml_tree_node_t *node, void *field) {
    char *s = config__strdup(ctx, node->u.scalar.text);
    if (s == NULL)
        return false;
    free(*(char **)field);
    *(char **)field = s;
    return true;
}

/* A non-empty string; any scalar qualifies ("zone: 1" is the string "1"). */
bool config__parse_string(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                          void *field, const key_spec_t *spec) {
    if (node->u.scalar.len == 0) {
        config__error(ctx, node, path, "must not be empty");
        return false;
    }
    if (strlen(node->u.scalar.text) != node->u.scalar.len) {
        config__error(ctx, node, path, "must not contain a NUL character");
        return false;
    }
    return config__store_scalar(ctx, node, field);
}

bool config__check_label_value(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path) {
    const char *problem = k8s_name_value_problem(node->u.scalar.text);
    if (problem != NULL)
        config__error(ctx, node, path, "invalid label value \"%s\": %s (it labels the nodes)",
                      node->u.scalar.text, problem);
    return problem == NULL;
}

/* A non-empty string that frugal puts on template nodes as a label value (a machine
 * type's name, a zone, a GPU type): Kubernetes refuses a node with any other. */
bool config__parse_label_value(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                               void *field, const key_spec_t *spec) {
    return config__parse_string(ctx, node, path, field, spec) &&
           config__check_label_value(ctx, node, path);
}

static bool quantity_check(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           const key_spec_t *spec, int rc, int64_t v, const frugal_err_t *err) {
    if (rc != 0) {
        config__error(ctx, node, path, "invalid quantity \"%s\": %s", node->u.scalar.text,
                      err->msg);
        return false;
    }
    return spec_check_range(ctx, node, path, spec, (double)v);
}

/* A CPU quantity ("2", "0.5", "500m") in milli-cores. */
bool config__parse_cpu(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path, void *field,
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
bool config__parse_bytes(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                         void *field, const key_spec_t *spec) {
    frugal_err_t err = {0};
    int64_t v = 0;
    int rc = quantity_parse_value(node->u.scalar.text, &v, &err);
    if (!quantity_check(ctx, node, path, spec, rc, v, &err)) {
        return false;
    }
    /* 100m would be rounded up to 1 byte: no count of bytes means that */
    int64_t milli = 0;
    const char *text = node->u.scalar.text;
    if (quantity_parse_scaled(text, strlen(text), 3, &milli, NULL) == 0 && milli % 1000 != 0) {
        config__error(ctx, node, path, "must be a whole number of bytes, got %s", text);
        return false;
    }
    *(int64_t *)field = v;
    return true;
}

static bool duration_check(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           int64_t *ns) {
    const char *s = node->u.scalar.text;
    if (s[0] == '-') {
        config__error(ctx, node, path, "must not be negative, got %s", s);
        return false;
    }
    if (duration_parse(s, ns, NULL) != 0) {
        config__error(ctx, node, path, "invalid duration \"%s\" (expected e.g. 45s, 10m, 1h30m)",
                      s);
        return false;
    }
    return true;
}

/* Check a duration and store it in *field as an int64_t count of unit nanoseconds. */
bool config__duration_store(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                            void *field, int64_t unit_ns) {
    int64_t ns;
    if (!duration_check(ctx, node, path, &ns)) {
        return false;
    }
    /* Where 0 turns a thing off, 1ns must not do so silently by rounding down. */
    if (ns > 0 && ns < unit_ns) {
        config__error(ctx, node, path, "must be 0 or at least %s, got %s",
                      unit_ns >= 1000000000 ? "1s"
                      : unit_ns >= 1000000  ? "1ms"
                                            : "1us",
                      node->u.scalar.text);
        return false;
    }
    *(int64_t *)field = ns / unit_ns;
    return true;
}

bool config__parse_duration_ms(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                               void *field, const key_spec_t *spec) {
    return config__duration_store(ctx, node, path, field, 1000000);
}

/* A duration that must be positive, stored in units of unit_ns (at least one). */
static bool config__positive_duration_store(load_ctx_t *ctx, const yaml_tree_node_t *node,
                                            const char *path, void *field, int64_t unit_ns) {
    int64_t ns;
    if (!duration_check(ctx, node, path, &ns))
        return false;
    if (ns < unit_ns) {
        config__error(ctx, node, path, "must be greater than 0, got %s", node->u.scalar.text);
        return false;
    }
    *(int64_t *)field = ns / unit_ns;
    return true;
}

/* A group option duration: CA reads a zero one as "every new node failed" (or never
 * scales down), so it must be positive. */
bool config__parse_positive_duration_ns(load_ctx_t *ctx, const yaml_tree_node_t *node,
                                        const char *path, void *field, const key_spec_t *spec) {
    return config__positive_duration_store(ctx, node, path, field, 1);
}

bool config__parse_positive_duration_ms(load_ctx_t *ctx, const yaml_tree_node_t *node,
                                        const char *path, void *field, const key_spec_t *spec) {
    return config__positive_duration_store(ctx, node, path, field, 1000000);
}

/* Parse text (a default from a table) as if it had been written in the file. */
static void spec_apply_default(load_ctx_t *ctx, const key_spec_t *spec, const char *path,
                               void *field) {
    yaml_tree_node_t *tree = NULL;
    yaml_tree_error_t err;
    if (yaml_tree_load(spec->default_text, strlen(spec->default_text), &tree, &err) != 0 ||
        tree == NULL || (tree->type != spec->type)) {
        config__error(ctx, NULL, path, "internal error: bad default \"%s\"", spec->default_text);
        yaml_tree_free(tree);
        return;
    }
    spec->parse(ctx, tree, path, field, spec);
    yaml_tree_free(tree);
}

/* Walk a mapping with a key table: refuse unknown and duplicate keys, check each
 * value's node type, parse it or apply the default. node NULL (absent or null) parses
 * as an empty mapping. */
void config__section_parse(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           const key_spec_t *specs, size_t n, void *base) {
    const yaml_tree_node_t *values[32] = {0};
    const yaml_tree_node_t *keys[32] = {0};
    char sub[CONFIG_PATH_MAX];

    if (n > sizeof(keys) / sizeof(keys[0])) {
        config__error(ctx, node, path, "internal error: key table too long");
        return;
    }
    const yaml_tree_node_t *at = node; /* a null section still has a position */
    if (node != NULL && yaml_tree_is_null(node)) {
        node = NULL;
    }
    bool wrong_type = node != NULL && node->type != YAML_TREE_MAPPING;
    if (wrong_type) {
        config__error(ctx, node, path, "expected a mapping, got %s", config__node_describe(node));
        node = NULL;
    }
    for (size_t i = 0; node != NULL && i < node->u.mapping.count; i++) {
        const yaml_tree_node_t *k = node->u.mapping.items[i].key;
        if (k->type != YAML_TREE_SCALAR) {
            config__error(ctx, k, path, "keys must be scalars, got %s", config__node_describe(k));
            continue;
        }
        size_t j = 0;
        while (j < n && strcmp(specs[j].name, k->u.scalar.text) != 0) {
            j++;
        }
        config__path_join(sub, path, k->u.scalar.text);
        if (j == n) {
            config__error(ctx, k, sub, "unknown key");
        } else if (keys[j] != NULL) {
            config__error(ctx, k, sub, "duplicate key (first at line %d)", keys[j]->line);
        } else {
            keys[j] = k;
            values[j] = node->u.mapping.items[i].value;
        }
    }
    for (size_t j = 0; j < n; j++) {
        const key_spec_t *spec = &specs[j];
        const yaml_tree_node_t *v = values[j];
        void *field = (char *)base + spec->offset;
        config__path_join(sub, path, spec->name);
        if (v != NULL && yaml_tree_is_null(v)) {
            /* A value left empty (a template's missing value) is no silent default. */
            if (spec->type == YAML_TREE_SCALAR && !spec->required) {
                config__error(ctx, v, sub,
                              "expected a value, got null (leave the key out for "
                              "its default)");
                if (spec->default_text != NULL)
                    spec_apply_default(ctx, spec, sub, field);
                continue;
            }
            v = NULL;
        }
        if (v == NULL) {
            if (spec->required) {
                if (wrong_type) {
                    /* already reported */
                } else if (keys[j] != NULL) {
                    config__error(ctx, keys[j], sub, "a value is required");
                } else {
                    config__error(ctx, at, path, "missing required key \"%s\"", spec->name);
                }
            } else if (spec->default_text != NULL) {
                spec_apply_default(ctx, spec, sub, field);
            } else if (spec->type != YAML_TREE_SCALAR) {
                spec->parse(ctx, NULL, sub, field, spec);
            }
            continue;
        }
        if (v->type != spec->type) {
            config__error(ctx, v, sub, "expected %s, got %s",
                          spec->type == YAML_TREE_SCALAR ? "a value"
                                                         : yaml_tree_type_name(spec->type),
                          config__node_describe(v));
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
size_t config__seq_count(const yaml_tree_node_t *node) {
    return node != NULL && node->type == YAML_TREE_SEQUENCE ? node->u.sequence.count : 0;
}

void config__strings_free(char **items, size_t count) {
    for (size_t i = 0; i < count; i++) {
        free(items[i]);
    }
    free(items);
}

/* A sequence of distinct non-empty strings. */
void config__parse_strings(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           char ***items, size_t *count) {
    char sub[CONFIG_PATH_MAX];
    for (size_t i = 0; i < config__seq_count(node); i++) {
        const yaml_tree_node_t *item = node->u.sequence.items[i];
        config__path_index(sub, path, i);
        if (item->type != YAML_TREE_SCALAR || yaml_tree_is_null(item)) {
            config__error(ctx, item, sub, "expected a string, got %s", config__node_describe(item));
            continue;
        }
        bool dup = false;
        for (size_t j = 0; j < *count && !dup; j++) {
            dup = strcmp((*items)[j], item->u.scalar.text) == 0;
        }
        if (dup) {
            config__error(ctx, item, sub, "duplicate entry \"%s\"", item->u.scalar.text);
            continue;
        }
        char *s = NULL;
        if (!config__parse_string(ctx, item, sub, &s, NULL)) {
            continue;
        }
        char **slot = config__grow(ctx, items, count, sizeof(char *));
        if (slot == NULL) {
            free(s);
            return;
        }
        *slot = s;
    }
}
