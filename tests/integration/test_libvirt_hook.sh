#!/usr/bin/env bash
# The libvirt reference hook (providers/hooks/libvirt/frugal-libvirt-hook) run directly
# against a fake `virsh` (and `genisoimage`) on PATH, with no libvirt: its domains,
# metadata and volumes are files under $FAKE, and a file $FAKE/fail/SUBCOMMAND makes that
# subcommand fail with the file's content as virsh's stderr. Checks what a real libvirt
# makes hard to provoke: a list never hides a domain it could not look at; ids are the
# ones stored at create time; only a lookup that finds nothing means gone; a placeholder delete
# removes a killed create's volumes and temp dir; a failed destroy names its own error; a
# re-run create resumes a paused domain; a domain undefined while it ran is deleted in one
# go; user-data names only variables sh passes on; disk sizes read as qemu-img's; two
# creates of one instance at once leave one domain with its volumes; a re-run create sets
# autostart; a renamed domain's volumes are deleted.
# (tests/integration/test_libvirt.sh runs the hook against a real libvirtd.)
source "$(dirname "$0")/lib.sh"

HOOK=$FRUGAL_SOURCE_DIR/providers/hooks/libvirt/frugal-libvirt-hook
BIN=$TMP/bin
FAKE=$TMP/fake
mkdir -p "$BIN" "$TMP/tmp"

# The fake virsh: `virsh [-q] [-c URI] SUBCOMMAND ARGS...`, logged to $FAKE/log.
cat >"$BIN/virsh" <<'VIRSH_EOF'
#!/usr/bin/env bash
F=$FAKE_VIRSH_DIR
while [ $# -gt 0 ]; do
    case $1 in -q) shift ;; -c) shift 2 ;; *) break ;; esac
done
if [ $# -eq 1 ] && [[ $1 == *';'* ]]; then
    # A batch, "CMD ARGS; CMD ARGS; ...", on one connection: logged as "batch", its
    # commands indented. Each runs whatever the one before did; the status is the last's.
    echo batch >>"$F/log"
    IFS=';' read -ra cmds <<<"$1"
    rc=0
    for c in "${cmds[@]}"; do
        read -ra words <<<"$c"
        [ ${#words[@]} -gt 0 ] || continue
        FAKE_VIRSH_BATCHED=1 "$0" "${words[@]}"
        rc=$?
        [ $rc -ne 0 ] || echo # a virsh that is not quiet ends an answer with a blank line
    done
    exit $rc
fi
cmd=$1
shift
echo "${FAKE_VIRSH_BATCHED:+  }$cmd $*" >>"$F/log"
if [ -f "$F/kill/$cmd" ]; then
    rm -f "$F/kill/$cmd"
    kill -KILL "$PPID" # the hook, as frugal's timeout would
    exit 1
fi
if [ -f "$F/fail/$cmd" ]; then
    cat "$F/fail/$cmd" >&2
    exit 1
fi
[ ! -f "$F/sleep/$cmd" ] || sleep "$(cat "$F/sleep/$cmd")" # a slow host
# Positional arguments in $pos, options in $opt.
pos=()
declare -A opt=()
while [ $# -gt 0 ]; do
    case $1 in
    --all | --uuid | --bytes | --nvram) opt[$1]=1 ;;
    --*) opt[$1]=$2; shift ;;
    *) pos+=("$1") ;;
    esac
    shift
done
dom() { # dom NAME_OR_UUID: its uuid, or virsh's error for a domain that does not exist
    local d
    for d in "$F"/dom/*; do
        [ -d "$d" ] || continue
        if [ "${d##*/}" = "$1" ] || [ "$(cat "$d/name")" = "$1" ]; then
            echo "${d##*/}"
            return
        fi
    done
    # What Debian 12's virsh (libvirt 9) says: the lookup's own error is not printed.
    printf "error: failed to get domain '%s'\n" "$1" >&2
    exit 1
}
vol() { # vol NAME POOL: the volume's file, or virsh's error when there is none
    [ -f "$F/pool/$2/$1" ] && return
    printf "error: failed to get vol '%s'\nerror: Storage volume not found: no storage vol with matching path '%s'\n" "$1" "$1" >&2
    exit 1
}
case $cmd in
hostname) cat "$F/hostname" ;;
echo) echo "${pos[*]}" ;;
list)
    for d in "$F"/dom/*; do # without --all, the running and paused ones
        [ -d "$d" ] || continue
        [ -n "${opt[--all]:-}" ] || [ "$(cat "$d/state")" != "shut off" ] && echo "${d##*/}"
    done
    cat "$F/ghosts" 2>/dev/null
    true
    ;;
