"""NumPyro's ADVI: ``SVI`` with ``Trace_ELBO`` and a Gaussian autoguide, as NumPyro users run it.

ADVI (Kucukelbir et al. 2017) fits a Gaussian q(z) over the real latent vector by stochastic
gradient ascent on the reparameterised ELBO; NumPyro (Phan, Pradhan & Jankowiak 2019) ships it
as its autoguides, ``AutoNormal`` (mean field, scale = softplus of a free parameter),
``AutoMultivariateNormal`` (full rank, scale-tril) and ``AutoLowRankMultivariateNormal``
(W Wᵀ + diag d², rank r), stepped by ``SVI.update`` with an optimiser.

The NumPyro model
-----------------
A flat site ``z ~ ImproperUniform(real, (D,))`` (log density 0) and one
``numpyro.factor("log_joint", log p(y, z))`` with the model's JAX log joint (capability
:mod:`svibench.capabilities.jax_log_joint`).  ``Trace_ELBO`` then estimates
E_q[log p(y, z)] − E_q[log q(z)], exactly the model's ELBO, with the *same* density svibench's
own ADVI (``bbvi-reparam``) differentiates, whatever the model's prior (a GP's kernel prior
included); writing the prior as the sample site instead would change nothing in the estimate
(Trace_ELBO estimates log p(z) by the same draws) but would need each prior again as a NumPyro
distribution.  The guide starts at loc = 0 (the prior mean of every model offering the
capability, and where svibench's Gaussian families start) and scale ``init_scale``.

Steps and compilation
---------------------
One :meth:`step` is one ``SVI.update`` on all the data.  The model is fused (``fused = True``):
:meth:`advance` runs n updates in one compiled ``lax.fori_loop`` with a dynamic trip count (what
``SVI.run`` does), and :meth:`step` is that loop with n = 1, so the runner's warm-up compiles the
one program every later call runs.  Programs are cached per settings (model function, dimension,
guide, optimiser), with the data passed as arguments: a second ``init`` on a problem of the same
shapes recompiles nothing.  JAX runs in float64 (``jax.enable_x64`` as a context around each call,
so other JAX users in the process keep their own setting).  The PRNG key comes from the numpy
Generator passed to :meth:`init`.

Conformance: every check of ``svibench check numpyro-advi`` applies and passes; none is skipped.
Pickling stores the JAX state as numpy arrays (unpickled, a JAX array would follow the process's
float32 default).

References
----------
A. Kucukelbir, D. Tran, R. Ranganath, A. Gelman and D. M. Blei, "Automatic Differentiation
Variational Inference", JMLR 18(14), 2017.
D. Phan, N. Pradhan and M. Jankowiak, "Composable Effects for Flexible and Accelerated
Probabilistic Programming in NumPyro", arXiv:1912.11554, 2019.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

import numpy as np

from svibench.algorithm import Diverged
from svibench.capabilities.jax_log_joint import JaxLogJoint
from svibench.capabilities.latent_gaussian import GaussianPosterior

from . import Peer

__all__ = ["NumPyroADVI", "GUIDES"]

#: ``guide`` → the NumPyro autoguide it names.
GUIDES = {"normal": "AutoNormal", "mvn": "AutoMultivariateNormal", "lowrank": "AutoLowRankMultivariateNormal"}


@dataclass(frozen=True)
class _Settings:
    """What a compiled program depends on besides the data's shapes (the key of :func:`_program`)."""

    log_joint: Callable[..., Any]
    dim: int
    guide: str
    rank: int | None
    init_scale: float
    learning_rate: float
    n_samples: int


@dataclass(frozen=True)
class _Program:
    """NumPyro's SVI for one setting, with its jitted ``init``, fused loop and read-out of q(z)."""

    svi: Any
    init: Callable[..., Any]
    advance: Callable[..., Any]
    moments: Callable[..., Any]


def _x64() -> Any:
    """A context in which JAX computes in float64, leaving the process's setting alone outside it
    (``jax.enable_x64``; ``jax.experimental.enable_x64`` before jax 0.6)."""
    import jax

    return jax.enable_x64(True) if hasattr(jax, "enable_x64") else jax.experimental.enable_x64()


def _flat_model(log_joint: Callable[..., Any], dim: int, *data: Any) -> None:
    """z ~ flat on ℝᴰ, plus the factor log p(y, z): the model's own log joint."""
    import numpyro
    import numpyro.distributions as dist

    z = numpyro.sample("z", dist.ImproperUniform(dist.constraints.real, (), (dim,)))
    numpyro.factor("log_joint", log_joint(z, *data))


