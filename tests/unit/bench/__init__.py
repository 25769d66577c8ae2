"""Unit tests of the rules bench/'s scripts judge by."""
