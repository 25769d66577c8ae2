"""Unit tests of the exporter, live metrics and the Pyroscope push (src/corescope/metrics)."""
