"""A compiled function is compiled again when the file of a compiled function it calls changes, and loaded from
numba's on-disk cache otherwise (``svibench.numerics.jit_cache``)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from numba.core.caching import NullCache

from svibench.algorithms import bbvi_fused
from svibench.models import gaussian_kernels
from svibench.models.bpfa import kernels
from svibench.numerics import jit_cache

CALLEE = "import numba\n\n\n@numba.njit(cache=True)\ndef f():\n    return {value}\n"
CALLER = "import numba\nfrom callee import f\n\n\n@numba.njit(cache=True)\ndef g():\n    return f()\n"
# A fresh process: g's value, and how many of its compilations came from the disk cache.
RUN = """import sys
sys.path.insert(0, {folder!r})
from svibench.numerics import jit_cache
jit_cache.install()
jit_cache.PACKAGES.add("caller")
import caller
print(caller.g(), sum(caller.g.stats.cache_hits.values()))
"""


def _run(folder: Path) -> tuple[int, int]:
    out = subprocess.run([sys.executable, "-c", RUN.format(folder=str(folder))], check=True, capture_output=True,
                         text=True).stdout.split()
    return int(out[0]), int(out[1])


def test_editing_a_compiled_callee_compiles_its_caller_again(tmp_path):
    (tmp_path / "callee.py").write_text(CALLEE.format(value=1))
    (tmp_path / "caller.py").write_text(CALLER)
    assert _run(tmp_path) == (1, 0)  # compiled, and written to caller's __pycache__
    assert _run(tmp_path) == (1, 1)  # loaded from it: the stamp is the same in another process
    (tmp_path / "callee.py").write_text(CALLEE.format(value=2))
    assert _run(tmp_path) == (2, 0)  # numba's own stamp (caller.py's hash) loads the stale g: (1, 1)


def test_the_bpfa_kernels_are_stamped_with_the_compiled_sigmas_file():
    files = [Path(f) for f in jit_cache.callee_files(kernels.factor_sweeps.py_func)]
    assert Path(kernels.__file__).resolve() in files and Path(jit_cache.__file__).with_name("expit.py") in files
    assert isinstance(kernels.factor_sweeps._cache._impl.locator, jit_cache.InTreeLocator)


def test_every_compiled_module_takes_numba_from_the_module_that_installs_the_locators():
    """``import numba`` in one of svibench's modules would compile with numba's own stamp whenever that module is the
    first to import numba (``import svibench`` does not install the locators)."""
    import svibench.algorithms
    import svibench.datasets
    import svibench.models
    import svibench.peers

    roots = [Path(jit_cache.__file__).parents[1]] + [Path(p) for pkg in (svibench.algorithms, svibench.datasets,
                                                                        svibench.models, svibench.peers) for p in pkg.__path__]
    files = {path: path.read_text() for root in roots for path in root.rglob("*.py")
             if path.name not in ("jit.py", "jit_cache.py")}
    direct = [str(path) for path, text in files.items() if re.search(r"^import numba\b", text, re.M)]
    assert not direct, f"import numba from svibench.numerics.jit in {direct}"
    users = [path for path, text in files.items() if "numba." in text and "test" not in path.name]
    takes = re.compile(r"^from svibench\.numerics\.jit import (.*, )?numba$", re.M)
    assert len(users) >= 8 and all(takes.search(files[path]) for path in users), users


def test_the_functions_that_take_compiled_functions_are_not_cached_on_disk():
    """Their cache would never hit in another process and would fail to save once it named enough dispatchers
    (``svibench.numerics.jit.njit_taking_functions``): the fused ADVI loop and the Gaussian families' kernels, which
    take the model's gradient kernel."""
    for f in (bbvi_fused.adam_steps, gaussian_kernels.full_rank_gradient, gaussian_kernels.mean_field_gradient):
        assert isinstance(f._cache, NullCache), f
    assert not isinstance(gaussian_kernels._softplus_sigmoid._cache, NullCache)  # the rest stay cached
