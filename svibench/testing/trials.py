"""Short trial runs of an algorithm on a small problem, and exact comparison of their states."""
from __future__ import annotations

import dataclasses
import random
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

import numpy as np

from ..algorithm import Algorithm
from ..model import evaluate_posterior
from .subjects import CheckFailed, CheckSkipped, SmallProblem, Subject

__all__ = ["new_rng", "leaves", "differences", "data_arrays", "global_random_state", "Trial", "trial"]

#: numpy's constructor, captured so that the suite's own generators escape the spy of check_seed_matters.
new_rng = np.random.default_rng


def leaves(obj: Any, path: str = "", depth: int = 0, seen: set[int] | None = None) -> Iterator[tuple[str, Any]]:
    """(path, value) of every array/scalar inside nested dicts, sequences, dataclasses and objects."""
    seen = set() if seen is None else seen
    if isinstance(obj, (np.ndarray, np.generic, int, float, complex, str, bytes, bool)) or obj is None:
        yield path, obj
        return
    if id(obj) in seen or depth > 6:
        return
    seen.add(id(obj))
    if isinstance(obj, Mapping):
        items: Iterable[tuple[Any, Any]] = sorted(obj.items(), key=lambda kv: str(kv[0]))
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        items = ((f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj))
    elif hasattr(obj, "__dict__") and not callable(obj):
        items = sorted(vars(obj).items())
    else:
        return
    for key, value in items:
        yield from leaves(value, f"{path}[{key!r}]" if isinstance(obj, (Mapping, list, tuple)) else f"{path}.{key}", depth + 1, seen)


def differences(a: Any, b: Any) -> list[str]:
    """Where two nested values differ (arrays compared exactly, NaN equal to NaN)."""
    la, lb = dict(leaves(a)), dict(leaves(b))
    if la.keys() != lb.keys():
        return [f"structure differs: {sorted(la.keys() ^ lb.keys())[:3]}"]
    out = []
    for key, x in la.items():
        y = lb[key]
        if isinstance(x, (np.ndarray, np.generic, float, int, complex)) and not isinstance(x, bool):
            try:
                same = np.array_equal(np.asarray(x), np.asarray(y), equal_nan=np.asarray(x).dtype.kind in "fc")
            except TypeError:
                same = np.array_equal(np.asarray(x), np.asarray(y))
        else:
            same = x == y
        if not same:
            out.append(key or "value")
    return out


def data_arrays(model: Any) -> dict[str, np.ndarray]:
    data = model.data
    arrays = {f"data.train[{k!r}]": v for k, v in data.train.items() if isinstance(v, np.ndarray)}
    arrays.update({f"data.test[{k!r}]": v for k, v in data.test.items() if isinstance(v, np.ndarray)})
    return arrays


@contextmanager
def global_random_state(seed: int) -> Iterator[None]:
    """Seed numpy's and Python's global generators (an algorithm must not depend on them)."""
    np_state, py_state = np.random.get_state(), random.getstate()
    np.random.seed(seed)
    random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)


@dataclass
class Trial:
    """A short run: the algorithm after its steps, its model and rng, what each step touched, the metrics after init."""

    alg: Algorithm
    model: Any
    rng: np.random.Generator
    touched: list[int]
    first: dict[str, float]

    def metrics(self) -> dict[str, float]:
        return evaluate_posterior(self.model, self.alg.posterior(), new_rng(0))


def trial(subject: Subject, problem: SmallProblem, seed: int, steps: int, *,
          evaluate_each: bool = False, model: Any = None) -> Trial:
    """init + ``steps`` steps on a fresh model; errors name the model and the phase."""
    model = problem.build(subject.plugins) if model is None else model
    alg = subject.build()
    rng = new_rng(seed)
    phase = "check_params"
    try:
        alg.check_params()  # as the runner does before init
        phase = "init"
        alg.init(model, rng)
        phase = "evaluate after init"
        first = evaluate_posterior(model, alg.posterior(), new_rng(0))
        touched = []
        for t in range(1, steps + 1):
            phase = f"step {t}"
            touched.append(alg.step())
            if evaluate_each:
                phase = f"evaluate after step {t}"
                evaluate_posterior(model, alg.posterior(), new_rng(t))
    except (CheckFailed, CheckSkipped):
        raise
    except Exception as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        raise CheckFailed(
            f"on {problem.model} ({problem.dataset}), {phase} raised {type(exc).__name__}: {exc} "
            f"(at {frame.filename}:{frame.lineno})"
        ) from exc
    return Trial(alg, model, rng, touched, first)

