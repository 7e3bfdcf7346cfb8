"""A reference by a long run of an exact sampler: several chains from different seeds and starts.

Each chain has its own child of one :class:`numpy.random.SeedSequence` and starts by the model's
initialisations in turn (for the Pólya-Gamma models "prior" and "dispersed", so half the chains start from
over-dispersed draws of z from its prior, as R̂ assumes: Gelman & Rubin 1992; Vehtari et al. 2021, §3).
The first ``warmup`` sweeps of every chain are discarded, then every ``thin``-th of ``draws × thin`` is kept.
A label-switching model's ``align_draws`` gets the kept draws of all chains pooled, chain after chain
((chains × draws, D)): chains started apart settle on different labellings, and R̂ means something only once
they are relabelled to one pivot.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from .capability import SampledReference

__all__ = ["SamplerSettings", "Chains", "sample_chains"]


@dataclass(frozen=True)
class SamplerSettings:
    """How long to sample: ``chains`` chains of ``warmup`` discarded sweeps and ``draws`` kept (every ``thin``-th)."""

    chains: int = 4
    warmup: int = 1000
    draws: int = 5000
    thin: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        if self.chains < 2 or self.draws < 4 or self.warmup < 0 or self.thin < 1:
            raise ValueError(f"sampler settings need chains ≥ 2, draws ≥ 4, warmup ≥ 0 and thin ≥ 1; got {self}")

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class Chains:
    """Kept draws (chains, draws, D), each chain's start, and the CPU and wall seconds of sampling."""

    draws: np.ndarray
    inits: tuple[str, ...]
    cpu_seconds: float
    wall_seconds: float


def _one_chain(model: SampledReference, settings: SamplerSettings, seed: np.random.SeedSequence,
               method: str) -> np.ndarray:
    rng = np.random.default_rng(seed)
    state = model.chain_init(rng, method)
    for _ in range(settings.warmup):
        state = model.chain_sweep(state, rng)
    kept = []
    for sweep in range(settings.draws * settings.thin):
        state = model.chain_sweep(state, rng)
        if (sweep + 1) % settings.thin == 0:
            kept.append(model.chain_latent(state))
    return np.array(kept)


def sample_chains(model: SampledReference, settings: SamplerSettings) -> Chains:
    """Run the chains one after the other (same settings and seed: the same draws)."""
    seeds = np.random.SeedSequence(settings.seed).spawn(settings.chains)
    inits = tuple(model.init_methods[c % len(model.init_methods)] for c in range(settings.chains))
    cpu, wall = time.process_time(), time.perf_counter()
    draws = np.array([_one_chain(model, settings, seed, method) for seed, method in zip(seeds, inits)])
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    align = getattr(model, "align_draws", None)
    if align is not None:  # label-switching models: all chains to one pivot (svibench.reference.capability)
        draws = align(draws.reshape(-1, draws.shape[-1])).reshape(draws.shape)
    return Chains(draws, inits, cpu, wall)
