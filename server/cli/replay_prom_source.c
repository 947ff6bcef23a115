/* `frugal replay --from-prometheus`: see replay_prom_source.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "k8s.h"
#include "prom_fetch.h"
#include "replay_prom.h"
#include "replay_prom_source.h"

/* Series without which there is no trace. */
static const replay_prom_series_t source__required[] = {REPLAY_PROM_CREATED, REPLAY_PROM_INFO_SEEN,
                                                        REPLAY_PROM_REQUESTS};

/* Series that change the trace but may be missing (denylisted in kube-state-metrics), and
 * what stands in for them: a warning says so. */
static const struct {
    replay_prom_series_t s;
    const char *assumed;
} source__optional[] = {
    {REPLAY_PROM_OWNER, "owners taken from kube_pod_info's created_by_kind and created_by_name"},
    {REPLAY_PROM_NODESELECTORS, "pods replayed without node selectors"},
    {REPLAY_PROM_TOLERATIONS, "pods replayed without tolerations"},
    {REPLAY_PROM_INIT_REQUESTS, "init containers taken as requesting nothing"},
};
#define SOURCE__OPTIONAL_COUNT (sizeof(source__optional) / sizeof(*source__optional))

#define SOURCE__NAMES_PATH "/api/v1/label/__name__/values"
#define SOURCE__RANGE_PATH "/api/v1/query_range"

/* Label keys a nodeSelector may name besides the groups' own labels. */
static const char *const source__well_known[] = {
    K8S_LABEL_ARCH,
    K8S_LABEL_OS,
    K8S_LABEL_ARCH_BETA,
    K8S_LABEL_OS_BETA,
    K8S_LABEL_HOSTNAME,
    K8S_LABEL_INSTANCE_TYPE,
    K8S_LABEL_ZONE,
    K8S_LABEL_REGION,
    FRUGAL_GPU_LABEL,
    FRUGAL_LABEL_NODE_GROUP,
    /* not set by frugal, but common in selectors written for GKE or older clusters */
    "cloud.google.com/gke-nodepool",
    "beta.kubernetes.io/instance-type",
};

/* The known label keys: the well-known ones and every managed group's labels. */
static const char **source__known_keys(const frugal_config_t *cfg, size_t *count) {
    size_t n = sizeof(source__well_known) / sizeof(*source__well_known);
    for (size_t g = 0; g < cfg->node_groups_count; g++)
        n += cfg->node_groups[g].spec.labels.count;
    const char **keys = calloc(n + 1, sizeof(*keys));
    if (keys == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < sizeof(source__well_known) / sizeof(*source__well_known); i++)
        keys[k++] = source__well_known[i];
    for (size_t g = 0; g < cfg->node_groups_count; g++)
        for (size_t i = 0; i < cfg->node_groups[g].spec.labels.count; i++)
            keys[k++] = cfg->node_groups[g].spec.labels.items[i].key;
    *count = k;
    return keys;
}

/* The metric names of the answer body to SOURCE__NAMES_PATH: whether it lists metric. */
static int source__has_metric(prom_http_t *h, const char *body, size_t len, const char *metric,
                              bool *has, frugal_err_t *err) {
    frugal_err_t e;
    frugal_err_clear(&e);
    int rc = replay_prom_has_metric(body, len, metric, has, &e);
    if (rc != 0)
        frugal_err_set(err, rc, "%s" SOURCE__NAMES_PATH ": %s", prom_http_url(h), e.msg);
    return rc;
}

/* The required series are anywhere in Prometheus (else nothing can be built); *missing[i]
 * whether source__optional[i] has no series within the range. */
