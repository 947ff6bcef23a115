#!/usr/bin/env bash
# deploy/ as shipped, replayed locally: deploy_check.py renders every overlay with
# `kubectl kustomize` and checks that ports, probes, memory, certificates, Secret names,
# mount paths, the hook and CA's chart values agree, naming file and field when they do
# not (proved on broken overlays); each overlay's config passes `frugal check`; then
# frugal runs with the top overlay's config on loopback (same listener layout,
# scripts/dev-certs.sh certificates, a stand-in hook) and is called as the kubelet and
# cluster-autoscaler would.
source "$(dirname "$0")/lib.sh"

command -v kubectl >/dev/null 2>&1 || skip "kubectl is needed"
python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml is needed"
DEPLOY="$FRUGAL_SOURCE_DIR/deploy"

log "render every overlay and cross-check it"
# deploy_check.py finds every overlay of deploy/ (each directory whose kustomization
# renders Deployment frugal) and checks each with the shared parts and monitoring/.
"$FRUGAL_SOURCE_DIR/scripts/dev-certs.sh" "$TMP/pki" >/dev/null || fatal "dev-certs.sh failed"
mkdir -p "$TMP/state"
CHECK=(python3 "$(dirname "$0")/deploy_check.py")
run "${CHECK[@]}" "$DEPLOY" "$TMP/pki" "$TMP/state" "$TMP/frugal.yaml"
assert_eq 0 "$RC" "every overlay agrees with itself, its config and CA's chart" || { echo "$ERR"; finish; }
assert_match '^# overlays checked: \. base etcd$' "$OUT" "the overlays found [$OUT]"
eval "$(echo "$OUT" | grep -v '^#')"

# Every object of every overlay, the generated ConfigMaps and the certificates included,
# carries the two labels the Deployment, Service and NetworkPolicies select by.
for overlay in . etcd; do
    kubectl kustomize "$DEPLOY/$overlay" >"$TMP/labels.yaml" || fatal "kubectl kustomize deploy/$overlay failed"
    unlabelled=$(python3 -c '
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    labels = (d or {}).get("metadata", {}).get("labels") or {}
    if d and (labels.get("app.kubernetes.io/name"), labels.get("app.kubernetes.io/instance")) != ("frugal", "frugal"):
        print(d["kind"], d["metadata"]["name"])
' "$TMP/labels.yaml")
    assert_eq "" "$unlabelled" "deploy/$overlay: every object carries app.kubernetes.io/name and /instance"
done

# Each overlay's config passes `frugal check` as it is, but for the files it reads at
# load: the hook is the ConfigMap's, the credentials the Secret's placeholders, copied here.
for overlay in base etcd; do
    kubectl kustomize "$DEPLOY/$overlay" >"$TMP/$overlay.yaml" || fatal "kubectl kustomize deploy/$overlay failed"
    python3 -c '
import os, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
text = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "frugal-config"][0]["data"]["frugal.yaml"]
secret = [d for d in docs if d["kind"] == "Secret" and d["metadata"]["name"] == "frugal-hook-credentials"][0]
files = yaml.safe_load(text)["provider"]["env_from_files"]
for var, path in files.items():
    local = os.path.join(sys.argv[3], os.path.basename(path))
    open(local, "w").write(secret["stringData"][os.path.basename(path)])
    text = text.replace(path, local)
hook = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "frugal-hook"][0]["data"]["hook"]
local = os.path.join(sys.argv[3], "hook")
open(local, "w").write(hook)
os.chmod(local, 0o755)
text = text.replace(yaml.safe_load(text)["provider"]["command"], local)
open(sys.argv[2], "w").write(text)
' "$TMP/$overlay.yaml" "$TMP/$overlay-frugal.yaml" "$TMP"
    run "$FRUGAL" check -c "$TMP/$overlay-frugal.yaml"
    assert_eq 0 "$RC" "deploy/$overlay: its config passes frugal check [$ERR]"
    assert_match "^provider +exec $TMP/hook" "$OUT" "deploy/$overlay: the exec hook"
    [ "$overlay" = base ] || assert_match "state +etcd, prefix /frugal/prod/" "$OUT" "deploy/etcd: the etcd state"
