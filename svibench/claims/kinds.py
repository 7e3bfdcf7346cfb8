"""Each claim kind's paired units: one row per (problem, seed) saying whether the claim holds there, and why.

A unit row has: ``pool`` (the claim's problem it belongs to), ``problem``,
``seed``, ``holds`` (bool: a tie never holds), ``unconverged`` (a run of the
unit was still moving), ``number`` (the unit's measured gap, ratio or spread)
and ``detail`` (the same in words).  The variant of each method a claim names is
chosen once per pool, from every variant the study ran (or the claim's declared
ones): the one with the best median over the pool's held-out runs (its lowest
seed, or with one seed its first problem, :func:`held_out`; they are then not
units, so no unit judges the data its variant was chosen on), a diverged run
counting as the worst score, so that the better side is at its best and the
worse side is the strongest baseline.  With one unit there is nothing to hold
out: the choice is made on the judged unit and the verdict says so (declare
``variants``, e.g. the paper's settings, to avoid it).

A diverged run is judged: it fails the unit it is in (its side loses: a unit
holds when only the worse side diverged).  A unit is marked ``unconverged``
only when a still-moving run could change its answer: for an order or final
comparison, a run of the worse side of a unit that holds or of the better side
of one that fails; for an equivalence, a trend or a paper value, any of its
runs.  A faster or as-fast unit on CPU time is marked ``within_noise`` when its
ratio of times is within the timing noise (``Evidence.timing_noise``) of the ratio its answer turns on:
one making of a run cannot tell which side of it the runs are.
"""
from __future__ import annotations

import math
from statistics import median
from typing import Callable

import numpy as np

from .schema import Claim
from .evidence import JUDGED, Evidence

__all__ = ["units", "Chosen", "held_out", "CHOSEN_ON", "decimals_of", "prints", "passes_through"]

#: pool → method → the label chosen for it.
Chosen = dict[str, dict[str, str]]


def _choose(ev: Evidence, claim: Claim, problems: list[str], name: str, score: Callable[[int], float],
            on: Callable[[str, int], bool] | None = None) -> str:
    """The variant of ``name`` with the best (highest) median ``score`` over its judged runs on ``problems`` (only
    the held-out ones, ``on(problem, seed)``, when there are any); between equal scores (e.g. no variant reached a
    target), the best median final value of the claim's metric."""
    candidates = ev.labels(claim, name)
    final = _final_score(ev, claim)

    def median_of(label: str, of: Callable[[int], float]) -> float:
        rows = [int(r) for r in ev.runs.index[ev.runs["problem"].isin(problems) & (ev.runs["label"] == label)
                                              & ev.runs["status"].isin(JUDGED)]]
        if on is not None:
            rows = [r for r in rows if on(ev.runs.at[r, "problem"], int(ev.runs.at[r, "seed"]))]
        scores = [-math.inf if ev.diverged(r) else of(r) for r in rows]
        return median(scores) if scores else -math.inf
    return max(candidates, key=lambda label: (median_of(label, score), median_of(label, final), label))


#: The key of a pool's :data:`Chosen` entry that says which data its variants were chosen on.
CHOSEN_ON = "chosen on"


def held_out(ev: Evidence, claim: Claim, problems: list[str], names: tuple[str, ...]) -> tuple[str, Callable[[str, int], bool]]:
    """What a pool holds out to choose its variants on, so that no unit judges the data it was chosen on, as (words,
    ``is_held_out(problem, seed)``): its lowest seed when it has several, else its first problem (e.g. one random
    split of several) when it has several, when some method the claim names has more than one variant to choose
    from.  With one unit, or nothing to choose, nothing is held out (the words say which)."""
    if all(len(ev.labels(claim, n)) <= 1 for n in names):
        return "", lambda problem, seed: False
    labels = sorted({lb for n in names for lb in ev.labels(claim, n)})
    mine = ev.runs.loc[ev.runs["problem"].isin(problems) & ev.runs["label"].isin(labels)]
    seeds, where = sorted({int(s) for s in mine["seed"]}), sorted(set(mine["problem"]))
    if len(seeds) > 1:
        return f"seed {seeds[0]} (held out)", lambda problem, seed: seed == seeds[0]
    if len(where) > 1:
        return f"{where[0]} (held out)", lambda problem, seed: problem == where[0]
    return "the judged unit (nothing to hold out)", lambda problem, seed: False


