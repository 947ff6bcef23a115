#!/usr/bin/env bash
# A well-behaved client is never taken for a rapid-reset flood (docs/limits.md, "Closing
# a flooding connection"): one connection, 24 streams at a time (under the 32 of
# limits.max_concurrent_streams), calls whose 150 ms deadline passes while the server
# holds them (changes parked behind slow create-group hooks), each reset by the client
# at its deadline (RST_STREAM CANCEL, as grpc-go does) and followed at once by the next.
# frugal holds far more of them than the connection has streams open, but their streams
# are closed: the connection is not closed, and a last call on it is answered.
source "$(dirname "$0")/lib.sh"

H2="python3 $FRUGAL_SOURCE_DIR/tests/integration/h2raw.py"
PORT=$(free_port)
OPS=$(free_port)
ADDR="127.0.0.1:$PORT"
GROUP=nap-n1-standard-2-us-central1-a
CLIENT_S=6

# create-group holds the cluster for 2.5 s, then fails (nothing changes): calls to it
# in a loop keep the workers that may run changes busy, and the client's changes park.
cat >"$TMP/hook" <<'HOOK_EOF'
#!/bin/sh
[ "$1" = create-group ] && { sleep 2.5; echo "refused for the test" >&2; exit 1; }
exit 0
HOOK_EOF
chmod +x "$TMP/hook"
cat >"$TMP/frugal.yaml" <<EOF
listen:
  - address: $ADDR
ops_listen: 127.0.0.1:$OPS
state_file: $TMP/state.yaml
provider: {kind: exec, command: $TMP/hook}
node_groups:
  - {id: web-a, machine_type: n1-standard-2, zone: us-central1-a, max_size: 3}
autoprovisioning:
  enabled: true
  machine_types: [n1-standard-2]
  zones: [us-central1-a]
EOF

# metric NAME: its value on /metrics, 0 when it has no sample.
metric() {
    curl -s --max-time 5 "http://127.0.0.1:$OPS/metrics" |
        awk -v m="$1" 'index($0, m " ") == 1 { v = $2 } END { print v + 0 }'
}

start_server "$TMP/frugal.yaml"

log "24 streams of 150 ms calls reset at their deadline, for $CLIENT_S s, while changes park"
HOLDERS=()
for h in 1 2 3; do
    ( while [ ! -e "$TMP/stop" ]; do ctl --timeout 10000 create "$GROUP" >/dev/null 2>&1; done ) &
    HOLDERS+=($!)
done
sleep 1 # the three holders run
( while [ ! -e "$TMP/stop" ]; do metric frugal_changes_parked; sleep 0.2; done ) >"$TMP/parked.txt" &
SAMPLER=$!
run $H2 deadlines "$ADDR" $CLIENT_S 24 150 no-such-group
touch "$TMP/stop"
wait "${HOLDERS[@]}" "$SAMPLER"
echo "    client: $OUT $ERR" >&2
PARKED_MAX=$(sort -n "$TMP/parked.txt" | tail -1)
echo "    changes parked at most: $PARKED_MAX" >&2

# The scene is set: the server held the client's calls past their deadline, and the
# client reset them and went on.
[ "${PARKED_MAX:-0}" -ge 65 ] && pass ||
    fail "the client's changes did not pile up past 2 x 32 (at most $PARKED_MAX parked)"
reset=$(echo "$OUT" | sed -n 's/.*reset=\([0-9]*\).*/\1/p')
[ "${reset:-0}" -ge 200 ] && pass || fail "the client reset few calls at their deadline: $OUT"

assert_match "closed=0 " "$OUT" "the client's connection stayed open"
assert_match "failed=0 " "$OUT" "no call failed for a closed connection"
assert_match "final=ok " "$OUT" "a last call on the same connection is answered"
assert_eq 0 "$(metric frugal_connections_closed_total)" "frugal_connections_closed_total"
assert_no_match "closed the connection of" "$(cat "$SERVER_LOG")" "no close is logged"
assert_ok "serving after" ctl health
stop_server

finish
