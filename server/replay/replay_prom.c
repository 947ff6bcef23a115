/* kube-state-metrics series -> a replay trace: see replay_prom.h. */
#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pod.h"
#include "replay_prom.h"
#include "strmap.h"
#include "yaml_tree.h"

#define PROM__LOOKBACK_S 300 /* Prometheus' default look-back for an instant */
/* Samples of one pod's series read within this of each other came from one scrape (the
 * times are read at the minutes of a 1m subquery). */
#define PROM__SAME_SCRAPE_S 60.0
/* The container of a pod without requests whose series name none. */
#define PROM__CONTAINER "main"

static const char *const prom__metrics[REPLAY_PROM_SERIES_COUNT] = {
    "kube_pod_created",
    "kube_pod_info",
    "kube_pod_start_time",
    "kube_pod_completion_time",
    "kube_pod_container_resource_requests",
    "kube_pod_init_container_resource_requests",
    "kube_pod_owner",
    "kube_pod_nodeselectors",
    "kube_pod_tolerations",
    "kube_pod_init_container_info",
    "kube_pod_overhead_cpu_cores",
    "kube_pod_overhead_memory_bytes",
    "kube_pod_container_status_restarts_total",
    "kube_pod_completion_time", /* REPLAY_PROM_COMPLETION_SEEN */
    "kube_pod_info",            /* REPLAY_PROM_LAST_SCRAPE */
};

typedef struct prom__request {
    char *container;
    bool init;
    int resource; /* 0 cpu, 1 memory, 2 nvidia.com/gpu, 3 amd.com/gpu */
    double value;
} prom__request_t;

typedef struct prom__pair {
    /* selector: key, value; toleration: key, operator, value, effect, seconds */
    char *a, *b, *c, *d, *e;
} prom__pair_t;

typedef struct prom__pod {
    char *key, *ns, *name;
    double created, start, completion, seen; /* unix seconds; NAN when unknown */
    /* The time of kube_pod_completion_time's last sample: a completion time whose series
     * ends before the pod's is no end (below); and the query point it was read at. */
    double completion_seen, completion_at;
    bool recreated; /* kube_pod_created changed under one key: a name reused */
    bool has_uid;   /* keyed by its uid (else by namespace/name) */
    bool restarted; /* a container of it restarted */
    double overhead_cpu, overhead_memory; /* cores, bytes; NAN when unknown */
    char *owner_kind, *owner_name;
    char *created_by_kind, *created_by_name; /* kube_pod_info's: the owner without kube_pod_owner */
    char *container;                         /* a container's name, NULL when none is known */
    prom__request_t *reqs;
    size_t reqs_count;
    prom__pair_t *sels, *tols, *sidecars; /* sidecars: the init containers' names */
    size_t sels_count, tols_count, sidecars_count;
} prom__pod_t;

struct replay_prom {
    int64_t start_s, end_s;
    double last_scrape;    /* kube-state-metrics' last sample of any pod; NAN when none */
    char *warning;         /* the first of Prometheus' warnings, NULL when none */
    size_t warned_answers; /* answers that carried warnings */
    strmap_t *index;
    prom__pod_t **pods;
    size_t pods_count, pods_cap;
};

const char *replay_prom_warning(const replay_prom_t *b, size_t *answers) {
    *answers = b->warned_answers;
    return b->warning;
}

const char *replay_prom_metric(replay_prom_series_t s) {
    return prom__metrics[s];
}

static void prom__series_query(replay_prom_series_t s, const char *selector, int64_t step_s,
                               char *buf, size_t size) {
    if (s == REPLAY_PROM_INFO_SEEN || s == REPLAY_PROM_COMPLETION_SEEN)
        snprintf(buf, size, "max_over_time(timestamp(%s%s)[%llds:1m])", prom__metrics[s], selector,
                 (long long)step_s);
    else if (s == REPLAY_PROM_LAST_SCRAPE)
        snprintf(buf, size, "max(max_over_time(timestamp(kube_pod_info)[%llds:1m]))",
                 (long long)step_s);
    else if (s == REPLAY_PROM_RESTARTS)
        snprintf(buf, size, "(max_over_time(%s%s[%llds]) > 0)", prom__metrics[s], selector,
                 (long long)step_s);
    else
        snprintf(buf, size, "max_over_time(%s%s[%llds])", prom__metrics[s], selector,
                 (long long)step_s);
}

bool replay_prom_escape(const char *s, char *buf, size_t size) {
    size_t n = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[5];
        if (c == '"' || c == '\\')
            snprintf(esc, sizeof(esc), "\\%c", c);
        else if (c == '\n' || c == '\r' || c == '\t')
            snprintf(esc, sizeof(esc), "\\%c", c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
        else if (c < 0x20 || c == 0x7f)
            snprintf(esc, sizeof(esc), "\\x%02x", c);
        else
            esc[0] = (char)c, esc[1] = '\0';
        size_t len = strlen(esc);
        if (n + len >= size)
            break;
        memcpy(buf + n, esc, len);
        n += len;
    }
    if (size > 0)
        buf[n] = '\0';
    return *s == '\0';
}

