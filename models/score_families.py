"""Variational families for score-function BBVI on models with discrete or bounded latents.

* :class:`MeanFieldBernoulli` — q(z) = Π Bern(z_j | σ(φ_j)) for binary latents;
* :class:`MeanFieldBeta` — q(π) = Π Beta(π_j | softplus(φ_a,j), softplus(φ_b,j));
* :class:`ProductFamily` — independent named parts laid end to end, so a model whose
  latents are of several kinds (e.g. BPFA: Beta, Gaussian, Gamma, Bernoulli) gets one
  flat family for :class:`svibench.capabilities.VariationalFamily`.

Each scalar is its own Rao–Blackwellisation block (Ranganath et al. 2014, §3.1).
Neither of the first two is reparameterisable; they offer what the score estimator
needs: draws, log q per block and ∇_φ log q.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import betaln, digamma, expit, log_expit, logit

from svibench.numerics.transforms import softplus, softplus_inv

__all__ = ["MeanFieldBernoulli", "MeanFieldBeta", "ProductFamily"]

#: Beta draws are kept in [TINY, 1 − 2⁻⁵³]: at shapes far below 1 (BPFA's a/K) a draw can
#: underflow to 0, where log π and the score would be infinite.
TINY = 1e-300


class MeanFieldBernoulli:
    """q(z) = Π_j Bern(z_j | θ_j), θ = σ(φ) (φ are the logits)."""

    def __init__(self, dim: int) -> None:
        self.dim = self.n_params = self.n_blocks = dim
        self.param_block = np.arange(dim)

    @staticmethod
    def params(theta: np.ndarray) -> np.ndarray:
        """φ for the probabilities ``theta``."""
        return logit(np.ravel(theta))

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        return np.zeros(self.dim)

    def sample(self, phi: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        return (rng.random((size, self.dim)) < expit(phi)).astype(float)

    def log_q_blocks(self, phi: np.ndarray, z: np.ndarray) -> np.ndarray:
        return np.where(z > 0, log_expit(phi), log_expit(-phi))

    def score(self, phi: np.ndarray, z: np.ndarray) -> np.ndarray:
        return z - expit(phi)

    def posterior(self, phi: np.ndarray) -> np.ndarray:
        return expit(phi)


class MeanFieldBeta:
    """q(π) = Π_j Beta(π_j | a_j, b_j), a = softplus(φ_a), b = softplus(φ_b), φ = concat(φ_a, φ_b)."""

    def __init__(self, dim: int) -> None:
        self.dim, self.n_params, self.n_blocks = dim, 2 * dim, dim
        self.param_block = np.concatenate([np.arange(dim), np.arange(dim)])

    def ab(self, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return softplus(phi[: self.dim]), softplus(phi[self.dim:])

    @staticmethod
    def params(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """φ for the shapes ``a``, ``b``."""
        return np.concatenate([softplus_inv(np.ravel(a)), softplus_inv(np.ravel(b))])

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        return self.params(np.ones(self.dim), np.ones(self.dim))

    def sample(self, phi: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        a, b = self.ab(phi)
        return np.clip(rng.beta(a, b, (size, self.dim)), TINY, 1.0 - 2.0**-53)

    def log_q_blocks(self, phi: np.ndarray, z: np.ndarray) -> np.ndarray:
        a, b = self.ab(phi)
        return (a - 1.0) * np.log(z) + (b - 1.0) * np.log1p(-z) - betaln(a, b)

    def score(self, phi: np.ndarray, z: np.ndarray) -> np.ndarray:
        a, b = self.ab(phi)
        both = digamma(a + b)
        d_a = (np.log(z) - digamma(a) + both) * expit(phi[: self.dim])
        d_b = (np.log1p(-z) - digamma(b) + both) * expit(phi[self.dim:])
        return np.concatenate([d_a, d_b], axis=-1)

    def posterior(self, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.ab(phi)


class ProductFamily:
    """q(z) = Π_parts q_part(z_part): named independent families, their draws, parameters and
    blocks laid end to end in the order given.  ``posterior`` returns each part's posterior by name."""

    def __init__(self, parts: dict[str, Any]) -> None:
        self.parts = dict(parts)
        self.dim = sum(p.dim for p in self.parts.values())
        self.n_params = sum(p.n_params for p in self.parts.values())
        self.n_blocks = sum(p.n_blocks for p in self.parts.values())
        offsets = np.cumsum([0] + [p.n_blocks for p in self.parts.values()])
        self.param_block = np.concatenate([p.param_block + o for p, o in zip(self.parts.values(), offsets)])
        self._z_cuts = np.cumsum([p.dim for p in self.parts.values()])[:-1]
        self._phi_cuts = np.cumsum([p.n_params for p in self.parts.values()])[:-1]

    def split_params(self, phi: np.ndarray) -> dict[str, np.ndarray]:
        return dict(zip(self.parts, np.split(phi, self._phi_cuts)))

    def split(self, z: np.ndarray) -> dict[str, np.ndarray]:
        """A (S, dim) draw cut into its parts, each (S, part.dim)."""
        return dict(zip(self.parts, np.split(z, self._z_cuts, axis=-1)))

    def _zip(self, phi: np.ndarray, z: np.ndarray | None = None):
        """(part, its φ, its columns of ``z``) for every part, in order."""
        cols = self.split(z).values() if z is not None else [None] * len(self.parts)
        return zip(self.parts.values(), self.split_params(phi).values(), cols)

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        return np.concatenate([part.init_params(rng) for part in self.parts.values()])

    def sample(self, phi: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.concatenate([part.sample(p, rng, size) for part, p, _ in self._zip(phi)], axis=1)

    def log_q_blocks(self, phi: np.ndarray, z: np.ndarray) -> np.ndarray:
        return np.concatenate([part.log_q_blocks(p, zp) for part, p, zp in self._zip(phi, z)], axis=1)

    def score(self, phi: np.ndarray, z: np.ndarray) -> np.ndarray:
        return np.concatenate([part.score(p, zp) for part, p, zp in self._zip(phi, z)], axis=1)

    def posterior(self, phi: np.ndarray) -> dict[str, Any]:
        return {name: part.posterior(p) for name, (part, p, _) in zip(self.parts, self._zip(phi))}
