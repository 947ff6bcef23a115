#!/usr/bin/env bash
# The libvirt reference hook (providers/hooks/libvirt/) under the real `frugal serve`,
# against a real libvirtd of the test's own and real QEMU guests (KVM when usable, else
# software emulation) built from Debian packages: a cloud kernel and a busybox initramfs
# whose /init mounts the NoCloud seed and runs its user-data, which prints the instance
# name and provider id on the serial console.
#
# Checked: increase creates running domains whose consoles show their names and ids;
# `ctl nodes` shows the hook's ids; delete-nodes removes the domain and its disks; a kill
# -9 of frugal in the middle of a create, then a restart, leaves one domain per instance;
# a domain removed behind frugal's back is replaced; a stray domain of the group is
# reported, then deleted with reconcile_delete_unknown; a domain larger than the host is
# OutOfResources; an unreachable URI is a plain create failure with the hook's message.
# Prints the times of create, boot and delete (docs/benchmarks.md).
#
# Skipped under the sanitizers (the daemon under test is the same; the guests are slow)
# and where libvirt cannot run (tests/integration/libvirt/daemon.sh).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/libvirt/daemon.sh"

if [ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ]; then
    skip "under sanitizers: the guests dominate, frugal's part is in test_exec_provider"
fi
libvirt_skip_unless_usable

HOOK=$FRUGAL_SOURCE_DIR/providers/hooks/libvirt/frugal-libvirt-hook
PORT=$(free_port)
ADDR="127.0.0.1:$PORT"
STATE=$TMP/state.json
GUEST=$TMP/guest
POOL_DIR=$TMP/pool
CONSOLE=$TMP/console
DTYPE=$(libvirt_domain_type)
mkdir -p "$GUEST" "$POOL_DIR" "$CONSOLE"

log "libvirtd, the guest, the storage pool (domain type $DTYPE)"
start=$SECONDS
libvirt_start
log "libvirtd ($LIBVIRT_MODE mode) ready in $((SECONDS - start)) s"
libvirt_give "$POOL_DIR" "$CONSOLE"
bash "$FRUGAL_SOURCE_DIR/tests/integration/libvirt/build-guest.sh" "$GUEST" || fatal "cannot build the guest"
virsh -q -c "$LIBVIRT_URI" pool-define-as frugal-test dir --target "$POOL_DIR" >/dev/null &&
    virsh -q -c "$LIBVIRT_URI" pool-start frugal-test >/dev/null || fatal "cannot start the pool"
qemu-img create -q -f qcow2 "$POOL_DIR/base.qcow2" 64M || fatal "cannot make the base image"
libvirt_give "$POOL_DIR/base.qcow2"
virsh -q -c "$LIBVIRT_URI" pool-refresh frugal-test >/dev/null || fatal "cannot refresh the pool"
echo "s3cr3t-token" >"$TMP/secret"

# virsh against the test's daemon.
lv() {
    virsh -q -c "$LIBVIRT_URI" "$@"
}

# The hook as provider.command, through a wrapper that holds a create's answer back
# while $TMP/hold-INSTANCE exists (the domain is made, frugal has not heard of it yet).
cat >"$TMP/hook" <<EOF
#!/bin/sh
out=\$("$HOOK" "\$@")
rc=\$?
while [ "\$1" = create ] && [ -f "$TMP/hold-\$3" ]; do sleep 0.1; done
[ -z "\$out" ] || echo "\$out"
exit \$rc
EOF
chmod +x "$TMP/hook"

# write_config DELETE_UNKNOWN: the config, with reconcile_delete_unknown DELETE_UNKNOWN.
write_config() {
    cat >"$TMP/frugal.yaml" <<EOF
listen:
  - address: 127.0.0.1:$PORT
state_file: $STATE
machine_types:
  - {name: vm-small, cpu: 1, memory: 128Mi, price: 0.01}
  - {name: vm-huge, cpu: 1, memory: 64Ti, price: 9}
provider:
  kind: exec
  command: $TMP/hook
  timeout: 60s
  parallelism: 4
  reconcile_interval: 1s
  reconcile_missing_after: 2
  reconcile_delete_unknown: $1
  env_from_files: {LIBVIRT_TEST_SECRET: $TMP/secret}
  params:
    uri: "$LIBVIRT_URI"
    pool: frugal-test
    base_volume: base.qcow2
    domain_type: $DTYPE
    network: none
    kernel: $GUEST/vmlinuz
    initrd: $GUEST/initrd.img
    cmdline: console=ttyS0 quiet
    user_data: $FRUGAL_SOURCE_DIR/tests/integration/libvirt/user-data.sh
    console_log_dir: $CONSOLE
node_groups:
  - id: pool-a
    machine_type: vm-small
    min_size: 0
    max_size: 5
    labels: {team: web}
    taints: [{key: dedicated, value: ci, effect: NoSchedule}]
  - id: pool-big
    machine_type: vm-huge
    min_size: 0
    max_size: 2
  - id: pool-far
    machine_type: vm-small
    min_size: 0
    max_size: 2
    provider_params: {uri: "qemu:///system?socket=$TMP/nowhere/libvirt-sock"}
EOF
}

