"""Run Khan & Lin's own MATLAB code (AISTATS 2017, CVI; logistic regression, Table 3) under GNU Octave.

Usage (CI does not run this; it needs GNU Octave with the ``statistics`` package, numpy and scipy)::

    python tools/authors_code/khan2017_logreg.py --checkout /path/to/emtiyaz-cvi \\
        --out references/authors/khan2017-logreg [--datasets a1a australian ...] [--seeds 10] \\
        (covtype: UCI's covtype.data.gz from svibench's data directory, SVIBENCH_DATA_DIR)

This file contains none of the authors' code: it drives a checkout of https://github.com/emtiyaz/cvi
(commit b800dc91a4391291202c2c7bc66dad94b6cc9b6b) from a temporary directory outside this repository,
and writes one JSON file per data set, ``<out>/<svibench dataset name>.json``.

What is run, per data set (``get_expt_params`` of ``log_reg_expt.m`` gives iterations and step sizes):

* once, the deterministic methods: CVI-exact (the CVI loop of ``log_reg_expt.m`` with the checkout's
  ``E_log_p('bernoulli_logit', ...)``, the piecewise bound, instead of ``E_log_p_mc``), PG-exact and
  Chol (``baseline_infer.m``);
* for Octave seeds s = 1..``--seeds``: the Monte-Carlo methods CVI, SnK-alg2 and SnK-FG, each after
  ``setSeed(s)`` (``log_reg_expt.m`` calls ``setSeed(1)`` before each method).

Each run is one ``octave-cli`` process (one at a time) executing a patched copy of ``log_reg_expt.m``.

The paper's train/test split.  ``get_data_log_reg.m`` calls ``setSeed(1)`` (MATLAB's 'twister', i.e.
MT19937 seeded by init_genrand(1)) and then ``randperm(N)``; in the MATLAB release the authors used,
``randperm(N)`` is the stable sort order of N uniform draws, i.e.
``np.argsort(np.random.RandomState(1).random_sample(N), kind="stable") + 1``.  Octave's generators
differ, so a ``randperm.m`` shim placed first on Octave's path returns exactly that permutation,
precomputed here for each N and read from ``randperm_<N>.txt``.  The driver checks that the shim was
called (it leaves ``randperm_<N>.used`` with the first entries it returned), that Octave reported the
shadowing of its built-in ``randperm``, and that the training and test sets Octave used have the sums
that this permutation gives.  a1a and a7a use the official train/test files (no permutation).

Patches (text substitutions of the checkout's files, each asserted to match exactly once; the patched
copies live only in the temporary directory):

``log_reg_expt.m`` → ``khan2017_expt.m``
  1. Octave knows a script's local functions only once their definition has been executed, and this
     script defines them after the code that calls them; so the three local functions
     (``bayes_lin_reg``, ``compute_log_loss``, ``get_expt_params``) are written verbatim to function
     files of their own, and the script body is everything before them.
  2. ``dataset_name = 'colon-cancer';`` → the data set chosen by the driver (``driver_config.m``).
  3. ``baselines = {...};`` → the baselines of this run (``{'PG-exact','Chol'}`` or
     ``{'SnK-alg2','SnK-FG'}``).
  4. ``get_expt_params(dataset_name, 'CVI')`` → ``get_expt_params(dataset_name, <'CVI' or 'CVI-exact'>)``
     (the two get the same ``beta`` and ``maxItersInfer`` for every data set; 'CVI-exact' has no
     ``nSamples``, so ``nSamples = algo_params.nSamples;`` is only read when ``algo_params.mc``).
  5. CVI-exact: ``E_log_p_mc(tv, {@likLogistic}, [], y, tm, nSamples)`` →
     ``E_log_p('bernoulli_logit', y, tm, tv, [])`` when ``algo_params.mc`` is 0.
  6. Both ``setSeed(1);`` (before CVI and before each baseline) → ``setSeed(<run's seed>);``.
  7. Neg-Log-Lik of CVI at every iteration (iteration 0 included), after the script's own log-loss
     line (so outside CVI's timed section): the checkout's ``get_loss`` on CVI's posterior N(m, V),
     V = inv(diag(deltas) + X'*diag(-2*tlam_2)*X), m = V*X'*tlam_1 (``deltas`` are PRECISIONS in the
     code, whatever the comment says: ``bayes_lin_reg`` and ``baseline_infer`` use them so);
     ``X'*diag(d)*X`` is formed as ``X'*bsxfun(@times, X, d)`` as the authors do.
  8. The baselines' ``nlz_b`` (discarded by the script) and each method's ``algo_params`` are kept.
  9. The plotting section is replaced by ``driver_save`` (a driver-written function) that writes every
     method's Neg-Log-Lik, Log Loss and times with ``%.17g``, plus the list of checkout files Octave
     loaded.

``log_reg/baseline_infer.m`` → a copy first on the path
  10. ``'useMex', 0`` added to minFunc's options (Chol).  minFunc's default ``useMex = 1`` calls the
      MATLAB mex ``lbfgsC`` (the checkout's binaries are MATLAB's; Octave has no compiler here); with
      ``useMex = 0`` minFunc calls ``lbfgs.m``, the same two-loop L-BFGS recursion in MATLAB code.

Octave's path: the temporary directory (shim, patched files, driver functions, data), then the
checkout's ``log_reg``, ``utils``, ``utils/supportPackages/minFunc`` and the gpml directories that
gpml's ``startup.m`` adds (``likLogistic`` and its helpers); ``pkg load statistics`` provides
``normpdf``, ``normcdf`` and ``normrnd``.

covtype: the authors' ``covtype_binary_scale.mat`` is not in their repository; it is rebuilt by
svibench's own ``datasets/libsvm.py`` from UCI's covtype.data in svibench's data directory (LIBSVM's row
order is UCI's file order): each of the 54 features min-max scaled over all 581,012 rows, y = 2 for
class 2 and 1 otherwise (``get_data_log_reg`` does ``y = y-1``), saved with ``scipy.io.savemat`` in the
temporary directory.  The split permutation is svibench's too (``libsvm.paper_permutation``).
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse

from svibench.data import data_dir, sha256_of
from svibench.datasets import libsvm

REPOSITORY = "emtiyaz/cvi"
COMMIT = "b800dc91a4391291202c2c7bc66dad94b6cc9b6b"
DRIVER = "tools/authors_code/khan2017_logreg.py"
REPO_ROOT = Path(__file__).resolve().parents[2]

#: svibench name -> the authors' name (get_data_log_reg.m / get_expt_params)
DATASETS = {
    "a1a": "a1a",
    "australian": "australian_scale",
    "breast-cancer": "breast_cancer_scale",
    "colon-cancer": "colon-cancer",
    "a7a": "a7a",
    "covtype": "covtype_binary_scale",
}
#: data sets that get_data_log_reg.m splits with setSeed(seed); randperm(N)
RANDOM_SPLIT = {"australian_scale", "breast_cancer_scale", "colon-cancer", "covtype_binary_scale"}
SPLIT_SEED = 1  # `seed = 1;` in log_reg_expt.m
BIAS_PRECISION = 1e-4  # `deltas = [1e-4; delta.*ones(D-1,1)]` in log_reg_expt.m

#: Octave name -> name in the JSON files (Table 3's)
METHOD_NAMES = {"CVI-exact": "CVI-exact", "PG-exact": "PG-exact", "Chol": "Chol",
                "CVI": "CVI", "SnK-alg2": "S&K-Alg2", "SnK-FG": "S&K-FG"}
DETERMINISTIC_RUN = ("CVI-exact", ("PG-exact", "Chol"))
MC_RUN = ("CVI", ("SnK-alg2", "SnK-FG"))
#: Chol run to minFunc's own stopping rule (--chol-converged), beside Table 3's Chol at its iteration count
CHOL_CONVERGED = "Chol (converged)"
STEP_CONVENTION = {
    "CVI-exact": "log_reg_expt.m: beta = 1/(w+1); tlam = beta*tlam + (1-beta)*(gradient term), i.e. step w/(1+w)",
    "CVI": "log_reg_expt.m: beta = 1/(w+1); tlam = beta*tlam + (1-beta)*(gradient term), i.e. step w/(1+w)",
    "PG-exact": "baseline_infer.m: r = 1/(w+1); m = m + (1-r)*(...), t_lambda = r*t_lambda + (1-r)*lambda, "
                "i.e. step w/(1+w)",
    "SnK-alg2": "baseline_infer.m passes w as stepSize: P = (1-w)*P - w*H, a and z likewise; "
                "get_expt_params sets w = b/(1+b) with the data set's base step b",
    "SnK-FG": "baseline_infer.m passes w as stepSize: statistics = (1-w)*old + w*new; "
              "get_expt_params sets w = b/(1+b) with the data set's base step b",
    "Chol": "no step size: minFunc L-BFGS (LS=2), MaxIter = MaxFunEvals = iterations+1; value k is the "
            "iterate of minFunc's k-th function evaluation (the last one repeated when there were fewer)",
}

# --------------------------------------------------------------------------------------------------
# driver-written Octave files (none of them is the authors' code)

RANDPERM_SHIM = r"""function p = randperm(n, varargin)
% Shim written by svibench's tools/authors_code/khan2017_logreg.py: MATLAB's randperm(n) as of the
% authors' release after setSeed(1) (the stable sort order of n draws of MT19937 seeded with 1),
% precomputed by the driver in randperm_<n>.txt.  Leaves randperm_<n>.used as proof of use.
  if nargin ~= 1
    error('randperm shim: only randperm(n) is supported');
  end
  here = fileparts(mfilename('fullpath'));
  f = fullfile(here, sprintf('randperm_%d.txt', n));
  if ~exist(f, 'file')
    error('randperm shim: no permutation precomputed for n = %d', n);
  end
  p = load(f);
  p = p(:)';
  assert(numel(p) == n);
  fid = fopen(fullfile(here, sprintf('randperm_%d.used', n)), 'w');
  fprintf(fid, '%d\n', p(1:min(10, n)));
  fclose(fid);
