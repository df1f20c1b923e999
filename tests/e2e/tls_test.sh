#!/usr/bin/env bash
# End to end: HTTPS and WSS (--ssl-certfile, --ssl-keyfile) with a test CA made here by
# openssl: curl, the openai SDK (Node, trusting the CA through NODE_EXTRA_CA_CERTS) and a
# WebSocket client get the golden greedy text over TLS; a client without the CA is refused by
# its own check, plain HTTP on the TLS port gets no answer; and with --ssl-ca-certs and
# --ssl-cert-reqs 2, a client without a certificate of that CA cannot connect and one with it
# can. A certificate file that does not exist stops the server at start, naming the flag.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"
require_tools curl openssl
require_command serve
e2e_dir="$ACTORLLM_SOURCE_DIR/tests/e2e"
require_node_clients "$e2e_dir"
model="$ACTORLLM_SHARED_DIR/models/stories260K"
golden="$model/golden_greedy.json"

# The test CA, a server certificate for 127.0.0.1 and localhost, and a client certificate.
pki="$work/pki"
mkdir -p "$pki"
quiet() { "$@" >/dev/null 2>&1; }
quiet openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=actorllm test CA" \
  -keyout "$pki/ca.key" -out "$pki/ca.pem"
issue() {  # issue <name> <subject CN> [extension line]
  quiet openssl req -newkey rsa:2048 -nodes -subj "/CN=$2" -keyout "$pki/$1.key" -out "$pki/$1.csr"
  printf '%s\n' "${3:-extendedKeyUsage=clientAuth}" >"$pki/$1.ext"
  quiet openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" \
    -CAcreateserial -days 2 -extfile "$pki/$1.ext" -out "$pki/$1.pem"
}
issue server 127.0.0.1 "subjectAltName=IP:127.0.0.1,DNS:localhost"
issue client "a client"

serve() {  # serve <log name> <port> [flags...]
  local name=$1 port=$2
  shift 2
  "$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" --device cpu \
    --disable-log-stats --ssl-certfile "$pki/server.pem" --ssl-keyfile "$pki/server.key" \
    --chat-template "$ACTORLLM_SHARED_DIR/chat-templates/mistralai-Mistral-Nemo-Instruct-2407.jinja" "$@" \
    >"$work/$name.log" 2>&1 &
  pids+=("$!")
}
port=$(free_port)
serve tls "$port"
mtls_port=$(free_port)
serve mtls "$mtls_port" --ssl-ca-certs "$pki/ca.pem" --ssl-cert-reqs 2
for p in "$port" "$mtls_port"; do
  for _ in $(seq 1 300); do
    curl -sf --cacert "$pki/ca.pem" --cert "$pki/client.pem" --key "$pki/client.key" \
      "https://127.0.0.1:$p/health" >/dev/null 2>&1 && break
    sleep 0.1
  done
done
base="https://127.0.0.1:$port"

check "HTTPS /health with the test CA" curl -sf --cacert "$pki/ca.pem" "$base/health"
check "a client without the CA refuses the certificate" \
  test "$(curl -s -o /dev/null -w '%{http_code}' "$base/health" || true)" = 000
check "plain HTTP on the TLS port gets no answer" \
  test "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health" || true)" = 000
check "the openai SDK over HTTPS (golden text, whole and streamed)" \
  env NODE_EXTRA_CA_CERTS="$pki/ca.pem" node "$e2e_dir/openai_client.mjs" "$base" "$golden"
check "a WebSocket client over WSS" \
  env NODE_EXTRA_CA_CERTS="$pki/ca.pem" node "$e2e_dir/ws_client.mjs" \
  "wss://127.0.0.1:$port/v1/ws" "$golden"

mtls="https://127.0.0.1:$mtls_port"
check "--ssl-cert-reqs 2: no client certificate, no connection" \
  test "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$pki/ca.pem" "$mtls/health" || true)" = 000
check "--ssl-cert-reqs 2: a certificate of --ssl-ca-certs connects" \
  curl -sf --cacert "$pki/ca.pem" --cert "$pki/client.pem" --key "$pki/client.key" "$mtls/health"

status=0
msg=$("$ACTORLLM_BIN" serve --model "$model" --port "$(free_port)" --device cpu \
  --ssl-certfile "$work/missing.pem" --ssl-keyfile "$pki/server.key" 2>&1) || status=$?
check "a missing certificate file stops the server, naming the flag (status $status)" \
  sh -c "test $status -ne 0 && printf '%s' \"\$1\" | grep -q -- '--ssl-certfile'" _ "$msg"

if [[ $failures -ne 0 ]]; then
  for name in tls mtls; do echo "--- $name.log"; tail -n 10 "$work/$name.log"; done
  exit 1
fi
