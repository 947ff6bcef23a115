#include "metrics.h"

#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "revision.h"

#define METRICS_MAX_LABELS 3
#define METRICS_MAX_BUCKETS 16
/* Series per family: label values come from clients too (BestOptions' group ids), so a
 * bound keeps a client that names ever new groups from growing the registry forever. */
#define METRICS_MAX_SERIES 2048
#define METRICS_OVERFLOW "_overflow"

/* One set of label values of a family. Never moves nor is freed while serving. */
struct metrics_cell {
    metrics_cell_t *next;
    char *key; /* the label values joined by \x1f */
    const struct metrics_family *family;
    const char *values[METRICS_MAX_LABELS];            /* point into key's copy, split */
    _Atomic uint64_t count;                            /* counter value */
    _Atomic uint64_t sum_ns;                           /* histogram: sum of observations */
    _Atomic uint64_t buckets[METRICS_MAX_BUCKETS + 1]; /* per bucket, the last is +Inf */
    _Atomic bool owned;  /* node_group is one of frugal's groups (metrics_own_group) */
    _Atomic bool hidden; /* an owned group that no longer exists: not exposed */
};

typedef enum metrics_kind {
    METRICS__COUNTER,
    METRICS__HISTOGRAM,
    METRICS__GAUGE, /* set, not added to: metrics_set */
} metrics_kind_t;

typedef struct metrics_family {
    const char *name;
    const char *help;
    metrics_kind_t kind;
    size_t labels_count;
    const char *labels[METRICS_MAX_LABELS];
    const double *bounds; /* histogram upper bounds, ascending */
    size_t bounds_count;
    _Atomic(metrics_cell_t *) head;
    bool shown_from_zero; /* histogram: its cells, made up front, are shown before any
                             observation (else a cell appears with its first) */
    bool groups_owned;    /* every cell's node_group is one of frugal's groups */
} metrics_family_t;

/* Per family, beside the constant description: its series made, whether its overflow
 * was logged. */
static struct {
    _Atomic size_t cells;
    _Atomic bool overflow_logged;
} family_use[METRICS_FAMILIES_COUNT];

/* Call latencies, up to cluster-autoscaler's 5 s call timeout. */
static const double rpc_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                    0.1,    0.25,  0.5,    1,     2.5,  5};
/* State writes: a write plus two fsyncs. */
static const double write_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                      0.05,   0.1,   0.25,   0.5,   1,    5};
/* Hooks call a cloud's API: seconds to minutes (timeout default 10 min). */
static const double hook_bounds[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};

#define BOUNDS(a) a, sizeof(a) / sizeof(a[0])

