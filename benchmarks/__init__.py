"""asv benchmarks of svibench (see the README, "Tracking speed and quality across commits").

BLAS/OpenMP are pinned to one thread before numpy is imported, so a time
measures the algorithm, not how many cores the BLAS grabbed.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_var] = "1"
