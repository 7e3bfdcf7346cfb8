"""asv: reparameterised Gamma draws and one Poisson–gamma MF step at the khan2017-pmf study's size.

``gamma_draws`` (the inverse-CDF draws z = P⁻¹(α, u)/β with their implicit
shape derivative) is what a CVI-MF or ADAM step on Poisson–gamma MF spends
most of its time on: S = 10 draws of every node of W (784 pixels) and Z (500
images) at K = 100 are 1.28 M inverse CDFs per step.  Shapes are those of the
model's initial q (1 + U(0, 0.5)) mixed with the small posterior shapes
(≈ prior 0.1) that switched-off factors reach during a run.
"""
import numpy as np

from svibench.capabilities.mean_field import gamma_draws
from svibench.datasets.pmf import pmf_synthetic
from svibench.models.pmf import PoissonGammaMF
from svibench.registry import get_registry
from . import timer  # noqa: F401  (asv times on this: the process CPU clock, benchmarks/__init__.py)

#: Nodes of the study's MNIST-500 problem (784 pixels + 500 images), K and S.
NODES, K, S = 1284, 100, 10


class GammaDraws:
    """Seconds for S = 10 draws (and derivatives) of 1,284 × 100 Gamma factors."""

    params = [["initial", "run"]]
    param_names = ["shapes"]

    def setup(self, shapes):
        rng = np.random.default_rng(0)
        alpha = 1.0 + 0.5 * rng.uniform(size=(NODES, K))
        if shapes == "run":
            alpha[:, K // 2:] = 0.1 + 0.05 * rng.uniform(size=(NODES, K - K // 2))
        self.alpha, self.rate = alpha, rng.uniform(1.0, 3.0, size=(NODES, K))
        self.u = rng.uniform(size=(S, NODES, K))
        gamma_draws(self.alpha[:2], self.rate[:2], self.u[:, :2])  # compile outside the timing

    def time_gamma_draws(self, shapes):
        gamma_draws(self.alpha, self.rate, self.u)


class PMFStep:
    """One CVI-MF (β = 0.02) and one ADAM (0.2) step on Poisson–gamma MF, 100 × 300 counts, K = 100, S = 10."""

    params = [["cvi-mf", "bbvi-reparam"]]
    param_names = ["algorithm"]
    #: The study's settings of each algorithm.
    SETTINGS = {"cvi-mf": {"rho": 0.02, "n_samples": 10}, "bbvi-reparam": {"learning_rate": 0.2, "n_samples": 10}}

    def setup(self, algorithm):
        model = PoissonGammaMF(pmf_synthetic(rows=100, cols=300, factors=5), n_factors=100)
        self.alg = get_registry().algorithm(algorithm).build(self.SETTINGS[algorithm])
        self.alg.init(model, np.random.default_rng(0))
        self.alg.step()

    def time_step(self, algorithm):
        self.alg.step()
