#!/usr/bin/env bash
# Fail, listing the files, when a tracked .c or .h differs from what clang-format makes of
# it with the root .clang-format. Fix with: git ls-files '*.c' '*.h' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format not found" >&2; exit 1; }
out=$(git ls-files -z '*.c' '*.h' | xargs -0 clang-format --dry-run --Werror 2>&1) && rc=0 || rc=$?
if [ "$rc" -ne 0 ]; then
    # Each finding reads "FILE:LINE:COL: error: code should be clang-formatted ...".
    files=$(printf '%s\n' "$out" | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
    if [ -z "$files" ]; then
        printf '%s\n' "$out" >&2 # not a formatting finding: clang-format itself failed
    else
        echo "check-format: these files differ from .clang-format:" >&2
        printf '  %s\n' $files >&2
        echo "fix: clang-format -i" $files >&2
    fi
    exit 1
fi
echo "check-format: $(git ls-files '*.c' '*.h' | wc -l) files clean ($(clang-format --version))"
