#!/usr/bin/env bash
# GPU check: on a machine with an NVIDIA GPU, install the regular (CUDA) vLLM build and run a
# small sweep of the tiny Qwen2.5-VL and Qwen3-VL checkpoints on the GPU. Meant to finish in
# well under 8 minutes once pip has its wheels. Writes OUT/gpu_check.json with what ran.
# The two engines share one GPU (num_gpus = 0.5 each). PYTHON: an interpreter that already has
# vllm (e.g. `python3` with the device kit on PYTHONPATH, see tools/gpu_run.sh); default .venv.
# N_VIDEOS (default 8) sizes the sweep; GPU_CHECK_REHEARSAL=1 runs it on the CPU build instead.
#   OUT=runs/gpu-check bash tools/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/gpu-check}
PY=${PYTHON:-.venv/bin/python}
N_VIDEOS=${N_VIDEOS:-8}
mkdir -p "$OUT"
t0=$(date +%s)
if [ "${GPU_CHECK_REHEARSAL:-0}" = 1 ]; then
  GPUS=0; DTYPE=float32
else
  nvidia-smi -L
  GPUS=0.5; DTYPE=bfloat16
  if ! "$PY" -c "import vllm, torch; assert torch.cuda.is_available()" 2>/dev/null; then
    FRAMESWEEP_EXTRA=gpu bash tools/setup.sh
  fi
fi
cat > "$OUT/spec.toml" <<TOML
sweep_id = "gpu-check"

[[models]]
id = "tiny-qwen2.5-vl"
family = "qwen2_5_vl"
path = "tiny:qwen2_5_vl"
[models.engine]
max_model_len = 4096
dtype = "$DTYPE"
gpu_memory_utilization = 0.3
num_gpus = $GPUS

[[models]]
id = "tiny-qwen3-vl"
family = "qwen3_vl"
path = "tiny:qwen3_vl"
[models.engine]
max_model_len = 4096
dtype = "$DTYPE"
gpu_memory_utilization = 0.3
num_gpus = $GPUS

[dataset]
name = "synthetic"
n_videos = $N_VIDEOS
seconds = 16.0
fps = 8
width = 320
height = 240

[[budgets]]
frames = 0
[[budgets]]
frames = 8
[[budgets]]
frames = 16
[[budgets]]
frames = 32

[store]
out_dir = "$OUT/results"
TOML
"$PY" -m engine.cli run "$OUT/spec.toml"
"$PY" - "$OUT" "$t0" "$N_VIDEOS" <<'PY'
import json, sys, time
import polars as pl
from engine.results.store import latest_rows, scan_results
out, t0, n_videos = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = latest_rows(scan_results(f"{out}/results")).collect()
ok = rows.filter(pl.col("status") == "ok")
report = {
    "rows": rows.height, "ok": ok.height,
    "engine_version": sorted(set(ok["engine_version"].drop_nulls())),
    "prompt_tokens_by_budget": {b: int(t) for b, t in ok.group_by("budget_id").agg(pl.col("prompt_tokens").mean())
                                .sort("budget_id").iter_rows()},
    "engine_s_total": float(ok["engine_s"].sum()),
    "wall_s": time.time() - t0,
}
json.dump(report, open(f"{out}/gpu_check.json", "w"), indent=2)
print(json.dumps(report))
assert report["ok"] == 2 * n_videos * 3 * 4, "every job must succeed on the GPU"
PY
