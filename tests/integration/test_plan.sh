#!/usr/bin/env bash
# `frugal plan`: offline decisions from kubectl-style pod and node lists, no server.
# The winner among configured groups and its figures (checked against the formula of
# docs/ranking.md), selectors, taints and capacity deciding which group
# can host which pod, the cluster size from NODES.json changing the winner, max_size
# capping, similar groups, autoprovisioning proposals, YAML output, and the exit
# statuses for bad input (1, with PATH:LINE:COL) and usage errors (2).
source "$(dirname "$0")/lib.sh"

# option_field GROUP KEY: KEY of the scale_up_options entry of GROUP in $OUT (-o yaml).
option_field() {
    echo "$OUT" | awk -v g="- group: \"$1\"" -v k="  $2: " '
        $0 == g { in_g = 1; next }
        /^[^ ]/ { in_g = 0 }
        in_g && index($0, k) == 1 { v = substr($0, length(k) + 1); gsub(/^"|"$/, "", v); print v; exit }'
}

# pod JSON: pod NAME NAMESPACE PHASE CPU MEMORY [EXTRA SPEC JSON] [EXTRA METADATA JSON]
pod() {
    local name=$1 ns=$2 phase=$3 cpu=$4 mem=$5 spec=${6:-} meta=${7:-} tol
    tol='{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300}'
    if [[ $spec == *'"tolerations"'* ]]; then
        tol=""
    fi
    cat <<EOF
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "creationTimestamp": "2024-05-01T10:00:00Z",
                "labels": {"app": "$name"},
                "name": "$name",
                "namespace": "$ns",
                "resourceVersion": "1",
                "uid": "uid-$name"${meta:+,
                $meta}
            },
            "spec": {
                "containers": [
                    {
                        "image": "registry.k8s.io/pause:3.9",
                        "imagePullPolicy": "IfNotPresent",
                        "name": "main",
                        "resources": {"requests": {"cpu": $cpu, "memory": $mem}},
                        "terminationMessagePath": "/dev/termination-log",
                        "volumeMounts": []
                    }
                ],
                "dnsPolicy": "ClusterFirst",
                "restartPolicy": "Always",
                "securityContext": {},
                "tolerations": [$tol]${spec:+,
                $spec}
            },
            "status": {"phase": "$phase", "qosClass": "Burstable"}
        }
EOF
}

# pod_list POD_JSON...: a v1 List as kubectl prints it.
pod_list() {
    kube_list "$@"
}

# node_list N: N ready nodes.
node_list() {
    local i
    echo '{"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": ['
    for i in $(seq 1 "$1"); do
        [ "$i" = 1 ] || echo ','
        cat <<EOF
  {"apiVersion": "v1", "kind": "Node",
   "metadata": {"name": "node-$i", "labels": {"kubernetes.io/hostname": "node-$i"}},
   "spec": {"providerID": "frugal://main/main-$i"},
   "status": {"capacity": {"cpu": "2", "memory": "7864320Ki", "pods": "110"},
              "allocatable": {"cpu": "1930m", "memory": "6Gi", "pods": "110"},
              "conditions": [{"type": "Ready", "status": "True"}]}}
EOF
    done
    echo ']}'
}

cat >"$TMP/plan.yaml" <<'EOF'
ranking: {strategy: pricing-proposal}
node_groups:
  - id: small
    machine_type: n1-standard-2
    zone: us-central1-a
    max_size: 10
  - id: big
    machine_type: n1-standard-8
    zone: us-central1-a
    max_size: 10
  - id: web
    machine_type: n1-standard-4
    zone: us-central1-a
    max_size: 5
    labels: {team: web}
    taints: [{key: dedicated, value: web, effect: NoSchedule}]
  - id: full
    machine_type: n1-standard-2
    size: 3
    min_size: 3
    max_size: 3
  - id: main
    machine_type: n1-standard-2
    size: 2
    managed: false
EOF

