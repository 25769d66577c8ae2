"""Unit tests of the command line's commands and tables (src/corescope/views)."""
