"""Unit tests of JSON, text, HTML and flame output (src/corescope/render)."""
