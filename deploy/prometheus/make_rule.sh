#!/usr/bin/env bash
# Writes the PrometheusRule at the end of deploy/kubernetes/gpusight.yaml from deploy/prometheus/alerts.yml, so
# that the Prometheus Operator loads the same alerts as a plain Prometheus. alerts.yml is the one to edit; run
# this after, or `--check` to fail when the manifest is out of date (tests/export/deploy_kit.rs runs that).
#
#   deploy/prometheus/make_rule.sh           # rewrite the PrometheusRule document
#   deploy/prometheus/make_rule.sh --check   # exit 1 and show the difference when it is not what alerts.yml gives
set -euo pipefail
cd "$(dirname "$0")/../.."
manifest=deploy/kubernetes/gpusight.yaml
rules=deploy/prometheus/alerts.yml
marker='# PrometheusRule: generated from deploy/prometheus/alerts.yml by deploy/prometheus/make_rule.sh (edit alerts.yml).'
# The label kube-prometheus-stack's Prometheus selects rules (and ServiceMonitors) by: its Helm release's name.
release=$(awk '$1 == "release:" {print $2; exit}' "$manifest")
if [ -z "$release" ]; then
  echo "make_rule.sh: $manifest has no release: label (the ServiceMonitor's) to copy" >&2
  exit 1
fi

generated=$(mktemp)
trap 'rm -f "$generated"' EXIT
{
  # Everything before the generated document, which starts at the marker (or a new one at the end).
  awk -v m="$marker" '$0 == m {exit} {print}' "$manifest"
  if ! grep -qxF -- "$marker" "$manifest"; then echo "---"; fi
  echo "$marker"
  cat <<YAML
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: gpusight
  namespace: gpusight-system
  labels:
    app.kubernetes.io/name: gpusight
    release: $release
spec:
YAML
  # alerts.yml from its groups: key on, two spaces in (blank lines stay blank).
  awk '/^groups:/ {on = 1} on {if ($0 == "") print ""; else print "  " $0}' "$rules"
} > "$generated"

if [ "${1:-}" = "--check" ]; then
  if ! diff -u "$manifest" "$generated"; then
    echo "make_rule.sh: $manifest's PrometheusRule is not alerts.yml's groups: run deploy/prometheus/make_rule.sh" >&2
    exit 1
  fi
  exit 0
fi
cp "$generated" "$manifest"
