"""Issue 52: the pieces of a legible first screen — at most six methods per headline panel, each told apart by
colour, dashes and marker; a reason several claims share read once; each verdict its own colour; the index says
which algorithm each study found first."""
import json

import pandas as pd

from svibench.report.figures import headline_styles
from svibench.report.glance import fold_shared
from svibench.report.html import VERDICT_CLASS
from svibench.report.index import DEFINITIONS, write_index
from svibench.report.rank import HEADLINE_METHODS, headline


def _rank(pools: dict[str, list[str]]) -> pd.DataFrame:
    rows = [{"pool": pool, "label": f"{m} (v{v})", "method": m} for pool, methods in pools.items()
            for m in methods for v in (1, 2)]
    return pd.DataFrame(rows)


def test_the_headline_keeps_the_best_variant_of_the_six_best_ranked_methods_per_panel():
    methods = [f"M{i}" for i in range(9)]
    chosen = headline(_rank({"a": methods, "b": methods[::-1]}))
    assert HEADLINE_METHODS == 6
    assert list(chosen["a"].values()) == methods[:6] and list(chosen["b"].values()) == methods[::-1][:6]
    assert all(label.endswith("(v1)") for labels in chosen.values() for label in labels)


def test_methods_sharing_a_panel_differ_in_colour_and_each_method_has_its_own_dashes_and_marker():
    chosen = headline(_rank({f"p{k}": [f"M{(k + i) % 14}" for i in range(6)] for k in range(6)}))
    colours, dashes, markers = headline_styles(chosen)
    for labels in chosen.values():
        assert len({colours[lb] for lb in labels}) == len(labels)
    styles = {(colours[lb], dashes[lb], markers[lb]) for lb in colours}
    methods = {m for labels in chosen.values() for m in labels.values()}
    assert len(styles) == len(methods) > 10  # more methods than tab10 has colours, still all told apart


def test_a_long_reason_several_claims_share_is_written_once():
    shared = "5 planned run(s) not ok: PG-exact on logreg/a1a (diverged)"
    reasons, notes = fold_shared([f"{shared}; sign test: 3 of n = 5 hold", shared, "too few units"])
    assert notes == [shared]
    assert reasons == ["[1]; sign test: 3 of n = 5 hold", "[1]", "too few units"]


def test_every_verdict_word_has_its_own_colour():
    assert set(VERDICT_CLASS) == set(DEFINITIONS)
    assert len(set(VERDICT_CLASS.values())) == len(VERDICT_CLASS)


def test_the_index_says_which_algorithm_each_study_found_first(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "study.toml").write_text('[study]\nname = "s"\n')
    best = {"target": "elbo within 0.1% of the best final value",
            "leaders": [{"problem": "gmm/synthetic", "algorithm": "VMP", "seconds": 0.0123},
                        {"problem": "gmm/other", "algorithm": "SVI", "seconds": None}]}
    (folder / "claims.json").write_text(json.dumps({"study": "s", "git_commit": "abc", "scale": "default",
                                                    "claims": [], "best": best}))
    html, md = write_index(tmp_path)
    line = ("First to elbo within 0.1% of the best final value (median CPU time): gmm/synthetic: VMP (0.0123 s); "
            "gmm/other: SVI (none reached it on most instances; best final value)")
    assert line in html.read_text() and line in md.read_text()