def _final_score(ev: Evidence, claim: Claim) -> Callable[[int], float]:
    signed = ev.info[claim.metric].signed
    return lambda r: signed(ev.value_at(r, claim.metric, "final"))


def _reach_score(ev: Evidence, claim: Claim) -> Callable[[int], float]:
    threshold = _thresholds(ev, claim)
    axis = claim.axis
    return lambda r: -ev.reach(r, claim.metric, threshold[ev.runs.at[r, "problem"]], axis).high


def _thresholds(ev: Evidence, claim: Claim) -> dict[str, float]:
    """A faster or as-fast claim's target value per exact problem: from the best final value of the ok runs of the
    methods the claim names (every variant it may choose), never of a bystander."""
    target = ev.target(claim)
    lower = ev.info[claim.metric].lower
    labels = sorted({lb for name in claim.better + claim.worse + claim.methods for lb in ev.labels(claim, name)})
    return {p: target.threshold(ev.best_final(p, claim.metric, labels), lower) for p in set(ev.runs["problem"])}


def _unit(pool: str, problem: str, seed: int, holds: bool, number: float, detail: str,
          unconverged: bool = False, within_noise: bool = False) -> dict:
    return {"pool": pool, "problem": problem, "seed": seed, "holds": bool(holds), "number": float(number),
            "detail": detail, "unconverged": bool(unconverged), "within_noise": bool(within_noise)}


def _within_noise(ev: Evidence, claim: Claim, measured: float, bound: float) -> bool:
    """Whether a time-axis unit is decided by timing noise: its ``measured`` ratio of times lies within the timing
    noise (``Evidence.timing_noise``) of the ``bound`` its answer turns on, either side of it."""
    return claim.axis == "time" and bound / ev.timing_noise < measured <= bound * ev.timing_noise


def _paired(ev: Evidence, claim: Claim, names: tuple[str, ...], score) -> tuple[list[tuple], Chosen]:
    """(pool, problem, seed, {name: run}) for every unit on which every chosen variant ran (ok or diverged), and
    the choices.  A pool with variants to choose from chooses them on what it holds out (:func:`held_out`), which
    is then not a unit."""
    out, chosen = [], {}
    for pool, problems in ev.pools(claim).items():
        words, is_held_out = held_out(ev, claim, problems, names)
        on = is_held_out if words.endswith("(held out)") else None
        chosen[pool] = {name: _choose(ev, claim, problems, name, score, on) for name in names}
        for problem in problems:
            labels = list(chosen[pool].values())
            for seed in ev.seeds(problem, labels, judged=True):
                if not is_held_out(problem, seed):
                    out.append((pool, problem, seed, {n: ev.run(problem, lb, seed, judged=True)
                                                      for n, lb in chosen[pool].items()}))
        if words:
            chosen[pool][CHOSEN_ON] = words
    return out, chosen


def _moving(ev: Evidence, claim: Claim, runs) -> bool:
    """Whether any of ``runs`` (not diverged) was still moving on the claim's metric."""
    flags = ev.unconverged(claim.metric)
    return bool(any(flags[r] and not ev.diverged(r) for r in runs))


def _sides(ev: Evidence, claim: Claim, runs: dict[str, int]) -> tuple[list[str], list[str]]:
    """The diverged methods of the better and of the worse side of a unit."""
    return ([n for n in claim.better if ev.diverged(runs[n])], [n for n in claim.worse if ev.diverged(runs[n])])


