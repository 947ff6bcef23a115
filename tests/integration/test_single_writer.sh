#!/usr/bin/env bash
# One writer per state file. The split-brain reproduction: two `frugal serve` with the
# same config used to both bind the port (SO_REUSEPORT) and both write the state file,
# so acknowledged increases were lost. Now the second exits 1 at once naming the first's
# pid, every increase reaches the one server, and the state file holds them all.
source "$(dirname "$0")/lib.sh"

PORT=$(free_port)
ADDR="127.0.0.1:$PORT"
cat >"$TMP/frugal.yaml" <<EOF
listen: [{address: "$ADDR"}]
state_file: $TMP/state
node_groups:
  - {id: web-a, machine_type: n1-standard-2, min_size: 0, max_size: 10}
EOF

start_server "$TMP/frugal.yaml"
first=$SERVER_PID

log "a second instance on the same state file exits 1 at once"
start=$(date +%s)
run timeout 10 "$FRUGAL" serve -c "$TMP/frugal.yaml"
assert_eq 1 "$RC" "the second serve exits 1"
assert_match "pid $first" "$ERR" "the message names the holder's pid"
assert_match "$TMP/state" "$ERR" "the message names the state file"
assert_eq 1 "$(( $(date +%s) - start <= 3 ))" "it exits at once"
# with JSON logs every line of stderr parses, the refusal included
run timeout 10 "$FRUGAL" serve -c "$TMP/frugal.yaml" --log-format json
assert_eq 1 "$RC" "the second serve exits 1 (JSON logs)"
run python3 -c '
import json, sys
lines = sys.stdin.read().splitlines()
events = [json.loads(l) for l in lines]
print([e["level"] for e in events if "pid" in e["msg"] and "only one process" in e["msg"]])
' <<<"$ERR"
assert_eq "['error']" "$OUT" "the refusal is one JSON error line [$ERR]"

log "the same state file behind another port is refused too"
OTHER=$(free_port)
sed "s/:$PORT/:$OTHER/" "$TMP/frugal.yaml" >"$TMP/other.yaml"
run timeout 10 "$FRUGAL" serve -c "$TMP/other.yaml"
assert_eq 1 "$RC" "another port, same state file: exit 1"
assert_match "pid $first" "$ERR" "names the holder"

log "no port sharing: another state file on the same port fails to bind"
sed "s|state_file: .*|state_file: $TMP/state2|" "$TMP/frugal.yaml" >"$TMP/port.yaml"
run timeout 10 "$FRUGAL" serve -c "$TMP/port.yaml" --init-state
assert_eq 1 "$RC" "same port, other state file: exit 1"
assert_match "cannot listen on $ADDR" "$ERR" "the bind failure is named"

log "a busy second listener: exit 1 naming it, not an abort (the first had bound)"
FREE=$(free_port)
printf 'listen: [{address: "127.0.0.1:%s"}, {address: "%s"}]\nstate_file: %s\n' \
    "$FREE" "$ADDR" "$TMP/state3" >"$TMP/second.yaml"
run timeout 10 "$FRUGAL" serve -c "$TMP/second.yaml" --init-state
assert_eq 1 "$RC" "the second listener's port is taken: exit 1"
assert_match "cannot listen on $ADDR" "$ERR" "the busy listener is named"

log "the reproduction: six increases, all acknowledged, all kept"
for i in 1 2 3 4 5 6; do
    assert_ok "increase web-a 1 (#$i)" ctl increase web-a 1
done
assert_eq 6 "$(target_size web-a)" "target after six increases"
assert_eq "$first" "$SERVER_PID" "the first server is still the one serving"
stop_server
assert_match 'target=6' "$(grep 'id=web-a' "$TMP/state")" "the state file holds all six"

log "once the holder stopped, a new instance takes over"
start_server "$TMP/frugal.yaml"
assert_eq 6 "$(target_size web-a)" "resumed from the state file"
assert_eq "$SERVER_PID" "$(tr -d '\n' <"$TMP/state.lock")" "the lock file names the new holder"
stop_server

log "a unix socket in use is not taken over (gRPC would remove its file and bind anew)"
SOCK="$TMP/frugal.sock"
printf 'listen: [{address: "unix:%s"}]\nstate_file: %s\nnode_groups: [{id: u, machine_type: n1-standard-2, max_size: 3}]\n' \
    "$SOCK" "$TMP/state-u1" >"$TMP/u1.yaml"
sed "s|state-u1|state-u2|" "$TMP/u1.yaml" >"$TMP/u2.yaml"
ADDR="unix:$SOCK" start_server "$TMP/u1.yaml" --addr "unix:$SOCK"
assert_ok "increase through the socket" "$FRUGAL" ctl --addr "unix:$SOCK" increase u 2
run timeout 10 "$FRUGAL" serve -c "$TMP/u2.yaml" --init-state
assert_eq 1 "$RC" "a second server on the same socket exits 1"
assert_match "cannot listen on unix:$SOCK: another server is listening on it" "$ERR" "naming the socket"
assert_ok "the first still answers on it" "$FRUGAL" ctl --addr "unix:$SOCK" target-size u
assert_match '^2$' "$OUT" "with its own state"
stop_server
log "a stale socket file (no server) is replaced"
rm -f "$TMP/state-u1.lock"
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$SOCK" 2>/dev/null || touch "$SOCK"
ADDR="unix:$SOCK" start_server "$TMP/u1.yaml" --addr "unix:$SOCK"
assert_ok "serves on the replaced socket" "$FRUGAL" ctl --addr "unix:$SOCK" target-size u
stop_server
finish
