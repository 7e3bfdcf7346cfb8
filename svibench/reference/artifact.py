"""A reference posterior on disk: a compressed ``.npz`` of its arrays and a JSON sidecar of what it is.

``<folder>/<model>-<dataset>-<id>.npz`` holds the arrays (``mean``, ``sd``, ``cov``, ``quantiles``, their
Monte Carlo standard errors, the per-coordinate diagnostics, and the test-set predictive probabilities when the
model has them); ``<...>.json`` beside it records the problem's identity (:func:`problem_identity`, its
resolved model parameters, the SHA-256 of its data arrays), how the reference was computed (method, sampler
settings, seeds, time), its diagnostics and whether they passed the floor, the svibench commit, and the
SHA-256 of the ``.npz`` (a reference whose arrays do not match it is refused as corrupt).

``id`` hashes the problem's identity: :meth:`~svibench.spec.ProblemSpec.key` without the study's ``name`` for
the problem, since a posterior depends on the model, the data and their parameters, not on what a study calls
them (two studies that name one problem differently share its reference).
"""
from __future__ import annotations

import hashlib
import inspect
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse

from svibench.data import Dataset
from svibench.errors import UserError
from svibench.registry import RegistryError, get_registry
from svibench.spec import ProblemSpec, canonical_json

__all__ = ["Reference", "ReferenceError", "StaleReference", "FORMAT", "reference_dir", "problem_identity",
           "reference_id", "reference_path", "data_checksum", "posterior_params", "resolved_model_params", "load_reference",
           "check_fresh"]

#: Version of the on-disk format (bumped when its meaning changes).
FORMAT = 1


class ReferenceError(UserError, ValueError):
    """A reference that cannot be used or made (the message says why and how to fix it)."""


class StaleReference(ReferenceError):
    """A stored reference whose problem or data differ from the problem at hand."""


def reference_dir() -> Path:
    """Where references live: ``$SVIBENCH_REFERENCE_DIR``, else ``references/`` at the top of the repository."""
    env = os.environ.get("SVIBENCH_REFERENCE_DIR")
    return Path(env).expanduser() if env else Path(__file__).resolve().parents[2] / "references"


