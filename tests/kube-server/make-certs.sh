#!/bin/sh
# make-certs.sh: generates a throwaway CA, server and client certificates for the kube_server.py test server.
# Usage: make-certs.sh DIR
# Writes to DIR: ca.crt ca.key, server.crt server.key (SAN IP:127.0.0.1, DNS:localhost, signed by
# the CA), client.crt client.key (CN=gpunode-test, O=system:masters, signed by the CA), and
# other-ca.crt other-ca.key (an unrelated CA, for "untrusted certificate" tests).
# EC P-256 keys keep it fast; the certificates are valid for 2 days.
set -eu
dir=${1:?usage: make-certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
umask 077
ossl() { openssl "$@" 2>/dev/null; }

newkey() { ossl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }

for ca in ca other-ca; do
  newkey $ca.key
  ossl req -x509 -new -key $ca.key -sha256 -days 2 -subj "/CN=gpunode-test-$ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out $ca.crt
done

cat > server.ext <<'X'
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost
X
cat > client.ext <<'X'
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth
X

newkey server.key
ossl req -new -key server.key -subj "/CN=kube-apiserver" -out server.csr
ossl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -sha256 \
  -extfile server.ext -out server.crt

newkey client.key
ossl req -new -key client.key -subj "/O=system:masters/CN=gpunode-test" -out client.csr
ossl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -sha256 \
  -extfile client.ext -out client.crt

rm -f server.csr client.csr server.ext client.ext ca.srl
chmod 0644 ./*.crt ./*.key
