/* The hook process runner (hook_runner.h): the guard process, the hook's pipes and
 * its timeout. Between fork and exit the guard is a copy of a multi-threaded process:
 * async-signal-safe calls only, nothing allocated. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2 */
#endif
#include "hook_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "utf8.h"

/* Read what fd has into b; beyond the cap the newest bytes are discarded, or with tail
 * the oldest. False at EOF or error. */
static bool hook_runner__drain(int fd, hook_output_t *b, bool tail) {
    char tmp[4096];
    ssize_t r = read(fd, tmp, sizeof(tmp));
    if (r < 0)
        return errno == EINTR || errno == EAGAIN;
    if (r == 0)
        return false;
    size_t room = HOOK_OUTPUT_MAX - b->len;
    if (tail && (size_t)r > room) { /* r <= sizeof(tmp) < HOOK_OUTPUT_MAX */
        size_t drop = (size_t)r - room;
        memmove(b->data, b->data + drop, b->len - drop);
        b->len -= drop;
        b->overflow = true;
        room = (size_t)r;
    }
    size_t take = (size_t)r < room ? (size_t)r : room;
    b->overflow = b->overflow || take < (size_t)r;
    memcpy(b->data + b->len, tmp, take);
    b->len += take;
    b->data[b->len] = '\0';
    return true;
}

/* The hook's stdout and stderr pipes as they are read: fds[i] while open[i]. */
typedef struct hook_pipes {
    int fds[2];
    bool open[2];
    hook_output_t *bufs[2];
} hook_pipes_t;

static bool hook_runner__pipes_open(const hook_pipes_t *pp) {
    return pp->open[0] || pp->open[1];
}

/* Wait up to slice_ms for output on the open pipes and read what came; a pipe at EOF
 * is closed for good. */
static void hook_runner__pipes_read(hook_pipes_t *pp, int slice_ms) {
    struct pollfd fds[2];
    int which[2];
    nfds_t n = 0;
    for (int i = 0; i < 2; i++) {
        if (pp->open[i]) {
            fds[n] = (struct pollfd){.fd = pp->fds[i], .events = POLLIN};
            which[n++] = i;
        }
    }
    if (n == 0) {
        struct timespec ts = {0, slice_ms * 1000000L};
        nanosleep(&ts, NULL);
        return;
    }
    if (poll(fds, n, slice_ms) <= 0)
        return;
    for (nfds_t k = 0; k < n; k++) {
        if (fds[k].revents != 0 &&
            !hook_runner__drain(fds[k].fd, pp->bufs[which[k]], which[k] == 1))
            pp->open[which[k]] = false;
    }
}

/* Read what is left once the hook is gone: until EOF on both pipes, for at most 100 ms
 * (a writer that escaped the hook's group may hold one open). */
static void hook_runner__pipes_drain(hook_pipes_t *pp) {
    int64_t until = clock_mono_ms() + 100;
    while (hook_runner__pipes_open(pp) && clock_mono_ms() < until)
        hook_runner__pipes_read(pp, 20);
}

/* The first line of b (NULL when it is empty) or its last non-empty line; the last
 * line (a hook's message) made UTF-8 text, so that it can be stored and sent to CA. */
