"""Unit tests of the on-disk store: series, journal, ring, zone maps (src/corescope/store)."""