pod_list \
    "$(pod a-1 default Pending '"500m"' '"512Mi"' '' '"ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a", "uid": "rs", "controller": true}]')" \
    "$(pod a-2 default Pending 1 1073741824)" \
    "$(pod running default Running '"4"' '"1Gi"' '"nodeName": "node-1"')" \
    "$(pod bound default Pending '"4"' '"1Gi"' '"nodeName": "node-2"')" \
    "$(pod huge batch Pending '"40"' '"1Gi"')" \
    "$(pod webby web Pending '"1"' '"1Gi"' '"nodeSelector": {"team": "web"}, "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}, {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}]')" \
    "$(pod intruder web Pending '"1"' '"1Gi"' '"nodeSelector": {"team": "web"}')" \
    "$(pod zoned web Pending '"1"' '"1Gi"' '"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["europe-west1-b"]}]}]}}}')" \
    "$(pod ds-agent kube-system Pending '"100m"' '"64Mi"' '' '"ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "ds", "controller": true}]')" \
    >"$TMP/pods.json"

log "the table: winner, figures, hosts and the pods nobody can host"
assert_ok "plan" "$FRUGAL" plan -c "$TMP/plan.yaml" --pods "$TMP/pods.json"
assert_eq "" "$ERR" "nothing on stderr"
assert_match '^cluster size: 5 nodes \(configured group sizes\); preferred node cpu: 2$' "$OUT" \
    "cluster size from the config: initial sizes 0 + 0 + 0 + 3 (full) + 2 (unmanaged main)"
assert_match '^pending pods: 6 of 9 \(1 DaemonSet pod left out\)$' "$OUT" "pending pods counted"
assert_match '^  \*  small  n1-standard-2  1  +2  ' "$OUT" "small wins with 1 node for 2 pods"
assert_match '^     big  +n1-standard-8  1  +2  ' "$OUT" "big is an option"
assert_match '^     web  +n1-standard-4  1  +1  ' "$OUT" "web hosts only the pod that selects and tolerates it"
assert_eq 1 "$(echo "$OUT" | grep -c '^  \*')" "a single winner"
assert_match '^  full: at max_size 3$' "$OUT" "a group at max_size is not an option"
assert_match '^  batch/huge: small: cpu 40 > 2; big: cpu 40 > 8; web: cpu 40 > 4; full: cpu 40 > 2$' "$OUT" \
    "too large for every group, and why"
assert_match '^  web/zoned: small: required node affinity; big: required node affinity; web: required node affinity; full: required node affinity$' \
    "$OUT" "an affinity no group satisfies"
assert_match '^  web/intruder: small: node selector team=web; big: node selector team=web; web: taint dedicated=web:NoSchedule; full: node selector team=web$' \
    "$OUT" "selecting a tainted group without tolerating its taint"
assert_no_match 'default/running|default/bound|ds-agent' "$OUT" "running, bound and DaemonSet pods are not pending pods"
assert_match '^  autoprovisioning is disabled$' "$OUT" "no proposals without autoprovisioning"

