#!/usr/bin/env bash
# `frugal replay`: the reference workloads run, the figures are deterministic and in
# every output format, a trace replays, every bad input of docs/replay.md is refused
# with its position and changes nothing, and a server ranking with demand-fit answers
# BestOptions for pods it has never seen.
source "$(dirname "$0")/lib.sh"

W="$FRUGAL_SOURCE_DIR/bench/workloads"
CFG="$W/cluster.yaml"

log "the reference mix, every strategy, table"
assert_ok "replay mix" "$FRUGAL" replay -c "$CFG" "$W/mix.yaml" --seeds 3 --hours 24
for s in random most-pods least-waste pricing-proposal demand-fit; do
    assert_match "^  $s " "$OUT" "table row $s"
done
assert_match "^mix: 24.0 h, 3 seeds, [0-9]+ pods per seed" "$OUT" "table header"
assert_match "^  random .* 1.000 \[1.000-1.000\]  [0-9.]+ \[[0-9.-]+\]$" "$OUT" "random is its own reference"
assert_match "^  pricing-proposal .* 1.000 \[1.000-1.000\]$" "$OUT" "pricing-proposal is the VS PRICING reference"
TABLE1=$OUT

log "the later workloads and their clusters (bench/workloads, docs/replay.md)"
for pair in cluster.yaml:analytics.yaml cluster.yaml:ci.yaml cluster-gpu.yaml:gpu-models.yaml \
    cluster-gpu.yaml:gpu-small.yaml cluster-existing.yaml:existing.yaml; do
    assert_ok "replay ${pair#*:}" "$FRUGAL" replay -c "$W/${pair%%:*}" "$W/${pair#*:}" --seeds 1 \
        --hours 6 --strategy pricing-proposal --strategy demand-fit
    assert_match "^  demand-fit " "$OUT" "${pair#*:}: demand-fit row"
done

log "the robustness matrix's clusters and shapes load (bench/robustness.sh)"
R="$FRUGAL_SOURCE_DIR/bench/robustness"
W="$W" source "$FRUGAL_SOURCE_DIR/bench/derive.sh"
DERIVED=$(mktemp -d)
derive_scale_down "$DERIVED" scale-down-2m 2m
derive_jobs "$DERIVED"
assert_match "scale_down_unneeded: 2m" "$(cat "$DERIVED/scale-down-2m.yaml")" "derived delay"
SHAPES=("$R"/{tiny,near-node,half-node,memory-heavy,services,long-lived}.yaml "$DERIVED/jobs-33.yaml")
for c in "$R"/cluster-*.yaml "$DERIVED/scale-down-2m.yaml"; do
    assert_ok "replay on $(basename "$c")" "$FRUGAL" replay -c "$c" "${SHAPES[@]}" --seeds 1 \
        --hours 2 --strategy demand-fit
    assert_eq 7 "$(echo "$OUT" | grep -c '^  demand-fit ')" "$(basename "$c"): a row per shape"
done
rm -rf "$DERIVED"

log "production-like traces (bench/gen-trace.py, bench/production.sh) replay, cold and warm"
GEN=$(mktemp -d)
assert_ok "a cold trace" python3 "$FRUGAL_SOURCE_DIR/bench/gen-trace.py" 300 "$GEN/cold.jsonl" --owners 10
assert_ok "a warm trace" python3 "$FRUGAL_SOURCE_DIR/bench/gen-trace.py" 300 "$GEN/warm.jsonl" --owners 10 --warm
assert_eq 0 "$(grep -c '"t":0,' "$GEN/cold.jsonl")" "the cold week starts empty"
assert_match '^[1-9]' "$(grep -c '"t":0,' "$GEN/warm.jsonl")" "the warm week starts with pods running"
assert_ok "replay both" "$FRUGAL" replay -c "$W/cluster.yaml" "$GEN/cold.jsonl" "$GEN/warm.jsonl" \
    --seeds 1 --strategy pricing-proposal --strategy demand-fit
assert_eq 2 "$(echo "$OUT" | grep -c '^  demand-fit ')" "a row per trace"
rm -rf "$GEN"

