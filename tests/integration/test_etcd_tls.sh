#!/usr/bin/env bash
# The etcd backend over mutual TLS (scripts/dev-certs.sh's chain): it serves with the
# right CA and client certificate; a wrong CA or a missing client certificate stops the
# start with a precise error, before anything is written.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/etcd_lib.sh"

"$FRUGAL_SOURCE_DIR/scripts/dev-certs.sh" "$TMP/pki" >/dev/null || fatal "dev-certs.sh failed"
"$FRUGAL_SOURCE_DIR/scripts/dev-certs.sh" "$TMP/other" >/dev/null || fatal "dev-certs.sh failed"
S=$TMP/pki/frugal-server-tls
C=$TMP/pki/cluster-autoscaler-frugal-client
CP=$(free_port)
PP=$(free_port)
etcd --name tls --data-dir "$TMP/etcd-tls" --listen-client-urls "https://127.0.0.1:$CP" \
    --advertise-client-urls "https://127.0.0.1:$CP" --listen-peer-urls "http://127.0.0.1:$PP" \
    --initial-advertise-peer-urls "http://127.0.0.1:$PP" --initial-cluster "tls=http://127.0.0.1:$PP" \
    --cert-file "$S/tls.crt" --key-file "$S/tls.key" --trusted-ca-file "$S/ca.crt" \
    --client-cert-auth >"$TMP/etcd-tls.log" 2>&1 &
ALL_SERVER_PIDS+=($!)
for _ in $(seq 1 100); do
    curl -sf --cacert "$S/ca.crt" --cert "$C/tls.crt" --key "$C/tls.key" -X POST \
        "https://127.0.0.1:$CP/v3/kv/range" -d '{"key":"AA=="}' >/dev/null 2>&1 && break
    sleep 0.1
done

tls_config() { # FILE PORT TLS_YAML
    cat >"$1" <<YAML
listen: [{address: "127.0.0.1:$2"}]
state:
  backend: etcd
  endpoints: [https://127.0.0.1:$CP]
  prefix: /frugal/tls/
  request_timeout: 1s
  $3
node_groups:
  - {id: web-a, machine_type: n1-standard-2, min_size: 0, max_size: 10}
YAML
}

log "mutual TLS: serves"
P=$(free_port)
tls_config "$TMP/ok.yaml" "$P" "tls: {ca: $C/ca.crt, cert: $C/tls.crt, key: $C/tls.key}"
ADDR=127.0.0.1:$P start_server "$TMP/ok.yaml"
ADDR=127.0.0.1:$P assert_ok "increase over TLS" ctl increase web-a 2
stop_server

log "a wrong CA: refused at start"
tls_config "$TMP/ca.yaml" "$(free_port)" "tls: {ca: $TMP/other/frugal-ca/ca.crt, cert: $C/tls.crt, key: $C/tls.key}"
run timeout 20 "$FRUGAL" serve -c "$TMP/ca.yaml"
assert_eq 1 "$RC" "exit 1"
assert_match "etcd unavailable: no endpoint answered /etcdserverpb.Lease/LeaseGrant .*https://127.0.0.1:$CP" "$ERR" "names the endpoint"
assert_match "certificate verify failed" "$ERR" "and gRPC's reason"
echo "    $(echo "$ERR" | grep "frugal serve")"

log "no client certificate: refused at start"
tls_config "$TMP/nocert.yaml" "$(free_port)" "tls: {ca: $C/ca.crt}"
run timeout 20 "$FRUGAL" serve -c "$TMP/nocert.yaml"
assert_eq 1 "$RC" "exit 1"
assert_match "https://127.0.0.1:$CP" "$ERR" "names the endpoint"
echo "    $(echo "$ERR" | grep "frugal serve")"

log "an unreadable TLS file: refused, naming it"
tls_config "$TMP/missing.yaml" "$(free_port)" "tls: {ca: $TMP/nope.pem}"
run timeout 20 "$FRUGAL" serve -c "$TMP/missing.yaml"
assert_eq 1 "$RC" "exit 1"
assert_match "$TMP/nope.pem" "$ERR" "names the file"

log "TLS files that are not what they should be: refused before any connection, naming them"
echo "not a certificate" >"$TMP/garbage.pem"
tls_config "$TMP/garbage.yaml" "$(free_port)" "tls: {ca: $TMP/garbage.pem, cert: $C/tls.crt, key: $C/tls.key}"
run timeout 20 "$FRUGAL" serve -c "$TMP/garbage.yaml"
assert_eq 1 "$RC" "exit 1"
assert_match "$TMP/garbage.pem: no readable PEM certificate" "$ERR" "a CA file without a certificate"
tls_config "$TMP/pair.yaml" "$(free_port)" "tls: {ca: $C/ca.crt, cert: $C/tls.crt, key: $S/tls.key}"
run timeout 20 "$FRUGAL" serve -c "$TMP/pair.yaml"
assert_eq 1 "$RC" "exit 1"
assert_match "$S/tls.key is not the private key of the certificate in $C/tls.crt" "$ERR" "a key that is not the certificate's"
finish
