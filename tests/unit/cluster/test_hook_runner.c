/* hook_runner.h: one hook run under its guard, against /bin/sh scripts: how it ended,
 * what it wrote, and that nothing of its process group outlives the run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "hook_runner.h"

static char *const no_env[] = {"PATH=/usr/bin:/bin", "HOOK_TEST=yes", NULL};

/* A spec running `sh -c script`. */
static hook_spec_t sh_spec(const char *script, int64_t timeout_ms, char **argv) {
    argv[0] = "/bin/sh";
    argv[1] = "-c";
    argv[2] = (char *)script;
    argv[3] = NULL;
    return (hook_spec_t){.cmd = "/bin/sh", .argv = argv, .envp = no_env, .timeout_ms = timeout_ms};
}

/* Whether pid runs: exists and is not a zombie. */
static bool process_runs(pid_t pid) {
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *fp = fopen(path, "r");
    if (fp == NULL)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return paren != NULL && paren[1] == ' ' && paren[2] != 'Z';
}

static void test_exit_status_and_output(void **state) {
    (void)state;
    char *argv[4];
    hook_spec_t spec = sh_spec("echo \"  first $HOOK_TEST \"; echo second; "
                               "echo oops >&2; echo '  last words  ' >&2; echo >&2; exit 0",
                               5000, argv);
    hook_result_t r;
    hook_runner_run(&spec, &r);
    assert_int_equal(r.end, HOOK_EXITED);
    assert_true(r.started);
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    char *first = hook_output_line(r.out, false);
    char *last = hook_output_line(r.err, true);
    assert_string_equal(first, "first yes");
    assert_string_equal(last, "last words");
    assert_string_equal(r.out->data, "  first yes \nsecond\n");
    free(first);
    free(last);
    hook_result_clear(&r);
    assert_null(r.out);
    hook_result_clear(&r); /* twice is harmless */

    /* Lines of blanks after the message, a tab among them, are no message. */
    spec = sh_spec("printf 'real msg\\n\\t\\n \\t \\n' >&2; exit 1", 5000, argv);
    hook_runner_run(&spec, &r);
    last = hook_output_line(r.err, true);
    assert_string_equal(last, "real msg");
    free(last);
    hook_result_clear(&r);

    spec = sh_spec("exit 3", 5000, argv);
    hook_runner_run(&spec, &r);
    assert_int_equal(r.end, HOOK_EXITED);
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 3);
    assert_null(hook_output_line(r.out, false)); /* wrote nothing */
    hook_result_clear(&r);

    spec = sh_spec("kill -TERM $$", 5000, argv);
    hook_runner_run(&spec, &r);
    assert_int_equal(r.end, HOOK_EXITED);
    assert_true(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGTERM);
    hook_result_clear(&r);
}

/* Each stream keeps HOOK_OUTPUT_MAX bytes; the hook is never blocked by a full pipe. */
static void test_output_capped(void **state) {
    (void)state;
    char *argv[4];
    hook_spec_t spec = sh_spec("head -c 300000 /dev/zero | tr '\\0' x; echo done >&2", 10000, argv);
    hook_result_t r;
    hook_runner_run(&spec, &r);
    assert_int_equal(r.end, HOOK_EXITED);
    assert_int_equal(r.out->len, HOOK_OUTPUT_MAX);
    assert_int_equal(strlen(r.out->data), HOOK_OUTPUT_MAX);
    assert_string_equal(r.err->data, "done\n");
    assert_true(r.out->overflow);
    hook_result_clear(&r);
}

/* stderr keeps its last HOOK_OUTPUT_MAX bytes: the last line is the message. */
static void test_stderr_keeps_its_end(void **state) {
    (void)state;
    char *argv[4];
    hook_spec_t spec = sh_spec(
        "i=0; while [ $i -lt 4000 ]; do echo \"noise line $i of many\"; i=$((i+1)); done >&2;"
        " echo 'the real last line' >&2; exit 1",
        20000, argv);
    hook_result_t r;
    hook_runner_run(&spec, &r);
    assert_int_equal(r.end, HOOK_EXITED);
    assert_true(r.err->overflow);
    assert_int_equal(r.err->len, HOOK_OUTPUT_MAX);
    char *last = hook_output_line(r.err, true);
    assert_string_equal(last, "the real last line");
    free(last);
    hook_result_clear(&r);
}

