#!/usr/bin/env bash
# What the etcd backend does with keys it did not write, against a real one-member etcd:
# a state of more node groups than one etcd transaction may hold (etcd's 128
# operations) is written and served; a leader key without a lease (put by hand, copied by
# a mirror) is removed so that a replica can lead; a schema key changed while replicas
# run stops their writes until it is frugal's again; a foreign key written meanwhile is
# named in the log; an empty value is corrupt, not a deletion, and a write to its group
# is refused naming it (also while another application's prefix changes the store
# revision); a key holding a NUL byte is named, not cut at the NUL.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/etcd_lib.sh"

etcd_start 1
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n { print $2 }'; }

log "150 node groups: init, serve, export (etcd takes 128 operations per transaction)"
BP=$(free_port)
replica_config "$TMP/big.yaml" "$BP" /frugal/big/
for i in $(seq 1 149); do
    echo "  - {id: g$i, machine_type: n1-standard-2, min_size: 0, max_size: 3}" >>"$TMP/big.yaml"
done
assert_ok "state init of 150 groups" "$FRUGAL" state init -c "$TMP/big.yaml"
assert_match "target=0" "$(etcd_get /frugal/big/groups/g149)" "the last group is stored"
assert_eq "frugal-state-etcd version=1" "$(etcd_get /frugal/big/schema)" "and the schema key"
ADDR="127.0.0.1:$BP" start_server "$TMP/big.yaml"
ADDR="127.0.0.1:$BP" assert_ok "an increase" ctl increase g77 2
assert_match "target=2" "$(etcd_get /frugal/big/groups/g77)" "etcd holds it"
stop_server
assert_ok "export" "$FRUGAL" state export -c "$TMP/big.yaml" -o "$TMP/big.st"
assert_eq 150 "$(grep -c '^group id=' "$TMP/big.st")" "every group exported"
replica_config "$TMP/big2.yaml" "$(free_port)" /frugal/big2/
cat "$TMP/big.yaml" | sed -n '/^node_groups:/,$p' | tail -n +3 >>"$TMP/big2.yaml"
assert_ok "import of 150 groups" "$FRUGAL" state import -c "$TMP/big2.yaml" "$TMP/big.st"
assert_match "target=2" "$(etcd_get /frugal/big2/groups/g77)" "the imported state"
assert_eq "frugal-state-etcd version=1" "$(etcd_get /frugal/big2/schema)" "with its schema key"
# mod_revision KEY: the revision etcd last wrote KEY at.
mod_revision() {
    curl -sf -X POST "${ETCD_CLIENT[0]}/v3/kv/range" -d "{\"key\":\"$(b64 "$1")\"}" |
        python3 -c 'import sys,json; print(json.load(sys.stdin)["kvs"][0]["mod_revision"])'
}
G1_REV=$(mod_revision /frugal/big2/groups/g1)
SCHEMA_REV=$(mod_revision /frugal/big2/schema)
[ "$SCHEMA_REV" -gt "$G1_REV" ] && pass ||
    fail "the import's schema key comes with its last transaction ($SCHEMA_REV after $G1_REV)"

log "file -> etcd -> file keeps the groups' order (the config's, not etcd's by name)"
FP=$(free_port)
cat >"$TMP/file.yaml" <<YAML
listen: [{address: "127.0.0.1:$FP"}]
state_file: $TMP/st
node_groups:
  - {id: zz, machine_type: n1-standard-2, min_size: 0, max_size: 10}
  - {id: aa, machine_type: n1-standard-2, min_size: 0, max_size: 10}
YAML
ADDR="127.0.0.1:$FP" start_server "$TMP/file.yaml"
ADDR="127.0.0.1:$FP" assert_ok "increase zz" ctl increase zz 2
ADDR="127.0.0.1:$FP" assert_ok "increase aa" ctl increase aa 1
stop_server
replica_config "$TMP/ord.yaml" "$(free_port)" /frugal/ord/
sed -i '/- {id: web-a/d' "$TMP/ord.yaml"
sed -n '/^  - {id: zz/,$p' "$TMP/file.yaml" >>"$TMP/ord.yaml"
assert_ok "import" "$FRUGAL" state import -c "$TMP/ord.yaml" "$TMP/st"
assert_ok "export" "$FRUGAL" state export -c "$TMP/ord.yaml" -o "$TMP/back"
assert_eq "$(grep -v '^#' "$TMP/st")" "$(grep -v '^#' "$TMP/back")" "the same state file"

log "a leader key without a lease is removed: a replica leads"
LP=$(free_port)
LO=$(free_port)
replica_config "$TMP/lk.yaml" "$LP" /frugal/lk/
echo "ops_listen: 127.0.0.1:$LO" >>"$TMP/lk.yaml"
etcd_put /frugal/lk/leader "someone:1"
ADDR="127.0.0.1:$LP" start_server "$TMP/lk.yaml"
leads() { [ "$(metric "$LO" frugal_state_leader)" = 1 ]; }
for _ in $(seq 1 50); do leads && break; sleep 0.2; done
assert_eq 1 "$(metric "$LO" frugal_state_leader)" "the replica leads"
assert_match "leader: /frugal/lk/leader \(\"someone:1\"\) has no lease, so it would never expire" \
    "$(cat "$SERVER_LOG")" "the removal is logged"
ADDR="127.0.0.1:$LP" assert_ok "an increase" ctl increase web-a 1
running() { ADDR="127.0.0.1:$LP" run ctl nodes web-a; echo "$OUT" | grep -q running; }
for _ in $(seq 1 50); do running && break; sleep 0.2; done
assert_match "running" "$OUT" "the leader's provider work runs"

