#!/usr/bin/env bash
# The etcd state backend against a real one-member etcd: two replicas that both serve,
# max_size held under a race between them, the leader's failover and fencing, etcd
# unavailable (mutations UNAVAILABLE within the deadline, reads from the cache,
# recovery), a leader whose own clock ran out renewing the lease etcd kept, and the bad
# inputs refused before anything is written.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/etcd_lib.sh"

etcd_start 1
P1=$(free_port)
P2=$(free_port)
replica_config "$TMP/r1.yaml" "$P1" /frugal/t/
replica_config "$TMP/r2.yaml" "$P2" /frugal/t/
O1=$(free_port)
O2=$(free_port)
echo "ops_listen: 127.0.0.1:$O1" >>"$TMP/r1.yaml"
echo "ops_listen: 127.0.0.1:$O2" >>"$TMP/r2.yaml"
# metric OPS_PORT NAME: the value of an unlabelled sample on that replica's /metrics.
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n { print $2 }'; }
# metric_l OPS_PORT SERIES: the value of one labelled series (0 when absent).
metric_l() { curl -s "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n { v = $2 } END { print v + 0 }'; }
# converge ADDR GROUP N: wait (5 s at most) until the replica at ADDR shows GROUP at N;
# another replica's write reaches it through its Watch.
converge() { local i; for i in $(seq 1 50); do [ "$(ADDR=$1 target_size "$2")" = "$3" ] && return; sleep 0.1; done; }
R1="127.0.0.1:$P1"
R2="127.0.0.1:$P2"

ADDR=$R1 start_server "$TMP/r1.yaml"
PID1=$SERVER_PID LOG1=$SERVER_LOG
ADDR=$R2 start_server "$TMP/r2.yaml"
PID2=$SERVER_PID LOG2=$SERVER_LOG

log "both replicas serve, each sees the other's changes"
ADDR=$R1 assert_ok "increase on r1" ctl increase web-a 2
ADDR=$R2 assert_ok "increase on r2" ctl increase web-a 3
converge "$R1" web-a 5
assert_eq 5 "$(ADDR=$R1 target_size web-a)" "r1 sees 5"
assert_eq 5 "$(ADDR=$R2 target_size web-a)" "r2 sees 5"
assert_match "target=5" "$(etcd_get /frugal/t/groups/web-a)" "etcd holds the group"
assert_eq "frugal-state-etcd version=1" "$(etcd_get /frugal/t/schema)" "the schema key"

log "a race on one group never exceeds max_size (10): 12 increases by 1 across both"
for i in $(seq 1 6); do
    (ADDR=$R1 ctl increase web-a 1 >"$TMP/race1.$i" 2>&1; echo $? >>"$TMP/race1.$i") &
    (ADDR=$R2 ctl increase web-a 1 >"$TMP/race2.$i" 2>&1; echo $? >>"$TMP/race2.$i") &
done
wait_jobs() { local j; for j in $(jobs -p); do case " ${ALL_SERVER_PIDS[*]} " in *" $j "*) ;; *) wait "$j";; esac; done; }
wait_jobs
ok=$(cat "$TMP"/race*.* | grep -cx 0)
converge "$R1" web-a 10
converge "$R2" web-a 10
assert_eq 10 "$(ADDR=$R1 target_size web-a)" "r1: target exactly max_size"
assert_eq 10 "$(ADDR=$R2 target_size web-a)" "r2: target exactly max_size"
assert_eq 5 "$ok" "exactly 5 increases acknowledged"
assert_match "FAILED_PRECONDITION" "$(cat "$TMP"/race*.*)" "the losers get a precise error"

log "one leader for provider work"
leaders=$(grep -l "info  leader:" "$LOG1" "$LOG2" | wc -l)
assert_eq 1 "$leaders" "exactly one replica became leader"
assert_eq 1 "$(( $(metric "$O1" frugal_state_leader) + $(metric "$O2" frugal_state_leader) ))" \
    "metrics: exactly one frugal_state_leader is 1"
assert_match 'frugal_etcd_request_seconds_count\{method="/etcdserverpb.KV/Txn",outcome="ok"\}' \
    "$(curl -s "http://127.0.0.1:$O1/metrics")" "metrics: etcd request latency by method and outcome"
