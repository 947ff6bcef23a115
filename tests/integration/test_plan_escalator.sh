#!/usr/bin/env bash
# `frugal plan`'s Escalator view (docs/escalator.md): per configured group the pods,
# requests, capacity, utilisation and the scale-up delta to scale_up_threshold, with
# the worked examples (250 % -> 6 nodes, from zero -> 3, scale_on_starve, max_size);
# nodes claimed by label, provider id, instance type and zone; CA's balance-similar
# split of the winner (1, 3, 6 nodes + 4 -> +3, +1); the bad input reported while the
# report goes on; threshold config errors; and the example of examples/escalator.
source "$(dirname "$0")/lib.sh"

# util_field GROUP KEY: KEY of GROUP's entry under utilisation.groups in $OUT (-o yaml).
util_field() {
    echo "$OUT" | awk -v g="  - group: \"$1\"" -v k="    $2: " '
        /^utilisation:$/ { in_u = 1; next }
        /^[^ ]/ { in_u = 0 }
        in_u && $0 == g { in_g = 1; next }
        /^  - / { in_g = 0 }
        in_g && index($0, k) == 1 { v = substr($0, length(k) + 1); gsub(/^"|"$/, "", v); print v; exit }'
}

# pod NS NAME NODE PHASE CPU MEMORY: a pod as kubectl prints it (NODE "" when unbound,
# CPU/MEMORY "" for no request), with a nodeSelector workload=jobs.
pod() {
    local req="" sep=""
    [ -n "$5" ] && req="\"cpu\": \"$5\"" && sep=", "
    [ -n "$6" ] && req="$req$sep\"memory\": \"$6\""
    cat <<EOF
{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "$2", "namespace": "$1", "uid": "uid-$2"},
 "spec": {"containers": [{"name": "main", "resources": {"requests": {$req}}}],
          "nodeSelector": {"workload": "jobs"}${3:+, "nodeName": "$3"}},
 "status": {"phase": "$4"}}
EOF
}

# node NAME ZONE PROVIDER_ID CPU [EXTRA LABELS JSON]: a 1-cpu / 4000M node of jobs-1x4.
node() {
    cat <<EOF
{"apiVersion": "v1", "kind": "Node",
 "metadata": {"name": "$1", "labels": {"node.kubernetes.io/instance-type": "jobs-1x4",
   "topology.kubernetes.io/zone": "$2", "workload": "jobs"${5:+, $5}}},
 "spec": {"providerID": "$3"},
 "status": {"allocatable": {"cpu": "$4", "memory": "4000M", "pods": "110"},
            "capacity": {"cpu": "1", "memory": "4096M", "pods": "110"}}}
EOF
}

# config FILE GROUP_LINES: the jobs-1x4 machine type and the node groups given.
config() {
    {
        echo 'machine_types: [{name: jobs-1x4, cpu: 1, memory: 4000M, price: 0.05}]'
        echo 'node_groups:'
        echo "$2"
    } >"$1"
}

log "the worked example: 10 pods of 500m / 100M on 2 nodes of 1000m / 4000M"
config "$TMP/one.yaml" '  - {id: jobs, machine_type: jobs-1x4, zone: z1, size: 2, max_size: 20, labels: {workload: jobs}}'
kube_list "$(node n1 z1 frugal://jobs/jobs-1 1)" "$(node n2 z1 frugal://jobs/jobs-2 1)" >"$TMP/two-nodes.json"
pods=()
for i in 0 1 2 3 4 5 6 7 8 9; do
    pods+=("$(pod batch "p$i" "n$((i % 2 + 1))" Running 500m 100M)")