# The hook run by hand with the group's parameters (to make a stray domain).
hook_direct() {
    FRUGAL_PARAM_URI=$LIBVIRT_URI FRUGAL_PARAM_POOL=frugal-test FRUGAL_PARAM_BASE_VOLUME=base.qcow2 \
        FRUGAL_PARAM_DOMAIN_TYPE=$DTYPE FRUGAL_PARAM_NETWORK=none FRUGAL_PARAM_KERNEL=$GUEST/vmlinuz \
        FRUGAL_PARAM_INITRD=$GUEST/initrd.img FRUGAL_PARAM_CONSOLE_LOG_DIR=$CONSOLE \
        FRUGAL_MEMORY=128Mi FRUGAL_CPU=1 "$HOOK" "$@"
}

now() {
    date +%s.%N
}
elapsed() {
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'
}

# id_of INSTANCE: the provider id frugal shows for the domain named INSTANCE.
id_of() {
    echo "libvirt://$(lv hostname)/$(lv domuuid "$1" 2>/dev/null | head -n 1)"
}

# wait_for SECONDS CMD...: poll CMD every 0.1 s until it succeeds.
wait_for() {
    local limit=$1 i
    shift
    for i in $(seq 1 $((limit * 10))); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}

nodes_match() { # GROUP REGEX
    run ctl nodes "$1"
    echo "$OUT" | grep -Eq -- "$2"
}
console_shows() { # INSTANCE
    grep -aq "^frugal-guest: instance=$1 provider-id=$(id_of "$1") group=pool-a" "$CONSOLE/$1.log" 2>/dev/null
}
domain_gone() { # NAME
    ! lv domuuid "$1" >/dev/null 2>&1
}
domain_count() { # NAME: how many domains have that name (0 or 1) or carry it in metadata
    local n=0 u
    for u in $(lv list --all --uuid); do
        lv metadata "$u" urn:frugal:libvirt-hook:1 2>/dev/null | grep -q "instance=\"$1\"" && n=$((n + 1))
    done
    echo "$n"
}
running_ids() { # GROUP: its running libvirt ids in `ctl nodes`, sorted
    ctl nodes "$1" | awk '$1 ~ /^libvirt:/ && $2 == "running" { print $1 }' | sort
}

write_config false
assert_ok "check accepts the libvirt config" "$FRUGAL" check -c "$TMP/frugal.yaml"
start_server "$TMP/frugal.yaml"

log "increase: two running domains, their consoles show their names and ids"
t0=$(now)
assert_ok "increase pool-a" ctl increase pool-a 2
wait_for 60 nodes_match pool-a "^libvirt://[^ ]+ +running" || fail "no domain ran"
wait_for 60 eval '[ "$(running_ids pool-a | wc -l)" -eq 2 ]' || fail "pool-a never had 2 running"
t_running=$(now)
for i in 1 2; do
    assert_eq running "$(lv domstate pool-a-$i | head -n 1)" "domain pool-a-$i running"
    assert_match "^$(id_of pool-a-$i) +running" "$(ctl nodes pool-a)" "ctl nodes shows pool-a-$i's id"
done
for i in 1 2; do
    wait_for 90 console_shows pool-a-$i || fail "console of pool-a-$i: $(tail -c 400 "$CONSOLE/pool-a-$i.log" 2>/dev/null)"
done
t_console=$(now)
assert_match "labels=.*team=web.* taints=dedicated=ci:NoSchedule secret=s3cr3t-token end$" \
    "$(tr -d '\r' <"$CONSOLE/pool-a-1.log")" \
    "user-data got the node labels, taints and the secret (its file's line end dropped)"
assert_match "instance-id: [0-9a-f-]{36} local-hostname: pool-a-1" "$(tr -d '\r' <"$CONSOLE/pool-a-1.log")" \
    "meta-data names the domain"
