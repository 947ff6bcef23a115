/* The hook process runner: runs one operator-supplied program to its end, as the exec
 * provider's hooks are run, and says how it ended.
 *
 * A hook runs under a guard: the runner forks the guard, the guard forks and execs the
 * hook in a process group of the hook's own. The guard is the hook's parent and, as a
 * child subreaper, the parent of whatever the hook starts and leaves orphaned, so it
 * can both kill the whole group and reap every process of it (no zombie is left to
 * frugal, which may be a container's PID 1). It ends the group when the runner asks
 * (timeout, stop) and on two rules frugal might not be there to enforce: frugal died
 * (even by kill -9), or, for a fenced run, the fence passed (even while frugal is
 * paused: SIGSTOP, a frozen VM). What the hook left running in its group ends with it.
 *
 * The hook gets stdin /dev/null, no other descriptor of frugal's than its stdout and
 * stderr pipes, default signal dispositions and an empty signal mask. Its output is
 * kept up to HOOK_OUTPUT_MAX bytes of each stream (the rest is read and discarded). */
#ifndef FRUGAL_HOOK_RUNNER_H
#define FRUGAL_HOOK_RUNNER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HOOK_OUTPUT_MAX (64 * 1024) /* bytes kept of each of stdout and stderr */

/* What a stream of the hook wrote, NUL-terminated, at most HOOK_OUTPUT_MAX bytes: the
 * first ones of stdout (what it prints is read from the top), the last ones of stderr
 * (its last line is the message). */
typedef struct hook_output {
    char data[HOOK_OUTPUT_MAX + 1];
    size_t len;
    bool overflow; /* the stream wrote more than HOOK_OUTPUT_MAX bytes */
} hook_output_t;

/* What to run and the rules it runs under. Nothing is copied: all must stay valid
 * during hook_runner_run. */
typedef struct hook_spec {
    const char *cmd;    /* the program's path (execve: no PATH search, no shell) */
    char *const *argv;  /* NULL-terminated */
    char *const *envp;  /* NULL-terminated */
    int64_t timeout_ms; /* from the start; the group is killed then */
    /* Monotonic ms (clock_mono_ms) the run may last until; NULL: not fenced. It must be
     * in memory shared with the guard (MAP_SHARED) for a later change to reach it. */
    const atomic_llong *fence;
    /* Asked about every 50 ms while the hook runs; true: kill its group now. NULL: never. */
    bool (*stop)(void *arg);
    void *stop_arg;
} hook_spec_t;

typedef enum hook_end {
    HOOK_EXITED,     /* the hook ended by itself: status is its wait status */
    HOOK_TIMED_OUT,  /* killed with its group at timeout_ms */
    HOOK_STOPPED,    /* killed with its group because stop() said so */
    HOOK_FENCED,     /* the fence passed: not started (started false) or killed by the guard */
    HOOK_GUARD_LOST, /* the guard ended without a report: status is the guard's wait status */
    HOOK_NO_MEMORY,  /* not started: out of memory */
    HOOK_NO_PIPES,   /* not started: its output pipes could not be made (error: errno) */
    HOOK_NO_SPAWN,   /* not started: fork or execve failed (error: errno) */
} hook_end_t;

/* How a run ended and what the hook wrote. out and err are NULL when the run never got
 * that far (HOOK_NO_MEMORY, or HOOK_FENCED before the start). */
typedef struct hook_result {
    hook_end_t end;
    bool started; /* the hook's execve succeeded */
    int status;   /* see hook_end_t */
    int error;    /* see hook_end_t */
    hook_output_t *out, *err;
} hook_result_t;

/* Run spec's hook to its end and fill *res (release it with hook_result_clear). Blocks
 * the calling thread for the run; never fails: a hook that cannot run is a result too.
 * Safe to call from several threads at once. */
void hook_runner_run(const hook_spec_t *spec, hook_result_t *res);

/* Free what res holds (it may be zeroed, or cleared already). */
void hook_result_clear(hook_result_t *res);

/* The first line of b (last false) or its last non-empty line, without surrounding
 * blanks, malloc'ed; NULL when there is none (or out of memory). */
char *hook_output_line(const hook_output_t *b, bool last);

#endif