static int source__check_metrics(prom_http_t *h, const replay_prom_source_t *o,
                                 bool missing[SOURCE__OPTIONAL_COUNT], frugal_err_t *err) {
    char *body = NULL;
    size_t len = 0;
    int rc = prom_http_get(h, SOURCE__NAMES_PATH, NULL, 0, &body, &len, err);
    if (rc != 0)
        return rc;
    for (size_t i = 0; rc == 0 && i < sizeof(source__required) / sizeof(*source__required); i++) {
        const char *metric = replay_prom_metric(source__required[i]);
        bool has = false;
        if ((rc = source__has_metric(h, body, len, metric, &has, err)) == 0 && !has)
            rc = frugal_err_set(err, FRUGAL_EINVAL,
                                "%s has no %s series: is kube-state-metrics scraped by this "
                                "Prometheus?",
                                prom_http_url(h), metric);
    }
    free(body);
    body = NULL;
    char start[32], end[32];
    snprintf(start, sizeof(start), "%" PRId64, o->start_s);
    snprintf(end, sizeof(end), "%" PRId64, o->end_s);
    const char *params[] = {"start", start, "end", end};
    if (rc == 0)
        rc = prom_http_get(h, SOURCE__NAMES_PATH, params, 2, &body, &len, err);
    for (size_t i = 0; rc == 0 && i < SOURCE__OPTIONAL_COUNT; i++) {
        bool has = false;
        rc = source__has_metric(h, body, len, replay_prom_metric(source__optional[i].s), &has, err);
        missing[i] = !has;
    }
    free(body);
    return rc;
}

/* The part of --namespace's regex an error shows: the line stays readable. */
#define SOURCE__REGEX_SHOWN 80

/* Queries in flight at once: Prometheus evaluates each on its own cores, and a few do not
 * crowd out the dashboards of a Prometheus that serves others too. */
#define SOURCE__FETCHERS 4

/* The range's queries: window w of the i-th series asked is job i * windows + w, asked in
 * that order. */
typedef struct {
    const replay_prom_source_t *o;
    replay_prom_t *b;
    const char *url_shown;
    int64_t step_s, first, windows, total, done;
    replay_prom_series_t asked[REPLAY_PROM_SERIES_COUNT];
    char (*queries)[REPLAY_PROM_QUERY_MAX]; /* queries[i] asks for asked[i] */
} source__range_t;

static size_t source__params(void *ctx, int64_t job, const char **params, prom_fetch_buf_t bufs) {
    const source__range_t *r = ctx;
    int64_t w = job % r->windows;
    int64_t from = r->first + w * REPLAY_PROM_WINDOW_POINTS * r->step_s;
    int64_t to = from + (REPLAY_PROM_WINDOW_POINTS - 1) * r->step_s;
    if (to > r->o->end_s)
        to = r->o->end_s;
    snprintf(bufs[0], sizeof(bufs[0]), "%" PRId64, from);
    snprintf(bufs[1], sizeof(bufs[1]), "%" PRId64, to);
    snprintf(bufs[2], sizeof(bufs[2]), "%" PRId64, r->step_s);
    const char *pairs[] = {
        "query", r->queries[job / r->windows], "start", bufs[0], "end", bufs[1], "step", bufs[2]};
    memcpy(params, pairs, sizeof(pairs));
    return 4;
}

static int source__take(void *ctx, int64_t job, const char *body, size_t len, frugal_err_t *err) {
    source__range_t *r = ctx;
    replay_prom_series_t s = r->asked[job / r->windows];
    frugal_err_t e;
    frugal_err_clear(&e);
    int rc = replay_prom_add(r->b, s, body, len, &e);
    if (rc != 0)
        return frugal_err_set(err, rc, "%s" SOURCE__RANGE_PATH ": the %s query: %s", r->url_shown,
                              replay_prom_metric(s), e.msg);
    if (r->o->progress)
        fprintf(stderr, "\rfrugal replay: prometheus %" PRId64 "/%" PRId64 " queries (%s)\033[K",
                ++r->done, r->total, replay_prom_metric(s));
    return 0;
}

