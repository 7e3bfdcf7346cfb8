"""``svibench describe NAME``: what a study file may set for an algorithm, a model or a dataset.

Every parameter comes from the signature the study checker reads (:func:`svibench.registry.accepted_params`,
used by :mod:`svibench.study` too), so the two cannot drift: its type and default from the annotations, its
meaning and valid range from the ``Parameters`` section of the numpydoc docstring (the type line of
``damping : float in [0, 1)`` gives the range, which a study's values must keep: :meth:`Param.refusal`).  A
dataset's loader may leave a parameter that the loaders of its module share (a seed, a held-out fraction) to a
``Parameters`` section of the module's docstring, written once there.  A model adds its metrics
(``svibench.metrics``) and its capabilities; a dataset its files, their SHA-256 and whether they are in the data
directory, or, for a loader that takes a ``path``, that the data are the user's own file.
"""
from __future__ import annotations

import inspect
import re
import textwrap
from dataclasses import dataclass
from typing import Any, Callable

from . import capabilities
from .data import DatasetInfo, data_dir
from .metrics import check_declaration
from .registry import AlgorithmEntry, Registry, RegistryError, accepted_params

__all__ = ["Param", "describe", "describe_all", "algorithm_params", "model_params", "dataset_params"]

@dataclass(frozen=True)
class Param:
    """One parameter a study file may set."""

    name: str
    type: str
    default: Any
    meaning: str

    def refusal(self, value: Any) -> str:
        """Why a study may not give this parameter ``value`` (empty: it may): a meaning that says the parameter is
        "not possible in a study", or a value outside the declared type's range (``int ≥ 1``, ``float > 0``,
        ``float in (0.5, 1]``) or set (``{"mc", "exact"}``)."""
        if "not possible in a study" in self.meaning:
            return f"{self.name} cannot be set in a study: {self.meaning}"
        kind = re.sub(r",\s*optional$", "", self.type)
        bound = re.fullmatch(r"(int|float) (≥|>) (-?[\d.]+)", kind)
        span = re.fullmatch(r"(int|float) in ([\[(])(-?[\d.]+), (-?[\d.]+)([\])])", kind)
        choices = re.fullmatch(r"\{(.+)\}", kind)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if bound and number:
            low = float(bound.group(3))
            inside = value >= low if bound.group(2) == "≥" else value > low
        elif span and number:
            low, high = float(span.group(3)), float(span.group(4))
            inside = ((value >= low) if span.group(2) == "[" else (value > low)) and \
                     ((value <= high) if span.group(5) == "]" else (value < high))
        elif choices and isinstance(value, str):
            inside = value in re.findall(r'"([^"]*)"', choices.group(1))
        else:
            return ""
        return "" if inside else f"{self.name} = {value!r} is outside its declared range: {kind}"

    def line(self, shared_with: str = "") -> str:
        """The parameter's name, type and default, then its whole meaning, wrapped (``shared_with``: the first of the
        parameters listed with the same meaning, named instead of repeating it)."""
        default = "required" if self.default is inspect.Parameter.empty else f"default {self.default!r}"
        head = f"  {self.name:<22} {self.type:<28} {default:<24} "
        meaning = f"(as {shared_with})" if shared_with else (self.meaning or "(no description)")
        return "\n".join(textwrap.wrap(meaning, width=max(WIDTH, len(head) + 30), initial_indent=head,
                                        subsequent_indent=" " * 6, break_on_hyphens=False))


#: Width of a parameter's lines.
WIDTH = 118


def _lines(params: list[Param]) -> list[str]:
    """:meth:`Param.line` of each, a meaning shared with the parameters before it (``a, b : float``) written once,
    under the first of them."""
    lines, first = [], None
    for i, p in enumerate(params):
        first = first if i and p.meaning and p.meaning == params[i - 1].meaning else p
        lines.append(p.line(first.name if first is not p else ""))
    return lines