done
assert_ok "the shipped hook is valid sh" sh -n "$TMP/hook"
# it writes the SSH identity from env_from_files into HOME, private, before running the
# image's libvirt hook (absent here: that last step fails). ssh reads ~/.ssh from the
# passwd entry, never from $HOME: a stand-in getent gives this uid the entry the image's
# Dockerfile makes, with HOME as its home.
mkdir -p "$TMP/home" "$TMP/bin"
printf '#!/bin/sh\n[ -n "$PASSWD_HOME" ] || exit 2\necho "frugal:x:$(id -u):$(id -g)::$PASSWD_HOME:/usr/sbin/nologin"\n' >"$TMP/bin/getent"
chmod +x "$TMP/bin/getent"
HOOK_ENV=(env PATH="$TMP/bin:$PATH" HOME="$TMP/home" LIBVIRT_SSH_KEY="key-material" LIBVIRT_KNOWN_HOSTS="host-keys")
run "${HOOK_ENV[@]}" PASSWD_HOME="" sh "$TMP/hook" list pool-a
assert_eq 1 "$RC" "no passwd entry: the hook stops"
assert_match "^frugal hook: uid [0-9]+ has no passwd entry, so ssh refuses to run" "$ERR" "it says why"
run "${HOOK_ENV[@]}" PASSWD_HOME="/home/frugal" sh "$TMP/hook" list pool-a
assert_eq 1 "$RC" "HOME is not the passwd home: the hook stops"
assert_match "^frugal hook: HOME is $TMP/home, but ssh reads /home/frugal/.ssh" "$ERR" "it says why"
assert_eq "" "$(ls -A "$TMP/home")" "nothing written where ssh would not read it"
run "${HOOK_ENV[@]}" PASSWD_HOME="$TMP/home" sh "$TMP/hook" list pool-a
assert_match "frugal-libvirt-hook" "$ERR" "with the passwd home as HOME it goes on to the libvirt hook"
assert_eq "key-material" "$(cat "$TMP/home/.ssh/id_ed25519" 2>&1)" "the hook writes the SSH key"
assert_eq "host-keys" "$(cat "$TMP/home/.ssh/known_hosts" 2>&1)" "the hook writes known_hosts"
assert_eq "600" "$(stat -c %a "$TMP/home/.ssh/id_ed25519" 2>&1)" "the key is private"