log "deterministic: the same run twice gives the same figures"
assert_ok "replay mix again" "$FRUGAL" replay -c "$CFG" "$W/mix.yaml" --seeds 3 --hours 24
assert_eq "$TABLE1" "$OUT" "same seeds, same figures"

log "--decisions: every decision as a JSON line, the figures unchanged"
assert_ok "replay with --decisions" "$FRUGAL" replay -c "$CFG" "$W/mix.yaml" --seeds 3 --hours 24 \
    --decisions "$TMP/decisions.jsonl"
assert_eq "$TABLE1" "$OUT" "the same figures as without --decisions"
assert_ok "decision lines are JSON" python3 - "$TMP/decisions.jsonl" <<'EOF'
import json, sys
runs = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    assert d["workload"] == "mix" and 1 <= d["seed"] <= 3 and d["node_count"] >= 1, d
    assert 1 <= d["pods"] <= d["pending"] and d["options"] >= 1 and d["group"], d
    frugal = d["strategy"] in ("pricing-proposal", "demand-fit")
    assert ("score=" in d["figures"]) == frugal, d
    assert ("strategy=demand-fit" in d["figures"]) == (d["strategy"] == "demand-fit"), d
    runs.setdefault((d["strategy"], d["seed"]), []).append(d["time_s"])
strategies = {"random", "most-pods", "least-waste", "pricing-proposal", "demand-fit"}
assert {s for s, _ in runs} == strategies, runs.keys()
assert len(runs) == 15 and all(t == sorted(t) for t in runs.values())
EOF
assert_exit 1 "--decisions into a missing directory" "$FRUGAL" replay -c "$CFG" "$W/cache.yaml" \
    --seeds 1 --hours 2 --decisions "$TMP/missing/decisions.jsonl"
assert_match "^frugal replay: --decisions $TMP/missing/decisions.jsonl: No such file or directory$" \
    "$ERR" "one line naming the file"
assert_eq "" "$OUT" "no report when the decisions cannot be written"
assert_exit 1 "--decisions with a workload that cannot be read" "$FRUGAL" replay -c "$CFG" \
    "$TMP/missing.yaml" --decisions "$TMP/partial.jsonl"
assert_eq "" "$(ls "$TMP" | grep partial)" "neither the file nor its .tmp is left"
# Stopped midway (SIGTERM; SIGINT alike): the signal still ends it, and its temporary
# file goes with it.
"$FRUGAL" replay -c "$CFG" "$W/mix.yaml" --seeds 200 --decisions "$TMP/stopped.jsonl" \
    > /dev/null 2>&1 &
STOPPED=$!
for _ in $(seq 100); do
    ls "$TMP" | grep -q "stopped.jsonl.tmp" && break
    sleep 0.05
done
assert_match "stopped.jsonl.tmp.$STOPPED" "$(ls "$TMP")" "the decisions go to FILE.tmp.PID while it runs"
kill -TERM "$STOPPED"
STATUS=0
wait "$STOPPED" || STATUS=$?
assert_eq 143 "$STATUS" "SIGTERM still ends replay as a signal does"
assert_eq "" "$(ls "$TMP" | grep stopped)" "SIGTERM leaves neither the file nor its temporary file"

log "csv and json"
assert_ok "csv" "$FRUGAL" replay -c "$CFG" "$W/web.yaml" "$W/gpu.yaml" --strategy random \
    --strategy demand-fit --seeds 2 --hours 12 -o csv
assert_eq 5 "$(echo "$OUT" | wc -l | tr -d ' ')" "csv: a header and 2 workloads x 2 strategies"
assert_match "^workload,strategy,seeds,pods,unhostable,cost_mean,cost_min,cost_max," "$OUT" "csv header"
assert_match "^gpu,demand-fit,2," "$OUT" "csv row"
assert_ok "json" "$FRUGAL" replay -c "$CFG" "$W/cache.yaml" --strategy pricing-proposal --seeds 2 \
    --hours 12 -o json