static metrics_family_t families[METRICS_FAMILIES_COUNT] = {
    [METRICS_GRPC_HANDLED] = {"grpc_server_handled_total",
                              "RPCs completed on the server, by method and status code.",
                              METRICS__COUNTER,
                              3,
                              {"grpc_service", "grpc_method", "grpc_code"},
                              NULL,
                              0,
                              NULL,
                              false,
                              false},
    [METRICS_GRPC_SECONDS] = {"grpc_server_handling_seconds",
                              "Time from receiving an RPC to replying to it.",
                              METRICS__HISTOGRAM,
                              2,
                              {"grpc_service", "grpc_method"},
                              BOUNDS(rpc_bounds),
                              NULL,
                              false,
                              false},
    [METRICS_EXPANDER_DECISIONS] = {"frugal_expander_decisions_total",
                                    "BestOptions answers, by node group of each chosen option.",
                                    METRICS__COUNTER,
                                    1,
                                    {"node_group"},
                                    NULL,
                                    0,
                                    NULL,
                                    false,
                                    false},
    [METRICS_EXPANDER_UNSCORED] = {"frugal_expander_options_unscored_total",
                                   "BestOptions options that could not be scored, by reason.",
                                   METRICS__COUNTER,
                                   1,
                                   {"reason"},
                                   NULL,
                                   0,
                                   NULL,
                                   false,
                                   false},
    [METRICS_LIMIT_REFUSALS] = {"frugal_resource_limit_refusals_total",
                                "Size changes refused by an autoprovisioning resource limit.",
                                METRICS__COUNTER,
                                1,
                                {"resource"},
                                NULL,
                                0,
                                NULL,
                                false,
                                false},
    [METRICS_STATE_WRITE_SECONDS] = {"frugal_state_write_seconds",
                                     "Time to write and sync the state file.",
                                     METRICS__HISTOGRAM,
                                     0,
                                     {NULL},
                                     BOUNDS(write_bounds),
                                     NULL,
                                     false,
                                     false},
    [METRICS_HOOK_RUNS] = {"frugal_hook_runs_total",
                           "Exec provider hook runs, by verb and result.",
                           METRICS__COUNTER,
                           2,
                           {"verb", "result"},
                           NULL,
                           0,
                           NULL,
                           false,
                           false},
    [METRICS_ETCD_SECONDS] = {"frugal_etcd_request_seconds",
                              "etcd requests of the etcd state backend, by method and outcome.",
                              METRICS__HISTOGRAM,
                              2,
                              {"method", "outcome"},
                              BOUNDS(rpc_bounds),
                              NULL,
                              false,
                              false},
    [METRICS_ETCD_TXN_REFUSED] = {"frugal_etcd_txn_refused_total",
                                  "etcd transactions whose compares failed: another replica "
                                  "wrote first (conflict), this one lost its lease (fenced), or "
                                  "a group key holds a value refused as corrupt (unreadable).",
                                  METRICS__COUNTER,
                                  1,
                                  {"reason"},
                                  NULL,
                                  0,
                                  NULL,
                                  false,
                                  false},
    [METRICS_STATE_WRITE_FAILURES] = {"frugal_state_write_failures_total",
                                      "State commits the backend could not make durable.",
                                      METRICS__COUNTER,
                                      0,
                                      {NULL},
                                      NULL,
                                      0,
                                      NULL,
                                      false,
                                      false},
    [METRICS_CALLS_REFUSED] = {"frugal_calls_refused_total",
                               "Calls refused by the server's limits: their connection held its "
                               "fair share of the calls in flight (connection_share, "
                               "RESOURCE_EXHAUSTED), the server its cap (total), or no message "
                               "came within limits.receive_timeout (DEADLINE_EXCEEDED).",
                               METRICS__COUNTER,
                               1,
                               {"reason"},
                               NULL,
                               0,
                               NULL,
                               false,
                               false},
    [METRICS_CONNECTIONS_CLOSED] = {"frugal_connections_closed_total",
                                    "Connections closed for holding more unended streams "
                                    "than twice limits.max_concurrent_streams (streams reset "
                                    "faster than they are served).",
                                    METRICS__COUNTER,
                                    0,
                                    {NULL},
                                    NULL,
                                    0,
                                    NULL,
                                    false,
                                    false},
    [METRICS_HOOK_SECONDS] = {"frugal_hook_seconds",
                              "Exec provider hook run time, by verb.",
                              METRICS__HISTOGRAM,
                              1,
                              {"verb"},
                              BOUNDS(hook_bounds),
                              NULL,
                              true,
                              false},
    [METRICS_RECONCILE_REPLACED] = {"frugal_reconcile_replaced_total",
                                    "Running instances the exec hook's list no longer showed, "
                                    "replaced by new ones.",
                                    METRICS__COUNTER,
                                    1,
                                    {"node_group"},
                                    NULL,
                                    0,
                                    NULL,
                                    false,
                                    true},
    [METRICS_RECONCILE_LIST_FAILURES] = {"frugal_reconcile_list_failures_total",
                                         "Exec hook lists ignored, by reason: failed, timeout, "
                                         "malformed, truncated, none_listed.",
                                         METRICS__COUNTER,
                                         2,
                                         {"node_group", "reason"},
                                         NULL,
                                         0,
                                         NULL,
                                         false,
                                         true},
    [METRICS_RECONCILE_UNKNOWN] = {"frugal_reconcile_unknown_machines",
                                   "Machines the exec hook's last judged list showed that frugal "
                                   "does not know (leaks).",
                                   METRICS__GAUGE,
                                   1,
                                   {"node_group"},
                                   NULL,
                                   0,
                                   NULL,
                                   false,
                                   true},
};

