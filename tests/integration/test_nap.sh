#!/usr/bin/env bash
# Node auto-provisioning through the real server (issue 4): theoretical groups listed
# and created with an unmodified CA's call pattern (NodeGroups -> TemplateNodeInfo ->
# IncreaseSize -> NodeGroupNodes), the design's limit example, TC8 (no quota left),
# min limits on DeleteNodes, every frugal.v1.Autoprovisioning RPC with its bad input,
# proposals TC1-TC6, persistence across a restart, and TC7 (empty groups deleted after
# the TTL by the server's 1 s maintenance tick).
source "$(dirname "$0")/lib.sh"

PORT=$(free_port)
OPS=$(free_port)
while [ "$OPS" = "$PORT" ]; do OPS=$(free_port); done
ADDR="127.0.0.1:$PORT"
STATE="$TMP/state.yaml"
ZONE=us-central1-a
HM=nap-n1-highmem-4-$ZONE
S1=nap-n1-standard-1-$ZONE
S4=nap-n1-standard-4-$ZONE

# The design's limit example: "main" unmanaged 2 x n1-standard-2 (4 cores), "as"
# 1 x n1-standard-16 (16 cores, 0..2); the autoprovisioned n1-highmem-4 group is grown
# to 2 nodes below. max_cpu 32, min_cpu 20.
write_config() {
    local ttl=$1
    cat >"$TMP/frugal.yaml" <<EOF
listen:
  - address: 127.0.0.1:$PORT
ops_listen: 127.0.0.1:$OPS
state_file: $STATE
provider:
  kind: simulated
  boot_seconds: 0
node_groups:
  - {id: main, machine_type: n1-standard-2, zone: $ZONE, size: 2, managed: false}
  - {id: as, machine_type: n1-standard-16, zone: $ZONE, min_size: 0, max_size: 2, size: 1}
autoprovisioning:
  enabled: true
  prefix: nap
  machine_types: [n1-standard-1, n1-standard-4, n1-highmem-4]
  zones: [$ZONE]
  label_sets: [{}, {disktype: ssd}]
  limits: {min_cpu: 20, max_cpu: 32}
  max_node_groups: 3
  empty_group_ttl: $ttl
EOF
}

# group_field ID KEY: a top-level field of `group-info ID -o yaml` ("ERR" on failure).
group_field() {
    local out
    if out=$(ctl -o yaml group-info "$1" 2>/dev/null); then
        yaml_value "$2" "$out"
    else
        echo "ERR"
    fi
}

