"""Unit tests of scripts/ (the set-up and docs tools `make` runs)."""
