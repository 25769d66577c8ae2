"""Unit tests of the lab's scenarios and cgroups (src/corescope/lab)."""