done
kube_list "${pods[@]}" >"$TMP/ten.json"
assert_ok "plan yaml" "$FRUGAL" plan -c "$TMP/one.yaml" --pods "$TMP/ten.json" --nodes "$TMP/two-nodes.json" -o yaml
assert_eq nodes "$(yaml_nested utilisation nodes_from)" "nodes from NODES.json"
assert_eq 2 "$(util_field jobs nodes)" "2 nodes, by provider id"
assert_eq 10 "$(util_field jobs pods)" "10 pods"
assert_eq 5 "$(util_field jobs '  cpu')" "requests: 5 cpu (the first cpu: line)"
assert_eq 250 "$(util_field jobs cpu_percent)" "cpu 250 %"
assert_eq 12.5 "$(util_field jobs memory_percent)" "memory 12.5 %"
assert_eq 250 "$(util_field jobs used_percent)" "the larger is used"
assert_eq 70 "$(util_field jobs scale_up_threshold)" "default threshold 70"
assert_eq 6 "$(util_field jobs delta)" "delta ceil(5.142857) = 6"
assert_eq 8 "$(util_field jobs nodes_after)" "8 nodes"
assert_eq 62.5 "$(util_field jobs cpu_percent_after)" "then cpu 62.5 %"
assert_eq 3.125 "$(util_field jobs memory_percent_after)" "then memory 3.125 %"
assert_eq "[]" "$(yaml_nested utilisation warnings)" "no warnings"
assert_ok "plan table" "$FRUGAL" plan -c "$TMP/one.yaml" --pods "$TMP/ten.json" --nodes "$TMP/two-nodes.json"
assert_match '^  jobs +2 +10 +5 +2 +1000000000 +7812500Ki +250 +12.5 +250 +70 +6 +then 8 nodes at cpu 62.5 %, memory 3.125 %$' \
    "$OUT" "the table row"

log "max_size caps the delta"
config "$TMP/max.yaml" '  - {id: jobs, machine_type: jobs-1x4, zone: z1, size: 2, max_size: 5}'
assert_ok "plan max" "$FRUGAL" plan -c "$TMP/max.yaml" --pods "$TMP/ten.json" --nodes "$TMP/two-nodes.json" -o yaml
assert_eq 6 "$(util_field jobs delta_wanted)" "wants 6"
assert_eq 3 "$(util_field jobs delta)" "gets 3 under max_size 5"
assert_eq 100 "$(util_field jobs cpu_percent_after)" "then cpu 100 %"

log "the cluster cpu limit caps it further (with autoprovisioning)"
cat >>"$TMP/max.yaml" <<'EOF'
autoprovisioning: {enabled: true, machine_types: [jobs-1x4], zones: [z1], limits: {max_cpu: 3}}
EOF
if assert_ok "plan limits" "$FRUGAL" plan -c "$TMP/max.yaml" --pods "$TMP/ten.json" --nodes "$TMP/two-nodes.json" -o yaml; then
    assert_eq 1 "$(util_field jobs delta)" "3 cpu allowed, 2 used: one node"
fi
# The config gives no size: the 2 nodes NODES.json gives the group count toward the limit.
sed -i 's/size: 2, max_size: 5/max_size: 5/' "$TMP/max.yaml"
if assert_ok "plan limits, sized by NODES.json" "$FRUGAL" plan -c "$TMP/max.yaml" --pods "$TMP/ten.json" --nodes "$TMP/two-nodes.json" -o yaml; then
    assert_eq 1 "$(util_field jobs delta)" "the counted nodes use 2 of the 3 cpu: one node"
fi

log "from zero: 1800m pending on a group without nodes, threshold 70"
config "$TMP/zero.yaml" '  - {id: jobs, machine_type: jobs-1x4, zone: z1, max_size: 20, labels: {workload: jobs}}'
kube_list "$(pod batch a "" Pending 900m 100M)" "$(pod batch b "" Pending 900m 100M)" >"$TMP/1800m.json"
kube_list >"$TMP/no-nodes.json"
assert_ok "plan zero" "$FRUGAL" plan -c "$TMP/zero.yaml" --pods "$TMP/1800m.json" --nodes "$TMP/no-nodes.json" -o yaml
assert_eq 0 "$(util_field jobs nodes)" "no nodes"
assert_eq .inf "$(util_field jobs used_percent)" "utilisation +inf"
assert_eq true "$(util_field jobs from_zero)" "from zero"
assert_eq 3 "$(util_field jobs delta)" "ceil(1800 / 1000 / 70 x 100) = 3"
assert_ok "plan zero, no NODES.json: the group at its size 0" "$FRUGAL" plan -c "$TMP/zero.yaml" --pods "$TMP/1800m.json" -o yaml
assert_eq config "$(yaml_nested utilisation nodes_from)" "nodes from the config"
assert_eq 3 "$(util_field jobs delta)" "the same delta"

