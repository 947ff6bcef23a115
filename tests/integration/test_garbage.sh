#!/usr/bin/env bash
# Hostile request bodies on every method: malformed protobuf is INVALID_ARGUMENT, a
# body over max_message_bytes is RESOURCE_EXHAUSTED, an unknown method UNIMPLEMENTED;
# the server keeps serving and no state changes.
source "$(dirname "$0")/lib.sh"

PORT=$(free_port)
OPS=$(free_port)
ADDR="127.0.0.1:$PORT"
cat >"$TMP/frugal.yaml" <<EOF
listen:
  - address: 127.0.0.1:$PORT
ops_listen: 127.0.0.1:$OPS
max_message_bytes: 1048576
provider:
  kind: simulated
  boot_seconds: 0
node_groups:
  - id: pool-a
    machine_type: n1-standard-2
    min_size: 1
    max_size: 10
  - id: pool-b
    machine_type: n1-standard-4
    min_size: 0
    max_size: 10
EOF
start_server "$TMP/frugal.yaml"
assert_ok "increase pool-b 2" ctl increase pool-b 2

CP=/clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider
# Methods whose request has no fields: any well-formed unknown field is skipped.
EMPTY_REQUEST_METHODS="$CP/NodeGroups $CP/GPULabel $CP/GetAvailableGPUTypes $CP/Cleanup $CP/Refresh"
# Methods whose request field 1 is length-delimited (string, message or bytes).
LEN1_METHODS="$CP/NodeGroupForNode $CP/PricingNodePrice $CP/PricingPodPrice $CP/NodeGroupTargetSize
  $CP/NodeGroupDeleteNodes $CP/NodeGroupNodes $CP/NodeGroupTemplateNodeInfo $CP/NodeGroupGetOptions
  /grpcplugin.Expander/BestOptions /grpc.health.v1.Health/Check"
# Methods whose request field 1 is an int32 (delta).
VARINT1_METHODS="$CP/NodeGroupIncreaseSize $CP/NodeGroupDecreaseTargetSize"
ALL_METHODS="$EMPTY_REQUEST_METHODS $LEN1_METHODS $VARINT1_METHODS"
assert_eq 17 "$(echo $ALL_METHODS | wc -w)" "15 CloudProvider methods + BestOptions + Health Check"

B="$TMP/bodies"
mkdir -p "$B"
printf '\xff\xff\xff' >"$B/ff"                      # a tag varint that never ends
printf '\x08\xff' >"$B/truncated-varint"            # field 1 varint cut short
printf '\x0a\x10\x41' >"$B/length-exceeds"          # field 1 claims 16 bytes, has 1
printf '\x0a\x06pool' >"$B/truncated-string"        # "pool-a" cut after 4 bytes
printf '\x0f\x01' >"$B/wire-type-7"                 # no such wire type
printf '\x12\x05ab' >"$B/truncated-field-2"         # field 2 claims 5 bytes, has 2
printf '\x08\x01' >"$B/varint-for-len"              # field 1 as varint
printf '\x0a\x01\x41' >"$B/len-for-varint"          # field 1 as length-delimited
head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' 'A' >"$B/oversized"
MALFORMED="ff truncated-varint length-exceeds truncated-string wire-type-7 truncated-field-2"

# expect_raw STATUS METHOD BODY: `ctl raw` answers STATUS.
expect_raw() {
    local status=$1 method=$2 body=$3
    run ctl --timeout 10000 raw "$method" "$B/$body"
    if [ "$OUT" = "$status" ]; then
        pass
    else
        fail "$method with $body: expected $status"
        describe_run
    fi
}

log "raw itself works"
printf '\x0a\x06pool-a' >"$B/valid-target-size"
assert_ok "raw NodeGroupTargetSize" ctl -o yaml raw "$CP/NodeGroupTargetSize" "$B/valid-target-size"
assert_eq OK "$(yaml_value status)" "raw status"
assert_eq 2 "$(yaml_value responseBytes)" "raw reply is targetSize=1 (08 01)"
assert_exit 2 "raw with a FILE that cannot be read: exit 2, as best-options" \
    ctl raw "$CP/NodeGroupTargetSize" "$B/no-such-body"
