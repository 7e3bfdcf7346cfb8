#!/usr/bin/env bash
# Fail CI when a benchmark is broken: `asv check` (the suite imports and its
# benchmarks are well formed) and a quick dry run of every benchmark once in
# the current Python (nothing is built or saved).  Works from a fresh clone.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
export SVIBENCH_DATA_DIR="${SVIBENCH_DATA_DIR:-$(cd .. && pwd)/shared/data}"
# asv asks about the machine the first time; answer with the defaults.
if [ ! -f "${ASV_MACHINE_FILE:-$HOME/.asv-machine.json}" ]; then
    asv machine --yes > /dev/null
fi
asv check --python=same
start=$(date +%s)
log=$(mktemp)
status=0
asv run --python=same --quick --dry-run --show-stderr > "$log" 2>&1 || status=$?
cat "$log"
# asv exits 0 even when a benchmark fails; its table says "failed".
if [ "$status" -ne 0 ] || grep -qE '(^|\s)failed(\s|$)' "$log"; then
    echo "asv_check: a benchmark failed (see above)" >&2
    rm -f "$log"
    exit 1
fi
rm -f "$log"
echo "asv_check: suite ok in $(( $(date +%s) - start )) s"
