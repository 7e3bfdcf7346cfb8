"""`svibench describe`: the parameters it prints are the ones the study checker accepts, for every built-in."""
from __future__ import annotations

import re

import pytest

from svibench.cli import main
from svibench.describe import describe, describe_all, plain
from svibench.registry import get_registry
from svibench.study import StudyError, parse_study

REGISTRY = get_registry()


def _printed(text: str, header: str) -> list[str]:
    """The parameter names under ``header`` in describe's output."""
    block = text.split(header, 1)[1].split("\n")[1:]
    names = []
    for line in block:
        if line.startswith(" " * 6):  # a meaning's wrapped continuation
            continue
        if not line.startswith("  ") or line.startswith("   "):
            break
        names.append(line.split()[0])
    return names


def _accepted(problem: dict, algorithm: dict, where: str) -> list[str]:
    """What the study checker accepts, read from its own error for a parameter no one has."""
    study = {"study": {"name": "t"}, "budget": {"iterations": 1}, "problem": [problem], "algorithm": [algorithm]}
    with pytest.raises(StudyError) as info:
        parse_study(study)
    valid = re.search(r"has no parameter '__none'; valid: (.*)$", str(info.value))
    assert valid, (where, str(info.value))
    return [] if valid.group(1) == "(none)" else valid.group(1).split(", ")


def _pair(kind_of_model: str | None = None, dataset_kind: str | None = None) -> tuple[str, str]:
    for m, (cls, _) in sorted(REGISTRY.models.items()):
        for d, (info, _) in sorted(REGISTRY.datasets.items()):
            if info.kind in cls.data_kinds and m == (kind_of_model or m) and info.kind == (dataset_kind or info.kind):
                return m, d
    raise AssertionError("no compatible pair")


@pytest.mark.parametrize("name", sorted(REGISTRY.algorithms))
def test_an_algorithms_printed_parameters_are_those_the_checker_accepts(name):
    model, data = _pair()
    accepted = _accepted({"model": model, "dataset": data}, {"name": name, "params": {"__none": 1}}, name)
    assert _printed(describe(name, REGISTRY), "Parameters ([[algorithm]] params):") == accepted


@pytest.mark.parametrize("name", sorted(REGISTRY.models))
def test_a_models_printed_parameters_are_those_the_checker_accepts(name):
    _, data = _pair(kind_of_model=name)
    accepted = _accepted({"model": name, "dataset": data, "model_params": {"__none": 1}}, {"name": "vmp"}, name)
    text = describe(name, REGISTRY)
    assert _printed(text, "Parameters ([[problem]] model_params):") == accepted
    for metric in REGISTRY.model(name).metrics:
        flag = "*" if metric in REGISTRY.model(name).primary else " "
        assert re.search(rf"^\{flag} {metric} ", text, re.M) if flag == "*" else re.search(rf"^  {metric} ", text, re.M)


@pytest.mark.parametrize("name", sorted(REGISTRY.datasets))
def test_a_datasets_printed_parameters_are_those_the_checker_accepts(name):
    model, _ = _pair(dataset_kind=REGISTRY.dataset(name).kind)
    accepted = _accepted({"model": model, "dataset": name, "dataset_params": {"__none": 1}}, {"name": "vmp"}, name)
    assert _printed(describe(name, REGISTRY), "Parameters ([[problem]] dataset_params):") == accepted


def test_a_dataset_lists_its_files_with_checksums_and_whether_they_are_here(tmp_path, monkeypatch):
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path))
    (tmp_path / "usps").mkdir()
    (tmp_path / "usps" / "usps_all.mat").write_bytes(b"")
    text = describe("usps-3v5", REGISTRY)
    assert re.search(r"usps/usps_all.mat +present +sha256 da2c8d6e8bd7", text)
    assert re.search(r"images/boat.png +absent +sha256 18bea4de1634", describe("image-patches", REGISTRY))
    assert "Files: none (generated)" in describe("gmm-synthetic", REGISTRY)


def test_a_model_lists_its_capabilities_and_an_unknown_name_is_one_line(capsys):
    assert main(["describe", "gmm"]) == 0
    assert "ConditionallyConjugate" in capsys.readouterr().out
    assert main(["describe", "nope"]) == 2
    assert capsys.readouterr().err == ("svibench: error: no algorithm, model or dataset is called 'nope'; "
                                       "`svibench list` shows every name\n")
    assert main(["list", "--params"]) == 0
    out = capsys.readouterr().out
    assert all(f"algorithm {a}:" in out for a in REGISTRY.algorithms) and "dataset a1a (kind" in out