assert_match "^frugal ctl: .*/no-such-body: No such file or directory$" "$ERR" "the file named"
assert_ok "raw from stdin" bash -c "printf '\x0a\x06pool-b' | \"$FRUGAL\" ctl --addr $ADDR raw $CP/NodeGroupTargetSize -"

log "malformed bodies on all 17 methods"
for m in $ALL_METHODS; do
    for body in $MALFORMED; do
        expect_raw INVALID_ARGUMENT "$m" "$body"
    done
done

log "wrong wire types"
for m in $LEN1_METHODS; do
    expect_raw INVALID_ARGUMENT "$m" varint-for-len
done
for m in $VARINT1_METHODS; do
    expect_raw INVALID_ARGUMENT "$m" len-for-varint
done
printf '\x08\x01\x12\x06pool-' >"$B/truncated-increase"
expect_raw INVALID_ARGUMENT "$CP/NodeGroupIncreaseSize" truncated-increase
# Requests without fields skip unknown (well-formed) fields, as the protocol requires (docs/wire.md).
for m in $EMPTY_REQUEST_METHODS; do
    expect_raw OK "$m" varint-for-len
done

log "garbage inside nested objects"
printf '\x0a\x03\xff\xff\xff' >"$B/nested-node"
expect_raw INVALID_ARGUMENT "$CP/NodeGroupForNode" nested-node
expect_raw INVALID_ARGUMENT "$CP/PricingNodePrice" nested-node
expect_raw INVALID_ARGUMENT "$CP/NodeGroupDeleteNodes" nested-node
expect_raw INVALID_ARGUMENT "$CP/PricingPodPrice" nested-node        # legacy pod = 1
printf '\x22\x03\xff\xff\xff' >"$B/nested-pod-bytes"
expect_raw INVALID_ARGUMENT "$CP/PricingPodPrice" nested-pod-bytes  # pod_bytes = 4
printf '\x0a\x06pool-a\x12\x03\xff\xff\xff' >"$B/nested-defaults"
expect_raw INVALID_ARGUMENT "$CP/NodeGroupGetOptions" nested-defaults

log "a string holding a NUL byte names another object: refused, nothing changes"
# pb OUT EXPR: write the bytes of the python expression EXPR, in which ld(FIELD, BYTES) is
# a length-delimited field, to $B/OUT.
pb() { python3 -c 'import sys
def ld(f, v):
    v = v.encode() if isinstance(v, str) else v
    return bytes([f << 3 | 2, len(v)]) + v
sys.stdout.buffer.write(eval(sys.argv[1]))' "$2" >"$B/$1"; }
assert_ok "pool-b's nodes" ctl -o yaml nodes pool-b
VICTIM=$(echo "$OUT" | sed -n 's/^- id: "\(.*\)"$/\1/p' | head -n 1)
assert_match '^frugal://pool-b/' "$VICTIM" "an instance of pool-b"
pb nul-delete "ld(1, ld(1, '$VICTIM\\0other')) + ld(2, 'pool-b')"
run ctl -o yaml raw "$CP/NodeGroupDeleteNodes" "$B/nul-delete"
assert_eq INVALID_ARGUMENT "$(yaml_value status)" "DeleteNodes of $VICTIM<NUL>other"
assert_match "field providerID of .*ExternalGrpcNode holds a NUL byte" "$(yaml_value message)" \
    "the message names the field"
assert_ok "pool-b's nodes after" ctl -o yaml nodes pool-b
assert_eq 0 "$(echo "$OUT" | grep -ci 'deleting')" "no instance of pool-b is deleting"
pb nul-id "ld(1, 'pool-a\\0garbage')"
for m in $CP/NodeGroupTargetSize $CP/NodeGroupNodes $CP/NodeGroupTemplateNodeInfo; do
    expect_raw INVALID_ARGUMENT "$m" nul-id
done

log "a map key given twice: the last entry wins, as in protobuf"
pb twice "ld(1, ld(2, 'some-node') + ld(3, ld(1, 'frugal.io/node-group') + ld(2, 'pool-a'))
    + ld(3, ld(1, 'frugal.io/node-group') + ld(2, 'pool-b')))"
