"""The committed trajectories of the authors' code: checked on load, matched to the problems run on their split."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from svibench.authors_code import AuthorsError, load_trajectories, match_problems
from svibench.study import StudyError, load_study

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "references" / "authors" / "khan2017-logreg"


@pytest.fixture
def copy(tmp_path):
    shutil.copytree(FOLDER, tmp_path / "authors")
    return tmp_path / "authors"


def test_a_committed_file_loads_with_its_provenance_problem_and_methods():
    traj = load_trajectories(FOLDER, "australian")
    assert traj.provenance["repository"] == "emtiyaz/cvi" and len(traj.provenance["commit"]) == 40
    assert traj.problem["split"] == "paper" and traj.problem["n_train"] == 345
    pg, cvi = traj.methods["PG-exact"], traj.methods["CVI"]
    assert pg.deterministic and pg.at("neg_elbo_authors", pg.iterations).shape == (1,)
    assert not cvi.deterministic and len(cvi.seeds) == cvi.at("test_logloss_bits", 0).shape[0] >= 10
    with pytest.raises(AuthorsError, match="ran 10 iterations, not 11"):
        pg.at("neg_elbo_authors", 11)
    assert load_trajectories(FOLDER, "no-such-dataset") is None


def test_an_altered_file_is_an_error_not_a_silent_pass(copy):
    path = copy / "australian.json"
    path.write_text(path.read_text().replace("191.", "192.", 1))
    with pytest.raises(AuthorsError, match=r"australian.json has SHA-256 \w+, not the \w+ its manifest pins") as info:
        load_trajectories(copy, "australian")
    assert "\n" not in str(info.value)


def test_a_file_the_manifest_does_not_pin_and_a_folder_without_manifest_are_errors(copy):
    shutil.copy(copy / "australian.json", copy / "extra.json")
    with pytest.raises(AuthorsError, match="extra.json is not pinned in"):
        load_trajectories(copy, "extra")
    (copy / "manifest.toml").unlink()
    with pytest.raises(AuthorsError, match="has no manifest.toml pinning its trajectory files"):
        load_trajectories(copy, "australian")


def test_a_file_of_another_problem_is_an_error():
    traj = load_trajectories(FOLDER, "australian")
    with pytest.raises(AuthorsError, match=r"was run on another problem: delta = 1e-05 there, 1.0 here"):
        traj.check_problem(delta=1.0)
    traj.check_problem(dataset="australian", split="paper", delta=1e-5, n_train=345)


def test_problems_match_the_file_of_their_split_only():
    problems = [("p", "australian", {"delta": 1e-5}, {"split": "paper"}),
                ("r", "australian", {"delta": 1e-5}, {"split": 0}),
                ("o", "a1a", {"delta": 2.8072}, {})]
    assert set(match_problems(FOLDER, problems)) == {"p", "o"}
    with pytest.raises(AuthorsError, match="delta = 1e-05 there, 0.5 here"):
        match_problems(FOLDER, [("p", "australian", {"delta": 0.5}, {"split": "paper"})])


def test_the_logreg_study_matches_the_authors_files_at_the_paper_scale_only_for_its_paper_splits():
    study = ROOT / "reports" / "khan2017-logreg" / "study.toml"
    default, paper = load_study(study), load_study(study, scale="paper")
    assert set(default.authors) == {"logreg/a1a", "logreg/a7a"}  # the official files; the others' splits are ours
    assert set(paper.authors) == {"logreg/a1a", "logreg/a7a", "logreg/australian", "logreg/breast-cancer",
                                  "logreg/colon-cancer", "logreg/covtype"}


def test_a_study_whose_prior_differs_from_the_authors_file_is_refused_at_load(tmp_path):
    text = (ROOT / "reports" / "khan2017-logreg" / "study.toml").read_text()
    text = text.replace('authors = "../../references/authors/khan2017-logreg"', f'authors = "{FOLDER}"')
    text = text.replace("model_params = { delta = 1e-5 }", "model_params = { delta = 2e-5 }")
    (tmp_path / "study.toml").write_text(text)
    with pytest.raises(StudyError, match=r"^\[report\] authors: .*australian.json was run on another problem: "
                                         r"delta = 1e-05 there, 2e-05 here$"):
        load_study(tmp_path / "study.toml", scale="paper")
