"""Malformed study files get a clean StudyError, never a traceback (property-based)."""
from __future__ import annotations

import copy
import tomllib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svibench.study import StudyError, parse_study

BASE = {
    "study": {"name": "fuzz", "seeds": [0, 1], "timeout": 30},
    "budget": {"iterations": 5, "checkpoints": 3, "spacing": "log"},
    "problem": [{"model": "gmm", "dataset": "gmm-synthetic", "model_params": {"components": 3},
                 "dataset_params": {"n": 100, "n_test": 20}}],
    "algorithm": [{"name": "svi", "label": "S", "method": "SVI", "params": {"batch_size": 10, "kappa": [0.6, 0.9]}}, {"name": "vmp"}],
    "scales": {"paper": {"seeds": [0, 1, 2], "dataset_params": {"n": 200}}},
    "paper": [{"problem": "gmm/gmm-synthetic", "algorithm": "VMP", "metric": "elbo", "value": -1.0}],
    "report": {"target": [{"metric": "elbo", "relative": 0.001}], "split_panels": False, "plot": ["elbo"]},
}

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6), st.floats(allow_nan=True), st.text(max_size=8))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=6)


def paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from paths(value, prefix + (key,))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from paths(value, prefix + (i,))


ALL_PATHS = [p for p in paths(BASE) if p]


def mutate(raw, path, value, delete):
    raw = copy.deepcopy(raw)
    *parents, last = path
    node = raw
    for key in parents:
        node = node[key]
    if delete and isinstance(node, dict):
        del node[last]
    else:
        node[last] = value
    return raw


def parses_cleanly(raw):
    try:
        parse_study(raw)
    except StudyError as exc:
        assert str(exc) and "\n" not in str(exc), repr(exc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(ALL_PATHS), value=values, delete=st.booleans())
def test_any_single_corruption_of_a_valid_study_gives_a_clean_error_or_a_study(path, value, delete):
    parses_cleanly(mutate(BASE, path, value, delete))


@settings(max_examples=100, deadline=None)
@given(extra=st.dictionaries(st.text(max_size=8), values, max_size=3),
       where=st.sampled_from([(), ("study",), ("budget",), ("problem", 0), ("algorithm", 0), ("report",),
                              ("report", "target", 0)]))
def test_unknown_keys_anywhere_give_a_clean_error(extra, where):
    raw = copy.deepcopy(BASE)
    node = raw
    for key in where:
        node = node[key]
    node.update(extra)
    parses_cleanly(raw)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("[]{}=\"',.# \n") + list("abcdeinmorstuy0123")), max_size=80))
def test_arbitrary_text_is_rejected_cleanly(text):
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return  # load_study turns this into a StudyError (tested in test_study.py)
    parses_cleanly(raw)
