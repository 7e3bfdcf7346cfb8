"""asv: the run's clock under load -- a competing busy process moves a run's wall time, not its CPU time.

One CPU shared with a busy loop: the run gets about half of it, so its wall time is about twice the time alone; its
CPU time moves only by what sharing a core costs in caches and context switches (measured: +9% to +13% on an
AVX-512 machine, +27% to +32% on a slower, noisier AVX2 one).  A wall-clock runner would move as much as the wall
time.  Each run is made twice, alternated, and the fastest of each compared (load from outside only ever adds
time).  A measurement of the machine, so asv tracks it (``track_``) rather than a test asserting it.
"""
import json
import os
import subprocess
import sys

import numpy as np

#: The child: pinned to one CPU, it makes the same VMP run (~1.1 s of CPU) alone, then with a busy
#: loop pinned to the same CPU (it inherits the child's affinity, and ends when the child does), twice.
CHILD = """
import json, os, subprocess, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
from svibench.runner import execute
from svibench.spec import Budget, Checkpoints, ProblemSpec, RunSpec

problem = ProblemSpec("gmm/busy", "gmm", "gmm-synthetic", {"components": 5}, {"n": 20000, "n_test": 500, "components": 5})
spec = RunSpec("clock", problem, "vmp", "VMP", {}, 0, Budget(iterations=150), Checkpoints(count=5))
REPEATS = 2
BUSY = "import os\\nparent = os.getppid()\\nwhile os.getppid() == parent:\\n    for _ in range(10**6):\\n        pass"

def run():
    ds = execute(spec)
    assert ds.attrs["status"] == "ok", ds.attrs["message"]
    return {var: ds[var].values.tolist() for var in ("time", "wall_time", "elbo")}

def loaded_run():
    busy = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        time.sleep(0.3)  # the loop is spinning
        return run()
    finally:
        busy.kill()
        busy.wait()

alone, loaded = [], []
for _ in range(REPEATS):  # alternated, so that load from outside the test falls on both
    alone.append(run())
    loaded.append(loaded_run())
print(json.dumps({"alone": alone, "loaded": loaded}))
"""




def _moved() -> dict[str, float]:
    """Relative change, loaded against alone, of the last checkpoint's CPU time and wall time."""
    cpu = max(os.sched_getaffinity(0))
    out = subprocess.run([sys.executable, "-c", CHILD, str(cpu)], capture_output=True, text=True, timeout=180,
                         check=True)
    runs = json.loads(out.stdout.strip().splitlines()[-1])
    alone, loaded = ({var: np.min([r[var] for r in runs[name]], axis=0) for var in ("time", "wall_time")}
                     for name in ("alone", "loaded"))
    return {"cpu": float(loaded["time"][-1] / alone["time"][-1] - 1),
            "wall": float(loaded["wall_time"][-1] / alone["wall_time"][-1] - 1)}


class ClockUnderLoad:
    """How much a busy process on the same CPU moves a run's CPU time and its wall time (relative change)."""

    timeout = 300
    params = ["cpu", "wall"]
    param_names = ["clock"]

    def setup_cache(self):
        return _moved() if hasattr(os, "sched_setaffinity") else {"cpu": float("nan"), "wall": float("nan")}

    def track_moved(self, moved, clock):
        return moved[clock]

    track_moved.unit = "relative change"
