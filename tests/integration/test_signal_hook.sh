#!/usr/bin/env bash
# SIGTERM while a group hook holds the cluster: the server starts draining at once (the
# periodic refresh of its signal loop skips a tick rather than wait behind the hook),
# the call that runs the hook still finishes within the grace, and its change persists.
# Meanwhile /readyz says "draining".
source "$(dirname "$0")/lib.sh"

PORT=$(free_port)
ADDR="127.0.0.1:$PORT"
OPS=$(free_port)
while [ "$OPS" = "$PORT" ]; do OPS=$(free_port); done
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
ops_listen: 127.0.0.1:$OPS
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
# readiness CODE BODY: what /readyz answers
readiness() { curl -s --max-time 3 -o "$TMP/ready.body" -w '%{http_code}' "http://127.0.0.1:$OPS/readyz"; echo " $(cat "$TMP/ready.body")"; }
assert_eq "200 ready" "$(readiness)" "ready while serving"
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
assert_eq "503 draining" "$(readiness)" "/readyz says draining while the call finishes"
wait "$CREATE"
assert_eq 0 "$?" "the in-flight create finishes within the grace: $(cat "$TMP/create.out")"
wait "$SERVER_PID"
assert_eq 0 "$?" "exit 0 after the drain"
SERVER_PID=""
assert_match "$GROUP" "$(cat "$STATE")" "the created group is persisted"

finish
