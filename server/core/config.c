/* The configuration loader: a YAML tree (yaml_tree.h) walked with one key table per
 * section, after h2o's configurator. A table entry names a key, the node type it
 * expects, the parser that stores it, and its default written as YAML text exactly as
 * examples/frugal-full.yaml shows it, so that a default goes through the same parser
 * and checks as a configured value. Tables are walked in their own order, not the document's, so a
 * section may rely on the ones listed before it (node groups on the catalog,
 * autoprovisioning on the node groups). Every problem is collected; loading fails at
 * the end when there was any. This file holds the top-level table and the entry points;
 * the key engine is config_keys.c (config_internal.h), the sections are config_server.c,
 * config_machines.c and config_ranking.c.
 *
 * An empty file, or one without node_groups, is valid: it yields every default and no
 * configured group (a server that only offers autoprovisioned groups, or nothing yet). */
#include "config.h"

#include "config_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "yaml_tree.h"

/* ---- top level ---- */

/* Order matters: each section may rely on those above it. */
static const key_spec_t top_keys[] = {
    KEY("allow_insecure", YAML_TREE_SCALAR, config__parse_bool, frugal_config_t, allow_insecure,
        "false"),
    KEY_RANGE("max_message_bytes", config__parse_bytes, frugal_config_t, max_message_bytes,
              "536870912", 1, INT32_MAX, false),
    KEY("listen", YAML_TREE_SEQUENCE, config__parse_listeners, frugal_config_t, listeners,
        "[{address: \"127.0.0.1:8086\"}]"),
    KEY("ops_listen", YAML_TREE_SCALAR, config__parse_ops_listen, frugal_config_t, ops_listen,
        NULL),
    KEY("state_file", YAML_TREE_SCALAR, config__parse_string, frugal_config_t, state_file, NULL),
    KEY("state", YAML_TREE_MAPPING, config__parse_state, frugal_config_t, state, NULL),
    /* provider's keys live in frugal_config_t itself (provider_kind, boot_seconds) */
    KEY("provider", YAML_TREE_MAPPING, config__parse_provider, frugal_config_t, provider_kind,
        NULL),
    KEY("pricing", YAML_TREE_MAPPING, config__parse_pricing, frugal_config_t, pricing, NULL),
    KEY("machine_types", YAML_TREE_SEQUENCE, config__parse_machine_types, frugal_config_t,
        machine_types, NULL),
    KEY("node_groups", YAML_TREE_SEQUENCE, config__parse_node_groups, frugal_config_t, node_groups,
        NULL),
    KEY("autoprovisioning", YAML_TREE_MAPPING, config__parse_autoprov, frugal_config_t,
        autoprovisioning, NULL),
    KEY("ranking", YAML_TREE_MAPPING, config__parse_ranking, frugal_config_t, ranking, NULL),
    KEY("limits", YAML_TREE_MAPPING, config__parse_limits, frugal_config_t, limits, NULL),
};

typedef struct config__error_line {
    const char *text;
    size_t len;
    long line, column; /* 0 when the error names no position */
} config__error_line_t;

/* Error lines in file order (by line, then column; stable), as an editor walks them:
 * the sections are parsed in the order their values depend on each other. */
static void config__sort_errors(char *text, const char *name) {
    size_t n = 0, name_len = strlen(name);
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    config__error_line_t *lines = calloc(n + 1, sizeof(*lines));
    char *copy = strdup(text);
    if (lines == NULL || copy == NULL) {
        free(lines), free(copy);
        return; /* unsorted is still every error */
    }
    size_t k = 0;
    for (char *p = copy; *p && k <= n; k++) {
        char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) + 1 : strlen(p);
        config__error_line_t l = {p, len, 0, 0};
        if (strncmp(p, name, name_len) == 0 && p[name_len] == ':')
            sscanf(p + name_len + 1, "%ld:%ld:", &l.line, &l.column);
        size_t i = k;
        for (; i > 0 && (lines[i - 1].line > l.line ||
                         (lines[i - 1].line == l.line && lines[i - 1].column > l.column));
             i--)
            lines[i] = lines[i - 1];
        lines[i] = l;
        p += len;
    }
    char *out = text;
    for (size_t i = 0; i < k; i++) {
        memcpy(out, lines[i].text, lines[i].len);
        out += lines[i].len;
    }
    free(lines);
    free(copy);
}
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
        char why[sizeof(yerr.message) + 40];
        config__error(&ctx, yerr.line > 0 ? &at : NULL, NULL, "%s",
                      yaml_tree_error_text(&yerr, false, why, sizeof(why)));
    } else {
        if (root != NULL && root->type != YAML_TREE_MAPPING) {
            config__error(&ctx, root, NULL, "the configuration must be a mapping, got %s",
                          config__node_describe(root));
        }
        config__section_parse(&ctx, root != NULL && root->type == YAML_TREE_MAPPING ? root : NULL,
                              "", top_keys, TABLE_LEN(top_keys), ctx.cfg);
    }
    yaml_tree_free(root);
    free(ctx.group_nodes);
    free(ctx.group_items);
    if (ctx.oom) {
        rc = FRUGAL_ENOMEM;
    } else if (ctx.error_count == 0) {
        *out = ctx.cfg;
        ctx.cfg = NULL;
        rc = 0;
    }
    config_free(ctx.cfg);
    if (errors != NULL && rc != 0) {
        *errors = strbuf_take(&ctx.errors);
        if (*errors != NULL)
            config__sort_errors(*errors, ctx.name);
    }
    strbuf_free(&ctx.errors);
    return rc;
}

