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
# The dry run in two halves at once, one per core (every benchmark runs in one of them: the second half is
# every name the first does not match); one at a time it took ~580 s on a 2-core AVX2 VM.  bench_registry (every
# algorithm on every problem) took about as long as all the other modules together (324 s against 405 s, run a
# module at a time), so it is the first half.
first='^bench_registry\.'
logs=("$(mktemp)" "$(mktemp)")
asv run --python=same --quick --dry-run --show-stderr --bench "$first" > "${logs[0]}" 2>&1 & one=$!
# Every `asv run` rewrites ~/.asv-machine.json as it starts (not atomically), before it discovers the benchmarks:
# started together, one half once read the other's half-written file and failed.  So the second half starts when
# the first is discovering (or has ended), at most 60 s later.
for _ in $(seq 600); do
  { grep -q "Discovering benchmarks" "${logs[0]}" || ! kill -0 "$one" 2> /dev/null; } && break
  sleep 0.1
done
asv run --python=same --quick --dry-run --show-stderr --bench "^(?!${first#^})" > "${logs[1]}" 2>&1 & two=$!
status=0
wait "$one" || status=$?
wait "$two" || status=$?
cat "${logs[@]}"
# asv exits 0 even when a benchmark fails; its table says "failed".
if [ "$status" -ne 0 ] || grep -qE '(^|\s)failed(\s|$)' "${logs[@]}"; then
    echo "asv_check: a benchmark failed (see above)" >&2
    rm -f "${logs[@]}"
    exit 1
fi
rm -f "${logs[@]}"
echo "asv_check: suite ok in $(( $(date +%s) - start )) s"
