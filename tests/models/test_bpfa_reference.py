"""BPFA's reference posterior (issue 30, models.bpfa.reference): the compared signal (z∘w)Φ of fixed rows is
unchanged by relabelling features, its moments under a sampler's state are the enumerated local conditional's,
a factorised q's Rao–Blackwellised moments are those of eq. 12's draws, a point-mass q gives the chain's own
latent, and every BPFA algorithm is scored against a stored reference, which is refused once stale."""
from __future__ import annotations

import itertools
import json
from dataclasses import replace

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from svibench.capabilities import LocalApprox
from svibench.capabilities.conjugate import ConjugatePosterior
from svibench.datasets.bpfa_synthetic import bpfa_synthetic
from svibench.expfam import BetaNatural, GammaNatural, GaussianDiagNatural
from svibench.models.bpfa import BPFA
from svibench.models.bpfa.chain import ChainState
from svibench.models.bpfa.local import FactorQ
from svibench.models.bpfa.reference import signal_draws
from svibench.problem import build_model
from svibench.reference.artifact import Reference, StaleReference, check_fresh, reference_path
from svibench.reference.attach import Scorer
from svibench.reference.build import make_reference
from svibench.reference.capability import LabelSwitching, reference_kind
from svibench.reference.sampling import SamplerSettings
from svibench.runner import execute
from svibench.spec import Budget, Checkpoints, ProblemSpec, RunSpec

SMALL = ProblemSpec("bpfa/small", "bpfa", "bpfa-synthetic",
                    {"features": 6, "predictive_samples": 2, "init_rows": 50, "init_sweeps": 2},
                    {"n": 120, "dim": 8, "features": 6, "seed": 0})


@pytest.fixture(scope="module")
def model():
    return build_model(SMALL, cache=False)


@pytest.fixture(scope="module")
def state(model):
    rng = np.random.default_rng(0)
    s = model.chain_init(rng, "random")
    for _ in range(100):
        s = model.chain_sweep(s, rng)
    return s


def _relabelled(state: ChainState, perm: np.ndarray, sign: np.ndarray, scale: np.ndarray) -> ChainState:
    """The state with features permuted, (w_·k, φ_k) flipped by ``sign`` and w_·k scaled by ``scale``, φ_k by 1/scale."""
    c = (sign * scale)[perm]
    return ChainState(state.pi[perm], state.phi[perm] / c[:, None], state.gamma_w, state.gamma_obs, state.X[:, perm] * c)


def _lam_relabelled(lam: dict, perm: np.ndarray, sign: np.ndarray) -> dict:
    mean, var = lam["phi"].mean_var()
    a, b = lam["pi"].ab()
    return {**lam, "pi": BetaNatural.from_ab(a[perm], b[perm]),
            "phi": GaussianDiagNatural.from_mean_var((sign[:, None] * mean)[perm], var[perm])}


def test_bpfa_compares_a_sampled_latent_that_needs_no_alignment(model):
    assert reference_kind(model) == "sampled" and not isinstance(model, LabelSwitching)
    rows = model.signal_rows  # the default 16, evenly spaced over the 120 rows: fixed by N
    assert len(rows) == 16 and rows[0] == 0 and rows[-1] == 119 and set(np.diff(rows)) == {7, 8}
    assert model.chain_latent(model.chain_init(np.random.default_rng(0))).shape == (16 * 8,)


def test_the_signal_is_unchanged_by_permuting_flipping_and_rescaling_features(model, state):
    rng = np.random.default_rng(1)
    K = model.features
    perm, sign, scale = rng.permutation(K), rng.choice([-1.0, 1.0], K), rng.uniform(0.5, 2.0, K)
    moved = _relabelled(state, perm, sign, scale)
    assert not np.allclose(moved.phi, state.phi)
    assert np.allclose(model.chain_latent(moved), model.chain_latent(state), rtol=1e-12, atol=1e-12)
    # a q and its relabelled copy: the same moments up to the draws' Monte Carlo error (they draw in another order)
    lam = model.init_globals(rng, "gibbs")
    post = ConjugatePosterior(lam, LocalApprox("titsias"), "sampled")
    q = model.latent_moments(post)
    q_moved = model.latent_moments(replace(post, lam=_lam_relabelled(lam, perm, sign)))
    sd = np.sqrt(q.cov)
    assert np.sqrt(np.mean(((q_moved.mean - q.mean) / sd) ** 2)) < 0.12
    assert np.sqrt(np.mean(np.log(np.sqrt(q_moved.cov) / sd) ** 2)) < 0.12


def test_a_q_equal_to_the_reference_scores_zero_and_another_q_does_not(model, state):
    lam = model.init_globals(np.random.default_rng(2), "random")
    q = model.latent_moments(state)
    reference = Reference({"mean": q.mean, "sd": np.sqrt(q.cov)}, {})
    exact = Scorer(reference)(model, state)
    assert max(abs(v) for v in exact.values()) < 1e-12, exact
    again = model.latent_moments(state)  # the same seed: the same moments at every checkpoint
    assert np.array_equal(again.mean, q.mean) and np.array_equal(again.cov, q.cov)
    far = Scorer(reference)(model, ConjugatePosterior(lam, LocalApprox("mf"), "expected"))
    assert far["ref_mean_error"] > 1.0 and far["ref_w2"] > 1.0, far


