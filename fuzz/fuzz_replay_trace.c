/* libFuzzer target: a workload file of `frugal replay` (replay_workload_load), read as a
 * JSON-lines trace when it starts with '{' (after comments), else as a YAML mix. The
 * input is handed over without a terminating NUL, so a read past its end is caught.
 * Checks:
 * - success, or FRUGAL_EINVAL with a message, or FRUGAL_ENOMEM;
 * - a trace that loads holds at least one pod, sorted by arrival (ties in line order),
 *   each with a pod and non-negative times and requests, within the span;
 * - loading the same bytes again gives the same pods. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "replay.h"

static int load(const uint8_t *data, size_t size, replay_workload_t *w) {
    char *text = malloc(size > 0 ? size : 1);
    if (text == NULL)
        return FRUGAL_ENOMEM;
    memcpy(text, data, size);
    frugal_err_t err;
    frugal_err_clear(&err);
    int rc = replay_workload_load("fuzz.jsonl", text, size, w, &err);
    free(text);
    if (rc == FRUGAL_EINVAL && err.msg[0] == '\0')
        __builtin_trap();
    if (rc != 0 && rc != FRUGAL_EINVAL && rc != FRUGAL_ENOMEM)
        __builtin_trap();
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    replay_workload_t w;
    if (load(data, size, &w) != 0)
        return 0;
    if (w.is_trace) {
        if (w.trace_count == 0)
            __builtin_trap();
        for (size_t i = 0; i < w.trace_count; i++) {
            const replay_trace_pod_t *p = &w.trace[i];
            if (p->pod == NULL || p->t_s < 0 || p->duration_s < 0 || p->request.cpu_milli < 0 ||
                p->request.memory_bytes < 0 || p->request.gpu < 0 ||
                p->t_s + p->duration_s > w.trace_span_s)
                __builtin_trap();
            if (i > 0 && (p->t_s < w.trace[i - 1].t_s ||
                          (p->t_s == w.trace[i - 1].t_s && p->line < w.trace[i - 1].line)))
                __builtin_trap();
        }
        replay_workload_t again;
        if (load(data, size, &again) != 0 || again.trace_count != w.trace_count)
            __builtin_trap();
        for (size_t i = 0; i < w.trace_count; i++) {
            if (again.trace[i].t_s != w.trace[i].t_s || again.trace[i].line != w.trace[i].line ||
                memcmp(&again.trace[i].request, &w.trace[i].request, sizeof(resources_t)) != 0)
                __builtin_trap();
        }
        replay_workload_free(&again);
    }
    replay_workload_free(&w);
    return 0;
}
