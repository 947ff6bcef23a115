#!/usr/bin/env bash
# TLS and mutual TLS listeners with certificates made by openssl for this run; a
# client without (or with a foreign) certificate is refused by the mTLS listener; a
# plaintext listener on a non-loopback address is refused unless allow_insecure.
source "$(dirname "$0")/lib.sh"

command -v openssl >/dev/null 2>&1 || fatal "openssl is needed"

PKI="$TMP/pki"
mkdir -p "$PKI"

# make_ca NAME: a self-signed CA NAME.crt/NAME.key.
make_ca() {
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$1" \
        -keyout "$PKI/$1.key" -out "$PKI/$1.crt" >/dev/null 2>&1 || fatal "openssl: CA $1"
}

# make_cert NAME CA USAGE [SAN]: NAME.crt/NAME.key signed by CA.
make_cert() {
    local name=$1 ca=$2 usage=$3 san=${4:-}
    {
        echo "basicConstraints=CA:FALSE"
        echo "keyUsage=digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=$usage"
        [ -n "$san" ] && echo "subjectAltName=$san"
    } >"$PKI/$name.ext"
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$name" \
        -keyout "$PKI/$name.key" -out "$PKI/$name.csr" >/dev/null 2>&1 || fatal "openssl: csr $name"
    openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" -CAcreateserial \
        -days 2 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" >/dev/null 2>&1 || fatal "openssl: sign $name"
}

make_ca ca
make_ca rogue-ca
make_cert server ca serverAuth "IP:127.0.0.1,DNS:localhost"
make_cert client ca clientAuth
make_cert rogue-client rogue-ca clientAuth

TLS_PORT=$(free_port)
MTLS_PORT=$(free_port)
while [ "$MTLS_PORT" = "$TLS_PORT" ]; do MTLS_PORT=$(free_port); done

cat >"$TMP/tls.yaml" <<EOF
listen:
  - address: 127.0.0.1:$TLS_PORT
    tls:
      cert: $PKI/server.crt
      key: $PKI/server.key
  - address: 127.0.0.1:$MTLS_PORT
    tls:
      cert: $PKI/server.crt
      key: $PKI/server.key
      client_ca: $PKI/ca.crt
node_groups:
  - id: pool-a
    machine_type: n1-standard-2
    min_size: 0
    max_size: 3
EOF

log "check accepts the TLS config"
assert_ok "frugal check of the TLS config" "$FRUGAL" check -c "$TMP/tls.yaml"
assert_no_match "warning: listener" "$ERR" "its files pass serve's checks: no warning"

ADDR="127.0.0.1:$TLS_PORT"
CTL_OPTS=(--tls-ca "$PKI/ca.crt")
start_server "$TMP/tls.yaml"

log "server-side TLS"
assert_ok "health over TLS" ctl health
assert_ok "node-groups over TLS" ctl -o yaml node-groups
assert_match '^- id: "pool-a"$' "$OUT" "node-groups over TLS"
assert_ok "increase over TLS" ctl increase pool-a 1
assert_ok "TLS with the name override" ctl --tls-server-name localhost target-size pool-a
assert_eq 1 "$OUT" "target over TLS"
assert_ok "TLS via localhost" "$FRUGAL" ctl --addr "localhost:$TLS_PORT" --tls-ca "$PKI/ca.crt" health
assert_status "UNAVAILABLE" "TLS with a name not in the certificate" \
    ctl --tls-server-name not-the-server.example health
assert_status "UNAVAILABLE" "TLS against a foreign CA" \
    "$FRUGAL" ctl --addr "$ADDR" --tls-ca "$PKI/rogue-ca.crt" --timeout 3000 health
assert_status "UNAVAILABLE|INTERNAL|UNKNOWN" "plaintext client on the TLS port" \
    "$FRUGAL" ctl --addr "$ADDR" --timeout 3000 health

log "mutual TLS"
ADDR="127.0.0.1:$MTLS_PORT"
CTL_OPTS=(--tls-ca "$PKI/ca.crt" --tls-cert "$PKI/client.crt" --tls-key "$PKI/client.key")
assert_ok "health with a client certificate" ctl health
assert_ok "target-size with a client certificate" ctl target-size pool-a
assert_eq 1 "$OUT" "target over mTLS"
assert_status "UNAVAILABLE|UNAUTHENTICATED|PERMISSION_DENIED|CANCELLED" "mTLS refuses a client without certificate" \
    "$FRUGAL" ctl --addr "$ADDR" --tls-ca "$PKI/ca.crt" --timeout 3000 increase pool-a 1
