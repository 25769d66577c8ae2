"""Unit tests of the modules directly in src/corescope (errors, recorder, rootfs, outfile,
timeparse) and the package layout."""
