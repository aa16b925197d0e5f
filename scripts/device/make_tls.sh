#!/usr/bin/env bash
# Makes what scripts/device/cluster_cases.sh's exporter check needs, on the dev machine (Python's bcrypt module and
# openssl): DIR/cert.pem and key.pem (self-signed for localhost and 127.0.0.1), DIR/web.yml (the exporter web
# configuration: TLS plus one basic-auth user, prom / h200-secret, as a bcrypt hash) and DIR/prometheus.yml (a
# scrape job over TLS with that user). The paths inside point at /tmp/gs_cluster/prom, where the case copies DIR.
#   bash scripts/device/make_tls.sh .device/prom
set -eu
d=${1:?usage: make_tls.sh DIR}
mkdir -p "$d"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$d/key.pem" -out "$d/cert.pem" -days 30 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2> /dev/null
hash=$(python3 -c 'import bcrypt; print(bcrypt.hashpw(b"h200-secret", bcrypt.gensalt(rounds=10)).decode())')
cat > "$d/web.yml" <<YML
tls_server_config:
  cert_file: /tmp/gs_cluster/prom/cert.pem
  key_file: /tmp/gs_cluster/prom/key.pem
basic_auth_users:
  prom: $hash
YML
cat > "$d/prometheus.yml" <<YML
global:
  scrape_interval: 5s
scrape_configs:
  - job_name: gpusight
    scheme: https
    tls_config:
      ca_file: /tmp/gs_cluster/prom/cert.pem
      server_name: localhost
    basic_auth:
      username: prom
      password: h200-secret
    static_configs:
      - targets: ["127.0.0.1:9400"]
YML
echo "wrote $d/cert.pem key.pem web.yml prometheus.yml"