assert_status "UNAVAILABLE|UNAUTHENTICATED|PERMISSION_DENIED|CANCELLED" "mTLS refuses a certificate of another CA" \
    "$FRUGAL" ctl --addr "$ADDR" --tls-ca "$PKI/ca.crt" --tls-cert "$PKI/rogue-client.crt" \
    --tls-key "$PKI/rogue-client.key" --timeout 3000 increase pool-a 1
assert_status "UNAVAILABLE|INTERNAL|UNKNOWN" "plaintext client on the mTLS port" \
    "$FRUGAL" ctl --addr "$ADDR" --timeout 3000 increase pool-a 1
assert_eq 1 "$(target_size pool-a)" "refused clients changed nothing"
# 30 more plaintext peers: gRPC logs each failed handshake; frugal once a minute
for _ in $(seq 1 30); do
    python3 -c 'import socket,sys; s=socket.create_connection(("127.0.0.1", int(sys.argv[1]))); s.sendall(b"GET / HTTP/1.1\r\n\r\n"); s.settimeout(3); s.recv(64)' "$MTLS_PORT" 2>/dev/null || true
done
sleep 0.5
assert_eq 1 "$(grep -c 'Handshake failed' "$SERVER_LOG")" "failed handshakes are logged once a minute"
assert_match "warn .*Handshake failed.*further ones are not logged for a minute" "$(cat "$SERVER_LOG")" "as a warning"
assert_exit 1 "a missing CA file is a local error" "$FRUGAL" ctl --addr "$ADDR" --tls-ca "$TMP/none.crt" health
echo "not a certificate" >"$TMP/garbage.crt"
assert_exit 1 "a CA file without a certificate is a local error" "$FRUGAL" ctl --addr "$ADDR" --tls-ca "$TMP/garbage.crt" health
assert_match "garbage.crt: no readable PEM certificate" "$ERR" "naming the file"
assert_exit 2 "a client certificate without its key is a usage error" "$FRUGAL" ctl --addr "$ADDR" --tls-ca "$PKI/ca.crt" --tls-cert "$PKI/client.crt" health

log "a rotated certificate is served without a restart"
make_ca ca2
make_cert server2 ca2 serverAuth "IP:127.0.0.1,DNS:localhost"
ADDR="127.0.0.1:$TLS_PORT"
CTL_OPTS=(--tls-ca "$PKI/ca2.crt" --timeout 3000)
assert_status "UNAVAILABLE" "before the rotation, the new CA is not trusted" ctl health
cp "$PKI/server2.key" "$PKI/server.key.new" && mv "$PKI/server.key.new" "$PKI/server.key"
cp "$PKI/server2.crt" "$PKI/server.crt.new" && mv "$PKI/server.crt.new" "$PKI/server.crt"
assert_ok "after the rotation, new connections get the new certificate" ctl health
assert_status "UNAVAILABLE" "and the old CA no longer verifies it" \
    "$FRUGAL" ctl --addr "$ADDR" --tls-ca "$PKI/ca.crt" --timeout 3000 health
ADDR="127.0.0.1:$MTLS_PORT"
assert_ok "the mTLS listener serves the new certificate too" \
    "$FRUGAL" ctl --addr "$ADDR" --tls-ca "$PKI/ca2.crt" --tls-cert "$PKI/client.crt" \
    --tls-key "$PKI/client.key" health
: >"$PKI/server.crt"
assert_ok "a broken rotation keeps the last good certificate" ctl --tls-ca "$PKI/ca2.crt" \
    --tls-cert "$PKI/client.crt" --tls-key "$PKI/client.key" health
stop_server

log "an unreadable or expired certificate: a clear error at start, the last good one kept on rotation"
# expired: signed by ca, valid only on 2020-01-01
mkdir -p "$PKI/ca-db" && : >"$PKI/ca-db/index.txt" && echo 01 >"$PKI/ca-db/serial"
printf '[ca]\ndefault_ca=d\n[d]\ndatabase=%s/index.txt\nserial=%s/serial\nnew_certs_dir=%s\npolicy=p\ndefault_md=sha256\n[p]\ncommonName=supplied\n' \
    "$PKI/ca-db" "$PKI/ca-db" "$PKI/ca-db" >"$PKI/ca-db/ca.cnf"