assert_match '"workload": "cache", "strategy": "pricing-proposal", "hours": 12' "$OUT" "json row"
assert_match '"vs_pricing": \{"mean": 1.000000, "min": 1.000000, "max": 1.000000, "ci95": 0.000000, "min_seed": 1, "max_seed": 1\}' \
    "$OUT" "json VS figures carry their 95 % half-width"
if command -v python3 >/dev/null; then
    echo "$OUT" | python3 -c 'import json,sys; json.load(sys.stdin)' && pass || fail "json parses"
fi
assert_ok "one seed" "$FRUGAL" replay -c "$CFG" "$W/cache.yaml" --strategy pricing-proposal --seeds 1 \
    --hours 2 -o json
assert_match '"ci95": null, "min_seed": 1, "max_seed": 1\}' "$OUT" "one seed has no half-width (json null)"
# A workload is named after its file: a comma or a quote in the name is quoted (RFC 4180).
cp "$W/cache.yaml" "$TMP/ca,c\"he.yaml"
assert_ok "csv of an odd name" "$FRUGAL" replay -c "$CFG" "$TMP/ca,c\"he.yaml" --strategy random \
    --seeds 1 --hours 2 -o csv
assert_eq "38 38 ca,c\"he" "$(echo "$OUT" | python3 -c 'import csv,sys; r=list(csv.reader(sys.stdin)); print(len(r[0]), len(r[1]), r[1][0])')" \
    "csv: the odd name quoted, every row as wide as the header"
assert_ok "one seed, csv" "$FRUGAL" replay -c "$CFG" "$W/cache.yaml" --strategy pricing-proposal \
    --seeds 1 --hours 2 -o csv
assert_match ",first-fit,0,,$" "$OUT" "one seed has no half-width (csv empty)"

log "the fluid lower bound: never above any strategy's cost, the same for every strategy"
assert_ok "csv with the bound" "$FRUGAL" replay -c "$CFG" "$W/mix.yaml" "$W/gpu.yaml" --seeds 2 \
    --hours 24 -o csv
assert_match ",bound_mean,bound_min,bound_max,cost_bound_mean,cost_bound_min,cost_bound_max,bound_error,nodes_drained_mean,nodes_drained_min,nodes_drained_max,scale_down_utilization,placement,restart_at_hours,vs_random_ci95,vs_pricing_ci95$" \
    "$OUT" "csv bound columns, then the drained nodes, the simulator's options and the VS columns' 95 % half-widths"
assert_match ",0,first-fit,0,[0-9.]*,[0-9.]*$" "$OUT" "csv rows end with the options (defaults), then the half-widths"
# Two seeds: the half-width is t(1) = 12.706 times the spread of the mean, |a - b| / 2.
echo "$OUT" | awk -F, 'NR > 1 { w = 6.353 * ($23 - $22); if ($NF == "" || ($NF - w) ^ 2 > 1e-8 * (w + 1e-6) ^ 2 + 1e-10) { bad++; print "ci95: " $0 } }
    NR > 1 && $2 == "pricing-proposal" && $NF != 0 { bad++; print "the base against itself: " $0 }
    END { exit bad > 0 }' && pass || fail "vs_pricing_ci95 is the paired 95 % half-width over the seeds"
echo "$OUT" | awk -F, 'NR > 1 && !($24 > 0 && $28 >= 1 && $30 == "") { bad++; print "row: " $0 }
    NR > 1 { if (!($1 in b)) b[$1] = $24; else if (b[$1] != $24) { bad++; print "bound differs: " $0 } }
    END { exit bad > 0 }' && pass || fail "every row has a positive bound below its cost, one per workload"

