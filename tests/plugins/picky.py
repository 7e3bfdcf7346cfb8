"""A test-only algorithm whose hyperparameter check rejects its own default and whose
``init`` fails if it runs before that check (the runner and the suite must call it first)."""
from svibench.algorithm import Algorithm


class Picky(Algorithm):
    name = "test-picky"

    def __init__(self, *, rate: float = -1.0):
        self.rate = rate

    def check_params(self):
        if not self.rate > 0:
            raise ValueError(f"rate must be > 0, got {self.rate}")

    def init(self, model, rng):
        raise RuntimeError("init ran before check_params")

    def step(self):
        return 1

    def posterior(self):
        return None