def _own(source: str) -> bool:
    """Whether a registry source is svibench's own (a built-in, or a peer of svibench's distribution)."""
    return "svibench." in source


def test_every_built_in_parameter_says_what_it_means():
    """Issue 31: a newcomer writes a study from `svibench describe` alone, so no built-in parameter prints bare."""
    names = [n for n, entry in REGISTRY.algorithms.items() if _own(entry.source)] + \
            [n for table in (REGISTRY.models, REGISTRY.datasets) for n, (_, source) in table.items() if _own(source)]
    bare = [f"{name}: {line.split()[0]}" for name in sorted(set(names))
            for line in describe(name, REGISTRY).splitlines() if line.endswith("(no description)")]
    assert bare == [], "document these in the Parameters section of the docstring describe reads:\n" + "\n".join(bare)


def test_a_dataset_read_from_the_users_own_file_says_so_and_what_it_needs():
    text = describe("bow-file", REGISTRY)
    assert "Files: the file you give as path, checked against sha256" in text
    assert "none (generated)" not in text
    assert re.search(r"^  format .*uci.*svmlight.*ldac", text, re.M)  # not revealed by an error only


def test_a_parameter_that_the_loaders_of_a_module_share_is_documented_once_there_and_a_loader_may_say_more():
    line = {name: next(l for l in describe(name, REGISTRY).splitlines() if l.startswith("  seed "))
            for name in ("reuters", "bow-file", "lda-synthetic")}
    assert line["reuters"].split("default 0")[1] == line["bow-file"].split("default 0")[1]  # the module's entry
    assert "corpus" in line["lda-synthetic"] and "corpus" not in line["reuters"]  # the loader's own wins


def test_a_meaning_is_printed_whole_as_plain_text_and_a_shared_one_once():
    assert plain("Gradients with ``n_samples`` draws (:func:`~svibench.numerics.quadrature.expectation_rule`, "
                 ":data:`LOCALS`).") == "Gradients with n_samples draws (expectation_rule, LOCALS)."
    text = describe("cvi", REGISTRY)
    assert "…" not in text and "``" not in text and not re.search(r":[a-z]+:`", describe_all(REGISTRY))
    assert "with neither (w=None), Robbins–Monro" in " ".join(text.split())  # past the first sentence
    assert re.search(r"^  rho .*\(as w\)$", text, re.M)  # `w, rho : float`: the meaning once, under w
    vmp = describe("vmp", REGISTRY)  # its docstring says "As in :class:`SVI`.": SVI's entries, expanded
    assert "As in" not in vmp and "Cap on local coordinate-ascent sweeps" in vmp


def test_a_peer_without_its_library_says_why_it_runs_nowhere_in_describe_and_check(monkeypatch, capsys):
    """A default install (no [peers] extra): `describe` and `check` name the missing library, and `check` says how many
    checks it skipped rather than that all passed."""
    import svibench.peers

    monkeypatch.setattr(svibench.peers, "missing_libraries", lambda modules: list(modules))
    need = "needs sklearn: pip install 'svibench[peers]'"
    assert f"Runs on models: none ({need})" in describe("sklearn-bgmm", REGISTRY)
    assert main(["check", "sklearn-bgmm"]) == 0
    out = capsys.readouterr().out.splitlines()
    skips = [line for line in out if line.startswith("SKIP ")]
    assert skips and all(need in line for line in skips)
    assert out[-1] == f"all checks that ran passed (1 algorithm(s), {len(skips)} skipped (the reasons are above))"


def test_describe_lists_the_values_a_parameter_may_take(capsys):
    """Issue 52: the values of local, init_method, family and optimizer were only in error messages."""
    assert main(["describe", "svi"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "local: bpfa: mf, titsias, titsias-printed, gibbs;" in text
    assert 'init_method ("default": the first): bpfa: random, gibbs;' in text
    assert main(["describe", "bbvi"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "optimizer: sgd, adagrad, rmsprop, adam, adadelta" in text and "logreg: meanfield, full" in text
