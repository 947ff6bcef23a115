#!/usr/bin/env bash
# No two files of a library call each other (docs/architecture.md, "How the build
# enforces it"): for every pair of objects A and B in the static library ARCHIVE, fail
# when A uses a global symbol B defines and B uses one A defines. Calls between
# libraries need no check here: a lower layer cannot link a higher one at all
# (frugal_layer_check).
#
#   scripts/check-mutual-calls.sh ARCHIVE [NM]
#
# NM is the nm to use (the build passes CMAKE_NM); any nm with POSIX output (-P) does.
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: check-mutual-calls.sh ARCHIVE [NM]" >&2
    exit 2
fi
archive=$1
nm=${2:-nm}
[ -f "$archive" ] || { echo "check-mutual-calls: $archive: no such file" >&2; exit 2; }

# Two objects of one name (two directories' state.c) would read as one.
dups=$(ar t "$archive" | sort | uniq -d)
if [ -n "$dups" ]; then
    echo "check-mutual-calls: $archive holds several objects named: $dups (rename one)" >&2
    exit 2
fi

# -P: "ARCHIVE[MEMBER]: SYMBOL TYPE [VALUE SIZE]"; -g: global symbols only.
"$nm" -P -A -g "$archive" | awk -v archive="$(basename "$archive")" '
    {
        member = $1
        sub(/^.*\[/, "", member)
        sub(/\]:$/, "", member)
        sym = $2
        type = $3
        if (type == "U")
            uses[member] = uses[member] " " sym
        else if (type ~ /^[A-Z]$/)
            def[sym] = member
    }
    END {
        # edge[a, b]: one symbol of b that a uses.
        for (a in uses) {
            n = split(uses[a], list, " ")
            for (i = 1; i <= n; i++) {
                b = def[list[i]]
                if (b != "" && b != a && !((a, b) in edge))
                    edge[a, b] = list[i]
            }
        }
        bad = 0
        for (key in edge) {
            split(key, ab, SUBSEP)
            a = ab[1]
            b = ab[2]
            if (a < b && (b, a) in edge) {
                printf "%s: %s and %s call each other: %s uses %s (defined in %s), %s uses %s (defined in %s)\n",
                       archive, a, b, a, edge[a, b], b, b, edge[b, a], a > "/dev/stderr"
                bad = 1
            }
        }
        exit bad
    }'
