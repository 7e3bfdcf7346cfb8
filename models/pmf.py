"""Poisson–gamma matrix factorisation (Ranganath et al. 2015; Khan & Lin 2017, App. K).

X_ij ~ Poisson(wᵢᵀzⱼ) for rows i = 1..V (pixels) and columns j = 1..N
(images), w_ik ~ Ga(a_w, b_w), z_jk ~ Ga(a_z, b_z) (shape, rate), and
q(W, Z) = Π Ga(w_ik | ·) Π Ga(z_jk | ·) (eq. 96–97).  Entries may be held out
(``mask``); only observed entries enter the likelihood.

For w_ik (and symmetrically z_jk) the Poisson factor splits as
(wᵢᵀzⱼ)^X_ij · exp(−Σ_k w_ik z_jk): the exponential part is conjugate to the
Gamma factor, with VMP message (0, −Σ_j m_ij E[z_jk]) on (log w, w); the part
X_ij log(wᵢᵀzⱼ) is the non-conjugate one, whose mean-parameter gradient is
estimated by reparameterised draws (eq. 15, 73–74):

    ∂/∂w_ik Σ_j X_ij log(wᵢᵀzⱼ) = Σ_j (X_ij / wᵢᵀzⱼ) z_jk.

With K = 1 the split is exact (log(w z) = log w + log z is conjugate) and
CVI-MF with β = 1 reproduces VMP.

Augmented with auxiliary counts X_ij = Σ_k c_ijk (``models.poisson_counts``) the
model is conditionally conjugate, so the SVI family (columns as data points: z_j
and the counts c_j·· local, W global), VMP and a Gibbs sampler run on it too.
Their q(W) is evaluated with q(Z) fitted by the same mean-field locals, and the
``elbo`` is the one below, of q(W) q(Z) with the counts summed out — the
objective CVI-MF and BBVI are scored with, so the families compare on one number
(it is at least the augmented bound the SVI family climbs, by Jensen).

Test data
---------
Either held-out entries of the training matrix (``test`` has ``X`` and ``mask`` of the
train shape: the stand-ins), or new columns (``test`` has ``X`` (V, M) and no ``mask``:
MNIST's 10,000 test images).  New columns are scored as the paper's test images must be:
W is what was learnt, and each test image's own factors q(z_j) are fitted to it by the
mean-field coordinate ascent of ``models.poisson_counts.column_locals`` given q(W)
(E[log w], E[w]; for a Gibbs state, its W), ``test_iterations`` sweeps at most.  The
same fit for every algorithm, so the algorithms differ only in q(W).  The paper does not
say how it scores its test images; W fixed and the test images' factors inferred is the
standard reading of a factorisation's test loss.

Metrics (on the scored test entries H: the held-out entries, or every entry of the test images)
-------
recon_loss
    The paper's reconstruction loss (§7), √(Σ_H (x − x̂)²) / |H| with x̂ = E_q[wᵢ]ᵀE_q[zⱼ].
    The paper's versions differ: one prints √Σ/(VN), the other √(Σ/VN).  This is
    √Σ/(VN): only it gives Table 5's values (ADAM 0.000125, CVI 0.000119 on V × N =
    784 × 10,000 test entries) a plausible size, a per-pixel error of 0.35 and 0.33 on
    0–1 data, where √(Σ/VN) would need a per-pixel error of 0.000125.  With
    ``loss_entries`` = E > 0, Σ_H is scaled to E entries first, √(Σ_H · E/|H|) / E: the
    paper's formula on an estimate of the Σ over E entries (784 × 10,000 for MNIST), so a
    subsample of the test images gives a value on the paper's scale.
recon_rmse
    √(Σ_H (x − x̂)² / |H|), the per-entry error: the other version's formula, and a
    number that does not depend on how many entries are scored.
recon_loss_fit
    recon_loss on the observed (training) entries (never rescaled): the other reading of
    §7's "reconstruction", a fit to the data the model was given.
heldout_loglik
    Mean over H of log (1/S) Σ_s Poisson(x | wᵢₛᵀzⱼₛ), S = ``eval_samples``.
recon_loss_whole, recon_rmse_whole, heldout_loglik_whole
    The three on every test image, when the checkpoints score a seeded subset of them (``eval_test``):
    measured at the last checkpoint only (:mod:`svibench.evaluation_subset`); without one, equal to the three
    at every checkpoint.  Fitting each test image's q(z_j) is most of an evaluation (100 sweeps of a (V, M, K)
    product), so the subset divides a checkpoint's cost by about M / ``eval_test``.
elbo
    E_q[log p(X | W, Z)] (E[log wᵀz] by ``eval_samples`` draws, the rest exact)
    − KL(q ‖ prior), on the training matrix.

Memory: every (draws, V, N) intermediate is formed ``CHUNK_BYTES`` at a time (a chunk of
the draws), and column fits a block of ``COLUMN_BLOCK`` columns at a time, so a step on the
full MNIST (V = 784, N = 60,000, K = 100, S = 10) holds a few (V, N) matrices, not (S, V, N).
A fully observed X is held as given (no masked copy), its nonzeros are gathered from their
positions, and the held-out log predictive goes a draw at a time.  On the full MNIST the process
peaks at 1.46 GB while the model is built (was 2.23 GB) and at 2.15 GB in an evaluation (was
3.95 GB; issue 33).
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy.special import digamma, gammaln

from svibench.capabilities.conjugate import ConjugatePosterior, Globals, LocalApprox
from svibench.capabilities.mean_field import Blocks, gamma_draws, gamma_natural_gradient_sum, mean_gradient
from svibench.data import Dataset
from svibench.evaluation_subset import draw_subset, subset_refusal, whole_declarations, whole_metrics, with_whole
from svibench.expfam import GammaNatural
from svibench.metrics import Metric, metric_table
from svibench.model import IncompatibleData, Model

from .gamma_family import MeanFieldGamma
from .poisson_counts import CountChain, Nonzeros, WeightMoments, column_locals, count_sweep, new_column_locals

__all__ = ["PoissonGammaMF", "CHUNK_BYTES", "COLUMN_BLOCK", "TEST_METRICS"]

#: Bytes one (draws, V, N) intermediate may take; beyond, the draws are processed in chunks.
CHUNK_BYTES = 256 * 2**20
#: Columns whose locals are fitted at once (their (nonzeros, K) arrays stay ~100 MB on MNIST).
COLUMN_BLOCK = 2000
#: A factor's q: a Gamma (natural parameters) or a point (a Gibbs state's draw).
Factor = GammaNatural | np.ndarray
#: The metrics of the test images that a subset of them estimates (``eval_test``) and the last checkpoint measures on
#: every one (``_whole``).
TEST_METRICS = ("heldout_loglik", "recon_loss", "recon_rmse")


class PoissonGammaMF(Model):
    """Poisson–gamma matrix factorisation with a mean-field Gamma posterior.

    Parameters
    ----------
    data : Dataset of kind ``"count-matrix"``: train ``X`` (V, N) counts and
        ``mask`` (V, N), True where observed; test ``X`` and ``mask`` (held-out
        entries), or test ``X`` (V, M) alone (new columns, see the module's "Test data").
    n_factors : int
        K (paper: 100).
    w_shape, w_rate, z_shape, z_rate : float
        Gamma priors of W and Z.  Paper (App. H, Table 1): a^(z0) = b^(z0) =
        a^(w0) = 0.1 and "b^(z0) = 0.3", which can only be b^(w0) = 0.3.
    eval_samples : int
        Draws of q for the Monte-Carlo metrics.
    loss_entries : int
        E for ``recon_loss`` (0: the number of scored entries; see the module docstring).
    test_iterations : int
        Cap on the coordinate-ascent sweeps that fit a new column's q(z_j).
    eval_test : int ≥ 0
        New columns (test images): the test images scored at every checkpoint, a seeded random subset of that many
        (0: every one), with every one at the last checkpoint (``recon_loss_whole``, ``recon_rmse_whole``,
        ``heldout_loglik_whole``), so that a checkpoint costs a fraction of scoring all of them.
    eval_seed : int
        Seed of that subset: one subset for every method, seed and checkpoint of a problem.
    """

    name = "pmf"
    conformance_problem = {"dataset": "pmf-synthetic", "dataset_params": {"rows": 30, "cols": 40, "factors": 3},
                           "model_params": {"n_factors": 3, "eval_samples": 20}, "steps": 20}
    data_kinds = ("count-matrix",)
    metrics = metric_table(
        Metric("elbo", "higher", "objective", "nats",
               description="E_q log p(X | W, Z) (E log wᵀz by eval_samples draws) − KL(q ‖ prior); no ELBO for a Gibbs state"),
        Metric("heldout_loglik", "higher", "task", "nats per test entry", high=0.0,
               description="mean over test entries of log (1/S) Σ_s Poisson(x | wᵢₛᵀzⱼₛ)"),
        Metric("recon_loss", "lower", "task", "counts", low=0.0,
               description="the paper's reconstruction loss (§7) √(Σ (x − x̂)²) / |H| on the test entries H, x̂ = E[w]ᵀE[z] "
                           "(Σ scaled to loss_entries entries when set)"),
        Metric("recon_rmse", "lower", "diagnostic", "counts", rankable=False, low=0.0,
               description="√(Σ (x − x̂)² / |H|) on the test entries: the per-entry error (the other paper version's form)"),
        Metric("recon_loss_fit", "lower", "diagnostic", "counts", rankable=False, low=0.0,
               description="√(Σ (x − x̂)²) / |O| on the observed entries O: a fit to Poisson-noisy counts, which rewards fitting their noise"),
    )
    metrics = {**metrics, **metric_table(*whole_declarations(metrics, TEST_METRICS, "every test image (eval_test)"))}
    evaluation_params: ClassVar[tuple[str, ...]] = ("eval_test", "eval_seed")
    row_params: ClassVar[tuple[str, ...]] = ("eval_test",)
    #: Every posterior has it (a Gibbs state has no ELBO).
    answer = "heldout_loglik"
    primary = ("elbo", "heldout_loglik", "recon_loss")
    family_kinds: ClassVar[tuple[str, ...]] = ("meanfield",)
    posterior_types = (dict, ConjugatePosterior, CountChain)
    local_kinds: ClassVar[tuple[str, ...]] = ("mf",)
    init_methods: ClassVar[tuple[str, ...]] = ("moments",)

    def __init__(self, data: Dataset, *, n_factors: int = 100, w_shape: float = 0.1, w_rate: float = 0.3,
                 z_shape: float = 0.1, z_rate: float = 0.1, eval_samples: int = 20, loss_entries: int = 0,
                 test_iterations: int = 100, eval_test: int = 0, eval_seed: int = 0) -> None:
        super().__init__(data)
        X, mask = data.train.get("X"), data.train.get("mask")
        if X is None or mask is None or X.ndim != 2 or mask.shape != X.shape:
            raise IncompatibleData(f"pmf needs train['X'] and train['mask'] of the same 2-D shape; {data.name!r} has {sorted(data.train)}")
        if n_factors < 1 or min(w_shape, w_rate, z_shape, z_rate) <= 0 or eval_samples < 1:
            raise ValueError("pmf: need n_factors ≥ 1, positive prior parameters and eval_samples ≥ 1")
        if loss_entries < 0 or test_iterations < 1:
            raise ValueError(f"pmf: need loss_entries ≥ 0 and test_iterations ≥ 1, got {loss_entries} and {test_iterations}")
        _check_counts(X[mask > 0], data.name, "observed entries")
        self.mask = mask.astype(float)
        self.X = np.asarray(X, dtype=float) if mask.all() else X * self.mask  # no copy of a fully observed X
        self.positive = self.X > 0  # the observed nonzero counts, the entries X log(rate) is taken at
        self.V, self.N = X.shape
        self.K, self.eval_samples = n_factors, eval_samples
        self.loss_entries, self.test_iterations = loss_entries, test_iterations
        self.prior = {
            "W": GammaNatural.from_shape_rate(np.full((self.V, n_factors), w_shape), np.full((self.V, n_factors), w_rate)),
            "Z": GammaNatural.from_shape_rate(np.full((self.N, n_factors), z_shape), np.full((self.N, n_factors), z_rate)),
        }
        self.hyper = (w_shape, w_rate, z_shape, z_rate)
        self.nonzeros = Nonzeros(self.X, self.mask)
        self._log_x_factorial = self.nonzeros.column_sums(lambda x: gammaln(x + 1.0))  # per column (image)
        self.test_columns = self._new_columns(data.test)
        why = self.data_refusal(data, {"eval_test": eval_test})
        if why:
            raise ValueError(f"pmf: {why}")
        self.test_subset = None if self.test_columns is None else draw_subset(
            eval_test, self.test_columns.shape[1], eval_seed, "eval_test", "test images")

    @classmethod
    def data_refusal(cls, data: Dataset, params: dict) -> str:
        """An ``eval_test`` that is not a subset of the test images, or set where the test data are held-out
        entries."""
        size, X = params.get("eval_test", 0), data.test.get("X")
        if size and (X is None or "mask" in data.test):
            return (f"eval_test = {size!r}: {data.name!r} holds out entries of its matrix, not test images; "
                    f"remove eval_test")
        return subset_refusal(size, X.shape[1], "eval_test", "test images") if size else ""

    def _new_columns(self, test: dict) -> np.ndarray | None:
        """The test images X (V, M) when ``test`` holds new columns (``X`` of V rows and no ``mask``), else None."""
        X = test.get("X")
        if X is None or "mask" in test:
            return None
        if X.ndim != 2 or X.shape[0] != self.V:
            raise IncompatibleData(f"pmf: test['X'] of new columns must have the train matrix's {self.V} rows, got shape {X.shape}")
        _check_counts(X, self.data.name, "test entries")
        return X

    @property
    def n_train(self) -> int:
        return self.N

    def _sample_chunks(self, n_samples: int, cols: int) -> list[slice]:
        """Slices of the draws 0..n_samples so that a (chunk, V, cols) float array stays within CHUNK_BYTES."""
        per = max(1, CHUNK_BYTES // (8 * self.V * cols))
        return [slice(s, min(s + per, n_samples)) for s in range(0, n_samples, per)]

    def _column_weights(self, batch: np.ndarray | None) -> np.ndarray:
        """1 for every column, or N/|B| on the minibatch ``batch`` and 0 elsewhere."""
        if batch is None:
            return np.ones(self.N)
        weights = np.zeros(self.N)
        weights[batch] = self.N / len(batch)
        return weights

    def _ratio(self, W: np.ndarray, Z: np.ndarray) -> np.ndarray:
        """X_ij / wᵢᵀzⱼ on observed entries (0 elsewhere), shape (S, V, N)."""
        ratio = W @ np.swapaxes(Z, -1, -2)  # the rates, divided into in place (one (S, V, N) array, not two)
        np.divide(self.X, ratio, out=ratio, where=self.positive)
        np.copyto(ratio, 0.0, where=~self.positive)
        return ratio

    # -- capability: mean-field non-conjugate (CVI-MF)
    def _init_block(self, rng: np.random.Generator, rows: int) -> GammaNatural:
        """Shapes 1 + U(0, 0.5), means √(mean X / K) so that E[wᵢᵀzⱼ] matches the data's mean count."""
        m0 = np.sqrt(max(self.X.sum() / self.mask.sum(), 1e-3) / self.K)
        shape = 1.0 + 0.5 * rng.uniform(size=(rows, self.K))
        return GammaNatural.from_shape_rate(shape, shape / m0)

    def mf_init(self, rng: np.random.Generator) -> dict[str, GammaNatural]:
        """Every block from :meth:`_init_block`, W first."""
        return {name: self._init_block(rng, rows) for name, rows in (("W", self.V), ("Z", self.N))}

    def conjugate_messages(self, lam: Blocks, block: str) -> GammaNatural:
        """Prior + Σ (0, −Σ_j m_ij E[z_jk]) for W (and the transpose for Z): eq. 20."""
        other = "Z" if block == "W" else "W"
        shape, rate = lam[other].shape_rate()
        mask = self.mask if block == "W" else self.mask.T
        return self.prior[block] + GammaNatural(0.0, -(mask @ (shape / rate)))

    def nonconjugate_gradient(self, lam: Blocks, blocks: tuple[str, ...], rng: np.random.Generator,
                              n_samples: int) -> dict[str, GammaNatural]:
        """∇̂_μ Σ_ij m_ij X_ij E_q[log wᵢᵀzⱼ] for the requested blocks (draws of both W and Z).

        The uniforms are drawn at once (W's, then Z's); the draws and their (S, V, N) ratios
        a chunk of draws at a time (:meth:`_sample_chunks`), their gradients summed.
        """
        u = {name: rng.uniform(size=(n_samples, rows, self.K)) for name, rows in (("W", self.V), ("Z", self.N))}
        sums = {name: GammaNatural(0.0, 0.0) for name in blocks}
        for part in self._sample_chunks(n_samples, self.N):
            draws = {name: gamma_draws(*lam[name].shape_rate(), u[name][part]) for name in u}
            ratio = self._ratio(draws["W"].z, draws["Z"].z)
            grad_z = {"W": ratio @ draws["Z"].z, "Z": np.swapaxes(ratio, -1, -2) @ draws["W"].z}
            for name in blocks:
                sums[name] = sums[name] + gamma_natural_gradient_sum(draws[name], grad_z[name])
        return {name: mean_gradient(lam[name], sums[name] / n_samples) for name in blocks}

    # -- capability: conditionally conjugate, with auxiliary counts (models.poisson_counts)
    def prior_natural(self) -> Globals:
        return {"W": self.prior["W"]}

    def init_globals(self, rng: np.random.Generator, method: str = "moments") -> Globals:
        """q(W) as in :meth:`mf_init` (the same draws for W)."""
        return {"W": self._init_block(rng, self.V)}

    def expected_view(self, lam: Globals) -> WeightMoments:
        shape, rate = lam["W"].shape_rate()
        return WeightMoments(digamma(shape) - np.log(rate), shape / rate)

    def sampled_view(self, lam: Globals, rng: np.random.Generator) -> WeightMoments:
        shape, rate = lam["W"].shape_rate()
        w = np.maximum(rng.gamma(shape, 1.0 / rate), np.finfo(float).tiny)
        return WeightMoments(np.log(w), w)

    def _column_q(self, view: WeightMoments, batch: np.ndarray, approx: LocalApprox):
        if approx.kind not in self.local_kinds:
            raise ValueError(f"pmf offers local approximations {self.local_kinds}, not {approx.kind!r}")
        return column_locals(view, self.nonzeros, self.mask, batch, self.hyper[2], self.hyper[3],
                             approx.inner_iterations, approx.inner_tol)

    def local_statistics(self, view: WeightMoments, batch: np.ndarray, approx: LocalApprox,
                         rng: np.random.Generator) -> Globals:
        """Σ_{j∈B} (Σ_j X_ij φ_ijk, −Σ_j m_ij E[z_jk]) on (log w_ik, w_ik), from the mean-field locals."""
        alpha, beta, counts = self._column_q(view, batch, approx)
        return {"W": GammaNatural(counts, -(self.mask[:, batch] @ (alpha / beta)))}

    # -- capability: Gibbs sampler over W, Z and the counts (algorithms.gibbs)
    def chain_init(self, rng: np.random.Generator, method: str = "moments") -> CountChain:
        """W and Z drawn from the initial q of :meth:`mf_init`."""
        q = self.mf_init(rng)
        W, Z = (np.maximum(rng.gamma(*_shape_scale(q[name])), np.finfo(float).tiny) for name in ("W", "Z"))
        return CountChain(W, Z)

    def chain_sweep(self, state: CountChain, rng: np.random.Generator) -> CountChain:
        return count_sweep(state, self.nonzeros, self.mask, self.hyper, rng)

    # -- capability: log joint (BBVI)
    def variational_family(self, kind: str = "meanfield") -> MeanFieldGamma:
        if kind not in self.family_kinds:
            raise ValueError(f"pmf offers families {self.family_kinds}, not {kind!r}")
        return MeanFieldGamma({"W": (self.V, self.K), "Z": (self.N, self.K)}, self.mf_init)

    def _split(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        S, n_w = len(z), self.V * self.K
        return z[:, :n_w].reshape(S, self.V, self.K), z[:, n_w:].reshape(S, self.N, self.K)

    def _loglik_terms(self, W: np.ndarray, Z: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Observed-entry Poisson log-likelihoods without log X!, times the column ``weights``: (S, V, N), formed in
        place (two (S, V, N) arrays, not six)."""
        rate = W @ np.swapaxes(Z, -1, -2)
        with np.errstate(divide="ignore"):
            terms = np.log(rate, out=np.zeros(rate.shape), where=self.positive)  # log(rate) where X > 0, else 0
        terms *= self.X
        rate *= self.mask
        terms -= rate
        terms *= weights
        return terms

    def _chunked(self, W: np.ndarray, Z: np.ndarray, reduce) -> np.ndarray:
        """``reduce(W[c], Z[c])`` over chunks c of the draws (:meth:`_sample_chunks`), concatenated."""
        return np.concatenate([reduce(W[c], Z[c]) for c in self._sample_chunks(len(W), self.N)])

    def log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        W, Z = self._split(z)
        weights = self._column_weights(batch)
        lik = self._chunked(W, Z, lambda w, v: self._loglik_terms(w, v, weights).sum((-2, -1)))
        prior = self.prior["W"].log_pdf(W).sum((-2, -1)) + self.prior["Z"].log_pdf(Z).sum((-2, -1))
        return lik - float(self._log_x_factorial @ weights) + prior

    def log_joint_blocks(self, z: np.ndarray, kind: str, batch: np.ndarray | None = None) -> np.ndarray:
        """Markov blanket of w_ik: row i's likelihood + its prior; of z_jk: column j's + its prior."""
        W, Z = self._split(z)
        weights = self._column_weights(batch)

        def blankets(w: np.ndarray, v: np.ndarray) -> np.ndarray:
            terms = self._loglik_terms(w, v, weights)
            return np.concatenate([terms.sum(-1), terms.sum(-2)], axis=1)  # (S, V + N)

        lik = self._chunked(W, Z, blankets)
        row = lik[:, :self.V, None] + self.prior["W"].log_pdf(W)  # (S, V, K)
        col = lik[:, self.V:, None] + self.prior["Z"].log_pdf(Z)  # (S, N, K)
        return np.concatenate([row.reshape(len(z), -1), col.reshape(len(z), -1)], axis=1)

    def grad_log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        W, Z = self._split(z)
        weights = self._column_weights(batch)

        def likelihood_gradient(w: np.ndarray, v: np.ndarray) -> np.ndarray:
            resid = self._ratio(w, v)  # → ∂/∂rate of the weighted likelihood, in place
            resid -= self.mask
            resid *= weights
            return np.concatenate([(resid @ v).reshape(len(w), -1), (np.swapaxes(resid, -1, -2) @ w).reshape(len(w), -1)], axis=1)

        (aw, bw), (az, bz) = self.prior["W"].shape_rate(), self.prior["Z"].shape_rate()
        prior = np.concatenate([((aw - 1.0) / W - bw).reshape(len(z), -1), ((az - 1.0) / Z - bz).reshape(len(z), -1)], axis=1)
        return self._chunked(W, Z, likelihood_gradient) + prior

    # -- evaluation
    def _fit_columns(self, view: WeightMoments, nonzeros: Nonzeros, mask: np.ndarray, approx: LocalApprox) -> GammaNatural:
        """q(z_j) of every column of ``nonzeros`` by its mean-field locals given ``view`` of W, COLUMN_BLOCK at a time."""
        n = mask.shape[1]
        fits = [column_locals(view, nonzeros, mask, np.arange(s, min(s + COLUMN_BLOCK, n)), self.hyper[2], self.hyper[3],
                              approx.inner_iterations, approx.inner_tol)[:2] for s in range(0, n, COLUMN_BLOCK)]
        return GammaNatural.from_shape_rate(np.concatenate([a for a, _ in fits]), np.concatenate([b for _, b in fits]))

    def fitted_blocks(self, posterior: ConjugatePosterior) -> dict[str, GammaNatural]:
        """q(W) of the SVI family with q(Z) of every column fitted by its mean-field locals given E_q[W]."""
        if posterior.approx.kind not in self.local_kinds:
            raise ValueError(f"pmf offers local approximations {self.local_kinds}, not {posterior.approx.kind!r}")
        view = self.expected_view(posterior.lam)
        return {"W": posterior.lam["W"], "Z": self._fit_columns(view, self.nonzeros, self.mask, posterior.approx)}

    def evaluate(self, posterior: Blocks | ConjugatePosterior | CountChain, rng: np.random.Generator) -> dict[str, float]:
        """Metrics of a mean-field q (every metric), of the SVI family's q(W) (through :meth:`fitted_blocks`),
        or of a Gibbs state (its draw W, Z as points; no ELBO)."""
        if isinstance(posterior, CountChain):
            values = self._test_metrics(posterior.W, posterior.Z, rng, 1, self.test_subset)
        else:
            if isinstance(posterior, ConjugatePosterior):
                posterior = self.fitted_blocks(posterior)
            values = {"elbo": self._elbo(posterior, rng),
                      **self._test_metrics(posterior["W"], posterior["Z"], rng, self.eval_samples, self.test_subset)}
        return with_whole(values, TEST_METRICS, self.test_subset)

    def evaluate_final(self, posterior: Blocks | ConjugatePosterior | CountChain, rng: np.random.Generator) -> dict[str, float]:
        """With a subset of the test images at the checkpoints (``eval_test``): the ``_whole`` metrics, on every
        test image."""
        if self.test_subset is None:
            return {}
        if isinstance(posterior, CountChain):
            W, samples = posterior.W, 1
        else:  # the test images' factors are fitted given q(W) alone: the training columns' q(Z) is not needed
            W, samples = (posterior.lam if isinstance(posterior, ConjugatePosterior) else posterior)["W"], self.eval_samples
        return whole_metrics(self._new_column_metrics(W, rng, samples, None), TEST_METRICS)

    def final_evaluation_ratio(self) -> float:
        """M / ``eval_test``: the test images' fit, linear in the images scored, is most of an evaluation."""
        return 0.0 if self.test_subset is None else self.test_columns.shape[1] / self.test_subset.size

    def _elbo(self, q: Blocks, rng: np.random.Generator) -> float:
        """E_q log p(X | W, Z) − KL(q ‖ prior), E log wᵢᵀzⱼ on the observed nonzeros by ``eval_samples`` draws."""
        rows, cols, x = self.nonzeros.of(np.arange(self.N))
        e_log_rate = np.zeros(len(x))
        for part in self._sample_chunks(self.eval_samples, self.N):
            W, Z = _draws(q["W"], q["Z"], rng, part.stop - part.start)
            e_log_rate += np.log((W @ np.swapaxes(Z, -1, -2))[:, rows, cols]).sum(0)
        mean_w, mean_z = _mean(q["W"]), _mean(q["Z"])
        expected_rate = float(np.sum((self.mask @ mean_z) * mean_w))
        expected_loglik = float(x @ e_log_rate) / self.eval_samples - expected_rate - self._log_x_factorial.sum()
        return expected_loglik - sum(float(q[name].kl(self.prior[name]).sum()) for name in ("W", "Z"))

    def _test_metrics(self, W: Factor, Z: Factor, rng: np.random.Generator, n_samples: int,
                      subset: np.ndarray | None) -> dict[str, float]:
        """Reconstruction losses and held-out log predictive of q(W) with the train columns' Z (held-out
        entries) or with the test columns' q(z) fitted given W (new columns; the test images ``subset``, None:
        every one)."""
        mean_rate = _mean(W) @ _mean(Z).T
        fit = np.subtract(self.X, mean_rate)  # X − x̂ on the observed entries, 0 elsewhere, squared in place
        fit *= self.mask
        out = {"recon_loss_fit": _recon_loss(float(np.square(fit, out=fit).sum()), int(self.mask.sum()))}
        del fit  # before the test columns' arrays
        if self.test_columns is not None:
            return {**out, **self._new_column_metrics(W, rng, n_samples, subset)}
        held = self.data.test.get("mask")
        if held is None or not held.any():
            return out
        return {**out, **self._scores(W, Z, held, self.data.test["X"][held], mean_rate, rng, n_samples)}

    def _new_column_metrics(self, W: Factor, rng: np.random.Generator, n_samples: int,
                            subset: np.ndarray | None) -> dict[str, float]:
        """:data:`TEST_METRICS` of the test images ``subset`` (None: every one), each one's q(z) fitted given W."""
        X = self.test_columns if subset is None else self.test_columns[:, subset]
        alpha, beta = new_column_locals(WeightMoments(*_log_and_mean(W)), X, self.hyper[2], self.hyper[3],
                                        self.test_iterations, LocalApprox.inner_tol)
        Z = GammaNatural.from_shape_rate(alpha, beta)
        held = np.ones(X.shape, bool)
        return self._scores(W, Z, held, X[held], _mean(W) @ _mean(Z).T, rng, n_samples)

    def _scores(self, W: Factor, Z: Factor, held: np.ndarray, x: np.ndarray, mean_rate: np.ndarray,
                rng: np.random.Generator, n_samples: int) -> dict[str, float]:
        """:data:`TEST_METRICS` of the entries ``held`` (values ``x``) under rates ``mean_rate``."""
        sq = float(np.sum((x - mean_rate[held]) ** 2))
        return {"recon_loss": _recon_loss(sq, x.size, self.loss_entries), "recon_rmse": float(np.sqrt(sq / x.size)),
                "heldout_loglik": self._log_predictive(W, Z, held, x, rng, n_samples)}

    def _log_predictive(self, W: Factor, Z: Factor, held: np.ndarray, x: np.ndarray, rng: np.random.Generator,
                        n_samples: int) -> float:
        """Mean over the entries ``held`` of log (1/S) Σ_s Poisson(x | wᵢₛᵀzⱼₛ), a draw at a time (W's, then Z's, as
        :func:`_draws`), accumulated by log-add-exp: a few arrays of the entries' size, where a chunk of draws
        through ``logsumexp`` took ~2.1 GB on MNIST's test images."""
        total, every = np.full(len(x), -np.inf), held.all()
        for _ in range(n_samples):
            w = _draw(W, rng)
            rate = w @ _draw(Z, rng).T
            rate = rate.ravel() if every else rate[held]
            log_p = np.log(rate)
            log_p *= x
            log_p -= rate
            np.logaddexp(total, log_p, out=total)
        return float(np.mean(total - gammaln(x + 1.0)) - np.log(n_samples))


def _check_counts(values: np.ndarray, name: str, what: str) -> None:
    """Raise IncompatibleData unless ``values`` are non-negative integers."""
    bad = (values < 0) | (values != np.round(values))
    if np.any(bad):
        raise IncompatibleData(f"pmf: the {what} of {name!r} must be non-negative integer counts "
                               f"(found e.g. {values[bad][:1]}); round or quantise the data first")


def _draw(q: Factor, rng: np.random.Generator) -> np.ndarray:
    """One draw of q (rows, K), floored at ``tiny``; a point q is itself."""
    if isinstance(q, np.ndarray):
        return q
    shape, rate = q.shape_rate()
    return np.maximum(rng.gamma(shape, 1.0 / rate), np.finfo(float).tiny)


def _draws(W: Factor, Z: Factor, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` draws of (W, Z), each (n, rows, K), drawn W then Z draw by draw: so the numbers do not
    depend on how the draws are chunked."""
    pairs = [(_draw(W, rng), _draw(Z, rng)) for _ in range(n)]
    return np.stack([w for w, _ in pairs]), np.stack([z for _, z in pairs])


def _mean(q: Factor) -> np.ndarray:
    """E_q of a factor (a point is its own mean)."""
    if isinstance(q, np.ndarray):
        return q
    shape, rate = q.shape_rate()
    return shape / rate


def _log_and_mean(q: Factor) -> tuple[np.ndarray, np.ndarray]:
    """(E log w, E w) of a factor; of a point, (log w, w)."""
    if isinstance(q, np.ndarray):
        return np.log(np.maximum(q, np.finfo(float).tiny)), q
    shape, rate = q.shape_rate()
    return digamma(shape) - np.log(rate), shape / rate


def _shape_scale(q: GammaNatural) -> tuple[np.ndarray, np.ndarray]:
    """numpy's Gamma parameters (shape, scale = 1/rate) of q."""
    shape, rate = q.shape_rate()
    return shape, 1.0 / rate


def _recon_loss(sq: float, size: int, entries: int = 0) -> float:
    """√(Σ (x − x̂)²) / E (Khan & Lin 2017, §7) from ``sq`` = Σ (x − x̂)² over ``size`` entries, Σ scaled to E entries
    when ``entries`` = E > 0 (else E = ``size``)."""
    entries = entries or size
    return float(np.sqrt(sq * entries / size) / entries)
