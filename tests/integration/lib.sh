# Shared helpers of the integration tests: they drive the real `frugal` binary on free
# loopback ports. Source it first thing; it makes a private temp dir ($TMP), and an EXIT
# trap that kills every server the test started and removes $TMP, whatever happens.
#
# Environment (set by CTest): FRUGAL (the binary), FRUGAL_SOURCE_DIR, FRUGAL_BUILD_DIR.
# FRUGAL_KEEP_TMP=1 keeps $TMP for a post-mortem.
#
# Assertions record a failure and carry on, so one run shows every broken step; `fatal`
# stops at once (the server would not start, say). `finish` ends the test: exit 1 when
# anything failed.

set -u

if [ -z "${FRUGAL:-}" ] || [ ! -x "$FRUGAL" ]; then
    echo "lib.sh: FRUGAL must name the frugal binary (got '${FRUGAL:-}')" >&2
    exit 1
fi
FRUGAL_SOURCE_DIR=${FRUGAL_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}

TEST_NAME=$(basename "$0" .sh)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/frugal-$TEST_NAME.XXXXXX") || exit 1
# frugal's memory budget follows the container's cgroup limit (docs/limits.md): the
# tests see no limit, whatever the machine running them has, unless they set one.
export FRUGAL_CGROUP_ROOT="$TMP/no-cgroup"
FAILURES=0
CHECKS=0
SERVER_PID=""
SERVER_LOG=""
SERVER_SEQ=0
ALL_SERVER_PIDS=()
ADDR=""         # the default --addr of ctl()
CTL_OPTS=()     # extra global options of ctl(), e.g. TLS files

lib_cleanup() {
    local pid
    for pid in "${ALL_SERVER_PIDS[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            kill -KILL "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
        fi
    done
    local port claims="${TMPDIR:-/tmp}/frugal-test-ports"
    while read -r port; do # this test's port claims (free_port), for the next tests
        [ "$(cat "$claims/$port" 2>/dev/null)" = "$$" ] && rm -f "$claims/$port"
    done 2>/dev/null <"$TMP/.ports" # (none when the test claimed no port)
    if [ "${FRUGAL_KEEP_TMP:-0}" = 1 ]; then
        echo "kept $TMP" >&2
    else
        rm -rf "$TMP"
    fi
}
trap lib_cleanup EXIT
trap 'exit 130' INT TERM

# skip REASON: the machine cannot run this test. Exit 77, which CTest reports as
# "Skipped" (SKIP_RETURN_CODE), never as a pass; scripts/test.sh lists the reasons.
skip() {
    echo "$TEST_NAME: SKIPPED: $*"
    exit 77
}

log() {
    echo "--- $*"
}

# Print the tail of the current server's log, to explain a failure.
show_server_log() {
    if [ -n "$SERVER_LOG" ] && [ -f "$SERVER_LOG" ]; then
        echo "    server log ($SERVER_LOG), last lines:" >&2
        tail -n 15 "$SERVER_LOG" | sed 's/^/    | /' >&2
    fi
}

fail() {
    FAILURES=$((FAILURES + 1))
    echo "FAIL: $*" >&2
}

pass() {
    CHECKS=$((CHECKS + 1))
}

fatal() {
    echo "FATAL: $*" >&2
    show_server_log
    exit 1
}

finish() {
    if [ "$FAILURES" -gt 0 ]; then
        echo "$TEST_NAME: $FAILURES failed, $CHECKS passed" >&2
        show_server_log
        exit 1
    fi
    echo "$TEST_NAME: all $CHECKS checks passed"
    exit 0
}