static _Atomic int64_t config_reload_ms;
static _Atomic int config_reload_ok = 1;
static _Atomic int state_leader = -1; /* -1: no replicated backend */
static _Atomic int state_stale = -1;

/* The label values joined by \x1f (each one ended by it) into buf when they fit in
 * size, else into a new allocation (*heap set). NULL when out of memory. */
static char *metrics__join(const metrics_family_t *f, const char *const *v, char *buf, size_t size,
                           size_t *len, bool *heap) {
    size_t n = 0;
    for (size_t i = 0; i < f->labels_count; i++)
        n += strlen(v[i] ? v[i] : "") + 1;
    *heap = n >= size;
    char *key = *heap ? malloc(n + 1) : buf;
    if (key == NULL)
        return NULL;
    size_t at = 0;
    for (size_t i = 0; i < f->labels_count; i++) {
        size_t l = strlen(v[i] ? v[i] : "");
        memcpy(key + at, v[i] ? v[i] : "", l);
        at += l;
        key[at++] = '\x1f';
    }
    key[at] = '\0';
    *len = at;
    return key;
}

static metrics_cell_t *metrics__find(metrics_cell_t *c, const char *key) {
    for (; c != NULL; c = c->next)
        if (strcmp(c->key, key) == 0)
            return c;
    return NULL;
}

static metrics_cell_t *metrics__cell(metrics_family_t *f, const char *const *v);

/* The series of label sets past the family's bound: every label METRICS_OVERFLOW. */
static metrics_cell_t *metrics__overflow(metrics_family_t *f) {
    if (!atomic_exchange(&family_use[f - families].overflow_logged, true))
        log_warn("metrics: %s holds %d series, the most one family may; further label sets "
                 "are counted together under the label value %s",
                 f->name, METRICS_MAX_SERIES, METRICS_OVERFLOW);
    const char *v[METRICS_MAX_LABELS] = {METRICS_OVERFLOW, METRICS_OVERFLOW, METRICS_OVERFLOW};
    return metrics__cell(f, v);
}

metrics_cell_t *metrics_cell(metrics_id_t id, const char *v1, const char *v2, const char *v3) {
    if ((unsigned)id >= METRICS_FAMILIES_COUNT)
        return NULL;
    const char *v[METRICS_MAX_LABELS] = {v1, v2, v3};
    return metrics__cell(&families[id], v);
}