def _fused(svi: Any, state: Any, n: Any, *data: Any) -> tuple[Any, Any]:
    """n ``SVI.update`` steps in one ``lax.fori_loop`` (dynamic n), and whether the state is finite."""
    import jax
    import jax.numpy as jnp

    state = jax.lax.fori_loop(0, n, lambda _, s: svi.update(s, *data)[0], state)
    finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(p)) for p in jax.tree.leaves(state.optim_state)]))
    return state, finite


def _moments(svi: Any, guide: str, state: Any) -> tuple[Any, ...]:
    """q(z) from the SVI state: (loc, scale) of the mean-field guide, (loc, scale-tril) of the others (the guide's
    ``get_posterior``), in one compiled call: eager JAX dispatches each operation of the parameters' transforms
    on its own, which at D = 2,000 cost more than the checkpoint's metrics.  The full-rank guide's are its loc and
    its scale-tril still unconstrained (a vector), which :func:`_scaled_unit_lower_cholesky` constrains."""
    if guide == "mvn" and _constrained_in_numpy(svi.guide):
        params = svi.optim.get_params(state.optim_state)
        return params[f"{svi.guide.prefix}_loc"], params[f"{svi.guide.prefix}_scale_tril"]
    params = svi.get_params(state)
    if guide == "normal":
        return params["z_auto_loc"], params["z_auto_scale"]
    d = svi.guide.get_posterior(params)
    return d.loc, d.scale_tril


def _constrained_in_numpy(guide: Any) -> bool:
    """Whether the guide's scale-tril is NumPyro's ``scaled_unit_lower_cholesky``, the constraint
    :func:`_scaled_unit_lower_cholesky` applies."""
    from numpyro.distributions import constraints

    return getattr(guide, "scale_tril_constraint", None) is constraints.scaled_unit_lower_cholesky