log "the figures, in YAML, against the formula"
assert_ok "plan -o yaml" "$FRUGAL" plan -c "$TMP/plan.yaml" --pods "$TMP/pods.json" -o yaml
assert_eq 5 "$(yaml_value cluster_size)" "yaml cluster_size"
assert_eq config "$(yaml_value cluster_size_from)" "from the config"
assert_eq 2 "$(yaml_value preferred_node_cpu)" "5 nodes: 2 cpu preferred"
assert_eq true "$(option_field small winner)" "small is the winner"
assert_eq false "$(option_field big winner)" "big is not"
assert_eq 1 "$(option_field small nodes)" "small needs one node"
# X = 0.5 cpu + 500Mi; T = 1.5 cpu + 1.5 GiB; P = catalog n1-standard-2.
X=$(awk 'BEGIN { printf "%.9f", 0.5 * 0.033174 + 500 / 1024 * 0.004446 }')
T=$(awk 'BEGIN { printf "%.9f", 1.5 * 0.033174 + 1.5 * 0.004446 }')
P=$(option_field small node_price)
assert_near 0.095 "$P" "P of n1-standard-2 from the catalog"
assert_near "$X" "$(yaml_value damper_price)" "X, the damper price"
assert_near "$T" "$(option_field small pods_price)" "T of small"
RATIO=$(awk -v p="$P" -v t="$T" -v x="$X" 'BEGIN { printf "%.9f", (p + x) / (t + x) }')
assert_near "$RATIO" "$(option_field small ratio)" "ratio of small"
assert_near 1 "$(option_field small unfitness)" "unfitness of small: 2 cpu, 2 preferred"
assert_near 1 "$(option_field small suppressed)" "suppressed of small"
assert_near "$RATIO" "$(option_field small score)" "score of small = its ratio"
assert_near 4 "$(option_field big unfitness)" "unfitness of big: 8 cpu against 2"
assert_near 2 "$(option_field web unfitness)" "unfitness of web: 4 cpu against 2"
assert_match '^  - "web/webby"$' "$OUT" "web's pods in YAML"
assert_match '^- pod: "batch/huge"$' "$OUT" "unhostable pods in YAML"
assert_match '^  reason: "at max_size 3"$' "$OUT" "not options in YAML"
assert_match '^  enabled: false$' "$OUT" "autoprovisioning disabled in YAML"

log "the cluster size from NODES.json changes the preferred node and the winner"
cat >"$TMP/sizes.yaml" <<'EOF'
ranking: {strategy: pricing-proposal}
node_groups:
  - {id: two, machine_type: n1-standard-2, zone: us-central1-a, max_size: 10}
  - {id: four, machine_type: n1-standard-4, zone: us-central1-a, max_size: 10}
EOF
pod_list "$(pod p1 default Pending '"1"' '"1Gi"')" "$(pod p2 default Pending '"1"' '"1Gi"')" \
    "$(pod p3 default Pending '"1"' '"1Gi"')" >"$TMP/three.json"
node_list 7 >"$TMP/nodes.json"
assert_ok "plan, no nodes" "$FRUGAL" plan -c "$TMP/sizes.yaml" --pods "$TMP/three.json" -o yaml
assert_eq 0 "$(yaml_value cluster_size)" "no groups sized: cluster size 0"
assert_eq true "$(option_field two winner)" "small cluster: 2-cpu nodes win"
assert_eq 2 "$(option_field two nodes)" "3 cpu on 2-cpu nodes: 2 nodes"
assert_near "$(awk 'BEGIN { printf "%.9f", 1 * (1 - (exp(2/15) - 1) / (exp(2/15) + 1)) + 1 }')" \
    "$(option_field two suppressed)" "unfitness 2 suppressed by 2 nodes"
# Packed as CA's estimator packs them: one 1.2-core pod per 2-core node, not 3.6 / 2.
pod_list "$(pod q1 default Pending '"1200m"' '"1Gi"')" "$(pod q2 default Pending '"1200m"' '"1Gi"')" \
    "$(pod q3 default Pending '"1200m"' '"1Gi"')" >"$TMP/bigger.json"
