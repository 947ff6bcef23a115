#!/usr/bin/env bash
# Concurrent IncreaseSize calls never overshoot max_size: 40 parallel `increase g 1`
# against max_size 10 give exactly 10 successes, 30 FAILED_PRECONDITION, target 10.
source "$(dirname "$0")/lib.sh"

PORT=$(free_port)
ADDR="127.0.0.1:$PORT"
cat >"$TMP/frugal.yaml" <<EOF
listen:
  - address: 127.0.0.1:$PORT
state_file: $TMP/frugal.state
provider:
  kind: simulated
  boot_seconds: 0
node_groups:
  - id: g
    machine_type: n1-standard-2
    min_size: 0
    max_size: 10
  - id: other
    machine_type: n1-standard-2
    min_size: 0
    max_size: 100
EOF
start_server "$TMP/frugal.yaml"

run_parallel() {
    local n=$1 group=$2 i
    local pids=()
    mkdir -p "$TMP/par"
    rm -f "$TMP/par/"*
    for i in $(seq 1 "$n"); do
        (
            "$FRUGAL" ctl --addr "$ADDR" --timeout 20000 increase "$group" 1 >/dev/null 2>"$TMP/par/$i.err"
            echo $? >"$TMP/par/$i.rc"
        ) &
        pids+=($!)
    done
    wait "${pids[@]}"
}

log "40 parallel increases against max_size 10"
run_parallel 40 g
ok=$(cat "$TMP"/par/*.rc | grep -c '^0$')
refused=$(cat "$TMP"/par/*.err | grep -c '^FAILED_PRECONDITION: ')
assert_eq 40 "$(ls "$TMP"/par/*.rc | wc -l)" "every client finished"
assert_eq 10 "$ok" "exactly max_size increases succeed"
assert_eq 30 "$refused" "the others are FAILED_PRECONDITION"
assert_eq 10 "$(target_size g)" "target is max_size"
run ctl -o yaml nodes g
assert_eq 10 "$(echo "$OUT" | grep -c '^- id: ')" "10 instances"
assert_eq 10 "$(echo "$OUT" | sed -n 's/^- id: //p' | sort -u | wc -l)" "instance ids are unique"

log "parallel increases on a roomy group all succeed"
run_parallel 30 other
assert_eq 30 "$(cat "$TMP"/par/*.rc | grep -c '^0$')" "30 of 30 succeed"
assert_eq 30 "$(target_size other)" "no increase lost under contention"
assert_eq 10 "$(target_size g)" "g unaffected"

log "the counts survive a restart"
stop_server
start_server "$TMP/frugal.yaml"
assert_eq 10 "$(target_size g)" "g after restart"
assert_eq 30 "$(target_size other)" "other after restart"
stop_server

finish