# max_size ID: maxSize advertised by NodeGroups for ID ("absent" when not listed).
max_size() {
    ctl -o yaml node-groups | awk -v id="$1" '
        /^- id: / { cur = $3; gsub(/"/, "", cur) }
        /^  maxSize: / && cur == id { print $2; found = 1 }
        END { if (!found) print "absent" }'
}

# instance_ids ID: the provider ids of a group's instances, one per line.
instance_ids() {
    ctl -o yaml nodes "$1" | sed -n 's/^- id: "\{0,1\}\([^"]*\)"\{0,1\}$/\1/p'
}

# field_is ID KEY VALUE: group_field ID KEY is VALUE right now.
field_is() {
    [ "$(group_field "$1" "$2")" = "$3" ]
}

# wait_for SECONDS CMD...: retry CMD every 0.2 s until it succeeds.
wait_for() {
    local secs=$1 i
    shift
    for i in $(seq 1 $((secs * 5))); do
        "$@" && return 0
        sleep 0.2
    done
    return 1
}

log "limits with min > max are a config error"
cat >"$TMP/bad.yaml" <<EOF
autoprovisioning:
  enabled: true
  limits: {min_cpu: 10, max_cpu: 8}
EOF
assert_exit 1 "check refuses min_cpu > max_cpu" "$FRUGAL" check -c "$TMP/bad.yaml"
assert_match 'bad.yaml:[0-9]+:[0-9]+: .*min_cpu' "$OUT$ERR" "error names the file, line and key"

write_config 10m
start_server "$TMP/frugal.yaml"

log "catalog and limits"
assert_ok "machine-types" ctl -o yaml machine-types
assert_eq 3 "$(echo "$OUT" | grep -c '^- name: ')" "allowed machine types"
assert_match '^- name: "n1-highmem-4"' "$OUT" "highmem listed"
assert_no_match 'n1-standard-8' "$OUT" "types outside the allowed list"
assert_ok "limits" ctl -o yaml limits
assert_match 'resource: "cpu"' "$OUT" "cpu limit"
assert_match '^  min: 20$' "$OUT" "min_cpu"
assert_match '^  max: 32$' "$OUT" "max_cpu"

log "theoretical groups listed for an unmodified CA"
assert_ok "node-groups" ctl -o yaml node-groups
NG_LIST=$OUT
assert_match "^- id: \"?$HM\"?$" "$NG_LIST" "theoretical highmem group"
assert_match "^- id: \"?$S1\"?$" "$NG_LIST" "theoretical standard-1 group"
assert_match "^- id: \"?$S4\"?$" "$NG_LIST" "theoretical standard-4 group"
SSD=$(echo "$NG_LIST" | grep -Eo "$S4-[0-9a-f]{8}" | head -n 1)
assert_match "^$S4-[0-9a-f]{8}$" "$SSD" "label-set group id with its hash"
assert_no_match '^- id: "?main"?$' "$NG_LIST" "unmanaged group hidden"
assert_match 'theoretical' "$NG_LIST" "debug says theoretical"
# 20 cores used, 12 left: 3 x n1-highmem-4, 12 x n1-standard-1; "as" cannot grow.
assert_eq 3 "$(max_size "$HM")" "highmem maxSize cut by max_cpu"
assert_eq 12 "$(max_size "$S1")" "standard-1 maxSize cut by max_cpu"
assert_eq 1 "$(max_size as)" "as maxSize cut by max_cpu"
METRICS=$(curl -s --max-time 5 "http://127.0.0.1:$OPS/metrics")
assert_match "^frugal_node_group_max_size\{node_group=\"$HM\"\} 3$" "$METRICS" "the max size metric is the advertised one"
assert_match '^frugal_node_group_max_size\{node_group="as"\} 1$' "$METRICS" "for a configured group too"
assert_eq 0 "$(target_size "$HM")" "theoretical target size"

log "template of a theoretical label-set group"
assert_ok "template" ctl -o yaml template "$SSD"
assert_match '"disktype": "ssd"' "$OUT" "label set on the template"
assert_match '"node.kubernetes.io/instance-type": "n1-standard-4"' "$OUT" "instance type"
assert_match "\"topology.kubernetes.io/zone\": \"$ZONE\"" "$OUT" "zone"

log "CA pattern: IncreaseSize creates the theoretical group, NodeGroupNodes lists it"
assert_eq false "$(group_field "$HM" exists)" "highmem theoretical before"
assert_ok "increase theoretical" ctl increase "$HM" 2
assert_eq 2 "$(target_size "$HM")" "target after the first increase"
assert_eq true "$(group_field "$HM" exists)" "highmem created"
assert_eq true "$(group_field "$HM" autoprovisioned)" "highmem autoprovisioned"
assert_eq 2 "$(instance_ids "$HM" | grep -c .)" "instances of the new group"

log "limit example at max_cpu 32 (28 cores used)"
assert_eq 3 "$(max_size "$HM")" "highmem: one more n1-highmem-4"
assert_eq 4 "$(max_size "$S1")" "standard-1: a new group of up to 4"
assert_eq 1 "$(max_size as)" "as cannot grow"
assert_status RESOURCE_EXHAUSTED "as +1 over max_cpu" ctl increase as 1
assert_match 'max_cpu' "$ERR" "message names the limit"
assert_match '44 cores' "$ERR" "message gives the figures"
assert_status RESOURCE_EXHAUSTED "highmem +2 over max_cpu" ctl increase "$HM" 2
assert_eq 2 "$(target_size "$HM")" "refused increase changed nothing"
assert_eq 1 "$(target_size as)" "refused increase changed nothing (as)"

log "TC8: no group is created when there is no quota"
assert_status RESOURCE_EXHAUSTED "standard-4 x2 over max_cpu" ctl increase "$S4" 2
assert_eq false "$(group_field "$S4" exists)" "standard-4 not created"
assert_ok "standard-1 x4 fills the quota" ctl increase "$S1" 4
assert_status RESOURCE_EXHAUSTED "standard-1 +1 at the limit" ctl increase "$S1" 1
assert_status RESOURCE_EXHAUSTED "standard-4 at the limit" ctl increase "$S4" 1
assert_eq false "$(group_field "$S4" exists)" "standard-4 still theoretical"
assert_eq 0 "$(max_size "$S4")" "no room advertised"
assert_eq 2 "$(max_size "$HM")" "highmem maxSize = target at the limit"

log "DeleteNodes and the min limit (min_cpu 20, 32 used)"
# 12 cores above the minimum: "as" (16 cores a node) advertises minSize 1, its target,
# so CA never drains its node; highmem (4 cores) may lose 3.
min_size_of() {
    ctl -o yaml node-groups | awk -v id="$1" '
        /^- id: / { cur = $3; gsub(/"/, "", cur) }
        /^  minSize: / && cur == id { print $2; found = 1 }
        END { if (!found) print "absent" }'
}
assert_eq 1 "$(min_size_of as)" "as minSize raised by min_cpu"
assert_eq 0 "$(min_size_of "$HM")" "highmem minSize stays 0"
assert_eq 1 "$(group_field as min_size)" "NodeGroupInfo's min_size is the one NodeGroups advertises"
AS_NODE=$(instance_ids as | head -n 1)
assert_status FAILED_PRECONDITION "deleting as's node crosses min_cpu" ctl delete-nodes as "$AS_NODE"
assert_match 'min_cpu' "$ERR" "message names the min limit"
assert_eq 1 "$(target_size as)" "refused delete changed nothing"
HM_NODE=$(instance_ids "$HM" | head -n 1)
assert_ok "deleting a highmem node stays above min" ctl delete-nodes "$HM" "$HM_NODE"
assert_eq 1 "$(target_size "$HM")" "highmem target after delete"

log "NewNodeGroup, NodeGroupCreate, NodeGroupInfo, NodeGroupDelete"
assert_ok "new-node-group" ctl -o yaml new-node-group --machine-type n1-standard-1 \
    --label team=ml --system-label frugal.io/pool=ml --taint dedicated=ml:NoSchedule \
    --extra-resource example.com/dongle=2
ML=$(yaml_value id)
assert_match "^$S1-[0-9a-f]{8}$" "$ML" "NewNodeGroup id"
assert_eq false "$(yaml_value exists)" "new group is theoretical"
assert_eq true "$(yaml_value autoprovisioned)" "new group is autoprovisioned"
assert_ok "node-groups lists it" ctl -o yaml node-groups
assert_match "^- id: \"?$ML\"?$" "$OUT" "NewNodeGroup group listed"
assert_ok "template of the new group" ctl -o yaml template "$ML"
assert_match 'key: "?dedicated"?' "$OUT" "taint on the template"
assert_match '"team": "ml"' "$OUT" "label on the template"
assert_match '"frugal.io/pool": "ml"' "$OUT" "system label on the template"
assert_match '"example.com/dongle": "2"' "$OUT" "extra resource on the template"
assert_ok "same shape again is idempotent" ctl -o yaml new-node-group --machine-type n1-standard-1 \
    --label team=ml --system-label frugal.io/pool=ml --taint dedicated=ml:NoSchedule \
    --extra-resource example.com/dongle=2
assert_eq "$ML" "$(yaml_value id)" "same id for the same shape"
assert_ok "create" ctl -o yaml create "$ML"
assert_eq true "$(yaml_value exists)" "created"
assert_status ALREADY_EXISTS "create twice" ctl create "$ML"
assert_ok "another shape" ctl -o yaml new-node-group --machine-type n1-standard-1 --label team=x
X=$(yaml_value id)
assert_status RESOURCE_EXHAUSTED "create past max_node_groups" ctl create "$X"
assert_match 'max_node_groups' "$ERR" "message names max_node_groups"
assert_eq false "$(group_field "$X" exists)" "refused create changed nothing"

log "bad input"
assert_status INVALID_ARGUMENT "unknown machine type" ctl new-node-group --machine-type n9-giant-1
assert_status INVALID_ARGUMENT "type not allowed" ctl new-node-group --machine-type n1-standard-8
assert_status INVALID_ARGUMENT "bad taint effect" ctl new-node-group --machine-type n1-standard-1 --taint a=b:Sometimes
assert_status INVALID_ARGUMENT "bad label key" ctl new-node-group --machine-type n1-standard-1 --label "-bad=x"
assert_status INVALID_ARGUMENT "bad label value" ctl new-node-group --machine-type n1-standard-1 --label "k=bad value"
assert_status INVALID_ARGUMENT "label set by frugal" ctl new-node-group --machine-type n1-standard-1 --label node.kubernetes.io/instance-type=n1-standard-96
assert_status INVALID_ARGUMENT "label and system label disagree" ctl new-node-group --machine-type n1-standard-1 --label team=a --system-label team=b
assert_status INVALID_ARGUMENT "zone not allowed" ctl new-node-group --machine-type n1-standard-1 --zone mars-1-a
assert_status INVALID_ARGUMENT "bad extra resource" ctl new-node-group --machine-type n1-standard-1 --extra-resource gpu=lots
assert_status FAILED_PRECONDITION "delete a non-empty group" ctl delete "$HM"
assert_status FAILED_PRECONDITION "delete a configured group" ctl delete as
assert_status FAILED_PRECONDITION "create a configured group" ctl create as
assert_status NOT_FOUND "delete an unknown group" ctl delete nope
assert_status NOT_FOUND "info of an unknown group" ctl group-info nope
assert_eq 1 "$(target_size "$HM")" "nothing changed"

log "a NewNodeGroup group grows like any other"
assert_ok "grow the new group" ctl increase "$ML" 1
assert_eq 1 "$(target_size "$ML")" "new group target"
assert_status FAILED_PRECONDITION "delete a non-empty NewNodeGroup group" ctl delete "$ML"

log "NodeGroupDelete of an uncreated NewNodeGroup group: it is forgotten"
assert_ok "delete theoretical" ctl delete "$X"
assert_status NOT_FOUND "gone after delete" ctl group-info "$X"

log "proposals (TC1-TC6)"
# Pods of 3 cores and 20Gi fit only n1-highmem-4 (4 cores, 26 GB) among the allowed types.
propose() {
    cat >"$TMP/pods.yaml"
    run ctl -o yaml propose "$TMP/pods.yaml"
    if [ "$RC" -ne 0 ]; then
        fail "propose failed"
        describe_run
    fi
}
count_proposals() {
    echo "$OUT" | grep -c '^- group_id: '
}
propose <<EOF
- {name: big, cpu: 3, memory: 20Gi}
- {name: giant, cpu: 64, memory: 1Gi}
EOF
assert_eq 1 "$(count_proposals)" "TC1: one proposal"
assert_match 'machine_type: "n1-highmem-4"' "$OUT" "TC1: a big enough type"
assert_no_match 'machine_type: "n1-standard' "$OUT" "TC1: nothing smaller"
assert_match 'exists: true' "$OUT" "TC1: the existing highmem group"
assert_match '^- "default/giant"' "$OUT" "TC1: a pod no type fits is reported"

propose <<EOF
- {name: ssd, cpu: 3, memory: 20Gi, node_selector: {disktype: ssd}}
EOF
assert_eq 1 "$(count_proposals)" "TC2: one proposal"
assert_match '^    "disktype": "ssd"' "$OUT" "TC2: the selector's label"

propose <<EOF
- {name: a, cpu: 3, memory: 20Gi, node_selector: {team: a}}
- {name: b, cpu: 3, memory: 20Gi, node_selector: {team: b}}
EOF
assert_eq 2 "$(count_proposals)" "TC3: two groups"
assert_match '"team": "a"' "$OUT" "TC3: team a"
assert_match '"team": "b"' "$OUT" "TC3: team b"

propose <<EOF
- {name: a, cpu: 3, memory: 20Gi, node_selector: {team: a}}
- {name: s, cpu: 3, memory: 20Gi, node_selector: {disktype: ssd}}
EOF
assert_eq 1 "$(count_proposals)" "TC4: one group"
assert_match '"team": "a"' "$OUT" "TC4: first label"
assert_match '"disktype": "ssd"' "$OUT" "TC4: second label"
# 6 cpu / 40Gi over n1-highmem-4 (4 cpu, 26 GB) at 70 %: 3 nodes, Escalator's headroom.
assert_match 'node_count: 3' "$OUT" "TC4: three nodes for two pods, with the 70 % headroom"

propose <<EOF
- name: ml
  cpu: 3
  memory: 20Gi
  tolerations: [{key: dedicated, value: ml, effect: NoSchedule}]
EOF
assert_eq 1 "$(count_proposals)" "TC5: one group"
assert_match 'key: "dedicated"' "$OUT" "TC5: the taint"
assert_match 'effect: "NoSchedule"' "$OUT" "TC5: its effect"

propose <<EOF
- name: ml
  cpu: 3
  memory: 20Gi
  tolerations: [{key: dedicated, value: ml, effect: NoSchedule}]
- name: batch
  cpu: 3
  memory: 20Gi
  tolerations: [{key: batch, operator: Exists, effect: NoSchedule}]
EOF
assert_eq 2 "$(count_proposals)" "TC6: two groups"
assert_match 'key: "dedicated"' "$OUT" "TC6: first taint"
assert_match 'key: "batch"' "$OUT" "TC6: second taint"

propose <<EOF
- {name: small, cpu: 500m, memory: 1Gi, count: 3}
EOF
assert_eq 3 "$(count_proposals)" "small pods: every allowed type proposes"
assert_match '^  - "default/small-2"' "$OUT" "count expands to pods"
printf -- '- {name: a, cpus: 1}\n' >"$TMP/typo.yaml"
assert_exit 2 "propose with an unknown key" ctl propose "$TMP/typo.yaml"
assert_match "typo.yaml:1:13: unknown key cpus" "$ERR" "an unknown key is an error at its position"
SCORES=$(echo "$OUT" | sed -n 's/^  score: //p' | tr '\n' ' ')
assert_eq "$(echo "$SCORES" | tr ' ' '\n' | grep . | sort -g | tr '\n' ' ')" "$SCORES" "cheapest first"

stop_server

# 3 s: long enough that a slow ctl's new-node-group, create and delete are not
# overtaken by the TTL between them.
log "restart with a 3 s TTL: autoprovisioned groups survive"
write_config 3s
start_server "$TMP/frugal.yaml"
assert_eq true "$(group_field "$HM" exists)" "highmem survives the restart"
assert_eq 1 "$(target_size "$HM")" "highmem target survives"
assert_eq 4 "$(target_size "$S1")" "standard-1 target survives"
assert_ok "NewNodeGroup group survives" ctl -o yaml group-info "$ML"
assert_eq true "$(yaml_value exists)" "still created"
assert_eq 1 "$(yaml_value target_size)" "its target"
assert_match 'key: "dedicated"' "$OUT" "its taint"
assert_ok "its template" ctl -o yaml template "$ML"
assert_match '"example.com/dongle": "2"' "$OUT" "its extra resource"

log "TC7: empty autoprovisioned groups are deleted after the TTL"
assert_ok "empty highmem" ctl delete-nodes "$HM" $(instance_ids "$HM" | grep -v "$HM_NODE")
assert_ok "empty standard-1" ctl delete-nodes "$S1" $(instance_ids "$S1")
assert_ok "empty the NewNodeGroup group" ctl delete-nodes "$ML" $(instance_ids "$ML")
assert_eq 0 "$(target_size "$S1")" "standard-1 target 0"
if wait_for 20 field_is "$HM" exists false; then pass; else fail "highmem not deleted after the TTL"; fi
if wait_for 20 field_is "$S1" exists false; then pass; else fail "standard-1 not deleted after the TTL"; fi
assert_ok "node-groups" ctl -o yaml node-groups
assert_match "^- id: \"?$HM\"?$" "$OUT" "highmem theoretical again, still listed"
assert_eq 0 "$(target_size "$HM")" "theoretical again at size 0"
assert_ok "new shape for the TTL" ctl -o yaml new-node-group --machine-type n1-standard-1 --label team=tmp
TMPG=$(yaml_value id)
assert_ok "create it" ctl create "$TMPG"
if wait_for 20 field_is "$TMPG" exists ERR; then pass; else fail "empty NewNodeGroup group not removed after the TTL"; fi
if wait_for 20 field_is "$ML" exists ERR; then pass; else fail "emptied NewNodeGroup group not removed after the TTL"; fi
assert_ok "uncreated for the TTL" ctl -o yaml new-node-group --machine-type n1-standard-4 --label team=late
LATE=$(yaml_value id)
if wait_for 20 field_is "$LATE" exists ERR; then pass; else fail "uncreated NewNodeGroup group not forgotten after the TTL"; fi
log "NodeGroupDelete of a created, empty NewNodeGroup group"
assert_ok "new shape" ctl -o yaml new-node-group --machine-type n1-standard-1 --label team=gone
GONE=$(yaml_value id)
assert_ok "create it" ctl create "$GONE"
METRICS=$(curl -s --max-time 5 "http://127.0.0.1:$OPS/metrics")
assert_match "^frugal_expander_decisions_total\{node_group=\"$GONE\"\} 0$" "$METRICS" "its decisions exported from 0"
assert_ok "delete it" ctl delete "$GONE"
assert_status NOT_FOUND "it disappears" ctl group-info "$GONE"
METRICS=$(curl -s --max-time 5 "http://127.0.0.1:$OPS/metrics")
assert_no_match "node_group=\"$GONE\"" "$METRICS" "a deleted group's series leave the metrics"

assert_ok "the CA pattern again" ctl increase "$HM" 1
assert_eq true "$(group_field "$HM" exists)" "recreated by IncreaseSize"

stop_server

log "a created group whose machine type leaves the catalog: UNIMPLEMENTED template, so CA skips it"
# Any other status from TemplateNodeInfo aborts CA's whole loop ("Unable to build proper
# template node"); UNIMPLEMENTED makes it skip that group.
cat >"$TMP/custom.yaml" <<EOF
listen:
  - address: 127.0.0.1:$PORT
state_file: $TMP/custom-state.yaml
machine_types:
  - {name: custom-1, cpu: 2, memory: 4Gi, price: 0.1}
autoprovisioning:
  enabled: true
  machine_types: [custom-1]
  zones: [z1]
  empty_group_ttl: 1h
EOF
start_server "$TMP/custom.yaml"
assert_ok "create the custom group" ctl increase nap-custom-1-z1 1
assert_ok "its template" ctl template nap-custom-1-z1
stop_server
grep -v 'custom-1, cpu\|^machine_types:$' "$TMP/custom.yaml" |
    sed 's/machine_types: \[custom-1\]/machine_types: [n1-standard-1]/' >"$TMP/gone.yaml"
start_server "$TMP/gone.yaml"
assert_match "nap-custom-1-z1: machine type custom-1 is no longer in the catalog" \
    "$(cat "$SERVER_LOG")" "warned at start"
assert_ok "still listed" ctl node-groups
assert_match "nap-custom-1-z1" "$OUT" "the resumed group is listed"
assert_status UNIMPLEMENTED "its template" ctl template nap-custom-1-z1
assert_match "machine type custom-1 is no longer in the catalog" "$ERR" "the reason"
# Nothing counts its nodes against the limits: it does not grow past what it has.
assert_status FAILED_PRECONDITION "it cannot grow" ctl increase nap-custom-1-z1 5
assert_match "machine type custom-1 is no longer in the catalog: the group can shrink, not grow" \
    "$ERR" "the reason"
assert_eq 1 "$(group_field nap-custom-1-z1 max_size)" "its max_size is its size"
assert_eq 1 "$(target_size nap-custom-1-z1)" "nothing changed"
assert_ok "the other groups' templates still answer" ctl template nap-n1-standard-1-z1
# Empty, it would only make CA ask for the template it cannot have (CA 1.25-1.28 fail
# their whole loop on that answer): no longer listed, until it expires.
assert_ok "empty it" ctl delete-nodes nap-custom-1-z1 $(instance_ids nap-custom-1-z1)
unlisted() { ctl node-groups 2>/dev/null | grep -q "^nap-n1-standard-1-z1 " && ! ctl node-groups 2>/dev/null | grep -q "^$1 "; }
if wait_for 10 unlisted nap-custom-1-z1; then pass; else fail "the emptied group is still listed once its node is gone"; fi
assert_ok "listed groups" ctl node-groups
assert_match "nap-n1-standard-1-z1" "$OUT" "the others are"
stop_server

log "a machine type whose name is not a DNS label (m5.large): a mapped id, which the state keeps"
cat >"$TMP/dotted.yaml" <<EOF
listen:
  - address: 127.0.0.1:$PORT
state_file: $TMP/dotted-state.yaml
machine_types:
  - {name: m5.large, cpu: 2, memory: 8Gi, price: 0.096}
autoprovisioning:
  enabled: true
  machine_types: [m5.large]
  zones: [us-east-1a]
EOF
start_server "$TMP/dotted.yaml"
assert_ok "node-groups" ctl node-groups
DOTTED=$(echo "$OUT" | grep -oE '^nap-m5-large-us-east-1a-[0-9a-f]{8} ' | tr -d ' ')
[ -n "$DOTTED" ] && pass || fail "no DNS-label id for m5.large: $OUT"
assert_ok "create it" ctl increase "$DOTTED" 1
stop_server
start_server "$TMP/dotted.yaml"
assert_eq 1 "$(target_size "$DOTTED")" "the group is resumed from the state file after a restart"
assert_ok "its template" ctl template "$DOTTED"
assert_match "node.kubernetes.io/instance-type=m5\\.large" "$OUT" "of machine type m5.large"
stop_server

log "a restart applies the autoprovisioning settings as a reload does"
restart_config() { # PREFIX TYPES [EXTRA_GROUP_ID]
    cat >"$TMP/restart.yaml" <<EOF
listen:
  - address: 127.0.0.1:$PORT
state_file: $TMP/restart-state.yaml
autoprovisioning:
  enabled: true
  prefix: $1
  machine_types: [$2]
  zones: [z1]
  empty_group_ttl: 2s
EOF
    if [ -n "${3:-}" ]; then
        printf 'node_groups:\n  - {id: %s, machine_type: n1-highmem-4, zone: z9, max_size: 3}\n' "$3" \
            >>"$TMP/restart.yaml"
    fi
}
restart_config nap "n1-standard-1, n1-standard-2"
start_server "$TMP/restart.yaml"
assert_ok "create nap-n1-standard-1-z1" ctl increase nap-n1-standard-1-z1 1
stop_server
# A configured group may not take over an autoprovisioned group's id and machines.
restart_config x "n1-standard-1" nap-n1-standard-1-z1
assert_ok "check accepts the config alone" "$FRUGAL" check -c "$TMP/restart.yaml"
assert_exit 1 "the start refuses a configured group under an autoprovisioned id" \
    timeout 20 "$FRUGAL" serve -c "$TMP/restart.yaml"
assert_match "node group nap-n1-standard-1-z1 is autoprovisioned \(machine type n1-standard-1\) but the config also has it: choose another id" \
    "$ERR" "with the reason"
# Another prefix, one type less: the theoretical groups follow, the created one stays.
restart_config x "n1-standard-1"
start_server "$TMP/restart.yaml"
assert_ok "node-groups" ctl node-groups
assert_no_match "nap-n1-standard-2-z1" "$OUT" "the removed type's theoretical group is dropped at the start"
assert_match "^x-n1-standard-1-z1 " "$OUT" "the shape is offered under the new prefix"
assert_match "^nap-n1-standard-1-z1 " "$OUT" "the created group stays while it holds a node"
assert_match "nap-n1-standard-2-z1 dropped \(its machine type is no longer allowed\)" \
    "$(cat "$SERVER_LOG")" "the drop is logged"
assert_ok "empty it" ctl delete-nodes nap-n1-standard-1-z1 $(instance_ids nap-n1-standard-1-z1)
gone() { ! ctl node-groups 2>/dev/null | grep -q "^nap-n1-standard-1-z1 "; }
wait_for 15 gone && pass || fail "the old prefix's group came back as theoretical once empty"
assert_ok "node-groups" ctl node-groups
assert_no_match "^nap-" "$OUT" "no group of the old prefix is left"
assert_match "^x-n1-standard-1-z1 " "$OUT" "the new prefix's group stays"
stop_server
# A prefix that the old one starts with: nap-gpu-... is not under nap-.
restart_config nap-gpu "n1-standard-1"
start_server "$TMP/restart.yaml"
stop_server
restart_config nap "n1-standard-1"
start_server "$TMP/restart.yaml"
assert_ok "node-groups" ctl node-groups
assert_no_match "^nap-gpu-" "$OUT" "the theoretical groups of prefix nap-gpu are dropped under nap"
assert_match "^nap-n1-standard-1-z1 " "$OUT" "the shape is offered under nap"
stop_server
# Autoprovisioning off, and a configured group under the id of an empty theoretical one.
restart_config nap "n1-standard-1" nap-n1-standard-1-z1
sed -i 's/enabled: true/enabled: false/' "$TMP/restart.yaml"
start_server "$TMP/restart.yaml"
assert_eq 0 "$(target_size nap-n1-standard-1-z1)" "the configured group starts, the empty one is dropped"
assert_match "warn .*empty autoprovisioned node group nap-n1-standard-1-z1 dropped: the config has a group of that id" \
    "$(cat "$SERVER_LOG")" "the drop is logged"
stop_server

log "reload: a type no longer allowed drops its theoretical group; turning autoprovisioning off drops the empty ones and waits for the rest"
nap_config() { # ENABLED TYPES [ZONES]
    cat >"$TMP/onoff.yaml.new" <<EOF
listen:
  - address: 127.0.0.1:$PORT
state_file: $TMP/onoff-state.yaml
autoprovisioning:
  enabled: $1
  machine_types: [$2]
  zones: [${3:-z1}]
  limits: {max_cpu: 8}
EOF
    mv "$TMP/onoff.yaml.new" "$TMP/onoff.yaml"
}
reload_and_wait() { # PATTERN: SIGHUP, then wait for one more log line matching it
    local before
    before=$(grep -c "$1" "$SERVER_LOG")
    kill -HUP "$SERVER_PID"
    for _ in $(seq 1 50); do [ "$(grep -c "$1" "$SERVER_LOG")" -gt "$before" ] && return 0; sleep 0.1; done
    return 1
}
nap_config true "n1-standard-1, n1-standard-2" "z1, z2"
start_server "$TMP/onoff.yaml"
assert_ok "create the standard-1 group" ctl increase nap-n1-standard-1-z1 1
assert_ok "a theoretical group in z2" ctl group-info nap-n1-standard-1-z2
nap_config true "n1-standard-1, n1-standard-2"
reload_and_wait 'reloaded (SIGHUP)' && pass || fail "the zone removal reloads"
assert_status NOT_FOUND "the z2 theoretical group is dropped" ctl group-info nap-n1-standard-1-z2
assert_status NOT_FOUND "so CA cannot create a group in z2" ctl increase nap-n1-standard-1-z2 1
assert_match "nap-n1-standard-1-z2 dropped \(its zone is no longer allowed\)" "$(cat "$SERVER_LOG")" "logged"
nap_config true "n1-standard-1"
reload_and_wait 'reloaded (SIGHUP)' && pass || fail "the type removal reloads"
assert_status NOT_FOUND "the standard-2 theoretical group is dropped" ctl group-info nap-n1-standard-2-z1
assert_eq 1 "$(target_size nap-n1-standard-1-z1)" "the created group stays"
nap_config false "n1-standard-1"
reload_and_wait 'reload (SIGHUP) refused' && pass || fail "turning NAP off with nodes is refused"
assert_match 'nap-n1-standard-1-z1 still has 1 node .*turn autoprovisioning off only once it is empty' \
    "$(cat "$SERVER_LOG")" "the group with nodes named"
assert_eq 1 "$(target_size nap-n1-standard-1-z1)" "nothing changed"
assert_ok "empty it" ctl delete-nodes nap-n1-standard-1-z1 $(instance_ids nap-n1-standard-1-z1)
for _ in $(seq 1 50); do [ -z "$(instance_ids nap-n1-standard-1-z1)" ] && break; sleep 0.1; done
# Empty but created: dropping it would leave the provider's group (delete_group) behind.
reload_and_wait 'reload (SIGHUP) refused' && pass || fail "turning NAP off with a created group is refused"
assert_match 'nap-n1-standard-1-z1 exists \(empty\): delete it first \(frugal ctl delete nap-n1-standard-1-z1\)' \
    "$(cat "$SERVER_LOG")" "the created group named, with the command"
assert_no_match 'dropped \(autoprovisioning is off\)' "$(cat "$SERVER_LOG")" \
    "a refused reload logs no group as dropped"
assert_ok "delete it" ctl delete nap-n1-standard-1-z1
reload_and_wait 'reloaded (SIGHUP)' && pass || fail "turning NAP off once it holds nothing reloads"
assert_ok "node-groups" ctl node-groups
assert_no_match "nap-" "$OUT" "no autoprovisioned group is left"
assert_status NOT_FOUND "CA can no longer create one" ctl increase nap-n1-standard-1-z1 5
nap_config true "n1-standard-1"
reload_and_wait 'reloaded (SIGHUP)' && pass || fail "turning NAP on again reloads"
assert_ok "the theoretical group is back" ctl group-info nap-n1-standard-1-z1
nap_config false "n1-standard-1"
printf 'node_groups:\n  - {id: nap-n1-standard-1-z1, machine_type: n1-highmem-4, zone: z9, max_size: 3}\n' \
    >>"$TMP/onoff.yaml"
reload_and_wait 'reloaded (SIGHUP)' && pass || fail "a configured group may take the id of an empty autoprovisioned one that the reload drops"
assert_match "n1-highmem-4" "$(ctl group-info nap-n1-standard-1-z1 2>&1)" "the configured group holds the id"
stop_server
finish
