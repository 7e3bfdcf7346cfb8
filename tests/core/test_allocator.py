"""The allocator's thresholds (svibench.allocator): a step's freed temporaries are not faulted in again."""
import os
import subprocess
import sys

import pytest

from svibench import allocator

STEPS = r"""
import resource, sys
import numpy as np
from svibench.allocator import keep_freed_memory
set_ = keep_freed_memory() if sys.argv[1] == "keep" else False
def step():  # a step's temporaries: three 3 MB arrays, written, then freed
    arrays = [np.ones(400_000) for _ in range(3)]
    return sum(float(a[-1]) for a in arrays)
step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    step()
print(set_, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> tuple[bool, int]:
    env = {k: v for k, v in os.environ.items() if k not in allocator.ENV_VARS}
    out = subprocess.run([sys.executable, "-c", STEPS, mode], capture_output=True, text=True, env=env, check=True)
    set_, faults = out.stdout.split()
    return set_ == "True", int(faults)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_steps_no_longer_fault_their_temporaries_in_again():
    _, default = _faults("default")
    was_set, kept = _faults("keep")
    assert was_set
    pages = 20 * 3 * 400_000 * 8 // 4096
    assert default > pages / 4, "the default allocator is expected to return and re-fault the arrays"
    assert kept < pages / 20


def test_a_users_own_glibc_thresholds_win(monkeypatch):
    allocator.keep_freed_memory.cache_clear()
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    try:
        assert allocator.keep_freed_memory() is False
    finally:
        allocator.keep_freed_memory.cache_clear()