log "a trace of kubectl pods, with one pod no group can host (counted, not fatal)"
pod() { # NAME CPU MEMORY OWNER
    printf '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "%s", "namespace": "default", "ownerReferences": [{"kind": "%s", "name": "x", "controller": true}]}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "%s", "memory": "%s"}}}]}}' "$1" "$4" "$2" "$3"
}
{
    echo "{\"t\": 0, \"pod\": $(pod a 500m 1Gi ReplicaSet), \"duration\": 7200}"
    echo "{\"t\": 30, \"pod\": $(pod b 2 4Gi Job), \"duration\": \"10m\"}"
    echo ""
    echo "{\"t\": \"2m\", \"pod\": $(pod huge 500 1Gi Job), \"duration\": 60}"
    echo "{\"t\": 600, \"pod\": $(pod c 1 12Gi StatefulSet), \"duration\": 3600}"
    echo "{\"t\": 700, \"pod\": $(pod huger 900 1Gi Job), \"duration\": 60}"
} >"$TMP/trace.jsonl"
assert_ok "replay trace" "$FRUGAL" replay -c "$CFG" "$TMP/trace.jsonl" --seeds 2
assert_match "^trace: 2.0 h, 2 seeds, 5 pods per seed, 2 that no group can host" "$OUT" "trace header"
assert_eq "frugal replay: $TMP/trace.jsonl:4: pod default/huge: no node group can host this pod: counted, not placed
frugal replay: $TMP/trace.jsonl:6: pod default/huger: no node group can host this pod: counted, not placed
frugal replay: $TMP/trace.jsonl: 2 pods no node group can host" \
    "$ERR" "each pod's trace line named on stderr"
log "every resource a pod asks for counts: an extended resource or hugepages no template lists"
named() { # NAME RESOURCE QUANTITY
    printf '{"t": 0, "pod": {"metadata": {"name": "%s", "namespace": "default"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi", "%s": "%s"}}}]}}, "duration": 600}\n' "$@"
}
{ named fpga example.com/fpga 1; named pages hugepages-2Mi 64Mi; named scratch ephemeral-storage 10Gi; named disk ephemeral-storage 200Gi; } >"$TMP/named.jsonl"
assert_ok "replay named resources" "$FRUGAL" replay -c "$CFG" "$TMP/named.jsonl" --seeds 1 --strategy random
assert_match "^named: 0.2 h, 1 seeds, 4 pods per seed, 3 that no group can host" "$OUT" \
    "only the pod within the templates' 100Gi ephemeral-storage is placed"
assert_match "named.jsonl:1: pod default/fpga: no node group can host" "$ERR" "example.com/fpga named"
assert_match "named.jsonl:2: pod default/pages: no node group can host" "$ERR" "hugepages named"
assert_match "named.jsonl:4: pod default/disk: no node group can host" "$ERR" "200Gi of ephemeral-storage named"
sed 's/"namespace": "default", //' "$TMP/named.jsonl" >"$TMP/no-ns.jsonl"
assert_ok "pods without a namespace" "$FRUGAL" replay -c "$CFG" "$TMP/no-ns.jsonl" --seeds 1 --strategy random
assert_match "no-ns.jsonl:1: pod default/fpga: no node group can host" "$ERR" "named in the default namespace, as Kubernetes does"
log "after --, every argument is a WORKLOAD file, even one named like an option"
{ named a example.com/fpga 1; named b ephemeral-storage 1Gi; } >"$TMP/-dash.jsonl"
assert_ok "a WORKLOAD after --" bash -c "cd '$TMP' && '$FRUGAL' replay -c '$CFG' --seeds 1 --strategy random -- -dash.jsonl"
assert_match "^-dash: 0.2 h, 1 seeds, 2 pods per seed, 1 that no group can host" "$OUT" "read as a trace"
sed 's/^families:$/&\n  - {name: giant, weight: 0.2, owner: Job, cpu: [300, 400], memory: 1Gi, lifetime: 10m}/' \
    "$FRUGAL_SOURCE_DIR/bench/workloads/web.yaml" >"$TMP/giant.yaml"
assert_ok "replay a mix with a family no group can host" "$FRUGAL" replay -c "$CFG" "$TMP/giant.yaml" \
    --seeds 1 --hours 2 --strategy random
assert_match "^frugal replay: $TMP/giant.yaml: family giant: some of its pods no node group can host: counted, not placed \([0-9]+ such pods in seed 1\)$" \
    "$ERR" "the family named on stderr"

