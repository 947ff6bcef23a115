#!/usr/bin/env bash
# Every CloudProvider verb of `frugal ctl` against a running server: listing (the
# unmanaged group is hidden), sizes, refusals with their exact status and no change
# after them, instances, the template node, options of both generations, pricing of
# both generations, and NodeGroupForNode of an unknown node.
source "$(dirname "$0")/lib.sh"

PORT=$(free_port)
ADDR="127.0.0.1:$PORT"
GPU_LABEL="cloud.google.com/gke-accelerator"

# instance_state ID: the state of instance ID in the `nodes -o yaml` output in $OUT,
# "gone" when it is not listed.
instance_state() {
    echo "$OUT" | awk -v id="$1" '
        /^- id: / { cur = $3; gsub(/"/, "", cur) }
        /^  state: / && cur == id { s = $2; gsub(/"/, "", s); print s; found = 1 }
        END { if (!found) print "gone" }'
}

# boot_seconds is long, so instances stay "creating" and DecreaseTargetSize may drop them.
cat >"$TMP/frugal.yaml" <<EOF
listen:
  - address: 127.0.0.1:$PORT
provider:
  kind: simulated
  boot_seconds: 3600
pricing:
  cpu: 0.04
  memory_gib: 0.005
  gpu: 0.7
machine_types:
  - name: test-4
    cpu: 4
    memory: 16Gi
    price: 0.2
node_groups:
  - id: pool-a
    machine_type: n1-standard-2
    zone: us-central1-a
    min_size: 1
    max_size: 5
    labels: {team: web}
    taints: [{key: dedicated, value: web, effect: NoSchedule}]
    options: {scale_down_unneeded: 7m, max_node_provision: 12m}
  - id: pool-b
    machine_type: test-4
    zone: us-central1-b
    min_size: 0
    max_size: 3
  - id: main
    machine_type: n1-standard-2
    size: 2
    managed: false
EOF

start_server "$TMP/frugal.yaml"

log "health and listing"
assert_ok "health" ctl health && assert_eq SERVING "$OUT" "health answer"
assert_ok "health yaml" ctl -o yaml health && assert_eq SERVING "$(yaml_value status)" "health yaml status"
assert_ok "node-groups" ctl -o yaml node-groups
groups_yaml=$OUT
ids=$(echo "$groups_yaml" | sed -n 's/^- id: //p' | tr -d '"' | sort | tr '\n' ' ')
assert_eq "pool-a pool-b " "$ids" "node-groups lists the managed groups only"
assert_match '^  minSize: 1$' "$(echo "$groups_yaml" | sed -n '/^- id: "pool-a"$/,/^- /p')" "pool-a minSize"
assert_match '^  maxSize: 5$' "$(echo "$groups_yaml" | sed -n '/^- id: "pool-a"$/,/^- /p')" "pool-a maxSize"
assert_match '^  maxSize: 3$' "$(echo "$groups_yaml" | sed -n '/^- id: "pool-b"$/,$p')" "pool-b maxSize"
assert_ok "node-groups -o yaml after the verb" ctl node-groups -o yaml
assert_eq "$groups_yaml" "$OUT" "global options after the verb"
assert_exit 2 "a bad -o after the verb" ctl node-groups -o json
assert_ok "node-groups table" ctl node-groups
assert_match '^ID +MIN +MAX' "$OUT" "table header"
assert_no_match '^main ' "$OUT" "unmanaged group hidden in the table"

log "sizes"
assert_eq 1 "$(target_size pool-a)" "pool-a starts at min_size"
assert_eq 0 "$(target_size pool-b)" "pool-b starts at min_size"
assert_ok "target-size yaml" ctl -o yaml target-size pool-a && assert_eq 1 "$(yaml_value targetSize)" "targetSize yaml"
# Unknown fields are skipped whatever their wire type: {id: "pool-a", 11: group {1: 1}}.
printf '\x0a\x06pool-a\x5b\x08\x01\x5c' >"$TMP/group.bin"
assert_ok "an unknown group is skipped" ctl -o yaml raw \
    /clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider/NodeGroupTargetSize "$TMP/group.bin"
assert_eq OK "$(yaml_value status)" "a request with an unknown group is answered"
assert_match '^status: "OK"$' "$OUT" "raw -o yaml quotes the status, as every string"
assert_eq 0801 "$(yaml_value responseHex)" "targetSize 1, as without the group"

log "gpu label, gpu types, refresh, cleanup"
assert_ok "gpu-label" ctl gpu-label && assert_eq "$GPU_LABEL" "$OUT" "GPULabel"
assert_ok "gpu-types" ctl gpu-types
assert_ok "refresh" ctl refresh
assert_ok "cleanup" ctl cleanup

log "increase"
assert_ok "increase pool-a 2" ctl increase pool-a 2
assert_eq 3 "$(target_size pool-a)" "target after increase"
assert_ok "nodes pool-a" ctl -o yaml nodes pool-a
nodes_a=$OUT
assert_eq 3 "$(echo "$nodes_a" | grep -c '^- id: ')" "pool-a has 3 instances"
assert_eq 3 "$(echo "$nodes_a" | grep -c '^- id: "\{0,1\}frugal://pool-a/')" "instance ids are frugal://pool-a/..."
assert_eq 3 "$(echo "$nodes_a" | grep -Ec '^  state: "(creating|running)"$')" "instances are creating or running"
assert_eq 3 "$(echo "$nodes_a" | sed -n 's/^- id: //p' | sort -u | wc -l)" "instance ids are unique"
mapfile -t inst_a < <(echo "$nodes_a" | sed -n 's/^- id: //p' | tr -d '"')
assert_ok "nodes table" ctl nodes pool-a && assert_match '^ID +STATE' "$OUT" "nodes table header"

log "refusals change nothing"
assert_status FAILED_PRECONDITION "increase beyond max_size" ctl increase pool-a 3
assert_match 'max' "$ERR" "the refusal names the limit"
assert_eq 3 "$(target_size pool-a)" "no change after refused increase"
assert_status INVALID_ARGUMENT "increase by 0" ctl increase pool-a 0
assert_status INVALID_ARGUMENT "increase by -1" ctl increase pool-a -1
assert_eq 3 "$(target_size pool-a)" "no change after invalid increases"
assert_status NOT_FOUND "increase unknown group" ctl increase nosuch 1
assert_status NOT_FOUND "target-size unknown group" ctl target-size nosuch
assert_status NOT_FOUND "nodes of unknown group" ctl nodes nosuch
assert_status NOT_FOUND "template of unknown group" ctl template nosuch
assert_status NOT_FOUND "options of unknown group" ctl options nosuch
assert_status NOT_FOUND "decrease unknown group" ctl decrease nosuch -1
assert_status NOT_FOUND "delete-nodes unknown group" ctl delete-nodes nosuch frugal://nosuch/x
assert_status "FAILED_PRECONDITION|NOT_FOUND" "the unmanaged group is never scaled" ctl increase main 1
assert_status NOT_FOUND "no template for the unmanaged group" ctl template main
assert_match 'node group "main" is unmanaged' "$ERR" "saying it is unmanaged, not unknown"
assert_status INVALID_ARGUMENT "decrease with delta 1" ctl decrease pool-a 1
assert_status INVALID_ARGUMENT "decrease with delta 0" ctl decrease pool-a 0
assert_eq 3 "$(target_size pool-a)" "no change after invalid decreases"

log "decrease"
assert_ok "decrease pool-a -1" ctl decrease pool-a -1
assert_eq 2 "$(target_size pool-a)" "target after decrease"
run ctl -o yaml nodes pool-a
assert_eq 2 "$(echo "$OUT" | grep -Ec '^  state: "(creating|running)"$')" "one creating instance dropped"
assert_status FAILED_PRECONDITION "decrease under min_size" ctl decrease pool-a -2
assert_match 'min' "$ERR" "the refusal names min_size"
assert_eq 2 "$(target_size pool-a)" "no change after refused decrease"

log "delete-nodes"
assert_ok "increase pool-b 1" ctl increase pool-b 1
run ctl -o yaml nodes pool-b
inst_b=$(echo "$OUT" | sed -n 's/^- id: //p' | tr -d '"' | head -n 1)
assert_match '^frugal://pool-b/' "$inst_b" "pool-b instance id"
assert_status "INVALID_ARGUMENT|FAILED_PRECONDITION" "delete an instance of another group" \
    ctl delete-nodes pool-a "$inst_b"
assert_status "INVALID_ARGUMENT|FAILED_PRECONDITION" "delete an unknown instance" \
    ctl delete-nodes pool-a frugal://pool-a/no-such-node
assert_eq 2 "$(target_size pool-a)" "no change after refused delete"
assert_eq 1 "$(target_size pool-b)" "foreign group untouched"
run ctl -o yaml nodes pool-a
mapfile -t live_a < <(echo "$OUT" | awk '/^- id: /{id=$3} /^  state: "(creating|running)"$/{print id}' | tr -d '"')
assert_eq 2 "${#live_a[@]}" "two live pool-a instances"
assert_ok "delete one pool-a instance" ctl delete-nodes pool-a "${live_a[0]}"
assert_eq 1 "$(target_size pool-a)" "target drops by the deleted node"
run ctl -o yaml nodes pool-a
assert_match '^(deleting|gone)$' "$(instance_state "${live_a[0]}")" "a deleted instance is deleting or gone"
assert_status FAILED_PRECONDITION "delete under min_size" ctl delete-nodes pool-a "${live_a[1]}"
assert_eq 1 "$(target_size pool-a)" "no change after delete under min_size"

log "node-group-for-node"
assert_ok "for-node of a pool-a instance" ctl -o yaml node-group-for-node "${live_a[1]}"
assert_eq pool-a "$(yaml_value id)" "NodeGroupForNode by provider id"
assert_eq 5 "$(yaml_value maxSize)" "NodeGroupForNode carries maxSize"
assert_ok "for-node unknown node" ctl -o yaml node-group-for-node aws:///us-east-1a/i-0123 --name stranger
assert_eq "" "$(yaml_value id)" "unknown node: id \"\""
assert_ok "for-node by label" ctl -o yaml node-group-for-node "" --name real-node-1 --label frugal.io/node-group=pool-b
assert_eq pool-b "$(yaml_value id)" "NodeGroupForNode by frugal.io/node-group label"

log "template"
assert_ok "template pool-a" ctl -o yaml template pool-a
tpl=$OUT
assert_eq template-pool-a "$(yaml_value name "$tpl")" "template name"
info_len=$(yaml_nested wire nodeInfo "$tpl")
bytes_len=$(yaml_nested wire nodeBytes "$tpl")
assert_match '^[1-9][0-9]*$' "$info_len" "legacy nodeInfo (field 1) filled"
assert_eq "$info_len" "$bytes_len" "nodeInfo and nodeBytes carry the same node"
assert_eq linux "$(yaml_nested labels kubernetes.io/os "$tpl")" "label kubernetes.io/os"
assert_match '^(amd64|arm64)$' "$(yaml_nested labels kubernetes.io/arch "$tpl")" "label kubernetes.io/arch"
assert_match '.' "$(yaml_nested labels kubernetes.io/hostname "$tpl")" "label kubernetes.io/hostname"
assert_eq linux "$(yaml_nested labels beta.kubernetes.io/os "$tpl")" "label beta.kubernetes.io/os (kubelet sets it)"
assert_eq "$(yaml_nested labels kubernetes.io/arch "$tpl")" "$(yaml_nested labels beta.kubernetes.io/arch "$tpl")" \
    "label beta.kubernetes.io/arch"
assert_eq n1-standard-2 "$(yaml_nested labels node.kubernetes.io/instance-type "$tpl")" "label instance-type"
assert_eq us-central1-a "$(yaml_nested labels topology.kubernetes.io/zone "$tpl")" "label zone"
assert_eq us-central1 "$(yaml_nested labels topology.kubernetes.io/region "$tpl")" "label region"
assert_eq web "$(yaml_nested labels team "$tpl")" "group label team"
unique=$(echo "$tpl" | sed -n '/^labels:/,/^[a-z]/p' | grep -v 'kubernetes.io/hostname' | grep -c 'pool-a')
assert_eq 0 "$unique" "no label unique to the group (besides hostname)"
assert_match '^  - key: "dedicated"$' "$tpl" "taint key"
assert_match '^    value: "web"$' "$tpl" "taint value"
assert_match '^    effect: "NoSchedule"$' "$tpl" "taint effect"
assert_eq 2 "$(yaml_nested capacity cpu "$tpl")" "capacity cpu"
assert_match '^(7.5Gi|7680Mi|8053063680)$' "$(yaml_nested capacity memory "$tpl")" "capacity memory"
assert_eq 110 "$(yaml_nested capacity pods "$tpl")" "capacity pods"
assert_match '.' "$(yaml_nested capacity ephemeral-storage "$tpl")" "capacity ephemeral-storage"
assert_eq "" "$(yaml_nested capacity nvidia.com/gpu "$tpl")" "no GPU capacity"
assert_eq 2 "$(yaml_nested allocatable cpu "$tpl")" "allocatable cpu"
assert_match '^  - type: "Ready"$' "$tpl" "Ready condition"
assert_match '^    status: "?True"?$' "$tpl" "Ready is True"
assert_ok "template table" ctl template pool-b
assert_match '^Name: +template-pool-b$' "$OUT" "table shows the name"
assert_match '^cpu +4 +4$' "$OUT" "table shows cpu capacity and allocatable"

log "options"
assert_ok "options pool-a" ctl -o yaml options pool-a \
    --defaults-scale-down-unneeded 10m --defaults-scale-down-unready 20m --defaults-max-provision 15m
opts=$OUT
assert_eq 7m0s "$(yaml_value scaleDownUnneededTime "$opts")" "legacy unneeded = override"
assert_eq 7m0s "$(yaml_value scaleDownUnneededDuration "$opts")" "current unneeded = override"
assert_eq 12m0s "$(yaml_value maxNodeProvisionTime "$opts")" "legacy max provision = override"
assert_eq 12m0s "$(yaml_value maxNodeProvisionDuration "$opts")" "current max provision = override"
assert_eq 20m0s "$(yaml_value scaleDownUnreadyTime "$opts")" "legacy unready = default echoed"
assert_eq 20m0s "$(yaml_value scaleDownUnreadyDuration "$opts")" "current unready = default echoed"
assert_eq 0.5 "$(yaml_value scaleDownUtilizationThreshold "$opts")" "utilization echoed"
assert_eq 0.5 "$(yaml_value scaleDownGpuUtilizationThreshold "$opts")" "gpu utilization echoed"
# pool-b overrides nothing: UNIMPLEMENTED, so CA >= 1.35 keeps all of its own defaults.
assert_status UNIMPLEMENTED "options of a group without overrides" ctl options pool-b --defaults-max-provision 25m
assert_match 'pool-b' "$ERR" "the refusal names the group"
assert_ok "options pool-a without defaults" ctl -o yaml options pool-a --no-defaults
for f in scaleDownUnneededTime scaleDownUnreadyTime maxNodeProvisionTime \
    scaleDownUnneededDuration scaleDownUnreadyDuration maxNodeProvisionDuration; do
    assert_no_match '^(unset|0s|-.*)$' "$(yaml_value $f)" "$f filled and positive without defaults"
done
assert_ok "options table" ctl options pool-a && assert_match '^maxNodeProvisionDuration +12m0s$' "$OUT" "options table"

log "pricing"
assert_ok "node-price of an instance" ctl -o yaml node-price "$inst_b" --hours 2
assert_near 0.4 "$(yaml_value price)" "node price = 0.2/h x 2 h"
assert_ok "node-price legacy period" ctl node-price "$inst_b" --hours 2 --legacy
assert_near 0.4 "$OUT" "node price with meta.v1.Time period"
assert_ok "node-price of a template node" ctl node-price "" --name template-node-for-pool-b-4711 \
    --label node.kubernetes.io/instance-type=test-4
assert_near 0.2 "$OUT" "template node resolved by name"
assert_ok "node-price of a template node (pool-a)" ctl node-price "" --name template-node-for-pool-a-99
assert_near 0.095 "$OUT" "builtin n1-standard-2 price"
assert_ok "node-price by instance-type label" ctl node-price "" --name some-node \
    --label node.kubernetes.io/instance-type=test-4
assert_near 0.2 "$OUT" "priced from the instance-type label"
assert_status NOT_FOUND "node-price of an unknown node" ctl node-price aws:///x/i-1 --name stranger
assert_ok "node-price of a deleted instance (CA may still list its node)" ctl node-price frugal://pool-b/pool-b-999 --hours 2
assert_near 0.4 "$OUT" "priced as its group's node"
assert_status NOT_FOUND "node-price of a simulated id naming no group" ctl node-price frugal://nope/nope-1
assert_ok "node-group-for-node of that deleted instance" ctl node-group-for-node frugal://pool-b/pool-b-999
assert_eq "(no node group)" "$OUT" "but it belongs to no group: CA must not count it"
assert_status INVALID_ARGUMENT "node-price without a period" ctl node-price "$inst_b" --no-period
assert_status INVALID_ARGUMENT "node-price with an inverted period" ctl node-price "$inst_b" --hours -1
assert_ok "pod-price" ctl -o yaml pod-price --cpu 2 --memory 4Gi
assert_near 0.1 "$(yaml_value price)" "pod price 2 cpu x 0.04 + 4 GiB x 0.005"
assert_ok "pod-price legacy" ctl pod-price --cpu 2 --memory 4Gi --hours 3 --legacy
assert_near 0.3 "$OUT" "legacy pod price over 3 h"
assert_ok "pod-price millicores" ctl pod-price --cpu 500m --memory 512Mi --gpu 1
assert_near 0.7225 "$OUT" "pod price 0.5 cpu + 0.5 GiB + 1 GPU"
assert_status INVALID_ARGUMENT "pod-price without a period" ctl pod-price --cpu 1 --memory 1Gi --no-period
assert_status INVALID_ARGUMENT "pod-price inverted period" ctl pod-price --cpu 1 --memory 1Gi --hours -2 --legacy

log "nothing else moved"
assert_eq 1 "$(target_size pool-a)" "pool-a final target"
assert_eq 1 "$(target_size pool-b)" "pool-b final target"
stop_server

# Running instances are never dropped by DecreaseTargetSize.
log "decrease never drops running instances"
cat >"$TMP/running.yaml" <<EOF
listen:
  - address: 127.0.0.1:$PORT
provider:
  kind: simulated
  boot_seconds: 0
node_groups:
  - id: fast
    machine_type: n1-standard-2
    min_size: 0
    max_size: 4
EOF
start_server "$TMP/running.yaml"
assert_ok "increase fast 2" ctl increase fast 2
for _ in $(seq 1 20); do
    ctl refresh >/dev/null 2>&1
    [ "$(ctl -o yaml nodes fast 2>/dev/null | grep -c '^  state: "running"$')" -eq 2 ] && break
    sleep 0.2
done
run ctl -o yaml nodes fast
assert_eq 2 "$(echo "$OUT" | grep -c '^  state: "running"$')" "instances run after boot_seconds 0 and a refresh"
assert_status FAILED_PRECONDITION "decrease below running instances" ctl decrease fast -1
assert_eq 2 "$(target_size fast)" "no change after refused decrease"
stop_server

finish
