"""Unit tests of parsers of kernel interfaces, tools' output and saved artifacts
(src/corescope/sources)."""
