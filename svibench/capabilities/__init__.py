"""Capabilities: what a model offers and an algorithm requires (README.md, "Concepts").

Each capability is a small :class:`typing.Protocol`.  An algorithm lists the
ones it requires in ``requires``; :func:`missing` tells which members a model
class lacks, so the registry can skip an incompatible pair with a reason.
"""
from __future__ import annotations

from typing import Protocol

from .compiled_log_joint import CompiledLogJointGradient
from .conjugate import ConditionallyConjugate, ConjugatePosterior, Globals, LocalApprox, natural_step
from .jax_log_joint import JaxLogJoint
from .latent_gaussian import LatentGaussian
from .log_joint import LogJoint, LogJointGradient, ReparameterisableFamily, VariationalFamily
from .mean_field import MeanFieldNonConjugate
from .sampler import ConditionalSampler
from .sparse import LazyGlobal, SparseGlobalStep, SparseStatistics

__all__ = [
    "ConditionallyConjugate", "ConjugatePosterior", "Globals", "LocalApprox", "natural_step", "missing", "protocol_members",
    "LatentGaussian", "JaxLogJoint", "CompiledLogJointGradient", "LogJoint", "LogJointGradient", "VariationalFamily", "ReparameterisableFamily",
    "MeanFieldNonConjugate", "ConditionalSampler", "SparseGlobalStep", "LazyGlobal", "SparseStatistics",
]


def protocol_members(protocol: type) -> list[str]:
    """Names a class must have to satisfy ``protocol``."""
    names: set[str] = set()
    for klass in protocol.__mro__:
        if klass in (Protocol, object) or not getattr(klass, "_is_protocol", False):
            continue
        names.update(getattr(klass, "__annotations__", {}))
        names.update(k for k, v in vars(klass).items() if callable(v) and not k.startswith("_"))
    return sorted(names)


def missing(protocol: type, model_cls: type) -> list[str]:
    """Members of ``protocol`` that ``model_cls`` does not define."""
    return [name for name in protocol_members(protocol) if not hasattr(model_cls, name)]