log "the kubeadm user-data installs the Kubernetes minor of the hook parameter kubernetes_version"
# Rendered as the libvirt hook does (docs/hooks.md, "The user-data template": @ENV:NAME@ is
# the variable NAME, empty when unset), then its apt source step run with curl and gpg
# stubbed and /etc/apt under $TMP.
render_user_data() { # VERSION: prints the rendered template
    python3 - "$FRUGAL_SOURCE_DIR/providers/hooks/libvirt/user-data.kubeadm.yaml" "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
env = {"FRUGAL_PARAM_KUBERNETES_VERSION": sys.argv[2], "KUBEADM_API_SERVER": "api:6443",
       "KUBEADM_TOKEN": "abcdef.0123456789abcdef", "KUBEADM_CA_HASH": "sha256:00"}
words = {"HOSTNAME": "frugal-pool-a-1", "PROVIDER_ID": "libvirt://kvm1/u", "NODE_LABELS": "a=b", "NODE_TAINTS": ""}
print(re.sub(r"@(ENV:)?([A-Za-z_][A-Za-z0-9_]*)@",
             lambda m: env.get(m.group(2), "") if m.group(1) else words.get(m.group(2), m.group(0)), text), end="")
PY
}
apt_source() { # VERSION: the apt source the user-data writes
    render_user_data "$1" >"$TMP/user-data"
    mkdir -p "$TMP/apt/keyrings" "$TMP/apt/sources.list.d"
    python3 -c '
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
step = [c for c in d["runcmd"] if isinstance(c, str) and "pkgs.k8s.io" in c]
print("curl() { :; }; gpg() { cat >/dev/null; }")
print("\n".join(step).replace("/etc/apt/", sys.argv[2] + "/"))
' "$TMP/user-data" "$TMP/apt" >"$TMP/apt.sh"
    sh "$TMP/apt.sh" && cat "$TMP/apt/sources.list.d/kubernetes.list"
}
assert_match 'https://pkgs.k8s.io/core:/stable:/v1.35/deb/ /$' "$(apt_source "")" "unset: v1.35, CA's minor"
assert_match 'https://pkgs.k8s.io/core:/stable:/v1.33/deb/ /$' "$(apt_source v1.33)" "kubernetes_version: v1.33"
run python3 -c '
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
join = yaml.safe_load([f for f in d["write_files"] if f["path"] == "/etc/frugal/join.yaml"][0]["content"])
args = {a["name"]: a["value"] for a in join["nodeRegistration"]["kubeletExtraArgs"]}
print(join["apiVersion"], args["provider-id"], args["node-labels"])
' "$TMP/user-data"
assert_eq "kubeadm.k8s.io/v1beta4 libvirt://kvm1/u a=b" "$OUT" "the join config: v1beta4 (kubeadm 1.31 and later), kubelet's flags as name/value pairs [$ERR]"

log "the image is set with kubectl alone: the commented images: entry of deploy/kustomization.yaml"
mkdir -p "$TMP/images"
cp -r "$DEPLOY" "$TMP/images/deploy"
sed -i 's/^# \(images:\)/\1/; s/^#   \(- name: frugal\)/  \1/; s/^#     \(new\)/    \1/' "$TMP/images/deploy/kustomization.yaml"
run kubectl kustomize "$TMP/images/deploy"
assert_match '^ +image: registry.example/frugal:0.1.0$' "$OUT" "uncommented, it sets frugal's image [$ERR]"

log "the checker finds a new overlay and names the file and field of what disagrees"
cp -r "$DEPLOY" "$TMP/deploy"
# bad-probe: the readiness probe on the gRPC health port, not on ops_listen
mkdir -p "$TMP/deploy/bad-probe"
printf '%s\n' 'resources: [../base]' 'patches: [{path: probe.yaml}]' >"$TMP/deploy/bad-probe/kustomization.yaml"
printf '%s\n' 'apiVersion: apps/v1' 'kind: Deployment' 'metadata: {name: frugal}' 'spec:' \
    '  template:' '    spec:' '      containers:' '        - name: frugal' \
    '          readinessProbe: {httpGet: {path: /readyz, port: 8088}}' >"$TMP/deploy/bad-probe/probe.yaml"
# bad-memory: limits.memory set to the whole container limit, no margin left
mkdir -p "$TMP/deploy/bad-memory"
{
    cat "$DEPLOY/base/frugal.yaml"
    echo "limits: {memory: 1Gi}"
} >"$TMP/deploy/bad-memory/frugal.yaml"
printf '%s\n' 'resources: [../base]' 'configMapGenerator:' \
    '  - {name: frugal-config, behavior: replace, files: [frugal.yaml], options: {disableNameSuffixHash: true}}' \
    >"$TMP/deploy/bad-memory/kustomization.yaml"
# bad-service: the Service lost the expander port CA's flags name
mkdir -p "$TMP/deploy/bad-service"
printf '%s\n' 'resources: [../base]' 'patches:' '  - target: {kind: Service, name: frugal}' \
    "    patch: '[{\"op\": \"remove\", \"path\": \"/spec/ports/1\"}]'" >"$TMP/deploy/bad-service/kustomization.yaml"