assert_ok "plan, 1.2-core pods" "$FRUGAL" plan -c "$TMP/sizes.yaml" --pods "$TMP/bigger.json" -o yaml
assert_eq 3 "$(option_field two nodes)" "three 1.2-core pods take three 2-core nodes"
assert_eq 1 "$(option_field four nodes)" "and one 4-core node"
assert_ok "plan, 7 nodes" "$FRUGAL" plan -c "$TMP/sizes.yaml" --pods "$TMP/three.json" --nodes "$TMP/nodes.json" -o yaml
assert_eq 7 "$(yaml_value cluster_size)" "cluster size from NODES.json"
assert_eq nodes "$(yaml_value cluster_size_from)" "said so"
assert_eq 4 "$(yaml_value preferred_node_cpu)" "7 nodes: 4 cpu preferred"
assert_eq true "$(option_field four winner)" "7 nodes: 4-cpu nodes win"
assert_eq false "$(option_field two winner)" "and 2-cpu ones lose"
assert_ok "table, 7 nodes" "$FRUGAL" plan -c "$TMP/sizes.yaml" --pods "$TMP/three.json" --nodes "$TMP/nodes.json"
assert_match "^cluster size: 7 nodes \\($TMP/nodes.json\\); preferred node cpu: 4$" "$OUT" "table header"
assert_match '^  \*  four ' "$OUT" "four marked"
sed 's/^ranking: {strategy: pricing-proposal}$/ranking: {strategy: pricing-proposal, cluster_size: 100}/' \
    "$TMP/sizes.yaml" >"$TMP/fixed.yaml"
assert_ok "plan, ranking.cluster_size" "$FRUGAL" plan -c "$TMP/fixed.yaml" --pods "$TMP/three.json" --nodes "$TMP/nodes.json" -o yaml
assert_eq 100 "$(yaml_value cluster_size)" "a fixed cluster_size wins over NODES.json"
assert_eq ranking "$(yaml_value cluster_size_from)" "and is named"
assert_eq 16 "$(yaml_value preferred_node_cpu)" "100 nodes: 16 cpu preferred"
assert_ok "table, ranking.cluster_size" "$FRUGAL" plan -c "$TMP/fixed.yaml" --pods "$TMP/three.json"
assert_match '^cluster size: 100 nodes \(ranking.cluster_size\); preferred node cpu: 16$' "$OUT" "the table names it"

log "demand-fit: options in rank order, and the rule that chose a winner without the lowest score"
cat >"$TMP/df.yaml" <<'EOF'
machine_types:
  - {name: g1-gpu-t4, cpu: 8, memory: 30Gi, gpu: 1, gpu_type: nvidia-tesla-t4, price: 0.73}
node_groups:
  - {id: cpu, machine_type: n1-standard-8, max_size: 10}
  - {id: gpu, machine_type: g1-gpu-t4, max_size: 5, taints: [{key: nvidia.com/gpu, effect: NoSchedule}]}
EOF
GPU_POD=$(pod trainer ml Pending '"2"' '"8Gi"' '"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]' | sed 's|"requests": {"cpu": "2", "memory": "8Gi"}|"requests": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}|')
pod_list "$(pod w-1 web Pending '"1"' '"2Gi"')" "$(pod w-2 web Pending '"1"' '"2Gi"')" \
    "$(pod w-3 web Pending '"1"' '"2Gi"')" "$(pod w-4 web Pending '"1"' '"2Gi"')" "$GPU_POD" >"$TMP/df.json"
assert_ok "plan, demand-fit" "$FRUGAL" plan -c "$TMP/df.yaml" --pods "$TMP/df.json"
assert_match '^  \*  cpu  +n1-standard-8 .* most pods first$' "$OUT" "the four pods' option wins, by the most pods first"
assert_eq "gpu" "$(echo "$OUT" | sed -n '/^scale-up options/,/^$/p' | sed -n 4p | awk '{print $1}')" \
    "the GPU option, whose score is lower, is listed after the winner"
assert_ok "plan, demand-fit, yaml" "$FRUGAL" plan -c "$TMP/df.yaml" --pods "$TMP/df.json" -o yaml
assert_eq true "$(option_field cpu most_pods_first)" "most_pods_first in YAML"
assert_eq false "$(option_field gpu most_pods_first)" "and only for the winner"
assert_match '^  figures: "strategy=demand-fit node_price=0.380000 .* most_pods_first=1"$' "$OUT" \
    "the figures as BestOptions' debug carries them"