def _could_flip(ev: Evidence, claim: Claim, runs: dict[str, int], holds: bool) -> bool:
    """Whether a still-moving run could change a comparison's answer: the worse side's when it holds, the better
    side's when it fails."""
    return _moving(ev, claim, [runs[n] for n in (claim.worse if holds else claim.better)])


def _diverged_text(failed: list[str]) -> str:
    return f"{', '.join(failed)} diverged"


def _order(ev: Evidence, claim: Claim) -> tuple[list[dict], Chosen]:
    """Worst better-method minus best worse-method, in the better direction, at the unit's common budget."""
    signed = ev.info[claim.metric].signed
    paired, chosen = _paired(ev, claim, claim.better + claim.worse, _final_score(ev, claim))
    rows = []
    for pool, problem, seed, runs in paired:
        better_failed, worse_failed = _sides(ev, claim, runs)
        if better_failed or worse_failed:
            holds = not better_failed
            rows.append(_unit(pool, problem, seed, holds, math.inf if holds else -math.inf,
                              _diverged_text(better_failed + worse_failed)))
            continue
        budget = min(ev.spent(r, claim.axis) for r in runs.values()) if claim.axis != "final" else math.inf
        value = {n: ev.value_at(r, claim.metric, claim.axis, budget) for n, r in runs.items()}
        b, w = min(signed(value[n]) for n in claim.better), max(signed(value[n]) for n in claim.worse)
        gap = b - w
        need = max(claim.margin, ev.tie(claim, b, w))
        at = "" if claim.axis == "final" else f" at {budget:.3g} {'s' if claim.axis == 'time' else 'epochs'}"
        rows.append(_unit(pool, problem, seed, gap > need, gap, f"gap {gap:+.4g} (needs > {need:.3g}){at}",
                          _could_flip(ev, claim, runs, gap > need)))
    return rows, chosen


def _allowed(claim: Claim, values: list[float]) -> float:
    """The spread an equivalence allows: the claim's absolute tolerance, or its relative one of the largest value."""
    return claim.absolute if claim.absolute is not None else claim.tolerance * max(map(abs, values))


def _ends(ev: Evidence, claim: Claim, runs: dict[str, int]) -> tuple[bool, str]:
    """A faster claim's condition on where the runs end (``final``): better, not worse, or equivalent final values."""
    if claim.final == "any":
        return True, ""
    better_failed, worse_failed = _sides(ev, claim, runs)
    if better_failed or worse_failed:
        ok = not better_failed and claim.final != "equivalent"
        return ok, f"; {_diverged_text(better_failed + worse_failed)}"
    signed = ev.info[claim.metric].signed
    value = {n: ev.value_at(r, claim.metric, "final") for n, r in runs.items()}
    b, w = min(signed(value[n]) for n in claim.better), max(signed(value[n]) for n in claim.worse)
    if claim.final == "equivalent":
        spread, allowed = abs(b - w), _allowed(claim, [b, w])
        return spread <= allowed, f"; final spread {spread:.4g} (≤ {allowed:.3g})"
    tie = ev.tie(claim, b, w)
    ok = b - w > tie if claim.final == "better" else b - w >= -tie
    return ok, f"; final gap {b - w:+.4g} ({'>' if claim.final == 'better' else '≥ −'}{tie:.3g})"