log "a bound the solver cannot find: '-' with the reason, the rest of the report stands"
cat >"$TMP/small.yaml" <<'EOF'
node_groups:
  - {id: std-4, machine_type: n1-standard-4, min_size: 0, max_size: 1}
EOF
{
    echo "{\"t\": 0, \"pod\": $(pod a 3 1Gi ReplicaSet), \"duration\": 7200}"
    echo "{\"t\": 1800, \"pod\": $(pod b 3 1Gi ReplicaSet), \"duration\": 3600}"
} >"$TMP/two.jsonl"
assert_ok "replay past max_size" "$FRUGAL" replay -c "$TMP/small.yaml" "$TMP/two.jsonl" --seeds 1 \
    --strategy random --strategy demand-fit
assert_match "^  BOUND -: no feasible solution at 0.50 h: the pods running then need more nodes" \
    "$OUT" "the reason"
assert_match "^  demand-fit +[0-9.]+ .* - +- +[0-9]" "$OUT" "bound and ratio shown as -, the costs stand"
assert_ok "json past max_size" "$FRUGAL" replay -c "$TMP/small.yaml" "$TMP/two.jsonl" --seeds 1 \
    --strategy random -o json
assert_match '"bound": null, "cost_bound": null, "bound_error": "no feasible solution at 0.50 h' \
    "$OUT" "json bound error"

log "bad input: FILE:LINE:COL (or the trace line) and nothing printed on stdout"
printf '{"t": 0, "pod": {}, "duration": 60}\n{"t": 5, "pod": {, "duration": 60}\n' >"$TMP/bad.jsonl"
assert_exit 1 "malformed trace line" "$FRUGAL" replay -c "$CFG" "$TMP/bad.jsonl"
assert_match "bad.jsonl:2:[0-9]+: malformed trace line" "$ERR" "malformed line names line 2"
assert_no_match "\(line 1, column" "$ERR" "and no line of its own parse (it saw one line) [$ERR]"
assert_eq "" "$OUT" "no figures"
printf '{"t": 0, "pod": {}, "duration": -60}\n' >"$TMP/neg.jsonl"
assert_exit 1 "negative duration" "$FRUGAL" replay -c "$CFG" "$TMP/neg.jsonl"
assert_match "neg.jsonl:1:[0-9]+: duration: must not be negative" "$ERR" "negative duration"
printf '{"t": 0, "pod": {}, "duration": 60, "colour": 1}\n' >"$TMP/field.jsonl"
assert_exit 1 "unknown trace field" "$FRUGAL" replay -c "$CFG" "$TMP/field.jsonl"
assert_match "field.jsonl:1:[0-9]+: unknown trace field \"colour\"" "$ERR" "unknown trace field"

cat >"$TMP/fam.yaml" <<'EOF'
arrivals_per_hour: 10
families:
  - name: web
    cpu: 1
    memory: 1Gi
    lifetime: 1h
    colour: blue
EOF
assert_exit 1 "unknown family field" "$FRUGAL" replay -c "$CFG" "$TMP/fam.yaml"
assert_match "fam.yaml:7:5: families\[0\].colour: unknown family field" "$ERR" "unknown family field"
cat >"$TMP/rate.yaml" <<'EOF'
arrivals_per_hour: -3
families: [{name: web, cpu: 1, memory: 1Gi, lifetime: 1h}]
EOF
assert_exit 1 "negative rate" "$FRUGAL" replay -c "$CFG" "$TMP/rate.yaml"
assert_match "rate.yaml:1:20: arrivals_per_hour: must not be negative" "$ERR" "negative rate"
cat >"$TMP/life.yaml" <<'EOF'
arrivals_per_hour: 3
families: [{name: web, cpu: 1, memory: 1Gi, lifetime: [-5m, 1h]}]
EOF
assert_exit 1 "negative lifetime" "$FRUGAL" replay -c "$CFG" "$TMP/life.yaml"
assert_match "life.yaml:2:56: families\[0\].lifetime: must not be negative" "$ERR" "negative lifetime"

