#!/usr/bin/env bash
# Install dependencies, build, and run the whole test suite (unit + integration).
#   scripts/test.sh             normal build in build/
#   scripts/test.sh --sanitize  AddressSanitizer + UndefinedBehaviorSanitizer build in build-asan/
#   scripts/test.sh --tsan      ThreadSanitizer build (clang) in build-tsan/: unit and
#                               integration tests; any report from any process fails
#   scripts/test.sh --valgrind  Debug build in build-valgrind/: every unit test, then a short
#                               server smoke (tests/valgrind_smoke.sh), under valgrind
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
    "" | --sanitize) bash scripts/install-deps.sh ;;
    --tsan | --valgrind) bash scripts/install-deps.sh --ci ;; # clang; valgrind
    *) echo "usage: scripts/test.sh [--sanitize | --tsan | --valgrind]" >&2; exit 2 ;;
esac
dir=build
flags=(-DFRUGAL_WERROR=ON)
if [ "${1:-}" = "--sanitize" ]; then
    dir=build-asan
    flags+=(-DFRUGAL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug)
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
    export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
elif [ "${1:-}" = "--tsan" ]; then
    dir=build-tsan
    flags+=(-DFRUGAL_TSAN=ON -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo)
    # Reports of every process (unit tests, `frugal serve`, `frugal ctl`) go to files:
    # the integration tests keep the server's stderr to themselves.
    rm -rf "$PWD/$dir/tsan-logs"
    mkdir -p "$PWD/$dir/tsan-logs"
    export TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp:log_path=$PWD/$dir/tsan-logs/tsan:second_deadlock_stack=1:history_size=4"
elif [ "${1:-}" = "--valgrind" ]; then
    dir=build-valgrind
    flags+=(-DCMAKE_BUILD_TYPE=Debug)
fi
# A skipped test (exit 77: the machine cannot run it) is listed with its reason, so a CI
# log says what was not checked and why.
print_skips() {
    grep -h ": SKIPPED: " "$1"/Testing/Temporary/LastTest*.log 2>/dev/null | sort -u |
        sed 's/^/skipped: /' || true
}
cmake -S . -B "$dir" "${flags[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
if [ "$dir" = build-tsan ]; then
    rc=0
    ctest --test-dir "$dir" --output-on-failure -j2 || rc=$?
    print_skips "$dir"
    if compgen -G "$dir/tsan-logs/tsan.*" >/dev/null; then
        cat "$dir"/tsan-logs/tsan.* >&2
        echo "tsan: reports in $dir/tsan-logs/" >&2
        exit 1
    fi
    exit "$rc"
elif [ "$dir" != build-valgrind ]; then
    rc=0
    ctest --test-dir "$dir" --output-on-failure -j2 || rc=$?
    print_skips "$dir"
    exit "$rc"
fi

# Valgrind: definite/indirect leaks and every memory error fail; gRPC's still-reachable
# and possibly-lost blocks at exit do not. Third-party leaks are in tests/valgrind.supp.
vg=(valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect
    --show-leak-kinds=definite,indirect --suppressions="$PWD/tests/valgrind.supp" -q)
failed=()
for t in "$dir"/tests/test_*; do
    [ -x "$t" ] || continue
    echo "valgrind: $(basename "$t")"
    # As ctest runs them: from the source dir, with FRUGAL_SOURCE_DIR set.
    if ! FRUGAL_SOURCE_DIR="$PWD" FRUGAL_UNDER_VALGRIND=1 "${vg[@]}" "$t" \
        >"$dir/$(basename "$t").valgrind.log" 2>&1; then
        cat "$dir/$(basename "$t").valgrind.log" >&2
        failed+=("$(basename "$t")")
    fi
done
echo "valgrind: server smoke"
if ! FRUGAL="$PWD/$dir/frugal" FRUGAL_SOURCE_DIR="$PWD" bash tests/valgrind_smoke.sh; then
    failed+=(valgrind_smoke)
fi
if [ ${#failed[@]} -gt 0 ]; then
    echo "valgrind: FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "valgrind: all clean"