log "scale_on_starve: a pending pod below the threshold"
config "$TMP/starve.yaml" '  - {id: jobs, machine_type: jobs-1x4, zone: z1, size: 4, max_size: 20, scale_on_starve: true, labels: {workload: jobs}}
  - {id: calm, machine_type: jobs-1x4, zone: z2, size: 4, max_size: 20, scale_up_threshold: 90, labels: {workload: jobs}}'
kube_list "$(pod batch small "" Pending 100m 100M)" >"$TMP/small.json"
assert_ok "plan starve" "$FRUGAL" plan -c "$TMP/starve.yaml" --pods "$TMP/small.json" -o yaml
assert_eq 2.5 "$(util_field jobs used_percent)" "2.5 % on 4 template nodes"
assert_eq true "$(util_field jobs starved)" "starved"
assert_eq 1 "$(util_field jobs delta)" "one node all the same"
assert_eq 90 "$(util_field calm scale_up_threshold)" "threshold set"
assert_eq 0 "$(util_field calm pods)" "the pod counts once, toward the winner"

log "the split over similar groups: 1, 3, 6 nodes, +4"
config "$TMP/split.yaml" '  - {id: a, machine_type: jobs-1x4, zone: z1, size: 1, max_size: 20, labels: {workload: jobs}}
  - {id: b, machine_type: jobs-1x4, zone: z2, size: 3, max_size: 20, labels: {workload: jobs}}
  - {id: c, machine_type: jobs-1x4, zone: z3, size: 6, max_size: 20, labels: {workload: jobs}}
  - {id: other, machine_type: jobs-1x4, zone: z1, size: 0, max_size: 20, labels: {workload: other}}'
pods=()
for i in 0 1 2 3 4 5 6 7; do
    pods+=("$(pod batch "r$i" "" Pending 500m 100M)")
done
kube_list "${pods[@]}" >"$TMP/eight.json"
assert_ok "plan split" "$FRUGAL" plan -c "$TMP/split.yaml" --pods "$TMP/eight.json"
assert_match "^balance-similar split of a's 4 nodes: a \+3, b \+1, c \+0$" "$OUT" "A +3, B +1"
kube_list "$(pod batch r0 "" Pending 500m 100M)" >"$TMP/one-pod.json"
assert_ok "plan split one" "$FRUGAL" plan -c "$TMP/split.yaml" --pods "$TMP/one-pod.json" -o yaml
assert_match '^  balance_similar_split:$' "$OUT" "split in YAML"
assert_eq 1 "$(echo "$OUT" | awk '/^  - group: "a"$/ { a = 1; next } a && /^    nodes: / { print $2; exit }')" "+1 to A"
assert_eq 3 "$(echo "$OUT" | awk '/^  - group: "b"$/ { b = 1; next } b && /^    size: / { print $2; exit }')" "B at 3"

log "the split with the node counts of NODES.json (1, 3, 6), the config giving no size"
config "$TMP/split-nodes.yaml" '  - {id: a, machine_type: jobs-1x4, zone: z1, max_size: 20, labels: {workload: jobs}}
  - {id: b, machine_type: jobs-1x4, zone: z2, max_size: 20, labels: {workload: jobs}}
  - {id: c, machine_type: jobs-1x4, zone: z3, max_size: 20, labels: {workload: jobs}}'