def posterior_params(model_cls: type | None, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` without the model's ``approximation_params`` and ``evaluation_params``, which leave its posterior
    as it is (:class:`svibench.model.Model`; a model the registry does not know, ``None``, keeps all)."""
    dropped = {*getattr(model_cls, "approximation_params", ()), *getattr(model_cls, "evaluation_params", ())}
    return {k: v for k, v in params.items() if k not in dropped}


def _posterior_params(model: str, params: dict[str, Any]) -> dict[str, Any]:
    try:
        model_cls = get_registry().model(model)
    except RegistryError:
        model_cls = None
    return posterior_params(model_cls, params)


def problem_identity(spec: ProblemSpec) -> dict[str, Any]:
    """What the posterior depends on: the problem's key fields without its name, and without the model parameters
    that only choose how algorithms approximate it or how a posterior is scored (:func:`posterior_params`)."""
    return {"model": spec.model, "dataset": spec.dataset, "model_params": _posterior_params(spec.model, spec.model_params),
            "dataset_params": spec.dataset_params}


def reference_id(spec: ProblemSpec) -> str:
    """16 hex digits of the SHA-1 of :func:`problem_identity` as canonical JSON."""
    return hashlib.sha1(canonical_json(problem_identity(spec)).encode()).hexdigest()[:16]


def reference_path(spec: ProblemSpec, folder: Path | None = None) -> Path:
    """The sidecar (``.json``) of ``spec``'s reference in ``folder`` (default :func:`reference_dir`)."""
    folder = reference_dir() if folder is None else Path(folder)
    return folder / f"{spec.model}-{spec.dataset}-{reference_id(spec)}.json"


def data_checksum(data: Dataset) -> str:
    """SHA-256 of the dataset's train and test arrays (names, dtypes, shapes and bytes; sparse ones as CSR)."""
    digest = hashlib.sha256()
    for split, arrays in (("train", data.train), ("test", data.test)):
        for name in sorted(arrays):
            value = arrays[name]
            if scipy.sparse.issparse(value):
                value = scipy.sparse.csr_matrix(value)
                parts = (value.data, value.indices, value.indptr)
            else:
                value = np.asarray(value)
                parts = (value,)
            digest.update(f"{split}/{name}/{value.shape}".encode())
            for part in parts:
                digest.update(f"{part.dtype.str}".encode())
                digest.update(np.ascontiguousarray(part).tobytes())
    return digest.hexdigest()


def resolved_model_params(model_cls: type, params: dict[str, Any]) -> dict[str, Any]:
    """The model's keyword parameters with their defaults filled in (a changed default makes a reference stale), but
    for those its posterior does not depend on (:func:`posterior_params`)."""
    defaults = {p.name: p.default for p in inspect.signature(model_cls.__init__).parameters.values()
                if p.kind == p.KEYWORD_ONLY and p.default is not p.empty}
    return json.loads(canonical_json(posterior_params(model_cls, {**defaults, **params})))


@dataclass
class Reference:
    """A reference posterior: its arrays and its sidecar (``meta``)."""

    arrays: dict[str, np.ndarray]
    meta: dict[str, Any]

    @property
    def mean(self) -> np.ndarray:
        return self.arrays["mean"]

    @property
    def cov(self) -> np.ndarray:
        """The covariance, or the vector of variances when only the diagonal is stored (a large latent)."""
        return self.arrays["cov"].astype(float) if "cov" in self.arrays else self.arrays["sd"].astype(float) ** 2

    @property
    def predictive(self) -> np.ndarray | None:
        """Test-set class probabilities under the reference's posterior predictive (None: the model has none)."""
        return self.arrays.get("predictive")

    @property
    def passed(self) -> bool:
        return bool(self.meta["diagnostics"]["passed"])

    def save(self, path: Path) -> Path:
        """Write ``path`` (the sidecar) and the ``.npz`` beside it; returns ``path``."""
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **self.arrays)
        blob = buffer.getvalue()
        npz = path.with_suffix(".npz")
        self.meta["arrays"] = {"file": npz.name, "sha256": hashlib.sha256(blob).hexdigest(),
                               "names": sorted(self.arrays)}
        path.parent.mkdir(parents=True, exist_ok=True)
        npz.write_bytes(blob)
        path.write_text(json.dumps(self.meta, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        return path


def load_reference(path: Path) -> Reference:
    """Read a sidecar and its arrays, checking the arrays' SHA-256 and the format."""
    meta = json.loads(Path(path).read_text())
    if meta.get("format") != FORMAT:
        raise ReferenceError(f"{path}: reference format {meta.get('format')!r}, this svibench reads {FORMAT}; "
                             "compute it again with `svibench reference ... --force`")
    npz = Path(path).with_name(meta["arrays"]["file"])
    blob = npz.read_bytes() if npz.exists() else b""
    if hashlib.sha256(blob).hexdigest() != meta["arrays"]["sha256"]:
        raise ReferenceError(f"{npz} is missing or corrupt (its SHA-256 differs from {path.name}'s); "
                             "compute the reference again with `svibench reference ... --force`")
    with np.load(io.BytesIO(blob)) as arrays:
        return Reference({name: arrays[name] for name in arrays.files}, meta)


def check_fresh(reference: Reference, spec: ProblemSpec, model_cls: type, data: Dataset) -> None:
    """Raise :class:`StaleReference` (one line, naming the mismatch) unless ``reference`` was computed for this
    problem: the same identity, resolved model parameters and data arrays."""
    meta, fix = reference.meta, "recompute it with `svibench reference STUDY.toml --problem NAME --force`"
    for what, stored, now in (("problem", meta["problem"], problem_identity(spec)),
                              ("model parameters", posterior_params(model_cls, meta["model_params_resolved"]),
                               resolved_model_params(model_cls, spec.model_params))):
        if canonical_json(stored) != canonical_json(now):
            raise StaleReference(f"stale reference for {spec.name}: its {what} {canonical_json(stored)} differ from "
                                 f"{canonical_json(now)}; {fix}")
    checksum = data_checksum(data)
    if meta["data_sha256"] != checksum:
        raise StaleReference(f"stale reference for {spec.name}: its data checksum {meta['data_sha256'][:12]}… "
                             f"differs from the data loaded now ({checksum[:12]}…); {fix}")
