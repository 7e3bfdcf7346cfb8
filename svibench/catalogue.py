"""What ``svibench list`` and ``svibench describe NAME`` print, kept on disk so that they answer at once.

Both texts come from the registry, and building it imports every algorithm, model and dataset module (numpy,
scipy, pandas and numba: about 1 CPU s), far more than printing them costs.  So the texts are cached in one JSON
file, under a fingerprint of everything they are built from:

- the Python interpreter, and :data:`~svibench.entry_points.ENTRY_POINTS_VAR`;
- the installed distributions (the names of the ``*.dist-info`` folders on ``sys.path``, and the modification
  time of each one's ``entry_points.txt``), so that installing, upgrading or removing anything rebuilds them;
- every ``.py`` file of svibench, of its built-in algorithm, model and dataset packages, and of each package an
  entry point names (path, size, modification time), so that editing a docstring of an editable install rebuilds
  them.

A registry with a source that failed to load is never cached (its error is printed fresh each time), nor is a
registry with ``--plugin`` files, nor a dataset's description (it depends on the data directory).  The cache is a folder that may be deleted at any time: ``$SVIBENCH_CACHE_DIR``,
else ``$XDG_CACHE_HOME/svibench-cli``, else ``~/.cache/svibench-cli``.  A cache that cannot be read or written is
ignored.  No library fits: the fingerprint is of this package's own inputs.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Callable

from .entry_points import ENTRY_POINTS_VAR, GROUPS, selected

__all__ = ["CACHE_VAR", "cache_dir", "cache_file", "store_json", "fingerprint", "list_text", "describe_text"]

#: Environment variable: the folder of the command line's cache.
CACHE_VAR = "SVIBENCH_CACHE_DIR"


def cache_dir() -> Path:
    """svibench's cache folder (module docstring), which the plan's probes share (:mod:`svibench.probe_cache`)."""
    folder = os.environ.get(CACHE_VAR)
    if not folder:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        folder = Path(base) / "svibench-cli"
    return Path(folder).expanduser()


def cache_file() -> Path:
    """The cache's JSON file (module docstring)."""
    return cache_dir() / "catalogue.json"


def _locations(name: str) -> list[Path]:
    """The folders of package ``name`` (or its module file), found without importing it (only its parents)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [Path(p) for p in spec.submodule_search_locations]
    return [Path(spec.origin)] if spec.origin else []


def _source_roots() -> list[Path]:
    """svibench's package folder, its built-in algorithm, model and dataset packages (which an editable install
    maps elsewhere), and the package of each selected entry point."""
    roots = [Path(__file__).resolve().parent]
    for group in GROUPS:
        roots += _locations(f"{__package__}.{group}")
        for ep in selected(f"{__package__}.{group}"):
            parts = ep.module.split(".")
            roots += _locations(".".join(parts[:-1]) if parts[0] == __package__ and len(parts) > 1 else parts[0])
    return list(dict.fromkeys(roots))


def _installed() -> list[str]:
    """The ``*.dist-info`` folders on ``sys.path``, each with the modification time of its entry points."""
    out = []
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                try:
                    stamp = os.stat(os.path.join(entry, name, "entry_points.txt")).st_mtime_ns
                except OSError:
                    stamp = 0
                out.append(f"{entry}/{name}:{stamp}")
    return out


def fingerprint(roots: list[Path] | None = None) -> str:
    """A hash of everything the texts are built from (module docstring); ``roots`` replaces the source folders."""
    h = hashlib.sha256()
    for part in (sys.version, sys.executable, os.environ.get(ENTRY_POINTS_VAR, "\0"), *_installed()):
        h.update(part.encode() + b"\n")
    for root in roots if roots is not None else _source_roots():
        files = sorted(root.rglob("*.py")) if root.is_dir() else [root]
        for path in files:
            try:
                stat = path.stat()
            except OSError:
                continue
            h.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _load(stamp: str) -> dict:
    try:
        cached = json.loads(cache_file().read_text())
    except (OSError, ValueError):
        return {}
    return cached if isinstance(cached, dict) and cached.get("fingerprint") == stamp else {}


def store_json(path: Path, obj: object) -> None:
    """Write ``obj`` as JSON to ``path`` in the cache atomically (so that processes writing at once do not collide);
    a cache that cannot be written is ignored."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(obj))
        os.replace(tmp, path)
    except OSError:
        pass


