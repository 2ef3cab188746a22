#!/usr/bin/env bash
# One call on a GPU machine: what is there, the GPU tests, then the benchmarks.
# Usage (from the repository root): bash benchmarks/gpu_session.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/phobos-gpu}
mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 PHOBOS_CACHE_DIR=/tmp/phobos-cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
python3 -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
if python3 -c "import pytest" 2>/dev/null; then
  python3 -m pytest -q -rs -p no:cacheprovider tests/gpu 2>&1 | tee "$out/gpu-tests.log" | tail -40
else
  echo "pytest is not installed here: tests/gpu not run"
fi
python3 benchmarks/run.py --out "$out/RESULTS.md" 2>&1 | tee "$out/bench.log"
