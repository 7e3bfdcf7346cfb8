"""Exponential families in natural and mean parametrisations.

Each family ``F`` has a natural-parameter type ``FNatural`` and a mean-parameter
type ``FMean`` (frozen dataclasses of arrays batched by shape), converted by
``to_mean()`` / ``to_natural()``.  Natural parameters support the linear
arithmetic of SVI updates, e.g. ``lam = (1 - rho) * lam + rho * (eta + scale * stats)``.
"""

from .base import LOG_2PI, MeanParametrization, NaturalParametrization, Parametrization
from .bernoulli import BernoulliMean, BernoulliNatural
from .beta import BetaMean, BetaNatural
from .categorical import CategoricalMean, CategoricalNatural
from .dirichlet import DirichletMean, DirichletNatural
from .gamma import GammaMean, GammaNatural
from .gaussian_diag import GaussianDiagMean, GaussianDiagNatural
from .gaussian_full import GaussianFullMean, GaussianFullNatural
from .normal_gamma import NormalGammaMean, NormalGammaNatural

__all__ = [
    "LOG_2PI",
    "Parametrization",
    "NaturalParametrization",
    "MeanParametrization",
    "BernoulliNatural",
    "BernoulliMean",
    "BetaNatural",
    "BetaMean",
    "CategoricalNatural",
    "CategoricalMean",
    "DirichletNatural",
    "DirichletMean",
    "GammaNatural",
    "GammaMean",
    "GaussianDiagNatural",
    "GaussianDiagMean",
    "GaussianFullNatural",
    "GaussianFullMean",
    "NormalGammaNatural",
    "NormalGammaMean",
]
