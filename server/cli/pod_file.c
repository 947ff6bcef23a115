/* Pod files: see pod_file.h. */
#include "pod_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "quantity.h"
#include "timestamp.h"

int pod_file_load(const char *path, yaml_tree_node_t **root, frugal_err_t *err) {
    char *text = NULL;
    size_t len = 0;
    int rc = cli_read_file(path, &text, &len);
    if (rc == ENOMEM)
        return frugal_err_set(err, FRUGAL_ENOMEM, "%s: out of memory", path);
    if (rc != 0)
        return frugal_err_set(err, FRUGAL_EIO, "%s: %s", path, strerror(rc));
    yaml_tree_error_t yerr;
    rc = yaml_tree_load(text, len, root, &yerr);
    free(text);
    char why[sizeof(yerr.message) + 40];
    if (rc != 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "%s:%d:%d: %s", path, yerr.line, yerr.column,
                              yaml_tree_error_text(&yerr, false, why, sizeof(why)));
    return 0;
}

int pod_file_error(frugal_err_t *err, const char *path, const yaml_tree_node_t *at, const char *fmt,
                   ...) {
    char msg[FRUGAL_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return frugal_err_set(err, FRUGAL_EINVAL, "%s:%d:%d: %s", path, at != NULL ? at->line : 0,
                          at != NULL ? at->column : 0, msg);
}

int pod_file_check_keys(const char *path, const yaml_tree_node_t *map, const char *const *keys,
                        frugal_err_t *err) {
    if (map == NULL || map->type != YAML_TREE_MAPPING)
        return pod_file_error(err, path, map, "expected a mapping");
    for (size_t i = 0; i < map->u.mapping.count; i++) {
        const yaml_tree_node_t *k = map->u.mapping.items[i].key;
        bool known = false;
        for (size_t j = 0; keys[j] != NULL && k->type == YAML_TREE_SCALAR && !known; j++)
            known = strcmp(k->u.scalar.text, keys[j]) == 0;
        if (known)
            continue;
        char expected[256] = "";
        for (size_t j = 0; keys[j] != NULL; j++) {
            size_t n = strlen(expected);
            snprintf(expected + n, sizeof(expected) - n, "%s%s", j > 0 ? ", " : "", keys[j]);
        }
        return pod_file_error(err, path, k, "unknown key %s (expected one of %s)",
                              k->type == YAML_TREE_SCALAR ? k->u.scalar.text : "?", expected);
    }
    return 0;
}

int pod_file_scalar(const char *path, const yaml_tree_node_t *map, const char *key,
                    const char **out, frugal_err_t *err) {
    const yaml_tree_node_t *v = yaml_tree_mapping_get(map, key);
    *out = NULL;
    if (v == NULL || yaml_tree_is_null(v))
        return 0;
    if (v->type != YAML_TREE_SCALAR)
        return pod_file_error(err, path, v, "%s: expected a scalar", key);
    *out = v->u.scalar.text;
    return 0;
}

int pod_file_quantity(const char *path, const yaml_tree_node_t *map, const char *key, bool milli,
                      const char **out, frugal_err_t *err) {
    int rc = pod_file_scalar(path, map, key, out, err);
    if (rc != 0 || *out == NULL)
        return rc;
    int64_t v = 0;
    if ((milli ? quantity_parse_milli(*out, &v, NULL) : quantity_parse_value(*out, &v, NULL)) !=
            0 ||
        v < 0)
        return pod_file_error(err, path, yaml_tree_mapping_get(map, key),
                              "%s: invalid quantity \"%s\"", key, *out);
    return 0;
}

static int pod_file__node_selector(const char *path, const yaml_tree_node_t *item, kv_list_t *out,
                                   frugal_err_t *err) {
    const yaml_tree_node_t *sel = yaml_tree_mapping_get(item, "node_selector");
    if (sel == NULL || yaml_tree_is_null(sel))
        return 0;
    if (sel->type != YAML_TREE_MAPPING)
        return pod_file_error(err, path, sel, "node_selector: expected a mapping");
    for (size_t i = 0; i < sel->u.mapping.count; i++) {
        const yaml_tree_pair_t *p = &sel->u.mapping.items[i];
        if (p->key->type != YAML_TREE_SCALAR || p->value->type != YAML_TREE_SCALAR)
            return pod_file_error(err, path, p->key, "node_selector: expected key: value strings");
        int rc = kv_list_put(out, p->key->u.scalar.text, p->value->u.scalar.text);
        if (rc == FRUGAL_ENOMEM)
            return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        if (rc != 0)
            return pod_file_error(err, path, p->key, "node_selector: duplicate key %s",
                                  p->key->u.scalar.text);
    }
    return 0;
}

static int pod_file__tolerations(const char *path, const yaml_tree_node_t *item, pod_spec_t *spec,
                                 frugal_err_t *err) {
    static const char *const keys[] = {"key", "operator", "value", "effect", NULL};
    const yaml_tree_node_t *tols = yaml_tree_mapping_get(item, "tolerations");
    if (tols == NULL || yaml_tree_is_null(tols))
        return 0;
    if (tols->type != YAML_TREE_SEQUENCE)
        return pod_file_error(err, path, tols, "tolerations: expected a list");
    size_t n = tols->u.sequence.count;
    pod_toleration_t *tol = calloc(n > 0 ? n : 1, sizeof(*tol));
    if (tol == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    spec->tolerations = tol;
    spec->n_tolerations = n;
    for (size_t i = 0; i < n; i++) {
        const yaml_tree_node_t *t = tols->u.sequence.items[i];
        int rc = pod_file_check_keys(path, t, keys, err);
        if (rc == 0)
            rc = pod_file_scalar(path, t, "key", &tol[i].key, err);
        if (rc == 0)
            rc = pod_file_scalar(path, t, "operator", &tol[i].operator_, err);
        if (rc == 0)
            rc = pod_file_scalar(path, t, "value", &tol[i].value, err);
        if (rc == 0)
            rc = pod_file_scalar(path, t, "effect", &tol[i].effect, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static void pod_file__pod_clear(pod_file_pod_t *p) {
    kv_list_clear(&p->spec.node_selector);
    free((void *)p->spec.tolerations);
    memset(p, 0, sizeof(*p));
}

/* One entry into *p (cleared by the caller on failure too). */
static int pod_file__pod(const char *path, const yaml_tree_node_t *item, pod_file_pod_t *p,
                         frugal_err_t *err) {
    static const char *const keys[] = {"name",  "namespace",     "cpu",         "memory",
                                       "gpu",   "node_selector", "tolerations", "count",
                                       "owner", "created",       NULL};
    p->at = item;
    p->count = 1;
    const char *count = NULL;
    int rc = pod_file_check_keys(path, item, keys, err);
    if (rc == 0)
        rc = pod_file_scalar(path, item, "name", &p->spec.name, err);
    if (rc == 0)
        rc = pod_file_scalar(path, item, "namespace", &p->spec.namespace_, err);
    if (rc == 0)
        rc = pod_file_quantity(path, item, "cpu", true, &p->spec.cpu, err);
    if (rc == 0)
        rc = pod_file_quantity(path, item, "memory", false, &p->spec.memory, err);
    if (rc == 0)
        rc = pod_file_quantity(path, item, "gpu", false, &p->spec.gpu, err);
    if (rc == 0)
        rc = pod_file_scalar(path, item, "owner", &p->spec.owner_kind, err);
    const char *created = NULL;
    if (rc == 0)
        rc = pod_file_scalar(path, item, "created", &created, err);
    if (rc == 0 && created != NULL && !timestamp_parse(created, &p->spec.created_s))
        return pod_file_error(err, path, yaml_tree_mapping_get(item, "created"),
                              "created: expected RFC 3339 (2026-01-02T15:04:05Z) or unix "
                              "seconds, got \"%s\"",
                              created);
    if (rc == 0)
        rc = pod_file_scalar(path, item, "count", &count, err);
    if (rc == 0 && count != NULL) {
        char *end;
        errno = 0;
        long v = strtol(count, &end, 10);
        if (errno != 0 || end == count || *end != '\0' || v < 0 || v > POD_FILE_COUNT_MAX)
            return pod_file_error(err, path, yaml_tree_mapping_get(item, "count"),
                                  "count: expected an integer in 0..%d, got \"%s\"",
                                  POD_FILE_COUNT_MAX, count);
        p->count = v;
    }
    if (rc == 0)
        rc = pod_file__node_selector(path, item, &p->spec.node_selector, err);
    if (rc == 0)
        rc = pod_file__tolerations(path, item, &p->spec, err);
    return rc;
}

int pod_file_read_pods(const char *path, const yaml_tree_node_t *list, pod_file_pods_t *out,
                       frugal_err_t *err) {
    out->items = NULL;
    out->count = 0;
    if (list == NULL || yaml_tree_is_null(list))
        return 0;
    if (list->type != YAML_TREE_SEQUENCE)
        return pod_file_error(err, path, list, "expected a list of pods");
    size_t n = list->u.sequence.count;
    pod_file_pods_t pods = {calloc(n > 0 ? n : 1, sizeof(pod_file_pod_t)), 0};
    if (pods.items == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        int rc = pod_file__pod(path, list->u.sequence.items[i], &pods.items[i], err);
        pods.count = i + 1;
        if (rc != 0) {
            pod_file_pods_free(&pods);
            return rc;
        }
    }
    *out = pods;
    return 0;
}

int pod_file_pack_copy(pod_file_pod_t *e, long k, uint8_t **out, size_t *len, frugal_err_t *err) {
    const char *base = e->spec.name;
    char copy[300];
    if (e->count > 1 && base != NULL) {
        snprintf(copy, sizeof(copy), "%s-%ld", base, k);
        e->spec.name = copy;
    }
    int rc = pod_spec_pack(&e->spec, out, len, err);
    e->spec.name = base;
    return rc;
}

void pod_file_pods_free(pod_file_pods_t *pods) {
    for (size_t i = 0; i < pods->count; i++)
        pod_file__pod_clear(&pods->items[i]);
    free(pods->items);
    pods->items = NULL;
    pods->count = 0;
}