assert_exit 2 "unknown strategy" "$FRUGAL" replay -c "$CFG" "$W/web.yaml" --strategy cheapest
assert_match "unknown strategy \"cheapest\"" "$ERR" "unknown strategy named"
assert_match "demand-fit" "$ERR" "the strategies are listed"
: >"$TMP/empty.yaml"
assert_ok "check an empty config" "$FRUGAL" check -c "$TMP/empty.yaml"
assert_match "strategy demand-fit, cluster size auto" "$OUT" "demand-fit is the default strategy"

log "--first-seed: seed 3 alone decides as it does in a run of seeds 1 to 3"
assert_ok "replay seed 3 alone" "$FRUGAL" replay -c "$CFG" "$W/mix.yaml" --seeds 1 --first-seed 3 \
    --hours 24 --decisions "$TMP/seed3.jsonl"
assert_match "^mix: 24.0 h, 1 seeds \(seed 3\), [0-9]+ pods per seed" "$OUT" "the header names the seed"
assert_eq "$(python3 -c 'import json, sys; [print(l, end="") for l in open(sys.argv[1]) if json.loads(l)["seed"] == 3]' "$TMP/decisions.jsonl")" \
    "$(cat "$TMP/seed3.jsonl")" "the same decisions, line for line"
assert_ok "seeds 2 and 3 as json" "$FRUGAL" replay -c "$CFG" "$W/cache.yaml" --seeds 2 --first-seed 2 \
    --hours 6 --strategy random -o json
assert_eq 2 "$(echo "$OUT" | python3 -c 'import json, sys; print(json.load(sys.stdin)["first_seed"])')" \
    "json carries first_seed"
assert_ok "the worst seed of three" "$FRUGAL" replay -c "$CFG" "$W/cache.yaml" --seeds 3 --hours 12 \
    --strategy pricing-proposal --strategy demand-fit -o json
worst=$(echo "$OUT" | python3 -c 'import json, sys; v = json.load(sys.stdin)["results"][1]["vs_pricing"]; print(v["max_seed"], "%.6f" % v["max"])')
assert_match '^[1-3] [0-9.]+$' "$worst" "json names the seed of the max"
assert_ok "that seed alone" "$FRUGAL" replay -c "$CFG" "$W/cache.yaml" --seeds 1 --first-seed "${worst%% *}" \
    --hours 12 --strategy pricing-proposal --strategy demand-fit -o json
assert_eq "${worst#* }" "$(echo "$OUT" | python3 -c 'import json, sys; print("%.6f" % json.load(sys.stdin)["results"][1]["vs_pricing"]["mean"])')" \
    "run alone, the seed named gives the max"
assert_exit 2 "bad first seed" "$FRUGAL" replay -c "$CFG" "$W/web.yaml" --first-seed 1.5
assert_match "^frugal replay: --first-seed: expected a seed from 1 to 1000000000, got \"1.5\"$" "$ERR" \
    "first seed refused in one line"

printf 'ranking: {strategy: cheapest}\n' >"$TMP/strategy.yaml"
assert_exit 1 "unknown ranking.strategy" "$FRUGAL" check -c "$TMP/strategy.yaml"
assert_match "strategy.yaml:1:21: ranking.strategy: unknown strategy \"cheapest\"" "$ERR" "config strategy"
printf 'ranking: {cluster_size: 0}\n' >"$TMP/size.yaml"
assert_exit 1 "bad ranking.cluster_size" "$FRUGAL" check -c "$TMP/size.yaml"
assert_match "size.yaml:1:25: ranking.cluster_size: expected auto or a node count" "$ERR" "config size"
assert_exit 2 "no workload" "$FRUGAL" replay -c "$CFG"
assert_exit 2 "bad seeds" "$FRUGAL" replay -c "$CFG" "$W/web.yaml" --seeds 0
assert_exit 2 "bad scale-down utilization" "$FRUGAL" replay -c "$CFG" "$W/web.yaml" \
    --scale-down-utilization 1.5
assert_match "^frugal replay: --scale-down-utilization: expected a fraction above 0 and at most 1, got \"1.5\"$" \
    "$ERR" "scale-down utilization refused in one line"
