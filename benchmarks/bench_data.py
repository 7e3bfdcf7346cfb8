"""asv: loading the real data sets that must load in seconds (issue 29): covtype, the CVI paper's
Covtype-binary-scale built from UCI's 581,012-row covtype.data.gz (checksum, parse, min-max scaling,
the random halves).  time_ is CPU/wall seconds of one load, peakmem_ the process's peak resident memory."""
from __future__ import annotations

from svibench.data import data_dir
from svibench.datasets.libsvm import COVTYPE, covtype

from . import _problems  # noqa: F401  (sets SVIBENCH_DATA_DIR to the shared data folder)
from . import timer  # noqa: F401  (asv times on this: the process CPU clock, benchmarks/__init__.py)


class CovtypeLoad:
    """One load of covtype at the paper's size (290,506 training rows) and at the default scale's n_train."""

    params = [None, 29050]
    param_names = ["n_train"]
    timeout = 120

    def setup(self, n_train):
        if not (data_dir() / COVTYPE.path).exists():
            raise NotImplementedError("covtype/covtype.data.gz is not in the data directory")  # asv: skipped

    def time_covtype_load(self, n_train):
        covtype(split=0, n_train=n_train)

    def peakmem_covtype_load(self, n_train):
        covtype(split=0, n_train=n_train)
