"""asv: what ``svibench`` commands cost a user who types them, in process CPU seconds (the median of 3 fresh
processes; a command's wall time is its CPU time plus the machine's load): importing the command line, and each of
the commands that should answer at once (``--help``, ``check --help``, ``list``, ``describe``).  Issue 33 ("remove
what costs: process start, imports"): scipy.stats alone took ~1 s of the import until the reference moments read
Φ⁻¹ from scipy.special; issue 51: the command line imports what a command uses when it runs, and ``list`` and
``describe`` answer from a cache of their texts (svibench.catalogue), which the first call after any change fills."""
import os
import resource
import statistics
import subprocess
import sys
import tempfile

#: Run in the fresh interpreter: the CPU seconds of ``import svibench.cli``.
CODE = "import time; t = time.process_time(); import svibench.cli; print(time.process_time() - t)"
#: The commands timed whole, interpreter start included.
COMMANDS = ("--help", "check --help", "list", "describe vmp")


def _child_cpu(argv: list[str], env: dict[str, str] | None = None) -> float:
    """User + system CPU seconds of one child process running ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, capture_output=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


class CommandLineStart:
    """CPU seconds of ``import svibench.cli`` in a fresh Python process."""

    timeout = 120

    def track_import_cli(self):
        seconds = [float(subprocess.run([sys.executable, "-c", CODE], check=True, capture_output=True,
                                        text=True).stdout) for _ in range(3)]
        return statistics.median(seconds)

    track_import_cli.unit = "CPU seconds"


class WholeCommand:
    """CPU seconds of a whole ``svibench`` command in a fresh process, as a user meets it after their first call
    (which fills the cache; issue 51's target: at most 0.3 s each)."""

    timeout = 120
    params = list(COMMANDS)
    param_names = ["command"]

    def track_command(self, command):
        argv = [sys.executable, "-m", "svibench.cli", *command.split()]
        _child_cpu(argv)
        return statistics.median(_child_cpu(argv) for _ in range(3))

    track_command.unit = "CPU seconds"


class FirstList:
    """CPU seconds of ``svibench list`` with an empty cache: the first call after installing or editing svibench
    or a plugin (it imports every algorithm and model)."""

    timeout = 120

    def track_list_cold(self):
        def cold() -> float:
            with tempfile.TemporaryDirectory() as folder:
                env = {**os.environ, "SVIBENCH_CACHE_DIR": folder}
                return _child_cpu([sys.executable, "-m", "svibench.cli", "list"], env)
        return statistics.median(cold() for _ in range(3))

    track_list_cold.unit = "CPU seconds"