def _faster(ev: Evidence, claim: Claim) -> tuple[list[dict], Chosen]:
    """Better reaches the target at most 1/ratio of the time worse needs, at the checkpoints' resolution (and ends
    where ``final`` says)."""
    threshold = _thresholds(ev, claim)
    paired, chosen = _paired(ev, claim, claim.better + claim.worse, _reach_score(ev, claim))
    unit = "s" if claim.axis == "time" else "epochs"
    time_tie = claim.tie or 0.0  # a declared tie applies to times too: worse must need more than (1 + tie) × ratio
    rows = []
    for pool, problem, seed, runs in paired:
        reach = {n: ev.reach(r, claim.metric, threshold[problem], claim.axis) for n, r in runs.items()}
        slowest = max((reach[n] for n in claim.better), key=lambda x: x.high)
        fastest = min((reach[n] for n in claim.worse), key=lambda x: x.low)
        need = claim.ratio * slowest.high * (1 + time_tie)
        # a diverged better run fails the unit; a diverged worse one is read on its checkpoints before the blow-up
        timed = slowest.reached and not any(ev.diverged(runs[n]) for n in claim.better)
        sooner = timed and fastest.low >= need and fastest.high > need
        ends, said = _ends(ev, claim, runs)
        ratio = fastest.high / slowest.high if slowest.high > 0 else math.inf
        holds = sooner and ends
        # when the times decide it: is worse's time within the noise of better's × ratio?
        noisy = timed and ends and need > 0 and _within_noise(ev, claim, fastest.low / need, 1.0)
        rows.append(_unit(pool, problem, seed, holds, ratio,
                          f"better by {slowest.high:.3g} {unit}, worse "
                          + (f"by {fastest.high:.3g} {unit}" if fastest.reached else f"not in {fastest.low:.3g} {unit}")
                          + said, claim.final != "any" and _could_flip(ev, claim, runs, holds), noisy))
    return rows, chosen


def _as_fast(ev: Evidence, claim: Claim) -> tuple[list[dict], Chosen]:
    """Every method reaches the target, and the slowest needs at most ``ratio`` times the fastest's time: each
    time is the first checkpoint at the target (:meth:`Evidence.reach`'s ``high``), so every pair's ratio is
    within [1/ratio, ratio] at the checkpoints' resolution.  A method that never reaches it fails the unit."""
    threshold = _thresholds(ev, claim)
    paired, chosen = _paired(ev, claim, claim.methods, _reach_score(ev, claim))
    unit = "s" if claim.axis == "time" else "epochs"
    rows = []
    for pool, problem, seed, runs in paired:
        reach = {n: ev.reach(r, claim.metric, threshold[problem], claim.axis) for n, r in runs.items()}
        times = [x.high for x in reach.values()]
        spread = max(times) / min(times) if all(x.reached for x in reach.values()) and min(times) > 0 else math.inf
        said = ", ".join(f"{n} {x.high:.3g} {unit}" if x.reached else f"{n} not in {x.low:.3g} {unit}"
                         for n, x in reach.items())
        rows.append(_unit(pool, problem, seed, spread <= claim.ratio, spread,
                          f"{said}: ratio {spread:.3g} (allowed ≤ {claim.ratio:g})",
                          within_noise=_within_noise(ev, claim, spread, claim.ratio)))
    return rows, chosen


def _equivalent(ev: Evidence, claim: Claim) -> tuple[list[dict], Chosen]:
    """The spread of the methods' values at the unit's common budget is within the claim's tolerance."""
    paired, chosen = _paired(ev, claim, claim.methods, _final_score(ev, claim))
    rows = []
    for pool, problem, seed, runs in paired:
        failed = [n for n, r in runs.items() if ev.diverged(r)]
        if failed:
            rows.append(_unit(pool, problem, seed, False, math.inf, _diverged_text(failed)))
            continue
        budget = min(ev.spent(r, claim.axis) for r in runs.values()) if claim.axis != "final" else math.inf
        values = [ev.value_at(r, claim.metric, claim.axis, budget) for r in runs.values()]
        spread = max(values) - min(values)
        allowed = _allowed(claim, values)
        rows.append(_unit(pool, problem, seed, spread <= allowed, spread, f"spread {spread:.4g} (allowed ≤ {allowed:.3g})",
                          _moving(ev, claim, runs.values())))
    return rows, chosen