dominfo) u=$(dom "${pos[0]}") || exit 1; echo "Max memory:     $(cat "$F/dom/$u/mem" 2>/dev/null || echo 1048576) KiB" ;;
metadata)
    u=$(dom "${pos[0]}") || exit 1
    if [ -f "$F/dom/$u/meta" ]; then
        cat "$F/dom/$u/meta"
    else
        echo "error: metadata not found: Requested metadata element is not present" >&2
        exit 1
    fi
    ;;
domstate) u=$(dom "${pos[0]}") || exit 1; cat "$F/dom/$u/state" ;;
domname) u=$(dom "${pos[0]}") || exit 1; cat "$F/dom/$u/name" ;;
domuuid) dom "${pos[0]}" || exit 1 ;;
domrename) u=$(dom "${pos[0]}") || exit 1; echo "${pos[1]}" >"$F/dom/$u/name" ;;
destroy)
    u=$(dom "${pos[0]}") || exit 1
    if [ "$(cat "$F/dom/$u/state")" != running ]; then
        printf "error: Failed to destroy domain '%s'\nerror: Requested operation is not valid: domain is not running\n" "$u" >&2
        exit 1
    fi
    echo "shut off" >"$F/dom/$u/state"
    [ ! -f "$F/dom/$u/transient" ] || rm -r "${F:?}/dom/$u" # undefined while it ran: gone
    ;;
resume)
    u=$(dom "${pos[0]}") || exit 1
    [ "$(cat "$F/dom/$u/state")" = paused ] || { echo "error: domain is not paused" >&2; exit 1; }
    echo running >"$F/dom/$u/state"
    ;;
start)
    u=$(dom "${pos[0]}") || exit 1
    [ "$(cat "$F/dom/$u/state")" = "shut off" ] || { echo "error: Requested operation is not valid: domain is already running" >&2; exit 1; }
    echo running >"$F/dom/$u/state"
    ;;
autostart) dom "${pos[0]}" >/dev/null || exit 1 ;;
undefine) u=$(dom "${pos[0]}") || exit 1; rm -r "${F:?}/dom/$u" ;;
define)
    x=${pos[0]}
    u=$(sed -n 's:.*<uuid>\(.*\)</uuid>.*:\1:p' "$x")
    n=$(sed -n 's:.*<name>\(.*\)</name>.*:\1:p' "$x")
    if cat "$F"/dom/*/name 2>/dev/null | grep -qx "$n"; then
        printf "error: Failed to define domain from %s\nerror: operation failed: domain '%s' already exists with uuid %s\n" "$x" "$n" "$(dom "$n")" >&2
        exit 1
    fi
    mkdir -p "$F/dom/$u"
    echo "$n" >"$F/dom/$u/name"
    # virsh prints the element with double quotes, and this one on one line.
    sed -n '/<frugal:instance/,/\/>/p' "$x" | tr -s ' \n' ' ' | sed "s/^ //; s/'/\"/g" >"$F/dom/$u/meta"
    echo >>"$F/dom/$u/meta"
    echo "shut off" >"$F/dom/$u/state"
    sed -n "s:.*<memory unit='KiB'>\(.*\)</memory>.*:\1:p" "$x" >"$F/dom/$u/mem"
    ;;
vol-list) for v in "$F/pool/${pos[0]}"/*; do [ -f "$v" ] && echo " ${v##*/}  /pool/${v##*/}"; done; true ;;
vol-info) vol "${pos[0]}" "${opt[--pool]}"; echo "Name: ${pos[0]}"; echo "Capacity: $(cat "$F/pool/${opt[--pool]}/${pos[0]}")" ;;
vol-path) vol "${pos[0]}" "${opt[--pool]}"; echo "/pool/${pos[0]}" ;;
vol-delete) vol "${pos[0]}" "${opt[--pool]}"; rm "$F/pool/${opt[--pool]}/${pos[0]}" ;;
vol-create-as) echo "${pos[2]}" >"$F/pool/${pos[0]}/${pos[1]}" ;;
vol-upload) vol "${pos[0]}" "${opt[--pool]}" ;;
nodeinfo) echo "CPU(s):              8" ;;
nodememstats) printf 'total  :    32000000 KiB\nfree   :    16000000 KiB\n' ;;
pool-info) echo "Available:      1000000000000" ;;
*) echo "error: fake virsh: unknown command '$cmd'" >&2; exit 1 ;;
esac
VIRSH_EOF
cat >"$BIN/genisoimage" <<'ISO_EOF'
#!/bin/sh
# (keeps the last user-data it was given in $FAKE_VIRSH_DIR/user-data)
while [ $# -gt 0 ]; do
    [ "$1" = -output ] && : >"$2"
    case $1 in */user-data) cp "$1" "$FAKE_VIRSH_DIR/user-data" ;; esac
    shift