for o in "$O1" "$O2"; do
    for reason in conflict fenced; do
        assert_match "frugal_etcd_txn_refused_total\\{reason=\"$reason\"\\} [0-9]" \
            "$(curl -s "http://127.0.0.1:$o/metrics")" "metrics: refused transactions ($reason) exported"
    done
done
# Whether two of the race's transactions met in etcd depends on timing: when some did,
# the loser's refusal is counted (and retried: the totals above hold either way).
lost=$(( $(metric_l "$O1" 'frugal_etcd_txn_refused_total{reason="conflict"}') +
         $(metric_l "$O2" 'frugal_etcd_txn_refused_total{reason="conflict"}') ))
echo "    transactions that lost the race in etcd: $lost"
if grep -q "info  leader:" "$LOG1"; then LEAD=$PID1 FOLLOW_LOG=$LOG2; else LEAD=$PID2 FOLLOW_LOG=$LOG1; fi

log "fencing: the leader stopped past its lease; the other takes over; the old one's writes are refused"
if [ "$LEAD" = "$PID1" ]; then LEAD_LOG=$LOG1; else LEAD_LOG=$LOG2; fi
paused_at=$(wc -l <"$LEAD_LOG")
kill -STOP "$LEAD"
t0=$(date +%s%N)
for _ in $(seq 1 60); do grep -q "info  leader:" "$FOLLOW_LOG" && break; sleep 0.1; done
t1=$(date +%s%N)
assert_match "info  leader:" "$(cat "$FOLLOW_LOG")" "the other replica became leader"
echo "    leadership moved in $(( (t1 - t0) / 1000000 )) ms (lease_ttl 2s)"
kill -CONT "$LEAD"
sleep 1
since_pause=$(tail -n +"$((paused_at + 1))" "$LEAD_LOG")
assert_match "leadership lost" "$since_pause" "the old leader knows it lost"
assert_no_match "Refresh failed" "$since_pause" "it did not fail provider work as leader after the pause"

log "leader failover: kill -9 the new leader; the old one leads again within the lease"
if [ "$LEAD" = "$PID1" ]; then NEW=$PID2; else NEW=$PID1; fi
before=$(grep -c "info  leader:" "$LEAD_LOG")
kill -KILL "$NEW"; wait "$NEW" 2>/dev/null
t0=$(date +%s%N)
for _ in $(seq 1 60); do [ "$(grep -c "info  leader:" "$LEAD_LOG")" -gt "$before" ] && break; sleep 0.1; done
t1=$(date +%s%N)
assert_eq 1 "$(( $(grep -c "info  leader:" "$LEAD_LOG") > before ))" "the survivor leads"
ms=$(( (t1 - t0) / 1000000 ))
echo "    failover in $ms ms (lease_ttl 2s)"
# lease_ttl plus etcd's 0.5 s expiry sweep, plus a loaded machine's polling slack.
assert_eq 1 "$(( ms < 5000 ))" "within about lease_ttl (etcd expires leases every 0.5 s)"
assert_match "leader was deleted \(the leader's lease ended, or the key was deleted by hand\): electing now" "$(cat "$LEAD_LOG")" \
    "the survivor's Watch saw the leader key go and elected at once"
if [ "$LEAD" = "$PID1" ]; then A=$R1; else A=$R2; fi

log "etcd unavailable: mutations UNAVAILABLE within the deadline, reads from the cache"
node_ids() { ADDR=$A ctl -o yaml nodes web-a | grep '^- id: ' | sed 's/^- id: "\{0,1\}\([^"]*\)"\{0,1\}$/\1/'; }
IDS=($(node_ids))
assert_eq 10 "${#IDS[@]}" "ten instances"
kill -STOP "${ETCD_PID[0]}"
seen=$(wc -l <"$LEAD_LOG")
ADDR=$A assert_status UNAVAILABLE "delete-nodes while etcd is stopped" ctl --timeout 5000 delete-nodes web-a "${IDS[0]}"
ms=$(tail -n +"$((seen + 1))" "$LEAD_LOG" | grep "DeleteNodes" | sed -n 's/.*duration_ms=\([0-9]*\).*/\1/p' | head -1)
echo "    UNAVAILABLE after ${ms:-?} ms in the server (request_timeout 1s)"
assert_eq 1 "$(( ${ms:-99999} < 2000 ))" "answered within request_timeout"
# CA may send several at once: they wait for one another on this replica, yet each
# must answer within CA's 5 s (the mutation budget is 3.5 s from arrival). CA's deadline
# runs from its own send, so each call is timed by the server (duration_ms in its log
# line), not by the wall clock around six ctl processes, whose start-up a loaded machine
# staggers by a second or more.
seen=$(wc -l <"$LEAD_LOG")
t0=$(date +%s%N)
CONC=()
for i in 1 2 3 4 5 6; do
    ADDR=$A ctl --timeout 5000 delete-nodes web-a "${IDS[$((i + 1))]}" >"$TMP/conc.$i" 2>&1 &
    CONC+=($!)
