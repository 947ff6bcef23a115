#!/usr/bin/env bash
# The command line: `frugal check` on good and bad configs (every problem as
# FILE:LINE:COL: on stderr, exit 1), `frugal version`, ctl's usage errors, and options
# written NAME=VALUE.
source "$(dirname "$0")/lib.sh"

# check_error NAME LINE REGEX: `frugal check` of $TMP/NAME.yaml fails with a
# NAME.yaml:LINE:COL: line matching REGEX.
check_error() {
    local name=$1 line=$2 re=$3 f="$TMP/$1.yaml"
    run "$FRUGAL" check -c "$f"
    assert_eq 1 "$RC" "check $name: exit status" || describe_run
    assert_match "^$f:$line:[0-9]+: .*($re)" "$ERR" "check $name: error at line $line"
}

log "good configs"
cat >"$TMP/good.yaml" <<'EOF'
listen:
  - address: 127.0.0.1:18086
node_groups:
  - id: pool-a
    machine_type: n1-standard-2
    zone: us-central1-a
    min_size: 0
    max_size: 10
    labels: {team: web}
    taints: [{key: dedicated, value: web, effect: NoSchedule}]
  - id: main
    machine_type: n1-standard-2
    size: 2
    managed: false
EOF
assert_ok "check good config" "$FRUGAL" check -c "$TMP/good.yaml"
assert_match 'pool-a' "$OUT" "the summary lists the groups"
assert_eq "" "$ERR" "no errors printed"
printf 'node_groups:\n  - id: only\n    machine_type: n1-standard-1\n    max_size: 1\n' >"$TMP/minimal.yaml"
assert_ok "a config may be one node group" "$FRUGAL" check -c "$TMP/minimal.yaml"
{ cat "$TMP/minimal.yaml"; echo 'pricing: {cpu: 0, memory_gib: 0, gpu: 0}'; } >"$TMP/unpriced.yaml"
assert_ok "unpriced pods: valid" "$FRUGAL" check -c "$TMP/unpriced.yaml"
assert_match '^warning: pricing.cpu, pricing.memory_gib and pricing.gpu are all 0: pods have no price, so BestOptions can score no option' \
    "$ERR" "but warned: no option could be ranked"
{ cat "$TMP/minimal.yaml"; echo 'ranking: {damper: {cpu: 0, memory: 0}}'; } >"$TMP/free-damper.yaml"
assert_ok "a damper priced at 0: valid" "$FRUGAL" check -c "$TMP/free-damper.yaml"
assert_match '^warning: ranking.damper is priced at 0: a request whose pods all request nothing' \
    "$ERR" "but warned: BestEffort pods could not be ranked"
PORT=$(free_port)
printf 'listen: [{address: "127.0.0.1:%s"}]\n' "$PORT" >>"$TMP/unpriced.yaml"
ADDR=127.0.0.1:$PORT start_server "$TMP/unpriced.yaml"
assert_match 'warn  pricing.cpu, pricing.memory_gib and pricing.gpu are all 0' "$(cat "$SERVER_LOG")" \
    "serve warns at start"
assert_ok "a -- after the verb ends the options and is not an argument" \
    "$FRUGAL" ctl --addr "127.0.0.1:$PORT" increase only -- 1
assert_ok "target-size -- ID" "$FRUGAL" ctl --addr "127.0.0.1:$PORT" target-size -- only
assert_match '^1$' "$OUT" "the increase took"
assert_status NOT_FOUND "a -- before the verb leaves every later argument to the verb" \
    "$FRUGAL" ctl --addr "127.0.0.1:$PORT" -- target-size --timeout
assert_match 'NOT_FOUND: .*--timeout' "$ERR" "--timeout is the verb's ID, not ctl's option"
stop_server
{ cat "$TMP/minimal.yaml"; echo 'autoprovisioning: {enabled: true, machine_types: [n1-standard-2, n1-standard-8, n1-highmem-8], limits: {max_cpu: 6}}'; } >"$TMP/over-limits.yaml"
assert_ok "machine types over the limits: valid" "$FRUGAL" check -c "$TMP/over-limits.yaml"
assert_match '^warning: autoprovisioning.limits: one node of n1-standard-8, n1-highmem-8 is larger than the limits alone \(max_cpu 6 cores, max_memory unlimited\), so groups of those types can never grow$' \
    "$ERR" "but warned: those types can never be added"
