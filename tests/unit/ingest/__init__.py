"""Unit tests of importing saved artifacts into a store (src/corescope/ingest)."""
