"""numba for svibench's compiled modules, with the callee-aware cache locators installed first.

Every module of svibench that compiles with numba takes ``numba`` from here (``from svibench.numerics.jit import
numba``), so :func:`svibench.numerics.jit_cache.install` has run before its first ``@numba.njit(cache=True)``
creates a cache; ``import svibench`` alone imports no numba, and the command line starts without it.
"""
import numba

from . import jit_cache

jit_cache.install()

__all__ = ["numba"]
