#!/usr/bin/env bash
# Calls on a GPU machine: what is there, the GPU tests, the benchmarks, the sanitizers.
# Usage (from the repository root): bash benchmarks/gpu_session.sh OUTDIR [PART ...]
# PART: tests, bench, hopper, sanitize (all four when none is named); each fits one call.
set -uo pipefail
out=${1:-/tmp/phobos-gpu}
shift || true
parts=${*:-tests bench hopper sanitize}
mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 PHOBOS_CACHE_DIR=/tmp/phobos-cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
python3 -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
for part in $parts; do
  case $part in
  tests)
    if python3 -c "import pytest" 2>/dev/null; then
      python3 -m pytest -q -rs -p no:cacheprovider tests/gpu 2>&1 | tee "$out/gpu-tests.log" | tail -40
      # the random kernels long, four processes side by side
      for p in 0 1 2 3; do
        PHOBOS_FUZZ_KERNELS_GPU=2000 python3 -m pytest -q -p no:cacheprovider \
          "tests/gpu/test_random_kernels_gpu.py::test_random_kernels_on_the_card_agree_with_the_tile_interpreter[$p]" \
          > "$out/random-kernels-$p.log" 2>&1 &
      done
      wait
      for p in 0 1 2 3; do echo "random kernels part $p:"; tail -2 "$out/random-kernels-$p.log"; done
    else
      echo "pytest is not installed here: tests/gpu not run"
    fi
    ;;
  bench)
    python3 benchmarks/run.py --out "$out/RESULTS.md" 2>&1 | tee "$out/bench.log"
    ;;
  hopper)
    # the GEMMs and attention with the default forms and a producer warpgroup, in one run each
    python3 benchmarks/tensorcore.py --producer --only f16 --only bf16 --models \
      --out "$out/tensorcore.md" 2>&1 | tee "$out/tensorcore.log" | tail -60
    python3 benchmarks/attention_f16.py --heads --d 64 --d 128 2>&1 | tee "$out/attention.log" | tail -60
    # the scores a tile ahead beside the default form (docs/attention.md)
    python3 benchmarks/attention_f16.py --heads --d 64 --d 128 --form phobos --form "phobos ahead" \
      --form "phobos ahead, waits in place" --form "phobos ahead 2 CTAs" \
      --form "phobos ahead producer" 2>&1 | tee "$out/attention-ahead.log" | tail -40
    python3 benchmarks/decode.py 2>&1 | tee "$out/decode.log" | tail -40
    ;;
  sanitize)
    # compute-sanitizer: the kernels clean, and each seeded bug caught (a non-zero status).
    if command -v compute-sanitizer >/dev/null; then
      for tool in memcheck racecheck; do
        for group in kernels contractions tensorcores attention; do  # a process each (sanitize.py says why)
          compute-sanitizer --tool $tool --error-exitcode 1 python3 tests/gpu/sanitize.py clean $group > "$out/san-$tool-$group.log" 2>&1
          echo "sanitizer $tool clean $group: status $? (0 expected)"; tail -2 "$out/san-$tool-$group.log"
        done
      done
      # memcheck on every variant the tuner compiles of the benchmarks' kernels, a process a kernel.
      for k in vector_add softmax_rows layer_norm rms_norm hgemm hgemm_bf16 hgemm_h hgemm_hh igemm \
               attention attention_causal attention_ahead decode_split decode_split_mma decode_merge decode_mma kda_f16; do
        compute-sanitizer --tool memcheck --error-exitcode 1 python3 tests/gpu/sanitize.py variants $k > "$out/san-memcheck-variants-$k.log" 2>&1
        echo "sanitizer memcheck variants $k: status $? (0 expected)"; tail -1 "$out/san-memcheck-variants-$k.log"
      done
      # torch's caching allocator would hide a write past a tensor inside its own block.
      PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck --error-exitcode 1 python3 tests/gpu/sanitize.py oob > "$out/san-memcheck-oob.log" 2>&1
      echo "sanitizer memcheck oob: status $? (non-zero expected)"; grep -m2 -E "Invalid|ERROR SUMMARY" "$out/san-memcheck-oob.log"
      compute-sanitizer --tool racecheck --error-exitcode 1 python3 tests/gpu/sanitize.py race > "$out/san-racecheck-race.log" 2>&1
      echo "sanitizer racecheck race: status $? (non-zero expected)"; grep -m2 -E "hazard|RACECHECK SUMMARY" "$out/san-racecheck-race.log"
    fi
    ;;
  *) echo "unknown part $part: tests, bench, hopper or sanitize" ;;
  esac
done
