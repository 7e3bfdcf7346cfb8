"""asv: peak memory of each study's largest problem at ``--scale paper``, built as a run builds it (issue 33).

``peakmem_build`` is the process's peak resident memory after loading the problem's dataset and binding its
model to it (:func:`svibench.problem.build_model`, as the runner does; no cache).  The problem is read from
the study file at its paper scale, so the benchmark follows the study.  ``setup`` only finds the problem and
checks that its files are present, and allocates nothing large: asv's peak is the process's high-water mark,
setup included.  The peak also includes the interpreter and the imported suite (about 190 MB), the same for
every commit.  Steps are not measured here (see ``bench_genomic`` and ``bench_registry``'s
``AlgorithmPeakMemory``).  Skipped where the data files are absent.
"""
from __future__ import annotations

from pathlib import Path

from svibench.data import data_dir
from svibench.problem import build_model
from svibench.registry import get_registry
from svibench.study import load_study

from . import _problems  # noqa: F401  (sets SVIBENCH_DATA_DIR to the shared data folder)

REPORTS = Path(__file__).resolve().parents[1] / "reports"

#: study → its largest problem at --scale paper, by the peak memory of building it (measured for issue 33).
#: The khan2017-gpc splits and the shah2015-images images and tasks are all the same size: the first is measured.
LARGEST = {
    "crossover": "logreg/a7a",
    "hoffman-lda": "lda/synthetic",
    "khan2017-gamma": "gamma-factor/cytof",
    "khan2017-gpc": "gpc/usps-3v5 (split=0)",
    "khan2017-logreg": "logreg/covtype",
    "khan2017-pmf": "pmf/mnist",
    "quickstart": "gmm/synthetic",
    "shah2015-burnin": "bpfa/synthetic",
    "shah2015-genomic": "bpfa/cytof-bcr-xl (seed=0)",
    "shah2015-images": "bpfa/inpainting (image=boat)",
    "shah2015-synthetic": "bpfa/synthetic",
}
#: studies whose largest problem is another study's (the same spec), measured once under that study (none now:
#: shah2015-burnin's bpfa/synthetic scores a subset of rows that -synthetic's does not).
SAME_AS: dict[str, str] = {}


def paper_problem(study: str, name: str | None = None):
    """The ProblemSpec ``name`` (default: :data:`LARGEST`'s for ``study``) as ``study``'s paper scale defines it."""
    name = name or LARGEST[study]
    runs = load_study(REPORTS / study / "study.toml", scale="paper").runs
    return next(run.problem for run in runs if run.problem.name == name)


class PaperProblemPeakMemory:
    """Load the data and build the model of each study's largest paper-scale problem."""

    params = [list(LARGEST)]
    param_names = ["study"]
    timeout = 600

    def setup(self, study):
        self.spec = paper_problem(study)
        absent = [f.path for f in get_registry().dataset(self.spec.dataset).files if not (data_dir() / f.path).exists()]
        if absent:
            raise NotImplementedError(f"{study}: {absent} not in the data directory")  # asv: skipped

    def peakmem_build(self, study):
        build_model(self.spec, cache=False)