const char *replay_prom_query(replay_prom_series_t s, const char *namespace_re, int64_t step_s,
                              char *buf, size_t size) {
    if (namespace_re == NULL || s == REPLAY_PROM_LAST_SCRAPE) {
        prom__series_query(s, "", step_s, buf, size);
        return buf;
    }
    char re[REPLAY_PROM_REGEX_MAX * 4 + 1];
    replay_prom_escape(namespace_re, re, sizeof(re));
    /* Scraped with honor_labels: false, the pod's namespace is exported_namespace (the
     * target's own namespace label took its name): either side of the `or` matches. */
    char selector[sizeof(re) + 64], exported[REPLAY_PROM_QUERY_MAX / 2],
        plain[REPLAY_PROM_QUERY_MAX / 2];
    /* != "" first: a regex that matches "" would take every series without the label */
    snprintf(selector, sizeof(selector), "{exported_namespace!=\"\",exported_namespace=~\"%s\"}",
             re);
    prom__series_query(s, selector, step_s, exported, sizeof(exported));
    snprintf(selector, sizeof(selector), "{exported_namespace=\"\",namespace=~\"%s\"}", re);
    prom__series_query(s, selector, step_s, plain, sizeof(plain));
    snprintf(buf, size, "%s or %s", exported, plain);
    return buf;
}