run ctl -o yaml raw "$CP/NodeGroupForNode" "$B/twice"
assert_eq OK "$(yaml_value status)" "NodeGroupForNode with the label twice"
# The answer: nodeGroup (1) { id (1) "pool-b", ... }.
assert_match '^0a[0-9a-f]{2}0a06706f6f6c2d62' "$(yaml_value responseHex)" "answered pool-b, the last"

log "oversized bodies"
for m in $ALL_METHODS; do
    expect_raw RESOURCE_EXHAUSTED "$m" oversized
done
# gRPC refuses them before frugal reads them: still counted (as the receive fails, which
# may come just after the client has its answer), and warned once a minute.
for _ in $(seq 1 50); do
    METRICS=$(curl -s "http://127.0.0.1:$OPS/metrics")
    [ "$(echo "$METRICS" | grep -c 'grpc_code="RESOURCE_EXHAUSTED"} 1$')" -ge 17 ] && break
    sleep 0.1
done
for m in $ALL_METHODS; do
    svc=${m#/}
    assert_match "^grpc_server_handled_total\{grpc_service=\"${svc%/*}\",grpc_method=\"${svc#*/}\",grpc_code=\"RESOURCE_EXHAUSTED\"\} 1$" \
        "$METRICS" "$m: the oversized call is counted"
done
assert_match "warn  gRPC refused a /[^ ]+ request before frugal could read it: larger than max_message_bytes \(1048576\)" \
    "$(cat "$SERVER_LOG")" "the refusal is logged with the limit"
assert_eq 1 "$(grep -c 'gRPC refused a' "$SERVER_LOG")" "once within the minute"

log "a call that ends without its request message"
# health_answers CODE: Health/Check's answers with status CODE so far.
health_answers() {
    curl -s "http://127.0.0.1:$OPS/metrics" | awk -v n="grpc_server_handled_total{grpc_service=\"grpc.health.v1.Health\",grpc_method=\"Check\",grpc_code=\"$1\"}" '$1 == n { v = $2 } END { print v + 0 }'
}
before=$(health_answers INVALID_ARGUMENT)
run python3 "$FRUGAL_SOURCE_DIR/tests/integration/h2raw.py" no-message "$ADDR"
assert_match "grpc-status=3 grpc-message=request message missing" "$OUT" "INVALID_ARGUMENT"
# Counted once the reply is done, which may come just after the client has it.
for _ in $(seq 1 50); do [ "$(health_answers INVALID_ARGUMENT)" = $((before + 1)) ] && break; sleep 0.1; done
assert_eq $((before + 1)) "$(health_answers INVALID_ARGUMENT)" "an answer, so counted"

log "a call whose deadline passes before its request message"
run python3 "$FRUGAL_SOURCE_DIR/tests/integration/h2raw.py" no-message-timeout "$ADDR"
assert_match "^answer=trailers" "$OUT" "gRPC answers it (DEADLINE_EXCEEDED)"
for _ in $(seq 1 50); do [ "$(health_answers DEADLINE_EXCEEDED)" = 1 ] && break; sleep 0.1; done
assert_eq 1 "$(health_answers DEADLINE_EXCEEDED)" "counted as DEADLINE_EXCEEDED"

log "unknown methods"
: >"$B/empty"
expect_raw UNIMPLEMENTED "$CP/NoSuchMethod" empty
expect_raw UNIMPLEMENTED "$CP/nodegroups" empty
expect_raw UNIMPLEMENTED /no.such.Service/Method empty
expect_raw UNIMPLEMENTED /grpcplugin.Expander/WorstOptions ff

log "still serving, nothing changed"
kill -0 "$SERVER_PID" 2>/dev/null && pass || fail "server died"
assert_ok "health after garbage" ctl health
assert_eq SERVING "$OUT" "health answer after garbage"
assert_eq 1 "$(target_size pool-a)" "pool-a unchanged"
assert_eq 2 "$(target_size pool-b)" "pool-b unchanged"
assert_ok "node-groups after garbage" ctl -o yaml node-groups
assert_eq 2 "$(echo "$OUT" | grep -c '^- id: ')" "both groups still listed"
stop_server

finish
