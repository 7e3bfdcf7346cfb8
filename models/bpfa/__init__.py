"""Beta-process factor analysis (BPFA) with the finite beta process (Shah, Knowles & Ghahramani 2015, eq. 5).

yᵢ = (zᵢ ∘ wᵢ) Φ + εᵢ,  wᵢ ~ N(0, γ_w⁻¹ I),  z_ik ~ Bern(π_k),  εᵢ ~ N(0, γ_obs⁻¹ I),
π_k ~ Beta(a/K, b(K−1)/K),  φ_k ~ N(0, D⁻¹ I),  γ_obs ~ Gamma(c′, d′),  γ_w ~ Gamma(e′, f′).

Globals β = {π, Φ, γ_w, γ_obs} with q(π_k) = Beta, q(φ_kd) = N (one precision
τ_kd per dimension: with missing entries the conditional of φ_k is not
isotropic), q(γ) = Gamma (§3); locals ψᵢ = {zᵢ, wᵢ}.  Only observed entries
(mask m_id = 1) enter the likelihood; missing values are never filled in.

The model offers the conditionally conjugate capability for the SVI family
(``algorithms.svi``: MF-SVI, MF-SSVI, Titsias-SVI/SSVI, Mimno-SVI, Gibbs-SSVI,
VMP), the complete-conditional sweep of the uncollapsed Gibbs sampler
(``algorithms.gibbs``), and its log joint with a fully factorised family for
score-function BBVI (small problems only).  The maths lives in
``models.bpfa.local`` (local approximations, one table of kinds), ``models.bpfa.stats``
(eq. 7), ``models.bpfa.chain`` (Gibbs sampler), ``models.bpfa.joint`` (log joint),
``models.bpfa.evaluation`` (eq. 12 and metrics) and ``models.bpfa.kernels`` (compiled sweeps).

Reference posterior (``svibench reference``): the uncollapsed Gibbs sampler's chains, compared on the
noise-free signal (zᵢ ∘ wᵢ)Φ of ``reference_rows`` fixed rows — invariant to permuting, flipping and rescaling
features, so no relabelling is needed (``models.bpfa.reference`` says why not the aligned features, and how
every algorithm's posterior maps to the signal's moments).

Data: a ``Dataset`` of kind ``"factor"`` or ``"images"`` with ``train["Y"]``
(N, D) and ``train["mask"]`` (N, D, 1 = observed) and ``test["Y"]`` (true
values) with ``test["mask"]`` (held-out entries to predict).  Image datasets
also carry ``test["image"]`` (the clean image, 0–255) and in ``meta`` the
patch geometry and the standardisation (``offset``, ``scale``).
"""
from __future__ import annotations

import inspect
from dataclasses import replace
from typing import ClassVar

import numpy as np

from svibench.capabilities import Globals, LocalApprox
from svibench.capabilities.conjugate import ConjugatePosterior
from svibench.capabilities.latent_gaussian import GaussianPosterior
from svibench.data import Dataset
from svibench.expfam import BetaNatural, GammaNatural, GaussianDiagNatural
from svibench.numerics.minibatch import sample_minibatch
from svibench.datasets.images import assemble_patches, windows
from svibench.evaluation_subset import draw_subset, subset_refusal, whole_metrics, with_whole
from svibench.metrics import Metric, metric_table
from svibench.model import Model

from . import evaluation, joint, memory, reference
from .chain import ChainState, point_view, sample_globals, sweep_locals
from .local import LOCAL_STARTS, LOCALS, GlobalMoments, LocalMoments
from .stats import global_statistics

__all__ = ["BPFA"]


#: How a ``*_whole`` metric is recorded (:meth:`BPFA.evaluate_final`).
_ONCE = "; at the last checkpoint only when the checkpoints evaluate a subset (eval_patches, eval_rows)"


