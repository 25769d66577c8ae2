"""Live tests: root, the real kernel, real cgroups, perf and /dev/kmsg
(CORESCOPE_REQUIRE_LIVE=1 makes a skip a failure)."""
