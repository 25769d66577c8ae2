"""In-process tests, one subpackage per package of src/corescope (toplevel: the modules directly
in src/corescope; bench: the rules of bench/'s scripts); toplevel/test_layout.py keeps it so."""
