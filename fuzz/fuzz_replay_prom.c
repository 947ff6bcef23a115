/* libFuzzer target: the answers of Prometheus that `frugal replay --from-prometheus`
 * reads (replay_prom_add, replay_prom_has_metric) on arbitrary text. The first byte picks
 * the series the answer is for and the range's length; the rest is the answer. Checks:
 * - success, or FRUGAL_EINVAL with a message, or FRUGAL_ENOMEM, for both readers;
 * - the trace built from what was accepted is one the replay reads back: it loads with
 *   replay_workload_load, with as many pods as the trace says it wrote (or is empty);
 * - the same answer added twice (as in overlapping windows) gives the same trace. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "replay.h"
#include "replay_prom.h"

static char *trace_of(const char *text, size_t size, replay_prom_series_t s, int64_t span,
                      int times, size_t *len, replay_prom_stats_t *st) {
    replay_prom_t *b = NULL;
    frugal_err_t err;
    frugal_err_clear(&err);
    if (replay_prom_new(1700000000, 1700000000 + span, &b, &err) != 0)
        return NULL;
    for (int k = 0; k < times; k++) {
        int rc = replay_prom_add(b, s, text, size, &err);
        if (rc == FRUGAL_EINVAL && err.msg[0] == '\0')
            __builtin_trap();
        if (rc != 0 && rc != FRUGAL_EINVAL && rc != FRUGAL_ENOMEM)
            __builtin_trap();
    }
    const char *known[] = {"example.com/pool", "kubernetes.io/arch"};
    char *out = NULL;
    if (replay_prom_trace(b, known, 2, &out, len, st, &err) != 0)
        out = NULL;
    replay_prom_free(b);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    replay_prom_series_t s = (replay_prom_series_t)(data[0] % REPLAY_PROM_SERIES_COUNT);
    int64_t span = 3600 * (1 + data[0] / REPLAY_PROM_SERIES_COUNT % 48);
    /* A copy of exactly the answer's bytes, so that a read past the end is caught. */
    size_t n = size - 1;
    char *text = malloc(n > 0 ? n : 1);
    if (text == NULL)
        return 0;
    memcpy(text, data + 1, n);

    bool has = false;
    frugal_err_t err;
    frugal_err_clear(&err);
    int rc = replay_prom_has_metric(text, n, "kube_pod_created", &has, &err);
    if ((rc == FRUGAL_EINVAL && err.msg[0] == '\0') ||
        (rc != 0 && rc != FRUGAL_EINVAL && rc != FRUGAL_ENOMEM) || (rc != 0 && has))
        __builtin_trap();

    size_t len1 = 0, len2 = 0;
    replay_prom_stats_t st1, st2;
    char *t1 = trace_of(text, n, s, span, 1, &len1, &st1);
    char *t2 = trace_of(text, n, s, span, 2, &len2, &st2);
    if (t1 != NULL && t2 != NULL && (len1 != len2 || memcmp(t1, t2, len1) != 0))
        __builtin_trap();
    if (t1 != NULL && st1.pods > 0) {
        replay_workload_t w;
        frugal_err_clear(&err);
        rc = replay_workload_load("fuzz.jsonl", t1, len1, &w, &err);
        if (rc == 0) {
            if (!w.is_trace || w.trace_count != st1.pods)
                __builtin_trap();
            replay_workload_free(&w);
        } else if (rc != FRUGAL_ENOMEM) {
            __builtin_trap(); /* a trace frugal wrote that frugal cannot read */
        }
    }
    free(t1);
    free(t2);
    free(text);
    return 0;
}