done
# Meanwhile a read finds a worker at once: changes may hold all workers but one.
sleep 0.5
ADDR=$A assert_ok "a read while six changes wait for etcd" ctl --timeout 1500 target-size web-a
if [ "$A" = "$R1" ]; then AO=$O1; else AO=$O2; fi
assert_match '^[1-9]' "$(metric "$AO" frugal_changes_running)" "metrics: changes running meanwhile"
wait "${CONC[@]}"
assert_eq 0 "$(metric "$AO" frugal_changes_running)" "metrics: no change running once all answered"
assert_eq 0 "$(metric "$AO" frugal_changes_parked)" "metrics: none parked"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "    six concurrent mutations answered after $ms ms: $(cat "$TMP"/conc.? | cut -c1-60 | sort | uniq -c | tr -s ' \n' ' ')"
assert_eq 6 "$(cat "$TMP"/conc.? | grep -c '^UNAVAILABLE')" "each concurrent mutation: UNAVAILABLE, not a timeout"
durations=$(tail -n +"$((seen + 1))" "$LEAD_LOG" | grep "DeleteNodes" | sed -n 's/.*duration_ms=\([0-9]*\).*/\1/p')
echo "    their durations in the server (ms): $(echo $durations)"
assert_eq 6 "$(echo "$durations" | grep -c .)" "six DeleteNodes answered"
assert_eq 0 "$(echo "$durations" | awk '$1 > 4000' | wc -l)" "each within the 3.5 s budget (4 s with slack), well inside CA's 5 s"
assert_eq 10 "$(ADDR=$A target_size web-a)" "reads keep serving from the cache"
stale=0
for _ in $(seq 1 30); do [ "$(metric "$AO" frugal_state_cache_stale)" = 1 ] && { stale=1; break; }; sleep 0.2; done
assert_eq 1 "$stale" "metrics: the cache is marked stale while etcd does not answer"
# Alone, and away from etcd longer than its lease: no replica leads, and the gauge says so.
lost=0
for _ in $(seq 1 30); do [ "$(metric "$AO" frugal_state_leader)" = 0 ] && { lost=1; break; }; sleep 0.2; done
assert_eq 1 "$lost" "metrics: frugal_state_leader falls to 0 once the lease ran out"
assert_match "leadership lost: no keep-alive of .*'s lease was confirmed in time" "$(cat "$LEAD_LOG")" "the lost lease is logged"
kill -CONT "${ETCD_PID[0]}"
ok=0
for _ in $(seq 1 30); do
    if ADDR=$A ctl delete-nodes web-a "${IDS[1]}" >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.2