openssl req -newkey rsa:2048 -nodes -subj "/CN=expired" -keyout "$PKI/expired.key" -out "$PKI/expired.csr" >/dev/null 2>&1
openssl ca -batch -config "$PKI/ca-db/ca.cnf" -cert "$PKI/ca.crt" -keyfile "$PKI/ca.key" -in "$PKI/expired.csr" \
    -out "$PKI/expired.crt" -startdate 20200101000000Z -enddate 20200102000000Z -notext >/dev/null 2>&1 ||
    fatal "openssl: expired certificate"
BAD_PORT=$(free_port)
# bad_config CERT KEY: a TLS listener with these files.
bad_config() {
    printf 'listen:\n  - address: 127.0.0.1:%s\n    tls: {cert: %s, key: %s}\nnode_groups:\n  - {id: pool-a, machine_type: n1-standard-2, max_size: 3}\n' \
        "$BAD_PORT" "$1" "$2" >"$TMP/bad-tls.yaml"
}
bad_config "$PKI/expired.crt" "$PKI/expired.key"
run timeout 10 "$FRUGAL" serve -c "$TMP/bad-tls.yaml"
assert_eq 1 "$RC" "serve refuses an expired certificate"
assert_match "$PKI/expired.crt: the certificate expired on Jan  2 00:00:00 2020 GMT" "$ERR" "the error names the file and the date"
# check warns (the files may live on another machine) and still exits 0
assert_ok "check of a config whose certificate expired" "$FRUGAL" check -c "$TMP/bad-tls.yaml"
assert_match "^warning: listener 127.0.0.1:$BAD_PORT: $PKI/expired.crt: the certificate expired on Jan  2 00:00:00 2020 GMT: frugal serve here would refuse it" \
    "$ERR" "check warns, naming the listener, the file and the date"
bad_config "$PKI/missing.crt" "$PKI/server.key"
run timeout 10 "$FRUGAL" serve -c "$TMP/bad-tls.yaml"
assert_eq 1 "$RC" "serve refuses a missing certificate"
assert_match "$PKI/missing.crt" "$ERR" "the error names the missing file"
assert_ok "check of a config whose certificate is missing" "$FRUGAL" check -c "$TMP/bad-tls.yaml"
assert_match "^warning: listener 127.0.0.1:$BAD_PORT: cannot (read|open|stat) $PKI/missing.crt" "$ERR" "check warns"
bad_config "$PKI" "$PKI/server.key"
run timeout 10 "$FRUGAL" serve -c "$TMP/bad-tls.yaml"
assert_eq 1 "$RC" "serve refuses an unreadable certificate (a directory)"
assert_match "cannot (read|stat|open) $PKI" "$ERR" "the error names the unreadable file"
bad_config "$PKI/server2.crt" "$PKI/expired.key"
run timeout 10 "$FRUGAL" serve -c "$TMP/bad-tls.yaml"
assert_eq 1 "$RC" "serve refuses a key that is not the certificate's"
assert_match "$PKI/expired.key is not the private key of the certificate in $PKI/server2.crt" "$ERR" \
    "the error names the mismatched pair"
cp "$PKI/server2.crt" "$PKI/live.crt" && cp "$PKI/server2.key" "$PKI/live.key" # server.crt was emptied above
bad_config "$PKI/live.crt" "$PKI/live.key"
LIVE_OPS=$(free_port)
echo "ops_listen: 127.0.0.1:$LIVE_OPS" >>"$TMP/bad-tls.yaml"
ADDR="127.0.0.1:$BAD_PORT"
CTL_OPTS=(--tls-ca "$PKI/ca2.crt" --timeout 3000)
start_server "$TMP/bad-tls.yaml"
# served_expiry: the expiry metric of the live listener
served_expiry() {
    curl -s --max-time 5 "http://127.0.0.1:$LIVE_OPS/metrics" |
        sed -n "s/^frugal_tls_certificate_expiry_timestamp_seconds{listener=\"127.0.0.1:$BAD_PORT\"} //p"
}
LIVE_EXPIRY=$(date -u -d "$(openssl x509 -in "$PKI/server2.crt" -noout -enddate | sed 's/notAfter=//')" +%s)
assert_eq "$LIVE_EXPIRY" "$(served_expiry)" "the expiry metric shows the served certificate"
assert_ok "increase before the bad rotation" ctl increase pool-a 1
log "a CA bundle: an expired certificate beside a valid one is kept, a bundle of none valid is refused"
cat "$PKI/expired.crt" "$PKI/ca2.crt" >"$PKI/rotating-ca.crt"
assert_ok "ctl trusts a bundle whose first certificate has expired" \
    "$FRUGAL" ctl --addr "$ADDR" --tls-ca "$PKI/rotating-ca.crt" --timeout 3000 health
