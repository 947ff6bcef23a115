#!/usr/bin/env bash
# Client keepalive (docs/limits.md, "Keepalive pings"): a connection without calls that
# pings every 10 s (grpc-go's keepalive.ClientParameters{Time: 10s, PermitWithoutStream:
# true}, the shortest Time grpc-go allows) is answered and kept; one that pings every
# 0.5 s gets gRPC's GOAWAY "too_many_pings" after its third early ping.
source "$(dirname "$0")/lib.sh"

H2="python3 $FRUGAL_SOURCE_DIR/tests/integration/h2raw.py"
PORT=$(free_port)
ADDR="127.0.0.1:$PORT"
cat >"$TMP/frugal.yaml" <<EOF
listen:
  - address: $ADDR
state_file: $TMP/state.yaml
node_groups:
  - {id: web-a, machine_type: n1-standard-2, min_size: 0, max_size: 3}
EOF
start_server "$TMP/frugal.yaml"

log "pings every 10 s without calls (4 pings), and every 0.5 s (6 pings), on two connections"
$H2 pings "$ADDR" 4 10 >"$TMP/slow.txt" 2>&1 &
SLOW=$!
run $H2 pings "$ADDR" 6 0.5
echo "    every 0.5 s: $OUT $ERR" >&2
assert_match "goaway=1 debug=too_many_pings" "$OUT" "pings every 0.5 s: GOAWAY too_many_pings"
wait "$SLOW"
echo "    every 10 s: $(cat "$TMP/slow.txt")" >&2
assert_match "^sent=4 acks=4 goaway=0 debug=- closed=0 " "$(cat "$TMP/slow.txt")" \
    "pings every 10 s without calls: every one answered, no GOAWAY"
assert_ok "serving after" ctl health
stop_server

finish