char *hook_output_line(const hook_output_t *b, bool last) {
    const char *s = b->data;
    size_t len = b->len;
    const char *start = s, *end = s + len;
    if (!last) {
        const char *nl = memchr(s, '\n', len);
        end = nl != NULL ? nl : s + len;
    } else {
        while (end > s && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
            end--;
        start = end;
        while (start > s && start[-1] != '\n')
            start--;
    }
    while (end > start && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    while (start < end && (*start == ' ' || *start == '\t'))
        start++;
    if (end == start)
        return NULL;
    char *line = strndup(start, (size_t)(end - start));
    if (line != NULL && last)
        utf8_scrub(line);
    return line;
}

#define HOOK_GUARD_POLL_MS 10
#define HOOK_GUARD_REAP_MS 1000 /* how long a guard reaps a killed group's processes */
#define HOOK_GUARD_REPORT_FD 3  /* the guard's copies: report (exec errno), status */
#define HOOK_GUARD_STATUS_FD 4
#define HOOK_GUARD_STOP SIGUSR1 /* frugal to the guard: kill the hook's group now */

/* Why the guard ended, written on its status pipe before it exits. */
typedef enum hook_guard_end {
    HOOK_GUARD_RUNNING,  /* not ended (never written) */
    HOOK_GUARD_EXITED,   /* the hook exited; status: its wait status */
    HOOK_GUARD_STOPPED,  /* frugal asked: the group was killed */
    HOOK_GUARD_FENCED,   /* the lease ran out: the group was killed */
    HOOK_GUARD_ORPHANED, /* frugal died: the group was killed (nobody reads this) */
} hook_guard_end_t;

typedef struct hook_guard_report {
    int end; /* hook_guard_end_t */
    int status;
} hook_guard_report_t;

/* Everything the guard needs, prepared before the fork. */
typedef struct hook_launch {
    const char *cmd;
    char *const *argv;
    char *const *envp;
    int outfd, errfd;
    const atomic_llong *fence; /* monotonic ms the run may last until; NULL: not fenced */
    int fd_limit;              /* close_range's fallback: close every fd below it */
} hook_launch_t;

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2,
               "the fence is shared with the guard processes: it must be lock-free");

static void hook_runner__write_all(int fd, const void *data, size_t len) {
    while (write(fd, data, len) < 0 && errno == EINTR) {
    }
}

static void hook_runner__guard_nap(void) {
    struct timespec ts = {0, HOOK_GUARD_POLL_MS * 1000000L};
    nanosleep(&ts, NULL);
}

/* The hook's side, between the guard's fork and execve: a process group of its own,
 * stdin /dev/null and the pipes already in place (the guard set them), SIGKILL should
 * the guard die, no blocked signal and default dispositions. What fails before execve
 * is reported as an errno. */
static _Noreturn void hook_runner__hook_child(pid_t guard, const hook_launch_t *l) {
    static const int sigs[] = {SIGPIPE, SIGTERM, SIGINT,  SIGHUP,
                               SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2};
    int e = 0;
    if (setpgid(0, 0) != 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
        e = errno;
        goto fail;
    }
    if (getppid() != guard) /* the guard died before the death signal was armed */
        _exit(127);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(l->cmd, l->argv, l->envp);
    e = errno;
fail:
    hook_runner__write_all(HOOK_GUARD_REPORT_FD, &e, sizeof(e));
    _exit(127);
}

/* Give the guard exactly fds 0-4: /dev/null, the hook's stdout and stderr, the report
 * and the status pipes (the last two close on the hook's exec). Nothing else of
 * frugal's stays open in it: no listener, no state lock, no other hook's pipe. */
static int hook_runner__guard_fds(const hook_launch_t *l, int report, int status) {
    int in = open("/dev/null", O_RDONLY);
    if (in < 0)
        return errno;
    int keep[5] = {in, l->outfd, l->errfd, report, status};
    for (int i = 0; i < 5; i++) {
        if ((keep[i] = fcntl(keep[i], F_DUPFD, 16)) < 0)
            return errno;
    }
    for (int i = 0; i < 5; i++) {
        if (dup2(keep[i], i) < 0)
            return errno;
    }
    if (fcntl(HOOK_GUARD_REPORT_FD, F_SETFD, FD_CLOEXEC) < 0 ||
        fcntl(HOOK_GUARD_STATUS_FD, F_SETFD, FD_CLOEXEC) < 0)
        return errno;
    if (close_range(5, ~0U, 0) != 0) {
        for (int fd = 5; fd < l->fd_limit; fd++)
            close(fd);
    }
    return 0;
}

/* Why the guard must end the hook's group now, HOOK_GUARD_RUNNING while it may run on. */
static hook_guard_end_t hook_runner__guard_reason(pid_t frugal, const hook_launch_t *l) {
    if (getppid() != frugal)
        return HOOK_GUARD_ORPHANED;
    if (l->fence != NULL && clock_mono_ms() >= atomic_load(l->fence))
        return HOOK_GUARD_FENCED;
    sigset_t pending;
    if (sigpending(&pending) == 0 && sigismember(&pending, HOOK_GUARD_STOP))
        return HOOK_GUARD_STOPPED;
    return HOOK_GUARD_RUNNING;
}

/* Kill hook's group and reap the hook (unless reaped already) and, for up to
 * HOOK_GUARD_REAP_MS, what it started (orphans come to the guard, a subreaper). */
static void hook_runner__guard_kill(pid_t hook) {
    kill(-hook, SIGKILL);
    while (waitpid(hook, NULL, 0) < 0 && errno == EINTR) {
    }
    for (int waited = 0; waited < HOOK_GUARD_REAP_MS; waited += HOOK_GUARD_POLL_MS) {
        pid_t r;
        while ((r = waitpid(-1, NULL, WNOHANG)) > 0) {
        }
        if (r < 0 && errno == ECHILD)
            return;
        hook_runner__guard_nap();
    }
}

/* The guard: see above. It reports the hook's exec failure on report and how the hook
 * ended on status. */
static _Noreturn void hook_runner__guard(pid_t frugal, const hook_launch_t *l, int report,
                                         int status) {
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, HOOK_GUARD_STOP);
    sigprocmask(SIG_BLOCK, &stop, NULL); /* kept pending: hook_runner__guard_reason reads it */
    int e = hook_runner__guard_fds(l, report, status);
    if (e == 0 && prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
        e = errno;
    if (e != 0) {
        hook_runner__write_all(report, &e, sizeof(e));
        _exit(127);
    }
    prctl(PR_SET_NAME, "frugal-guard");
    hook_guard_end_t end = hook_runner__guard_reason(frugal, l);
    if (end != HOOK_GUARD_RUNNING) {
        e = ECANCELED; /* the lease ran out (or frugal is gone) before the hook started */
        hook_runner__write_all(HOOK_GUARD_REPORT_FD, &e, sizeof(e));
        _exit(127);
    }
    pid_t guard = getpid();
    pid_t hook = fork();
    if (hook == 0)
        hook_runner__hook_child(guard, l);
    if (hook < 0) {
        e = errno;
        hook_runner__write_all(HOOK_GUARD_REPORT_FD, &e, sizeof(e));
        _exit(127);
    }
    setpgid(hook, hook);         /* as the hook does: whichever runs first, kill(-hook) works */
    close(HOOK_GUARD_REPORT_FD); /* frugal reads EOF once the hook's exec closed its copy */
    for (;;) {
        int ws = 0;
        if (waitpid(hook, &ws, WNOHANG) == hook) {
            /* What the hook left running in its group ends with it: nothing outlives the
             * fence or reaches frugal (maybe a container's PID 1) as a zombie. */
            hook_runner__guard_kill(hook);
            hook_guard_report_t r = {HOOK_GUARD_EXITED, ws};
            hook_runner__write_all(HOOK_GUARD_STATUS_FD, &r, sizeof(r));
            _exit(0);
        }
        if ((end = hook_runner__guard_reason(frugal, l)) != HOOK_GUARD_RUNNING) {
            hook_runner__guard_kill(hook);
            hook_guard_report_t r = {(int)end, 0};
            hook_runner__write_all(HOOK_GUARD_STATUS_FD, &r, sizeof(r));
            _exit(0);
        }
        hook_runner__guard_nap();
    }
}

/* Start l's hook under a guard; 0 with *guard (its pid: HOOK_GUARD_STOP asks it to
 * end the hook) and *status_fd (where the guard reports), or the errno why the hook
 * could not run (then no process remains). Returns once the hook's execve has
 * succeeded or failed. */
static int hook_runner__spawn(const hook_launch_t *l, pid_t *guard, int *status_fd) {
    int rep[2], st[2];
    if (pipe2(rep, O_CLOEXEC) != 0)
        return errno;
    if (pipe2(st, O_CLOEXEC) != 0) {
        int e = errno;
        close(rep[0]);
        close(rep[1]);
        return e;
    }
    pid_t parent = getpid();
    pid_t child = fork();
    if (child == 0)
        hook_runner__guard(parent, l, rep[1], st[1]);
    int e = child < 0 ? errno : 0;
    close(rep[1]);
    close(st[1]);
    if (child > 0) {
        /* EOF: the hook's execve succeeded; else an errno from the guard or the hook. */
        ssize_t n;
        while ((n = read(rep[0], &e, sizeof(e))) < 0 && errno == EINTR) {
        }
        if (n != (ssize_t)sizeof(e))
            e = 0;
        if (e != 0) {
            while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {
            }
        }
    }
    close(rep[0]);
    if (e != 0) {
        close(st[0]);
        return e;
    }
    *guard = child;
    *status_fd = st[0];
    return 0;
}

/* How the guard said the hook ended (HOOK_GUARD_EXITED with *status), or
 * HOOK_GUARD_RUNNING when it said nothing (it was killed). Called after the guard was
 * reaped. */
static hook_guard_end_t hook_runner__guard_end(int status_fd, int *status) {
    hook_guard_report_t r = {HOOK_GUARD_RUNNING, 0};
    ssize_t n;
    while ((n = read(status_fd, &r, sizeof(r))) < 0 && errno == EINTR) {
    }
    if (n != (ssize_t)sizeof(r))
        return HOOK_GUARD_RUNNING;
    *status = r.status;
    return (hook_guard_end_t)r.end;
}

/* Read both pipes until the guard reports the hook's end (then what is left, briefly),
 * the deadline passes or spec->stop says stop; fill res->end and res->status. */
static void hook_runner__wait(const hook_spec_t *spec, pid_t pid, int status_fd, int outfd,
                              int errfd, hook_result_t *res) {
    int64_t deadline = clock_mono_ms() + spec->timeout_ms;
    int64_t exited_at = -1;
    int status = 0;
    bool timed_out = false, killed = false;
    hook_pipes_t pipes = {
        .fds = {outfd, errfd}, .open = {true, true}, .bufs = {res->out, res->err}};
    while (hook_runner__pipes_open(&pipes) || exited_at < 0) {
        int64_t now = clock_mono_ms();
        if (exited_at < 0) {
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid)
                exited_at = now;
        }
        if (exited_at >= 0 && (!hook_runner__pipes_open(&pipes) || now - exited_at > 100))
            break;
        if (exited_at < 0 &&
            (now >= deadline || (spec->stop != NULL && spec->stop(spec->stop_arg)))) {
            timed_out = now >= deadline;
            killed = true;
            kill(pid, HOOK_GUARD_STOP); /* the guard kills the group and reaps it */
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            break;
        }
        hook_runner__pipes_read(&pipes, 50);
    }
    hook_guard_end_t end = hook_runner__guard_end(status_fd, &status);
    if (killed && end == HOOK_GUARD_EXITED) {
        /* The hook had ended before the guard saw the request: its own outcome counts,
         * with all of its output. */
        killed = false;
        hook_runner__pipes_drain(&pipes);
    }
    res->status = status;
    if (killed)
        res->end = timed_out ? HOOK_TIMED_OUT : HOOK_STOPPED;
    else if (end == HOOK_GUARD_FENCED)
        res->end = HOOK_FENCED;
    else if (end != HOOK_GUARD_EXITED)
        res->end = HOOK_GUARD_LOST;
    else
        res->end = HOOK_EXITED;
}

