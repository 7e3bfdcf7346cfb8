"""Latent Dirichlet allocation (Blei, Ng & Jordan 2003), the model SVI was made on.

β_k ~ Dir(η) over V words (k = 1..K), θ_d ~ Dir(α), z_dn ~ Cat(θ_d),
w_dn ~ Cat(β_{z_dn}).  A document is a data point: its locals are θ_d and
z_d·; the globals are the topics, q(β_k) = Dir(λ_k) (Hoffman, Blei, Wang &
Paisley 2013, §4; Hoffman, Blei & Bach 2010).  Symmetric scalar α and η.

Capabilities
------------
* **Conditionally conjugate** (the SVI family, VMP; CVI-MF and NC-VMP through
  ``svibench.capabilities.adapters``).  Global λ as a ``DirichletNatural`` (K, V);
  the statistics of a minibatch are Σ_d n_dv φ_dvk.  Local kinds:
  ``mf`` — the per-document coordinate ascent of Hoffman et al. (2010, Alg. 2),
  with their ``meanchangethresh`` as ``inner_tol``; ``gibbs`` — Mimno, Hoffman &
  Blei (2012)'s collapsed sweep over z_d with θ_d integrated out, counts averaged
  after burn-in (Mimno-SVI in the expected view, Gibbs-SSVI in the sampled one).
  The expected view is exp(E[log β]), the sampled one a draw β ~ q(β).
* **Sparse global step** (``svibench.capabilities.sparse``): for Mimno-SVI, λ kept lazily as
  λ = s·μ + c (Mimno, Hoffman & Blei 2012, §3), the locals reading exp(E[log β]) of the
  minibatch's word types only and returning the sampled (topic, word) counts (``sparse``).
* **Conditional sampler**: Griffiths & Steyvers (2004)'s collapsed Gibbs sampler
  (``algorithms.gibbs``), the reference.
* **Sampled reference posterior** (``svibench reference``): draws of the topics given the chain's z, binned onto
  the corpus's most frequent words (``alignment``), relabelled to one pivot (label switching); q's topics are
  relabelled to the reference's before they are compared.
* **Log joint** with z summed out, on normalised-Gamma coordinates (``joint``), for
  BBVI and ADAM.

Metrics (``evaluation``)
-------
perplexity, heldout_loglik
    Held-out perplexity by document completion and its log (per held-out token).
perplexity_vs_truth
    perplexity / the true topics' perplexity under the same estimator (synthetic data).
elbo, elbo_per_word
    The ELBO (with every document's locals fitted by ``mf``), total and per training token;
    for a Gamma q of BBVI, a Monte-Carlo estimate of its own bound on the same log p(w).
    With ``eval_docs``, estimated at every checkpoint from a seeded subset of the training
    documents (their terms scaled by D/|subset|), and measured on every document at the last
    checkpoint as ``elbo_whole`` and ``elbo_per_word_whole`` (:mod:`svibench.evaluation_subset`):
    fitting every document's locals is most of an evaluation.
"""
from __future__ import annotations

from functools import cached_property
from typing import ClassVar

import numpy as np
import scipy.sparse
from scipy.special import digamma

from svibench.capabilities.conjugate import ConjugatePosterior, Globals, LocalApprox
from svibench.capabilities.latent_gaussian import GaussianPosterior
from svibench.capabilities.mean_field import Blocks
from svibench.capabilities.sparse import LazyGlobal, SparseStatistics
from svibench.data import Dataset
from svibench.datasets.bow import validate_counts
from svibench.evaluation_subset import draw_subset, subset_refusal, whole_declarations, whole_metrics, with_whole
from svibench.expfam import DirichletNatural, GammaNatural
from svibench.metrics import Metric, metric_table
from svibench.model import IncompatibleData, Model

from ..gamma_family import MeanFieldGamma
from . import joint, kernels
from .alignment import align_draws, dirichlet_summary, dirichlet_summary_draw, match, summary_words, topics_off
from .corpus import Chain, Corpus
from .evaluation import completion_loglik, elbo, fit_documents
from .sparse import gibbs_counts, sparse_gibbs_statistics

__all__ = ["LDA"]