assert_eq '"cpu"' "$(echo "$OUT" | grep -m1 '^- group: ' | cut -d' ' -f3)" "YAML in the same order"
GPU_SCORE=$(option_field gpu score) CPU_SCORE=$(option_field cpu score)
awk -v g="$GPU_SCORE" -v c="$CPU_SCORE" 'BEGIN { exit !(g < c) }' && pass ||
    fail "the GPU option scores lower ($GPU_SCORE against $CPU_SCORE)"

log "max_size caps the node count; similar groups in two zones: one winner"
cat >"$TMP/zones.yaml" <<'EOF'
ranking: {strategy: pricing-proposal}
node_groups:
  - {id: za, machine_type: n1-standard-2, zone: us-central1-a, max_size: 1}
  - {id: zb, machine_type: n1-standard-2, zone: us-central1-b, max_size: 1}
EOF
assert_ok "plan zones" "$FRUGAL" plan -c "$TMP/zones.yaml" --pods "$TMP/three.json"
assert_match '^  \*  za +n1-standard-2 +1 +2 +.*needs 2 nodes, capped by max_size 1: holds the pods those take$' \
    "$OUT" "capped as CA's estimator caps it: the pods one node takes, noted"
assert_match '^     zb +n1-standard-2 +1 +2 ' "$OUT" "the similar group ties but is not selected"

log "the balance-similar split leaves out similar groups the pods cannot use"
cat >"$TMP/zones3.yaml" <<'EOF'
ranking: {strategy: pricing-proposal}
node_groups:
  - {id: za, machine_type: n1-standard-2, zone: us-central1-a, max_size: 10}
  - {id: zb, machine_type: n1-standard-2, zone: us-central1-b, max_size: 10}
  - {id: zc, machine_type: n1-standard-2, zone: us-central1-c, max_size: 10}
EOF
PIN='"nodeSelector": {"topology.kubernetes.io/zone": "us-central1-b"}'
pod_list "$(pod b1 default Pending '"1500m"' '"1Gi"' "$PIN")" "$(pod b2 default Pending '"1500m"' '"1Gi"' "$PIN")" \
    "$(pod b3 default Pending '"1500m"' '"1Gi"' "$PIN")" >"$TMP/pinned.json"
assert_ok "plan pinned" "$FRUGAL" plan -c "$TMP/zones3.yaml" --pods "$TMP/pinned.json"
assert_match "^balance-similar split of zb's 3 nodes: zb \+3 \(no similar group\)$" "$OUT" \
    "the other zones get none of zb's nodes"
assert_eq 1 "$(echo "$OUT" | grep -c '^  \*')" "one winner among similar groups"

log "a node runs 110 pods: 230 pods of 10m need 3 nodes, not the one their cpu fills"
TINY=()
for i in $(seq 1 230); do TINY+=("$(pod "t$i" default Pending '"10m"' '"16Mi"')"); done
pod_list "${TINY[@]}" >"$TMP/tiny.json"
cat >"$TMP/one.yaml" <<'EOF'
ranking: {strategy: pricing-proposal}
node_groups:
  - {id: s8, machine_type: n1-standard-8, max_size: 10}
EOF
assert_ok "plan tiny" "$FRUGAL" plan -c "$TMP/one.yaml" --pods "$TMP/tiny.json"
assert_match '^  \*  s8 +n1-standard-8 +3 +230 ' "$OUT" "3 nodes for 230 pods"

log "autoprovisioning proposals"
cat >"$TMP/nap.yaml" <<'EOF'
ranking: {strategy: pricing-proposal}
node_groups:
  - {id: small, machine_type: n1-standard-2, zone: us-central1-a, max_size: 10}
autoprovisioning:
  enabled: true
  machine_types: [n1-standard-1, n1-standard-2, n1-standard-4]
  zones: [us-central1-a]
EOF
assert_ok "plan nap" "$FRUGAL" plan -c "$TMP/nap.yaml" --pods "$TMP/pods.json"
# Node counts leave the 70 % headroom: 1 cpu on 1-cpu nodes takes 2, 2.5 cpu takes 4.
assert_match '^  nap-n1-standard-1-us-central1-a-[0-9a-f]+ +n1-standard-1 +us-central1-a +team=web +dedicated=web:NoSchedule +1 +2 ' \
    "$OUT" "the tainted pod gets its own labelled, tainted group"
