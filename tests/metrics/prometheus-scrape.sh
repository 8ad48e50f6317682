#!/usr/bin/env bash
# kjitd's metrics scraped by a real Prometheus server (Debian's prometheus)
# with the scrape configuration the README gives: over TLS with the TCP
# listener's certificate (metrics_tls, tls_config: ca_file) and with a bearer
# token (metrics_token_sha256, authorization: credentials_file). Passes once
# Prometheus reports that target up == 1 and a second target scraped with a
# wrong token up == 0, within a bound. Exits 77 (skipped) where prometheus
# is not installed.
#
#   tests/metrics/prometheus-scrape.sh build/bin/kjitd
set -euo pipefail

kjitd=$(realpath "${1:?usage: prometheus-scrape.sh KJITD}")
deadline_s=${KJIT_PROMETHEUS_DEADLINE_S:-60}
if ! command -v prometheus >/dev/null; then
  echo "prometheus-scrape: prometheus is not installed (Debian: prometheus); skipped"
  exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/kjit-prometheus-XXXXXX")
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "prometheus-scrape: FAILED: $*" >&2
  for log in "$work"/kjitd.log "$work"/prometheus.log; do
    [[ -f $log ]] && { echo "--- $(basename "$log") (last lines)" >&2; tail -n 20 "$log" >&2; }
  done
  exit 1
}

# Free loopback ports, as the C++ tests pick theirs.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A CA and the daemon's certificate for 127.0.0.1, which Prometheus checks.
cd "$work"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj "/CN=kjit test CA" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
  -keyout ca.key -out ca.crt 2>/dev/null
echo "subjectAltName=DNS:localhost,IP:127.0.0.1" >server.ext
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=kjitd" \
  -keyout server.key -out server.csr 2>/dev/null
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile server.ext \
  -out server.crt 2>/dev/null

# The token in a file for Prometheus; only its digest in kjitd's configuration.
token=$(openssl rand -hex 24)
printf '%s\n' "$token" >token
chmod 600 token
digest=$(printf '%s' "$token" | openssl dgst -sha256 -r | cut -d' ' -f1)

listen_port=$(free_port)
metrics_port=$(free_port)
prometheus_port=$(free_port)
cat >kjitd.toml <<TOML
listen = "127.0.0.1:$listen_port"
metrics_port = $metrics_port
metrics_tls = true
metrics_token_sha256 = "$digest"
compile_workers = 0
log_level = "warn"
[tls]
cert = "$work/server.crt"
key = "$work/server.key"
[cache]
enabled = false
TOML
"$kjitd" --config kjitd.toml --socket "$work/kjitd.sock" >kjitd.log 2>&1 &
pids+=($!)

cat >prometheus.yml <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: kjitd
    scheme: https
    authorization:
      credentials_file: $work/token
    tls_config:
      ca_file: $work/ca.crt
    static_configs:
      - targets: ["127.0.0.1:$metrics_port"]
  - job_name: kjitd-wrong-token
    scheme: https
    authorization:
      credentials: not-the-token
    tls_config:
      ca_file: $work/ca.crt
    static_configs:
      - targets: ["127.0.0.1:$metrics_port"]
YAML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address="127.0.0.1:$prometheus_port" >prometheus.log 2>&1 &
pids+=($!)

# up by job, as Prometheus' HTTP API reports it; nothing until it answers.
up_by_job() {
  python3 - "$prometheus_port" <<'PY' 2>/dev/null || true
import json, sys, urllib.request
port = sys.argv[1]
with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query?query=up", timeout=2) as answer:
    result = json.load(answer)["data"]["result"]
for sample in result:
    print(sample["metric"]["job"], sample["value"][1])
PY
}

end=$((SECONDS + deadline_s))
while :; do
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null || fail "a process exited early (pid $pid)"; done
  up=$(up_by_job)
  if grep -qx "kjitd 1" <<<"$up" && grep -qx "kjitd-wrong-token 0" <<<"$up"; then break; fi
  ((SECONDS < end)) || fail "within ${deadline_s} s Prometheus reported: ${up:-nothing}"
  sleep 0.5
done

# What was scraped is kjitd's own: a kjit_ series in Prometheus.
scraped=$(python3 - "$prometheus_port" <<'PY'
import json, sys, urllib.parse, urllib.request
port = sys.argv[1]
query = 'count({job="kjitd",__name__=~"kjit_.+"})'
with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query?query=" + urllib.parse.quote(query), timeout=2) as a:
    result = json.load(a)["data"]["result"]
print(result[0]["value"][1] if result else 0)
PY
)
((scraped > 0)) || fail "Prometheus holds no kjit_ series from kjitd"
echo "prometheus-scrape: OK: Prometheus $(prometheus --version 2>&1 | head -n 1 | cut -d' ' -f3) scraped kjitd over TLS" \
  "with the token (up 1, $scraped kjit_ series); a wrong token: up 0"