nodes=("$(node a1 z1 gce://x/a1 1)")
for i in 1 2 3; do nodes+=("$(node "b$i" z2 "gce://x/b$i" 1)"); done
for i in 1 2 3 4 5 6; do nodes+=("$(node "c$i" z3 "gce://x/c$i" 1)"); done
kube_list "${nodes[@]}" >"$TMP/split-nodes.json"
pods=()
for i in 0 1 2 3 4 5 6 7; do
    pods+=("$(pod batch "r$i" "" Pending 500m 100M)")
done
kube_list "${pods[@]}" >"$TMP/eight.json"
assert_ok "plan split from NODES.json" "$FRUGAL" plan -c "$TMP/split-nodes.yaml" --pods "$TMP/eight.json" \
    --nodes "$TMP/split-nodes.json"
assert_match "^balance-similar split of [abc]'s 4 nodes: a \+3, b \+1, c \+0$" "$OUT" "A +3, B +1 from the counted nodes"

log "bad input is reported and the report goes on"
config "$TMP/bad.yaml" '  - {id: a, machine_type: jobs-1x4, zone: z1, size: 1, max_size: 20, labels: {workload: jobs}}
  - {id: b, machine_type: jobs-1x4, zone: z2, size: 2, max_size: 20, labels: {workload: jobs}}
  - {id: c, machine_type: jobs-1x4, zone: z3, size: 1, max_size: 20, labels: {workload: jobs}}'
kube_list "$(node a1 z9 gce://x/a1 1 '"frugal.io/node-group": "a"')" \
    "$(node b1 z2 gce://x/b1 1)" "$(node b2 z2 gce://x/b2 500m)" \
    "$(node c1 z3 frugal://c/c-1 1)" "$(node stray z7 gce://x/stray 1)" >"$TMP/bad-nodes.json"
kube_list "$(pod batch empty b1 Running "" "")" "$(pod batch cpu-only b1 Running 200m "")" \
    "$(pod batch lost gone Running 100m 1M)" "$(pod batch ok c1 Running 100m 1M)" >"$TMP/bad-pods.json"
assert_ok "plan bad input" "$FRUGAL" plan -c "$TMP/bad.yaml" --pods "$TMP/bad-pods.json" --nodes "$TMP/bad-nodes.json"
assert_match '^  node b2: group b: allocatable 500m cpu / .* differs from 1 / .* of its first node' "$OUT" "different allocatable"
assert_match '^  node stray: no configured group claims it' "$OUT" "unclaimed node"
assert_match '^  pod batch/empty: no cpu and memory requests: counted in group b' "$OUT" "pod without requests"
assert_match '^  pod batch/cpu-only: no memory request: counted in group b' "$OUT" "pod without a memory request"
assert_match '^  pod batch/lost: on node gone, which NODES.json does not list: left out' "$OUT" "unknown node"
assert_match '^  b +2 +2 +200m +1500m ' "$OUT" "b: both pods counted, 1500m of allocatable"
assert_match '^  a +1 +0 ' "$OUT" "a claims its node by label"
assert_match '^  c +1 +1 +100m ' "$OUT" "c claims its node by provider id"
assert_ok "plan bad input yaml" "$FRUGAL" plan -c "$TMP/bad.yaml" --pods "$TMP/bad-pods.json" --nodes "$TMP/bad-nodes.json" -o yaml
assert_eq 2 "$(util_field b pods_without_requests)" "two pods without requests"
assert_eq true "$(util_field b mixed_allocatable)" "mixed allocatable"
assert_eq 5 "$(echo "$OUT" | grep -c '^  - subject: ')" "five warnings"

log "a node without allocatable or capacity is reported and left out"
echo '{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n0", "labels": {"frugal.io/node-group": "a"}}, "status": {}}]}' >"$TMP/no-alloc.json"
assert_ok "plan, a node without resources" "$FRUGAL" plan -c "$TMP/bad.yaml" --pods "$TMP/one-pod.json" --nodes "$TMP/no-alloc.json"
assert_match '^  node n0: no allocatable or capacity cpu: left out$' "$OUT" "the node named"
assert_no_match 'inf %' "$OUT" "no utilisation of a node without room"
echo '{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n0", "labels": {"frugal.io/node-group": "a"}}, "status": {"allocatable": {"cpu": "2"}}}]}' >"$TMP/no-mem.json"
assert_ok "plan, a node with cpu but no memory" "$FRUGAL" plan -c "$TMP/bad.yaml" --pods "$TMP/one-pod.json" --nodes "$TMP/no-mem.json"
assert_match '^  node n0: no allocatable or capacity memory: left out$' "$OUT" "the node without memory named"
assert_no_match 'inf %' "$OUT" "and no infinite utilisation from it"

log "a cordoned node's capacity is left out, its pods still count"
kube_list "$(node b1 z2 gce://x/b1 1)" \
    "$(node b2 z2 gce://x/b2 1 | sed 's|"spec": {|"spec": {"unschedulable": true, |')" >"$TMP/cordoned-nodes.json"
kube_list "$(pod batch on-b1 b1 Running 500m 1M)" "$(pod batch on-b2 b2 Running 500m 1M)" >"$TMP/cordoned-pods.json"
assert_ok "plan with a cordoned node" "$FRUGAL" plan -c "$TMP/bad.yaml" --pods "$TMP/cordoned-pods.json" --nodes "$TMP/cordoned-nodes.json"
assert_match '^  node b2: cordoned \(spec.unschedulable\): left out of group b.s nodes and capacity' "$OUT" "the cordoned node named"
assert_match '^  b +1 +2 +1 +1 ' "$OUT" "b: one node, both pods, 1 core requested of 1"

log "a threshold of 0 or above 100 is a config error with FILE:LINE:COL"
config "$TMP/zero-threshold.yaml" '  - {id: a, machine_type: jobs-1x4, max_size: 2, scale_up_threshold: 0}'
assert_exit 1 "threshold 0" "$FRUGAL" plan -c "$TMP/zero-threshold.yaml" --pods "$TMP/ten.json"
assert_match "^$TMP/zero-threshold.yaml:3:[0-9]+: node_groups\\[0\\]\\.scale_up_threshold: must be greater than 0, got 0$" "$ERR" "0 rejected"
config "$TMP/big-threshold.yaml" '  - {id: a, machine_type: jobs-1x4, max_size: 2, scale_up_threshold: 150}'
assert_exit 1 "threshold 150" "$FRUGAL" check -c "$TMP/big-threshold.yaml"
assert_match "^$TMP/big-threshold.yaml:3:[0-9]+: node_groups\\[0\\]\\.scale_up_threshold: must be at most 100, got 150$" "$ERR" "150 rejected"

log "the example of examples/escalator runs as documented"
EX="$FRUGAL_SOURCE_DIR/examples/escalator"
assert_ok "example" "$FRUGAL" plan -c "$EX/frugal.yaml" --pods "$EX/pods.json" --nodes "$EX/nodes.json"
assert_match "^balance-similar split of jobs-a's 4 nodes: jobs-a \+3, jobs-b \+1, jobs-c \+0$" "$OUT" "example split"
assert_match '^  jobs-a +1 +9 +4500m ' "$OUT" "example: jobs-a's pods, pending ones included"
assert_match '^  node stray-1: no configured group claims it' "$OUT" "example: the stray node"
assert_ok "example yaml" "$FRUGAL" plan -c "$EX/frugal.yaml" --pods "$EX/pods.json" --nodes "$EX/nodes.json" -o yaml
assert_eq 450 "$(util_field jobs-a used_percent)" "example: 450 %"
assert_eq 6 "$(util_field jobs-a delta)" "example: delta 6"
assert_eq 0 "$(util_field jobs-b delta)" "example: jobs-b below 70 %"
assert_eq 1 "$(util_field jobs-c pods_without_requests)" "example: the debug shell"
assert_eq 6 "$(util_field jobs-c nodes)" "example: jobs-c by instance type and zone"
assert_eq 3 "$(util_field jobs-b nodes)" "example: jobs-b by label"
assert_ok "example without nodes" "$FRUGAL" plan -c "$EX/frugal.yaml" --pods "$EX/pods.json"
assert_match '^  utilisation: 15 pods bound to nodes left out: without --nodes NODES.json their nodes. groups are not known$' \
    "$OUT" "without --nodes the bound pods are said to be left out"

log "frugal replay: the escalator baseline beside CA's expanders, CA's split on similar groups"
assert_ok "replay" "$FRUGAL" replay -c "$FRUGAL_SOURCE_DIR/bench/workloads/cluster-jobs.yaml" \
    "$FRUGAL_SOURCE_DIR/bench/workloads/batch.yaml" --seeds 2 --hours 12 \
    --strategy random --strategy pricing-proposal --strategy escalator
assert_match '^  escalator +[0-9.]+ ' "$OUT" "an escalator row"
random_row=$(echo "$OUT" | awk '$1 == "random" { $1 = ""; print }')
pricing_row=$(echo "$OUT" | awk '$1 == "pricing-proposal" { $1 = ""; print }')
assert_eq "$random_row" "$pricing_row" "three similar groups: the split makes every choice the same"
assert_match '^escalator +Escalator: ' "$("$FRUGAL" replay --help 2>&1 | sed 's/^ *//')" "listed by --help"

finish