/* No config comes near this; reading on (/dev/zero, a wrong path) would take the memory. */
#define CONFIG_FILE_MAX (16u << 20)

static int config__fail_too_large(const char *path, char **errors) {
    if (errors != NULL) {
        size_t n = strlen(path) + 64;
        *errors = malloc(n);
        if (*errors != NULL)
            snprintf(*errors, n, "%s: larger than %u MiB: not a config file\n", path,
                     CONFIG_FILE_MAX >> 20);
    }
    return FRUGAL_EINVAL;
}

/* FRUGAL_EIO, with "PATH: cannot read: REASON" in *errors. */
static int config__fail_io(const char *path, int e, char **errors) {
    const char *reason = strerror(e);
    if (errors != NULL) {
        size_t n = strlen(path) + strlen(reason) + 32;
        *errors = malloc(n);
        if (*errors != NULL) {
            snprintf(*errors, n, "%s: cannot read: %s\n", path, reason);
        }
    }
    return FRUGAL_EIO;
}

int config_load(const char *path, frugal_config_t **out, char **errors) {
    *out = NULL;
    if (errors != NULL) {
        *errors = NULL;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return config__fail_io(path, errno, errors);
    strbuf_t text = {0};
    int got = strbuf_read_stream(&text, f, CONFIG_FILE_MAX);
    fclose(f);
    strbuf_append(&text, "", 0); /* an empty file is "" */
    int rc;
    if (got == EFBIG)
        rc = config__fail_too_large(path, errors);
    else if (got == ENOMEM || text.failed)
        rc = FRUGAL_ENOMEM;
    else if (got != 0)
        rc = config__fail_io(path, got, errors);
    else
        rc = config_load_string(path, text.data, text.len, out, errors);
    strbuf_free(&text);
    return rc;
}

void config_free(frugal_config_t *cfg) {
    if (cfg == NULL) {
        return;
    }
    free(cfg->path);
    for (size_t i = 0; i < cfg->listeners_count; i++) {
        config__listener_free(&cfg->listeners[i]);
    }
    free(cfg->listeners);
    free(cfg->state_file);
    free(cfg->ops_listen);
    config__state_config_free(&cfg->state);
    free(cfg->provider_kind);
    free(cfg->exec_command);
    for (size_t i = 0; i < cfg->machine_types_count; i++) {
        config__machine_type_free(&cfg->machine_types[i]);
    }
    free(cfg->machine_types);
    for (size_t i = 0; i < cfg->node_groups_count; i++) {
        group_spec_clear(&cfg->node_groups[i].spec);
        kv_list_clear(&cfg->node_groups[i].provider_params);
    }
    free(cfg->node_groups);
    kv_list_clear(&cfg->exec_params);
    kv_list_clear(&cfg->exec_env_files);
    autoprov_config_t *ap = &cfg->autoprovisioning;
    free(ap->prefix);
    config__strings_free(ap->machine_types, ap->machine_types_count);
    config__strings_free(ap->zones, ap->zones_count);
    for (size_t i = 0; i < ap->label_sets_count; i++) {
        kv_list_clear(&ap->label_sets[i]);
    }
    free(ap->label_sets);
    free(cfg->ranking.preferred_nodes);
    free(cfg);
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
