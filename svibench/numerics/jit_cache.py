"""numba's on-disk cache, made stale when a compiled function's callees change, not only its own file.

numba keys a cached compilation (``cache=True``) by the content of the file that defines the function: its
source stamp is that file's hash.  A compiled callee from another file is compiled into the caller, but its
file is not in the stamp.  So after an edit of ``svibench/numerics/expit.py``, an editable install kept running
BPFA's coordinate-ascent kernels (``models/bpfa/kernels.py``, which call ``expit_all``) compiled with the old σ,
until their ``__pycache__/*.nbi|nbc`` were removed by hand (issue 33).

The locators here stamp a function's cache with the hashes of its own file and of every file that defines a
compiled function it calls, directly or through others (:func:`callee_files`).  An edit of any of them compiles
it again; an unchanged tree still loads it from disk.  They take the functions of the packages in
:data:`PACKAGES` and leave every other function to numba's own locators.  :func:`install` puts them first in
numba's list; :mod:`svibench.numerics.jit`, whence svibench's compiled modules take numba, calls it.

Callees are found by name in the function's globals (a compiled function, an intrinsic, or an attribute of a
module it names) when numba creates the cache, which it does as the function is decorated: a callee from
another module is imported by then.
"""
from __future__ import annotations

import inspect
import os
import types
from pathlib import Path

from numba.core import caching

from ..data import sha256_of

__all__ = ["PACKAGES", "callee_files", "install"]

#: Top-level packages whose compiled functions get the callee-aware stamp.
PACKAGES = {"svibench"}


def _code_objects(code: types.CodeType):
    """``code`` and the code objects nested in it (comprehensions, inner functions)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _compiled_callees(py_func: types.FunctionType) -> list[types.FunctionType]:
    """The Python functions behind the compiled functions and intrinsics that ``py_func`` names: its globals, and
    the attributes of the modules among them (those already set: no lazy import or deprecation is triggered)."""
    names = {name for code in _code_objects(py_func.__code__) for name in code.co_names}
    found = []
    for name in names:
        obj = py_func.__globals__.get(name)
        candidates = [vars(obj).get(attr) for attr in names] if isinstance(obj, types.ModuleType) else [obj]
        for candidate in candidates:
            source = getattr(candidate, "py_func", None) or getattr(candidate, "_defn", None)  # dispatcher, intrinsic
            if isinstance(source, types.FunctionType):
                found.append(source)
    return found


def callee_files(py_func: types.FunctionType) -> list[str]:
    """The source files of ``py_func`` and of every compiled function it calls, directly or not, sorted (those on
    disk: a function made from a string has no file to stamp)."""
    seen, files, todo = set(), set(), [py_func]
    while todo:
        func = todo.pop()
        if func in seen:
            continue
        seen.add(func)
        files.add(os.path.abspath(inspect.getfile(func)))
        todo += _compiled_callees(func)
    return sorted(path for path in files if os.path.isfile(path))


class _CalleeStamped:
    """Mixin for a numba locator: the stamp is the hashes of :func:`callee_files`, for the functions of
    :data:`PACKAGES` only (the locator declines the others, which go to numba's own)."""

    _files: list[str]

    @classmethod
    def from_function(cls, py_func, py_file):
        if (py_func.__module__ or "").partition(".")[0] not in PACKAGES:
            return None
        locator = super().from_function(py_func, py_file)
        if locator is not None:
            locator._files = callee_files(py_func)
        return locator

    def get_source_stamp(self):
        return tuple(sha256_of(Path(path)) for path in self._files)


class UserProvidedLocator(_CalleeStamped, caching.UserProvidedCacheLocator):
    """numba's ``NUMBA_CACHE_DIR`` locator, callee-stamped."""


class InTreeLocator(_CalleeStamped, caching.InTreeCacheLocator):
    """numba's ``__pycache__`` locator, callee-stamped."""


class UserWideLocator(_CalleeStamped, caching.UserWideCacheLocator):
    """numba's per-user cache directory locator (for a read-only tree), callee-stamped."""


def install() -> None:
    """Put the callee-stamped locators first in numba's list, in numba's own order (once)."""
    ours = [UserProvidedLocator, InTreeLocator, UserWideLocator]
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # _CacheImpl in older numba
    classes = impl._locator_classes
    if classes[:len(ours)] != ours:
        classes[:0] = ours
