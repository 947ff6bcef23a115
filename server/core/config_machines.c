/* Configuration sections of the machines: provider, pricing, machine types (the
 * effective catalog), node groups with their labels and taints. */
#include "config_internal.h"

#include <errno.h>
#include <fcntl.h>
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
#include "duration.h"
#include "group_rules.h"
#include "hook_params.h"
#include "k8s_name.h"
#include "quantity.h"
#include "strbuf.h"
#include "strmap.h"

/* ---- labels and taints ---- */

/* A mapping of label keys to values ({team: web}); null values are "". by_operator: the
 * labels of a configured group, which may set what the template sets (group_rules_label). */
static bool parse_labels(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                         kv_list_t *out, bool by_operator) {
    char sub[CONFIG_PATH_MAX];
    bool ok = true;
    kv_list_clear(out);
    if (node == NULL || yaml_tree_is_null(node)) {
        return true;
    }
    if (node->type != YAML_TREE_MAPPING) {
        config__error(ctx, node, path, "expected a mapping, got %s", config__node_describe(node));
        return false;
    }
    for (size_t i = 0; i < node->u.mapping.count; i++) {
        const yaml_tree_node_t *k = node->u.mapping.items[i].key;
        const yaml_tree_node_t *v = node->u.mapping.items[i].value;
        if (k->type != YAML_TREE_SCALAR) {
            config__error(ctx, k, path, "label keys must be scalars, got %s",
                          config__node_describe(k));
            ok = false;
            continue;
        }
        config__path_join(sub, path, k->u.scalar.text);
        char why[CONFIG_PATH_MAX];
        if (group_rules_label(k->u.scalar.text, NULL, by_operator, why, sizeof(why)) !=
            GROUP_RULE_OK) {
            config__error(ctx, k, sub, "%s", why);
            ok = false;
            continue;
        }
        const char *value = "";
        if (v->type != YAML_TREE_SCALAR) {
            config__error(ctx, v, sub, "expected a value, got %s", config__node_describe(v));
            ok = false;
            continue;
        }
        if (!yaml_tree_is_null(v)) {
            value = v->u.scalar.text;
        }
        if (group_rules_label(k->u.scalar.text, value, by_operator, why, sizeof(why)) !=
            GROUP_RULE_OK) {
            config__error(ctx, v, sub, "%s", why);
            ok = false;
            continue;
        }
        bool dup = false;
        for (size_t j = 0; j < out->count; j++) {
            dup = dup || strcmp(out->items[j].key, k->u.scalar.text) == 0;
        }
        if (dup) {
            group_rules_label_twice(k->u.scalar.text, why, sizeof(why));
            config__error(ctx, k, sub, "%s", why);
            ok = false;
            continue;
        }
        kv_t *kv = config__grow(ctx, &out->items, &out->count, sizeof(kv_t));
        if (kv == NULL) {
            return false;
        }
        kv->key = config__strdup(ctx, k->u.scalar.text);
        kv->value = config__strdup(ctx, value);
    }
    if (out->count > 1) {
        qsort(out->items, out->count, sizeof(kv_t), kv_compare);
    }
    return ok;
}

bool config__parse_labels(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                          void *field, const key_spec_t *spec) {
    (void)spec;
    return parse_labels(ctx, node, path, field, true);
}

bool config__parse_nap_labels(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                              kv_list_t *out) {
    return parse_labels(ctx, node, path, out, false);
}

/* A taint's key, value or effect, checked by group_rules_taint as the others are. */
static bool taint_check(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                        const char *key, const char *value, const char *effect) {
    char why[CONFIG_PATH_MAX];
    if (group_rules_taint(key, value, effect, why, sizeof(why)) == GROUP_RULE_OK)
        return true;
    config__error(ctx, node, path, "%s", why);
    return false;
}

static bool parse_taint_key(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                            void *field, const key_spec_t *spec) {
    return taint_check(ctx, node, path, node->u.scalar.text, NULL, NULL) &&
           config__parse_string(ctx, node, path, field, spec);
}

static bool parse_taint_value(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                              void *field, const key_spec_t *spec) {
    return taint_check(ctx, node, path, NULL, node->u.scalar.text, NULL) &&
           config__store_scalar(ctx, node, field);
}