end
"""

DRIVER_CVI_NLZ = r"""function [nlz, log_loss] = driver_cvi_nlz(iter, X, y, tlam_1, tlam_2, deltas, X_te, y_te)
% Written by svibench's driver: Neg-Log-Lik of CVI's posterior N(m, V) by the checkout's get_loss.
% V = inv(diag(deltas) + X'*diag(-2*tlam_2)*X) (deltas are prior precisions in the authors' code),
% m = V*X'*tlam_1.
  V = inv(full(diag(deltas) + X' * bsxfun(@times, X, -2*tlam_2)));
  post_dist.mean = V * (X' * tlam_1);
  post_dist.covMat = V;
  [pred, log_lik] = get_loss(iter, post_dist, X, y, deltas, X_te, y_te);
  nlz = -log_lik;
  log_loss = pred.log_loss;
end
"""

DRIVER_SAVE = r"""function driver_save(DRIVER, names, nlz, log_loss, time, params, ll_check, delta, deltas, X, y, X_te, y_te)
% Written by svibench's driver: writes this run's results (%.17g) to DRIVER.out_file.
  fid = fopen(DRIVER.out_file, 'w');
  fprintf(fid, 'n_train %d\n', size(X, 1));
  fprintf(fid, 'n_test %d\n', size(X_te, 1));
  fprintf(fid, 'n_features %d\n', size(X, 2));
  fprintf(fid, 'n_features_test %d\n', size(X_te, 2));
  fprintf(fid, 'delta %.17g\n', delta);
  fprintf(fid, 'bias_precision %.17g\n', deltas(1));
  fprintf(fid, 'sum_X %.17g\n', full(sum(X(:))));
  fprintf(fid, 'sum_y %.17g\n', full(sum(double(y(:)))));
  fprintf(fid, 'sum_X_te %.17g\n', full(sum(X_te(:))));
  fprintf(fid, 'sum_y_te %.17g\n', full(sum(double(y_te(:)))));
  fprintf(fid, 'row_weighted_sum_X %.17g\n', full(sum((1:size(X, 1)) * X)));
  fprintf(fid, 'row_weighted_y %.17g\n', full((1:numel(y)) * double(y(:))));
  fprintf(fid, 'cvi_log_loss_vs_get_loss %.17g\n', ll_check);
  for i = 1:numel(names)
    fprintf(fid, 'method %s\n', names{i});
    if isfield(params{i}, 'beta')
      fprintf(fid, 'w %.17g\n', params{i}.beta);
    else
      fprintf(fid, 'w none\n');
    end
    fprintf(fid, 'maxItersInfer %d\n', params{i}.maxItersInfer);
    fprintf(fid, 'neg_log_lik'); fprintf(fid, ' %.17g', nlz{i}); fprintf(fid, '\n');
    fprintf(fid, 'log_loss'); fprintf(fid, ' %.17g', log_loss{i}); fprintf(fid, '\n');
    fprintf(fid, 'time'); fprintf(fid, ' %.17g', time{i}); fprintf(fid, '\n');
  end
  % every function file Octave has loaded (internal API; best effort)
  try
    info = __dump_symtab_info__();
    fi = info.function_info;
    fns = fieldnames(fi);
    for k = 1:numel(fns)
      try
        f = fi.(fns{k}).function_on_path.user_code.m_file_name;
        fprintf(fid, 'file %s\n', f);
      catch
      end
    end
  catch
    fprintf(fid, 'file_list_unavailable\n');
  end
  fclose(fid);
end
"""


# --------------------------------------------------------------------------------------------------
# patches

def substitute(text: str, old: str, new: str, where: str) -> str:
    """Replace ``old`` by ``new`` in ``text``; ``old`` must occur exactly once."""
    count = text.count(old)
    if count != 1:
        raise SystemExit(f"patch of {where}: expected the text {old!r} exactly once, found it {count} times")
    return text.replace(old, new)


PATCHES = [
    "log_reg_expt.m: its local functions bayes_lin_reg, compute_log_loss and get_expt_params are written "
    "verbatim to function files of their own (Octave runs a script's local functions only if defined before "
    "use); the script body is the text before them",
    "log_reg_expt.m: dataset_name = 'colon-cancer'; -> the driver's data set (driver_config.m)",
    "log_reg_expt.m: baselines = {'PG-exact', 'SnK-FG', 'SnK-alg2', 'Chol'}; -> {'PG-exact','Chol'} "
    "(deterministic run) or {'SnK-alg2','SnK-FG'} (Monte-Carlo runs)",
    "log_reg_expt.m: get_expt_params(dataset_name, 'CVI') -> 'CVI' or 'CVI-exact' (same beta and maxItersInfer); "
    "nSamples = algo_params.nSamples read only when algo_params.mc",
    "log_reg_expt.m: CVI-exact: E_log_p_mc(tv, {@likLogistic}, [], y, tm, nSamples) -> "
    "E_log_p('bernoulli_logit', y, tm, tv, []) when algo_params.mc == 0",
    "log_reg_expt.m: setSeed(1) before CVI and before each baseline -> setSeed(s), s the run's Monte-Carlo seed "
    "(1 for the deterministic run)",
    "log_reg_expt.m: after CVI's log-loss line (iteration 0 and each iteration, outside the timed section): "
    "Neg-Log-Lik by the checkout's get_loss on N(m, V), V = inv(diag(deltas) + X'*diag(-2*tlam_2)*X), "
    "m = V*X'*tlam_1 (driver_cvi_nlz.m)",
    "log_reg_expt.m: the baselines' nlz_b and every method's algo_params are kept",
    "log_reg_expt.m: the plotting section -> driver_save.m (writes the results with %.17g)",
    "log_reg/baseline_infer.m: 'useMex', 0 added to minFunc's options (copy first on Octave's path)",
    "log_reg_expt.m: after a baseline's get_expt_params, Chol's maxItersInfer = DRIVER.chol_iters when the driver "
    "sets it (--chol-converged; no change otherwise)",
]


def patch_expt(text: str) -> tuple[str, dict[str, str]]:
    """The patched script body and the local functions (name -> verbatim text of the function file)."""
    where = "log_reg_expt.m"
    marker = "\nfunction [m,v] = bayes_lin_reg("
    if text.count(marker) != 1:
        raise SystemExit(f"patch of {where}: the local functions' start not found exactly once")
    body, rest = text.split(marker)
    rest = marker.lstrip("\n") + rest
    functions = {}
    pieces = re.split(r"(?m)^(?=function )", rest)
    for piece in pieces:
        if not piece.strip():
            continue
        name = re.match(r"function\s*(?:\[[^\]]*\]|\w+)\s*=\s*(\w+)\s*\(", piece).group(1)
        functions[name] = piece
    if sorted(functions) != ["bayes_lin_reg", "compute_log_loss", "get_expt_params"]:
        raise SystemExit(f"patch of {where}: unexpected local functions {sorted(functions)}")

    body = substitute(body, "dataset_name = 'colon-cancer';",
                      "driver_config; % svibench driver: sets DRIVER\ndataset_name = DRIVER.dataset_name;", where)
    body = substitute(body, "baselines = {'PG-exact', 'SnK-FG', 'SnK-alg2', 'Chol'};",
                      "baselines = DRIVER.baselines; % svibench driver", where)
    body = substitute(body, "[delta, algo_params] = get_expt_params(dataset_name, 'CVI');",
                      "[delta, algo_params] = get_expt_params(dataset_name, DRIVER.cvi_algo); % svibench driver\n"
                      "driver_params{1} = algo_params; % svibench driver", where)
    body = substitute(body, "nSamples = algo_params.nSamples;",
                      "if algo_params.mc, nSamples = algo_params.nSamples; else, nSamples = []; end % svibench driver",
                      where)
    body = substitute(body, "   [fb, df, dv] = E_log_p_mc(tv, {@likLogistic}, [], y, tm, nSamples);\n",
                      "   if algo_params.mc % svibench driver: CVI-exact uses E_log_p\n"
                      "   [fb, df, dv] = E_log_p_mc(tv, {@likLogistic}, [], y, tm, nSamples);\n"
                      "   else\n"
                      "   [fb, df, dv] = E_log_p('bernoulli_logit', y, tm, tv, []);\n"
                      "   end\n", where)
    body = substitute(body, "setSeed(1);\nfprintf('CVI with stochastic gradients\\n');",
                      "setSeed(DRIVER.mc_seed); % svibench driver\nfprintf('CVI with stochastic gradients\\n');", where)
    body = substitute(body, "   setSeed(1);\n   [~, algo_params] = get_expt_params(dataset_name, baselines{i});",
                      "   setSeed(DRIVER.mc_seed); % svibench driver\n"
                      "   [~, algo_params] = get_expt_params(dataset_name, baselines{i});\n"
                      "   if isfield(DRIVER, 'chol_iters') && strcmp(baselines{i}, 'Chol') % svibench driver\n"
                      "      algo_params.maxItersInfer = DRIVER.chol_iters;\n"
                      "   end", where)
    body = substitute(body, "log_loss_cvi(1) = compute_log_loss(y_te, tm_te, tv_te);\n",
                      "log_loss_cvi(1) = compute_log_loss(y_te, tm_te, tv_te);\n"
                      "[nlz_cvi(1), driver_ll(1)] = driver_cvi_nlz(0, X, y, tlam_1, tlam_2, deltas, X_te, y_te); "
                      "% svibench driver\n", where)
    body = substitute(body, "   log_loss_cvi(iter+1) = compute_log_loss(y_te, tm_te, tv_te);\n",
                      "   log_loss_cvi(iter+1) = compute_log_loss(y_te, tm_te, tv_te);\n"
                      "   [nlz_cvi(iter+1), driver_ll(iter+1)] = driver_cvi_nlz(iter, X, y, tlam_1, tlam_2, deltas, "
                      "X_te, y_te); % svibench driver\n", where)
    body = substitute(body, "log_loss{1} = log_loss_cvi(:);",
                      "log_loss{1} = log_loss_cvi(:);\nnlz{1} = nlz_cvi(:); % svibench driver", where)
    body = substitute(body, "   log_loss{i+1} = log_loss_b;",
                      "   log_loss{i+1} = log_loss_b;\n"
                      "   nlz{i+1} = nlz_b; driver_params{i+1} = algo_params; % svibench driver", where)
    plot = body.index("%%%%%%%\n% Plot\n%%%%%%%")
    if body.count("% Plot\n") != 1 or "legend(algos);" not in body[plot:]:
        raise SystemExit(f"patch of {where}: the plotting section not found exactly once")
    body = body[:plot] + (
        "% svibench driver: the plotting section is replaced by saving the results\n"
        "driver_save(DRIVER, {DRIVER.cvi_algo, baselines{:}}, nlz, log_loss, time, driver_params, "
        "max(abs(driver_ll(:) - log_loss_cvi(:))), delta, deltas, X, y, X_te, y_te);\n")
    return body, functions


def patch_baseline_infer(text: str) -> str:
    return substitute(text, "'Method', 'lbfgs',...\n",
                      "'Method', 'lbfgs',...\n'useMex', 0,... % svibench driver: minFunc's lbfgs.m, not the mex lbfgsC\n",
                      "log_reg/baseline_infer.m")


# --------------------------------------------------------------------------------------------------
# data

def paper_permutation(n: int) -> np.ndarray:
    """MATLAB's randperm(n) after setSeed(1), 1-based: svibench's own (datasets/libsvm.py), so that the split the
    authors' code is run on is the one svibench's ``split = "paper"`` loads."""
    return libsvm.paper_permutation(n) + 1


def build_covtype(dest: Path) -> None:
    """covtype.binary.scale as svibench builds it (datasets/libsvm.py, UCI's rows in file order from the data
    directory), in the authors' .mat layout: y = 2 for class 2 and 1 otherwise (get_data_log_reg does y = y-1)."""
    X, y = libsvm.covtype_binary_scale(np.arange(libsvm.COVTYPE_ROWS))
    scipy.io.savemat(dest, {"X": X, "y": (y + 1.0).reshape(-1, 1)}, do_compression=False)


def expected_sets(mat: Path, name: str) -> dict:
    """The training/test sets get_data_log_reg.m makes (bias column included), as sums for a check."""
    d = scipy.io.loadmat(mat, mat_dtype=True)
    X, y = d["X"], d["y"].astype(float).ravel()
    X = X.toarray() if scipy.sparse.issparse(X) else np.asarray(X, dtype=float)
    if name in RANDOM_SPLIT:
        X = np.hstack([np.ones((X.shape[0], 1)), X])
        y = {"breast_cancer_scale": (y - 2) / 2, "covtype_binary_scale": y - 1}.get(name, (y + 1) / 2)
        perm = paper_permutation(len(y)) - 1
        n_train = len(y) // 2
        tr, te = perm[:n_train], perm[n_train:]
        Xtr, ytr, Xte, yte = X[tr], y[tr], X[te], y[te]
    else:
        Xte = d["X_te"].toarray() if scipy.sparse.issparse(d["X_te"]) else np.asarray(d["X_te"], dtype=float)
        pad = 4 if name == "a1a" else 0
        Xtr = np.hstack([np.ones((X.shape[0], 1)), X, np.zeros((X.shape[0], pad))])
        Xte = np.hstack([np.ones((Xte.shape[0], 1)), Xte])
        ytr, yte = (y + 1) / 2, (d["y_te"].astype(float).ravel() + 1) / 2
        tr = None
    return {"n_train": Xtr.shape[0], "n_test": Xte.shape[0], "n_features": Xtr.shape[1],
            "sum_X": Xtr.sum(), "sum_y": ytr.sum(), "sum_X_te": Xte.sum(), "sum_y_te": yte.sum(),
            "row_weighted_sum_X": (np.arange(1, Xtr.shape[0] + 1) @ Xtr).sum(),
            "row_weighted_y": np.arange(1, len(ytr) + 1) @ ytr,
            "train_rows": tr, "n_rows": len(y)}


def git_blob(checkout: Path, rel: str) -> str | None:
    """The blob id of ``rel`` at COMMIT (None when the commit has no such file)."""
    out = subprocess.run(["git", "-C", str(checkout), "rev-parse", f"{COMMIT}:{rel}"], capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


def git_hash_object(checkout: Path, path: Path) -> str:
    return subprocess.run(["git", "-C", str(checkout), "hash-object", str(path)], capture_output=True, text=True,
                          check=True).stdout.strip()


# --------------------------------------------------------------------------------------------------
# Octave

def octave_versions(octave: str) -> tuple[str, str]:
    first = subprocess.run([octave, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    out = subprocess.run([octave, "--no-gui", "--norc", "--eval",
                          "v = pkg('list'); for i = 1:numel(v), if strcmp(v{i}.name, 'statistics'), "
                          "printf('STATISTICS %s\\n', v{i}.version); end, end"],
                         capture_output=True, text=True, check=True).stdout
    stats = re.search(r"STATISTICS (\S+)", out)
    if stats is None:
        raise SystemExit("the Octave package 'statistics' is not installed")
    return first.strip(), stats.group(1)


def octave_path(checkout: Path) -> list[Path]:
    gpml = checkout / "utils" / "supportPackages" / "gpml-matlab-v3.1-2010-09-27"
    # last added = first on the path; the temporary directory is added after these, and is cwd
    return ([gpml / sub for sub in ("", "cov", "doc", "inf", "lik", "mean", "prior", "util")]
            + [checkout / "utils" / "supportPackages" / "minFunc", checkout / "utils", checkout / "log_reg"])


def run_octave(octave: str, work: Path, checkout: Path, config: dict, tag: str) -> dict:
    lines = ["DRIVER = struct();",
             f"DRIVER.dataset_name = '{config['dataset_name']}';",
             f"DRIVER.cvi_algo = '{config['cvi_algo']}';",
             "DRIVER.baselines = {" + ", ".join(f"'{b}'" for b in config["baselines"]) + "};",
             f"DRIVER.mc_seed = {config['mc_seed']};",
             *([f"DRIVER.chol_iters = {config['chol_iters']};"] if "chol_iters" in config else []),
             f"DRIVER.out_file = '{work / ('results_' + tag + '.txt')}';"]
    (work / "driver_config.m").write_text("% written by svibench's driver for run " + tag + "\n" + "\n".join(lines) + "\n")
    adds = "".join(f"addpath('{p}'); " for p in octave_path(checkout))
    code = (f"pkg load statistics; {adds} addpath('{work / 'data'}'); addpath('{work}'); cd('{work}'); "
            "khan2017_expt;")
    log = work / f"log_{tag}.txt"
    start = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.run([octave, "--no-gui", "--norc", "--no-history", "--eval", code],
                              cwd=work, stdout=f, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - start
    text = log.read_text()
    if proc.returncode != 0 or not (work / f"results_{tag}.txt").exists():
        raise SystemExit(f"Octave run {tag} failed (rc={proc.returncode}); see {log}:\n{text[-3000:]}")
    result = parse_results(work / f"results_{tag}.txt")
    result["wall_s"] = wall
    result["shadow_warning"] = bool(re.search(r"randperm\.m shadows a (built-in|core library) function", text))
    return result


def parse_results(path: Path) -> dict:
    out = {"methods": {}, "files": set()}
    method = None
    for line in path.read_text().splitlines():
        key, _, rest = line.partition(" ")
        if key == "method":
            method = out["methods"].setdefault(rest, {})
        elif key == "file":
            out["files"].add(rest)
        elif method is None:
            out[key] = float(rest) if rest else None
        elif key == "w":
            method["w"] = None if rest == "none" else float(rest)
        elif key == "maxItersInfer":
            method["maxItersInfer"] = int(rest)
        elif key in ("neg_log_lik", "log_loss", "time"):
            method[key] = [float(v) for v in rest.split()]
        else:
            raise ValueError(f"{path}: unexpected line {line!r}")
    return out


# --------------------------------------------------------------------------------------------------

def run_dataset(args, svi_name: str, versions: tuple[str, str], command: str) -> Path:
    name = DATASETS[svi_name]
    checkout = args.checkout.resolve()
    work = Path(tempfile.mkdtemp(prefix=f"khan2017_{svi_name}_", dir=args.tmp_dir))
    if REPO_ROOT in work.resolve().parents or checkout in work.resolve().parents:
        raise SystemExit(f"the temporary directory {work} must lie outside the repository and the checkout")
    print(f"[{svi_name}] working in {work}", flush=True)
    (work / "data").mkdir()
    if name == "covtype_binary_scale":
        mat = work / "data" / f"{name}.mat"
        build_covtype(mat)
        data_sha = {libsvm.COVTYPE.path: sha256_of(data_dir() / libsvm.COVTYPE.path)}
    else:
        src = args.mat_dir / f"{name}.mat"
        mat = work / "data" / f"{name}.mat"
        shutil.copyfile(src, mat)
        data_sha = {f"log_reg/datasets/{name}.mat": sha256_of(src)}
        committed = git_blob(checkout, f"log_reg/datasets/{name}.mat")
        if committed is not None and committed != git_hash_object(checkout, src):
            raise SystemExit(f"{src} differs from the checkout's log_reg/datasets/{name}.mat at {COMMIT}")
    expected = expected_sets(mat, name)
    train_rows_sha = None
    if name in RANDOM_SPLIT:
        perm = paper_permutation(expected["n_rows"])
        np.savetxt(work / f"randperm_{expected['n_rows']}.txt", perm, fmt="%d")
        train_rows_sha = hashlib.sha256(expected["train_rows"].astype("<i8").tobytes()).hexdigest()

    # the patched and driver-written Octave files
    (work / "randperm.m").write_text(RANDPERM_SHIM)
    (work / "driver_cvi_nlz.m").write_text(DRIVER_CVI_NLZ)
    (work / "driver_save.m").write_text(DRIVER_SAVE)
    body, functions = patch_expt((checkout / "log_reg_expt.m").read_text())
    header = (f"% Patched copy of {REPOSITORY}@{COMMIT} log_reg_expt.m, written by svibench's {DRIVER};\n"
              "% every change is marked 'svibench driver'.\n")
    (work / "khan2017_expt.m").write_text(header + body)
    for fname, text in functions.items():
        (work / f"{fname}.m").write_text(f"% verbatim local function of {REPOSITORY}@{COMMIT} log_reg_expt.m\n" + text)
    (work / "baseline_infer.m").write_text(patch_baseline_infer((checkout / "log_reg" / "baseline_infer.m").read_text()))

    if args.chol_converged:
        runs = [("chol", {"cvi_algo": DETERMINISTIC_RUN[0], "baselines": ("Chol",), "mc_seed": 1,
                          "chol_iters": args.chol_converged})]
    else:
        runs = [("det", {"cvi_algo": DETERMINISTIC_RUN[0], "baselines": DETERMINISTIC_RUN[1], "mc_seed": 1})]
        runs += [(f"mc{s}", {"cvi_algo": MC_RUN[0], "baselines": MC_RUN[1], "mc_seed": s})
                 for s in range(1, args.seeds + 1)]
    methods: dict[str, dict] = {}
    files: set[str] = set()
    problem = None
    checks = {"cvi_log_loss_max_abs_diff_vs_get_loss": 0.0}
    wall = 0.0
    for tag, config in runs:
        config["dataset_name"] = name
        res = run_octave(args.octave, work, checkout, config, tag)
        wall += res["wall_s"]
        print(f"[{svi_name}] run {tag}: {res['wall_s']:.1f} s", flush=True)
        # the data Octave used are the paper's split
        for key in ("n_train", "n_test", "n_features"):
            assert int(res[key]) == expected[key], (key, res[key], expected[key])
        assert int(res["n_features_test"]) == expected["n_features"]
        for key in ("sum_X", "sum_y", "sum_X_te", "sum_y_te", "row_weighted_sum_X", "row_weighted_y"):
            assert math.isclose(res[key], expected[key], rel_tol=1e-9, abs_tol=1e-9), (key, res[key], expected[key])
        assert res["bias_precision"] == BIAS_PRECISION
        if name in RANDOM_SPLIT:
            used = (work / f"randperm_{expected['n_rows']}.used").read_text().split()
            assert [int(v) for v in used] == list(paper_permutation(expected["n_rows"])[:len(used)]), used
            assert res["shadow_warning"], "Octave did not report that the randperm shim shadows its built-in"
        checks["cvi_log_loss_max_abs_diff_vs_get_loss"] = max(checks["cvi_log_loss_max_abs_diff_vs_get_loss"],
                                                             res["cvi_log_loss_vs_get_loss"])
        problem = problem or {"dataset": svi_name, "authors_dataset": name, "split": "paper" if name in RANDOM_SPLIT else "official", "seed": SPLIT_SEED,
                              "n_train": int(res["n_train"]), "n_test": int(res["n_test"]),
                              "n_features": int(res["n_features"]), "delta": res["delta"],
                              "bias_precision": BIAS_PRECISION, "data_sha256": data_sha,
                              "train_rows_sha256": train_rows_sha}
        files |= res["files"]
        for octave_name, m in res["methods"].items():
            if tag == "chol" and octave_name != "Chol":
                continue  # the CVI-exact the script always runs first is in the file already
            k = m["maxItersInfer"]
            for key in ("neg_log_lik", "log_loss", "time"):
                assert len(m[key]) == k + 1, (octave_name, key, len(m[key]), k)
                if not all(math.isfinite(v) for v in m[key]):
                    print(f"[{svi_name}] warning: {octave_name} {key} has non-finite values (stored as null)")
            deterministic = tag in ("det", "chol")
            entry = methods.setdefault(CHOL_CONVERGED if tag == "chol" else METHOD_NAMES[octave_name], {
                "authors_name": octave_name, "w": m["w"], "step_convention": STEP_CONVENTION[octave_name],
                "iterations": k, "deterministic": deterministic, "neg_log_lik": [], "log_loss": [],
                "time_s": [], "seeds": None if deterministic else []})
            assert entry["w"] == m["w"] and entry["iterations"] == k
            entry["neg_log_lik"].append([v if math.isfinite(v) else None for v in m["neg_log_lik"]])
            entry["log_loss"].append([v if math.isfinite(v) else None for v in m["log_loss"]])
            entry["time_s"].append(m["time"])
            if not deterministic:
                entry["seeds"].append(config["mc_seed"])

    # the checkout's files Octave loaded (the patched ones by their source)
    used = set()
    for f in files:
        p = Path(f).resolve()
        if checkout in p.parents:
            used.add(str(p.relative_to(checkout)))
        elif p.parent == work.resolve():
            if p.name == "khan2017_expt.m" or p.stem in functions:
                used.add("log_reg_expt.m")
            elif p.name == "baseline_infer.m":
                used.add("log_reg/baseline_infer.m")
    assert "log_reg/baseline_infer.m" in used and "log_reg/get_data_log_reg.m" in used, sorted(used)
    assert not any(str(Path(f).resolve()) == str(checkout / "log_reg" / "baseline_infer.m") for f in files), \
        "Octave loaded the unpatched baseline_infer.m"
    for rel in used:  # the files read are the commit's
        if git_blob(checkout, rel) != git_hash_object(checkout, checkout / rel):
            raise SystemExit(f"{checkout / rel} differs from {rel} at {COMMIT}")

    order = ["CVI-exact", "PG-exact", "Chol", CHOL_CONVERGED, "CVI", "S&K-Alg2", "S&K-FG"]
    doc = {
        "provenance": {
            "repository": REPOSITORY, "commit": COMMIT, "files": sorted(used),
            "octave": versions[0], "octave_statistics": versions[1], "command": command, "driver": DRIVER,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "patches": PATCHES,
            "minfunc_mex": "not used: minFunc's useMex set to 0 (patch of baseline_infer.m), so Chol's L-BFGS "
                           "direction comes from the checkout's lbfgs.m instead of the mex lbfgsC (same recursion); "
                           "nothing was compiled",
            "split": "get_data_log_reg.m with a randperm.m shim returning MATLAB's randperm(N) after setSeed(1): "
                     "np.argsort(np.random.RandomState(1).random_sample(N), kind='stable') + 1"
                     if name in RANDOM_SPLIT else "official train/test files (no permutation)",
            "wall_time_s": wall,
            "time_s_note": "time_s are the authors' own timings (tic/toc; seconds) under Octave on the machine that "
                           "ran the driver, as baseline_infer.m and log_reg_expt.m return them: cumulative per "
                           "iteration, except Chol's, which are seconds since minFunc's start at each function "
                           "evaluation and 0 after the last one",
        },
        "problem": problem,
        "checks": checks,
        "methods": {k: methods[k] for k in order if k in methods},
    }
    if name == "covtype_binary_scale":
        doc["problem"]["data_note"] = ("covtype_binary_scale.mat rebuilt from UCI covtype.data as svibench's "
                                       "datasets/libsvm.py builds it (class 2 -> y = 2, else 1; min-max scaling "
                                       "over all rows); the authors' own .mat is not available")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{svi_name}.json"
    if args.chol_converged:
        doc = add_to_existing(path, doc)
    path.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    print(f"[{svi_name}] wrote {path} ({wall:.1f} s of Octave)", flush=True)
    if not args.keep_tmp:
        shutil.rmtree(work)
    return path


def add_to_existing(path: Path, run: dict) -> dict:
    """The committed file at ``path`` with ``run``'s "Chol (converged)" added and its provenance under
    ``provenance.additions`` (the file's other methods are left as they were)."""
    if not path.exists():
        raise SystemExit(f"--chol-converged adds to an existing file; {path} does not exist (run without it first)")
    doc = json.loads(path.read_text())
    if doc["problem"] != run["problem"]:
        raise SystemExit(f"{path}: its problem differs from this run's; rebuild it without --chol-converged")
    doc["methods"][CHOL_CONVERGED] = run["methods"][CHOL_CONVERGED]
    prov = {k: run["provenance"][k] for k in ("commit", "files", "octave", "octave_statistics", "command", "date",
                                              "patches", "wall_time_s")}
    prov["methods"] = [CHOL_CONVERGED]
    doc["provenance"]["additions"] = [a for a in doc["provenance"].get("additions", [])
                                      if a["methods"] != [CHOL_CONVERGED]] + [prov]
    return doc


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkout", type=Path, required=True, help="checkout of emtiyaz/cvi at " + COMMIT)
    parser.add_argument("--out", type=Path, required=True, help="directory of the JSON files")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--seeds", type=int, default=10, help="Monte-Carlo seeds 1..SEEDS")
    parser.add_argument("--mat-dir", type=Path, default=None,
                        help="directory of the authors' .mat files (default: CHECKOUT/log_reg/datasets)")
    parser.add_argument("--octave", default="octave-cli")
    parser.add_argument("--tmp-dir", default=None, help="parent of the temporary directories (default: system's)")
    parser.add_argument("--keep-tmp", action="store_true", help="keep the temporary directories (logs)")
    parser.add_argument("--chol-converged", type=int, default=None, metavar="N",
                        help="run only Chol, with maxItersInfer = N (minFunc stops earlier at its TolFun/TolX of "
                             "1e-4), and add it as 'Chol (converged)' to the existing file in --out")
    args = parser.parse_args(argv)
    args.mat_dir = args.mat_dir or args.checkout / "log_reg" / "datasets"
    command = shlex.join(["python", *(sys.argv if argv is None else [DRIVER, *argv])])
    head = subprocess.run(["git", "-C", str(args.checkout), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0 or head.stdout.strip() != COMMIT:
        raise SystemExit(f"{args.checkout} is not a checkout of {REPOSITORY} at {COMMIT}")
    versions = octave_versions(args.octave)
    for svi_name in args.datasets:
        run_dataset(args, svi_name, versions, command)


if __name__ == "__main__":
    main()