assert_match '^  nap-n1-standard-1-us-central1-a-[0-9a-f]+ +n1-standard-1 +us-central1-a +team=web +- +3 +4 ' "$OUT" \
    "the untainted pods on the cheapest type, the selector folded in"
assert_match '^unschedulable \(no allowed machine type serves them\):$' "$OUT" "unschedulable header"
assert_match '^  batch/huge$' "$OUT" "40 cpu fits no allowed type"
assert_match '^  web/zoned$' "$OUT" "a zone outside the allowed ones"
assert_ok "plan nap yaml" "$FRUGAL" plan -c "$TMP/nap.yaml" --pods "$TMP/pods.json" -o yaml
assert_match '^  enabled: true$' "$OUT" "enabled"
assert_match '^  - group: "nap-n1-standard-1-us-central1-a-[0-9a-f]+"$' "$OUT" "a proposal in YAML"
assert_match '^      "team": "web"$' "$OUT" "its labels"
assert_match '^    - key: "dedicated"$' "$OUT" "its taints"
assert_match '^  - "batch/huge"$' "$OUT" "unschedulable in YAML"

log "resources beyond cpu, memory and GPUs: extended resources, ephemeral storage"
res_pod() { # NAME REQUESTS_JSON
    echo "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"$1\", \"namespace\": \"hw\"}, \"spec\": {\"containers\": [{\"name\": \"c\", \"resources\": {\"requests\": $2}}]}, \"status\": {\"phase\": \"Pending\"}}"
}
pod_list "$(res_pod fpga '{"cpu": "1", "memory": "1Gi", "example.com/fpga": "1"}')" \
    "$(res_pod disk '{"cpu": "1", "memory": "1Gi", "ephemeral-storage": "200Gi"}')" \
    "$(res_pod scratch '{"cpu": "1", "memory": "1Gi", "ephemeral-storage": "20Gi"}')" >"$TMP/res.json"
assert_ok "plan with extended resources" "$FRUGAL" plan -c "$TMP/nap.yaml" --pods "$TMP/res.json"
assert_match '^  hw/fpga: small: example.com/fpga 1 > 0$' "$OUT" "no configured group has an FPGA"
assert_match '^  hw/disk: small: ephemeral-storage 200Gi > 100Gi$' "$OUT" "more storage than a template node"
assert_match '^  \*  small +n1-standard-2 +1 +1 ' "$OUT" "the pod within the storage is hosted"
assert_match '^  nap-n1-standard-1-us-central1-a +n1-standard-1 +us-central1-a +- +- +1 ' "$OUT" \
    "a proposal serves only that pod"
assert_eq $'  hw/fpga\n  hw/disk' "$(echo "$OUT" | sed -n '/^unschedulable (no allowed machine type serves them):$/,$p' | tail -n +2)" \
    "no proposal carries an FPGA or more storage"

log "no pending pods; kubectl -o yaml input; a single pod"
pod_list "$(pod running default Running '"1"' '"1Gi"' '"nodeName": "node-1"')" >"$TMP/none.json"
assert_ok "nothing pending" "$FRUGAL" plan -c "$TMP/plan.yaml" --pods "$TMP/none.json"
assert_match '^pending pods: 0 of 1$' "$OUT" "no pending pods"
assert_match '^  none$' "$OUT" "no options"
cat >"$TMP/pods.yaml" <<'EOF'
apiVersion: v1
kind: List
items:
- kind: Pod
  metadata: {name: y, namespace: ns}
  spec:
    containers:
    - name: c
      resources: {requests: {cpu: 1500m, memory: 1Gi}}
  status: {phase: Pending}
