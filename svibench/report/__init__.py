"""Reports of saved results: an HTML page and a Markdown summary with figures and tables.

Reports read what a sweep saved (``open_results`` and ``manifest.json``); they
never recompute a run.  One module per job:

- ``settings``  the study's ``[report]`` table: targets, figures, pooling (what a metric means is the model's: ``svibench.metrics``)
- ``fmt``       numbers as text (``mean ± sd`` with digits set by the spread)
- ``tables``    final metrics, time to target, paper vs this run, failures
- ``figures``   metric against algorithm CPU time and epochs, mean ± sd over seeds
- ``header``    study, date, versions, machine, timing caveats
- ``frozen``    claims frozen with the results: which claims were amended after the runs
- ``notes``     claim notes' placeholders filled from the results, and the measured-number rule
- ``html``      the self-contained page (figures embedded as base64 PNG)
- ``markdown``  the GitHub-readable summary (figures as PNG files beside it)
- ``build``     ties them together: :func:`write_report`
"""
from ..settings import ReportError, ReportSettings

__all__ = ["write_report", "Report", "ReportSettings", "ReportError"]


def __getattr__(name: str):
    """``write_report`` and ``Report`` load seaborn/matplotlib: only when asked for (a study's
    ``[report]`` table is checked at load time through :mod:`.settings` alone)."""
    if name in ("write_report", "Report"):
        from . import build

        return getattr(build, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
