#!/usr/bin/env bash
# SIGTERM while a group hook holds the cluster: the server starts draining at once (the
# periodic refresh of its signal loop skips a tick rather than wait behind the hook),
# the call that runs the hook still finishes within the grace, and its change persists.
source "$(dirname "$0")/lib.sh"

PORT=$(free_port)
ADDR="127.0.0.1:$PORT"
STATE="$TMP/state.yaml"
GROUP=nap-n1-standard-2-us-central1-a

cat >"$TMP/hook" <<HOOK_EOF
#!/bin/sh
echo "\$*" >> $TMP/calls
[ "\$1" = create-group ] && sleep 2.8
exit 0
HOOK_EOF
chmod +x "$TMP/hook"
cat >"$TMP/frugal.yaml" <<CONFIG_EOF
listen:
  - address: $ADDR
state_file: $STATE
provider: {kind: exec, command: $TMP/hook}
node_groups:
  - {id: web-a, machine_type: n1-standard-2, zone: us-central1-a, max_size: 3}
autoprovisioning:
  enabled: true
  machine_types: [n1-standard-2]
  zones: [us-central1-a]
CONFIG_EOF

log "SIGTERM during a 2.8 s create-group hook, once the 1 s tick has come"
start_server "$TMP/frugal.yaml"
ctl create "$GROUP" >"$TMP/create.out" 2>&1 &
CREATE=$!
for _ in $(seq 1 50); do grep -q '^create-group' "$TMP/calls" 2>/dev/null && break; sleep 0.05; done
assert_match "create-group $GROUP" "$(cat "$TMP/calls" 2>/dev/null)" "the hook runs"
sleep 1.2 # a tick of the signal loop has come during the hook
kill -TERM "$SERVER_PID"
t0=$(date +%s%N)
seen=0
for _ in $(seq 1 20); do
    grep -q 'received SIGTERM: draining' "$SERVER_LOG" && { seen=1; break; }
    sleep 0.05
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "    draining logged $ms ms after SIGTERM"
assert_eq 1 "$seen" "draining starts within 1 s, while the hook still runs"
assert_eq 1 "$(kill -0 "$CREATE" 2>/dev/null && echo 1 || echo 0)" "the create call is still in flight"
wait "$CREATE"
assert_eq 0 "$?" "the in-flight create finishes within the grace: $(cat "$TMP/create.out")"
wait "$SERVER_PID"
assert_eq 0 "$?" "exit 0 after the drain"
SERVER_PID=""
assert_match "$GROUP" "$(cat "$STATE")" "the created group is persisted"

finish