/* Every series over the range, window by window, into b: h and more clients like it ask
 * SOURCE__FETCHERS queries at once, and the answers go into b in order. */
static int source__query_all(prom_http_t *h, const replay_prom_source_t *o, replay_prom_t *b,
                             frugal_err_t *err) {
    /* Points end, end - step, ... back to the first whose step reaches the start; asked
     * REPLAY_PROM_WINDOW_POINTS at a time. */
    source__range_t r = {
        .o = o, .b = b, .url_shown = prom_http_url(h), .step_s = REPLAY_PROM_STEP_S};
    int64_t points = (o->end_s - o->start_s + r.step_s - 1) / r.step_s;
    r.first = o->end_s - (points - 1) * r.step_s;
    r.windows = (points + REPLAY_PROM_WINDOW_POINTS - 1) / REPLAY_PROM_WINDOW_POINTS;
    int64_t series = 0;
    for (int s = 0; s < REPLAY_PROM_SERIES_COUNT; s++)
        if (replay_prom_asked((replay_prom_series_t)s, o->namespace_re))
            r.asked[series++] = (replay_prom_series_t)s;
    r.total = r.windows * series;
    prom_http_t *clients[SOURCE__FETCHERS] = {h};
    size_t nclients = 1;
    int rc = 0;
    if ((r.queries = calloc((size_t)series, sizeof(*r.queries))) == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    for (int64_t i = 0; rc == 0 && i < series; i++)
        replay_prom_query(r.asked[i], o->namespace_re, r.step_s, r.queries[i],
                          sizeof(r.queries[i]));
    for (; rc == 0 && nclients < SOURCE__FETCHERS; nclients++)
        rc = prom_http_open(&o->http, &clients[nclients], err);
    if (rc == 0)
        rc = prom_fetch_all(clients, nclients, SOURCE__RANGE_PATH, r.total, source__params,
                            source__take, &r, err);
    if (o->progress) /* an error is a line of its own */
        fprintf(stderr, "\r\033[K");
    for (size_t i = 1; i < nclients; i++)
        prom_http_close(clients[i]);
    free(r.queries);
    return rc;
}

int replay_prom_source_load(const replay_prom_source_t *o, const frugal_config_t *cfg,
                            replay_workload_t *out, replay_prom_built_t *built, frugal_err_t *err) {
    memset(out, 0, sizeof(*out));
    memset(built, 0, sizeof(*built));
    prom_http_t *h = NULL;
    replay_prom_t *b = NULL;
    size_t nkeys = 0;
    const char **keys = NULL;
    replay_prom_stats_t st;
    bool missing[SOURCE__OPTIONAL_COUNT] = {false};
    int rc = prom_http_open(&o->http, &h, err);
    if (rc == 0)
        rc = source__check_metrics(h, o, missing, err);
    if (rc == 0)
        rc = replay_prom_new(o->start_s, o->end_s, &b, err);
    if (rc == 0)
        rc = source__query_all(h, o, b, err);
    size_t warned = 0;
    const char *warning = b != NULL ? replay_prom_warning(b, &warned) : NULL;
    char partial[256] = "";
    if (warned > 0)
        snprintf(partial, sizeof(partial),
                 "Prometheus' answer may be partial: %s (%zu of its answers warned)",
                 warning != NULL ? warning : "(no text)", warned);
    if (rc == 0 && (keys = source__known_keys(cfg, &nkeys)) == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    if (rc == 0)
        rc = replay_prom_trace(b, keys, nkeys, &built->text, &built->len, &st, err);
    if (rc == 0 && st.pods == 0) {
        char a[32], z[32], left_out[96] = "";
        time_t ta = (time_t)o->start_s, tz = (time_t)o->end_s;
        strftime(a, sizeof(a), "%Y-%m-%dT%H:%M:%SZ", gmtime(&ta));
        strftime(z, sizeof(z), "%Y-%m-%dT%H:%M:%SZ", gmtime(&tz));
        if (st.no_created > 0)
            snprintf(left_out, sizeof(left_out),
                     " (%zu pod%s with requests but no kube_pod_created left out)", st.no_created,
                     st.no_created == 1 ? "" : "s");
        /* One line: a warning that may explain it goes with it; a long regex is cut so
         * that the warning still fits, and escaped as the query has it. */
        const char *re = o->namespace_re;
        char shown[SOURCE__REGEX_SHOWN + 1] = "";
        bool cut = re != NULL && !replay_prom_escape(re, shown, sizeof(shown));
        rc = frugal_err_set(err, FRUGAL_EINVAL, "%s: no pod ran between %s and %s%s%s%s%s%s%s%s",
                            prom_http_url(h), a, z, re ? " in namespaces matching \"" : "", shown,
                            cut ? "..." : "", re ? "\"" : "", left_out, partial[0] ? "; " : "",
                            partial);
    }
    if (rc == 0 && partial[0])
        fprintf(stderr, "frugal replay: warning: %s\n", partial);
    for (size_t i = 0; rc == 0 && i < SOURCE__OPTIONAL_COUNT; i++)
        if (missing[i])
            fprintf(stderr, "frugal replay: warning: no %s series in the range: %s\n",
                    replay_prom_metric(source__optional[i].s), source__optional[i].assumed);
    if (rc == 0 && st.reused > 0)
        fprintf(stderr,
                "frugal replay: warning: %zu pod name%s reused by a new pod, and the series "
                "carry no uid label: each such name is replayed as its last pod only\n",
                st.reused, st.reused == 1 ? " was" : "s were");
    if (rc == 0) {
        const char *name = o->save_trace ? o->save_trace : "prometheus";
        rc = replay_workload_load(name, built->text, built->len, out, err);
    }
    if (rc == 0) {
        built->no_created = st.no_created;
        out->trace_per_node = st.per_node; /* the trace holds none: the report counts them */
    } else
        replay_prom_built_free(built);
    free(keys);
    replay_prom_free(b);
    prom_http_close(h);
    return rc;
}

int replay_prom_source_open_save(replay_prom_source_t *o, frugal_err_t *err) {
    /* Opened and dropped at once: the file is written only at the end, so that a run
     * stopped or failed while Prometheus answers leaves nothing behind. */
    if (o->save_trace == NULL)
        return 0;
    cli_tmp_file_t probe;
    int e = cli_tmp_open(&probe, o->save_trace);
    if (e != 0)
        return frugal_err_set(err, FRUGAL_EIO, "--save-trace %s: %s", o->save_trace, strerror(e));
    if (probe.tmp != NULL)
        cli_tmp_close(&probe, false);
    else
        o->save = probe; /* a pipe or a device: written straight through, kept open */
    return 0;
}

int replay_prom_source_finish(replay_prom_source_t *o, const replay_prom_built_t *built,
                              frugal_err_t *err) {
    int e = o->save_trace != NULL && o->save.f == NULL ? cli_tmp_open(&o->save, o->save_trace) : 0;
    if (e == 0 && o->save.f != NULL) {
        fwrite(built->text, 1, built->len, o->save.f);
        e = cli_tmp_close(&o->save, true);
    }
    if (e != 0)
        return frugal_err_set(err, FRUGAL_EIO, "--save-trace %s: %s", o->save_trace, strerror(e));
    if (built->no_created > 0)
        fprintf(stderr, "frugal replay: %zu pod%s with requests but no kube_pod_created left out\n",
                built->no_created, built->no_created == 1 ? "" : "s");
    return 0;
}

void replay_prom_source_discard(replay_prom_source_t *o) {
    if (o->save.f != NULL)
        cli_tmp_close(&o->save, false);
}

void replay_prom_built_free(replay_prom_built_t *built) {
    free(built->text);
    memset(built, 0, sizeof(*built));
}
