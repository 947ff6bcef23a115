#!/usr/bin/env bash
# deploy/ as shipped, replayed locally: render it with `kubectl kustomize`, check that
# ports, Secret names, mount paths and flags agree (deploy_check.py), then run frugal
# with the ConfigMap's config on loopback (same listener layout, scripts/dev-certs.sh
# certificates) and call it as the kubelet and cluster-autoscaler would.
source "$(dirname "$0")/lib.sh"

command -v kubectl >/dev/null 2>&1 || { echo "SKIP: kubectl is needed"; exit 0; }
python3 -c 'import yaml' 2>/dev/null || { echo "SKIP: python3-yaml is needed"; exit 0; }
DEPLOY="$FRUGAL_SOURCE_DIR/deploy"

log "render and cross-check the manifests"
kubectl kustomize "$DEPLOY" >"$TMP/rendered.yaml" || fatal "kubectl kustomize deploy/ failed"
kubectl kustomize "$DEPLOY/base" >/dev/null || fatal "kubectl kustomize deploy/base failed"
kubectl kustomize "$DEPLOY/etcd" >"$TMP/etcd.yaml" || fatal "kubectl kustomize deploy/etcd failed"
python3 -c '
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
kinds = [d["kind"] for d in docs]
dep = [d for d in docs if d["kind"] == "Deployment"][0]
assert dep["spec"]["replicas"] >= 2, "deploy/etcd: fewer than two replicas"
assert "PersistentVolumeClaim" not in kinds, "deploy/etcd: a state volume"
open(sys.argv[2], "w").write([d for d in docs if d["kind"] == "ConfigMap"][0]["data"]["frugal.yaml"])
' "$TMP/etcd.yaml" "$TMP/etcd-frugal.yaml"
assert_eq 0 "$?" "deploy/etcd: replicas, no state volume"
run "$FRUGAL" check -c "$TMP/etcd-frugal.yaml"
assert_eq 0 "$RC" "deploy/etcd: its config passes frugal check"
assert_match "state +etcd, prefix /frugal/prod/" "$OUT" "deploy/etcd: the etcd state"
"$FRUGAL_SOURCE_DIR/scripts/dev-certs.sh" "$TMP/pki" >/dev/null || fatal "dev-certs.sh failed"
mkdir -p "$TMP/state"
run python3 "$(dirname "$0")/deploy_check.py" "$TMP/rendered.yaml" "$DEPLOY/cluster-autoscaler/values.yaml" \
    "$TMP/pki" "$TMP/state" "$TMP/frugal.yaml"
assert_eq 0 "$RC" "the manifests agree with each other and with the config" || { echo "$ERR"; finish; }
eval "$OUT"
# The checker itself catches disagreements.
sed 's/svc:8444/svc:8443/' "$DEPLOY/cluster-autoscaler/values.yaml" >"$TMP/bad-values.yaml"
run python3 "$(dirname "$0")/deploy_check.py" "$TMP/rendered.yaml" "$TMP/bad-values.yaml" "$TMP/pki" "$TMP/state" "$TMP/x.yaml"
assert_match 'grpc-expander-url is not the expander listener' "$ERR" "a wrong expander port is caught"
sed 's|mountPath: /etc/frugal/config$|mountPath: /etc/frugal/config/frugal.yaml\n          subPath: frugal.yaml|' \
    "$TMP/rendered.yaml" >"$TMP/bad-rendered.yaml"
run python3 "$(dirname "$0")/deploy_check.py" "$TMP/bad-rendered.yaml" "$DEPLOY/cluster-autoscaler/values.yaml" "$TMP/pki" "$TMP/state" "$TMP/x.yaml"
assert_match 'subPath' "$ERR" "a subPath mount is caught"

log "the shipped config loads"
assert_ok "frugal check of the replayed config" "$FRUGAL" check -c "$TMP/frugal.yaml"
assert_match '\(plaintext; health\)' "$OUT" "the summary shows the health-only listener"

start_server "$TMP/frugal.yaml" --addr "127.0.0.1:$HEALTH_PORT"

log "the kubelet's probe: plaintext gRPC health"
assert_ok "health in plaintext on the probe port" "$FRUGAL" ctl --addr "127.0.0.1:$HEALTH_PORT" health
assert_eq SERVING "$OUT" "the probe sees SERVING"
assert_status UNIMPLEMENTED "no CloudProvider call on the probe port" \
    "$FRUGAL" ctl --addr "127.0.0.1:$HEALTH_PORT" node-groups

if [ -n "${OPS_PORT:-}" ]; then
    log "the kubelet's HTTP probes on the ops endpoint"
    for path in /healthz /readyz; do
        CODE=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$OPS_PORT$path")
        assert_eq 200 "$CODE" "probe $path"
    done
fi

log "CA's expander: TLS with the CA certificate only, no client certificate"
cat >"$TMP/options.yaml" <<EOF
options:
  - {group: pool-a, node_count: 1, pods: [{cpu: 1, memory: 1Gi}]}
  - {group: pool-b, node_count: 1, pods: [{cpu: 1, memory: 1Gi}]}
nodes:
  - {group: pool-a, machine_type: n1-standard-4, zone: us-central1-a}
  - {group: pool-b, machine_type: n1-highmem-4, zone: us-central1-b}
EOF
EXP=("$FRUGAL" ctl --addr "127.0.0.1:$EXP_PORT" --tls-ca "$EXPANDER_CA" --tls-server-name "$SERVER_NAME" --timeout 3000)
assert_ok "BestOptions over TLS without a client certificate" "${EXP[@]}" best-options "$TMP/options.yaml"
assert_match 'pool-a' "$OUT" "the expander answered"
assert_status UNIMPLEMENTED "no CloudProvider call on the expander port" "${EXP[@]}" increase pool-a 1

log "CA's cloud provider: mutual TLS with the cloud-config's files"
CP=("$FRUGAL" ctl --addr "127.0.0.1:$CP_PORT" --tls-ca "$CLIENT_CACERT" --tls-server-name "$SERVER_NAME" --timeout 3000)
assert_status "UNAVAILABLE|UNAUTHENTICATED|PERMISSION_DENIED|CANCELLED" \
    "a CloudProvider call without a certificate is refused" "${CP[@]}" increase pool-a 1
assert_ok "with the client certificate" "${CP[@]}" --tls-cert "$CLIENT_CERT" --tls-key "$CLIENT_KEY" increase pool-a 1
assert_ok "target-size" "${CP[@]}" --tls-cert "$CLIENT_CERT" --tls-key "$CLIENT_KEY" target-size pool-a
assert_eq 1 "$OUT" "only the authenticated increase counted"
assert_status UNIMPLEMENTED "no expander call on the CloudProvider port" \
    "${CP[@]}" --tls-cert "$CLIENT_CERT" --tls-key "$CLIENT_KEY" best-options "$TMP/options.yaml"
stop_server
finish
