#!/usr/bin/env bash
# Build the libFuzzer targets (fuzz/fuzz_*.c) with clang in build-fuzz/ and replay every
# seed of fuzz/corpus/<target>/ once (-runs=0): any crash, sanitizer report or failed
# property check fails. See docs/fuzzing.md.
#   scripts/fuzz.sh            build, then replay every corpus
#   scripts/fuzz.sh SECONDS    also fuzz each target for SECONDS (new inputs go to
#                              build-fuzz/corpus/<target>/, crashes to build-fuzz/crashes/)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --ci
seconds=${1:-0}
case "$seconds" in *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS]" >&2; exit 2 ;; esac
dir=build-fuzz
cmake -S . -B "$dir" -DCMAKE_C_COMPILER=clang -DFRUGAL_FUZZ=ON -DFRUGAL_TESTS=OFF \
    -DFRUGAL_WERROR=ON >/dev/null
targets=()
for src in fuzz/fuzz_*.c; do targets+=("$(basename "$src" .c)"); done
cmake --build "$dir" -j"$(nproc)" --target "${targets[@]}"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=()
for t in "${targets[@]}"; do
    corpus=fuzz/corpus/$t
    if [ ! -d "$corpus" ] || [ -z "$(ls -A "$corpus")" ]; then
        echo "fuzz: $t has no seeds in $corpus" >&2
        failed+=("$t")
        continue
    fi
    log=$dir/$t.replay.log
    # Listing the files replays exactly the seeds (a directory would be fuzzed into).
    if "$dir/fuzz/$t" -runs=0 "$corpus"/* >"$log" 2>&1; then
        echo "fuzz: $t: $(ls "$corpus" | wc -l) seeds replayed"
    else
        cat "$log" >&2
        failed+=("$t")
        continue
    fi
    if [ "$seconds" -gt 0 ]; then
        mkdir -p "$dir/corpus/$t" "$dir/crashes"
        if ! "$dir/fuzz/$t" -max_total_time="$seconds" -print_final_stats=1 \
            -artifact_prefix="$dir/crashes/$t-" "$dir/corpus/$t" "$corpus" \
            >"$dir/$t.fuzz.log" 2>&1; then
            tail -n 60 "$dir/$t.fuzz.log" >&2
            failed+=("$t")
        else
            echo "fuzz: $t: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' \
                "$dir/$t.fuzz.log" | grep -o '[0-9]*$') runs in ${seconds}s, no finding"
        fi
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz: all clean"
