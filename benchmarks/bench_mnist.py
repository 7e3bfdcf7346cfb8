"""asv: loading the full MNIST (datasets/mnist.py) and one Poisson–gamma MF step on a slice of it.

``MNISTLoad``: CPU time and peak memory of reading both official splits (the four gzipped idx
files, SHA-256 checked) and of building the khan2017-pmf paper-scale problem's data (60,000
training and 10,000 test images as binarised 784 × n count matrices).

``MNISTStep``: one CVI-MF (β = 0.02) and one ADAM (0.5) step at K = 100, S = 10 on 6,000
training images, a tenth of the paper's 60,000 (a step is linear in the number of images: the
draws of Z and the (V, N) rate products; a full-size step, ~10× this, is too slow for CI's
quick run).  Reads ``../shared/data`` (SVIBENCH_DATA_DIR), as the tests do.
"""
import numpy as np

from svibench.datasets.mnist import mnist_digits
from svibench.datasets.pmf import mnist
from svibench.models.pmf import PoissonGammaMF
from svibench.registry import get_registry
from . import timer  # noqa: F401  (asv times on this: the process CPU clock, benchmarks/__init__.py)


class MNISTLoad:
    """Both splits as uint8 arrays, and the paper-scale PMF problem's count matrices."""

    timeout = 300

    def time_digits(self):
        mnist_digits("train")
        mnist_digits("test")

    def peakmem_digits(self):
        mnist_digits("train")
        mnist_digits("test")

    def time_pmf_problem(self):
        mnist(n_train=60_000, n_test=10_000)

    def peakmem_pmf_problem(self):
        mnist(n_train=60_000, n_test=10_000)


class MNISTStep:
    """One step of each algorithm of the khan2017-pmf study on 6,000 MNIST training images, K = 100."""

    params = [["cvi-mf", "bbvi-reparam"]]
    param_names = ["algorithm"]
    timeout = 600
    number, repeat = 1, 3
    #: The study's settings (ADAM at the paper's initial step size).
    SETTINGS = {"cvi-mf": {"rho": 0.02, "n_samples": 10, "shrink_scope": "node"},
                "bbvi-reparam": {"learning_rate": 0.5, "n_samples": 10}}

    def setup(self, algorithm):
        model = PoissonGammaMF(mnist(n_train=6_000, n_test=1), n_factors=100)
        self.alg = get_registry().algorithm(algorithm).build(self.SETTINGS[algorithm])
        self.alg.init(model, np.random.default_rng(0))
        self.alg.step()

    def time_step(self, algorithm):
        self.alg.step()