static metrics_cell_t *metrics__cell(metrics_family_t *f, const char *const *v) {
    char buf[256];
    size_t len = 0;
    bool heap;
    char *key = metrics__join(f, v, buf, sizeof(buf), &len, &heap);
    if (key == NULL)
        return NULL;
    metrics_cell_t *head = atomic_load_explicit(&f->head, memory_order_acquire);
    metrics_cell_t *found = metrics__find(head, key);
    if (found != NULL || (!heap && (key = strdup(buf)) == NULL)) {
        if (heap)
            free(key);
        return found;
    }
    if (atomic_load_explicit(&family_use[f - families].cells, memory_order_relaxed) >=
            METRICS_MAX_SERIES &&
        f->labels_count > 0 && strcmp(v[0], METRICS_OVERFLOW) != 0) {
        free(key);
        return metrics__overflow(f);
    }
    metrics_cell_t *c = calloc(1, sizeof(*c) + len + 1);
    if (c == NULL) {
        free(key);
        return NULL;
    }
    /* values: the key's copy after the struct, split at the separators */
    char *copy = (char *)(c + 1);
    memcpy(copy, key, len + 1);
    c->key = key;
    c->family = f;
    char *p = copy;
    for (size_t i = 0; i < f->labels_count; i++) {
        c->values[i] = p;
        p = strchr(p, '\x1f');
        *p++ = '\0';
    }
    /* Publish; if another thread published cells meanwhile, look among them first. */
    for (;;) {
        c->next = head;
        if (atomic_compare_exchange_weak_explicit(&f->head, &head, c, memory_order_release,
                                                  memory_order_acquire)) {
            atomic_fetch_add_explicit(&family_use[f - families].cells, 1, memory_order_relaxed);
            return c;
        }
        /* head now holds the newer list: only its part above c->next can be new */
        for (metrics_cell_t *o = head; o != NULL && o != c->next; o = o->next) {
            if (strcmp(o->key, key) == 0) {
                free(c->key);
                free(c);
                return o;
            }
        }
    }
}

metrics_cell_t *metrics_own_group(metrics_id_t id, const char *group) {
    metrics_cell_t *c = metrics_cell(id, group, NULL, NULL);
    if (c != NULL && strcmp(c->values[0], METRICS_OVERFLOW) != 0)
        atomic_store_explicit(&c->owned, true, memory_order_relaxed);
    return c;
}

void metrics_keep_groups(bool (*exists)(const char *group, void *ctx), void *ctx) {
    for (size_t i = 0; i < METRICS_FAMILIES_COUNT; i++) {
        metrics_family_t *f = &families[i];
        if (f->labels_count == 0 || strcmp(f->labels[0], "node_group") != 0)
            continue;
        for (metrics_cell_t *c = atomic_load_explicit(&f->head, memory_order_acquire); c != NULL;
             c = c->next) {
            bool owned = f->groups_owned || atomic_load_explicit(&c->owned, memory_order_relaxed);
            bool gone =
                owned && strcmp(c->values[0], METRICS_OVERFLOW) != 0 && !exists(c->values[0], ctx);
            atomic_store_explicit(&c->hidden, gone, memory_order_relaxed);
        }
    }
}

void metrics_cell_add(metrics_cell_t *cell, uint64_t n) {
    if (cell != NULL)
        atomic_fetch_add_explicit(&cell->count, n, memory_order_relaxed);
}

void metrics_cell_observe(metrics_cell_t *cell, double seconds) {
    if (cell == NULL)
        return;
    if (!(seconds > 0))
        seconds = 0;
    const metrics_family_t *f = cell->family;
    size_t b = 0;
    while (b < f->bounds_count && seconds > f->bounds[b])
        b++;
    atomic_fetch_add_explicit(&cell->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&cell->sum_ns, (uint64_t)(seconds * 1e9), memory_order_relaxed);
    atomic_fetch_add_explicit(&cell->count, 1, memory_order_relaxed);
}

uint64_t metrics_cell_value(const metrics_cell_t *cell) {
    return cell ? atomic_load_explicit(&cell->count, memory_order_relaxed) : 0;
}

void metrics_set(metrics_id_t id, uint64_t value, const char *v1, const char *v2) {
    metrics_cell_t *cell = metrics_cell(id, v1, v2, NULL);
    if (cell != NULL)
        atomic_store_explicit(&cell->count, value, memory_order_relaxed);
}

void metrics_count(metrics_id_t id, const char *v1, const char *v2, const char *v3) {
    metrics_cell_add(metrics_cell(id, v1, v2, v3), 1);
}

void metrics_observe(metrics_id_t id, double seconds, const char *v1, const char *v2) {
    metrics_cell_observe(metrics_cell(id, v1, v2, NULL), seconds);
}