def _scaled_unit_lower_cholesky(x: np.ndarray) -> np.ndarray:
    """NumPyro's ``ScaledUnitLowerCholeskyTransform`` of an unconstrained vector x of length D(D+1)/2, in numpy:
    L = diag(softplus(x's last D entries)) (U + I), U strictly lower triangular, filled row by row from x's first
    D(D−1)/2 entries.  The compiled transform (an XLA scatter) took 0.2 s at D = 2,000 (colon-cancer)."""
    n = int(round((np.sqrt(1 + 8 * x.size) - 1) / 2))
    L = np.zeros((n, n))
    for i in range(1, n):
        L[i, :i] = x[i * (i - 1) // 2:i * (i + 1) // 2]
    np.fill_diagonal(L, 1.0)
    L *= np.logaddexp(x[-n:], 0.0)[:, None]
    return L


def _guide(settings: _Settings, model: Callable[..., Any]) -> Any:
    """The autoguide ``settings.guide`` names, at loc = 0 and scale ``init_scale``."""
    import jax.numpy as jnp
    from numpyro.infer import autoguide
    from numpyro.infer.initialization import init_to_value

    options = {"init_loc_fn": init_to_value(values={"z": jnp.zeros(settings.dim)}), "init_scale": settings.init_scale}
    if settings.guide == "lowrank":
        options["rank"] = settings.rank
    return getattr(autoguide, GUIDES[settings.guide])(model, **options)


@functools.lru_cache(maxsize=16)
def _program(settings: _Settings) -> _Program:
    """NumPyro's SVI for ``settings``, with ``init`` and the fused loop jitted (compiled at their first call,
    once per data shapes).  Its first ``init`` must run eagerly (:func:`_set_up`)."""
    import jax
    import numpyro
    from numpyro.infer import SVI, Trace_ELBO

    model = functools.partial(_flat_model, settings.log_joint, settings.dim)
    svi = SVI(model, _guide(settings, model), numpyro.optim.Adam(settings.learning_rate),
              Trace_ELBO(num_particles=settings.n_samples))
    return _Program(svi, jax.jit(svi.init), jax.jit(functools.partial(_fused, svi)),
                    jax.jit(functools.partial(_moments, svi, settings.guide)))


def _set_up(program: _Program, data: tuple[Any, ...]) -> _Program:
    """Run the program's first ``SVI.init`` eagerly: it builds the guide's prototype (shapes, init values)
    and the parameters' transforms, which must hold concrete values, not the tracers of a jitted call."""
    import jax

    if program.svi.constrain_fn is None:
        program.svi.init(jax.random.PRNGKey(0), *data)
    return program


class NumPyroADVI(Peer):
    """ADVI in NumPyro (``SVI``, ``Trace_ELBO``, an autoguide, Adam) on a model's JAX log joint.

    Parameters
    ----------
    guide : {"normal", "mvn", "lowrank"}
        ``AutoNormal`` (mean field), ``AutoMultivariateNormal`` (full rank) or
        ``AutoLowRankMultivariateNormal``.
    rank : int, optional
        Rank of W for ``guide="lowrank"`` (None: NumPyro's default, round(√D)).
    learning_rate : float
        Adam's step size (ADVI's and ``bbvi-reparam``'s default 0.01).
    n_samples : int
        Draws per gradient (``Trace_ELBO(num_particles=...)``).
    init_scale : float
        Initial scale of q (NumPyro's default 0.1; loc starts at 0).
    """

    name = "numpyro-advi"
    label = "NumPyro ADVI"
    libraries: ClassVar[tuple[str, ...]] = ("numpyro", "jax")
    requires: ClassVar[tuple[type, ...]] = (JaxLogJoint,)
    fused: ClassVar[bool] = True

    def __init__(self, *, guide: str = "normal", rank: int | None = None, learning_rate: float = 0.01,
                 n_samples: int = 1, init_scale: float = 0.1) -> None:
        self.guide = guide
        self.rank = rank
        self.learning_rate = learning_rate
        self.n_samples = n_samples
        self.init_scale = init_scale

    def check_params(self) -> None:
        if self.guide not in GUIDES:
            raise ValueError(f"guide must be one of {', '.join(map(repr, GUIDES))}, got {self.guide!r}")
        if self.rank is not None and (self.guide != "lowrank" or not _positive_int(self.rank)):
            raise ValueError(f"rank must be a positive int with guide='lowrank' (or None), got rank={self.rank!r} "
                             f"with guide={self.guide!r}")
        if not _positive_int(self.n_samples):
            raise ValueError(f"n_samples must be a positive int, got {self.n_samples!r}")
        for name in ("learning_rate", "init_scale"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")

    def init(self, model: JaxLogJoint, rng: np.random.Generator) -> None:
        import jax

        self.check_model(model)
        if self.rank is not None and self.rank > model.latent_dim:
            raise ValueError(f"rank {self.rank} exceeds {model.name}'s latent dimension {model.latent_dim}")
        self.model_, self.n_train_ = model, model.n_train
        density = model.jax_log_joint()
        self.settings_ = _Settings(density.fn, model.latent_dim, self.guide, self.rank, float(self.init_scale),
                                   float(self.learning_rate), int(self.n_samples))
        with _x64():
            self.data_ = tuple(jax.numpy.asarray(a) for a in density.data)
            key = jax.random.PRNGKey(int(rng.integers(2**32)))
            self.state_ = self._program().init(key, *self.data_)

    def __getstate__(self) -> dict[str, Any]:
        """JAX arrays as numpy (an unpickled jax array would follow the process's float32 default)."""
        state = dict(self.__dict__)
        if "state_" in state:
            import jax

            state["state_"], state["data_"] = jax.tree.map(np.asarray, (self.state_, self.data_))
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if "state_" in state:
            import jax

            with _x64():
                self.state_, self.data_ = jax.tree.map(jax.numpy.asarray, (self.state_, self.data_))

    def _program(self) -> _Program:
        return _set_up(_program(self.settings_), self.data_)

    def step(self) -> int:
        return self.advance(1)

    def advance(self, n: int) -> int:
        with _x64():
            self.state_, finite = self._program().advance(self.state_, n, *self.data_)
            if not bool(finite):
                raise Diverged("non-finite variational parameters in NumPyro's SVI state")
        return n * self.n_train_

    def posterior(self) -> Any:
        """The guide's q(z) as the model's posterior: loc with diag(scale²) (normal), or the guide's
        ``get_posterior`` (mvn: its scale-tril L; lowrank: the Cholesky factor L of W Wᵀ + diag d²), with
        covariance L Lᵀ."""
        with _x64():
            moments = [np.asarray(m) for m in self._program().moments(self.state_)]
        if self.guide == "normal":
            mean, scale = moments
            q = GaussianPosterior(mean, np.diag(scale**2), np.diag(scale))
        else:
            mean, scale_tril = moments
            if scale_tril.ndim == 1:
                scale_tril = _scaled_unit_lower_cholesky(scale_tril)
            q = GaussianPosterior(mean, scale_tril=scale_tril)
        return self.model_.posterior_from_gaussian(q)


def _positive_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 1