def _trend_steps(ev: Evidence, claim: Claim, runs: list[tuple[float, int]]) -> tuple[bool, float, str]:
    """Whether the values along the setting improve (or worsen) monotonically, with diminishing steps if asked."""
    sign = 1.0 if claim.shape == "improving" else -1.0
    signed = ev.info[claim.metric].signed
    settings = np.array([s for s, _ in runs])
    values = np.array([sign * signed(ev.value_at(r, claim.metric, "final")) for _, r in runs])
    steps = np.diff(values)
    tie = ev.tie(claim, float(np.max(np.abs(values))), 0.0)
    holds = bool(np.all(steps > -tie) and values[-1] - values[0] > tie)
    if claim.diminishing and steps.size > 1:
        slopes = steps / np.diff(settings)
        holds = holds and bool(np.all(np.diff(slopes) <= tie / np.diff(settings).min()))
    text = ", ".join(f"{s:g}: {v * sign:+.4g}" for s, v in zip(settings, values * sign))
    return holds, float(values[-1] - values[0]), text


def _trend(ev: Evidence, claim: Claim) -> tuple[list[dict], Chosen]:
    """Per unit, the method's variants ordered by their value of ``setting``."""
    labels = [lb for lb in ev.labels(claim, claim.methods[0])]
    setting = {}
    for lb in labels:
        variants = ev.runs.loc[ev.runs["label"] == lb, "variant"]
        setting[lb] = float(variants.iloc[0].get(claim.setting, math.nan)) if len(variants) else math.nan
    ordered = sorted((lb for lb in labels if math.isfinite(setting[lb])), key=setting.get)
    rows = []
    for pool, problems in ev.pools(claim).items():
        for problem in problems:
            for seed in ev.seeds(problem, ordered, judged=True):
                runs = [(setting[lb], ev.run(problem, lb, seed, judged=True)) for lb in ordered]
                failed = [lb for lb, (_, r) in zip(ordered, runs) if ev.diverged(r)]
                if failed:
                    rows.append(_unit(pool, problem, seed, False, math.nan, _diverged_text(failed)))
                    continue
                holds, change, text = _trend_steps(ev, claim, runs)
                rows.append(_unit(pool, problem, seed, holds, change, f"{claim.setting} → {claim.metric}: {text}",
                                  _moving(ev, claim, [r for _, r in runs])))
    return rows, {pool: {claim.methods[0]: ", ".join(ordered)} for pool in ev.pools(claim)}


def decimals_of(row: dict) -> int:
    """The decimals a [[paper]] number was printed with: its ``decimals``, else those of its shortest repr."""
    if "decimals" in row:
        return int(row["decimals"])
    text = repr(float(row["value"]))
    return 0 if text.endswith(".0") else len(text.split(".")[1]) if "." in text and "e" not in text else 0


def prints(value: float, published: float, decimals: int) -> bool:
    """Whether ``value`` prints as ``published`` with ``decimals`` decimals (it lies within half a unit of the last
    printed digit)."""
    return bool(np.isfinite(value)) and abs(value - published) <= 0.5 * 10.0 ** -decimals * (1 + 1e-9)


def passes_through(ev: Evidence, row: dict, problem: str, r: int, decimals: int) -> int | None:
    """The first iteration at which both the authors' code (any of its runs) and run ``r`` print the paper's number:
    the digits rule's second way to hold.  None when there is no such iteration or no trajectory of the authors'."""
    theirs = ev.authors.get(problem) or ev.authors.get(row["problem"])
    method = theirs.methods.get(row["algorithm"]) if theirs is not None else None
    if method is None or row["metric"] not in method.values:
        return None
    series = method.values[row["metric"]]
    for i in range(series.shape[1]):
        if any(prints(v, float(row["value"]), decimals) for v in series[:, i]) and \
                prints(ev.value_at_iteration(r, row["metric"], i), float(row["value"]), decimals):
            return i
    return None


