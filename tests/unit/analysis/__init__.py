"""Unit tests of the arithmetic over records: usage, episodes, classification, flame graphs
(src/corescope/analysis)."""
