"""Unit tests of bundles and their profiles (src/corescope/capture)."""
