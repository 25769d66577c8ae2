"""Unit tests of the recorder's sensors (src/corescope/sensors)."""
