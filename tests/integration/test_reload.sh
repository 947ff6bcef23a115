#!/usr/bin/env bash
# Config reload without a restart: SIGHUP and a change of the file re-read, validate and
# apply the config (prices, bounds, new groups, empty groups removed); an invalid config,
# a change that needs a restart, or removing a group that still has nodes is refused
# with the running config kept, and so is a restart without such a group. Also the CA >= 1.35 GetOptions warnings.
source "$(dirname "$0")/lib.sh"

PORT=$(free_port)
ADDR="127.0.0.1:$PORT"
CFG="$TMP/frugal.yaml"
STATE="$TMP/state"

# write_config PRICE MAX [EXTRA GROUP YAML]: the config with test-4 at PRICE per hour and
# pool-a's max_size MAX.
write_config() {
    cat >"$CFG.new" <<EOF
listen: [{address: "$ADDR"}]
state_file: $STATE
machine_types:
  - {name: test-4, cpu: 4, memory: 16Gi, price: $1}
node_groups:
  - id: pool-a
    machine_type: test-4
    min_size: 0
    max_size: $2
    options: {max_node_provision: 12m}
  - id: pool-b
    machine_type: test-4
    max_size: 3
${3:-}
EOF
    mv "$CFG.new" "$CFG"
}

price_of() { # the hourly price of a pool-a node, per the PricingNodePrice call
    ctl node-price "" --name template-node-for-pool-a-1 \
        --label node.kubernetes.io/instance-type=test-4 --hours 1
}

write_config 0.2 5
run "$FRUGAL" check -c "$CFG"
assert_eq 0 "$RC" "check of the config"
assert_match 'warning: node group "pool-a" overrides options: .*1\.35.*startup time of 0.*kubernetes/autoscaler#10245' \
    "$ERR" "check warns about pool-a's options"
assert_no_match 'pool-b' "$ERR" "no warning for pool-b, which overrides nothing"
start_server "$CFG"
assert_eq 1 "$(grep -c 'node group "pool-a" overrides options' "$SERVER_LOG")" "serve warns once for pool-a"

log "SIGHUP: a new price is used by the next PricingNodePrice call"
assert_near 0.2 "$(price_of)" "price before the reload"
assert_ok "increase pool-a 2" ctl increase pool-a 2
write_config 0.5 5
touch -d '2000-01-01' "$CFG" # a change the poller could miss: SIGHUP alone applies it
kill -HUP "$SERVER_PID"
for _ in $(seq 1 50); do grep -q 'reloaded (SIGHUP)' "$SERVER_LOG" && break; sleep 0.1; done
assert_near 0.5 "$(price_of)" "price after SIGHUP"
assert_eq 2 "$(target_size pool-a)" "the reload kept pool-a's nodes"

log "a change of the file is picked up without a signal"
write_config 0.5 7 "  - {id: pool-c, machine_type: test-4, min_size: 1, max_size: 2}
  - {id: pool-s, machine_type: test-4, max_size: 3, spot: true}"
for _ in $(seq 1 50); do [ "$(target_size pool-c)" = 1 ] && break; sleep 0.1; done
assert_eq 1 "$(target_size pool-c)" "new group pool-c started at its min_size"
assert_ok "node-groups" ctl -o yaml node-groups
assert_match '^  maxSize: 7$' "$(echo "$OUT" | sed -n '/^- id: "pool-a"$/,/^- /p')" "pool-a's new max_size"
assert_eq 1 "$(grep -c 'node groups "pool-s" (spot) and "pool-a" (on demand) differ only in price' "$SERVER_LOG")" \
    "the reload warns that spot pool-s is balanced with its on-demand twin"
run "$FRUGAL" check -c "$CFG"
assert_match 'warning: node groups "pool-s" \(spot\) and "pool-a" \(on demand\) differ only in price: .*balance-similar-node-groups.*label of its own' \
    "$ERR" "check warns about the spot twin"

log "invalid config: refused, every error logged as FILE:LINE:COL, the running config kept"
cp "$CFG" "$TMP/good.yaml"
sed -e 's/price: 0.5/price: -3/' -e 's/max_size: 3/max_size: lots/' "$TMP/good.yaml" >"$CFG.new" && mv "$CFG.new" "$CFG"
kill -HUP "$SERVER_PID"
for _ in $(seq 1 50); do grep -q 'reload (SIGHUP) refused' "$SERVER_LOG" && break; sleep 0.1; done
assert_match "$CFG:[0-9]+:[0-9]+: machine_types\[0\]\.price" "$(cat "$SERVER_LOG")" "price error with FILE:LINE:COL"
assert_match "$CFG:[0-9]+:[0-9]+: node_groups\[1\]\.max_size" "$(cat "$SERVER_LOG")" "max_size error with FILE:LINE:COL"
assert_near 0.5 "$(price_of)" "the running price is kept"
assert_ok "health after a refused reload" ctl health