void metrics_config_reloaded(double unix_seconds) {
    atomic_store(&config_reload_ms, (int64_t)(unix_seconds * 1000.0));
    atomic_store(&config_reload_ok, 1);
}

void metrics_config_reload_failed(void) {
    atomic_store(&config_reload_ok, 0);
}

void metrics_state_leader(bool leader) {
    atomic_store(&state_leader, leader ? 1 : 0);
}

void metrics_state_stale(bool stale) {
    atomic_store(&state_stale, stale ? 1 : 0);
}

double metrics_config_reload_time(void) {
    return (double)atomic_load(&config_reload_ms) / 1000.0;
}

void metrics_reset_for_testing(void) {
    for (size_t i = 0; i < METRICS_FAMILIES_COUNT; i++) {
        atomic_store(&family_use[i].cells, 0);
        atomic_store(&family_use[i].overflow_logged, false);
        metrics_cell_t *c = atomic_exchange(&families[i].head, NULL);
        while (c != NULL) {
            metrics_cell_t *next = c->next;
            free(c->key);
            free(c);
            c = next;
        }
    }
    atomic_store(&config_reload_ms, 0);
    atomic_store(&config_reload_ok, 1);
    atomic_store(&state_leader, -1);
    atomic_store(&state_stale, -1);
}

/* ---- exposition ---- */

void metrics_buf_printf(metrics_buf_t *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    strbuf_vprintf(b, fmt, ap);
    va_end(ap);
}

void metrics_buf_free(metrics_buf_t *b) {
    strbuf_free(b);
}