# bad-provider: the simulated provider, which makes no machines
mkdir -p "$TMP/deploy/bad-provider"
sed 's/^  kind: exec$/  kind: simulated/' "$DEPLOY/base/frugal.yaml" >"$TMP/deploy/bad-provider/frugal.yaml"
sed 's/bad-memory/bad-provider/' "$TMP/deploy/bad-memory/kustomization.yaml" >"$TMP/deploy/bad-provider/kustomization.yaml"
# bad-user: the pod runs as a uid the image has no passwd entry for
mkdir -p "$TMP/deploy/bad-user"
printf '%s\n' 'resources: [../base]' 'patches:' '  - target: {kind: Deployment, name: frugal}' \
    "    patch: '[{\"op\": \"replace\", \"path\": \"/spec/template/spec/securityContext/runAsUser\", \"value\": 1000}]'" \
    >"$TMP/deploy/bad-user/kustomization.yaml"
run "${CHECK[@]}" "$TMP/deploy" "$TMP/pki" "$TMP/state" "$TMP/x.yaml"
assert_eq 1 "$RC" "the bad overlays fail"
assert_match '^# overlays checked: \. bad-memory bad-probe bad-provider bad-service bad-user base etcd$' "$OUT" "new overlays are found [$OUT]"
assert_match '^FAIL: deploy/bad-user/: Deployment frugal \(base/deployment.yaml, bad-user/kustomization.yaml\): spec.template.spec.securityContext.runAsUser: 1000 is not the uid of the image.s user frugal \(65532:65532, deploy/Dockerfile\)' \
    "$ERR" "a pod uid without the image's passwd entry: file and field"
assert_match '^FAIL: deploy/bad-provider/: bad-provider/frugal.yaml: provider.kind: simulated: deploy/ runs the exec hook' \
    "$ERR" "the simulated provider: file and field"
assert_match '^FAIL: deploy/bad-probe/: Deployment frugal \(base/deployment.yaml, bad-probe/probe.yaml\): spec.template.spec.containers\[frugal\].readinessProbe.httpGet.port: 8088 is not ops_listen.s port 8087' \
    "$ERR" "a probe off ops_listen: file and field"
assert_match '^FAIL: deploy/bad-memory/: Deployment frugal \(base/deployment.yaml\): spec.template.spec.containers\[frugal\].resources.limits.memory: 1073741824 bytes cannot hold frugal.s memory budget 1073741824 \(bad-memory/frugal.yaml limits.memory\) plus the 64 MiB margin' \
    "$ERR" "a memory limit without margin: file and field"
assert_match '^FAIL: deploy/bad-service/: Service frugal \(base/service.yaml, bad-service/kustomization.yaml\): spec.ports: no port reaches the expander listener' \
    "$ERR" "a Service without the expander port: file and field"
assert_match 'grpc-expander-url is not the expander listener \(port 8444 of the Service of deploy/bad-service/\)' \
    "$ERR" "CA's expander URL is off the Service"
assert_no_match '^FAIL: deploy/(base/|etcd/)?:' "$ERR" "the shipped overlays stay clean"
# CA's chart values without the chart's gate; a CA client certificate renewed too late
sed -i -e 's/^autoDiscovery:/autoDiscoveryOff:/' -e '/^fullnameOverride:/d' "$TMP/deploy/cluster-autoscaler/values.yaml"
sed -i 's/renewBefore: 2160h/renewBefore: 360h/' "$TMP/deploy/cert-manager/pki.yaml"
# new machines' kubelet five minors behind CA's control plane
sed -i 's/kubernetes_version: v1.35/kubernetes_version: v1.30/' "$TMP/deploy/base/frugal.yaml"
# no reconciliation: vanished and leaked machines go unnoticed
sed -i '/^  reconcile_interval:/d' "$TMP/deploy/base/frugal.yaml"
# --init-state: any start whose state file is missing would start afresh
sed -i 's|^\(          args: \[serve, -c, [^],]*\), --init-new-volume\]|\1, --init-state]|' "$TMP/deploy/base/deployment.yaml"
grep -q -- 'args:.*--init-state\]' "$TMP/deploy/base/deployment.yaml" || fatal "the sed did not put --init-state in the args"
# a strategic-merge directive kustomize leaves in the output as a field
sed -i 's/^  strategy:.*/  strategy:\n    $retainKeys: [type, rollingUpdate]/' "$TMP/deploy/etcd/deployment-patch.yaml"
# the image's user with another home than the Deployment's HOME (and the image's ENV HOME)
sed -i 's|--home-dir /home/frugal|--home-dir /var/lib/frugal-home|' "$TMP/deploy/Dockerfile"
rm -r "$TMP/deploy/bad-probe" "$TMP/deploy/bad-memory" "$TMP/deploy/bad-service" "$TMP/deploy/bad-provider" \
    "$TMP/deploy/bad-user"
