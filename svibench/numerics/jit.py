"""numba for svibench's compiled modules, with the callee-aware cache locators installed first.

Every module of svibench that compiles with numba takes ``numba`` from here (``from svibench.numerics.jit import
numba``), so :func:`svibench.numerics.jit_cache.install` has run before its first ``@numba.njit(cache=True)``
creates a cache; ``import svibench`` alone imports no numba, and the command line starts without it.
A function that takes compiled functions as arguments is compiled with :func:`njit_taking_functions` instead.
"""
import numba

from . import jit_cache

jit_cache.install()

__all__ = ["numba", "njit_taking_functions"]


def njit_taking_functions(**options):
    """``numba.njit(**options)`` for a function that takes compiled functions as arguments: never cached on disk.

    numba keys such a function's cache by the dispatchers it was given, and a dispatcher unpickled in another
    process is a new object that nothing keeps alive (numba issue 2956): the cache never hits, gains a file in every
    process, and once its index names more dispatchers than numba keeps alive (``FUNCTION_CACHE_SIZE``), saving it
    raises "ReferenceError: underlying object has vanished" and the run that compiled it fails."""
    return numba.njit(cache=False, **options)