void metrics_buf_family(metrics_buf_t *b, const char *name, const char *help, const char *type) {
    metrics_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value as the text format wants it: \\, \" and \n escaped. */
static void metrics__escaped(metrics_buf_t *b, const char *v) {
    for (const char *p = v ? v : ""; *p; p++) {
        if (*p == '\\')
            metrics_buf_printf(b, "\\\\");
        else if (*p == '"')
            metrics_buf_printf(b, "\\\"");
        else if (*p == '\n')
            metrics_buf_printf(b, "\\n");
        else
            metrics_buf_printf(b, "%c", *p);
    }
}

static void metrics__value(metrics_buf_t *b, double value) {
    if (isnan(value))
        metrics_buf_printf(b, " NaN\n");
    else if (isinf(value))
        metrics_buf_printf(b, " %sInf\n", value < 0 ? "-" : "+");
    else if (value == floor(value) && fabs(value) < 9e15)
        metrics_buf_printf(b, " %.0f\n", value);
    else
        metrics_buf_printf(b, " %.15g\n", value);
}

static void metrics__labels(metrics_buf_t *b, const char *const *names, const char *const *values,
                            size_t n, const char *le) {
    if (n == 0 && le == NULL)
        return;
    metrics_buf_printf(b, "{");
    for (size_t i = 0; i < n; i++) {
        metrics_buf_printf(b, "%s%s=\"", i ? "," : "", names[i]);
        metrics__escaped(b, values[i]);
        metrics_buf_printf(b, "\"");
    }
    if (le != NULL)
        metrics_buf_printf(b, "%sle=\"%s\"", n ? "," : "", le);
    metrics_buf_printf(b, "}");
}

void metrics_buf_sample(metrics_buf_t *b, const char *name, const char *const *names,
                        const char *const *values, size_t n, double value) {
    metrics_buf_printf(b, "%s", name);
    metrics__labels(b, names, values, n, NULL);
    metrics__value(b, value);
}

static void metrics__histogram(metrics_buf_t *b, const metrics_family_t *f,
                               const metrics_cell_t *c) {
    uint64_t cumulative = 0;
    char le[32];
    for (size_t i = 0; i <= f->bounds_count; i++) {
        cumulative += atomic_load_explicit(&c->buckets[i], memory_order_relaxed);
        if (i < f->bounds_count)
            snprintf(le, sizeof(le), "%g", f->bounds[i]);
        else
            snprintf(le, sizeof(le), "+Inf");
        metrics_buf_printf(b, "%s_bucket", f->name);
        metrics__labels(b, f->labels, c->values, f->labels_count, le);
        metrics__value(b, (double)cumulative);
    }
    /* _count is the +Inf bucket, so the two agree even while observations land. */
    metrics_buf_printf(b, "%s_sum", f->name);
    metrics__labels(b, f->labels, c->values, f->labels_count, NULL);
    metrics__value(b, (double)atomic_load_explicit(&c->sum_ns, memory_order_relaxed) / 1e9);
    metrics_buf_printf(b, "%s_count", f->name);
    metrics__labels(b, f->labels, c->values, f->labels_count, NULL);
    metrics__value(b, (double)cumulative);
}

void metrics_write(metrics_buf_t *b) {
    static const char *const version_label[] = {"version", "revision"};
    const char *const version_value[] = {FRUGAL_VERSION, revision_get()};
    metrics_buf_family(b, "frugal_build_info",
                       "frugal's version and source revision; the value is always 1.", "gauge");
    metrics_buf_sample(b, "frugal_build_info", version_label, version_value, 2, 1);
    metrics_buf_family(b, "frugal_config_last_reload_success_timestamp_seconds",
                       "When the running configuration was loaded (seconds since the epoch).",
                       "gauge");
    metrics_buf_sample(b, "frugal_config_last_reload_success_timestamp_seconds", NULL, NULL, 0,
                       metrics_config_reload_time());
    metrics_buf_family(b, "frugal_config_last_reload_successful",
                       "1 when the last config reload took effect (or none was tried), 0 when "
                       "it was refused.",
                       "gauge");
    metrics_buf_sample(b, "frugal_config_last_reload_successful", NULL, NULL, 0,
                       atomic_load(&config_reload_ok));
    int leader = atomic_load(&state_leader), stale = atomic_load(&state_stale);
    if (leader >= 0) {
        metrics_buf_family(b, "frugal_state_leader",
                           "1 when this replica holds the state backend's leader lease.", "gauge");
        metrics_buf_sample(b, "frugal_state_leader", NULL, NULL, 0, leader);
    }
    if (stale >= 0) {
        metrics_buf_family(b, "frugal_state_cache_stale",
                           "1 while the state cache may be stale (the etcd Watch is down).",
                           "gauge");
        metrics_buf_sample(b, "frugal_state_cache_stale", NULL, NULL, 0, stale);
    }
    for (size_t i = 0; i < METRICS_FAMILIES_COUNT; i++) {
        const metrics_family_t *f = &families[i];
        static const char *const types[] = {[METRICS__COUNTER] = "counter",
                                            [METRICS__HISTOGRAM] = "histogram",
                                            [METRICS__GAUGE] = "gauge"};
        bool histogram = f->kind == METRICS__HISTOGRAM;
        metrics_buf_family(b, f->name, f->help, types[f->kind]);
        /* a counter without labels has one series, shown from 0 */
        if (f->kind == METRICS__COUNTER && f->labels_count == 0 &&
            atomic_load_explicit(&f->head, memory_order_acquire) == NULL)
            metrics_buf_sample(b, f->name, NULL, NULL, 0, 0);
        for (const metrics_cell_t *c = atomic_load_explicit(&f->head, memory_order_acquire);
             c != NULL; c = c->next) {
            if (atomic_load_explicit(&c->hidden, memory_order_relaxed))
                continue;
            if (histogram && !f->shown_from_zero &&
                atomic_load_explicit(&c->count, memory_order_relaxed) == 0)
                continue; /* a method never called has no latency to show */
            if (histogram)
                metrics__histogram(b, f, c);
            else
                metrics_buf_sample(b, f->name, f->labels, c->values, f->labels_count,
                                   (double)atomic_load_explicit(&c->count, memory_order_relaxed));
        }
    }
}