class LDA(Model):
    """Latent Dirichlet allocation.

    Parameters
    ----------
    data : Dataset of kind ``"bag-of-words"``: train ``counts`` (D, V) CSR; test ``observed`` and
        ``heldout`` (the two halves of the held-out documents); ``meta["topics"]`` the true β, if known.
    n_topics : int
        K.
    alpha, eta : float, optional
        Dirichlet parameters of θ_d and β_k (default 1/K each, as Hoffman et al. 2010 and scikit-learn).
    eval_iterations, eval_tol : int, float
        Coordinate ascent of the locals when evaluating (the ELBO's and the completion's θ).
    eval_samples : int
        Draws for the Monte-Carlo metrics of a Gamma q (BBVI).
    eval_docs : int ≥ 0
        The training documents the ELBO is estimated on at every checkpoint, a seeded random subset of that many
        (0: every one), with every one at the last checkpoint (``elbo_whole``, ``elbo_per_word_whole``).
    eval_seed : int
        Seed of that subset: one subset for every method, seed and checkpoint of a problem.
    """

    name = "lda"
    conformance_problem = {"dataset": "lda-synthetic",
                           "dataset_params": {"n_docs": 60, "n_test": 20, "vocab": 40, "n_topics": 3},
                           "model_params": {"n_topics": 3, "eval_samples": 5}, "steps": 20}
    data_kinds = ("bag-of-words",)
    metrics = metric_table(
        Metric("elbo", "higher", "objective", "nats",
               description="ELBO with every document's locals fitted by mf (a Monte-Carlo one for BBVI's Gamma q); no chain"),
        Metric("elbo_per_word", "higher", "objective", "nats per training token", description="elbo / training tokens"),
        Metric("perplexity", "lower", "task", "", low=1.0,
               description="held-out perplexity exp(−heldout_loglik) by document completion (Wallach et al. 2009)"),
        Metric("heldout_loglik", "higher", "task", "nats per held-out token", high=0.0,
               description="log-likelihood of the held-out halves given the observed halves, per held-out token"),
        Metric("perplexity_vs_truth", "lower", "diagnostic", "", low=0.0,
               description="perplexity / the true topics' perplexity under the same estimator (synthetic data; 1: as good)"),
    )
    metrics = {**metrics, **metric_table(*whole_declarations(metrics, ("elbo", "elbo_per_word"),
                                                             "every training document (eval_docs)"))}
    evaluation_params: ClassVar[tuple[str, ...]] = ("eval_docs", "eval_seed")
    row_params: ClassVar[tuple[str, ...]] = ("eval_docs",)
    #: Every posterior has it (a collapsed Gibbs chain has no ELBO); Hoffman et al.'s measure.
    answer = "perplexity"
    primary = ("elbo_per_word", "perplexity")
    posterior_types = (ConjugatePosterior, Chain, dict)
    local_kinds: ClassVar[tuple[str, ...]] = ("mf", "gibbs")
    init_methods: ClassVar[tuple[str, ...]] = ("random",)
    family_kinds: ClassVar[tuple[str, ...]] = ("meanfield",)

    def __init__(self, data: Dataset, *, n_topics: int = 20, alpha: float | None = None, eta: float | None = None,
                 eval_iterations: int = 100, eval_tol: float = 1e-4, eval_samples: int = 10, eval_docs: int = 0,
                 eval_seed: int = 0) -> None:
        super().__init__(data)
        if "counts" not in data.train:
            raise IncompatibleData(f"lda needs train['counts'] (a D x V count matrix); {data.name!r} has {sorted(data.train)}")
        if not (isinstance(n_topics, int) and n_topics >= 1):
            raise ValueError(f"lda: n_topics (K) must be a positive integer, got {n_topics!r}")
        self.K = n_topics
        self.alpha = 1.0 / n_topics if alpha is None else float(alpha)
        self.eta = 1.0 / n_topics if eta is None else float(eta)
        if self.alpha <= 0 or self.eta <= 0 or eval_iterations < 1 or eval_tol < 0 or eval_samples < 1:
            raise ValueError("lda: need alpha > 0, eta > 0, eval_iterations ≥ 1, eval_tol ≥ 0 and eval_samples ≥ 1")
        # A Dataset built outside the bag-of-words loaders is checked as theirs are (one line, naming the document).
        V = np.shape(data.train["counts"])[1]
        self.corpus = Corpus(validate_counts(f"lda on {data.name} (train counts)", data.train["counts"], V))
        self.V = self.corpus.V
        self.eval_iterations, self.eval_tol, self.eval_samples = eval_iterations, eval_tol, eval_samples
        self.heldout = (tuple(Corpus(validate_counts(f"lda on {data.name} (test {half})", data.test[half], V))
                              for half in ("observed", "heldout")) if "heldout" in data.test else None)
        self.elbo_subset = draw_subset(eval_docs, self.corpus.D, eval_seed, "eval_docs", "training documents")

    @classmethod
    def data_refusal(cls, data: Dataset, params: dict) -> str:
        """An ``eval_docs`` that is not a subset of the training documents."""
        size = params.get("eval_docs", 0)
        return subset_refusal(size, np.shape(data.train["counts"])[0], "eval_docs", "training documents") if size else ""

    @property
    def n_train(self) -> int:
        return self.corpus.D

    # -- capability: conditionally conjugate (the SVI family, VMP)
    def prior_natural(self) -> Globals:
        return {"topics": DirichletNatural.from_concentration(np.full((self.K, self.V), self.eta))}

    def init_globals(self, rng: np.random.Generator, method: str = "random") -> Globals:
        """λ_kv ~ Ga(100, 1/100), Hoffman et al. (2010)'s start (``onlineldavb.py``; scikit-learn's too)."""
        return {"topics": DirichletNatural.from_concentration(rng.gamma(100.0, 0.01, size=(self.K, self.V)))}

    def expected_view(self, lam: Globals) -> np.ndarray:
        """exp(E_q[log β_kv]) as (V, K)."""
        concentration = lam["topics"].concentration()
        elog = digamma(concentration) - digamma(concentration.sum(axis=1, keepdims=True))
        return np.ascontiguousarray(np.exp(elog).T)

    def sampled_view(self, lam: Globals, rng: np.random.Generator) -> np.ndarray:
        """One draw β ~ q(β) as (V, K)."""
        return np.ascontiguousarray(lam["topics"].sample(rng).T)

    def local_statistics(self, view: np.ndarray, batch: np.ndarray, approx: LocalApprox,
                         rng: np.random.Generator) -> Globals:
        """Σ_{d∈B} n_dv φ_dvk (``mf``) or Mimno's averaged topic–word counts (``gibbs``), as (K, V)."""
        if approx.kind == "gibbs":
            return {"topics": DirichletNatural(gibbs_counts(*self.corpus.arrays(batch), view, self.alpha, approx, rng).T)}
        if approx.kind != "mf":
            raise ValueError(f"lda offers local approximations {', '.join(self.local_kinds)}, not {approx.kind!r}")
        stats = np.zeros((self.V, self.K))
        fit_documents(self.corpus, view, self.alpha, approx.inner_iterations, approx.inner_tol, stats, batch)
        return {"topics": DirichletNatural(stats.T)}

    # -- capability: the sparse global step of Mimno et al. (2012) (svibench.capabilities.sparse, .sparse)
    sparse_local_kinds: ClassVar[tuple[str, ...]] = ("gibbs",)

    def lazy_globals(self, lam: Globals) -> LazyGlobal:
        """λ's concentrations (K, V), lazily: λ_kv = s·μ_kv + c, the prior's scalar η accumulating in c."""
        return LazyGlobal.from_dense(lam["topics"].concentration(), self.eta)

    def dense_globals(self, lazy: LazyGlobal) -> Globals:
        return {"topics": DirichletNatural.from_concentration(lazy.dense())}

    def sparse_statistics(self, lazy: LazyGlobal, batch: np.ndarray, approx: LocalApprox,
                          rng: np.random.Generator) -> SparseStatistics:
        """Mimno's counts n̂_kv of ``batch`` from exp(E[log β]) of its word types only (:func:`.sparse.sparse_gibbs_statistics`)."""
        return sparse_gibbs_statistics(self.corpus, lazy, self.alpha, batch, approx, rng)

    # -- capability: the collapsed Gibbs sampler (algorithms.gibbs)
    def chain_init(self, rng: np.random.Generator, method: str = "random") -> Chain:
        """Every token's topic uniform at random."""
        doc, word = self._tokens
        z = rng.integers(self.K, size=len(doc))
        ndk = np.zeros((self.corpus.D, self.K), dtype=np.int64)
        nwk = np.zeros((self.V, self.K), dtype=np.int64)
        np.add.at(ndk, (doc, z), 1)
        np.add.at(nwk, (word, z), 1)
        return Chain(z, ndk, nwk, nwk.sum(axis=0), rng)

    def chain_sweep(self, state: Chain, rng: np.random.Generator) -> Chain:
        doc, word = self._tokens
        kernels.collapsed_sweep(doc, word, state.z, state.ndk, state.nwk, state.nk, self.alpha, self.eta,
                              rng.random(len(doc)))
        return state

    @cached_property
    def _tokens(self) -> tuple[np.ndarray, np.ndarray]:
        return self.corpus.tokens()

    # -- capability: a sampled reference posterior (svibench.reference; the summary and its alignment: .alignment)
    sampler_name: ClassVar[str] = ("collapsed Gibbs (Griffiths & Steyvers 2004), a draw of the binned topics given z "
                                   "per kept sweep, relabelled to one pivot")
    #: M: the compared summary bins each topic onto the corpus's M most frequent words and the rest.
    reference_words: ClassVar[int] = 200

    @cached_property
    def _summary_words(self) -> np.ndarray:
        return summary_words(np.asarray(self.corpus.csr.sum(axis=0)).ravel(), self.reference_words)

    def chain_latent(self, state: Chain) -> np.ndarray:
        """A draw of the binned topics given z, flattened (K(M + 1),): β_k | z ~ Dir(n_k· + η) (Griffiths & Steyvers
        2004), from the chain's own Generator.  A draw, not the Rao–Blackwellised mean (n_kw + η) / (n_k + Vη):
        the spread of those means over z leaves out E[Var(β | z)] (law of total variance), so their sd would
        understate the posterior's."""
        return dirichlet_summary_draw(state.nwk.T + self.eta, self._summary_words, state.rng).ravel()

    def latent_moments(self, posterior: ConjugatePosterior | Chain | Blocks) -> GaussianPosterior:
        """Mean and variances (``cov`` as a vector: the diagonal) of the binned topics under ``posterior``."""
        mean, var = dirichlet_summary(self._topic_concentration(posterior), self._summary_words)
        return GaussianPosterior(mean.ravel(), var.ravel())

    def _topic_concentration(self, posterior: ConjugatePosterior | Chain | Blocks) -> np.ndarray:
        """The Dirichlet (K, V) of each topic: q's λ; a chain's β | z, Dir(n_k· + η) (the conditional at its current
        state, which leaves out the spread over z); for a Gamma q(h) (BBVI), β_k = h_k / Σ h_k is Dir(a_k) when
        a topic's rates are equal, otherwise approximated by the Dirichlet of mean E[h_k] / Σ E[h_k] and
        precision Σ_v a_kv."""
        if isinstance(posterior, ConjugatePosterior):
            return posterior.lam["topics"].concentration()
        if isinstance(posterior, Chain):
            return posterior.nwk.T + self.eta
        shape, rate = posterior["h"].shape_rate()
        mean = shape / rate
        return mean / mean.sum(axis=1, keepdims=True) * shape.sum(axis=1, keepdims=True)

    def align_draws(self, draws: np.ndarray) -> np.ndarray:
        """Every draw's topics relabelled to one pivot (:func:`.alignment.align_draws`); draws (S, K(M + 1))."""
        return align_draws(draws.reshape(len(draws), self.K, -1)).reshape(draws.shape)

    def align_to(self, q: GaussianPosterior, reference_mean: np.ndarray) -> GaussianPosterior:
        """q's topics relabelled to the reference's by Hungarian matching on Hellinger distance (:func:`.alignment.match`)."""
        perm, _ = match(q.mean.reshape(self.K, -1), reference_mean.reshape(self.K, -1))
        return GaussianPosterior(*(np.asarray(a).reshape(self.K, -1)[perm].ravel() for a in (q.mean, q.cov)))

    #: Read beside ``ref_mean_error``, which one topic in another mode dominates (:mod:`.alignment`).
    component_metrics: ClassVar = metric_table(
        Metric("ref_topics_off", "lower", "accuracy", "topics", low=0.0,
               description="topics of q farther (Hellinger, binned) from their matched reference topic than half the "
                           "distance between the two closest reference topics: merged, split or dead, not slightly off"))

    def component_accuracy(self, q: GaussianPosterior, reference_mean: np.ndarray) -> dict[str, float]:
        """``ref_topics_off`` of q, already relabelled to the reference (:func:`.alignment.topics_off`)."""
        return {"ref_topics_off": float(topics_off(q.mean.reshape(self.K, -1), reference_mean.reshape(self.K, -1)))}

    # -- capability: log joint with z summed out (BBVI, ADAM)
    def variational_family(self, kind: str = "meanfield") -> MeanFieldGamma:
        if kind not in self.family_kinds:
            raise ValueError(f"lda offers families {self.family_kinds}, not {kind!r}")
        return MeanFieldGamma({"g": (self.corpus.D, self.K), "h": (self.K, self.V)}, self._gamma_init)

    def _gamma_init(self, rng: np.random.Generator) -> dict[str, GammaNatural]:
        """q(g) at the prior's shape α, q(h) at λ/1 from :meth:`init_globals`'s draw (shape λ, rate 1)."""
        lam = self.init_globals(rng)["topics"].concentration()
        g_shape = np.full((self.corpus.D, self.K), max(self.alpha, 1.0))
        return {"g": GammaNatural.from_shape_rate(g_shape, np.ones_like(g_shape)),
                "h": GammaNatural.from_shape_rate(lam, np.ones_like(lam))}

    def _split(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n_g = self.corpus.D * self.K
        return z[:, :n_g].reshape(len(z), self.corpus.D, self.K), z[:, n_g:].reshape(len(z), self.K, self.V)

    def _documents(self, batch: np.ndarray | None) -> tuple[scipy.sparse.csr_matrix, np.ndarray, float]:
        """The counts of the documents whose likelihood enters (all, or the minibatch), their indices, and
        their weight (1, or D/|B|)."""
        if batch is None:
            return self.corpus.csr, np.arange(self.corpus.D), 1.0
        return self.corpus.csr[batch], np.asarray(batch), self.corpus.D / len(batch)

    def _doc_loglik(self, g: np.ndarray, h: np.ndarray, batch: np.ndarray | None) -> np.ndarray:
        """Weighted likelihood of every document (0 outside the minibatch), shape (S, D)."""
        counts, docs, weight = self._documents(batch)
        out = np.zeros(g.shape[:2])
        out[:, docs] = weight * joint.doc_loglik(counts, g[:, docs], h)
        return out

    def log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        g, h = self._split(z)
        prior = joint.gamma_prior(g, self.alpha).sum((1, 2)) + joint.gamma_prior(h, self.eta).sum((1, 2))
        return self._doc_loglik(g, h, batch).sum(1) + prior

    def log_joint_blocks(self, z: np.ndarray, kind: str, batch: np.ndarray | None = None) -> np.ndarray:
        """Markov blanket of g_dk: its prior + document d's likelihood; of h_kv: its prior + the whole
        likelihood (β_k's normaliser couples every word)."""
        g, h = self._split(z)
        per_doc = self._doc_loglik(g, h, batch)
        blanket_g = per_doc[:, :, None] + joint.gamma_prior(g, self.alpha)
        blanket_h = per_doc.sum(1)[:, None, None] + joint.gamma_prior(h, self.eta)
        return np.concatenate([blanket_g.reshape(len(z), -1), blanket_h.reshape(len(z), -1)], axis=1)

    def grad_log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        g, h = self._split(z)
        counts, docs, weight = self._documents(batch)
        grad_docs, grad_h = joint.loglik_grad(counts, g[:, docs], h)
        grad_g = joint.gamma_prior_grad(g, self.alpha)
        grad_g[:, docs] += weight * grad_docs
        grad_h = weight * grad_h + joint.gamma_prior_grad(h, self.eta)
        return np.concatenate([grad_g.reshape(len(z), -1), grad_h.reshape(len(z), -1)], axis=1)

    # -- evaluation
    def evaluate(self, posterior: ConjugatePosterior | Chain | Blocks, rng: np.random.Generator) -> dict[str, float]:
        """Held-out metrics from the posterior's topics; the ELBO where the posterior has one (not a chain)."""
        if isinstance(posterior, Chain):
            return self.completion_metrics(posterior.topics(self.eta))
        bound, topics = self._bound(posterior, rng, self.elbo_subset)
        values = {**self._bounds(bound), **self.completion_metrics(topics)}
        return with_whole(values, ("elbo", "elbo_per_word"), self.elbo_subset)

    def evaluate_final(self, posterior: ConjugatePosterior | Chain | Blocks, rng: np.random.Generator) -> dict[str, float]:
        """With a subset of the documents at the checkpoints (``eval_docs``): the ELBO on every document."""
        if self.elbo_subset is None or isinstance(posterior, Chain):
            return {}
        return whole_metrics(self._bounds(self._bound(posterior, rng, None)[0]), ("elbo", "elbo_per_word"))

    def final_evaluation_ratio(self) -> float:
        """D / ``eval_docs``: fitting the documents' locals, linear in the documents, is most of an evaluation."""
        return 0.0 if self.elbo_subset is None else self.corpus.D / self.elbo_subset.size

    def _bounds(self, bound: float) -> dict[str, float]:
        """The ELBO, total and per training token."""
        return {"elbo": bound, "elbo_per_word": bound / self.corpus.n_tokens}

    def _bound(self, posterior: ConjugatePosterior | Blocks, rng: np.random.Generator,
               batch: np.ndarray | None) -> tuple[float, np.ndarray]:
        """The ELBO (its estimate from the documents ``batch``; None: every one) and the topics (K, V)."""
        if isinstance(posterior, ConjugatePosterior):
            lam = posterior.lam["topics"].concentration()
            bound = elbo(self.corpus, lam, self.alpha, self.eta, self.eval_iterations, self.eval_tol, batch)
            return bound, lam / lam.sum(axis=1, keepdims=True)
        return self._gamma_bound(posterior, rng, batch)

    def _gamma_bound(self, q: Blocks, rng: np.random.Generator, batch: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """A Monte-Carlo ELBO of a Gamma q(g, h) (``eval_samples`` draws; the likelihood of the documents ``batch``
        scaled by D/|batch| when given, as :meth:`log_joint`) and its topics E_q[h_k / Σ h_k]."""
        family = self.variational_family()
        shapes, rates = zip(*(q[block].shape_rate() for block in ("g", "h")))
        phi = family.params(np.concatenate([a.ravel() for a in shapes]), np.concatenate([b.ravel() for b in rates]))
        z = family.sample(phi, rng, self.eval_samples)
        g, h = self._split(z)
        bound = float(np.mean(self.log_joint(z, batch)) + family.entropy(phi))
        return bound, np.mean(h / h.sum(axis=2, keepdims=True), axis=0)

    def completion_metrics(self, topics: np.ndarray) -> dict[str, float]:
        """The held-out metrics of a point estimate of the topics (K, V), by document completion (``evaluation``);
        also how other tools' topics can be scored."""
        if self.heldout is None:
            return {}
        loglik = self._completion(topics) / self.heldout[1].n_tokens
        out = {"heldout_loglik": loglik, "perplexity": float(np.exp(-loglik))}
        if self._truth_loglik is not None:
            out["perplexity_vs_truth"] = float(np.exp(self._truth_loglik - loglik))
        return out

    def _completion(self, topics: np.ndarray) -> float:
        return completion_loglik(topics, self.alpha, *self.heldout, self.eval_iterations, self.eval_tol)

    @cached_property
    def _truth_loglik(self) -> float | None:
        """The true topics' held-out log-likelihood per token under the same estimator (synthetic data)."""
        truth = self.data.meta.get("topics")
        if truth is None or self.heldout is None:
            return None
        return self._completion(np.asarray(truth)) / self.heldout[1].n_tokens
