/* `frugal replay --from-prometheus`: a replay workload built from kube-state-metrics
 * series in Prometheus (docs/replay.md). The HTTP is prom_http.c's, the series -> trace
 * logic replay/replay_prom.c's; this file asks for each series window by window, saves the
 * trace when asked, and loads it as a trace workload. */
#ifndef FRUGAL_REPLAY_PROM_SOURCE_H
#define FRUGAL_REPLAY_PROM_SOURCE_H

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "config.h"
#include "errors.h"
#include "prom_http.h"
#include "replay.h"

/* The query_range step (each point sums up the step before it), and the most points
 * asked in one query (a window of 6 h: answers stay small on large clusters). */
#define REPLAY_PROM_STEP_S 3600
#define REPLAY_PROM_WINDOW_POINTS 6

typedef struct replay_prom_source {
    prom_http_opts_t http;
    int64_t start_s, end_s;   /* unix seconds */
    const char *namespace_re; /* may be NULL */
    const char *save_trace;   /* may be NULL */
    bool progress;            /* a progress line on stderr */
    cli_tmp_file_t save;      /* save_trace's, from replay_prom_source_open_save */
} replay_prom_source_t;

/* The trace built, kept until the replay stands. */
typedef struct replay_prom_built {
    char *text;
    size_t len;
    size_t no_created; /* pods with requests but no creation time, left out */
} replay_prom_built_t;

/* Build the trace into *built and load it into *out. Every failure is one line in err
 * (unreachable URL, not a Prometheus answer, a missing kube-state-metrics metric named,
 * no pod in the range) and leaves nothing to free. */
int replay_prom_source_load(const replay_prom_source_t *o, const frugal_config_t *cfg,
                            replay_workload_t *out, replay_prom_built_t *built, frugal_err_t *err);

/* Before anything slow: try --save-trace's temporary file (cli_tmp_open, then removed),
 * so that a path that cannot be written is said at once; a pipe or device stays open.
 * 0 when there is none. */
int replay_prom_source_open_save(replay_prom_source_t *o, frugal_err_t *err);

/* Once the replay stands: save the trace when asked (all or nothing: FILE.tmp.PID renamed)
 * and say how many pods were left out for want of a creation time. A failed replay thus
 * says one line and leaves no trace file. */
int replay_prom_source_finish(replay_prom_source_t *o, const replay_prom_built_t *built,
                              frugal_err_t *err);

/* Drop the --save-trace file still open (a failed replay): nothing is left. */
void replay_prom_source_discard(replay_prom_source_t *o);

void replay_prom_built_free(replay_prom_built_t *built);

#endif