int replay_prom_new(int64_t start_s, int64_t end_s, replay_prom_t **out, frugal_err_t *err) {
    replay_prom_t *b = calloc(1, sizeof(*b));
    if (b == NULL || strmap_create(1024, &b->index) != 0) {
        free(b);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    b->start_s = start_s, b->end_s = end_s;
    b->last_scrape = NAN;
    *out = b;
    return 0;
}

static void prom__pairs_free(prom__pair_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(p[i].a), free(p[i].b), free(p[i].c), free(p[i].d), free(p[i].e);
    free(p);
}

void replay_prom_free(replay_prom_t *b) {
    if (b == NULL)
        return;
    for (size_t i = 0; i < b->pods_count; i++) {
        prom__pod_t *p = b->pods[i];
        free(p->key), free(p->ns), free(p->name), free(p->owner_kind), free(p->owner_name);
        free(p->created_by_kind), free(p->created_by_name), free(p->container);
        for (size_t k = 0; k < p->reqs_count; k++)
            free(p->reqs[k].container);
        free(p->reqs);
        prom__pairs_free(p->sels, p->sels_count);
        prom__pairs_free(p->tols, p->tols_count);
        prom__pairs_free(p->sidecars, p->sidecars_count);
        free(p);
    }
    free(b->warning);
    free(b->pods);
    strmap_destroy(b->index);
    free(b);
}

static const char *prom__label(const yaml_tree_node_t *metric, const char *name) {
    const yaml_tree_node_t *v = yaml_tree_mapping_get(metric, name);
    return v != NULL && v->type == YAML_TREE_SCALAR ? v->u.scalar.text : NULL;
}

/* A label that a Prometheus target may also carry (namespace, pod, container): scraped
 * with honor_labels: false, kube-state-metrics' own comes as exported_NAME. */
static const char *prom__pod_label(const yaml_tree_node_t *metric, const char *name) {
    char exported[64];
    snprintf(exported, sizeof(exported), "exported_%s", name);
    const char *v = prom__label(metric, exported);
    return v != NULL ? v : prom__label(metric, name);
}

static char *prom__dup(const char *s) {
    return strdup(s ? s : "");
}

/* Text Prometheus sent, made one line: each control character becomes a space. */
static void prom__one_line(char *s) {
    for (; s != NULL && *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = ' ';
}

/* The pod a series' labels name, created on first sight; NULL without a pod label. */
static prom__pod_t *prom__pod(replay_prom_t *b, const yaml_tree_node_t *metric, bool *nomem) {
    const char *ns = prom__pod_label(metric, "namespace"), *name = prom__pod_label(metric, "pod");
    const char *uid = prom__pod_label(metric, "uid");
    if (name == NULL)
        return NULL;
    char key[512];
    if (uid != NULL && uid[0] != '\0')
        snprintf(key, sizeof(key), "%s", uid);
    else
        snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name);
    prom__pod_t *p = strmap_get(b->index, key);
    if (p != NULL)
        return p;
    if (b->pods_count == b->pods_cap) {
        size_t cap = b->pods_cap ? b->pods_cap * 2 : 256;
        prom__pod_t **np = realloc(b->pods, cap * sizeof(*np));
        if (np == NULL)
            goto nomem;
        b->pods = np, b->pods_cap = cap;
    }
    if ((p = calloc(1, sizeof(*p))) == NULL)
        goto nomem;
    p->created = p->start = p->completion = p->seen = NAN;
    p->completion_seen = NAN;
    p->completion_at = -INFINITY;
    p->overhead_cpu = p->overhead_memory = NAN;
    p->key = strdup(key), p->ns = prom__dup(ns), p->name = prom__dup(name);
    p->has_uid = uid != NULL && uid[0] != '\0';
    if (!p->key || !p->ns || !p->name || strmap_put(b->index, p->key, p, NULL) != 0) {
        free(p->key), free(p->ns), free(p->name), free(p);
        goto nomem;
    }
    b->pods[b->pods_count++] = p;
    return p;
nomem:
    *nomem = true;
    return NULL;
}

/* The first and last values of a series' [time, "value"] points, the largest value and
 * the last point's time. */
static bool prom__values(const yaml_tree_node_t *values, double *first, double *last, double *max,
                         double *last_at) {
    if (values == NULL || values->type != YAML_TREE_SEQUENCE || values->u.sequence.count == 0)
        return false;
    *max = -INFINITY;
    for (size_t i = 0; i < values->u.sequence.count; i++) {
        const yaml_tree_node_t *pt = values->u.sequence.items[i];
        if (pt->type != YAML_TREE_SEQUENCE || pt->u.sequence.count != 2 ||
            pt->u.sequence.items[0]->type != YAML_TREE_SCALAR ||
            pt->u.sequence.items[1]->type != YAML_TREE_SCALAR)
            return false;
        char *end, *tend;
        double v = strtod(pt->u.sequence.items[1]->u.scalar.text, &end);
        double t = strtod(pt->u.sequence.items[0]->u.scalar.text, &tend);
        if (*end != '\0' || *tend != '\0')
            return false;
        *last = v, *last_at = t;
        if (i == 0)
            *first = v;
        if (v > *max)
            *max = v;
    }
    return true;
}

static int prom__resource(const char *r) {
    if (r == NULL)
        return -1;
    if (strcmp(r, "cpu") == 0)
        return 0;
    if (strcmp(r, "memory") == 0)
        return 1;
    if (strcmp(r, "nvidia_com_gpu") == 0 || strcmp(r, "nvidia.com/gpu") == 0)
        return 2;
    if (strcmp(r, "amd_com_gpu") == 0 || strcmp(r, "amd.com/gpu") == 0)
        return 3;
    return -1;
}

/* Keep the first container name a series gives, for a pod without requests. */
static int prom__seen_container(prom__pod_t *p, const char *container) {
    if (p->container != NULL || container == NULL || container[0] == '\0')
        return 0;
    return (p->container = strdup(container)) == NULL ? FRUGAL_ENOMEM : 0;
}

static int prom__add_request(prom__pod_t *p, const yaml_tree_node_t *metric, bool init,
                             double value) {
    const char *container = prom__pod_label(metric, "container");
    int res = prom__resource(prom__label(metric, "resource"));
    if (!init && prom__seen_container(p, container) != 0)
        return FRUGAL_ENOMEM;
    /* Far beyond any node (10^6 cores or GPUs, 10^15 bytes): not a request to replay. */
    if (res < 0 || !isfinite(value) || value < 0 || value > (res == 1 ? 1e15 : 1e6))
        return 0;
    for (size_t i = 0; i < p->reqs_count; i++) {
        prom__request_t *r = &p->reqs[i];
        if (r->init == init && r->resource == res &&
            strcmp(r->container, container ? container : "") == 0) {
            r->value = value;
            return 0;
        }
    }
    prom__request_t *nr = realloc(p->reqs, (p->reqs_count + 1) * sizeof(*nr));
    if (nr == NULL)
        return FRUGAL_ENOMEM;
    p->reqs = nr;
    prom__request_t *r = &p->reqs[p->reqs_count];
    if ((r->container = prom__dup(container)) == NULL)
        return FRUGAL_ENOMEM;
    r->init = init, r->resource = res, r->value = value;
    p->reqs_count++;
    return 0;
}

static bool prom__same(const char *x, const char *y) {
    return strcmp(x ? x : "", y ? y : "") == 0;
}

/* Add a pair unless an equal one is there (a series comes again in every window). */
static int prom__add_pair(prom__pair_t **list, size_t *count, const char *a, const char *b,
                          const char *c, const char *d, const char *e) {
    for (size_t i = 0; i < *count; i++) {
        prom__pair_t *p = &(*list)[i];
        if (prom__same(p->a, a) && prom__same(p->b, b) && prom__same(p->c, c) &&
            prom__same(p->d, d) && prom__same(p->e, e))
            return 0;
    }
    prom__pair_t *n = realloc(*list, (*count + 1) * sizeof(*n));
    if (n == NULL)
        return FRUGAL_ENOMEM;
    *list = n;
    prom__pair_t *p = &n[*count];
    p->a = prom__dup(a), p->b = prom__dup(b), p->c = prom__dup(c), p->d = prom__dup(d);
    p->e = prom__dup(e);
    if (!p->a || !p->b || !p->c || !p->d || !p->e) {
        free(p->a), free(p->b), free(p->c), free(p->d), free(p->e);
        return FRUGAL_ENOMEM;
    }
    (*count)++;
    return 0;
}

/* Replace an owner (kind and name) with copies of kind and name. */
static int prom__set_owner(char **kind_dst, char **name_dst, const char *kind, const char *name) {
    free(*kind_dst), free(*name_dst);
    *kind_dst = prom__dup(kind);
    *name_dst = prom__dup(name);
    return *kind_dst != NULL && *name_dst != NULL ? 0 : FRUGAL_ENOMEM;
}

static int prom__series(replay_prom_t *b, replay_prom_series_t s, const yaml_tree_node_t *item,
                        frugal_err_t *err) {
    const yaml_tree_node_t *metric = yaml_tree_mapping_get(item, "metric");
    const yaml_tree_node_t *values = yaml_tree_mapping_get(item, "values");
    double first = 0, last = 0, max = 0, last_at = 0;
    if (metric == NULL || metric->type != YAML_TREE_MAPPING ||
        !prom__values(values, &first, &last, &max, &last_at))
        return frugal_err_set(
            err, FRUGAL_EINVAL,
            "not a Prometheus answer: a %s series without a metric, or with values "
            "that are not [time, \"number\"] pairs",
            prom__metrics[s]);
    /* fmax: the one that is not NaN. Any pod's last sample is kube-state-metrics' scrape
     * too, even a series that names no pod. */
    if (s == REPLAY_PROM_LAST_SCRAPE || s == REPLAY_PROM_INFO_SEEN)
        b->last_scrape = fmax(b->last_scrape, max);
    if (s == REPLAY_PROM_LAST_SCRAPE)
        return 0;
    bool nomem = false;
    prom__pod_t *p = prom__pod(b, metric, &nomem);
    if (p == NULL)
        return nomem ? frugal_err_set(err, FRUGAL_ENOMEM, "out of memory") : 0;
    bool is_time =
        s == REPLAY_PROM_CREATED || s == REPLAY_PROM_START || s == REPLAY_PROM_COMPLETION;
    if (is_time && !(isfinite(first) && isfinite(last)))
        return 0; /* NaN or Inf is no time: the pod's is unknown (no creation time: counted) */
    int rc = 0;
    switch (s) {
    case REPLAY_PROM_CREATED:
        p->recreated = p->recreated || first != last || (!isnan(p->created) && p->created != first);
        p->created = last;
        break;
    case REPLAY_PROM_INFO_SEEN: {
        p->seen = fmax(p->seen, max);
        /* timestamp() keeps kube_pod_info's labels: its controller, kube_pod_owner's
         * stand-in when that series is denylisted */
        const char *kind = prom__label(metric, "created_by_kind");
        if (kind != NULL && kind[0] != '\0' && strcmp(kind, "<none>") != 0)
            rc = prom__set_owner(&p->created_by_kind, &p->created_by_name, kind,
                                 prom__label(metric, "created_by_name"));
        break;
    }
    case REPLAY_PROM_COMPLETION_SEEN:
        p->completion_seen = fmax(p->completion_seen, max);
        break;
    case REPLAY_PROM_START:
        p->start = last;
        break;
    case REPLAY_PROM_COMPLETION:
        if (last_at >= p->completion_at)
            p->completion = last, p->completion_at = last_at;
        break;
    case REPLAY_PROM_REQUESTS:
    case REPLAY_PROM_INIT_REQUESTS:
        rc = prom__add_request(p, metric, s == REPLAY_PROM_INIT_REQUESTS, last);
        break;
    case REPLAY_PROM_OWNER: {
        const char *kind = prom__label(metric, "owner_kind");
        const char *ctl = prom__label(metric, "owner_is_controller");
        if (kind != NULL && strcmp(kind, "<none>") != 0 && !(ctl && strcmp(ctl, "false") == 0))
            rc = prom__set_owner(&p->owner_kind, &p->owner_name, kind,
                                 prom__label(metric, "owner_name"));
        break;
    }
    case REPLAY_PROM_NODESELECTORS:
        for (size_t i = 0; i < metric->u.mapping.count && rc == 0; i++) {
            const yaml_tree_pair_t *kv = &metric->u.mapping.items[i];
            const char *k = kv->key->u.scalar.text;
            if (strncmp(k, "nodeselector_", 13) == 0 && kv->value->type == YAML_TREE_SCALAR)
                rc = prom__add_pair(&p->sels, &p->sels_count, k + 13, kv->value->u.scalar.text,
                                    NULL, NULL, NULL);
        }
        break;
    case REPLAY_PROM_TOLERATIONS:
        rc = prom__add_pair(&p->tols, &p->tols_count, prom__label(metric, "key"),
                            prom__label(metric, "operator"), prom__label(metric, "value"),
                            prom__label(metric, "effect"),
                            prom__label(metric, "toleration_seconds"));
        break;
    case REPLAY_PROM_INIT_INFO: {
        const char *policy = prom__label(metric, "restart_policy");
        if (policy != NULL && strcmp(policy, "Always") == 0)
            rc = prom__add_pair(&p->sidecars, &p->sidecars_count,
                                prom__pod_label(metric, "container"), NULL, NULL, NULL, NULL);
        break;
    }
    case REPLAY_PROM_OVERHEAD_CPU:
    case REPLAY_PROM_OVERHEAD_MEMORY:
        /* Within the bounds prom__add_request keeps; else not an overhead to replay. */
        if (isfinite(last) && last >= 0 && last <= (s == REPLAY_PROM_OVERHEAD_CPU ? 1e6 : 1e15))
            *(s == REPLAY_PROM_OVERHEAD_CPU ? &p->overhead_cpu : &p->overhead_memory) = last;
        break;
    case REPLAY_PROM_RESTARTS:
        p->restarted = p->restarted || max > 0;
        rc = prom__seen_container(p, prom__pod_label(metric, "container"));
        break;
    default:
        break;
    }
    return rc ? frugal_err_set(err, FRUGAL_ENOMEM, "out of memory") : 0;
}

/* Parse a Prometheus answer into *root (free it with yaml_tree_free) and its top-level
 * "status" and "data" (NULL when absent, or when the answer is not an object); EINVAL
 * when the text is not JSON at all. */
static int prom__load_answer(const char *text, size_t len, yaml_tree_node_t **root,
                             const yaml_tree_node_t **status, const yaml_tree_node_t **data,
                             frugal_err_t *err) {
    yaml_tree_error_t ye;
    char why[48];
    *root = NULL;
    *status = *data = NULL;
    size_t at = 0;
    while (at < len && isspace((unsigned char)text[at]))
        at++;
    /* libyaml reads JSON, and more: an HTML page would parse as one YAML string */
    if (at == len)
        return frugal_err_set(err, FRUGAL_EINVAL, "not a Prometheus answer: an empty body");
    if (text[at] != '{') {
        char start[17];
        size_t n = 0;
        for (size_t i = at; i < len && n < 16; i++)
            start[n++] = isprint((unsigned char)text[i]) ? text[i] : '?';
        start[n] = '\0';
        return frugal_err_set(
            err, FRUGAL_EINVAL,
            "not a Prometheus answer: not a JSON object (it starts with \"%s%s\")", start,
            len - at > 16 ? "..." : "");
    }
    if (yaml_tree_load(text, len, root, &ye) != 0) {
        if (ye.line > 0)
            snprintf(why, sizeof(why), " at line %d, column %d", ye.line, ye.column);
        else
            why[0] = '\0';
        return frugal_err_set(err, FRUGAL_EINVAL,
                              "not a Prometheus answer: not JSON (cut short?)%s", why);
    }
    if (*root != NULL && (*root)->type == YAML_TREE_MAPPING) {
        *status = yaml_tree_mapping_get(*root, "status");
        *data = yaml_tree_mapping_get(*root, "data");
    }
    return 0;
}

int replay_prom_add(replay_prom_t *b, replay_prom_series_t s, const char *text, size_t len,
                    frugal_err_t *err) {
    yaml_tree_node_t *root;
    const yaml_tree_node_t *status, *data, *result = NULL;
    int rc = prom__load_answer(text, len, &root, &status, &data, err);
    if (rc != 0)
        return rc;
    if (status == NULL || status->type != YAML_TREE_SCALAR) {
        rc = frugal_err_set(err, FRUGAL_EINVAL, "not a Prometheus answer: no \"status\"");
        goto done;
    }
    if (strcmp(status->u.scalar.text, "success") != 0) {
        const yaml_tree_node_t *e = yaml_tree_mapping_get(root, "error");
        rc = frugal_err_set(err, FRUGAL_EINVAL, "Prometheus answered %s: %s", status->u.scalar.text,
                            e && e->type == YAML_TREE_SCALAR ? e->u.scalar.text : "no message");
        prom__one_line(err != NULL ? err->msg : NULL);
        goto done;
    }
    const yaml_tree_node_t *type = NULL;
    if (data != NULL && data->type == YAML_TREE_MAPPING) {
        result = yaml_tree_mapping_get(data, "result");
        type = yaml_tree_mapping_get(data, "resultType");
    }
    if (result == NULL || result->type != YAML_TREE_SEQUENCE) {
        rc = frugal_err_set(err, FRUGAL_EINVAL, "not a Prometheus answer: no data.result list");
        goto done;
    }
    if (type == NULL || type->type != YAML_TREE_SCALAR ||
        strcmp(type->u.scalar.text, "matrix") != 0) {
        rc =
            frugal_err_set(err, FRUGAL_EINVAL,
                           "not a Prometheus answer to a range query: data.resultType is %s%s%s, "
                           "not matrix",
                           type && type->type == YAML_TREE_SCALAR ? "\"" : "",
                           type && type->type == YAML_TREE_SCALAR ? type->u.scalar.text : "missing",
                           type && type->type == YAML_TREE_SCALAR ? "\"" : "");
        goto done;
    }
    for (size_t i = 0; i < result->u.sequence.count && rc == 0; i++)
        rc = prom__series(b, s, result->u.sequence.items[i], err);
    /* A partial answer (a Thanos store down, a query limit) is still an answer: kept,
     * and its warning shown. */
    const yaml_tree_node_t *warnings = yaml_tree_mapping_get(root, "warnings");
    if (rc == 0 && warnings != NULL && warnings->type == YAML_TREE_SEQUENCE &&
        warnings->u.sequence.count > 0) {
        b->warned_answers++;
        const yaml_tree_node_t *w = warnings->u.sequence.items[0];
        if (b->warning == NULL && w->type == YAML_TREE_SCALAR &&
            (b->warning = prom__dup(w->u.scalar.text)) == NULL)
            rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        prom__one_line(b->warning);
    }
done:
    yaml_tree_free(root);
    return rc;
}

bool replay_prom_asked(replay_prom_series_t s, const char *namespace_re) {
    return s != REPLAY_PROM_LAST_SCRAPE || namespace_re != NULL;
}

int replay_prom_has_metric(const char *text, size_t len, const char *metric, bool *has,
                           frugal_err_t *err) {
    yaml_tree_node_t *root;
    const yaml_tree_node_t *status, *data;
    *has = false;
    int rc = prom__load_answer(text, len, &root, &status, &data, err);
    if (rc != 0)
        return rc;
    const yaml_tree_node_t *e = root != NULL && root->type == YAML_TREE_MAPPING
                                    ? yaml_tree_mapping_get(root, "error")
                                    : NULL;
    if (status != NULL && status->type == YAML_TREE_SCALAR &&
        strcmp(status->u.scalar.text, "error") == 0 && e != NULL && e->type == YAML_TREE_SCALAR)
        rc = frugal_err_set(err, FRUGAL_EINVAL, "Prometheus answered error: %s", e->u.scalar.text);
    else if (status == NULL || status->type != YAML_TREE_SCALAR || data == NULL ||
             data->type != YAML_TREE_SEQUENCE)
        rc = frugal_err_set(err, FRUGAL_EINVAL,
                            "not a Prometheus answer: expected {\"status\", \"data\": [...]}");
    prom__one_line(rc != 0 && err != NULL ? err->msg : NULL);
    for (size_t i = 0; rc == 0 && i < data->u.sequence.count && !*has; i++) {
        const yaml_tree_node_t *v = data->u.sequence.items[i];
        *has = v->type == YAML_TREE_SCALAR && strcmp(v->u.scalar.text, metric) == 0;
    }
    yaml_tree_free(root);
    return rc;
}

/* ---- the trace ---- */

/* Whether name is kube-state-metrics' label name of the Kubernetes label key (after its
 * prefix): every character other than a letter, digit or underscore becomes an
 * underscore, then an underscore goes between a lower-case letter or digit and the
 * capital after it (left to right, each pair once), and everything is lower-cased. */
static bool prom__ksm_name_is(const char *label_key, const char *name) {
    for (const char *k = label_key; *k; k++) {
        char c = isalnum((unsigned char)*k) ? *k : '_';
        bool pair = (islower((unsigned char)c) || isdigit((unsigned char)c)) &&
                    isupper((unsigned char)k[1]);
        if (*name++ != tolower((unsigned char)c))
            return false;
        if (pair) {
            if (*name++ != '_' || *name++ != tolower((unsigned char)k[1]))
                return false;
            k++;
        }
    }
    return *name == '\0';
}

static bool prom__is_sidecar(const prom__pod_t *p, const char *container) {
    for (size_t i = 0; i < p->sidecars_count; i++)
        if (strcmp(p->sidecars[i].a, container) == 0)
            return true;
    return false;
}

static void prom__quantity(FILE *f, int resource, double value) {
    if (resource == 0)
        fprintf(f, "\"%lldm\"", (long long)llround(value * 1000.0));
    else
        fprintf(f, "\"%lld\"", (long long)llround(value));
}

/* The containers (init: the init containers that are sidecars, or the others), one entry
 * per container with its requests, after *first_container's. */
static void prom__containers(FILE *f, const prom__pod_t *p, bool init, bool sidecars,
                             bool *first_container) {
    static const char *const names[] = {"cpu", "memory", "nvidia.com/gpu", "amd.com/gpu"};
    for (size_t i = 0; i < p->reqs_count; i++) {
        const prom__request_t *r = &p->reqs[i];
        bool seen = false; /* one entry per container: its first request opens it */
        for (size_t j = 0; j < i && !seen; j++)
            seen = p->reqs[j].init == init && strcmp(p->reqs[j].container, r->container) == 0;
        if (r->init != init || seen || (init && prom__is_sidecar(p, r->container) != sidecars))
            continue;
        fputs(*first_container ? "" : ", ", f);
        *first_container = false;
        fputs("{\"name\": ", f);
        log_json_fputs(f, r->container);
        fputs(sidecars ? ", \"restartPolicy\": \"Always\"" : "", f);
        fputs(", \"resources\": {\"requests\": {", f);
        bool first = true;
        for (size_t j = i; j < p->reqs_count; j++) {
            const prom__request_t *q = &p->reqs[j];
            if (q->init != init || strcmp(q->container, r->container) != 0)
                continue;
            fprintf(f, "%s\"%s\": ", first ? "" : ", ", names[q->resource]);
            prom__quantity(f, q->resource, q->value);
            first = false;
        }
        fputs("}}}", f);
    }
}

/* The pod's controller: kube_pod_owner's, else kube_pod_info's created_by_kind; NULL
 * when none. */
static const char *prom__owner(const prom__pod_t *p, const char **name) {
    *name = p->owner_kind != NULL ? p->owner_name : p->created_by_name;
    return p->owner_kind != NULL ? p->owner_kind : p->created_by_kind;
}

static void prom__pod_json(FILE *f, const prom__pod_t *p, const char *const *known,
                           size_t known_count) {
    fputs("{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": ", f);
    log_json_fputs(f, p->name);
    fputs(", \"namespace\": ", f);
    log_json_fputs(f, p->ns);
    const char *owner_name, *owner_kind = prom__owner(p, &owner_name);
    if (owner_kind != NULL) {
        fputs(", \"ownerReferences\": [{\"kind\": ", f);
        log_json_fputs(f, owner_kind);
        fputs(", \"name\": ", f);
        log_json_fputs(f, owner_name);
        fputs(", \"controller\": true}]", f);
    }
    fputs("}, \"spec\": {\"containers\": [", f);
    bool first_container = true;
    prom__containers(f, p, false, false, &first_container);
    /* A Pod has a container: without requests (BestEffort), one without resources. */
    if (first_container) {
        fputs("{\"name\": ", f);
        log_json_fputs(f, p->container != NULL ? p->container : PROM__CONTAINER);
        fputs("}", f);
    }
    fputs("]", f);
    bool has_init = false;
    for (size_t i = 0; i < p->reqs_count; i++)
        has_init = has_init || p->reqs[i].init;
    if (has_init) {
        /* Sidecars first: each ordinary init container then runs beside all of them, the
         * most the unknown declaration order can ask. */
        fputs(", \"initContainers\": [", f);
        first_container = true;
        prom__containers(f, p, true, true, &first_container);
        prom__containers(f, p, true, false, &first_container);
        fputs("]", f);
    }
    if (!isnan(p->overhead_cpu) || !isnan(p->overhead_memory)) {
        fputs(", \"overhead\": {", f);
        if (!isnan(p->overhead_cpu)) {
            fputs("\"cpu\": ", f);
            prom__quantity(f, 0, p->overhead_cpu);
        }
        if (!isnan(p->overhead_memory)) {
            fputs(isnan(p->overhead_cpu) ? "\"memory\": " : ", \"memory\": ", f);
            prom__quantity(f, 1, p->overhead_memory);
        }
        fputs("}", f);
    }
    if (p->sels_count > 0) {
        fputs(", \"nodeSelector\": {", f);
        for (size_t i = 0; i < p->sels_count; i++) {
            const char *key = p->sels[i].a;
            for (size_t k = 0; k < known_count; k++)
                if (prom__ksm_name_is(known[k], p->sels[i].a))
                    key = known[k];
            fputs(i ? ", " : "", f);
            log_json_fputs(f, key);
            fputs(": ", f);
            log_json_fputs(f, p->sels[i].b);
        }
        fputs("}", f);
    }
    if (p->tols_count > 0) {
        fputs(", \"tolerations\": [", f);
        for (size_t i = 0; i < p->tols_count; i++) {
            const prom__pair_t *t = &p->tols[i];
            fputs(i ? ", {" : "{", f);
            const char *names[] = {"key", "operator", "value", "effect"};
            const char *vals[] = {t->a, t->b, t->c, t->d};
            bool first = true;
            for (int k = 0; k < 4; k++) {
                if (vals[k][0] == '\0')
                    continue;
                fprintf(f, "%s\"%s\": ", first ? "" : ", ", names[k]);
                log_json_fputs(f, vals[k]);
                first = false;
            }
            char *end;
            long long seconds = strtoll(t->e, &end, 10);
            if (t->e[0] != '\0' && *end == '\0')
                fprintf(f, "%s\"tolerationSeconds\": %lld", first ? "" : ", ", seconds);
            fputs("}", f);
        }
        fputs("]", f);
    }
    fputs("}}", f);
}

typedef struct prom__line {
    int64_t t, duration;
    const prom__pod_t *pod;
} prom__line_t;

static int prom__line_cmp(const void *a, const void *b) {
    const prom__line_t *x = a, *y = b;
    if (x->t != y->t)
        return (x->t > y->t) - (x->t < y->t);
    int c = strcmp(x->pod->ns, y->pod->ns);
    return c ? c : strcmp(x->pod->name, y->pod->name);
}

int replay_prom_trace(const replay_prom_t *b, const char *const *known_keys, size_t known_count,
                      char **text, size_t *len, replay_prom_stats_t *stats, frugal_err_t *err) {
    memset(stats, 0, sizeof(*stats));
    *text = NULL, *len = 0;
    prom__line_t *lines = calloc(b->pods_count + 1, sizeof(*lines));
    if (lines == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    /* A pod seen at kube-state-metrics' last scrape, when that is the range's end (within
     * Prometheus' 5-minute look-back), was still running: it runs to the end, not to its
     * last sample. */
    double last_scrape = b->last_scrape; /* over every namespace, --namespace or not */
    for (size_t i = 0; i < b->pods_count; i++)
        last_scrape = fmax(last_scrape, b->pods[i]->seen); /* a pod never seen (NaN) is none */
    if (!(last_scrape >= (double)b->end_s - PROM__LOOKBACK_S))
        last_scrape = NAN;
    size_t n = 0;
    for (size_t i = 0; i < b->pods_count; i++) {
        const prom__pod_t *p = b->pods[i];
        if (isnan(p->created)) {
            stats->no_created += p->reqs_count > 0;
            continue;
        }
        const char *owner_name;
        if (pod_kind_per_node(prom__owner(p, &owner_name))) {
            stats->per_node++;
            continue;
        }
        double from = isnan(p->start) ? p->created : p->start;
        /* kube-state-metrics gives a completion time whenever one of the pod's containers
         * is terminated, so a container that restarted leaves one behind while the pod
         * runs on: in a pod that restarted one, a completion series that ends before the
         * pod's is no end. */
        bool completed = !isnan(p->completion) &&
                         !(p->restarted && p->completion_seen < p->seen - PROM__SAME_SCRAPE_S);
        stats->reused += p->recreated && !p->has_uid;
        /* kube_pod_info's last sample is read at whole minutes: a pod it was never seen at
         * lived between two of them, so it was gone by the next one. */
        double to = completed                ? p->completion
                    : p->seen == last_scrape ? (double)b->end_s
                    : !isnan(p->seen)        ? p->seen
                                             : (floor(from / 60.0) + 1.0) * 60.0;
        double arrive = p->created > (double)b->start_s ? p->created : (double)b->start_s;
        if (from < arrive)
            from = arrive;
        if (to > (double)b->end_s)
            to = (double)b->end_s;
        if (to <= from || from >= (double)b->end_s) {
            stats->outside++;
            continue;
        }
        lines[n++] = (prom__line_t){llround(arrive - (double)b->start_s),
                                    llround(to - arrive) - llround(from - arrive), p};
        if (lines[n - 1].duration < 1)
            lines[n - 1].duration = 1;
    }
    qsort(lines, n, sizeof(*lines), prom__line_cmp);
    FILE *f = open_memstream(text, len);
    if (f == NULL) {
        free(lines);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "{\"t\": %lld, \"pod\": ", (long long)lines[i].t);
        prom__pod_json(f, lines[i].pod, known_keys, known_count);
        fprintf(f, ", \"duration\": %lld}\n", (long long)lines[i].duration);
    }
    stats->pods = n;
    free(lines);
    if (fclose(f) != 0) {
        free(*text);
        *text = NULL, *len = 0;
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    return 0;
}
