#!/usr/bin/env bash
# The source tree's rules the compiler cannot see (docs/architecture.md, "How the build
# enforces it"), checked at every build:
# * a quoted include names a header by its name alone, found through the include path
#   of the layers beneath: `#include "../rpc/x.h"` would reach around the layering. Only
#   a library's testing/ headers, for its own tests, reach into its private/ directory;
#   generated protocol headers live in subdirectories of the build's (etcd/, k8s/);
# * no source file is longer than MAX_LINES: a longer one holds several jobs.
#
#   scripts/check-tree-rules.sh SOURCE_ROOT
set -euo pipefail
MAX_LINES=1200
if [ $# -ne 1 ]; then
    echo "usage: check-tree-rules.sh SOURCE_ROOT" >&2
    exit 2
fi
cd "$1"
fail=0
while IFS= read -r hit; do
    file=${hit%%:*}
    case $file in
    */testing/*) [[ $hit == *'"../private/'* ]] && continue ;;
    esac
    echo "check-tree-rules: $hit: a header by a path, not by its name (the layering's include path decides what a file may see)" >&2
    fail=1
done < <(grep -rnE --include='*.c' --include='*.h' '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[^"]*\.\./' server providers || true)
while IFS= read -r file; do
    lines=$(wc -l <"$file")
    if [ "$lines" -gt "$MAX_LINES" ]; then
        echo "check-tree-rules: $file: $lines lines, more than $MAX_LINES: split it by job" >&2
        fail=1
    fi
done < <(find server providers -name '*.[ch]' | sort)
exit "$fail"
