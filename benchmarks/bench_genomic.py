"""asv: one SVI step of each shah2015-genomic method on all CyTOF cells at the paper's K = 500.

The study's paper scale (Shah et al. 2015, §5.4): cytof-entries with all 172,791 cells × 24
markers and 5% of the entries held out, K = 500, batch 250, the study's settings per method.
A step's cost is O(B K D × local sweeps) whatever N is, so these are the per-iteration times
of the paper-scale runs; ``peakmem_step`` is the process's peak with the data and model loaded
(compare with ``BPFA.memory_bytes``).  As in ``bench_bpfa``, each benchmark times the state
after ``WARMUP`` steps, not the first ones.  Skipped where the CyTOF files are absent.
"""
import numpy as np

from svibench.data import DataError
from svibench.datasets import cytof
from svibench.models.bpfa import BPFA
from svibench.registry import get_registry
from . import timer  # noqa: F401  (asv times on this: the process CPU clock, benchmarks/__init__.py)

#: The study's per-method settings (reports/shah2015-genomic/study.toml).
COMMON = {"batch_size": 250, "t0": 0.0, "kappa": 0.75, "init_method": "random"}
SETTINGS = {
    "mf-svi": {**COMMON, "inner_iterations": 10, "local_init": "full"},
    "mf-ssvi": {**COMMON, "inner_iterations": 10, "local_init": "full"},
    "titsias-ssvi": {**COMMON, "inner_iterations": 10},
    "mimno-svi": {**COMMON, "burnin": 3, "samples": 3},
    "gibbs-ssvi": {**COMMON, "burnin": 3, "samples": 3},
}
WARMUP = 30
_MODEL = []


def _model() -> BPFA:
    """BPFA with K = 500 on all cells (loaded once per process)."""
    if not _MODEL:
        try:
            data = cytof.cytof_entries(heldout=0.05, seed=0)
        except DataError as exc:
            raise NotImplementedError(f"CyTOF files absent: {exc}") from None  # asv skips the benchmark
        _MODEL.append(BPFA(data, features=500, predictive_samples=5))
    return _MODEL[0]


class GenomicStep:
    """One step (minibatch of 250 cells, K = 500, D = 24) after ``WARMUP`` steps."""

    params = [list(SETTINGS)]
    param_names = ["algorithm"]
    timeout = 300

    def setup(self, algorithm):
        self.alg = get_registry().algorithm(algorithm).build(SETTINGS[algorithm])
        self.alg.init(_model(), np.random.default_rng(0))
        for _ in range(WARMUP):
            self.alg.step()

    def time_step(self, algorithm):
        self.alg.step()

    def peakmem_step(self, algorithm):
        self.alg.step()
