"""A whole `framesweep run` against a recorded peer figure (e.g. lmms-eval: one process per budget).

The peer's figure is what you measured and wrote down yourself, as JSON:

    {"peer": "lmms-eval 0.7.3, vLLM backend", "date": "2026-11-30",
     "wall_s_per_budget": {"0": 81.2, "4": 84.0, "8": 85.1, "16": 88.9, "32": 92.8}}

keys are frame counts ("0" = text only), values the wall seconds of the peer's whole run for that
budget (a process each). peer_s is their sum. framesweep runs the same budgets in one process:
`--spec SPEC.toml` runs your spec (its budgets should be the peer's), else a synthetic set of
`--videos` x `--questions` items at the peer's budgets on the tiny checkpoint. framesweep_s is
the wall time of the whole `framesweep run` process from launch to exit, with no engine running
(cold); `--warm` adds framesweep_warm_s with the spec's engines up beforehand (`framesweep engines
up`, not timed). The ratio is peer_s / framesweep_s.

    python benchmarks/peer_sweep.py --peer-json peer.json --warm --output-json out.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from _startup import engines_up, private_cache, timed_run, write_spec_toml

KEYS = ("peer_s", "framesweep_s", "ratio_peer_over_framesweep", "framesweep_first_row_s", "framesweep_warm_s",
        "ratio_peer_over_framesweep_warm", "budgets", "peer")


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--peer-json", type=Path, required=True, help="the peer's wall seconds per budget (see above)")
    p.add_argument("--spec", type=Path, default=None, help="the framesweep spec to run (default: synthetic)")
    p.add_argument("--videos", type=int, default=6)
    p.add_argument("--questions", type=int, default=3, choices=[1, 2, 3])
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--fps", type=int, default=30)
    p.add_argument("--size", default="480x270", help="video WxH")
    p.add_argument("--max-pixels", type=int, default=224 * 224)
    p.add_argument("--family", default="qwen2_5_vl")
    p.add_argument("--warm", action="store_true", help="also time the run with the spec's engines already up")
    p.add_argument("--output-json", type=Path, default=None)


def _peer(path: Path) -> tuple[str, dict[int, float]]:
    data = json.loads(path.read_text())
    per = data.get("wall_s_per_budget")
    if not isinstance(per, dict) or not per:
        raise SystemExit(f"{path}: needs a non-empty \"wall_s_per_budget\" object (frame count -> seconds)")
    return str(data.get("peer", "peer")), {int(k): float(v) for k, v in per.items()}


def _synthetic(args: argparse.Namespace, budgets: list[int], out: Path) -> dict[str, Any]:
    w, h = (int(x) for x in args.size.split("x"))
    return {
        "sweep_id": "peer",
        "models": [{"id": "m", "family": args.family, "path": f"tiny:{args.family}",
                    "engine": {"max_model_len": 8192, "dtype": "float32"}}],
        "dataset": {"name": "synthetic", "n_videos": args.videos, "seconds": args.seconds, "fps": args.fps,
                    "width": w, "height": h,
                    "questions": ["flash_count", "first_colour", "static_shape"][: args.questions]},
        "budgets": [{"frames": b, "max_pixels": args.max_pixels} if b else {"frames": 0} for b in budgets],
        "decode": {"max_videos_in_flight": 4},
        "store": {"out_dir": str(out), "commit_interval_s": 5.0},
    }


def _time(args: argparse.Namespace, spec_path: Path, work: Path, out: dict[str, Any]) -> None:
    """Cold, then (--warm) with the engines up: whole `framesweep run` processes, launch to exit."""
    with private_cache() as env:
        cold = timed_run(spec_path, work / "cold", env)
        out.update(framesweep_s=cold["process_s"], framesweep_first_row_s=cold["first_row_s"])
        out["ratio_peer_over_framesweep"] = out["peer_s"] / out["framesweep_s"]
        out.update(framesweep_warm_s=None, ratio_peer_over_framesweep_warm=None)
        if args.warm:
            engines_up(spec_path, env)
            warm = timed_run(spec_path, work / "warm", env)
            out.update(framesweep_warm_s=warm["process_s"],
                       ratio_peer_over_framesweep_warm=out["peer_s"] / warm["process_s"])


def main(args: argparse.Namespace) -> dict[str, Any]:
    from engine.datasets import load_items
    from engine.spec import load_spec, parse_spec

    peer, per_budget = _peer(args.peer_json)
    work = Path(tempfile.mkdtemp(prefix="fs-peer-"))
    if args.spec is not None:
        spec_path = args.spec
        spec = load_spec(spec_path)
    else:
        spec = parse_spec(_synthetic(args, sorted(per_budget), work / "out"))
        spec_path = write_spec_toml(_synthetic(args, sorted(per_budget), work / "out"), work / "peer.toml")
    for ds in spec.dataset_specs():
        load_items(ds)  # builds synthetic videos outside the clocks
    from engine.backends.tiny import resolve_model_path

    for m in spec.models:  # and the tiny checkpoints
        if m.backend == "vllm":
            resolve_model_path(m.path)
    budgets = sorted({b.frames for b in spec.budgets})
    if budgets != sorted(per_budget):
        print(f"warning: the spec's frame counts {budgets} are not the peer's {sorted(per_budget)}", file=sys.stderr)
    out: dict[str, Any] = {"peer_s": sum(per_budget.values())}
    try:
        _time(args, spec_path, work, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out.update(budgets=budgets, peer=peer)
    warm_txt = (f" warm={out['framesweep_warm_s']:.1f}s peer/warm={out['ratio_peer_over_framesweep_warm']:.2f}x"
                if args.warm else "")
    print(f"{peer}: {out['peer_s']:.1f}s over {len(per_budget)} budget(s); framesweep run {out['framesweep_s']:.1f}s "
          f"(first row {out['framesweep_first_row_s']:.1f}s) peer/framesweep={out['ratio_peer_over_framesweep']:.2f}x"
          f"{warm_txt}")
    if args.output_json:
        args.output_json.write_text(json.dumps({k: out[k] for k in KEYS}, indent=2))
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_cli_args(parser)
    main(parser.parse_args())
