"""Claims frozen with the results: a claim edited after its runs is shown as amended, with both versions.

The sweep stores, in the results' ``manifest.json``, every ``[[claim]]`` and
``[[target]]`` table of the study as it was run, with the SHA-256 of its
canonical JSON (:func:`frozen_claims`)::

    "claims": {"table3": {"sha256": "9f2c…", "table": {"id": "table3", "kind": "value", …}}, …}

A report compares them with the claims it renders (those saved with the
results, or those of ``svibench report --study FILE``): :func:`amendments`
lists every claim whose definition differs from the one the runs were made
for, including claims added since (no definition at run time).  A manifest
written before claims were frozen has no ``claims`` key: whether a claim was
edited after its runs is then unknown, and :func:`amendments` returns None.

``svibench regenerate`` runs every study afresh, so its claims are the ones
the runs were made for and never amended.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from ..spec import canonical_json

__all__ = ["claim_digest", "claim_tables", "frozen_claims", "amendments", "describe_change", "Amendments",
           "AMENDED", "UNKNOWN"]

#: The words shown beside the verdict of a claim edited after its runs.
AMENDED = "amended after the runs"
#: Said once when the results predate frozen claims.
UNKNOWN = ("These results were written before claims were frozen with the runs (an older svibench): whether a claim "
           "was edited after its runs is unknown.")
#: The study-file arrays that hold claim-shaped tables, each with an ``id``.
CLAIM_ARRAYS = ("claim", "target")
#: Claims edited after their runs, ``{id: (table at run time or None, table now)}``; None when the results predate
#: frozen claims (unknown).
Amendments = dict[str, tuple[dict[str, Any] | None, dict[str, Any]]] | None


def claim_digest(table: dict[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of one raw ``[[claim]]`` or ``[[target]]`` table."""
    return hashlib.sha256(canonical_json(table).encode()).hexdigest()


def claim_tables(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The raw ``[[claim]]`` then ``[[target]]`` tables of a parsed study file (tables without a string ``id``
    are left out: the study's own checks refuse them)."""
    return [table for key in CLAIM_ARRAYS for table in raw.get(key, [])
            if isinstance(table, dict) and isinstance(table.get("id"), str)]


def frozen_claims(raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What the manifest stores: ``{id: {"sha256": digest, "table": raw table}}`` for every claim and target."""
    return {table["id"]: {"sha256": claim_digest(table), "table": table} for table in claim_tables(raw)}


def amendments(manifest: dict[str, Any], current_tables: list[dict[str, Any]]) -> Amendments:
    """The claims of ``current_tables`` whose definition differs from the one frozen in ``manifest`` when the runs
    were made: ``{id: (table at run time, or None if the claim is new; table now)}``.

    Returns None when the manifest predates frozen claims (no ``claims`` key): unknown, not "unchanged".
    """
    frozen = manifest.get("claims")
    if not isinstance(frozen, dict):
        return None
    out = {}
    for table in current_tables:
        old = frozen.get(table["id"])
        if not isinstance(old, dict) or old.get("sha256") != claim_digest(table):
            out[table["id"]] = (old.get("table") if isinstance(old, dict) else None, table)
    return out


def describe_change(old: dict[str, Any] | None, new: dict[str, Any]) -> list[str]:
    """Both versions of an amended claim as paragraphs: every key that differs, at run time and now (the keys not
    named are the same in both)."""
    if old is None:
        return [f"Amended after the runs: this claim was added after them (the study they were run with has no "
                f"claim {new['id']!r}). Now: {_keys(new, sorted(new))}."]
    changed = sorted(key for key in set(old) | set(new) if old.get(key) != new.get(key))
    same = sorted(set(old) & set(new) - set(changed))
    return [f"Amended after the runs: {', '.join(changed)} changed"
            + (f" ({', '.join(same)} did not)." if same else "."),
            f"At run time: {_keys(old, changed)}.", f"Now: {_keys(new, changed)}."]


def _keys(table: dict[str, Any], keys: list[str]) -> str:
    """``key = value; …`` for ``keys`` of ``table`` (text quoted as written, other values as JSON; an absent key
    says so)."""
    def value(v: Any) -> str:
        return f'"{v.strip()}"' if isinstance(v, str) else json.dumps(v, ensure_ascii=False)

    return "; ".join(f"{key} = {value(table[key])}" if key in table else f"{key} absent" for key in keys)
