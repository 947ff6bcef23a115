#!/usr/bin/env bash
# Hook parameters through the real server: provider.params, machine_types[] and
# node_groups[] provider_params (merged, the group wins) and env_from_files reach the hook
# with the FRUGAL_SPOT/GPU/PRICE/NODE_LABELS/NODE_TAINTS description; bad keys, values and
# files are refused with FILE:LINE:COL by `frugal check` and `frugal serve`; a provider id
# with whitespace is refused and changes nothing; a reload gives later hooks the new
# parameters, and a reload with an unreadable file keeps the running ones. Also: `frugal
# serve` warns when the simulated provider serves a listener other machines can reach.
source "$(dirname "$0")/lib.sh"

PORT=$(free_port)
ADDR="127.0.0.1:$PORT"
HOOK="$TMP/hook"
SECRET="$TMP/secret"
CFG="$TMP/frugal.yaml"

# The hook writes its environment for each create to $TMP/env-INSTANCE and prints an id
# (with a space when $TMP/bad-id exists).
cat >"$HOOK" <<HOOK_EOF
#!/bin/bash
D=$TMP
case \$1 in
create)
    env | grep -E '^(FRUGAL_|OS_TOKEN=)' | sort > \$D/env-\$3
    if [ -f \$D/bad-id ]; then echo "vm \$3"; else echo "test://\$3"; fi
    ;;
esac
exit 0
HOOK_EOF
chmod +x "$HOOK"
printf 'tok-1' >"$SECRET"

# write_config IMAGE: the config, with params.image = IMAGE.
write_config() {
    cat >"$CFG" <<CONFIG_EOF
listen:
  - address: 127.0.0.1:$PORT
provider:
  kind: exec
  command: $HOOK
  timeout: 20s
  params:
    image: $1
    libvirt.uri: qemu:///system
    user-data: default
  env_from_files:
    OS_TOKEN: $SECRET
machine_types:
  - name: gpu-box
    cpu: 8
    memory: 32Gi
    gpu: 1
    gpu_type: nvidia-tesla-t4
    price: 2.5
    spot_price: 0.75
    provider_params: {flavor: g1, user-data: typed}
node_groups:
  - id: pool-a
    machine_type: gpu-box
    zone: europe-west4-b
    min_size: 0
    max_size: 5
    spot: true
    labels: {team: ml}
    taints: [{key: gpu, value: "yes", effect: NoSchedule}]
    provider_params: {user.data: "#cloud-config"}
CONFIG_EOF
}

# wait_file PATH: at most 10 s.
wait_file() {
    local i
    for i in $(seq 1 100); do
        [ -s "$1" ] && return 0
        sleep 0.1
    done
    return 1
}

write_config debian-12
assert_ok "check accepts parameters" "$FRUGAL" check -c "$CFG"
start_server "$CFG"

log "parameters and description reach the hook"
assert_ok "increase pool-a" ctl increase pool-a 1
wait_file "$TMP/env-pool-a-1" || fail "create never ran"
ENV1=$(cat "$TMP/env-pool-a-1")
assert_match "^FRUGAL_PARAM_IMAGE=debian-12$" "$ENV1" "provider.params"
assert_match "^FRUGAL_PARAM_LIBVIRT_URI=qemu:///system$" "$ENV1" "dots become underscores"
assert_match "^FRUGAL_PARAM_FLAVOR=g1$" "$ENV1" "the machine type's params"
assert_match "^FRUGAL_PARAM_USER_DATA=#cloud-config$" "$ENV1" "the group's params win"
assert_match "^OS_TOKEN=tok-1$" "$ENV1" "env_from_files"
assert_match "^FRUGAL_SPOT=true$" "$ENV1" "FRUGAL_SPOT"
assert_match "^FRUGAL_GPU=1$" "$ENV1" "FRUGAL_GPU"
assert_match "^FRUGAL_GPU_TYPE=nvidia-tesla-t4$" "$ENV1" "FRUGAL_GPU_TYPE"
assert_match "^FRUGAL_PRICE=0.75$" "$ENV1" "FRUGAL_PRICE is the spot price frugal ranks with"
assert_match "^FRUGAL_NODE_LABELS=cloud.google.com/gke-accelerator=nvidia-tesla-t4,node.kubernetes.io/instance-type=gpu-box,team=ml,topology.kubernetes.io/region=europe-west4,topology.kubernetes.io/zone=europe-west4-b$" \
    "$ENV1" "FRUGAL_NODE_LABELS in --node-labels syntax"
assert_match "^FRUGAL_NODE_TAINTS=gpu=yes:NoSchedule$" "$ENV1" "FRUGAL_NODE_TAINTS"

log "a provider id with whitespace is refused"
touch "$TMP/bad-id"
assert_ok "increase pool-a" ctl increase pool-a 1
wait_file "$TMP/env-pool-a-2" || fail "second create never ran"
for _ in $(seq 1 100); do
    run ctl nodes pool-a
    echo "$OUT" | grep -q CreateFailed && break
    sleep 0.1