for f in "$FRUGAL_SOURCE_DIR"/examples/*.yaml; do
    [ -f "$f" ] || continue
    assert_ok "check $(basename "$(dirname "$f")")/$(basename "$f")" "$FRUGAL" check -c "$f"
done

log "bad configs"
cat >"$TMP/unknown-key.yaml" <<'EOF'
node_groups:
  - id: a
    machine_type: n1-standard-2
    max_size: 3
    max_szie: 4
EOF
check_error unknown-key 5 "unknown|max_szie"

cat >"$TMP/unknown-top.yaml" <<'EOF'
listen:
  - address: 127.0.0.1:18086
alow_insecure: true
node_groups:
  - {id: a, machine_type: n1-standard-2, max_size: 3}
EOF
check_error unknown-top 3 "unknown|alow_insecure"

cat >"$TMP/min-max.yaml" <<'EOF'
node_groups:
  - id: a
    machine_type: n1-standard-2
    min_size: 5
    max_size: 3
EOF
check_error min-max "[45]" "min|max"

cat >"$TMP/negative.yaml" <<'EOF'
node_groups:
  - id: a
    machine_type: n1-standard-2
    min_size: -1
    max_size: 3
EOF
check_error negative 4 "negative|min_size"

cat >"$TMP/machine.yaml" <<'EOF'
node_groups:
  - id: a
    machine_type: n9-imaginary-3
    max_size: 3
EOF
check_error machine 3 "machine|n9-imaginary-3"

cat >"$TMP/duplicate.yaml" <<'EOF'
node_groups:
  - id: a
    machine_type: n1-standard-2
    max_size: 3
  - id: a
    machine_type: n1-standard-2
    max_size: 3
EOF
check_error duplicate 5 "duplicate"

cat >"$TMP/type.yaml" <<'EOF'
node_groups:
  - id: a
    machine_type: n1-standard-2
    max_size: lots
EOF
check_error type 4 "max_size|integer|number"

cat >"$TMP/quantity.yaml" <<'EOF'
machine_types:
  - name: odd-1
    cpu: 1
    memory: 1.5Qi
node_groups:
  - {id: a, machine_type: odd-1, max_size: 3}
EOF
check_error quantity 4 "memory|quantity"

cat >"$TMP/syntax.yaml" <<'EOF'
node_groups:
  - id: a
    machine_type: [n1-standard-2
EOF
run "$FRUGAL" check -c "$TMP/syntax.yaml"
assert_eq 1 "$RC" "check of broken YAML fails"
assert_match "^$TMP/syntax.yaml:[0-9]+:[0-9]+: " "$ERR" "broken YAML reported as FILE:LINE:COL:"

cat >"$TMP/several.yaml" <<'EOF'
node_groups:
  - id: a
    machine_type: n1-standard-2
    min_size: 4
    max_size: 2
  - id: b
    machine_type: nope-9
    max_size: 1
EOF
run "$FRUGAL" check -c "$TMP/several.yaml"
assert_eq 1 "$RC" "check with two problems fails"
assert_eq 2 "$(echo "$ERR" | grep -Ec "^$TMP/several.yaml:[0-9]+:[0-9]+: ")" "every problem is reported"

assert_exit 1 "check of a missing file" "$FRUGAL" check -c "$TMP/does-not-exist.yaml"
assert_match "does-not-exist.yaml" "$ERR" "the missing file is named"
assert_exit 2 "check without -c" "$FRUGAL" check
run timeout 20 "$FRUGAL" check -c /dev/zero
assert_eq 1 "$RC" "check of an endless file stops and fails"
assert_match '^/dev/zero: larger than 16 MiB: not a config file$' "$ERR" "saying so"

log "serve refuses a bad config"
run timeout 10 "$FRUGAL" serve -c "$TMP/min-max.yaml"
if [ "$RC" -ne 0 ] && [ "$RC" -ne 124 ]; then pass; else fail "serve of a bad config: rc=$RC"; fi
assert_match "^$TMP/min-max.yaml:[0-9]+:[0-9]+: " "$ERR" "serve reports FILE:LINE:COL:"

log "version"
want=$(sed -n 's/^project(frugal VERSION \([0-9.]*\).*/\1/p' "$FRUGAL_SOURCE_DIR/CMakeLists.txt")
assert_ok "frugal version" "$FRUGAL" version
assert_match "^frugal $want\$" "$OUT" "version line"
rev=$(git -C "$FRUGAL_SOURCE_DIR" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
# the commit CMake saw at configure time: this tree's, unless committed since
assert_match "^commit ([0-9a-f]{12}|unknown)\$" "$OUT" "commit line ($rev)"
assert_exit 2 "frugal version with an argument" "$FRUGAL" version extra
assert_exit 2 "unknown command" "$FRUGAL" no-such-command
assert_exit 2 "no command" "$FRUGAL"

log "-c given twice is a usage error, not the last one silently winning"
for cmd in "serve" "check" "state export" "plan --pods p.json" "replay w.yaml"; do
    # shellcheck disable=SC2086 # the command's words
    assert_exit 2 "$cmd -c twice" "$FRUGAL" $cmd -c "$TMP/a.yaml" -c "$TMP/b.yaml"
    assert_match "given twice" "$ERR" "$cmd says -c was given twice"
done

log "ctl usage errors"
PORT=$(free_port)
assert_exit 2 "ctl without --addr" "$FRUGAL" ctl health
assert_exit 2 "ctl without a verb" "$FRUGAL" ctl --addr "127.0.0.1:$PORT"
assert_exit 2 "ctl unknown verb" "$FRUGAL" ctl --addr "127.0.0.1:$PORT" frobnicate
assert_exit 2 "ctl increase without delta" "$FRUGAL" ctl --addr "127.0.0.1:$PORT" increase g
assert_exit 2 "ctl increase with a non-number" "$FRUGAL" ctl --addr "127.0.0.1:$PORT" increase g two
assert_match '"two" is not a whole number from -2147483648 to 2147483647' "$ERR" "saying what is wrong"
assert_exit 2 "ctl increase past int32" "$FRUGAL" ctl --addr "127.0.0.1:$PORT" increase g 2147483648
assert_exit 2 "ctl --addr with a port past 65535" "$FRUGAL" ctl --addr 127.0.0.1:99999 health
assert_match 'expected HOST:PORT \(port 1 to 65535\) or unix:PATH' "$ERR" "naming the form"
assert_exit 2 "ctl --addr without a port" "$FRUGAL" ctl --addr 127.0.0.1 health
assert_exit 2 "ctl --addr with a bare IPv6 address (its last group is no port)" "$FRUGAL" ctl --addr ::1 health
assert_exit 2 "ctl --addr empty" "$FRUGAL" ctl --addr "" health
assert_exit 2 "ctl bad -o" "$FRUGAL" ctl --addr "127.0.0.1:$PORT" -o json health
assert_exit 2 "ctl pod-price without --memory" "$FRUGAL" ctl --addr "127.0.0.1:$PORT" pod-price --cpu 1
assert_exit 2 "ctl --hours past 100 years (its end would overflow)" "$FRUGAL" ctl --addr "127.0.0.1:$PORT" node-price x --hours 2.5e6
assert_match 'is not a number of hours within' "$ERR" "and says so"
assert_exit 2 "ctl options with a bad duration" "$FRUGAL" ctl --addr "127.0.0.1:$PORT" options g --defaults-max-provision soon
assert_match '^frugal ctl options: --defaults-max-provision "soon": expected a duration such as 10m' "$ERR" \
    "naming the option and its value"
assert_exit 2 "ctl options with a bad ratio" "$FRUGAL" ctl --addr "127.0.0.1:$PORT" options g --defaults-scale-down-utilization half
assert_match '"half": expected a number' "$ERR" "and says so"
assert_exit 2 "ctl options with two ids" "$FRUGAL" ctl --addr "127.0.0.1:$PORT" options g h
assert_match 'one node group id, not also "h"' "$ERR" "and says so"
assert_exit 2 "ctl pod-price with a bad quantity is a usage error" "$FRUGAL" ctl --addr "127.0.0.1:$PORT" pod-price --cpu 1x --memory 1Gi
assert_match 'invalid quantity "1x"' "$ERR" "naming the quantity"
assert_ok "ctl --help" "$FRUGAL" ctl --help
assert_match '^  increase ID DELTA' "$OUT" "help lists the verbs"
assert_status UNAVAILABLE "ctl against nothing" "$FRUGAL" ctl --addr "127.0.0.1:$PORT" --timeout 2000 health

log "options written NAME=VALUE (-c=FILE, --seeds=1) read as NAME VALUE"
assert_ok "check -c=FILE" "$FRUGAL" check -c="$TMP/good.yaml"
assert_match "OK" "$OUT" "the config was read"
W="$FRUGAL_SOURCE_DIR/bench/workloads"
run "$FRUGAL" replay -c "$W/cluster.yaml" "$W/web.yaml" --seeds 1 --hours 1 --strategy random -o csv
spaced=$OUT
assert_ok "replay --seeds=1 --hours=1 --strategy=random -o=csv" "$FRUGAL" replay -c="$W/cluster.yaml" \
    "$W/web.yaml" --seeds=1 --hours=1 --strategy=random -o=csv
assert_eq "$spaced" "$OUT" "the same report as with the values after a space"
run "$FRUGAL" check -c "$TMP/good.yaml" -x=1
assert_match 'unexpected .*-x=1' "$ERR" "a short option without a value stays as it is"
run "$FRUGAL" ctl --addr=127.0.0.1:1 --timeout=2000 health
assert_match "^UNAVAILABLE" "$OUT$ERR" "ctl --addr=HOST:PORT --timeout=MS: the address was used"

finish