log "removing a group that still has nodes is refused; an empty one is removed"
grep -v 'pool-c' "$TMP/good.yaml" >"$CFG.new" && mv "$CFG.new" "$CFG"
kill -HUP "$SERVER_PID"
for _ in $(seq 1 50); do [ "$(grep -c 'refused' "$SERVER_LOG")" -ge 2 ] && break; sleep 0.1; done
assert_match 'pool-c still has 1 node' "$(cat "$SERVER_LOG")" "the refusal names the group"
assert_eq 1 "$(target_size pool-c)" "pool-c kept"
sed -e 's/min_size: 1, max_size: 2/min_size: 0, max_size: 2/' "$TMP/good.yaml" >"$CFG.new" && mv "$CFG.new" "$CFG"
kill -HUP "$SERVER_PID"
for _ in $(seq 1 50); do [ "$(grep -c 'reloaded' "$SERVER_LOG")" -ge 3 ] && break; sleep 0.1; done
assert_ok "delete pool-c's node" ctl -o yaml nodes pool-c
node_c=$(echo "$OUT" | sed -n 's/^- id: //p' | tr -d '"')
assert_ok "delete-nodes pool-c" ctl delete-nodes pool-c "$node_c"
for _ in $(seq 1 100); do [ -z "$(ctl -o yaml nodes pool-c | grep '^- id:')" ] && break; sleep 0.1; done
grep -v 'pool-c' "$TMP/good.yaml" >"$CFG.new" && mv "$CFG.new" "$CFG"
kill -HUP "$SERVER_PID"
for _ in $(seq 1 50); do [ "$(target_size pool-c)" = ERR ] && break; sleep 0.1; done
assert_status NOT_FOUND "the empty pool-c is gone" ctl target-size pool-c

log "a change that needs a restart is refused"
sed -e "s/state_file: .*/state_file: $(echo "$TMP" | sed 's/[\/&]/\\&/g')\/other/" "$CFG" >"$CFG.new" && mv "$CFG.new" "$CFG"
kill -HUP "$SERVER_PID"
for _ in $(seq 1 50); do grep -q 'state_file changes only with a restart' "$SERVER_LOG" && break; sleep 0.1; done
assert_match 'state_file changes only with a restart' "$(cat "$SERVER_LOG")" "restart-only key named"
assert_eq 2 "$(target_size pool-a)" "nothing changed"
# limits shape the transport when it is built: a change is refused, not silently ignored.
# Written aside, then moved: the server also reloads when the file changes, and must not
# see good.yaml (pool-c back) in between.
{ cat "$TMP/good.yaml"; echo 'limits: {receive_timeout: 1s}'; } >"$CFG.new" && mv "$CFG.new" "$CFG"
kill -HUP "$SERVER_PID"
for _ in $(seq 1 50); do grep -q 'limits.receive_timeout changes only with a restart' "$SERVER_LOG" && break; sleep 0.1; done
assert_match 'limits.receive_timeout changes only with a restart' "$(cat "$SERVER_LOG")" "a limits change is refused"

# state_file: PATH is short for state: {backend: file, path: PATH}: the same state.
# Counted by SIGHUP alone: the file watcher may reload the new file first.
before=$(grep -c 'reloaded (SIGHUP)' "$SERVER_LOG")
grep -v 'pool-c' "$TMP/good.yaml" | sed -e "s|^state_file: \(.*\)|state: {backend: file, path: \1}|" >"$CFG.new" && mv "$CFG.new" "$CFG"
kill -HUP "$SERVER_PID"
for _ in $(seq 1 50); do [ "$(grep -c 'reloaded (SIGHUP)' "$SERVER_LOG")" -gt "$before" ] && break; sleep 0.1; done
assert_eq $((before + 1)) "$(grep -c 'reloaded (SIGHUP)' "$SERVER_LOG")" "the long form of the same state file reloads"
assert_no_match 'state changes only with a restart' "$(cat "$SERVER_LOG")" "it is not taken for a change"

log "a reload that makes ranking or autoprovisioning inert is applied, and warned once"
grep -v 'pool-c' "$TMP/good.yaml" >"$CFG.new"
printf 'pricing: {cpu: 0, memory_gib: 0, gpu: 0}\nautoprovisioning: {enabled: true, machine_types: [test-4], limits: {max_cpu: 2}}\n' >>"$CFG.new"
for round in 1 2; do
    before=$(grep -c 'reloaded (SIGHUP)' "$SERVER_LOG")
    cp "$CFG.new" "$CFG.next" && mv "$CFG.next" "$CFG"
    kill -HUP "$SERVER_PID"
    for _ in $(seq 1 50); do [ "$(grep -c 'reloaded (SIGHUP)' "$SERVER_LOG")" -gt "$before" ] && break; sleep 0.1; done
    assert_eq $((before + 1)) "$(grep -c 'reloaded (SIGHUP)' "$SERVER_LOG")" "reload $round applied"
done
assert_eq 1 "$(grep -c 'warn  pricing.cpu, pricing.memory_gib and pricing.gpu are all 0' "$SERVER_LOG")" \
    "the unpriced pods warned once over both reloads"
assert_eq 1 "$(grep -c 'warn  autoprovisioning.limits: one node of test-4 is larger than the limits alone (max_cpu 2 cores, max_memory unlimited), so groups of that type can never grow' "$SERVER_LOG")" \
    "the machine type over the limits warned once over both reloads"

assert_eq 1 "$(grep -c 'node groups "pool-s" (spot)' "$SERVER_LOG")" "the spot twin warned once over every reload"
stop_server
assert_match 'target=2' "$(grep 'id=pool-a' "$STATE")" "pool-a's nodes are in the state file"
assert_no_match 'pool-c' "$(cat "$STATE")" "the removed group is gone from the state file"

log "a restart without a group that still has nodes is refused, as the reload is"
grep -v 'pool-c' "$TMP/good.yaml" | sed -e '/id: pool-a/,/options:/d' >"$CFG"
cp "$STATE" "$TMP/state.before"
run timeout 20 "$FRUGAL" serve -c "$CFG"
assert_eq 1 "$RC" "the start exits 1"
assert_match "node group pool-a still has 2 nodes \(target size 2\) but it is no longer in the config: configure it again and scale it to 0 before removing it" \
    "$ERR" "naming the group, its nodes and the way out"
assert_eq "$(cat "$TMP/state.before")" "$(cat "$STATE")" "the state file is untouched"
finish
