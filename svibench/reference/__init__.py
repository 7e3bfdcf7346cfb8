"""Gold-standard reference posteriors and the posterior-accuracy metrics of runs against them (issue 30).

One module per job: :mod:`.capability` (what a model offers), :mod:`.sampling` (chains of an exact sampler),
:mod:`.diagnostics` (R̂, ESS, MCSE through ArviZ, and the floor), :mod:`.moments` (the stored arrays),
:mod:`.artifact` (the files, the problem's identity, staleness), :mod:`.build` (compute once, reuse),
:mod:`.accuracy` (the metrics) and :mod:`.attach` (a run's scorer).  ``svibench reference`` is the command.
"""