static void test_not_started(void **state) {
    (void)state;
    char *argv[] = {"/nonexistent/hook", NULL};
    hook_spec_t spec = {.cmd = argv[0], .argv = argv, .envp = no_env, .timeout_ms = 1000};
    hook_result_t r;
    hook_runner_run(&spec, &r);
    assert_int_equal(r.end, HOOK_NO_SPAWN);
    assert_int_equal(r.error, ENOENT);
    assert_false(r.started);
    hook_result_clear(&r);
}

/* At the timeout the whole group is killed, including what the hook started. */
static void test_timeout_kills_group(void **state) {
    (void)state;
    char *argv[4];
    hook_spec_t spec = sh_spec("sleep 30 & echo $!; echo started >&2; wait", 300, argv);
    hook_result_t r;
    int64_t t0 = clock_mono_ms();
    hook_runner_run(&spec, &r);
    int64_t took = clock_mono_ms() - t0;
    assert_int_equal(r.end, HOOK_TIMED_OUT);
    assert_true(took >= 300 && took < 5000);
    char *line = hook_output_line(r.out, false);
    assert_non_null(line);
    pid_t child = (pid_t)atoi(line);
    assert_true(child > 0);
    assert_false(process_runs(child));
    assert_string_equal(r.err->data, "started\n");
    free(line);
    hook_result_clear(&r);
}

/* A hook that exits leaves nothing of its group running. */
static void test_exit_ends_group(void **state) {
    (void)state;
    char *argv[4];
    hook_spec_t spec = sh_spec("sleep 30 >/dev/null 2>&1 & echo $!", 5000, argv);
    hook_result_t r;
    hook_runner_run(&spec, &r);
    assert_int_equal(r.end, HOOK_EXITED);
    pid_t child = (pid_t)atoi(r.out->data);
    assert_true(child > 0);
    assert_false(process_runs(child));
    hook_result_clear(&r);
}

static bool stop_after(void *arg) {
    return clock_mono_ms() >= *(const int64_t *)arg;
}

static void test_stop(void **state) {
    (void)state;
    char *argv[4];
    hook_spec_t spec = sh_spec("sleep 30", 10000, argv);
    int64_t when = clock_mono_ms() + 200;
    spec.stop = stop_after;
    spec.stop_arg = &when;
    hook_result_t r;
    hook_runner_run(&spec, &r);
    assert_int_equal(r.end, HOOK_STOPPED);
    assert_true(r.started);
    assert_true(clock_mono_ms() - when < 5000);
    hook_result_clear(&r);
}

/* A fence already passed: not started. A fence passing during the run: the guard
 * kills the group by itself, even when nobody asks it to. */
static void test_fence(void **state) {
    (void)state;
    atomic_llong *fence =
        mmap(NULL, sizeof(*fence), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(fence != MAP_FAILED);
    char *argv[4];
    hook_spec_t spec = sh_spec("echo ran", 5000, argv);
    spec.fence = fence;
    atomic_store(fence, clock_mono_ms() - 1);
    hook_result_t r;
    hook_runner_run(&spec, &r);
    assert_int_equal(r.end, HOOK_FENCED);
    assert_false(r.started);
    assert_null(r.out);
    hook_result_clear(&r);

    spec = sh_spec("sleep 30", 10000, argv);
    spec.fence = fence;
    atomic_store(fence, clock_mono_ms() + 300);
    int64_t t0 = clock_mono_ms();
    hook_runner_run(&spec, &r);
    assert_int_equal(r.end, HOOK_FENCED);
    assert_true(r.started);
    assert_true(clock_mono_ms() - t0 < 5000);
    hook_result_clear(&r);
    munmap(fence, sizeof(*fence));
}

/* The hook inherits none of frugal's descriptors beyond 0-2. */
static void test_descriptors_closed(void **state) {
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0); /* not close-on-exec */
    char *argv[4];
    hook_spec_t spec = sh_spec("ls /proc/self/fd | sort -n | tr '\\n' ' '", 5000, argv);
    hook_result_t r;
    hook_runner_run(&spec, &r);
    assert_int_equal(r.end, HOOK_EXITED);
    /* ls's own directory descriptor is 3. */
    assert_string_equal(r.out->data, "0 1 2 3 ");
    hook_result_clear(&r);
    close(fds[0]);
    close(fds[1]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_status_and_output),
        cmocka_unit_test(test_output_capped),
        cmocka_unit_test(test_stderr_keeps_its_end),
        cmocka_unit_test(test_not_started),
        cmocka_unit_test(test_timeout_kills_group),
        cmocka_unit_test(test_exit_ends_group),
        cmocka_unit_test(test_stop),
        cmocka_unit_test(test_fence),
        cmocka_unit_test(test_descriptors_closed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