done
assert_eq 1 "$ok" "recovers by itself when etcd returns"
stale=1
for _ in $(seq 1 30); do [ "$(metric "$AO" frugal_state_cache_stale)" = 0 ] && { stale=0; break; }; sleep 0.2; done
assert_eq 0 "$stale" "metrics: no longer stale once etcd answers"
stop_server_pid() { kill -TERM "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
stop_server_pid "$LEAD"

log "bad input: refused at start, naming the key, nothing written"
bad_start() { # MSG PATTERN CONFIG
    run timeout 20 "$FRUGAL" serve -c "$3"
    assert_eq 1 "$RC" "$1: exit 1"
    assert_match "$2" "$ERR" "$1: the message"
}
cat >"$TMP/wrong.yaml" <<YAML
listen: [{address: "127.0.0.1:$(free_port)"}]
state: {backend: etcd, endpoints: [http://127.0.0.1:$(free_port)], prefix: /frugal/x/, request_timeout: 500ms}
YAML
bad_start "wrong endpoints" "etcd unavailable: no endpoint answered .*Connection refused" "$TMP/wrong.yaml"
sed 's|http://|https://|' "$TMP/r1.yaml" >"$TMP/tls.yaml"
bad_start "TLS to a plaintext etcd" "etcd unavailable" "$TMP/tls.yaml"

replica_config "$TMP/foreign.yaml" "$(free_port)" /frugal/f/
etcd_put /frugal/f/someone-else "hello"
etcd_revision() {
    curl -sf -X POST "${ETCD_CLIENT[0]}/v3/kv/range" -d '{"key":"AA=="}' |
        python3 -c 'import sys,json; print(json.load(sys.stdin)["header"]["revision"])'
}
rev_before=$(etcd_revision)
bad_start "foreign key" "etcd key /frugal/f/someone-else under prefix /frugal/f/ is not frugal's" "$TMP/foreign.yaml"
assert_eq hello "$(etcd_get /frugal/f/someone-else)" "the foreign key is untouched"
assert_eq "$rev_before" "$(etcd_revision)" "nothing was written to etcd, not even a leader key"

replica_config "$TMP/corrupt.yaml" "$(free_port)" /frugal/c/
etcd_put /frugal/c/schema "frugal-state-etcd version=1"
etcd_put /frugal/c/groups/web-a "garbage"
bad_start "corrupt group" "etcd key /frugal/c/groups/web-a holds corrupt data" "$TMP/corrupt.yaml"
assert_eq garbage "$(etcd_get /frugal/c/groups/web-a)" "the corrupt key is untouched"

replica_config "$TMP/future.yaml" "$(free_port)" /frugal/n/
etcd_put /frugal/n/schema "frugal-state-etcd version=7"
etcd_put /frugal/n/groups/web-a "a format of version 7"
bad_start "schema from the future" "state schema version 7 is newer than this frugal's 1" "$TMP/future.yaml"
assert_eq "frugal-state-etcd version=7" "$(etcd_get /frugal/n/schema)" "the schema key is untouched"

replica_config "$TMP/zero.yaml" "$(free_port)" /frugal/z/
etcd_put /frugal/z/schema "frugal-state-etcd version=0"
bad_start "schema version 0" "etcd key /frugal/z/schema holds foreign or corrupt data" "$TMP/zero.yaml"
etcd_put /frugal/z/schema "frugal-state-etcd version=-1"
bad_start "a negative schema version" "etcd key /frugal/z/schema holds foreign or corrupt data" "$TMP/zero.yaml"

log "failover between endpoints: the first one is dead"
DP=$(free_port)
replica_config "$TMP/dead.yaml" "$DP" /frugal/dead/
sed -i "s|endpoints: \[|endpoints: [http://127.0.0.1:$(free_port), |" "$TMP/dead.yaml"
ADDR="127.0.0.1:$DP" start_server "$TMP/dead.yaml"
ADDR="127.0.0.1:$DP" assert_ok "an increase through the second endpoint" ctl increase web-a 1
stop_server

log "state export|import: file -> etcd -> file"
FP=$(free_port)
cat >"$TMP/file.yaml" <<YAML
listen: [{address: "127.0.0.1:$FP"}]
state_file: $TMP/st
node_groups:
  - {id: web-a, machine_type: n1-standard-2, min_size: 0, max_size: 10}
YAML
ADDR="127.0.0.1:$FP" start_server "$TMP/file.yaml"
ADDR="127.0.0.1:$FP" assert_ok "increase on the file backend" ctl increase web-a 3
stop_server
replica_config "$TMP/imp.yaml" "$(free_port)" /frugal/imp/
assert_ok "import into an empty prefix" "$FRUGAL" state import -c "$TMP/imp.yaml" "$TMP/st"
assert_match "target=3" "$(etcd_get /frugal/imp/groups/web-a)" "etcd holds the imported group"
run "$FRUGAL" state import -c "$TMP/imp.yaml" "$TMP/st"
assert_eq 1 "$RC" "a second import is refused"
assert_match "already holds a state \(1 node groups\)" "$ERR" "it says why"
assert_ok "export from etcd" "$FRUGAL" state export -c "$TMP/imp.yaml" -o "$TMP/back"
assert_eq "$(grep -v '^#' "$TMP/st")" "$(grep -v '^#' "$TMP/back")" "the round trip keeps the state"
IP=$(grep -o '"127.0.0.1:[0-9]*"' "$TMP/imp.yaml" | tr -d '"')
ADDR=$IP start_server "$TMP/imp.yaml"
assert_eq 3 "$(ADDR=$IP target_size web-a)" "a replica serves the imported state"
stop_server

log "state init on an empty prefix, once"
replica_config "$TMP/init.yaml" "$(free_port)" /frugal/init/
assert_ok "state init into an empty prefix" "$FRUGAL" state init -c "$TMP/init.yaml"
assert_match "target=0" "$(etcd_get /frugal/init/groups/web-a)" "etcd holds the group at its initial size"
assert_eq "frugal-state-etcd version=1" "$(etcd_get /frugal/init/schema)" "and the schema key"
run "$FRUGAL" state init -c "$TMP/init.yaml"
assert_eq 1 "$RC" "a second init is refused"
assert_match "already holds a state \(1 node groups\)" "$ERR" "it says why"

log "a compacted revision: a replica away past a compaction reads everything again"
C3=$(free_port)
C4=$(free_port)
replica_config "$TMP/c3.yaml" "$C3" /frugal/cmp/
replica_config "$TMP/c4.yaml" "$C4" /frugal/cmp/
ADDR="127.0.0.1:$C3" start_server "$TMP/c3.yaml"
PID3=$SERVER_PID
ADDR="127.0.0.1:$C4" start_server "$TMP/c4.yaml"
PID4=$SERVER_PID LOG4=$SERVER_LOG
kill -STOP "$PID4"
for i in 1 2 3; do ADDR="127.0.0.1:$C3" assert_ok "increase while r4 is away" ctl increase web-a 1; done
rev=$(etcd_revision)
curl -sf -X POST "${ETCD_CLIENT[0]}/v3/kv/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}" >/dev/null
etcd_member_kill 0
etcd_member_start 0
etcd_wait
kill -CONT "$PID4"
for _ in $(seq 1 150); do grep -q "compacted revision" "$LOG4" && [ "$(ADDR=127.0.0.1:$C4 target_size web-a)" = 3 ] && break; sleep 0.1; done
assert_match "etcd compacted revision" "$(cat "$LOG4")" "the replica names the compaction"
assert_eq 3 "$(ADDR=127.0.0.1:$C4 target_size web-a)" "and caught up by a full read"
kill -TERM "$PID3" "$PID4"
wait "$PID3" "$PID4" 2>/dev/null

log "cluster-wide limits under a race on two different groups (max_cpu 20: 10 nodes of 2 cpu)"
N1=$(free_port)
N2=$(free_port)
for n in 1 2; do
    eval "port=\$N$n"
    replica_config "$TMP/n$n.yaml" "$port" /frugal/nap/
    cat >>"$TMP/n$n.yaml" <<YAML
  - {id: web-b, machine_type: n1-standard-2, min_size: 0, max_size: 10}
autoprovisioning:
  enabled: true
  machine_types: [n1-standard-2]
  zones: [us-central1-a]
  limits: {max_cpu: 20}
YAML
done
ADDR="127.0.0.1:$N1" start_server "$TMP/n1.yaml"
NP1=$SERVER_PID
ADDR="127.0.0.1:$N2" start_server "$TMP/n2.yaml"
NP2=$SERVER_PID
rm -f "$TMP"/nap.*
for i in $(seq 1 7); do
    ("$FRUGAL" ctl --addr "127.0.0.1:$N1" increase web-a 1 >/dev/null 2>"$TMP/nap.a$i"; echo $? >>"$TMP/nap.a$i") &
    ("$FRUGAL" ctl --addr "127.0.0.1:$N2" increase web-b 1 >/dev/null 2>"$TMP/nap.b$i"; echo $? >>"$TMP/nap.b$i") &
done
wait_jobs
for _ in $(seq 1 50); do # web-b's writes reach N1 through its Watch
    a=$(ADDR="127.0.0.1:$N1" target_size web-a)
    b=$(ADDR="127.0.0.1:$N1" target_size web-b)
    [ "$a" != ERR ] && [ "$b" != ERR ] && [ "$((a + b))" = 10 ] && break
    sleep 0.1
done
a=$(ADDR="127.0.0.1:$N1" target_size web-a)
b=$(ADDR="127.0.0.1:$N1" target_size web-b)
assert_eq 10 "$((a + b))" "the two groups together stay at the limit ($a + $b)"
assert_eq 10 "$(cat "$TMP"/nap.* | grep -cx 0)" "exactly 10 increases acknowledged"
assert_match "RESOURCE_EXHAUSTED" "$(cat "$TMP"/nap.*)" "the others are refused by the limit"
kill -TERM "$NP1" "$NP2"
wait "$NP1" "$NP2" 2>/dev/null

log "replicas started together on an empty prefix: every one serves (5 rounds of 3)"
for round in 1 2 3 4 5; do
    PIDS=() PORTS=()
    for r in 1 2 3; do
        port=$(free_port)
        replica_config "$TMP/start$round.$r.yaml" "$port" "/frugal/start$round/"
        "$FRUGAL" serve -c "$TMP/start$round.$r.yaml" --init-state >"$TMP/start$round.$r.log" 2>&1 &
        PIDS+=($!) PORTS+=("$port")
        ALL_SERVER_PIDS+=($!)
    done
    for r in 0 1 2; do
        for _ in $(seq 1 100); do
            kill -0 "${PIDS[$r]}" 2>/dev/null || break
            "$FRUGAL" ctl --addr "127.0.0.1:${PORTS[$r]}" --timeout 500 health >/dev/null 2>&1 && break
            sleep 0.1
        done
        kill -0 "${PIDS[$r]}" 2>/dev/null && pass ||
            fail "round $round, replica $((r + 1)) exited: $(tail -n 2 "$TMP/start$round.$((r + 1)).log")"
    done
    kill -TERM "${PIDS[@]}" 2>/dev/null
    wait "${PIDS[@]}" 2>/dev/null
done
echo "    first writes lost to another replica and loaded again: $(cat "$TMP"/start*.log | grep -c 'loading the state again')"

log "two replicas reload the same edit at once: both apply it (3 rounds)"
H1=$(free_port) H2=$(free_port) HO1=$(free_port) HO2=$(free_port)
replica_config "$TMP/h1.yaml" "$H1" /frugal/hup/
replica_config "$TMP/h2.yaml" "$H2" /frugal/hup/
echo "ops_listen: 127.0.0.1:$HO1" >>"$TMP/h1.yaml"
echo "ops_listen: 127.0.0.1:$HO2" >>"$TMP/h2.yaml"
ADDR="127.0.0.1:$H1" start_server "$TMP/h1.yaml"
HP1=$SERVER_PID HL1=$SERVER_LOG
ADDR="127.0.0.1:$H2" start_server "$TMP/h2.yaml"
HP2=$SERVER_PID HL2=$SERVER_LOG
for max in 12 14 16; do
    sed -i "s/max_size: [0-9]*}/max_size: $max}/" "$TMP/h1.yaml" "$TMP/h2.yaml"
    kill -HUP "$HP1" "$HP2"
    for o in "$HO1" "$HO2"; do
        got=""
        for _ in $(seq 1 50); do
            got=$(metric_l "$o" 'frugal_node_group_max_size{node_group="web-a"}')
            [ "$got" = "$max" ] && break
            sleep 0.1
        done
        assert_eq "$max" "$got" "max_size $max on the replica with ops port $o"
        assert_eq 1 "$(metric "$o" frugal_config_last_reload_successful)" "its reload succeeded"
    done
done
assert_no_match "refused" "$(cat "$HL1" "$HL2")" "no reload was refused"
echo "    reloads that lost to the other replica and ran again: $(cat "$HL1" "$HL2" | grep -c 'applying the reload again' || true)"

log "a group one replica's reload adds, then the other's: the other takes over its nodes"
# wait_max OPS_PORT GROUP MAX: wait (5 s) until that replica serves GROUP with MAX.
wait_max() { local i; for i in $(seq 1 50); do [ "$(metric_l "$1" "frugal_node_group_max_size{node_group=\"$2\"}")" = "$3" ] && return 0; sleep 0.1; done; return 1; }
sed -i '/{id: web-a,/a\  - {id: web-d, machine_type: n1-standard-2, min_size: 0, max_size: 5}' "$TMP/h1.yaml"
kill -HUP "$HP1"
wait_max "$HO1" web-d 5 && pass || fail "h1 serves web-d after its reload"
ADDR="127.0.0.1:$H1" assert_ok "3 nodes of web-d on h1" ctl increase web-d 3
sed -i '/{id: web-a,/a\  - {id: web-d, machine_type: n1-standard-2, min_size: 0, max_size: 5}' "$TMP/h2.yaml"
kill -HUP "$HP2"
wait_max "$HO2" web-d 5 && pass || fail "h2 serves web-d after its reload"
assert_eq 3 "$(ADDR="127.0.0.1:$H2" target_size web-d)" "h2 resumes web-d at 3, as stored"
assert_eq 3 "$(ADDR="127.0.0.1:$H2" ctl nodes web-d 2>/dev/null | grep -c 'frugal://web-d/')" "with its 3 instances"
assert_eq 3 "$(ADDR="127.0.0.1:$H1" target_size web-d)" "h1 still has 3"
assert_match "target=3" "$(etcd_get /frugal/hup/groups/web-d)" "etcd still holds 3"
assert_match "node group web-d resumes as etcd prefix /frugal/hup/ holds it \(target size 3, 3 instances\)" \
    "$(cat "$HL2")" "logged"
kill -TERM "$HP1" "$HP2"
wait "$HP1" "$HP2" 2>/dev/null

log "the leader's own clock ran out while etcd kept its lease: it renews that lease and leads again"
# lease_ttl 30s: a keep-alive round every 7.5 s, trusted for 24 s from its last one.
# Stopped 24.5 s just after it became leader (its first keep-alive), it runs its next
# round as soon as it resumes: past the 24 s it trusts whatever the delays, and before
# etcd's 30 s with 5.5 s for the stop to begin, the process to resume and the renewal
# (a loaded machine under TSan took 3 s). A new lease would leave the leader key on the
# old one until etcd expires it.
PL=$(free_port)
replica_config "$TMP/lapse.yaml" "$PL" /frugal/lapse/
sed -i 's/lease_ttl: 2s/lease_ttl: 30s/' "$TMP/lapse.yaml"
assert_match "lease_ttl: 30s" "$(cat "$TMP/lapse.yaml")" "the replica's lease_ttl is 30s"
ADDR="127.0.0.1:$PL" start_server "$TMP/lapse.yaml"
LP=$SERVER_PID LL=$SERVER_LOG
for _ in $(seq 1 60); do grep -q "info  leader:" "$LL" && break; sleep 0.1; done
leases() { sed -n 's/.*info  leader: .*(lease \([0-9a-f]*\)).*/\1/p' "$LL"; }
lease=$(leases | head -1)
assert_match '^[0-9a-f]+$' "$lease" "it leads (lease $lease)"
kill -STOP "$LP"
sleep 24.5
kill -CONT "$LP"
for _ in $(seq 1 60); do [ "$(leases | wc -l)" -ge 2 ] && break; sleep 0.1; done
assert_match "leadership lost: no keep-alive of .*'s lease was confirmed in time" "$(cat "$LL")" \
    "its own clock ran out"
assert_eq "$lease $lease" "$(leases | head -2 | tr '\n' ' ' | sed 's/ $//')" \
    "it leads again on the same lease, renewed"
assert_no_match "was deleted" "$(cat "$LL")" "the leader key never left the lease"
kill -TERM "$LP"
wait "$LP" 2>/dev/null

log "a replica that starts while etcd answers nothing waits for it (lease_ttl, at least 10 s)"
PW=$(free_port)
replica_config "$TMP/wait.yaml" "$PW" /frugal/wait/
for p in "${ETCD_PID[@]}"; do kill -STOP "$p" 2>/dev/null; done
(
    sleep 2.5
    for p in "${ETCD_PID[@]}"; do kill -CONT "$p" 2>/dev/null; done
) &
RESUME=$!
ADDR="127.0.0.1:$PW" start_server "$TMP/wait.yaml"
wait "$RESUME"
assert_match "LeaseGrant.*; trying again for up to [0-9]* ms" "$(cat "$SERVER_LOG")" \
    "the first lease was tried again while etcd did not answer"
ADDR="127.0.0.1:$PW" assert_ok "then it serves" ctl target-size web-a
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null

etcd_stop
finish
