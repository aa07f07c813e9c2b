#!/usr/bin/env bash
# The render benchmark of two commits, one after the other on the same machine, alternating, RUNS pairs:
#   benchmarks/compare_render.sh BEFORE [AFTER=HEAD] [RUNS=3] [bench_render.py options...]
#   benchmarks/compare_render.sh da8feae HEAD 3 --workloads 100 --cluster-types 300
# Each commit is checked out into a temporary worktree and run with this checkout's venv (.venv) and
# PYTHONPATH set to that worktree, so each side runs its own fleetflow and its own bench_render.py.
set -euo pipefail
cd "$(dirname "$0")/.."
before=${1:?usage: compare_render.sh BEFORE [AFTER] [RUNS] [options]}; after=${2:-HEAD}; runs=${3:-3}
shift $(( $# < 3 ? $# : 3 ))
python=${PYTHON:-$PWD/.venv/bin/python}
scratch=$(mktemp -d)
trap 'git worktree remove --force "$scratch/before" >/dev/null 2>&1; git worktree remove --force "$scratch/after" >/dev/null 2>&1; rm -rf "$scratch"' EXIT
git worktree add -q --detach "$scratch/before" "$before"
git worktree add -q --detach "$scratch/after" "$after"
for i in $(seq "$runs"); do
  for side in before after; do
    echo "== run $i $side ($(git -C "$scratch/$side" rev-parse --short HEAD)) load $(cut -d' ' -f1 /proc/loadavg)"
    (cd "$scratch/$side" && PYTHONPATH="$scratch/$side" "$python" benchmarks/bench_render.py "$@" \
      | grep -E '^\((a|b|c|d)\)')
  done
done