run "${CHECK[@]}" "$TMP/deploy" "$TMP/pki" "$TMP/state" "$TMP/x.yaml"
assert_match '^FAIL: deploy/etcd/: Deployment frugal \(base/deployment.yaml, etcd/deployment-patch.yaml\): spec.strategy.\$retainKeys: a patch directive kustomize did not apply' \
    "$ERR" "a \$-directive left in the rendered manifests"
assert_match '^FAIL: deploy/etcd/: Deployment frugal \(base/deployment.yaml, etcd/deployment-patch.yaml\): spec.strategy: unknown fields' \
    "$ERR" "an unknown strategy field"
assert_match '^FAIL: deploy/base/: base/frugal.yaml: provider.params.kubernetes_version: v1.30: kubelet 1.30 is outside the skew a kubelet may have to a 1.35 control plane' \
    "$ERR" "a kubelet minor outside the skew to CA's control plane"
assert_match '^FAIL: deploy/base/: base/frugal.yaml: provider.reconcile_interval: unset: machines that vanish' \
    "$ERR" "a config without reconciliation"
assert_match '^FAIL: deploy/base/: Deployment frugal \(base/deployment.yaml\): spec.template.spec.containers\[frugal\].args: --init-state: every start whose state file is missing would start afresh' \
    "$ERR" "a file state with --init-state"
assert_match '^FAIL: deploy/Dockerfile: ENV HOME: /home/frugal is not the home /var/lib/frugal-home of user frugal' \
    "$ERR" "the image's HOME is not its user's home"
assert_match '^FAIL: deploy/: Deployment frugal \(base/deployment.yaml\): spec.template.spec.containers\[frugal\].env\[HOME\]: /home/frugal is not the home /var/lib/frugal-home' \
    "$ERR" "the pod's HOME is not the image user's home"
assert_match '^FAIL: cluster-autoscaler/values.yaml: autoDiscovery.clusterName, .namespace, .labels or autoscalingGroups: none is set, so the chart renders no Deployment' \
    "$ERR" "values without the chart's gate"
assert_match '^FAIL: cluster-autoscaler/values.yaml: fullnameOverride: the chart names CA.s Deployment cluster-autoscaler-externalgrpc-cluster-autoscaler \(release cluster-autoscaler\), not cluster-autoscaler' \
    "$ERR" "values without fullnameOverride: CA's Deployment is not the one the docs name"
assert_match '^FAIL: deploy/etcd/: Certificate cluster-autoscaler-frugal-client \(cert-manager/pki.yaml\): spec.renewBefore: 360h: CA reads its client certificate at start' \
    "$ERR" "a CA client certificate renewed within CA's restart cadence"
# an image whose user has no passwd entry (ssh refuses to run)
cp "$DEPLOY/Dockerfile" "$TMP/deploy/Dockerfile"
sed -i 's/ useradd / true /' "$TMP/deploy/Dockerfile"
run "${CHECK[@]}" "$TMP/deploy" "$TMP/pki" "$TMP/state" "$TMP/x.yaml"
assert_match '^FAIL: deploy/Dockerfile: USER 65532:65532: no useradd gives that user a passwd entry, so ssh refuses to run' \
    "$ERR" "an image user without a passwd entry"

