"""Fleet outputs of the recorder: live metrics for Prometheus (`record --listen`), profile
push (`record --pyroscope-url`) and systemd readiness. Nothing here is imported unless the
matching option is given, so a plain `record` never loads the exporter or its HTTP server."""
