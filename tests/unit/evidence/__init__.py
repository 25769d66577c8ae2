"""Unit tests of the Evidence a command reads: store, live node, saved files, the ring
(src/corescope/evidence)."""
