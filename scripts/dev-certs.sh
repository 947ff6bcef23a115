#!/usr/bin/env bash
# Make, with openssl, the same certificate chain deploy/cert-manager/ asks cert-manager
# for, to run frugal and a client locally:
#
#   frugal-ca                          self-signed CA (the CA Issuer's secret)
#   frugal-server-tls                  server auth, the Service's DNS names + localhost
#   cluster-autoscaler-frugal-client   client auth, CN cluster-autoscaler
#
# One directory per Secret name under OUT, each holding the Secret's keys as files
# (tls.crt, tls.key, ca.crt), so a config written for the Secret volumes works with
# the mount paths pointed here.
#
# usage: scripts/dev-certs.sh OUT [SERVICE [NAMESPACE]]   (default frugal kube-system)
set -euo pipefail

if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    [ $# -ge 1 ] && exit 0 || exit 2
fi
out=$1
svc=${2:-frugal}
ns=${3:-kube-system}
days=${DEV_CERTS_DAYS:-30}
command -v openssl >/dev/null || { echo "dev-certs.sh: openssl is needed" >&2; exit 1; }

ca="$out/frugal-ca"
server="$out/frugal-server-tls"
client="$out/cluster-autoscaler-frugal-client"
mkdir -p "$ca" "$server" "$client"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# P-256 keys, as the cert-manager Certificates request.
newkey() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

newkey "$ca/tls.key"
openssl req -x509 -new -key "$ca/tls.key" -subj "/CN=frugal-ca" -days "$days" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$ca/tls.crt"
cp "$ca/tls.crt" "$ca/ca.crt"

# sign DIR CN EXTENSIONS: DIR/tls.key and DIR/tls.crt signed by the CA, DIR/ca.crt.
sign() {
    local dir=$1 cn=$2 ext=$3
    newkey "$dir/tls.key"
    openssl req -new -key "$dir/tls.key" -subj "/CN=$cn" -out "$work/$cn.csr"
    printf '%s\n' "$ext" >"$work/$cn.ext"
    openssl x509 -req -in "$work/$cn.csr" -CA "$ca/tls.crt" -CAkey "$ca/tls.key" \
        -CAcreateserial -CAserial "$work/ca.srl" -days "$days" -sha256 \
        -extfile "$work/$cn.ext" -out "$dir/tls.crt" 2>/dev/null
    cp "$ca/tls.crt" "$dir/ca.crt"
    chmod 600 "$dir/tls.key"
}

sign "$server" "$svc.$ns.svc" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:$svc,DNS:$svc.$ns,DNS:$svc.$ns.svc,DNS:$svc.$ns.svc.cluster.local,DNS:localhost,IP:127.0.0.1"
sign "$client" cluster-autoscaler "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
chmod 600 "$ca/tls.key"
echo "certificates in $out: frugal-ca, frugal-server-tls, cluster-autoscaler-frugal-client"
