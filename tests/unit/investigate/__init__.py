"""Unit tests of the investigation: windows, hypotheses, the diagnosis
(src/corescope/investigate)."""