assert_exit 1 "ctl refuses a CA file whose only certificate has expired" \
    "$FRUGAL" ctl --addr "$ADDR" --tls-ca "$PKI/expired.crt" --timeout 3000 health
assert_match "^error: $PKI/expired.crt: the certificate expired on Jan  2 00:00:00 2020 GMT" "$ERR" \
    "naming the file and the date"
cat "$PKI/expired.crt" "$PKI/expired.crt" >"$PKI/stale-ca.crt"
assert_exit 1 "ctl refuses a bundle of expired certificates" \
    "$FRUGAL" ctl --addr "$ADDR" --tls-ca "$PKI/stale-ca.crt" --timeout 3000 health
assert_match "$PKI/stale-ca.crt: none of its 2 certificates is valid now \(the first expired on Jan  2 00:00:00 2020 GMT\)" \
    "$ERR" "a bundle with none valid, and why"
printf 'listen:\n  - address: 127.0.0.1:%s\n    tls: {cert: %s, key: %s, client_ca: %s}\nnode_groups:\n  - {id: pool-a, machine_type: n1-standard-2, max_size: 3}\n' \
    "$(free_port)" "$PKI/server2.crt" "$PKI/server2.key" "$PKI/stale-ca.crt" >"$TMP/stale-client-ca.yaml"
run timeout 10 "$FRUGAL" serve -c "$TMP/stale-client-ca.yaml"
assert_eq 1 "$RC" "serve refuses a client CA with no valid certificate"
assert_match "$PKI/stale-ca.crt: none of its 2 certificates is valid now" "$ERR" "naming the client CA file"
cp "$PKI/expired.key" "$PKI/live.key.new" && mv "$PKI/live.key.new" "$PKI/live.key"
cp "$PKI/expired.crt" "$PKI/live.crt.new" && mv "$PKI/live.crt.new" "$PKI/live.crt"
assert_ok "a rotation to an expired certificate keeps the last good one" ctl health
assert_eq 1 "$(target_size pool-a)" "and the server's data"
assert_match "TLS reload failed, keeping the current certificate: .*expired" "$(cat "$SERVER_LOG")" "the refusal is logged"
for _ in 1 2 3 4 5; do ctl health >/dev/null 2>&1; done
assert_eq 1 "$(grep -c 'TLS reload failed.*expired' "$SERVER_LOG")" "once, not at each handshake that retries it"
assert_eq "$LIVE_EXPIRY" "$(served_expiry)" "the expiry metric still shows the served certificate, not the refused one"
cp "$PKI/server2.crt" "$PKI/live.crt.new" && mv "$PKI/live.crt.new" "$PKI/live.crt" # with expired.key
assert_ok "a rotation to a certificate of another key keeps the last good one" ctl health
assert_match "TLS reload failed, keeping the current certificate: .*live.key is not the private key of the certificate in .*live.crt" \
    "$(cat "$SERVER_LOG")" "the mismatch is logged"
assert_no_match "TLS material of .* reloaded" "$(cat "$SERVER_LOG")" "no reload is claimed"
assert_eq "$LIVE_EXPIRY" "$(served_expiry)" "a refused rotation is still not shown at the next scrape"
# server2's key in a certificate that expires three days later: shown before a handshake loads it
openssl x509 -req -in "$PKI/server2.csr" -CA "$PKI/ca2.crt" -CAkey "$PKI/ca2.key" -CAcreateserial \
    -days 5 -extfile "$PKI/server2.ext" -out "$PKI/later.crt" >/dev/null 2>&1 || fatal "openssl: sign later"