assert_match "root disk vda: 131072 sectors" "$(tr -d '\r' <"$CONSOLE/pool-a-1.log")" "the overlay is the root disk"
ID1=$(id_of pool-a-1)
assert_match "<memory unit='KiB'>131072</memory>" "$(lv dumpxml pool-a-1)" "memory of the machine type"
assert_match "<vcpu[^>]*>1</vcpu>" "$(lv dumpxml pool-a-1)" "vcpus of the machine type"
assert_match "backing file: $POOL_DIR/base.qcow2" "$(qemu-img info -U "$POOL_DIR/pool-a-1-${ID1##*/}.qcow2")" \
    "the root disk is an overlay of the base image"
log "timing: create to running $(elapsed "$t0" "$t_running") s, running to console line $(elapsed "$t_running" "$t_console") s ($DTYPE)"

log "delete-nodes removes the domain and its disks"
t0=$(now)
assert_ok "delete-nodes" ctl delete-nodes pool-a "$ID1"
wait_for 30 domain_gone pool-a-1 || fail "domain pool-a-1 still defined"
wait_for 30 eval '! nodes_match pool-a "^$ID1 "' || fail "ctl nodes still shows $ID1"
log "timing: delete $(elapsed "$t0" "$(now)") s"
assert_eq "" "$(ls "$POOL_DIR" | grep '^pool-a-1')" "pool-a-1's overlay and seed are gone"
assert_eq running "$(lv domstate pool-a-2 | head -n 1)" "pool-a-2 still runs"

log "kill -9 during a create, then a restart: one domain per instance"
touch "$TMP/hold-pool-a-3"
assert_ok "increase pool-a" ctl increase pool-a 1
wait_for 60 eval 'lv domstate pool-a-3 2>/dev/null | grep -q running' || fail "pool-a-3 not made"
kill_server_hard
rm -f "$TMP/hold-pool-a-3"
start_server "$TMP/frugal.yaml"
wait_for 60 eval '[ "$(running_ids pool-a | wc -l)" -eq 2 ]' || fail "pool-a-3 not running after the restart"
assert_eq 1 "$(domain_count pool-a-3)" "one domain for pool-a-3"
assert_match "^$(id_of pool-a-3) +running" "$(ctl nodes pool-a)" "frugal holds pool-a-3's domain"
assert_eq 2 "$(lv list --all --name | grep -c '^pool-a-')" "two domains in all"

log "a domain removed behind frugal's back is replaced"
ID2=$(id_of pool-a-2)
lv destroy pool-a-2 >/dev/null && lv undefine pool-a-2 >/dev/null || fail "cannot remove pool-a-2"
wait_for 60 eval '! nodes_match pool-a "^$ID2 " && [ "$(running_ids pool-a | wc -l)" -eq 2 ]' ||
    fail "pool-a-2 not replaced: $(ctl nodes pool-a)"
assert_eq 2 "$(target_size pool-a)" "the target is kept"
assert_eq 2 "$(lv list --name | grep -c '^pool-a-')" "two running domains again"
assert_match "instance $ID2 of pool-a is running but missing from 2 lists.*replaced by" \
    "$(cat "$SERVER_LOG")" "the replacement is logged"
wait_for 20 eval '! ls "$POOL_DIR" | grep -q "^pool-a-2-"' || fail "the vanished domain's disks are left"

log "a stray domain of the group is reported, then deleted"
STRAY=$(hook_direct create pool-a stray-1) || fail "cannot make a stray domain"
wait_for 20 eval 'grep -q "machine $STRAY.* listed by the hook for node group pool-a" "$SERVER_LOG"' ||
    fail "the stray is not reported"
assert_eq running "$(lv domstate stray-1 | head -n 1)" "reported, not deleted"
stop_server
write_config true
start_server "$TMP/frugal.yaml"
wait_for 30 domain_gone stray-1 || fail "the stray is not deleted with reconcile_delete_unknown"
assert_eq "" "$(ls "$POOL_DIR" | grep '^stray-1')" "the stray's disks are gone"
assert_eq 2 "$(running_ids pool-a | wc -l)" "frugal's own domains stay"

log "a domain larger than the host is OutOfResources; an unreachable URI is not"
assert_ok "increase pool-big" ctl increase pool-big 1
wait_for 30 nodes_match pool-big "OutOfResources" || fail "no OutOfResources"
assert_match "OutOfResources +1 +libvirt hook: domain needs [0-9]+ KiB of memory" "$OUT" \
    "class 1 with the hook's reason"
assert_eq "" "$(lv list --all --name | grep '^pool-big')" "no domain made"
assert_ok "increase pool-far" ctl increase pool-far 1
wait_for 30 nodes_match pool-far "CreateFailed" || fail "no CreateFailed for the unreachable URI"
assert_match "CreateFailed +99 +.*cannot reach libvirt at qemu:///system" "$OUT" "the hook's message"
stop_server

finish
