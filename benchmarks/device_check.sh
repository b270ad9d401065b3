#!/usr/bin/env bash
# The GPU checks of execution controls and training (docs/execution.md, "On a GPU"),
# in one go, on a machine with an NVIDIA GPU and torch and jax built for CUDA:
#   1. the CUDA tests: every example on torch, torch.compile and jax on the GPU, native
#      results staying there, backend="auto" picking the GPU, and tests/test_cuda_paths.py
#      (training, demand mode, Monte Carlo, blocked contraction, traces on the GPU);
#   2. the training-step figures on the GPU (Fuse against the same model hand-written);
#   3. the conformance modules with torch and jax on the GPU compared with NumPy
#      (FUSE_CONFORMANCE_DEVICE=cuda, tests/conftest.py), in parallel workers.
# Logs go to $OUT (default /tmp/fuse-device-check).  Each step has its own time limit.
#
#   bash benchmarks/device_check.sh          (TRAINING=0: without step 2)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/fuse-device-check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# several test processes share the GPU: none takes most of its memory up front
export XLA_PYTHON_CLIENT_PREALLOCATE=false
PY=${PYTHON:-python3}
nvidia-smi -L | tee "$OUT/device.log"
$PY -c "import torch, jax; print('torch', torch.__version__, torch.cuda.is_available(), \
'jax', jax.__version__, jax.devices())" 2>&1 | tee -a "$OUT/device.log"

timeout ${CUDA_TESTS_S:-170} $PY -m pytest -q -p no:cacheprovider -m cuda -rs -n 4 \
    tests/test_backends.py tests/test_cuda_paths.py \
    2>&1 | tee "$OUT/cuda_tests.log" | tail -25

if [ "${TRAINING:-1}" != 0 ]; then  # TRAINING=0: the tests only
timeout 90 $PY benchmarks/training_step.py --device cuda --rounds 3 2>&1 \
    | tee "$OUT/training_step_gpu.log" | grep -v Warning
timeout 100 $PY benchmarks/training_step_charlm.py --device cuda --rounds 3 2>&1 \
    | tee "$OUT/training_step_charlm_gpu.log" | grep -v Warning
fi

FUSE_CONFORMANCE_DEVICE=cuda timeout ${CONFORMANCE_S:-180} $PY -m pytest -q -p no:cacheprovider \
    -n ${WORKERS:-8} --durations=5 \
    tests/test_execution_config.py tests/test_demand.py tests/test_sparse.py \
    tests/test_sparse_io.py tests/test_datalog.py tests/test_datalog_values.py \
    tests/test_engine_constructs.py tests/test_engine_runtime.py tests/test_run_targets.py \
    tests/test_seed_spellings.py tests/test_functions.py tests/test_let_blocks.py tests/test_layer_recurrences.py \
    2>&1 | tee "$OUT/conformance_gpu.log" | tail -30