def test_a_point_mass_q_at_a_chain_state_gives_the_chains_latent(model, state):
    """q(β) at the state's globals and a fitted local q (as BBVI hands one) at its locals, for every row: the
    moments are the chain's latent with no spread, so both paths select the same rows and multiply the same way."""
    on = state.X != 0.0
    lam = {"pi": BetaNatural.from_ab(state.pi * 1e12, (1.0 - state.pi) * 1e12),
           "phi": GaussianDiagNatural.from_mean_var(state.phi, np.full_like(state.phi, 1e-30)),
           "gamma_obs": GammaNatural.from_shape_rate(1e12, 1e12 / state.gamma_obs),
           "gamma_w": GammaNatural.from_shape_rate(1e12, 1e12 / state.gamma_w)}
    local_q = FactorQ("mf", on.astype(float), state.X, np.full(state.X.shape, 1e-30), state.gamma_w)
    q = model.latent_moments(ConjugatePosterior(lam, LocalApprox("mf"), "expected", local_q))
    assert np.allclose(q.mean, model.chain_latent(state), rtol=1e-9, atol=1e-9) and np.all(q.cov < 1e-12)
    assert np.abs(model.chain_latent(state)).max() > 0.1  # a latent with features on, not zeros


def _exact_local_signal(y, m, pi, phi, gamma_w, gamma_obs):
    """Mean and variance (D,) of s = (z∘w)Φ under p(z, w | y, β): every z enumerated, w | z Gaussian."""
    K, D = phi.shape
    obs = m > 0
    weights, means, seconds = [], [], []
    for z in itertools.product([0, 1], repeat=K):
        A = np.flatnonzero(z)
        prior = np.prod(np.where(np.array(z) > 0, pi, 1.0 - pi))
        Fo, F = phi[A][:, obs], phi[A]
        cov_y = Fo.T @ Fo / gamma_w + np.eye(obs.sum()) / gamma_obs
        weights.append(prior * multivariate_normal(np.zeros(obs.sum()), cov_y).pdf(y[obs]))
        P = gamma_w * np.eye(len(A)) + gamma_obs * Fo @ Fo.T
        mu = gamma_obs * np.linalg.solve(P, Fo @ y[obs]) if len(A) else np.zeros(0)
        means.append(mu @ F)
        seconds.append(np.einsum("kd,kl,ld->d", F, np.linalg.inv(P), F) + (mu @ F) ** 2 if len(A) else np.zeros(D))
    w = np.array(weights) / np.sum(weights)
    mean = w @ np.array(means)
    return mean, w @ np.array(seconds) - mean**2


def test_a_sampler_states_moments_are_the_exact_local_conditional_of_the_signal():
    data = bpfa_synthetic(n=40, dim=5, features=3, seed=3)
    model = BPFA(data, features=3, reference_rows=4)
    model.latent_draws = 40_000
    rng = np.random.default_rng(4)
    s = model.chain_init(rng, "random")
    state = ChainState(np.array([0.3, 0.5, 0.2]), rng.normal(0, 0.8, (3, 5)), 1.5, 4.0, s.X)
    q = model.latent_moments(state)
    exact = [_exact_local_signal(model.Y[i], model.M[i], state.pi, state.phi, state.gamma_w, state.gamma_obs)
             for i in model.signal_rows]
    mean, var = np.concatenate([e[0] for e in exact]), np.concatenate([e[1] for e in exact])
    # the draws are a chain (correlated): tolerance of ~5 MC errors at an effective sample size of a quarter
    assert np.all(np.abs(q.mean - mean) < 5 * np.sqrt(var / 10_000)), (q.mean, mean)
    assert np.allclose(q.cov, var, rtol=0.1)


@pytest.mark.parametrize("kind, view", [("mf", "expected"), ("mf", "sampled"), ("titsias", "sampled")])
def test_a_factorised_qs_moments_are_those_of_eq12s_draws(model, kind, view):
    """The Rao–Blackwellised moments against the plain moments of many draws of the signal as evaluation's eq. 12
    makes them (``predictive_chunks``: another code path)."""
    post = ConjugatePosterior(model.init_globals(np.random.default_rng(5), "gibbs"), LocalApprox(kind), view)
    model.latent_draws = 4000
    try:
        q = model.latent_moments(post)
    finally:
        del model.latent_draws
    draws = signal_draws(post, model.Y, model.M, model.signal_rows, 40_000, np.random.default_rng(6))
    mean, var = draws.mean(0), draws.var(0)
    assert np.all(np.abs(q.mean - mean) <= 5 * np.sqrt(var / len(draws)) + 1e-12)
    # per coordinate the draws' variance is noisy where θ is small (rare, wide slab draws): judge the total,
    # which leaving out q(φ)'s own variance (~20% of it here) would miss by far
    assert q.cov.sum() == pytest.approx(var.sum(), rel=0.02) and np.allclose(q.cov, var, rtol=0.3, atol=1e-4)