log "a schema key changed while replicas run stops their writes, until it is frugal's again"
etcd_put /frugal/lk/schema "frugal-state-etcd version=7"
for _ in $(seq 1 25); do grep -q 'schema version 7 is newer' "$SERVER_LOG" && break; sleep 0.2; done
assert_match "etcd key /frugal/lk/schema: state schema version 7 is newer than this frugal's 1 \(changed at revision [0-9]+\): this replica refuses every write" \
    "$(cat "$SERVER_LOG")" "the change is logged"
ADDR="127.0.0.1:$LP" run ctl increase web-a 1
assert_eq 1 "$RC" "a write is refused"
assert_match "FAILED_PRECONDITION.*etcd key /frugal/lk/schema holds a schema this frugal cannot use" \
    "$ERR" "with the reason"
assert_eq "frugal-state-etcd version=7" "$(etcd_get /frugal/lk/schema)" "the key is not overwritten"
etcd_put /frugal/lk/schema "frugal-state-etcd version=1"
for _ in $(seq 1 25); do grep -q 'is frugal.s again' "$SERVER_LOG" && break; sleep 0.2; done
ADDR="127.0.0.1:$LP" assert_ok "writes resume" ctl increase web-a 1

log "a foreign key written meanwhile is named"
etcd_put /frugal/lk/someone-else "hello"
for _ in $(seq 1 25); do grep -q 'someone-else' "$SERVER_LOG" && break; sleep 0.2; done
assert_match "etcd key /frugal/lk/someone-else under prefix /frugal/lk/ is not frugal's \(written at revision [0-9]+\): ignored, but a restart refuses the prefix" \
    "$(cat "$SERVER_LOG")" "the foreign key is logged"

log "an empty group value is corrupt, not a deletion; its writes are refused as such while other prefixes change"
etcd_put /frugal/lk/groups/web-a ""
for _ in $(seq 1 25); do grep -q 'groups/web-a at revision [0-9]* is corrupt' "$SERVER_LOG" && break; sleep 0.2; done
assert_match "etcd key /frugal/lk/groups/web-a at revision [0-9]+ is corrupt \(.*\): ignored, not overwritten; writes to group web-a are refused" \
    "$(cat "$SERVER_LOG")" "the empty value is logged as corrupt"
assert_no_match "groups/web-a was deleted|web-a was deleted" "$(cat "$SERVER_LOG")" "not taken for a deletion"
# another application's prefix on the same etcd moves the store revision meanwhile
(for _ in $(seq 1 100); do etcd_put /other-app/counter "$RANDOM"; sleep 0.05; done) &
WRITER=$!
sleep 0.3
ADDR="127.0.0.1:$LP" run ctl increase web-a 1
assert_eq 1 "$RC" "a write to the group is refused"
assert_match "FAILED_PRECONDITION.*etcd key /frugal/lk/groups/web-a holds a value this replica refused as corrupt \(logged when it was written, at revision [0-9]+\)" \
    "$ERR" "named, not taken for another replica's change"
kill "$WRITER" 2>/dev/null
wait "$WRITER" 2>/dev/null
assert_eq "" "$(etcd_get /frugal/lk/groups/web-a)" "the key is not overwritten"
curl -sf -X POST "${ETCD_CLIENT[0]}/v3/kv/deleterange" -d "{\"key\":\"$(b64 /frugal/lk/groups/web-a)\"}" >/dev/null
for _ in $(seq 1 25); do [ -n "$(etcd_get /frugal/lk/groups/web-a)" ] && break; sleep 0.2; done
assert_match "^frugal-state" "$(etcd_get /frugal/lk/groups/web-a)" "deleted by hand, the leader writes its copy back"
ADDR="127.0.0.1:$LP" assert_ok "writes resume" ctl increase web-a 1

log "an empty schema value stops the writes as foreign data"
etcd_put /frugal/lk/schema ""
for _ in $(seq 1 25); do grep -q 'schema holds foreign or corrupt data' "$SERVER_LOG" && break; sleep 0.2; done
assert_match "etcd key /frugal/lk/schema holds foreign or corrupt data .*this replica refuses every write" \
    "$(cat "$SERVER_LOG")" "the change is logged"
ADDR="127.0.0.1:$LP" run ctl increase web-a 1
assert_match "FAILED_PRECONDITION.*etcd key /frugal/lk/schema holds a schema this frugal cannot use" \
    "$ERR" "a write is refused with the reason"
etcd_put /frugal/lk/schema "frugal-state-etcd version=1"
for _ in $(seq 1 25); do [ "$(grep -c 'is frugal.s again' "$SERVER_LOG")" -ge 2 ] && break; sleep 0.2; done
ADDR="127.0.0.1:$LP" assert_ok "writes resume again" ctl increase web-a 1
stop_server

log "a key holding a NUL byte is named whole"
replica_config "$TMP/nul.yaml" "$(free_port)" /frugal/nul/
NUL_KEY=$(printf '/frugal/nul/groups/web-a\0junk' | base64 -w0)
curl -sf -X POST "${ETCD_CLIENT[0]}/v3/kv/put" -d "{\"key\":\"$NUL_KEY\",\"value\":\"$(b64 x)\"}" >/dev/null
run timeout 20 "$FRUGAL" serve -c "$TMP/nul.yaml"
assert_eq 1 "$RC" "the start is refused"
assert_match 'etcd key /frugal/nul/groups/web-a\\x00junk holds corrupt data' "$ERR" \
    "the key is named with its NUL byte"

etcd_stop
finish
