"""asv: what every ``svibench`` command costs before it does anything: importing the command line in a fresh
interpreter, in process CPU seconds (the median of 3 processes; an import's wall time is its CPU time plus the
machine's load).  Issue 33 ("remove what costs: process start, imports"): scipy.stats alone took ~1 s of it
until the reference moments read Φ⁻¹ from scipy.special."""
import statistics
import subprocess
import sys

#: Run in the fresh interpreter: the CPU seconds of ``import svibench.cli``.
CODE = "import time; t = time.process_time(); import svibench.cli; print(time.process_time() - t)"


class CommandLineStart:
    """CPU seconds of ``import svibench.cli`` in a fresh Python process."""

    timeout = 120

    def track_import_cli(self):
        seconds = [float(subprocess.run([sys.executable, "-c", CODE], check=True, capture_output=True,
                                        text=True).stdout) for _ in range(3)]
        return statistics.median(seconds)

    track_import_cli.unit = "CPU seconds"