# A TCP port on 127.0.0.1, below the ephemeral range, that nothing listens on right now,
# that this test has not been given before (two ports picked one after the other must
# differ: $TMP/.ports), and that no other test running now holds (free_port.py's claims,
# made for this test's shell, $$).
free_port() {
    local port
    for _ in $(seq 1 100); do
        if command -v python3 >/dev/null 2>&1; then
            port=$(python3 "$FRUGAL_SOURCE_DIR/tests/integration/free_port.py" $$)
        else
            port=$((20000 + RANDOM % 40000))
            (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
        fi
        grep -qx "$port" "$TMP/.ports" 2>/dev/null && continue
        echo "$port" >>"$TMP/.ports"
        echo "$port"
        return
    done
    fatal "no free port found"
}

# run CMD...: run it, capturing $OUT (stdout), $ERR (stderr) and $RC.
run() {
    "$@" >"$TMP/.out" 2>"$TMP/.err"
    RC=$?
    OUT=$(cat "$TMP/.out")
    ERR=$(cat "$TMP/.err")
}

# ctl ARGS...: `frugal ctl` against $ADDR with $CTL_OPTS.
ctl() {
    "$FRUGAL" ctl --addr "$ADDR" "${CTL_OPTS[@]}" "$@"
}

describe_run() {
    echo "    rc=$RC stdout=[$(echo "$OUT" | head -c 600)] stderr=[$(echo "$ERR" | head -c 600)]" >&2
}

# assert_ok MSG CMD...: CMD exits 0.
assert_ok() {
    local msg=$1
    shift
    run "$@"
    if [ "$RC" -eq 0 ]; then
        pass
        return 0
    fi
    fail "$msg: expected success: $*"
    describe_run
    return 1
}

# assert_status STATUS MSG CMD...: CMD (a ctl call) exits 1 with "STATUS: ..." on stderr.
# STATUS may be an alternation such as "INVALID_ARGUMENT|FAILED_PRECONDITION".
assert_status() {
    local status=$1 msg=$2
    shift 2
    run "$@"
    if [ "$RC" -eq 1 ] && echo "$ERR" | grep -Eq "^($status): "; then
        pass
        return 0
    fi
    fail "$msg: expected exit 1 with $status: $*"
    describe_run
    return 1
}

# assert_exit CODE MSG CMD...
assert_exit() {
    local code=$1 msg=$2
    shift 2
    run "$@"
    if [ "$RC" -eq "$code" ]; then
        pass
        return 0
    fi
    fail "$msg: expected exit $code: $*"
    describe_run
    return 1
}

assert_eq() {
    local expected=$1 actual=$2 msg=$3
    if [ "$expected" = "$actual" ]; then
        pass
        return 0
    fi
    fail "$msg: expected [$expected], got [$actual]"
    return 1
}

# assert_match REGEX TEXT MSG (extended regex, any line)
assert_match() {
    local re=$1 text=$2 msg=$3
    if echo "$text" | grep -Eq -- "$re"; then
        pass
        return 0
    fi
    fail "$msg: [$re] not found in [$(echo "$text" | head -c 800)]"
    return 1
}

assert_no_match() {
    local re=$1 text=$2 msg=$3
    if ! echo "$text" | grep -Eq -- "$re"; then
        pass
        return 0
    fi
    fail "$msg: [$re] unexpectedly found in [$(echo "$text" | head -c 800)]"
    return 1
}

# assert_near EXPECTED ACTUAL MSG: floats equal within 1e-6 relative.
assert_near() {
    local expected=$1 actual=$2 msg=$3
    if awk -v e="$expected" -v a="$actual" 'BEGIN {
            if (a !~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/) exit 1;
            d = e - a; if (d < 0) d = -d; m = e < 0 ? -e : e;
            exit !(d <= 1e-6 * (m > 1 ? m : 1)) }'; then
        pass
        return 0
    fi
    fail "$msg: expected about $expected, got [$actual]"
    return 1
}

# yaml_value KEY [TEXT]: the value of a top-level "KEY: value" line of TEXT (default
# $OUT), unquoted.
yaml_value() {
    local key=$1 text=${2-$OUT}
    echo "$text" | sed -n "s/^$key: //p" | head -n 1 | sed -e 's/^"\(.*\)"$/\1/'
}

# yaml_nested SECTION KEY [TEXT]: the value of "  KEY: value" under "SECTION:".
yaml_nested() {
    local section=$1 key=$2 text=${3-$OUT}
    echo "$text" | awk -v s="$section:" -v k="$key" '
        $0 == s || index($0, s " ") == 1 { in_s = 1; next }
        /^[^ ]/ { in_s = 0 }
        in_s {
            line = $0; sub(/^ +/, "", line)
            split(line, parts, ": ")
            kk = parts[1]; gsub(/^"|"$/, "", kk)
            if (kk == k) { v = substr(line, length(parts[1]) + 3); gsub(/^"|"$/, "", v); print v; exit }
        }'
}

# target_size ID: the group's target size via ctl ("ERR" when the call fails).
target_size() {
    local v
    if v=$(ctl target-size "$1" 2>/dev/null); then
        echo "$v"
    else
        echo "ERR"
    fi
}

# start_server CONFIG [CTL GLOBAL OPTIONS...]: start `frugal serve -c CONFIG` in the
# background and wait (at most 10 s) until `frugal ctl health` succeeds with the given
# options (default: --addr $ADDR plus $CTL_OPTS). Sets SERVER_PID and SERVER_LOG.
start_server() {
    local config=$1
    shift
    local health=("$@")
    if [ ${#health[@]} -eq 0 ]; then
        health=(--addr "$ADDR" "${CTL_OPTS[@]}")
    fi
    SERVER_SEQ=$((SERVER_SEQ + 1))
    SERVER_LOG="$TMP/server.$SERVER_SEQ.log"
    "$FRUGAL" serve -c "$config" --init-state >"$SERVER_LOG" 2>&1 &
    SERVER_PID=$!
    ALL_SERVER_PIDS+=("$SERVER_PID")
    local i
    for i in $(seq 1 100); do
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            wait "$SERVER_PID"
            fatal "server exited with status $? during start-up (config $config)"
        fi
        if "$FRUGAL" ctl "${health[@]}" --timeout 500 health >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.1
    done
    fatal "server not healthy after 10 s (config $config)"
}

# stop_server: SIGTERM, wait at most 15 s, and assert a clean exit 0.
stop_server() {
    local pid=$SERVER_PID i
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null
    # The grace is 10 s; a sanitizer build's exit adds its own seconds.
    for i in $(seq 1 300); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        fail "server did not exit within 30 s of SIGTERM"
        show_server_log
    else
        wait "$pid"
        local rc=$?
        assert_eq 0 "$rc" "server exit status after SIGTERM" || show_server_log
    fi
    SERVER_PID=""
}

# kill_server_hard: SIGKILL, as a crash would.
kill_server_hard() {
    local pid=$SERVER_PID
    [ -n "$pid" ] || return 0
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    SERVER_PID=""
}

# kube_list ITEM_JSON...: a v1 List of those items, as kubectl prints one.
kube_list() {
    local first=1 item
    echo '{"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": ['
    for item in "$@"; do
        [ $first = 1 ] || echo ','
        first=0
        echo "$item"
    done
    echo ']}'
}