/* Where the guard stops closing descriptors when close_range is missing. */
static int hook_runner__fd_limit(void) {
    struct rlimit nofile;
    return getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < 65536 ? (int)nofile.rlim_cur
                                                                             : 65536;
}

void hook_runner_run(const hook_spec_t *spec, hook_result_t *res) {
    int outp[2] = {-1, -1}, errp[2] = {-1, -1};
    pid_t pid = -1; /* the guard's: see hook_runner__spawn */
    int status_fd = -1;

    memset(res, 0, sizeof(*res));
    if (spec->fence != NULL && clock_mono_ms() >= atomic_load(spec->fence)) {
        res->end = HOOK_FENCED;
        return;
    }
    res->out = calloc(1, sizeof(*res->out));
    res->err = calloc(1, sizeof(*res->err));
    if (res->out == NULL || res->err == NULL) {
        hook_result_clear(res);
        res->end = HOOK_NO_MEMORY;
        return;
    }
    if (pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
        res->end = HOOK_NO_PIPES;
        res->error = errno;
        goto done;
    }
    hook_launch_t launch = {.cmd = spec->cmd,
                            .argv = spec->argv,
                            .envp = spec->envp,
                            .outfd = outp[1],
                            .errfd = errp[1],
                            .fence = spec->fence,
                            .fd_limit = hook_runner__fd_limit()};
    int src = hook_runner__spawn(&launch, &pid, &status_fd);
    close(outp[1]);
    close(errp[1]);
    outp[1] = errp[1] = -1;
    if (src != 0) {
        res->end = src == ECANCELED ? HOOK_FENCED : HOOK_NO_SPAWN;
        res->error = src;
        goto done;
    }
    res->started = true;
    hook_runner__wait(spec, pid, status_fd, outp[0], errp[0], res);

done:
    if (status_fd >= 0)
        close(status_fd);
    for (int i = 0; i < 2; i++) {
        if (outp[i] >= 0)
            close(outp[i]);
        if (errp[i] >= 0)
            close(errp[i]);
    }
}

void hook_result_clear(hook_result_t *res) {
    free(res->out);
    free(res->err);
    res->out = res->err = NULL;
}