assert_ok "replay with CA's scale-down" "$FRUGAL" replay -c "$CFG" "$W/web.yaml" --seeds 1 \
    --hours 12 --strategy demand-fit --scale-down-utilization 0.5
assert_match "^web: 12.0 h, 1 seeds, [0-9]+ pods per seed, nodes below utilisation 0.5 scaled down$" \
    "$OUT" "the header says the scale-down is on"
assert_exit 2 "bad placement" "$FRUGAL" replay -c "$CFG" "$W/web.yaml" --placement best-fit
assert_match "^frugal replay: --placement: expected first-fit, least-allocated or most-allocated, got \"best-fit\"$" \
    "$ERR" "placement refused in one line"
assert_ok "replay with least-allocated placement" "$FRUGAL" replay -c "$CFG" "$W/web.yaml" \
    --seeds 1 --hours 12 --strategy demand-fit --placement least-allocated
assert_match "^web: 12.0 h, 1 seeds, [0-9]+ pods per seed, pods placed least-allocated$" \
    "$OUT" "the header says the placement"
assert_ok "replay with first-fit placement" "$FRUGAL" replay -c "$CFG" "$W/web.yaml" --seeds 1 \
    --hours 12 --strategy demand-fit --placement first-fit
assert_match "^web: 12.0 h, 1 seeds, [0-9]+ pods per seed$" "$OUT" "first fit, the default, is not said"

assert_exit 2 "a strategy twice" "$FRUGAL" replay -c "$CFG" "$W/web.yaml" --strategy random --strategy random
assert_match "^frugal replay: --strategy random given twice$" "$ERR" "a strategy twice refused"

assert_exit 1 "a directory as a workload" "$FRUGAL" replay -c "$CFG" "$TMP" --seeds 1
assert_match "^frugal replay: cannot read $TMP: Is a directory$" "$ERR" "a directory is named as one"
assert_ok "no pod ran yet" "$FRUGAL" replay -c "$CFG" "$W/web.yaml" --hours 0.001 --seeds 1 \
    --strategy random --strategy pricing-proposal -o csv
assert_match "^web,random,1,0,0,([0.]+,){3},,,([0.]+,){6}1.000000,1.000000,1.000000,1.000000,1.000000,1.000000," "$OUT" "nothing bought by either: the same cost, VS 1"
assert_match "^web,random,1,0,0,([0.]+,){3},,,.*,0.000000,0.000000,0.000000,,,,," "$OUT" \
    "COST/IDEAL and COST/BOUND over nothing: empty, not 0"
assert_ok "over nothing, in the table" "$FRUGAL" replay -c "$CFG" "$W/web.yaml" --hours 0.001 --seeds 1 \
    --strategy random
assert_match "^  random +0.00 \[0.00-0.00\] +- +0.00 \[0.00-0.00\] +- " "$OUT" "shown as -"

log "--restart-at: frugal's strategies forget the pods they remembered, once, at that hour"
assert_exit 2 "restart not a number" "$FRUGAL" replay -c "$CFG" "$W/web.yaml" --restart-at soon
assert_match "^frugal replay: --restart-at: expected a positive number of hours up to 87840, got \"soon\"$" \
    "$ERR" "refused in one line"
{
    echo "{\"t\": 0, \"pod\": $(pod first 1 1Gi Job), \"duration\": 60}"
    echo "{\"t\": \"10000h\", \"pod\": $(pod last 1 1Gi Job), \"duration\": 60}"
} >"$TMP/long.jsonl"
assert_ok "a restart past a year, in a trace that long" "$FRUGAL" replay -c "$CFG" "$TMP/long.jsonl" \
    --seeds 1 --strategy demand-fit --restart-at 9000
assert_match "^long: 10000.0 h, 1 seeds, 2 pods per seed, frugal restarted at 9000 h" "$OUT" "the whole span"
assert_exit 2 "restart after the run" "$FRUGAL" replay -c "$CFG" "$W/web.yaml" --hours 12 \
    --restart-at 12 --decisions "$TMP/late.jsonl"