def _docstring_entries(doc: str) -> dict[str, tuple[str, str]]:
    """name → (type line, the whole description as plain text) from a numpydoc ``Parameters`` section (numpydoc's
    own parser; names listed together, ``a, b : float``, share one entry)."""
    from numpydoc.docscrape import NumpyDocString  # only `describe` needs it: not on every command's import path

    try:
        parameters = NumpyDocString(inspect.cleandoc(doc or ""))["Parameters"]
    except Exception:  # a docstring numpydoc cannot parse describes nothing rather than failing the command
        return {}
    return {name.strip(): (plain(p.type.strip()), plain(" ".join(line.strip() for line in p.desc)))
            for p in parameters for name in p.name.split(",")}


#: Sphinx roles (``:func:`~a.b.c```, ``:data:`X```) and literals (````x````) of a docstring.
_ROLE = re.compile(r":[a-z]+:`(~?)([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")


def plain(text: str) -> str:
    """``text`` with its reStructuredText markup read as a terminal shows it: a role's target (its last part when
    written ``~a.b.c``) and a literal's content, without the backticks."""
    text = _ROLE.sub(lambda m: m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2), text)
    return _LITERAL.sub(r"\1", text)


#: A parameter documented by reference to another class's entry ("As in :class:`SVI`.").
_AS_IN = re.compile(r"As in :class:`~?([\w.]+)`")


def _params(func: Callable, names: list[str], *docs: str) -> list[Param]:
    """``func``'s parameters ``names``, each from the first of ``docs`` whose ``Parameters`` section has it, an entry
    that only says "As in X." read from the later ones (:func:`_referenced_docs` puts X's there)."""
    signature, documented = inspect.signature(func).parameters, {}
    for doc in reversed(docs):
        documented.update({name: entry for name, entry in _docstring_entries(doc).items()
                           if name not in documented or not re.fullmatch(r"As in [\w.]+\.?", entry[1])})
    out = []
    for name in names:
        p = signature[name]
        kind, meaning = documented.get(name, ("", ""))
        annotation = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", "")
        out.append(Param(name, kind or (annotation if annotation != "_empty" else ""), p.default, meaning))
    return out


def _algorithm(entry: AlgorithmEntry, registry: Registry) -> list[str]:
    cls = entry.cls
    lines = [f"algorithm {entry.name}: {entry.label}  [{entry.source}]", f"  {(cls.__doc__ or '').strip().splitlines()[0]}"]
    if entry.fixed:
        lines.append(f"  a preset of {cls.name}: " + ", ".join(f"{k}={v!r}" for k, v in entry.fixed.items()))
    lines += ["Parameters ([[algorithm]] params):"] + _lines(algorithm_params(entry))
    reasons = {m: why for (a, m), why in registry.compatibility().items() if a == entry.name}
    runs_on = [m for m, why in reasons.items() if why is None]
    if runs_on:
        return lines + [f"Runs on models: {', '.join(runs_on)}"] + _enumerations(entry, registry, runs_on)
    why = "; ".join(dict.fromkeys(reasons.values())) or "no models"  # each distinct reason, e.g. a missing library
    return lines + [f"Runs on models: none ({why})"]


#: Parameters whose allowed values a model declares (class attribute), with the default's meaning.
MODEL_VALUES = {"init_method": ("init_methods", '"default": the first'), "local": ("local_kinds", ""),
                "family": ("family_kinds", "None: the first")}


def _enumerations(entry: AlgorithmEntry, registry: Registry, runs_on: list[str]) -> list[str]:
    """The values of the algorithm's parameters that take one of a set: the optimizers by name, and per model the
    values a model declares (:data:`MODEL_VALUES`)."""
    names = set(entry.param_names())
    lines = []
    if "optimizer" in names:
        from .numerics.optim import OPTIMIZERS

        lines.append(textwrap.fill(f"  optimizer: {', '.join(OPTIMIZERS)}", WIDTH, subsequent_indent="      "))
    for param, (attribute, default) in MODEL_VALUES.items():
        if param not in names:
            continue
        per_model = [f"{m}: {', '.join(getattr(registry.models[m][0], attribute))}" for m in runs_on
                     if getattr(registry.models[m][0], attribute, None)]
        if per_model:
            lines.append(textwrap.fill(f"  {param}{f' ({default})' if default else ''}: " + "; ".join(per_model), WIDTH,
                                       subsequent_indent="      "))
    return ["Allowed values:"] + lines if lines else []


