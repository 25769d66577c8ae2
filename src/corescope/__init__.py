"""corescope: a per-core flight recorder and investigator for one Linux node."""

import os as _os

# numpy (used only to parse /proc/stat in one pass) would otherwise start a BLAS thread per
# core at import: an agent on a 96-core node must not add 96 threads it never uses.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_var, "1")

__version__ = "0.1.0"