def _store(cached: dict) -> None:
    store_json(cache_file(), cached)


def _cached(key: tuple[str, ...], build: Callable[[], tuple[str, bool]], plugins: tuple[str, ...]) -> str:
    """The text under ``key``, built by ``build`` (text, whether it may be cached) when the cache lacks it."""
    if plugins:
        return build()[0]
    stamp = fingerprint()
    cached = _load(stamp)
    node = cached
    for part in key:
        node = node.get(part, {}) if isinstance(node, dict) else {}
    if isinstance(node, str):
        return node
    text, cacheable = build()
    if cacheable:
        cached = cached or {"fingerprint": stamp}
        node = cached
        for part in key[:-1]:
            node = node.setdefault(part, {})
        node[key[-1]] = text
        _store(cached)
    return text


def _registry(plugins: tuple[str, ...]):
    from .registry import get_registry

    return get_registry(plugins)


def list_text(plugins: tuple[str, ...] = ()) -> str:
    """The algorithms, models, datasets and compatibility matrix, as ``svibench list`` prints them (without the
    data directory, which depends on the environment)."""
    def build() -> tuple[str, bool]:
        reg = _registry(plugins)
        return _list_lines(reg), not reg.unavailable
    return _cached(("list",), build, plugins)


def describe_text(name: str, plugins: tuple[str, ...] = ()) -> str:
    """``svibench describe NAME``'s text.  An unknown name raises, and a dataset's text (which says which of its
    files the data directory holds) is built afresh each time."""
    def build() -> tuple[str, bool]:
        from .describe import describe

        reg = _registry(plugins)
        return describe(name, reg), not reg.unavailable and name not in reg.datasets
    return _cached(("describe", name), build, plugins)


def _list_lines(reg) -> str:
    name_width = max([len(a) for a in reg.algorithms] + [16])
    label_width = max([len(entry.label) for entry in reg.algorithms.values()] + [18])
    lines = ["Algorithms:"]
    for name, entry in sorted(reg.algorithms.items()):
        fixed = ", ".join(f"{k}={v}" for k, v in entry.fixed.items())
        lines.append(f"  {name:<{name_width}} {entry.label:<{label_width}} {fixed + '  ' if fixed else ''}[{entry.source}]")
    lines.append("Models:")
    for name, (cls, source) in sorted(reg.models.items()):
        lines.append(f"  {name:<16} data: {', '.join(cls.data_kinds):<16} metrics: {', '.join(cls.metrics)}  [{source}]")
    lines.append("Datasets:")
    for name, (info, source) in sorted(reg.datasets.items()):
        lines.append(f"  {name:<22} {info.kind:<15} {info.description}")
    matrix = reg.compatibility()
    models = sorted(reg.models)
    lines.append("Compatibility (algorithm × model; x = runs, . = skipped):")
    width = max([len(m) for m in models] + [3])
    lines.append("  " + " " * name_width + " ".join(f"{m:>{width}}" for m in models))
    for alg in sorted(reg.algorithms):
        lines.append(f"  {alg:<{name_width}}" + " ".join(f"{'x' if matrix[(alg, m)] is None else '.':>{width}}" for m in models))
    reasons = [(a, m, r) for (a, m), r in sorted(matrix.items()) if r is not None]
    if reasons:
        lines.append("Skipped pairs:")
        lines += [f"  {a} on {m}: {r}" for a, m, r in reasons]
    if reg.unavailable:
        lines.append("Unavailable (failed to load):")
        lines += [f"  {source}: {reason}" for source, reason in sorted(reg.unavailable.items())]
    return "\n".join(lines)