done
ISO_EOF
chmod +x "$BIN/virsh" "$BIN/genisoimage"

# reset: an empty host, hostname kvm-1, with the pool frugal holding the base volume.
reset() {
    rm -rf "$FAKE"
    mkdir -p "$FAKE/dom" "$FAKE/pool/frugal" "$FAKE/fail" "$FAKE/kill" "$FAKE/sleep"
    echo kvm-1 >"$FAKE/hostname"
    echo 1073741824 >"$FAKE/pool/frugal/base.qcow2"
}

# hook VERB GROUP [ARG]: the hook with group g1's parameters.
hook() {
    env PATH="$BIN:$PATH" TMPDIR="$TMP/tmp" FAKE_VIRSH_DIR="$FAKE" \
        FRUGAL_PARAM_URI=test:///fake FRUGAL_PARAM_POOL=frugal \
        FRUGAL_PARAM_BASE_VOLUME=base.qcow2 FRUGAL_MEMORY=${FRUGAL_MEMORY-1Gi} FRUGAL_CPU=${FRUGAL_CPU-1} "$HOOK" "$@"
}

# add_domain UUID NAME STATE [META]: a domain made behind the hook's back.
add_domain() {
    mkdir -p "$FAKE/dom/$1"
    echo "$2" >"$FAKE/dom/$1/name"
    echo "$3" >"$FAKE/dom/$1/state"
    [ $# -lt 4 ] || echo "$4" >"$FAKE/dom/$1/meta"
}

# ours INSTANCE UUID [PROVIDER_ID]: our metadata element for g1's INSTANCE.
ours() {
    echo "<frugal:instance xmlns:frugal=\"urn:frugal:libvirt-hook:1\" group=\"g1\" instance=\"$1\" pool=\"frugal\" provider-id=\"${3:-libvirt://kvm-1/$2}\"/>"
}

# fail SUBCOMMAND: make it fail as a dropped connection does.
fail_virsh() {
    printf "error: failed to get domain 'x'\nerror: Cannot recv data: Connection reset by peer\n" >"$FAKE/fail/$1"
}

# vols: the volumes of the pool but the base, sorted, on one line.
vols() {
    local v
    for v in "$FAKE"/pool/frugal/*; do
        [ "${v##*/}" = base.qcow2 ] || printf '%s\n' "${v##*/}"
    done | LC_ALL=C sort | tr '\n' ' '
}

# domains: the names of the domains, sorted, on one line.
domains() {
    cat "$FAKE"/dom/*/name 2>/dev/null | LC_ALL=C sort | tr '\n' ' '
}

U1=11111111-1111-4111-8111-111111111111
U2=22222222-2222-4222-8222-222222222222

log "list: a domain without our metadata is left out, one whose metadata cannot be read fails the list"
reset
add_domain "$U1" g1-1 running "$(ours g1-1 "$U1")"
add_domain "$U2" other running
assert_ok "list" hook list g1
assert_eq "libvirt://kvm-1/$U1 running" "$OUT" "list prints only g1's domain"
U3=33333333-3333-4333-8333-333333333333
add_domain "$U3" g1-3 "shut off" "$(ours g1-3 "$U3")"
: >"$FAKE/log"
assert_ok "list of three domains" hook list g1
assert_eq "libvirt://kvm-1/$U1 running libvirt://kvm-1/$U3 shut-off" "$(echo $OUT)" "both of g1's domains, with their states"
assert_eq "hostname list batch " "$(grep -v '^ ' "$FAKE/log" | cut -d' ' -f1 | tr '\n' ' ')" \
    "one virsh connection asks about every domain"
rm -r "${FAKE:?}/dom/$U3"
echo "$U2" >"$FAKE/ghosts" # removed between `virsh list` and its metadata
assert_ok "list with a domain gone since virsh list" hook list g1
assert_eq "libvirt://kvm-1/$U1 running" "$OUT" "a vanished domain is left out"
fail_virsh metadata
assert_exit 1 "list when metadata fails" hook list g1
assert_match "cannot read the metadata of domain .*Connection reset by peer" "$ERR" "list says why"
rm "$FAKE/fail/metadata"
fail_virsh domstate
assert_exit 1 "list when domstate fails" hook list g1
assert_match "cannot get the state of domain $U1: Cannot recv data" "$ERR" "list says why"

log "ids: list and a re-run create print the id stored at create time, whatever the host is called now"
reset
FRUGAL_PARAM_HOST_NAME=kvm-old assert_ok "create with host_name kvm-old" hook create g1 g1-1
ID1=$OUT
U=${ID1##*/}
assert_match "^libvirt://kvm-old/[0-9a-f-]{36}$" "$ID1" "create prints the id"
assert_eq "g1-1 " "$(domains)" "create defined the domain"
assert_eq "g1-1-$U-seed.iso g1-1-$U.qcow2 " "$(vols)" "create made the overlay and the seed"
echo kvm-new >"$FAKE/hostname" # and no host_name any more
assert_ok "list" hook list g1
assert_eq "$ID1 running" "$OUT" "list prints the stored id"
assert_ok "create re-run" hook create g1 g1-1
assert_eq "$ID1" "$OUT" "a re-run create prints the stored id"
add_domain "$U2" g1-2 running "$(ours g1-2 "$U2" | sed 's/ provider-id="[^"]*"//')"
assert_ok "list" hook list g1
assert_match "^libvirt://kvm-new/$U2 running$" "$OUT" "a domain whose metadata has no id gets the rebuilt one"

log "ids: delete by the stored id, of a domain and of what a vanished one left"
assert_ok "delete the stored id" hook delete g1 "$ID1"
assert_eq "g1-2 " "$(domains)" "the domain is gone"
assert_eq "" "$(vols)" "its volumes are gone"
FRUGAL_PARAM_HOST_NAME=kvm-old assert_ok "create" hook create g1 g1-3
ID3=$OUT
rm -r "${FAKE:?}/dom/${ID3##*/}" # removed behind frugal's back
assert_ok "orphan delete of the stored id" hook delete g1 "$ID3"
assert_eq "" "$(vols)" "the orphan delete removed the vanished domain's volumes"

log "only 'Domain not found' means gone: any other lookup failure deletes nothing and fails"
reset
assert_ok "create" hook create g1 g1-1
ID1=$OUT
VOLS=$(vols)
fail_virsh domname
assert_exit 1 "delete when domname fails" hook delete g1 "$ID1"
assert_match "cannot look up domain ${ID1##*/}: Cannot recv data" "$ERR" "delete says why"
assert_eq "g1-1 " "$(domains)" "the domain is still there"
assert_eq "$VOLS" "$(vols)" "its volumes are still there"
fail_virsh metadata
assert_exit 1 "delete when metadata fails too" hook delete g1 "$ID1"
assert_eq "$VOLS" "$(vols)" "its volumes are still there"
rm "$FAKE"/fail/*
fail_virsh domuuid
assert_exit 1 "create re-run when domuuid fails" hook create g1 g1-1
assert_match "cannot look up domain g1-1 on kvm-1: Cannot recv data" "$ERR" "create says why"
assert_eq "g1-1 " "$(domains)" "the domain is still there"
assert_eq "$VOLS" "$(vols)" "the existing domain's volumes are still there"
assert_exit 1 "placeholder delete when domuuid fails" hook delete g1 frugal://g1/g1-1
assert_eq "$VOLS" "$(vols)" "its volumes are still there"
rm "$FAKE"/fail/*
printf "error: failed to get vol 'x'\nerror: Cannot recv data: Connection reset by peer\n" >"$FAKE/fail/vol-info"
assert_exit 1 "delete when vol-info fails" hook delete g1 "$ID1"
assert_match "cannot look up volume g1-1-.*: Cannot recv data" "$ERR" "delete says why"
assert_eq "g1-1 " "$(domains)" "the domain is not undefined with its volumes left"
rm "$FAKE"/fail/*
assert_ok "delete" hook delete g1 "$ID1"
assert_eq "/" "$(domains)/$(vols)" "then a delete removes the domain and its volumes"
assert_ok "delete again" hook delete g1 "$ID1"

log "a create killed mid-way: the placeholder delete removes its volumes, the next run its temp dir"
reset
echo 1 >"$FAKE/pool/frugal/g1-50-$U1.qcow2" # another instance's, whose name starts alike
mkdir "$TMP/tmp/frugal-libvirt.$$.live"     # a running hook's (this shell's pid)
touch "$FAKE/kill/define"
assert_exit 137 "create killed at define" hook create g1 g1-5
assert_match "^g1-5-[0-9a-f-]{36}-seed\.iso g1-5-[0-9a-f-]{36}\.qcow2 g1-50-$U1\.qcow2 $" "$(vols)" \
    "the killed create left its overlay and seed"
assert_eq "" "$(domains)" "and no domain"
LEFT=$(find "$TMP/tmp" -mindepth 1 -maxdepth 1 -name 'frugal-libvirt.*' ! -name '*.live' | wc -l)
assert_eq 1 "$LEFT" "and its temp dir"
assert_exit 1 "placeholder delete of an empty instance name" hook delete g1 frugal://g1/
assert_exit 1 "placeholder delete of another group's instance" hook delete g1 frugal://g2/g1-5
assert_match "placeholder frugal://g2/g1-5 is not one of group g1's" "$ERR" "names the placeholder"
assert_exit 1 "list with an extra argument" hook list g1 extra
assert_match "usage: .* list GROUP" "$ERR" "list's usage"
assert_match "g1-5-.*g1-50-" "$(vols)" "deletes nothing"
assert_ok "placeholder delete" hook delete g1 frugal://g1/g1-5
assert_eq "g1-50-$U1.qcow2 " "$(vols)" "the placeholder delete removed the killed create's volumes, only them"
assert_eq "frugal-libvirt-locks frugal-libvirt.$$.live" "$(ls "$TMP/tmp" | tr '\n' ' ' | sed 's/ $//')" \
    "the killed run's temp dir is gone, a running one's kept (and the instances' locks)"
assert_ok "placeholder delete again" hook delete g1 frugal://g1/g1-5

log "a re-run create resumes its paused domain, starts its shut-off one"
reset
assert_ok "create" hook create g1 g1-1
ID1=$OUT
U=${ID1##*/}
echo paused >"$FAKE/dom/$U/state"
assert_ok "create re-run, paused" hook create g1 g1-1
assert_eq "$ID1" "$OUT" "prints the stored id"
assert_eq running "$(cat "$FAKE/dom/$U/state")" "the domain runs again"
assert_match "^resume $U" "$(tail -n 1 "$FAKE/log")" "by resume"
echo "shut off" >"$FAKE/dom/$U/state"
assert_ok "create re-run, shut off" hook create g1 g1-1
assert_eq running "$(cat "$FAKE/dom/$U/state")" "started"

log "a domain undefined while it ran (transient: gone once destroyed) is deleted in one go"
touch "$FAKE/dom/$U/transient"
assert_ok "delete" hook delete g1 "$ID1"
assert_eq "/" "$(domains)/$(vols)" "the domain and its volumes are gone"

log "user-data: an @ENV:NAME@ sh cannot pass on fails the create, naming the line"
reset
printf 'token: @ENV:KUBEADM_TOKEN@\nmissing: "@ENV:NOT_SET@"\n' >"$TMP/ud-ok"
printf 'a: 1\ntoken: @ENV:kubeadm-token@\n' >"$TMP/ud-bad"
FRUGAL_PARAM_USER_DATA=$TMP/ud-ok KUBEADM_TOKEN=$'t0k\n' assert_ok "create with a valid name" hook create g1 g1-1
assert_eq "" "$(find "$TMP/tmp" -name 'frugal-libvirt.*' ! -name '*.live')" "no temp dir left"
FRUGAL_PARAM_USER_DATA=$TMP/ud-bad assert_exit 1 "create with kubeadm-token" hook create g1 g1-2
assert_match "cannot render .*ud-bad: .*ud-bad:2: @ENV:kubeadm-token@: a shell script cannot read a variable named kubeadm-token" \
    "$ERR" "the reason, with the line"
assert_eq "g1-1 " "$(domains)" "no domain made"
printf 'host: @HOSTNAME@ @HOME@ @PATH@ @NOPE@\n' >"$TMP/ud-words"
FRUGAL_PARAM_USER_DATA=$TMP/ud-words R_HOME=/leak assert_ok "create with other @words@" hook create g1 g1-3
assert_eq "host: g1-3 @HOME@ @PATH@ @NOPE@" "$(cat "$FAKE/user-data")" \
    "only the listed words are replaced, whatever the environment holds"

log "memory and vcpus: unset is named as unset"
reset
FRUGAL_MEMORY= assert_exit 1 "create without memory" hook create g1 g1-1
assert_match "memory is not set: neither the memory parameter nor FRUGAL_MEMORY$" "$ERR" "memory unset"
FRUGAL_PARAM_MEMORY=0 assert_exit 1 "create with memory 0" hook create g1 g1-1
assert_match "memory: not a memory quantity above 0: '0'$" "$ERR" "memory 0"
FRUGAL_CPU= assert_exit 1 "create without vcpus" hook create g1 g1-1
assert_match "vcpus are not set: neither the vcpus parameter nor FRUGAL_CPU$" "$ERR" "vcpus unset"
assert_eq "/" "$(domains)/$(vols)" "nothing made"

log "disk_size: bytes, or K/M/G/T as qemu-img reads them (20G = 20Gi = 20GiB)"
for size in 2G 2Gi 2GiB 2147483648; do
    reset
    FRUGAL_PARAM_DISK_SIZE=$size assert_ok "disk_size $size" hook create g1 g1-1
    assert_eq 2147483648 "$(cat "$FAKE"/pool/frugal/g1-1-*[0-9a-f].qcow2)" "$size is 2 GiB"
done
for size in 2Gb 2GB; do
    reset
    FRUGAL_PARAM_DISK_SIZE=$size assert_exit 1 "disk_size $size" hook create g1 g1-1
    assert_match "disk_size: not a size: '$size' \\(bytes, or a whole number with K, M, G or T, powers of 1024" "$ERR" "refused"
done

log "two creates of one instance at once: one domain, its volumes kept, both print its id"
reset
echo 1.5 >"$FAKE/sleep/define" # the first run defines while the second looks up
hook create g1 g1-7 >"$TMP/c1.out" 2>"$TMP/c1.err" &
C1=$!
sleep 0.5
hook create g1 g1-7 >"$TMP/c2.out" 2>"$TMP/c2.err" &
C2=$!
wait $C1 && wait $C2 && pass || fail "a create failed: $(cat "$TMP/c1.err" "$TMP/c2.err")"
rm "$FAKE/sleep/define"
assert_match '^libvirt://kvm-1/' "$(cat "$TMP/c1.out")" "the first prints an id"
assert_eq "$(cat "$TMP/c1.out")" "$(cat "$TMP/c2.out")" "the second prints the same id"
U7=$(cat "$TMP/c1.out")
U7=${U7##*/}
assert_eq "g1-7 " "$(domains)" "one domain"
assert_eq "g1-7-$U7-seed.iso g1-7-$U7.qcow2 " "$(vols)" "its volumes are there, no other"

log "memory: what running domains were given counts as taken, free or not"
reset
add_domain "$U1" big running
echo 31000000 >"$FAKE/dom/$U1/mem"
assert_exit 3 "create beside a running domain given 31000000 of 32000000 KiB" hook create g1 g1-1
assert_match "needs 1048576 KiB of memory, host kvm-1 has 32000000 KiB of which 31000000 KiB are promised to its running domains" \
    "$ERR" "says what the running domains were given"
assert_eq "big " "$(domains)" "no domain made"
assert_eq "" "$(vols)" "no volume made"
echo "shut off" >"$FAKE/dom/$U1/state"
assert_ok "create beside the same domain shut off" hook create g1 g1-1

log "memory: two creates at once for room for one: one is made, the other is out of resources"
reset
add_domain "$U1" big running
echo 30000000 >"$FAKE/dom/$U1/mem"
echo 1 >"$FAKE/sleep/vol-create-as" # both pass the first check before either defines
hook create g1 g1-1 >"$TMP/c1.out" 2>"$TMP/c1.err" &
C1=$!
hook create g1 g1-2 >"$TMP/c2.out" 2>"$TMP/c2.err" &
C2=$!
wait $C1
R1=$?
wait $C2
R2=$?
rm "$FAKE/sleep/vol-create-as"
assert_eq "0 3" "$(printf '%s\n' $R1 $R2 | sort | tr '\n' ' ' | sed 's/ $//')" "one create succeeds, one exits 3"
assert_eq 2 "$(ls "$FAKE/dom" | wc -l)" "one domain made beside the big one"
assert_eq 2 "$(vols | wc -w)" "the refused create's volumes are removed"

log "a create killed between define and autostart: the re-run marks the domain autostart"
reset
touch "$FAKE/kill/autostart"
assert_exit 137 "create killed at autostart" hook create g1 g1-1
: >"$FAKE/log"
assert_ok "re-run create" hook create g1 g1-1
assert_match "^autostart $(ls "$FAKE/dom")" "$(cat "$FAKE/log")" "autostart set by the re-run"

log "delete of a domain renamed by hand removes its volumes (found by its UUID)"
reset
assert_ok "create" hook create g1 g1-1
ID1=$OUT
env PATH="$BIN:$PATH" FAKE_VIRSH_DIR="$FAKE" virsh domrename g1-1 renamed-by-hand
assert_ok "delete" hook delete g1 "$ID1"
assert_eq "/" "$(domains)/$(vols)" "the domain and its volumes are gone"

log "a failed destroy is reported with destroy's own error"
reset
assert_ok "create" hook create g1 g1-1
ID1=$OUT
printf "error: Failed to destroy domain 'g1-1'\nerror: operation failed: domain is busy\n" >"$FAKE/fail/destroy"
assert_exit 1 "delete when destroy fails" hook delete g1 "$ID1"
assert_match "cannot stop domain g1-1: operation failed: domain is busy$" "$ERR" "delete names destroy's error"
assert_eq "g1-1 " "$(domains)" "the domain is still there"
rm "$FAKE/fail/destroy"
assert_ok "delete" hook delete g1 "$ID1"
assert_eq "/" "$(domains)/$(vols)" "then a delete removes the domain and its volumes"

finish