static bool parse_taint_effect(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                               void *field, const key_spec_t *spec) {
    return taint_check(ctx, node, path, NULL, NULL, node->u.scalar.text) &&
           config__parse_string(ctx, node, path, field, spec);
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
    for (size_t i = 0; i < config__seq_count(node); i++) {
        const yaml_tree_node_t *item = node->u.sequence.items[i];
        config__path_index(sub, path, i);
        size_t before = ctx->error_count;
        taint_t t = {0};
        config__section_parse(ctx, item, sub, taint_keys, TABLE_LEN(taint_keys), &t);
        if (t.value == NULL) {
            t.value = config__strdup(ctx, "");
        }
        if (ctx->error_count == before && taint_list_has(out, t.key, t.effect)) {
            char why[CONFIG_PATH_MAX];
            group_rules_taint_twice(t.key, t.effect, why, sizeof(why));
            config__error(ctx, item, sub, "%s", why);
        }
        taint_t *slot = ctx->error_count == before && t.value != NULL
                            ? config__grow(ctx, &out->items, &out->count, sizeof(taint_t))
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

/* ---- provider and pricing ---- */

static bool parse_provider_kind(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                void *field, const key_spec_t *spec) {
    const char *s = node->u.scalar.text;
    if (strcmp(s, "simulated") != 0 && strcmp(s, "exec") != 0) {
        config__error(ctx, node, path, "unknown provider kind \"%s\" (expected simulated or exec)",
                      s);
        return false;
    }
    return config__parse_string(ctx, node, path, field, spec);
}

/* The exec hook: an absolute path to an executable file (checked here, so that `frugal
 * check` catches a typo; the server checks again when it starts the provider). */
static bool parse_exec_command(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                               void *field, const key_spec_t *spec) {
    const char *s = node->u.scalar.text;
    if (s[0] != '/') {
        config__error(ctx, node, path, "must be an absolute path, got \"%s\"", s);
        return false;
    }
    struct stat st;
    if (stat(s, &st) != 0 || !S_ISREG(st.st_mode) || access(s, X_OK) != 0) {
        config__error(ctx, node, path, "%s is not an executable file", s);
        return false;
    }
    return config__parse_string(ctx, node, path, field, spec);
}

/* ---- exec hook parameters (rules in hook_params.c) ---- */

/* The scalar key of entry i of mapping node with its path in sub, or NULL (reported). */
static const char *mapping_key(load_ctx_t *ctx, const yaml_tree_node_t *node, size_t i,
                               const char *path, char *sub) {
    const yaml_tree_node_t *k = node->u.mapping.items[i].key;
    if (k->type != YAML_TREE_SCALAR || yaml_tree_is_null(k)) {
        config__error(ctx, k, path, "keys must be strings, got %s", config__node_describe(k));
        return NULL;
    }
    config__path_join(sub, path, k->u.scalar.text);
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
            config__error(ctx, k, sub, "invalid parameter name \"%s\": %s", key, problem);
        } else if ((first = params_collision(node, i, key)) != NULL) {
            hook_param_env_name(key, var, sizeof(var));
            config__error(ctx, k, sub, "\"%s\" and \"%s\" (line %d) are both passed as %s", key,
                          first->u.scalar.text, first->line, var);
        } else if (v->type != YAML_TREE_SCALAR) {
            config__error(ctx, v, sub, "expected a string, got %s", config__node_describe(v));
        } else if ((problem = hook_param_value_problem(v->u.scalar.text, v->u.scalar.len))) {
            config__error(ctx, v, sub, "value %s", problem);
        } else {
            kv_t *kv = config__grow(ctx, &out->items, &out->count, sizeof(kv_t));
            if (kv == NULL)
                return false;
            kv->key = config__strdup(ctx, key);
            kv->value = config__strdup(ctx, yaml_tree_is_null(v) ? "" : v->u.scalar.text);
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
    /* Non-blocking: opening a FIFO for reading would wait for a writer (and a reload with
     * it), where it is to be refused as not a regular file. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(buf, size, "cannot read %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return buf;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(buf, size, "cannot read %s: not a regular file", path);
        close(fd);
        return buf;
    }
    FILE *f = fdopen(fd, "rb");
    if (f == NULL) {
        snprintf(buf, size, "cannot read %s: %s", path, strerror(errno));
        close(fd);
        return buf;
    }
    strbuf_t text = {0};
    int got = strbuf_read_stream(&text, f, HOOK_ENV_FILE_MAX);
    fclose(f);
    strbuf_append(&text, "", 0); /* an empty file is "" */
    /* Too long is hook_env_file_problem's to say, as for an inline value. */
    bool failed = text.failed || (got != 0 && got != EFBIG);
    const char *problem = failed ? "cannot be read" : hook_env_file_problem(text.data, text.len);
    if (problem != NULL) {
        snprintf(buf, size, "%s %s", path, problem);
        strbuf_free(&text);
        return buf;
    }
    *len = text.len;
    *out = strbuf_take(&text);
    return NULL;
}

/* A machine type's or node group's provider_params: the exec provider's hooks are their
 * only reader (the provider section is parsed before either). */
static bool parse_hook_params_of_exec(load_ctx_t *ctx, const yaml_tree_node_t *node,
                                      const char *path, void *field, const key_spec_t *spec) {
    const char *kind = ctx->cfg->provider_kind;
    if (node != NULL && (kind == NULL || strcmp(kind, "exec") != 0)) {
        config__error(ctx, node, path, "only valid with provider kind exec");
        return false;
    }
    return parse_hook_params(ctx, node, path, field, spec);
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
            config__error(ctx, k, sub, "invalid variable name \"%s\": %s", key, problem);
        } else if (strncmp(key, "FRUGAL_", 7) == 0) {
            config__error(ctx, k, sub,
                          "invalid variable name \"%s\": FRUGAL_ names are frugal's own", key);
        } else if (found) {
            config__error(ctx, k, sub, "duplicate variable \"%s\"", key);
        } else if (v->type != YAML_TREE_SCALAR || yaml_tree_is_null(v) ||
                   v->u.scalar.text[0] != '/') {
            config__error(ctx, v, sub, "expected the absolute path of a file");
        } else {
            char *content = NULL;
            size_t len = 0;
            if ((problem = env_file_read(v->u.scalar.text, &content, &len, why, sizeof(why)))) {
                config__error(ctx, v, sub, "%s", problem);
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
    if (!config__parse_duration_ms(ctx, node, path, field, spec))
        return false;
    int64_t ms = *(int64_t *)field;
    if (ms != 0 && ms < 1000) {
        config__error(ctx, node, path, "must be 0 (off) or at least 1s, got %s",
                      node->u.scalar.text);
        return false;
    }
    return true;
}

/* The bytes of a hook's environment given provider.params, then layers[0..n) (n <= 2,
 * NULL ones skipped) over them, and env_from_files; SIZE_MAX when out of memory. */
static size_t hook_env_bytes(const load_ctx_t *ctx, size_t n, const kv_list_t *const *layers) {
    const kv_list_t *all[] = {&ctx->cfg->exec_params, n > 0 ? layers[0] : NULL,
                              n > 1 ? layers[1] : NULL};
    return hook_params_env_bytes(all, n + 1, &ctx->cfg->exec_env_files);
}

/* Whether that environment fits what execve takes; reported at node otherwise, what
 * naming the parameters that add up. */
static bool hook_env_fits(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path, size_t n,
                          const kv_list_t *const *layers, const char *what) {
    size_t total = hook_env_bytes(ctx, n, layers);
    if (total == SIZE_MAX) {
        config__error(ctx, node, path, "out of memory");
        return false;
    }
    if (total > HOOK_ENV_TOTAL_MAX) {
        config__error(ctx, node, path,
                      "%s would pass the hook %zu bytes, over the %d (1 MiB) a hook's "
                      "environment may take",
                      what, total, HOOK_ENV_TOTAL_MAX);
        return false;
    }
    return true;
}

/* A machine type's or node group's own provider_params (the last of layers) over those
 * below them: checked only when those fit, so that one oversized layer is one error. */
static void hook_env_layer_fits(load_ctx_t *ctx, const yaml_tree_node_t *item, const char *path,
                                size_t n, const kv_list_t *const *layers, const char *what) {
    const yaml_tree_node_t *own = yaml_tree_mapping_get(item, "provider_params");
    if (own == NULL || layers[n - 1]->count == 0 ||
        hook_env_bytes(ctx, n - 1, layers) > HOOK_ENV_TOTAL_MAX)
        return;
    char sub[CONFIG_PATH_MAX];
    config__path_join(sub, path, "provider_params");
    hook_env_fits(ctx, own, sub, n, layers, what);
}

static const key_spec_t provider_keys[] = {
    KEY("kind", YAML_TREE_SCALAR, parse_provider_kind, frugal_config_t, provider_kind, "simulated"),
    KEY_RANGE("boot_seconds", config__parse_int64, frugal_config_t, boot_seconds, "0", 0,
              86400 * 365, false),
    KEY("command", YAML_TREE_SCALAR, parse_exec_command, frugal_config_t, exec_command, NULL),
    KEY("timeout", YAML_TREE_SCALAR, config__parse_duration_ms, frugal_config_t, exec_timeout_ms,
        "10m"),
    KEY_RANGE("parallelism", config__parse_int32, frugal_config_t, exec_parallelism, "4", 1, 256,
              false),
    KEY("params", YAML_TREE_MAPPING, parse_hook_params, frugal_config_t, exec_params, NULL),
    KEY("env_from_files", YAML_TREE_MAPPING, parse_env_files, frugal_config_t, exec_env_files,
        NULL),
    KEY("reconcile_interval", YAML_TREE_SCALAR, parse_reconcile_interval, frugal_config_t,
        exec_reconcile_interval_ms, "0"),
    KEY_RANGE("reconcile_missing_after", config__parse_int32, frugal_config_t,
              exec_reconcile_missing_after, "2", 1, 1000, false),
    KEY("reconcile_delete_unknown", YAML_TREE_SCALAR, config__parse_bool, frugal_config_t,
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
        config__path_join(sub, path, k->u.scalar.text);
        if (only_exec && !exec) {
            config__error(ctx, k, sub, "only valid with provider kind exec");
        } else if (exec && strcmp(k->u.scalar.text, "boot_seconds") == 0) {
            config__error(ctx, k, sub, "only valid with provider kind simulated");
        }
    }
    const yaml_tree_node_t *tn = yaml_tree_mapping_get(node, "timeout");
    int64_t ns = 0;
    if (exec && tn != NULL && tn->type == YAML_TREE_SCALAR &&
        duration_parse(tn->u.scalar.text, &ns, NULL) == 0 && ns < 1000000) {
        config__path_join(sub, path, "timeout");
        config__error(ctx, tn, sub, "must be at least 1ms, got %s", tn->u.scalar.text);
    }
    const yaml_tree_node_t *cmd = yaml_tree_mapping_get(node, "command");
    if (exec && (cmd == NULL || yaml_tree_is_null(cmd))) {
        config__error(ctx, node, path, "missing required key \"command\" (provider kind exec)");
    }
}

bool config__parse_provider(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                            void *field, const key_spec_t *spec) {
    config__section_parse(ctx, node, path, provider_keys, TABLE_LEN(provider_keys), ctx->cfg);
    provider_check_kind(ctx, node, path);
    const yaml_tree_node_t *files = yaml_tree_mapping_get(node, "env_from_files");
    const yaml_tree_node_t *params = yaml_tree_mapping_get(node, "params");
    if (files != NULL || params != NULL) {
        char sub[CONFIG_PATH_MAX];
        config__path_join(sub, path, files != NULL ? "env_from_files" : "params");
        hook_env_fits(ctx, files != NULL ? files : params, sub, 0, NULL,
                      files == NULL    ? "params"
                      : params == NULL ? "env_from_files"
                                       : "params and env_from_files");
    }
    return true;
}

static bool parse_catalog_kind(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                               void *field, const key_spec_t *spec) {
    const char *s = node->u.scalar.text;
    if (strcmp(s, "builtin") == 0 || strcmp(s, "none") == 0) {
        *(bool *)field = strcmp(s, "builtin") == 0;
        return true;
    }
    config__error(ctx, node, path, "unknown catalog \"%s\" (expected builtin or none)", s);
    /* The rest is checked as with the default: a typo is one error, not one per group. */
    *(bool *)field = true;
    return false;
}

static const key_spec_t pricing_keys[] = {
    KEY_RANGE("cpu", config__parse_double, pricing_config_t, cpu, "0.033174", 0, INFINITY, false),
    KEY_RANGE("memory_gib", config__parse_double, pricing_config_t, memory_gib, "0.004446", 0,
              INFINITY, false),
    KEY_RANGE("gpu", config__parse_double, pricing_config_t, gpu, "0.7", 0, INFINITY, false),
    KEY("catalog", YAML_TREE_SCALAR, parse_catalog_kind, pricing_config_t, builtin_catalog,
        "builtin"),
};

bool config__parse_pricing(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           void *field, const key_spec_t *spec) {
    config__section_parse(ctx, node, path, pricing_keys, TABLE_LEN(pricing_keys), field);
    return true;
}

/* ---- machine types: the effective catalog ---- */

static const key_spec_t machine_type_keys[] = {
    KEY_REQ("name", YAML_TREE_SCALAR, config__parse_label_value, machine_type_t, name),
    /* Required but for a catalog type that only gains prices or parameters (0: absent). */
    KEY_RANGE("cpu", config__parse_cpu, machine_type_t, cpu_milli, NULL, 0, INFINITY, true),
    KEY_RANGE("memory", config__parse_bytes, machine_type_t, memory_bytes, NULL, 0, INFINITY, true),
    KEY_RANGE("gpu", config__parse_int32, machine_type_t, gpu, "0", 0, INT32_MAX, false),
    KEY("gpu_type", YAML_TREE_SCALAR, config__parse_label_value, machine_type_t, gpu_type, NULL),
    KEY_RANGE("price", config__parse_double, machine_type_t, price, NULL, 0, INFINITY, false),
    KEY_RANGE("spot_price", config__parse_double, machine_type_t, spot_price, NULL, 0, INFINITY,
              false),
    KEY("provider_params", YAML_TREE_MAPPING, parse_hook_params_of_exec, machine_type_t,
        provider_params, NULL),
};

void config__machine_type_free(machine_type_t *mt) {
    free(mt->name);
    free(mt->gpu_type);
    kv_list_clear(&mt->provider_params);
}

/* A type given without cpu and memory is the catalog's (its shape and prices, unless
 * given): one that only adds prices or provider_params. Otherwise both are required. */
static bool machine_type_complete(load_ctx_t *ctx, const yaml_tree_node_t *item, const char *path,
                                  machine_type_t *mt, const machine_type_t *catalog) {
    bool cpu = mt->cpu_milli > 0, memory = mt->memory_bytes > 0;
    if (!cpu && !memory && catalog != NULL) {
        mt->cpu_milli = catalog->cpu_milli;
        mt->memory_bytes = catalog->memory_bytes;
        mt->price = mt->price >= 0 ? mt->price : catalog->price;
        mt->spot_price = mt->spot_price >= 0 ? mt->spot_price : catalog->spot_price;
        return true;
    }
    const char *hint =
        catalog != NULL ? " (give cpu and memory, or neither to keep the catalog's)" : "";
    if (!cpu)
        config__error(ctx, item, path, "missing required key \"cpu\"%s", hint);
    if (!memory)
        config__error(ctx, item, path, "missing required key \"memory\"%s", hint);
    return cpu && memory;
}

bool config__machine_type_refused(const load_ctx_t *ctx, const char *name) {
    const yaml_tree_node_t *types = ctx->machine_types_node;
    for (size_t i = 0; i < config__seq_count(types); i++) {
        const yaml_tree_node_t *n = yaml_tree_mapping_get(types->u.sequence.items[i], "name");
        if (n != NULL && n->type == YAML_TREE_SCALAR && strcmp(n->u.scalar.text, name) == 0)
            return true;
    }
    return false;
}

/* Builtin entries first (when pricing.catalog is builtin), then each configured type
 * replaces the entry of the same name or is appended. Relies on pricing. */
bool config__parse_machine_types(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                 void *field, const key_spec_t *spec) {
    frugal_config_t *cfg = ctx->cfg;
    char sub[CONFIG_PATH_MAX];
    size_t builtin = 0;
    ctx->machine_types_node = node;
    if (cfg->pricing.builtin_catalog) {
        for (size_t i = 0; i < catalog_machines_count; i++) {
            const catalog_machine_t *cm = &catalog_machines[i];
            machine_type_t *mt =
                config__grow(ctx, &cfg->machine_types, &cfg->machine_types_count, sizeof(*mt));
            if (mt == NULL) {
                return false;
            }
            mt->name = config__strdup(ctx, cm->name);
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
    strmap_t *first = NULL; /* name -> its first name node: duplicates in linear time */
    if (strmap_create(config__seq_count(node) + 1, &first) != 0) {
        config__error(ctx, node, path, "out of memory");
        return false;
    }
    for (size_t i = 0; i < config__seq_count(node); i++) {
        const yaml_tree_node_t *item = node->u.sequence.items[i];
        machine_type_t mt = {.price = -1, .spot_price = -1};
        size_t before = ctx->error_count;
        config__path_index(sub, path, i);
        config__section_parse(ctx, item, sub, machine_type_keys, TABLE_LEN(machine_type_keys), &mt);
        const yaml_tree_node_t *name = yaml_tree_mapping_get(item, "name");
        const yaml_tree_node_t *earlier = NULL;
        if (name != NULL && name->type == YAML_TREE_SCALAR &&
            (earlier = strmap_get(first, name->u.scalar.text)) == NULL &&
            strmap_put(first, name->u.scalar.text, (void *)name, NULL) != 0)
            config__error(ctx, name, sub, "out of memory");
        if (mt.name != NULL && ctx->error_count == before)
            hook_env_layer_fits(ctx, item, sub, 1, (const kv_list_t *const[]){&mt.provider_params},
                                "these provider_params with provider.params and env_from_files");
        if (mt.name == NULL || ctx->error_count != before) {
            config__machine_type_free(&mt);
            continue;
        }
        bool dup = earlier != NULL;
        if (dup) {
            char name_path[CONFIG_PATH_MAX];
            config__path_join(name_path, sub, "name");
            config__error(ctx, name, name_path, "duplicate machine type \"%s\" (first at line %d)",
                          mt.name, earlier->line);
        }
        size_t k = 0;
        while (k < builtin && strcmp(cfg->machine_types[k].name, mt.name) != 0) {
            k++;
        }
        if (!machine_type_complete(ctx, item, sub, &mt,
                                   k < builtin ? &cfg->machine_types[k] : NULL)) {
            config__machine_type_free(&mt);
            continue;
        }
        machine_type_t *slot = NULL;
        if (!dup && k < builtin) {
            slot = &cfg->machine_types[k];
            config__machine_type_free(slot);
        } else if (!dup) {
            slot = config__grow(ctx, &cfg->machine_types, &cfg->machine_types_count, sizeof(mt));
        }
        if (slot == NULL) {
            config__machine_type_free(&mt);
            continue;
        }
        *slot = mt;
    }
    strmap_destroy(first);
    return true;
}

/* ---- node groups ---- */

static const key_spec_t options_keys[] = {
    KEY_OPT("scale_down_utilization_threshold", config__parse_double, group_options_t,
            scale_down_utilization_threshold, has_scale_down_utilization_threshold, 0, 1),
    KEY_OPT("scale_down_gpu_utilization_threshold", config__parse_double, group_options_t,
            scale_down_gpu_utilization_threshold, has_scale_down_gpu_utilization_threshold, 0, 1),
    KEY_OPT("scale_down_unneeded", config__parse_positive_duration_ns, group_options_t,
            scale_down_unneeded_ns, has_scale_down_unneeded, -INFINITY, INFINITY),
    KEY_OPT("scale_down_unready", config__parse_positive_duration_ns, group_options_t,
            scale_down_unready_ns, has_scale_down_unready, -INFINITY, INFINITY),
    KEY_OPT("max_node_provision", config__parse_positive_duration_ns, group_options_t,
            max_node_provision_ns, has_max_node_provision, -INFINITY, INFINITY),
    KEY_OPT("zero_or_max_node_scaling", config__parse_bool, group_options_t,
            zero_or_max_node_scaling, has_zero_or_max_node_scaling, -INFINITY, INFINITY),
    KEY_OPT("ignore_daemonsets_utilization", config__parse_bool, group_options_t,
            ignore_daemonsets_utilization, has_ignore_daemonsets_utilization, -INFINITY, INFINITY),
};

static bool parse_group_options(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                void *field, const key_spec_t *spec) {
    config__section_parse(ctx, node, path, options_keys, TABLE_LEN(options_keys), field);
    return true;
}

static const key_spec_t group_keys[] = {
    KEY_REQ("id", YAML_TREE_SCALAR, config__parse_string, node_group_config_t, spec.id),
    KEY_REQ("machine_type", YAML_TREE_SCALAR, config__parse_string, node_group_config_t,
            spec.machine_type),
    KEY("zone", YAML_TREE_SCALAR, config__parse_label_value, node_group_config_t, spec.zone, NULL),
    KEY_RANGE("min_size", config__parse_int32, node_group_config_t, min_size, "0", 0, INT32_MAX,
              false),
    KEY_RANGE("max_size", config__parse_int32, node_group_config_t, max_size, "10", 0, INT32_MAX,
              false),
    KEY_RANGE("size", config__parse_int32, node_group_config_t, size, NULL, 0, INT32_MAX, false),
    KEY("managed", YAML_TREE_SCALAR, config__parse_bool, node_group_config_t, managed, "true"),
    KEY("labels", YAML_TREE_MAPPING, config__parse_labels, node_group_config_t, spec.labels, NULL),
    KEY("taints", YAML_TREE_SEQUENCE, parse_taints, node_group_config_t, spec.taints, NULL),
    KEY("options", YAML_TREE_MAPPING, parse_group_options, node_group_config_t, options, NULL),
    KEY("spot", YAML_TREE_SCALAR, config__parse_bool, node_group_config_t, spec.spot, "false"),
    KEY_RANGE("spot_price", config__parse_double, node_group_config_t, spec.spot_price, NULL, 0,
              INFINITY, false),
    KEY_RANGE("scale_up_threshold", config__parse_int32, node_group_config_t, scale_up_threshold,
              "70", 0, 100, true),
    KEY("scale_on_starve", YAML_TREE_SCALAR, config__parse_bool, node_group_config_t,
        scale_on_starve, "false"),
    KEY("provider_params", YAML_TREE_MAPPING, parse_hook_params_of_exec, node_group_config_t,
        provider_params, NULL),
};

/* Sizes of one group: managed groups need min <= size <= max (max_size 10 when not
 * given); unmanaged groups have a fixed size that stands for min and max alike. */
static void group_check_sizes(load_ctx_t *ctx, const yaml_tree_node_t *item, const char *path,
                              node_group_config_t *g) {
    char sub[CONFIG_PATH_MAX];
    const yaml_tree_node_t *min_n = yaml_tree_mapping_get(item, "min_size");
    const yaml_tree_node_t *max_n = yaml_tree_mapping_get(item, "max_size");
    const yaml_tree_node_t *size_n = yaml_tree_mapping_get(item, "size");
    if (!g->managed) {
        if (min_n != NULL && !yaml_tree_is_null(min_n)) {
            config__path_join(sub, path, "min_size");
            config__error(ctx, min_n, sub, "not allowed for an unmanaged group (set size)");
        }
        if (max_n != NULL && !yaml_tree_is_null(max_n)) {
            config__path_join(sub, path, "max_size");
            config__error(ctx, max_n, sub, "not allowed for an unmanaged group (set size)");
        }
        if (size_n == NULL || yaml_tree_is_null(size_n)) {
            config__error(ctx, item, path,
                          "missing required key \"size\" (an unmanaged group has a "
                          "fixed size)");
        } else if (g->size >= 0) {
            g->min_size = g->max_size = g->size;
        }
        return;
    }
    if (g->max_size < 0) {
        return; /* already reported */
    }
    if (g->min_size > g->max_size) {
        config__path_join(sub, path, "min_size");
        config__error(ctx, min_n, sub,
                      "min_size %" PRId32 " is greater than max_size %" PRId32 "%s", g->min_size,
                      g->max_size, max_n == NULL ? " (the default: set max_size)" : "");
        return;
    }
    if (g->size >= 0 && (g->size < g->min_size || g->size > g->max_size)) {
        config__path_join(sub, path, "size");
        config__error(ctx, size_n, sub,
                      "size %" PRId32 " is outside [min_size %" PRId32 ", max_size %" PRId32 "]",
                      g->size, g->min_size, g->max_size);
    }
}

/* Relies on the effective catalog (machine_types). */
bool config__parse_node_groups(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                               void *field, const key_spec_t *spec) {
    frugal_config_t *cfg = ctx->cfg;
    char sub[CONFIG_PATH_MAX];
    char key_path[CONFIG_PATH_MAX];
    size_t n = config__seq_count(node);
    strmap_t *ids = NULL; /* id -> its first id node: duplicates in linear time */
    ctx->group_nodes = config__calloc(ctx, n, sizeof(*ctx->group_nodes));
    ctx->group_items = config__calloc(ctx, n, sizeof(*ctx->group_items));
    if (ctx->group_nodes == NULL || ctx->group_items == NULL) {
        return false;
    }
    if (strmap_create(n + 1, &ids) != 0) {
        config__error(ctx, node, path, "out of memory");
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        const yaml_tree_node_t *item = node->u.sequence.items[i];
        /* managed until read otherwise: a bad value must not add unmanaged-only errors */
        node_group_config_t g = {
            .max_size = -1, .size = -1, .spec.spot_price = -1, .managed = true};
        size_t before = ctx->error_count;
        config__path_index(sub, path, i);
        config__section_parse(ctx, item, sub, group_keys, TABLE_LEN(group_keys), &g);
        if (item->type == YAML_TREE_MAPPING) {
            group_check_sizes(ctx, item, sub, &g);
        }
        const yaml_tree_node_t *id_n = yaml_tree_mapping_get(item, "id");
        config__path_join(key_path, sub, "id");
        if (g.spec.id != NULL && !k8s_name_is_dns_label(g.spec.id)) {
            config__error(
                ctx, id_n, key_path,
                "invalid id \"%s\": must be 1-63 lowercase alphanumerics or '-', starting "
                "and ending with an alphanumeric",
                g.spec.id);
        }
        const yaml_tree_node_t *earlier = g.spec.id != NULL ? strmap_get(ids, g.spec.id) : NULL;
        if (earlier != NULL)
            config__error(ctx, id_n, key_path, "duplicate node group id \"%s\" (first at line %d)",
                          g.spec.id, earlier->line);
        else if (g.spec.id != NULL && strmap_put(ids, id_n->u.scalar.text, (void *)id_n, NULL) != 0)
            config__error(ctx, id_n, key_path, "out of memory");
        if (g.spec.machine_type != NULL &&
            config_find_machine_type(cfg, g.spec.machine_type) == NULL &&
            !config__machine_type_refused(ctx, g.spec.machine_type)) {
            config__path_join(key_path, sub, "machine_type");
            config__error(ctx, yaml_tree_mapping_get(item, "machine_type"), key_path,
                          "unknown machine type \"%s\"%s", g.spec.machine_type,
                          cfg->pricing.builtin_catalog ? "" : " (pricing.catalog is none)");
        }
        const machine_type_t *type =
            g.spec.machine_type != NULL ? config_find_machine_type(cfg, g.spec.machine_type) : NULL;
        if (ctx->error_count == before)
            hook_env_layer_fits(
                ctx, item, sub, 2,
                (const kv_list_t *const[]){type != NULL ? &type->provider_params : NULL,
                                           &g.provider_params},
                "these provider_params with the machine type's, provider.params and "
                "env_from_files");
        node_group_config_t *slot =
            ctx->error_count == before
                ? config__grow(ctx, &cfg->node_groups, &cfg->node_groups_count, sizeof(g))
                : NULL;
        if (slot == NULL) {
            group_spec_clear(&g.spec);
            kv_list_clear(&g.provider_params);
            continue;
        }
        ctx->group_nodes[cfg->node_groups_count - 1] = item;
        ctx->group_items[cfg->node_groups_count - 1] = i;
        *slot = g;
    }
    strmap_destroy(ids);
    return true;
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

bool config_unpriced_pods_warning(const frugal_config_t *cfg, char *buf, size_t size) {
    const pricing_config_t *p = &cfg->pricing;
    if (p->cpu > 0 || p->memory_gib > 0 || p->gpu > 0)
        return false;
    snprintf(buf, size,
             "pricing.cpu, pricing.memory_gib and pricing.gpu are all 0: pods have no price, "
             "so BestOptions can score no option (each score divides by what the pods are "
             "worth) and answers every request with its options unchanged");
    return true;
}

/* The k-th machine type the user chose: the configured groups' first, then the listed
 * autoprovisioning machine types (groups + allowed in all). */
static const char *config__chosen_type(const frugal_config_t *cfg, size_t k) {
    size_t groups = cfg->node_groups_count;
    return k < groups ? cfg->node_groups[k].spec.machine_type
                      : cfg->autoprovisioning.machine_types[k - groups];
}

bool config_autoprov_limits_warning(const frugal_config_t *cfg, char *buf, size_t size) {
    const autoprov_config_t *ap = &cfg->autoprovisioning;
    if (!ap->enabled)
        return false;
    char names[256] = "";
    size_t len = 0, over = 0;
    size_t chosen =
        cfg->node_groups_count + (ap->machine_types_listed ? ap->machine_types_count : 0);
    for (size_t k = 0; k < chosen; k++) {
        const char *name = config__chosen_type(cfg, k);
        const machine_type_t *t = config_find_machine_type(cfg, name);
        if (t == NULL ||
            (t->cpu_milli <= ap->max_cpu_milli && t->memory_bytes <= ap->max_memory_bytes))
            continue;
        size_t j = 0;
        while (j < k && strcmp(config__chosen_type(cfg, j), name) != 0)
            j++;
        if (j < k) /* named already */
            continue;
        if (over++ < 4)
            len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", len > 0 ? ", " : "",
                                    name);
        if (len >= sizeof(names))
            len = sizeof(names) - 1;
    }
    if (over == 0)
        return false;
    char more[32] = "";
    if (over > 4)
        snprintf(more, sizeof(more), " and %zu more", over - 4);
    char cpu[32] = "unlimited", mem[32] = "unlimited";
    if (ap->max_cpu_milli != INT64_MAX)
        snprintf(cpu, sizeof(cpu), "%g cores", (double)ap->max_cpu_milli / 1000.0);
    if (ap->max_memory_bytes != INT64_MAX)
        snprintf(mem, sizeof(mem), "%g GiB", (double)ap->max_memory_bytes / 1073741824.0);
    snprintf(buf, size,
             "autoprovisioning.limits: one node of %s%s is larger than the limits alone "
             "(max_cpu %s, max_memory %s), so groups of %s can never grow",
             names, more, cpu, mem, over == 1 ? "that type" : "those types");
    return true;
}

static bool config__has_taint(const taint_list_t *l, const taint_t *t) {
    for (size_t i = 0; i < l->count; i++)
        if (strcmp(l->items[i].key, t->key) == 0 && strcmp(l->items[i].value, t->value) == 0 &&
            strcmp(l->items[i].effect, t->effect) == 0)
            return true;
    return false;
}

static bool config__same_taints(const taint_list_t *a, const taint_list_t *b) {
    if (a->count != b->count)
        return false;
    for (size_t i = 0; i < a->count; i++)
        if (!config__has_taint(b, &a->items[i]))
            return false;
    return true;
}

/* Only groups CA sees (managed ones) are balanced, and only if their templates match:
 * machine type, labels, taints and extra resources. */
size_t config_spot_twin(const frugal_config_t *cfg, size_t i) {
    const group_spec_t *s = &cfg->node_groups[i].spec;
    if (!s->spot || !cfg->node_groups[i].managed)
        return cfg->node_groups_count;
    for (size_t j = 0; j < cfg->node_groups_count; j++) {
        const group_spec_t *o = &cfg->node_groups[j].spec;
        if (!o->spot && cfg->node_groups[j].managed &&
            strcmp(o->machine_type, s->machine_type) == 0 &&
            kv_list_equal(&o->labels, &s->labels) && config__same_taints(&o->taints, &s->taints) &&
            kv_list_equal(&o->extra_resources, &s->extra_resources))
            return j;
    }
    return cfg->node_groups_count;
}

void config_format_spot_twin_warning(const char *spot_id, const char *twin_id, char *buf,
                                     size_t size) {
    snprintf(buf, size,
             "node groups \"%s\" (spot) and \"%s\" (on demand) differ only in price: "
             "cluster-autoscaler's --balance-similar-node-groups spreads a scale-up over "
             "both; give the spot group a label of its own (e.g. "
             "cloud.google.com/gke-spot: \"true\")",
             spot_id, twin_id);
}

/* ---- lookups ---- */

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
