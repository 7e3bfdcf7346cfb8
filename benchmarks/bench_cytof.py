"""asv: loading CyTOF (all 16 BCR-XL FCS files) and one step of the khan2017-gamma algorithms on it.

The loader reads and checksums 16 files (23.7 MB), keeps 24 markers, applies
arcsinh(x / 5), splits and standardises: seconds and peak memory for both
datasets.  The steps are those of the study's paper scale (all cells, Khan &
Lin's train fraction, K = 40): a gamma factor step costs O(S D³ + S D² K)
whatever N is (the data enter through YᵀY), so these times are the per-iteration
cost at every scale.  Skipped where the files are absent.
"""
import numpy as np

from svibench.data import DataError
from svibench.datasets import cytof
from svibench.models.gamma_factor import GammaFactor
from svibench.registry import get_registry
from . import timer  # noqa: F401  (asv times on this: the process CPU clock, benchmarks/__init__.py)

LOADERS = {"cytof": cytof.cytof, "cytof-entries": cytof.cytof_entries}


def _available():
    try:
        cytof.read_markers(["patient1_BCR-XL"])
    except DataError as exc:
        raise NotImplementedError(f"CyTOF files absent: {exc}") from None  # asv skips the benchmark


class CytofLoad:
    """Read, check and split all 172,791 cells × 24 markers."""

    params = [list(LOADERS)]
    param_names = ["dataset"]
    timeout = 120

    def setup(self, name):
        _available()

    def time_load(self, name):
        LOADERS[name]()

    def peakmem_load(self, name):
        LOADERS[name]()


class CytofGammaStep:
    """One step of CVI-MF (β = 5e-5, S = 50) and of Knowles' gamma SGVB (w0 = 10) on all cells' training rows, K = 40."""

    params = [["cvi-mf", "gamma-sgvb"]]
    param_names = ["algorithm"]
    #: The study's paper-scale settings.
    SETTINGS = {"cvi-mf": {"rho": 5e-5, "n_samples": 50}, "gamma-sgvb": {"step_size": 10.0}}

    def setup(self, algorithm):
        _available()
        model = GammaFactor(cytof.cytof(), n_factors=40, noise_variance=0.1)
        self.alg = get_registry().algorithm(algorithm).build(self.SETTINGS[algorithm])
        self.alg.init(model, np.random.default_rng(0))
        self.alg.step()

    def time_step(self, algorithm):
        self.alg.step()