def test_a_row_switched_almost_off_keeps_its_small_variance(model, state):
    """Mean-field can drive θ to ~1e-6: a thousand draws would see no feature on and a variance of exactly 0
    (log sd ratio −690); the Rao–Blackwellised variance is θ-sized and positive."""
    lam = model.init_globals(np.random.default_rng(7), "random")
    theta = np.full(state.X.shape, 1e-6)
    local_q = FactorQ("mf", theta, np.ones(state.X.shape), np.full(state.X.shape, 0.1), state.gamma_w)
    q = model.latent_moments(ConjugatePosterior(lam, LocalApprox("mf"), "expected", local_q))
    phi, var_phi = lam["phi"].mean_var()
    expected = 1e-6 * 1.1 * (phi**2 + var_phi).sum(0) - 1e-12 * (phi**2).sum(0)  # Σ_k E[x²]E[φ²] − E[x]²E[φ]²
    assert np.allclose(q.cov, np.tile(expected, len(model.signal_rows)), rtol=1e-9)
    draws = signal_draws(ConjugatePosterior(lam, LocalApprox("mf"), "expected", local_q), model.Y, model.M,
                         model.signal_rows, 1000, np.random.default_rng(0))
    assert np.all(draws == 0.0)


BPFA_ALGORITHMS = [("mf-svi", {"batch_size": 40}), ("mf-ssvi", {"batch_size": 40}),
                   ("titsias-ssvi", {"batch_size": 40}), ("mimno-svi", {"batch_size": 40}),
                   ("gibbs-ssvi", {"batch_size": 40}), ("vmp", {}), ("gibbs", {}),
                   ("bbvi", {"n_samples": 4, "batch_size": None})]


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A short reference of SMALL (it fails the floor at this length: stored with force), in its own folder."""
    folder = tmp_path_factory.mktemp("references")
    mp = pytest.MonkeyPatch()
    mp.setenv("SVIBENCH_REFERENCE_DIR", str(folder))
    made = make_reference(SMALL, build_model(SMALL, cache=False), SamplerSettings(chains=2, warmup=50, draws=100),
                          force=True)
    yield made
    mp.undo()


def _run(algorithm: str, params: dict, problem: ProblemSpec = SMALL):
    return execute(RunSpec("t", problem, algorithm, algorithm, params, 0, Budget(iterations=4), Checkpoints(count=2)))


@pytest.mark.parametrize("algorithm, params", BPFA_ALGORITHMS)
def test_every_bpfa_algorithm_is_scored_against_the_reference(stored, algorithm, params):
    ds = _run(algorithm, params)
    assert ds.attrs["status"] == "ok", ds.attrs["message"]
    assert stored.path.name in ds.attrs["reference"]
    for metric in ("ref_mean_error", "ref_log_sd_ratio", "ref_sd_error", "ref_w2"):
        assert np.all(np.isfinite(ds[metric].values)), (metric, ds[metric].values)
    assert ds["ref_mean_error"].values[-1] > 0.0


def test_a_stale_bpfa_reference_is_refused(stored, monkeypatch):
    defaults = dict(BPFA.__init__.__kwdefaults__)
    monkeypatch.setattr(BPFA.__init__, "__kwdefaults__", {**defaults, "reference_rows": 20})  # other rows compared
    with pytest.raises(StaleReference, match="stale reference for bpfa/small: its model parameters"):
        make_reference(SMALL, build_model(SMALL, cache=False), SamplerSettings())
    monkeypatch.setattr(BPFA.__init__, "__kwdefaults__", defaults)
    meta = json.loads(stored.path.read_text())
    stored.path.write_text(json.dumps({**meta, "data_sha256": "0" * 64}))
    try:
        ds = _run("gibbs", {})
    finally:
        stored.path.write_text(json.dumps(meta))
    assert ds.attrs["status"] == "failed" and "stale reference for bpfa/small: its data checksum" in ds.attrs["message"]


def test_a_bpfa_reference_outlives_a_change_of_how_posteriors_are_scored(stored, monkeypatch):
    """Evaluation parameters (predictive draws, evaluated rows or patches, chunks) leave the posterior as it is: a
    reference computed before one was added or changed is still the problem's (found under the same id, fresh)."""
    defaults = dict(BPFA.__init__.__kwdefaults__)
    monkeypatch.setattr(BPFA.__init__, "__kwdefaults__", {**defaults, "eval_chunk": 7, "eval_rows": 30})
    changed = replace(SMALL, model_params={**SMALL.model_params, "predictive_samples": 9})
    assert reference_path(changed) == stored.path
    check_fresh(stored.reference, changed, BPFA, build_model(changed, cache=False).data)
    meta = stored.reference.meta
    stale = {**meta["model_params_resolved"], "features": meta["model_params_resolved"]["features"] + 1}
    with pytest.raises(StaleReference, match="its model parameters"):
        check_fresh(replace(stored.reference, meta={**meta, "model_params_resolved": stale}), changed, BPFA,
                    build_model(changed, cache=False).data)