EOF
assert_ok "YAML input" "$FRUGAL" plan -c "$TMP/sizes.yaml" --pods "$TMP/pods.yaml" -o yaml
assert_eq true "$(option_field two winner)" "YAML pods ranked"
echo '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "solo"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": 3}}}]}, "status": {"phase": "Pending"}}' >"$TMP/solo.json"
assert_ok "a single pod" "$FRUGAL" plan -c "$TMP/sizes.yaml" --pods "$TMP/solo.json" -o yaml
assert_eq true "$(option_field four winner)" "3 cpu: only the 4-cpu group hosts it"
assert_eq "" "$(option_field two winner)" "the 2-cpu group is no option"

log "bad input: exit 1 with PATH:LINE:COL"
printf '{\n  "items": [\n    {"kind": "Pod",\n  }' >"$TMP/broken.json"
assert_exit 1 "broken JSON" "$FRUGAL" plan -c "$TMP/plan.yaml" --pods "$TMP/broken.json"
assert_match "^$TMP/broken.json:[0-9]+:[0-9]+: " "$ERR" "syntax error with a position"
printf '{"items": [\n  {"kind": "Pod", "spec": {"containers": [{"resources": {"requests": {"cpu": "two"}}}]}}]}' \
    >"$TMP/badqty.json"
assert_exit 1 "bad quantity" "$FRUGAL" plan -c "$TMP/plan.yaml" --pods "$TMP/badqty.json"
assert_match "^$TMP/badqty.json:2:[0-9]+: items\\[0\\]\\.spec\\.containers\\[0\\]\\.resources\\.requests\\.cpu: bad quantity \"two\"" \
    "$ERR" "bad quantity named with its path"
echo '{"items": {"a": 1}}' >"$TMP/notlist.json"
assert_exit 1 "items not a list" "$FRUGAL" plan -c "$TMP/plan.yaml" --pods "$TMP/notlist.json"
assert_match "^$TMP/notlist.json:1:11: items: expected a sequence" "$ERR" "items must be a sequence"
: >"$TMP/empty.json"
assert_exit 1 "empty file" "$FRUGAL" plan -c "$TMP/plan.yaml" --pods "$TMP/empty.json"
assert_match "^$TMP/empty.json:1:1: empty document" "$ERR" "empty input"
assert_exit 1 "pods as nodes" "$FRUGAL" plan -c "$TMP/plan.yaml" --pods "$TMP/pods.json" --nodes "$TMP/pods.json"
assert_match "^$TMP/pods.json:[0-9]+:[0-9]+: items\\[0\\]\\.kind: Pod, expected Node" "$ERR" "a pod list is not a node list"
assert_exit 1 "missing file" "$FRUGAL" plan -c "$TMP/plan.yaml" --pods "$TMP/nope.json"
assert_match "cannot read $TMP/nope.json" "$ERR" "unreadable file"
printf 'node_groups:\n  - {id: a, machine_type: n1-nonesuch, max_size: 1}\n' >"$TMP/badcfg.yaml"
assert_exit 1 "bad config" "$FRUGAL" plan -c "$TMP/badcfg.yaml" --pods "$TMP/pods.json"
assert_match "^$TMP/badcfg.yaml:2:[0-9]+: " "$ERR" "config errors as frugal check prints them"

log "usage errors: exit 2"
assert_exit 2 "no --pods" "$FRUGAL" plan -c "$TMP/plan.yaml"
assert_exit 2 "no -c" "$FRUGAL" plan --pods "$TMP/pods.json"
assert_exit 2 "unknown option" "$FRUGAL" plan -c "$TMP/plan.yaml" --pods "$TMP/pods.json" --frobnicate
assert_exit 2 "missing value" "$FRUGAL" plan -c "$TMP/plan.yaml" --pods
assert_exit 2 "bad format" "$FRUGAL" plan -c "$TMP/plan.yaml" --pods "$TMP/pods.json" -o json
assert_ok "help" "$FRUGAL" plan --help
assert_match '^usage: frugal plan ' "$OUT" "usage on stdout"

finish