def algorithm_params(entry: AlgorithmEntry) -> list[Param]:
    """What a study may set for an algorithm, as documented."""
    return _params(entry.cls.__init__, entry.param_names(), *_referenced_docs(entry.cls))


def model_params(cls: type) -> list[Param]:
    """What a study may set for a model (``model_params``), as documented."""
    return _params(cls.__init__, accepted_params(cls.__init__), cls.__doc__ or "", cls.__init__.__doc__ or "")


def dataset_params(info: DatasetInfo) -> list[Param]:
    """What a study may set for a dataset (``dataset_params``), as documented: the loader's own entries first, then
    its module's."""
    module = inspect.getmodule(info.loader)
    return _params(info.loader, accepted_params(info.loader), info.loader.__doc__ or "",
                   getattr(module, "__doc__", "") or "")


def _referenced_docs(cls: type) -> list[str]:
    """``cls``'s docstring, then those of the classes its entries refer to ("As in :class:`SVI`."), found in its
    module."""
    doc = cls.__doc__ or ""
    module = vars(inspect.getmodule(cls) or object())
    named = dict.fromkeys(_AS_IN.findall(doc))
    return [doc] + [getattr(module.get(name.rsplit(".", 1)[-1]), "__doc__", "") or "" for name in named]


def _model(cls: type, source: str) -> list[str]:
    lines = [f"model {cls.name}  [{source}]", f"  {(cls.__doc__ or '').strip().splitlines()[0]}",
             f"  data kinds: {', '.join(cls.data_kinds)}", "Parameters ([[problem]] model_params):"]
    lines += _lines(model_params(cls))
    lines.append(f"Metrics (answer: {getattr(cls, 'answer', '')}; * shown by default):")
    for m in check_declaration(cls).values():
        span = f"[{m.low:g}, {m.high:g}]"
        lines.append(f"{'*' if m.primary else ' '} {m.name:<22} {m.direction:<7} {m.kind:<10} {m.unit or '-':<26} {span:<12} "
                     f"{'' if m.rankable else '(not ranked) '}{m.description}")
    offered = [name for name in capabilities.__all__ if inspect.isclass(getattr(capabilities, name))
               and getattr(getattr(capabilities, name), "_is_protocol", False)
               and not capabilities.missing(getattr(capabilities, name), cls)]
    return lines + [f"Capabilities: {', '.join(offered) or '(none)'}"]


def _dataset(info: DatasetInfo, source: str) -> list[str]:
    lines = [f"dataset {info.name} (kind {info.kind})  [{source}]", f"  {info.description}",
             "Parameters ([[problem]] dataset_params):"]
    names = accepted_params(info.loader)
    lines += _lines(dataset_params(info))
    if not info.files and "path" in names:  # the user's own file (bow-file): nothing pinned, nothing generated
        checked = ", checked against sha256" if "sha256" in names else ""
        return lines + [f"Files: the file you give as path{checked} (see path above)"]
    lines.append(f"Files (data directory {data_dir()}):" if info.files else "Files: none (generated)")
    for f in info.files:
        here = "present" if (data_dir() / f.path).exists() else "absent"
        lines.append(f"  {f.path:<44} {here:<8} sha256 {f.sha256}\n      from {f.source}")
    return lines


def describe(name: str, registry: Registry) -> str:
    """Everything a study may set for ``name`` (an algorithm, a model or a dataset), as text."""
    key = name.lower()
    found = ([_algorithm(registry.algorithms[key], registry)] if key in registry.algorithms else []) + \
            ([_model(*registry.models[key])] if key in registry.models else []) + \
            ([_dataset(*registry.datasets[key])] if key in registry.datasets else [])
    if not found:
        raise RegistryError(f"no algorithm, model or dataset is called {name!r}; `svibench list` shows every name")
    return "\n\n".join("\n".join(block) for block in found)


def describe_all(registry: Registry) -> str:
    """Every algorithm, model and dataset, described (``svibench list --params``)."""
    names = [*sorted(registry.algorithms), *sorted(registry.models), *sorted(registry.datasets)]
    return "\n\n".join(describe(n, registry) for n in dict.fromkeys(names))
