"""svibench: comparative benchmarking of stochastic variational inference algorithms.

>>> import svibench
>>> ds = svibench.open_results("reports/quickstart/results")   # doctest: +SKIP
"""
from importlib.metadata import PackageNotFoundError, version

from .numerics import jit_cache
from .results import open_results

jit_cache.install()  # before any of svibench's modules compiles (svibench.numerics.jit_cache)

try:
    __version__ = version("svibench")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

__all__ = ["open_results", "__version__"]
