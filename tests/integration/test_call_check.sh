#!/usr/bin/env bash
# The build's check that no two files of a library call each other
# (scripts/check-mutual-calls.sh, run by frugal_call_check on every layer's archive):
# it passes the real archives and a one-way archive, and fails on two objects that
# call each other, naming both and a symbol each uses of the other.
source "$(dirname "$0")/lib.sh"

CHECK="$FRUGAL_SOURCE_DIR/scripts/check-mutual-calls.sh"
CC=${CC:-cc}

archive() { # NAME FILE...: compile the C files in $TMP and archive them as $TMP/NAME
    local name=$1 objs=()
    shift
    for f in "$@"; do
        "$CC" -c -o "$TMP/$f.o" "$TMP/$f.c" || fatal "cannot compile $f.c"
        objs+=("$TMP/$f.o")
    done
    ar rcs "$TMP/$name" "${objs[@]}" || fatal "cannot archive $name"
}

log "the layers' archives pass"
for lib in core/libfrugal_core replay/libfrugal_replay cluster/libfrugal_cluster \
    store/libfrugal_store rpc/libfrugal_rpc cli/libfrugal_cli; do
    assert_exit 0 "$lib" bash "$CHECK" "$FRUGAL_BUILD_DIR/server/$lib.a"
done

log "a calls b, b calls nothing: passes"
echo 'int b_value(void); int a_value(void) { return b_value() + 1; }' >"$TMP/a.c"
echo 'int b_value(void) { return 41; }' >"$TMP/b.c"
archive one-way.a a b
assert_exit 0 "a one-way call" bash "$CHECK" "$TMP/one-way.a"

log "a calls b and b calls a: fails, naming both"
echo 'int a_value(void); int b_value(void) { return 41; } int b_twice(void) { return 2 * a_value(); }' >"$TMP/b.c"
archive mutual.a a b
assert_exit 1 "a mutual call" bash "$CHECK" "$TMP/mutual.a"
assert_match "a\.o and b\.o call each other: a\.o uses b_value \(defined in b\.o\), b\.o uses a_value \(defined in a\.o\)" "$ERR" "the report"

log "two objects of one name: refused"
mkdir -p "$TMP/d"
cp "$TMP/b.c" "$TMP/d/a.c"
"$CC" -c -o "$TMP/d/a.o" "$TMP/d/a.c" || fatal "cannot compile d/a.c"
"$CC" -c -o "$TMP/a.o" "$TMP/a.c" || fatal "cannot compile a.c"
ar qc "$TMP/same.a" "$TMP/a.o" "$TMP/d/a.o"
assert_exit 2 "two a.o" bash "$CHECK" "$TMP/same.a"
assert_match "several objects named: a\.o" "$ERR" "the refusal"

finish