log "the shipped config loads"
assert_ok "frugal check of the replayed config" "$FRUGAL" check -c "$TMP/frugal.yaml"
assert_match '\(plaintext; health\)' "$OUT" "the summary shows the health-only listener"

start_server "$TMP/frugal.yaml" --addr "127.0.0.1:$HEALTH_PORT"

log "the kubelet's probe: plaintext gRPC health"
assert_ok "health in plaintext on the probe port" "$FRUGAL" ctl --addr "127.0.0.1:$HEALTH_PORT" health
assert_eq SERVING "$OUT" "the probe sees SERVING"
assert_status UNIMPLEMENTED "no CloudProvider call on the probe port" \
    "$FRUGAL" ctl --addr "127.0.0.1:$HEALTH_PORT" node-groups
assert_status NOT_FOUND "nor is the expander's health SERVING there" \
    "$FRUGAL" ctl --addr "127.0.0.1:$HEALTH_PORT" health grpcplugin.Expander
assert_match 'service "grpcplugin.Expander" is not served here' "$ERR" "it says why"

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
assert_ok "the expander's health on its port" "${EXP[@]}" health grpcplugin.Expander
assert_eq SERVING "$OUT" "SERVING where it is served"
assert_status NOT_FOUND "the CloudProvider's health on the expander port" \
    "${EXP[@]}" health clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider

log "CA's cloud provider: mutual TLS with the cloud-config's files"
CP=("$FRUGAL" ctl --addr "127.0.0.1:$CP_PORT" --tls-ca "$CLIENT_CACERT" --tls-server-name "$SERVER_NAME" --timeout 3000)
assert_status "UNAVAILABLE|UNAUTHENTICATED|PERMISSION_DENIED|CANCELLED" \
    "a CloudProvider call without a certificate is refused" "${CP[@]}" increase pool-a 1
assert_ok "with the client certificate" "${CP[@]}" --tls-cert "$CLIENT_CERT" --tls-key "$CLIENT_KEY" increase pool-a 1
assert_ok "target-size" "${CP[@]}" --tls-cert "$CLIENT_CERT" --tls-key "$CLIENT_KEY" target-size pool-a
assert_eq 1 "$OUT" "only the authenticated increase counted"
assert_status UNIMPLEMENTED "no expander call on the CloudProvider port" \
    "${CP[@]}" --tls-cert "$CLIENT_CERT" --tls-key "$CLIENT_KEY" best-options "$TMP/options.yaml"

if [ -n "${OPS_PORT:-}" ]; then
    log "a method refused by its listener is counted under its own name"
    M=$(curl -s --max-time 5 "http://127.0.0.1:$OPS_PORT/metrics")
    CPS=clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider
    assert_match "^grpc_server_handled_total\{grpc_service=\"$CPS\",grpc_method=\"NodeGroups\",grpc_code=\"UNIMPLEMENTED\"\} 1\$" \
        "$M" "NodeGroups on the probe port"
    assert_match "^grpc_server_handled_total\{grpc_service=\"$CPS\",grpc_method=\"NodeGroupIncreaseSize\",grpc_code=\"UNIMPLEMENTED\"\} 1\$" \
        "$M" "IncreaseSize on the expander port"
    assert_match '^grpc_server_handled_total\{grpc_service="grpcplugin.Expander",grpc_method="BestOptions",grpc_code="UNIMPLEMENTED"\} 1$' \
        "$M" "BestOptions on the CloudProvider port"
    assert_no_match '^grpc_server_handled_total\{grpc_service="unknown",grpc_method="unknown",grpc_code="UNIMPLEMENTED"\} [1-9]' \
        "$M" "none of them as unknown"
fi
stop_server
finish