LATER_EXPIRY=$(date -u -d "$(openssl x509 -in "$PKI/later.crt" -noout -enddate | sed 's/notAfter=//')" +%s)
cp "$PKI/server2.key" "$PKI/live.key.new" && mv "$PKI/live.key.new" "$PKI/live.key"
cp "$PKI/later.crt" "$PKI/live.crt.new" && mv "$PKI/live.crt.new" "$PKI/live.crt"
assert_eq "$LATER_EXPIRY" "$(served_expiry)" "a good rotation shows its certificate before a handshake loads it"
assert_ok "a rotation to a good certificate is served" ctl health
assert_eq "$LATER_EXPIRY" "$(served_expiry)" "and once it is served"
stop_server

log "client CAs as bundles: an expired certificate beside the valid CA, and the TRUSTED CERTIFICATE form"
cat "$PKI/expired.crt" "$PKI/ca.crt" >"$PKI/rotating-client-ca.crt"
openssl x509 -in "$PKI/ca.crt" -trustout -out "$PKI/ca-trusted.crt" 2>/dev/null || fatal "openssl: -trustout"
openssl x509 -in "$PKI/ca2.crt" -trustout -out "$PKI/ca2-trusted.crt" 2>/dev/null || fatal "openssl: -trustout"
grep -q 'BEGIN TRUSTED CERTIFICATE' "$PKI/ca-trusted.crt" || fatal "openssl wrote no TRUSTED CERTIFICATE"
ROT_PORT=$(free_port)
TRUST_PORT=$(free_port)
while [ "$TRUST_PORT" = "$ROT_PORT" ]; do TRUST_PORT=$(free_port); done
cat >"$TMP/bundles.yaml" <<EOF
listen:
  - address: 127.0.0.1:$ROT_PORT
    tls: {cert: $PKI/server2.crt, key: $PKI/server2.key, client_ca: $PKI/rotating-client-ca.crt}
  - address: 127.0.0.1:$TRUST_PORT
    tls: {cert: $PKI/server2.crt, key: $PKI/server2.key, client_ca: $PKI/ca-trusted.crt}
node_groups:
  - {id: pool-a, machine_type: n1-standard-2, max_size: 3}
EOF
ADDR="127.0.0.1:$ROT_PORT"
CTL_OPTS=(--tls-ca "$PKI/ca2.crt" --tls-cert "$PKI/client.crt" --tls-key "$PKI/client.key" --timeout 3000)
start_server "$TMP/bundles.yaml"
assert_ok "a client CA bundle whose first certificate has expired admits its clients" ctl increase pool-a 1
assert_status "UNAVAILABLE|UNAUTHENTICATED|PERMISSION_DENIED|CANCELLED" "and refuses others" \
    "$FRUGAL" ctl --addr "$ADDR" --tls-ca "$PKI/ca2.crt" --tls-cert "$PKI/rogue-client.crt" \
    --tls-key "$PKI/rogue-client.key" --timeout 3000 increase pool-a 1
ADDR="127.0.0.1:$TRUST_PORT"
assert_ok "a client CA in TRUSTED CERTIFICATE form admits its clients" ctl target-size pool-a
assert_eq 1 "$OUT" "one increase counted"
assert_ok "ctl --tls-ca in TRUSTED CERTIFICATE form" \
    "$FRUGAL" ctl --addr "$ADDR" --tls-ca "$PKI/ca2-trusted.crt" --tls-cert "$PKI/client.crt" \
    --tls-key "$PKI/client.key" --timeout 3000 health
stop_server

log "plaintext on a non-loopback address"
INSECURE_PORT=$(free_port)
cat >"$TMP/insecure.yaml" <<EOF
listen:
  - address: 0.0.0.0:$INSECURE_PORT
node_groups:
  - id: pool-a
    machine_type: n1-standard-2
    max_size: 3
EOF
assert_exit 1 "check refuses plaintext on 0.0.0.0" "$FRUGAL" check -c "$TMP/insecure.yaml"
assert_match "^$TMP/insecure.yaml:[0-9]+:[0-9]+: " "$ERR" "the refusal is FILE:LINE:COL:"
assert_match "insecure|plaintext|TLS|tls" "$ERR" "the refusal says why"
run timeout 10 "$FRUGAL" serve -c "$TMP/insecure.yaml"
if [ "$RC" -ne 0 ] && [ "$RC" -ne 124 ]; then pass; else fail "serve must refuse the insecure config (rc=$RC)"; fi
sed 's/^listen:/allow_insecure: true\nlisten:/' "$TMP/insecure.yaml" >"$TMP/allowed.yaml"
assert_ok "allow_insecure: true permits it" "$FRUGAL" check -c "$TMP/allowed.yaml"

finish
