//! `gpusight export`: Prometheus metrics with dcgm-exporter's names, and the fleet view over a Prometheus server.