assert_match "^frugal replay: --restart-at 12: not before the end of web \(12 h\)$" "$ERR" \
    "names the workload and its span"
assert_eq "" "$(ls "$TMP" | grep late)" "no decisions file is left"
for r in none 6; do
    args=()
    [ $r = none ] || args=(--restart-at $r)
    assert_ok "replay, restart $r" "$FRUGAL" replay -c "$CFG" "$W/batch.yaml" --seeds 1 --hours 12 \
        --strategy random --strategy demand-fit "${args[@]}" --decisions "$TMP/restart-$r.jsonl"
    [ $r = none ] || assert_match "^batch: 12.0 h, 1 seeds, [0-9]+ pods per seed, frugal restarted at 6 h$" \
        "$OUT" "the header says when frugal restarted"
done
# Six hours in, the memory holds the Jobs frugal was asked about and their rate is known;
# the first decision after a restart sees no rate (fewer than two pods remembered).
assert_ok "the same decisions before the restart, a memory emptied at it" python3 - \
    "$TMP/restart-none.jsonl" "$TMP/restart-6.jsonl" <<'EOF'
import json, re, sys
def runs(path):
    out = {}
    for line in open(path):
        d = json.loads(line)
        out.setdefault(d["strategy"], []).append(d)
    return out
plain, restarted = runs(sys.argv[1]), runs(sys.argv[2])
assert plain["random"] == restarted["random"], "random keeps no memory: the same run"
before = [d for d in plain["demand-fit"] if d["time_s"] < 6 * 3600]
assert before and before == restarted["demand-fit"][:len(before)], "the same up to the restart"
rate = lambda d: float(re.search(r"arrivals_per_hour=([0-9.]+)", d["figures"]).group(1))
first = restarted["demand-fit"][len(before)]
assert first["time_s"] >= 6 * 3600, first
assert rate(first) == 0.0, first
same = [d for d in plain["demand-fit"] if d["time_s"] == first["time_s"]]
assert same and rate(same[0]) > 0, same
EOF

log "expander-only: a warning at start when the ranking depends on a size frugal cannot know"
PORT=$(free_port)
ADDR="127.0.0.1:$PORT"
printf 'listen: [{address: "127.0.0.1:%s"}]\nranking: {strategy: pricing-proposal}\n' "$PORT" \
    >"$TMP/expander-only.yaml"
start_server "$TMP/expander-only.yaml"
assert_match "cannot count the cluster's nodes" "$(cat "$SERVER_LOG")" "warned at start"
stop_server

log "demand-fit on a live server: pods never seen still get an answer, with its figures"
PORT=$(free_port)
ADDR="127.0.0.1:$PORT"
cat >"$TMP/demand.yaml" <<EOF
listen: [{address: "127.0.0.1:$PORT"}]
ranking: {strategy: demand-fit}
node_groups:
  - {id: std-8, machine_type: n1-standard-8, min_size: 0, max_size: 10}
  - {id: mem-8, machine_type: n1-highmem-8, min_size: 0, max_size: 10}
EOF
start_server "$TMP/demand.yaml"
assert_no_match "cannot count" "$(cat "$SERVER_LOG")" "no size warning under demand-fit"
cat >"$TMP/req.yaml" <<'EOF'
options:
  - {group: std-8, node_count: 1, pods: [{cpu: 1, memory: 6Gi}, {cpu: 1, memory: 6Gi}]}
  - {group: mem-8, node_count: 1, pods: [{cpu: 1, memory: 6Gi}, {cpu: 1, memory: 6Gi}]}
nodes:
  - {group: std-8, machine_type: n1-standard-8}
  - {group: mem-8, machine_type: n1-highmem-8}
EOF
assert_ok "best-options under demand-fit" ctl -o yaml best-options "$TMP/req.yaml"
assert_eq 'mem-8' "$(echo "$OUT" | awk '/group:/ { g = $3 } /winner: true/ { gsub(/"/, "", g); print g }')" \
    "memory-shaped pods go to the highmem group"
assert_match "ratio: 1.05" "$OUT" "demand-fit's figures parsed back from the debug string"
stop_server

finish