def _value_units(ev: Evidence, claim: Claim, row: dict, pool: str, label: str) -> list[dict]:
    """One [[paper]] row against ``label``'s ok runs on the row's problem: its final value (or the value at the row's
    ``iteration``), or its paired difference to the row's ``versus`` label on the same (problem, seed).  The
    ``digits`` rule holds where the value prints the paper's number, or passes through it at an iteration where the
    authors' code does; the ``tolerance`` rule where it is within ``tolerance`` (relative)."""
    published, metric, versus = float(row["value"]), row["metric"], row.get("versus")
    moving, out = ev.unconverged(metric), []
    decimals = decimals_of(row)

    def read(r: int) -> float:
        return ev.value_at_iteration(r, metric, row["iteration"]) if "iteration" in row else ev.value_at(r, metric, "final")

    for problem in ev.pool(row["problem"]):
        for seed in ev.seeds(problem, [label] + ([versus] if versus else []), judged=True):
            runs = [ev.run(problem, label, seed, judged=True)] + ([ev.run(problem, versus, seed, judged=True)] if versus else [])
            failed = [ev.runs.at[r, "label"] for r in runs if ev.diverged(r)]
            if failed:
                out.append(_unit(pool, problem, seed, False, math.inf, _diverged_text(failed)))
                continue
            value = read(runs[0]) - (read(runs[1]) if versus else 0.0)
            rel = abs(value - published) / abs(published) if published else abs(value)
            change = f"({100 * (value - published) / abs(published or 1):+.2g}%)"
            if claim.rule == "digits":
                through = None if versus or prints(value, published, decimals) else passes_through(ev, row, problem, runs[0], decimals)
                holds = prints(value, published, decimals) or through is not None
                how = (f"prints {value:.{decimals}f}" if through is None else
                       f"{value:.{decimals}f}, but passes through {published:.{decimals}f} with the authors' code at "
                       f"iteration {through}")
                at = f" at iteration {row['iteration']}" if "iteration" in row else ""
                out.append(_unit(pool, problem, seed, holds, rel, f"{how}{at} vs {published:.{decimals}f} {change}",
                                 "iteration" not in row and any(moving[r] for r in runs)))
                continue
            out.append(_unit(pool, problem, seed, rel <= claim.tolerance, rel,
                             f"{value:.4g} vs {published:.4g} {change}", any(moving[r] for r in runs)))
    return out


def _value(ev: Evidence, claim: Claim) -> tuple[list[dict], Chosen]:
    """One unit per linked [[paper]] row (the paper's number is the unit, not our seeds or variants): it holds when
    more than half of its runs (every ok or diverged run of every variant of its algorithm on its problem) hold."""
    rows, chosen = [], {}
    for row in (r for r in ev.paper if r.get("claim") == claim.paper_id):
        row = {**row, "metric": claim.metric} if claim.reading_of else row  # a reading judges the row on its metric
        pool = f"{row['problem']} {row['algorithm']}" + (f" − {row['versus']}" if row.get("versus") else "") + f" {row['metric']}"
        labels = ev.labels(claim, row["algorithm"])
        chosen[pool] = {row["algorithm"]: ", ".join(labels)}
        runs = [u for label in labels for u in _value_units(ev, claim, row, pool, label)]
        if runs:
            rows.append(_row_unit(pool, runs))
    return rows, chosen


def _row_unit(pool: str, runs: list[dict]) -> dict:
    """A [[paper]] row's unit from its runs' checks: the majority decides; the median run (by its error) speaks."""
    held = sum(u["holds"] for u in runs)
    middle = sorted(runs, key=lambda u: (math.isnan(u["number"]), u["number"]))[(len(runs) - 1) // 2]
    return _unit(pool, middle["problem"], middle["seed"], 2 * held > len(runs), middle["number"],
                 f"{held}/{len(runs)} runs hold; median run: {middle['detail']}", any(u["unconverged"] for u in runs))


UNITS = {"order": _order, "faster": _faster, "as-fast": _as_fast, "equivalent": _equivalent,
         "trend": _trend, "value": _value}


def units(ev: Evidence, claim: Claim) -> tuple[list[dict], Chosen]:
    """The claim's paired units and the variants chosen per pool."""
    return UNITS[claim.kind](ev, claim)
