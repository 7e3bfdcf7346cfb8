"""svibench: comparative benchmarking of stochastic variational inference algorithms.

>>> import svibench
>>> ds = svibench.open_results("reports/quickstart/results")   # doctest: +SKIP
"""
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("svibench")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

__all__ = ["open_results", "__version__"]


def __getattr__(name: str):
    """``open_results`` on first use (PEP 562): importing svibench does not import xarray, so the command line
    starts at once."""
    if name == "open_results":
        from .results import open_results

        return open_results
    raise AttributeError(f"module 'svibench' has no attribute {name!r}")
