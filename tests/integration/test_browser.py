"""Issue 52: the first screen of a report read in a real browser at 1280 px — the ranking first, then the claims,
then the headline figure; no sideways scrolling; the headline's smallest text at least 10 px high on screen.  Runs
the quickstart study and a six-problem study of nine methods (khan2017-logreg's shape: the headline's worst case),
in headless Chromium (Debian package `chromium`); skipped where none is installed."""
from pathlib import Path

import pytest

from svibench.executors import run_local
from svibench.report import write_report
from svibench.report.browser import FIRST_SCREEN, chromium, measure
from svibench.study import load_study
from svibench.sweep import run_study

pytestmark = pytest.mark.skipif(chromium() is None, reason="no Chromium on the PATH (apt-get install chromium)")

ROOT = Path(__file__).resolve().parents[2]
METHODS = ["svi", "vmp", "ncvmp", "cvi-mf", "mf-svi", "mf-ssvi", "gibbs-ssvi", "mimno-svi", "bbvi"]
WIDE = "".join(f"""
[[problem]]
name = "gmm/p{i}"
model = "gmm"
dataset = "gmm-synthetic"
model_params = {{ components = 3 }}
dataset_params = {{ n = 300, n_test = 100, components = 3, seed = {i} }}
""" for i in range(6)) + "".join(f'\n[[algorithm]]\nname = "{m}"\n' for m in METHODS)
CLAIM = ('\n[[claim]]\nid = "vmp-ahead"\nsource = "made up for the test"\nkind = "order"\nmetric = "elbo"\n'
         'better = ["VMP"]\nworse = ["SVI"]\n')


@pytest.fixture(scope="module", params=["quickstart", "wide"])
def page(request, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp(request.param)
    if request.param == "quickstart":
        study = ROOT / "reports" / "quickstart" / "study.toml"
    else:
        study = folder / "study.toml"
        study.write_text('[study]\nname = "wide"\nseeds = [0]\n\n[budget]\niterations = 30\ncheckpoints = 10\n'
                         + WIDE + CLAIM)
    run_study(load_study(study), folder / "results", run_local, progress=False)
    return write_report(folder / "results", folder / "report").html


@pytest.fixture(scope="module")
def seen(page) -> dict:
    return measure(page)


def test_the_page_does_not_scroll_sideways(seen):
    assert seen["window"] == FIRST_SCREEN[0] and seen["page"] <= seen["window"]


def test_the_headlines_smallest_text_is_at_least_10_px_on_screen(seen):
    assert seen["font"] is not None and seen["font"] >= 10, seen


def test_the_first_screen_is_the_ranking_then_the_claims_then_the_headline(seen):
    assert seen["ranking"] < FIRST_SCREEN[1]
    assert seen["ranking"] < seen["claims"] < seen["headline"], seen