done
assert_match "^frugal://pool-a/pool-a-2 +creating +CreateFailed +99 +hook create printed a provider id that holds whitespace at byte 3" \
    "$OUT" "the bad id is refused with the reason"
assert_no_match "vm pool-a-2" "$OUT" "the bad id is not used"
assert_match "^test://pool-a-1 +running" "$OUT" "the other instance is untouched"
rm -f "$TMP/bad-id"
assert_ok "decrease drops it" ctl decrease pool-a -1

log "a reload gives later hooks the new parameters"
# The file first: the server also reloads on its own when the config file changes.
printf 'tok-2' >"$SECRET"
write_config ubuntu-24
kill -HUP "$SERVER_PID"
for _ in $(seq 1 50); do grep -q 'reloaded (SIGHUP)' "$SERVER_LOG" && break; sleep 0.1; done
assert_ok "increase after the reload" ctl increase pool-a 1
wait_file "$TMP/env-pool-a-3" || fail "third create never ran"
ENV3=$(cat "$TMP/env-pool-a-3")
assert_match "^FRUGAL_PARAM_IMAGE=ubuntu-24$" "$ENV3" "the reloaded parameter"
assert_match "^OS_TOKEN=tok-2$" "$ENV3" "the file is read again at the reload"

log "a reload with an unreadable file is refused and keeps the running parameters"
chmod 000 "$SECRET"
if [ "$(id -u)" -eq 0 ]; then
    rm -f "$SECRET" # root reads any file: make it missing instead
fi
write_config fedora
kill -HUP "$SERVER_PID"
for _ in $(seq 1 50); do grep -q 'reload (SIGHUP) refused' "$SERVER_LOG" && break; sleep 0.1; done
assert_match "frugal.yaml:12:15: provider.env_from_files.OS_TOKEN: cannot read $SECRET" \
    "$(cat "$SERVER_LOG")" "the reload names the file with FILE:LINE:COL"
assert_ok "increase after the refused reload" ctl increase pool-a 1
wait_file "$TMP/env-pool-a-4" || fail "fourth create never ran"
assert_match "^FRUGAL_PARAM_IMAGE=ubuntu-24$" "$(cat "$TMP/env-pool-a-4")" "still the running params"
stop_server

log "bad input is refused at start with FILE:LINE:COL"
printf 'tok' >"$SECRET"
chmod 600 "$SECRET"
bad_config() {
    cat >"$TMP/bad.yaml" <<CONFIG_EOF
provider:
  kind: exec
  command: $HOOK
$1
CONFIG_EOF
}
bad_config "  params: {'a b': x}"
assert_exit 1 "check refuses a bad key" "$FRUGAL" check -c "$TMP/bad.yaml"
assert_match "bad.yaml:4:12: provider.params.a b: invalid parameter name \"a b\": must match \[A-Za-z0-9_.-\]\+" \
    "$ERR" "bad key"
bad_config "  params: {image-url: x, image.url: y}"
assert_exit 1 "check refuses colliding keys" "$FRUGAL" check -c "$TMP/bad.yaml"
assert_match "bad.yaml:4:26: provider.params.image.url: \"image.url\" and \"image-url\" \(line 4\) are both passed as FRUGAL_PARAM_IMAGE_URL" \
    "$ERR" "colliding keys"
bad_config "  params: {big: $(head -c 4097 /dev/zero | tr '\0' x)}"
assert_exit 1 "check refuses a value over 4 KiB" "$FRUGAL" check -c "$TMP/bad.yaml"
assert_match "bad.yaml:4:17: provider.params.big: value is longer than 4 KiB" "$ERR" "big value"
bad_config "  env_from_files: {TOKEN: $TMP/missing}"
assert_exit 1 "serve refuses an unreadable file" "$FRUGAL" serve -c "$TMP/bad.yaml" --init-state
assert_match "bad.yaml:4:27: provider.env_from_files.TOKEN: cannot read $TMP/missing: No such file or directory" \
    "$ERR" "missing file"

log "serve warns when the simulated provider is reachable from other machines"
cat >"$TMP/sim.yaml" <<CONFIG_EOF
allow_insecure: true
listen:
  - address: 0.0.0.0:$PORT
CONFIG_EOF
start_server "$TMP/sim.yaml"
assert_match "warn +provider kind simulated on listener 0.0.0.0:$PORT, which other machines can reach" \
    "$(cat "$SERVER_LOG")" "the warning names the listener"
stop_server
cat >"$TMP/sim.yaml" <<CONFIG_EOF
listen:
  - address: 127.0.0.1:$PORT
CONFIG_EOF
start_server "$TMP/sim.yaml"
assert_no_match "provider kind simulated on listener" "$(cat "$SERVER_LOG")" "no warning on loopback"
stop_server

finish