class BPFA(Model):
    """Beta-process factor analysis (finite beta process, K features).

    Parameters
    ----------
    data : Dataset
        Kind ``"factor"`` or ``"images"`` (see module docstring).
    features : int
        K, the truncation level (paper: 150 synthetic, 250 images).
    a, b : float
        π_k ~ Beta(a/K, b(K−1)/K) (paper: 10, 10).
    c0, d0, e0, f0 : float
        Gamma(shape, rate) priors of γ_obs (c′, d′) and γ_w (e′, f′) (paper: 1, 10, 1, 1).
    predictive_samples : int
        M of eq. 12 (draws of (β, ψ) per evaluation).
    init_rows, init_sweeps : int
        Size of the random subset and number of sweeps of the Gibbs initialisation.
    eval_chunk : int
        Rows per chunk at evaluation (memory O(chunk × K)).
    eval_patches : {"all", "windows"}
        The patches evaluated at every checkpoint (image data): all of them, or those covering a seeded, stratified
        sample of pixel :func:`~svibench.datasets.images.windows`, so that evaluation costs a fraction of a
        paper-scale run.  With ``"windows"`` every metric is estimated on those patches at each checkpoint (the
        PSNRs on the windows' pixels, where the reconstruction is the whole image's), and ``psnr_whole`` and
        ``psnr_fit_whole`` (every pixel) are measured at the last checkpoint only (:meth:`evaluate_final`); with
        ``"all"`` they equal ``psnr`` and ``psnr_fit``.
    eval_windows, eval_window : int
        The windows: one ``eval_window`` × ``eval_window`` window in each cell of an ``eval_windows`` ×
        ``eval_windows`` grid over the image (16 windows of 16 × 16 pixels: 1/64 of a 512 × 512 image's pixels,
        from about 1/30 of its patches).
    eval_rows : int
        Factor data: the rows evaluated at every checkpoint, a seeded random subset of that many (0: all of them),
        with every row at the last checkpoint (the ``*_whole`` metrics), so that evaluation costs a fraction of a
        large run (shah2015-genomic's 172,791 cells: one evaluation of every row costs 17-99 s at K = 500).
    eval_seed : int
        Seed of the windows' places or of the rows' subset: one fixed subset for every method, seed and checkpoint
        of a problem.
    reference_rows : int
        R, the rows whose signal is compared with a reference posterior (``models.bpfa.reference``; R·D numbers).
    """

    name = "bpfa"
    data_kinds = ("factor", "images")
    #: See :meth:`evaluate`.  ``draw_mse`` adds the predictive variance to the error of the mean, so an
    #: over-confident noise precision lowers it: the paper's number, no fair ranking key.  ``psnr_fit`` is
    #: a fit to the observed pixels: fair only where they are noise-free (:meth:`metric_info`).
    metrics = metric_table(
        Metric("elbo", "higher", "objective", "nats",
               description="full ELBO with every row's mean-field locals re-optimised given λ; mean-field locals only"),
        Metric("heldout_loglik", "higher", "task", "nats per held-out entry (standardised scale)",
               description="eq. 12's predictive log density of the held-out entries, per entry"),
        Metric("mse", "lower", "task", "squared data units", low=0.0,
               description="squared error of the predictive mean on the held-out entries, in the data's original units"),
        Metric("draw_mse", "lower", "diagnostic", "squared data units", rankable=False, low=0.0,
               description="expected squared error of a draw from the predictive: mse + its noise variance 1/γ_obs (§5.1's reading)"),
        Metric("psnr", "higher", "task", "dB", low=0.0,
               description="PSNR of the reconstructed image against the clean image, all pixels (image data)"),
        Metric("psnr_fit", "higher", "diagnostic", "dB", rankable=False,
               description="PSNR against the observed pixel values, observed pixels only (Table 1's reading); fair on noise-free pixels"),
        Metric("heldout_loglik_whole", "higher", "task", "nats per held-out entry (standardised scale)",
               tracked_by="heldout_loglik", description=f"heldout_loglik on every row{_ONCE}"),
        Metric("mse_whole", "lower", "task", "squared data units", low=0.0, tracked_by="mse",
               description=f"mse on every row{_ONCE}"),
        Metric("draw_mse_whole", "lower", "diagnostic", "squared data units", rankable=False, low=0.0,
               tracked_by="draw_mse", description=f"draw_mse on every row{_ONCE}"),
        Metric("psnr_whole", "higher", "task", "dB", low=0.0, tracked_by="psnr",
               description=f"psnr on every pixel, from every patch (the paper's reconstruction){_ONCE}"),
        Metric("psnr_fit_whole", "higher", "diagnostic", "dB", rankable=False, tracked_by="psnr_fit",
               description=f"psnr_fit on every observed pixel, from every patch{_ONCE}"),
    )
    #: Every posterior has it (the ELBO only mean-field locals).
    answer = "heldout_loglik"
    primary = ("elbo", "heldout_loglik", "psnr")
    posterior_types = (ConjugatePosterior, ChainState)
    local_kinds: ClassVar[tuple[str, ...]] = tuple(LOCALS)
    local_starts: ClassVar[tuple[str, ...]] = LOCAL_STARTS
    family_kinds: ClassVar[tuple[str, ...]] = ("meanfield",)
    init_methods: ClassVar[tuple[str, ...]] = ("random", "gibbs")
    #: Small problem of the conformance suite (``svibench.testing``): data from the prior.
    evaluation_params: ClassVar[tuple[str, ...]] = ("predictive_samples", "eval_chunk", "eval_patches", "eval_windows",
                                                    "eval_window", "eval_rows", "eval_seed")
    row_params: ClassVar[tuple[str, ...]] = ("eval_rows",)
    conformance_problem: ClassVar[dict] = {
        "dataset": "bpfa-synthetic", "dataset_params": {"n": 200, "dim": 10, "features": 8, "seed": 0},
        "model_params": {"features": 8, "predictive_samples": 2, "init_rows": 50, "init_sweeps": 2}, "steps": 20,
    }

    def __init__(self, data: Dataset, *, features: int = 50, a: float = 10.0, b: float = 10.0, c0: float = 1.0,
                 d0: float = 10.0, e0: float = 1.0, f0: float = 1.0, predictive_samples: int = 5,
                 init_rows: int = 1000, init_sweeps: int = 20, eval_chunk: int = 1024, reference_rows: int = 16,
                 eval_patches: str = "all", eval_windows: int = 4, eval_window: int = 16, eval_rows: int = 0,
                 eval_seed: int = 0) -> None:
        super().__init__(data)
        if min(features, predictive_samples, init_rows, init_sweeps, eval_chunk, reference_rows, eval_windows,
               eval_window) < 1:
            raise ValueError("bpfa: features, predictive_samples, init_rows, init_sweeps, eval_chunk, reference_rows, "
                             "eval_windows and eval_window must be ≥ 1")
        if eval_patches not in ("all", "windows"):
            raise ValueError(f"bpfa: eval_patches must be 'all' or 'windows', got {eval_patches!r}")
        if eval_patches == "windows" and "image" not in data.test:
            raise ValueError(f"bpfa: eval_patches = 'windows' needs image data (dataset kind 'images'), not kind "
                             f"{data.kind!r}; use 'all'")
        self.Y = np.asarray(data.train["Y"], dtype=float)
        self.M = np.asarray(data.train["mask"], dtype=float)
        self.features, self.predictive_samples = features, predictive_samples
        self.init_rows, self.init_sweeps, self.eval_chunk = init_rows, init_sweeps, eval_chunk
        self.signal_rows = reference.signal_rows(self.Y.shape[0], reference_rows)
        self.eval_subset, self.eval_pixels = self._evaluation_subset(eval_patches, eval_windows, eval_window,
                                                                     eval_rows, eval_seed)
        K, D = features, self.Y.shape[1]
        self.hyper = {"a0": a / K, "b0": b * (K - 1) / K, "c0": c0, "d0": d0, "e0": e0, "f0": f0, "phi_precision": float(D)}
        self._prior = {
            "pi": BetaNatural.from_ab(np.full(K, a / K), np.full(K, b * (K - 1) / K)),
            "phi": GaussianDiagNatural(np.zeros((K, D)), np.full((K, D), -0.5 * D)),
            "gamma_obs": GammaNatural.from_shape_rate(c0, d0),
            "gamma_w": GammaNatural.from_shape_rate(e0, f0),
        }

    @property
    def n_train(self) -> int:
        return self.Y.shape[0]

    @classmethod
    def memory_bytes(cls, data: Dataset, params: dict, algorithm: dict) -> int:
        """Peak bytes of one run, an upper estimate from N, D, K and the rows a step and an evaluation chunk
        hold (``models.bpfa.memory``)."""
        defaults = {name: p.default for name, p in inspect.signature(cls.__init__).parameters.items()
                    if p.default is not inspect.Parameter.empty}
        return memory.run_bytes(data, params, algorithm, defaults)

    def metric_info(self) -> dict[str, Metric]:
        """The class's table, with ``psnr_fit`` a fair ranking key where the observed pixels carry no noise
        (the dataset's ``meta["noise_sd"]`` is 0: inpainting): there a closer fit is a better reconstruction,
        while on noisy pixels (denoising) it rewards reproducing the noise."""
        info = super().metric_info()
        if self.data.meta.get("noise_sd") == 0:
            for name in ("psnr_fit", "psnr_fit_whole"):
                info[name] = replace(info[name], rankable=True)
        return info

    # -- capability: conditionally conjugate
    def prior_natural(self) -> Globals:
        """η: Beta(a/K, b(K−1)/K), N(0, 1/D) per φ_kd, Gamma(c′, d′), Gamma(e′, f′) (§3)."""
        return dict(self._prior)

    def init_globals(self, rng: np.random.Generator, method: str = "random") -> Globals:
        """Initial λ.

        ``"random"``: φ_kd with mean ~ N(0, 1/D) and precision D + N/K, q(π_k) = its prior
        Beta(a/K, b(K−1)/K) (a dense start such as Beta(1, 1) leads Gibbs-SSVI into an
        over-fitting optimum with many features per row),
        E[γ_obs] = 10 and E[γ_w] = 1 (data are standardised).  ``"gibbs"`` (§5.2,
        after Li et al. 2012): ``init_sweeps`` sweeps of the uncollapsed Gibbs
        sampler on ``init_rows`` random rows from the random start; λ = η +
        (N/n) × the eq. 7 statistics of the final locals at the final globals.
        """
        if method not in self.init_methods:
            raise ValueError(f"unknown init method {method!r}; choose from {self.init_methods}")
        K, (N, D) = self.features, self.Y.shape
        if method == "random":
            return {
                "pi": self._prior["pi"],
                "phi": GaussianDiagNatural.from_mean_var(rng.normal(0.0, D**-0.5, (K, D)), np.full((K, D), 1.0 / (D + N / K))),
                "gamma_obs": GammaNatural.from_shape_rate(10.0, 1.0),
                "gamma_w": GammaNatural.from_shape_rate(10.0, 10.0),
            }
        rows = sample_minibatch(rng, N, self.init_rows)
        Y, M = self.Y[rows], self.M[rows]
        state = self.chain_init(rng, "random", rows)
        for _ in range(self.init_sweeps):
            state = self.chain_sweep(state, rng, rows)
        X = state.X
        on = (X != 0.0).astype(float)
        w2 = np.where(on > 0, X * X, 1.0 / state.gamma_w)
        mom = LocalMoments(X[None], (X * X)[None], on[None], w2[None])
        stats = global_statistics(mom, point_view(state), Y, M)
        return {name: self._prior[name] + (N / len(rows)) * stats[name] for name in self._prior}

    def expected_view(self, lam: Globals) -> GlobalMoments:
        return evaluation.expected_view(lam)

    def sampled_view(self, lam: Globals, rng: np.random.Generator) -> GlobalMoments:
        return evaluation.sampled_view(lam, rng)

    def local_statistics(self, view: GlobalMoments, batch: np.ndarray, approx: LocalApprox,
                         rng: np.random.Generator) -> Globals:
        """Σ_{i∈batch} η̂ᵢ (eq. 7, corrected; ``models.bpfa.stats``) under ``approx`` given ``view``."""
        Y, M = self.Y[batch], self.M[batch]
        return global_statistics(self.local_moments(view, Y, M, approx, rng), view, Y, M)

    def local_moments(self, view: GlobalMoments, Y: np.ndarray, M: np.ndarray, approx: LocalApprox,
                      rng: np.random.Generator) -> LocalMoments:
        """The locals' moments under ``approx``: mean-field (eq. 8–9), Titsias (eq. 11; or fitted to
        the appendix's printed objective) or Gibbs (``models.bpfa.local.LOCALS``)."""
        if approx.kind not in LOCALS:
            raise ValueError(f"bpfa offers local approximations {self.local_kinds}, not {approx.kind!r}")
        return LOCALS[approx.kind].moments(view, Y, M, approx, rng)

    # -- capability: log joint (score-function BBVI; models.bpfa.joint)
    def variational_family(self, kind: str = "meanfield") -> joint.BPFAFamily:
        """The fully factorised q over π, Φ, γ_obs, γ_w, Z, W (``models.bpfa.joint``)."""
        if kind not in self.family_kinds:
            raise ValueError(f"bpfa offers variational families {self.family_kinds}, not {kind!r}")
        return joint.BPFAFamily(self)

    def log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        return joint.log_joint(self, self.variational_family(), z, batch)

    def log_joint_blocks(self, z: np.ndarray, kind: str, batch: np.ndarray | None = None) -> np.ndarray:
        return joint.log_joint_blocks(self, self.variational_family(kind), z, batch)

    # -- the uncollapsed Gibbs sampler (algorithms.gibbs)
    def chain_init(self, rng: np.random.Generator, method: str = "random", rows: np.ndarray | None = None) -> ChainState:
        """Random start of the Gibbs sampler: globals drawn from the random-init λ, no feature on."""
        lam = self.init_globals(rng, method)
        view = evaluation.sampled_view(lam, rng)
        n = self.n_train if rows is None else len(rows)
        return ChainState(np.exp(view.log_pi), view.phi, view.gamma_w, view.gamma_obs, np.zeros((n, self.features)))

    def chain_sweep(self, state: ChainState, rng: np.random.Generator, rows: np.ndarray | None = None) -> ChainState:
        """One sweep: every row's locals given the globals, then each global given the rest."""
        Y, M = (self.Y, self.M) if rows is None else (self.Y[rows], self.M[rows])
        X = sweep_locals(state, Y, M, rng)
        return sample_globals(ChainState(state.pi, state.phi, state.gamma_w, state.gamma_obs, X), Y, M, self.hyper, rng)

    # -- reference posterior (svibench.reference; models.bpfa.reference)
    sampler_name: ClassVar[str] = ("uncollapsed Gibbs over (Z, W, π, Φ, γ_w, γ_obs) (Shah et al. 2015, §5.1); latent: "
                                   "the noise-free signal (z ∘ w)Φ of fixed rows, invariant to relabelling features")
    #: Draws of the signal behind each posterior's moments (``models.bpfa.reference.DRAWS``).
    latent_draws: ClassVar[int] = reference.DRAWS

    def chain_latent(self, state: ChainState) -> np.ndarray:
        """The signal X_R Φ of the compared rows at the state (R·D,): one posterior draw."""
        return reference.chain_signal(state, self.signal_rows)

    def latent_moments(self, posterior: ConjugatePosterior | ChainState) -> GaussianPosterior:
        """Mean and variances (``cov`` as a vector) of the compared rows' signal under any posterior ``evaluate``
        takes, from draws as eq. 12 makes them (``models.bpfa.reference.signal_moments``)."""
        return reference.signal_moments(posterior, self.Y, self.M, self.signal_rows, self.latent_draws)

    # -- evaluation
    def global_kl(self, lam: Globals) -> float:
        """Σ over globals of KL(q ‖ p)."""
        return float(sum(np.sum(lam[name].kl(self._prior[name])) for name in self._prior))

    def evaluate(self, posterior: ConjugatePosterior | ChainState, rng: np.random.Generator) -> dict[str, float]:
        """Metrics of λ (from the SVI family, with its local approximation) or of a Gibbs-sampler state.

        * ``heldout_loglik``: eq. 12 with ``predictive_samples`` draws per row,
          log of the average over draws of the density of the row's held-out
          entries, summed over rows and divided by the number of held-out
          entries (nats per held-out entry, standardised scale);
        * ``mse``: squared error of the predictive mean (average of the draws)
          over held-out entries, in the data's original units (the dataset's
          ``meta["scale"]``, the standardisation's sd; 1 if absent) — the paper's
          synthetic MSEs (0.02 with noise variance 0.01) are on that scale;
        * ``draw_mse``: the expected squared error of a *draw* ŷ from the eq. 12
          predictive, (1/M) Σ_m [(y − μ⁽ᵐ⁾)² + 1/γ_obs⁽ᵐ⁾], same units — the
          mean's error plus the predictive variance.  Our reading of §5.1's
          "predictive MSE": its values (Gibbs sampler 0.020, the others 0.022 and
          0.027, noise variance 0.01) sit near twice the noise variance, where a
          good fit's draws land, while a good fit's predictive mean lands just
          above the noise variance;
        * ``psnr`` (image data): 20 log10(255/rmse) of the reconstructed image —
          every patch's predictive mean mapped back to 0–255, overlapping
          patches averaged, clipped to [0, 255] — against the clean image, all
          pixels (the usual image-restoration meaning);
        * ``psnr_fit`` (image data): the same reconstruction against the
          *observed* pixel values (noisy, for denoising), on the observed pixels
          only — our reading of the paper's Table 1 (§5.2 does not say which
          pixels; its 34–47 dB with 80% missing, and rmse < σ = 15 in denoising,
          are only attainable on the pixels the model was fitted to);
        * ``elbo``: only for mean-field locals given E_q[β] (MF-SVI, VMP, or BBVI's
          fitted mean-field locals): the full ELBO with every row's mean-field locals re-optimised
          given the current λ (eq. 9 with constants) minus Σ KL(q(β) ‖ p(β)); the
          locals' kinds that report it are ``elbo`` in ``models.bpfa.local.FACTOR_KINDS``;
        * with ``eval_patches = "windows"`` each is estimated on the patches covering the windows (the ELBO's local
          part scaled to all N rows; the PSNRs on the windows' pixels, each reconstructed from all its patches as in
          the whole image, so they estimate the whole image's without bias): ``psnr_whole`` and ``psnr_fit_whole``
          come at the last checkpoint from :meth:`evaluate_final`.
        """
        return with_whole(self._measure(posterior, rng, self.eval_subset), WHOLE, self.eval_subset)

    def evaluate_final(self, posterior: ConjugatePosterior | ChainState, rng: np.random.Generator) -> dict[str, float]:
        """With an evaluation subset (``eval_patches = "windows"``, ``eval_rows``): the ``*_whole`` metrics, those of
        :meth:`evaluate` on every row (every pixel), at the run's last checkpoint (the checkpoints estimated them on
        the subset)."""
        return {} if self.eval_subset is None else whole_metrics(self._measure(posterior, rng, None), WHOLE)

    def final_evaluation_ratio(self) -> float:
        """N / (the patches covering the windows): evaluation is linear in the rows evaluated, in chunks of the same
        size."""
        return 0.0 if self.eval_subset is None else self.Y.shape[0] / self.eval_subset.size

    @classmethod
    def data_refusal(cls, data: Dataset, params: dict) -> str:
        """An ``eval_rows`` on image data, or not a subset of the rows."""
        rows = params.get("eval_rows", 0)
        if rows and "image" in data.test:
            return "eval_rows is for factor data; on an image use eval_patches = 'windows'"
        return subset_refusal(rows, np.shape(data.train["Y"])[0], "eval_rows", "rows") if rows else ""

    def _evaluation_subset(self, eval_patches: str, grid: int, side: int, rows: int,
                           seed: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(rows evaluated at the checkpoints, pixels scored) from the evaluation parameters; (None, None) for all."""
        why = self.data_refusal(self.data, {"eval_rows": rows})
        if why:
            raise ValueError(f"bpfa: {why}")
        if rows:
            return draw_subset(rows, self.Y.shape[0], seed, "eval_rows", "rows"), None
        if eval_patches == "windows":
            return windows(self.data.test["image"].shape, self.data.meta["patch"], grid, side, np.random.default_rng(seed))
        return None, None

    def _measure(self, posterior: ConjugatePosterior | ChainState, rng: np.random.Generator,
                 subset: np.ndarray | None) -> dict[str, float]:
        """:meth:`evaluate`'s metrics on the patches ``subset`` (None: all); on a subset of n of the N rows the ELBO's
        local part is scaled by N/n."""
        test = self.data.test
        T = np.asarray(test["mask"], dtype=float)
        truth = np.asarray(test["Y"], dtype=float)
        image = "image" in test
        recon = np.zeros((self.Y.shape[0] if subset is None else len(subset), self.Y.shape[1])) if image else None
        scale = np.broadcast_to(np.asarray(self.data.meta.get("scale", 1.0), dtype=float), (self.Y.shape[1],))
        ll = se = se_draw = elbo = 0.0
        n_test, done = 0.0, 0
        for rows, means, gammas, local in evaluation.predictive_chunks(posterior, self.Y, self.M, self.predictive_samples,
                                                                      rng, self.eval_chunk, subset):
            row_ll, row_se, row_se_draw, mean = evaluation.heldout_metrics(means, gammas, truth[rows], T[rows], scale)
            ll, se, se_draw, elbo = ll + row_ll, se + row_se, se_draw + row_se_draw, elbo + local
            n_test += T[rows].sum()
            if image:
                recon[done:done + len(rows)] = mean
            done += len(rows)
        n_test = max(n_test, 1.0)
        out = {"heldout_loglik": ll / n_test, "mse": se / n_test, "draw_mse": se_draw / n_test}
        if not isinstance(posterior, ChainState) and np.isfinite(elbo):
            local = elbo if subset is None else elbo * self.Y.shape[0] / done
            out["elbo"] = local - self.global_kl(posterior.lam)
        if image:
            shape, Y, M = test["image"].shape, self.Y, self.M
            if subset is not None:
                Y, M = Y[subset], M[subset]
            pixels = None if subset is None else self.eval_pixels
            out["psnr"] = psnr(recon, self.data.meta, np.asarray(test["image"], dtype=float), subset, pixels)
            out["psnr_fit"] = psnr_fit(recon, Y, M, self.data.meta, shape, subset, pixels)
        return out


#: The metrics a checkpoint estimates on an evaluation subset and the last checkpoint measures on every row (``_whole``).
WHOLE = ("heldout_loglik", "mse", "draw_mse", "psnr", "psnr_fit")


def reconstruct(patch_means: np.ndarray, meta: dict, shape: tuple[int, int], rows: np.ndarray | None = None) -> np.ndarray:
    """The image (0–255) from standardised patch predictions (of the patches ``rows``; None: all): back to 0–255
    with the dataset's ``offset`` and ``scale``, overlapping patches averaged, clipped."""
    image = assemble_patches(patch_means * meta["scale"] + meta["offset"], shape, meta["patch"], rows)
    return np.clip(image, 0.0, 255.0)


def _psnr(error: np.ndarray) -> float:
    return float(20.0 * np.log10(255.0 / np.sqrt(np.mean(error**2))))


def psnr(patch_means: np.ndarray, meta: dict, clean: np.ndarray, rows: np.ndarray | None = None,
         pixels: np.ndarray | None = None) -> float:
    """PSNR = 20 log10(255 / rmse) (§5.2) of the image reconstructed from the patches ``rows`` (None: all) against the
    clean image, on the pixels marked by ``pixels`` (None: all)."""
    error = reconstruct(patch_means, meta, clean.shape, rows) - clean
    return _psnr(error if pixels is None else error[pixels])


def psnr_fit(patch_means: np.ndarray, Y: np.ndarray, M: np.ndarray, meta: dict, shape: tuple[int, int],
             rows: np.ndarray | None = None, pixels: np.ndarray | None = None) -> float:
    """PSNR (§5.2) of the reconstructed image against the observed pixel values, on observed pixels only (of those
    marked by ``pixels``; None: all).

    ``Y``, ``M`` are the standardised training patches ``rows`` (None: all) and their masks; a pixel is
    observed if any patch covering it observes it (then all do, with the same value).
    """
    seen = assemble_patches(M, shape, meta["patch"], rows)
    total = assemble_patches(M * (Y * meta["scale"] + meta["offset"]), shape, meta["patch"], rows)
    on = seen > 0 if pixels is None else (seen > 0) & pixels
    return _psnr(reconstruct(patch_means, meta, shape, rows)[on] - total[on] / seen[on])
