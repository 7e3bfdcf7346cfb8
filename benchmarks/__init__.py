"""asv benchmarks of svibench (see the README, "Tracking speed and quality across commits").

BLAS/OpenMP are pinned to one thread before numpy is imported, so a time
measures the algorithm, not how many cores the BLAS grabbed.  Every ``time_``
benchmark is timed on the CPU clock of its process (:data:`timer`), the clock
svibench's runner reads for algorithm time (:mod:`svibench.clock`): a busy
machine (CI, a sweep beside it) lengthens the wall clock, not the numbers.
The C allocator keeps freed memory as the runner's does (:mod:`svibench.allocator`), so
that a step's time is what it is in a run.
"""
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_var] = "1"

try:  # after the thread variables; a commit before svibench.allocator kept glibc's defaults in its runs too
    from svibench.allocator import keep_freed_memory
except ImportError:
    pass
else:
    keep_freed_memory()

#: asv's clock for the ``time_`` benchmarks of every module that imports it (asv reads a module's ``timer``).
timer = time.process_time
