"""The confidence cascade and the frame-count predictor, measured on the trained tiny model.

`tiny:qwen2_5_vl_seen` answers the synthetic benchmark's version-2 questions on held-out videos (seed 2000 by
default: not its training stream) through the real pipeline (H.264 decode, the frame planner, the vLLM CPU
engine, letter scoring). The grid: 4, 8, 16 and 32 frames at full size, `nested@32` sampling (each budget's
frames are a prefix of the next one's, so a cascade stage decodes only frames no earlier stage holds).
One run measures, on the same engine:

1. The confidence cascade 4 -> 8 -> 16 -> 32 frames against the fixed largest budget (32 frames), through
   `engine.adaptive.cascade.run_cascade` (what `framesweep cascade` runs): the grid is swept, then the fixed
   budget and the online cascade are each timed `--repeats` times from cold engine caches, in alternating order.
   *Matched accuracy*: the online threshold tau is the cheapest one of the grid of taus (0, 0.05, ..., 1)
   whose simulated cascade accuracy reaches the fixed budget's on these items (`engine.metrics.cascade.
   match_fixed`: an in-sample choice, so optimistic); when none does, the most accurate tau (`matched`
   false). The out-of-sample estimate beside it is `crossfit_match` (5 folds: each fold's tau is chosen on
   the other folds).
2. The frame-count predictor (`engine.adaptive.predictor.predict_frames`, what `framesweep predict` asks):
   the same model is asked, text only, for the minimum frame count among the grid's; scored by
   `engine.metrics.predictor.evaluate_predictor` (what `framesweep predictor-eval` prints) against each item's
   cheapest sufficient budget (the cheapest budget of the grid answered right; items right nowhere are
   "unsolvable" and left out of agreement).

Printed, and written to `--output-json` with these fixed keys:

    model, videos, items, seed, budgets, stages, fixed_budget, repeats, errors, wall_s
    accuracy          {budget_id: accuracy over the matched items}
    accuracy_by_kind  {question kind: {budget_id: accuracy}}
    cascade           tau, matched (the in-sample tau reaches the fixed accuracy), n_items,
                      accuracy, fixed_accuracy, accuracy_delta (cascade - fixed, online),
                      mean_frames_processed, mean_frames_decoded, fixed_mean_frames,
                      frames_saved (1 - mean_frames_processed / fixed_mean_frames),
                      unique_frames_saved (1 - mean_frames_decoded / fixed_mean_frames),
                      wall_s, fixed_wall_s (medians over rounds), wall_ratio_median/min/max (cascade / fixed
                      per round), wall_saved (1 - wall_ratio_median), rounds, decision_agreement (online vs
                      offline stop), mean_requests (stages visited per item; the fixed budget: 1),
                      stops_by_kind {kind: {stop budget: n}},
                      offline {accuracy, mean_frames, mean_unique_frames},
                      crossfit {k, accuracy, fixed_accuracy, accuracy_delta, frames_saved, unique_frames_saved,
                                n_folds_matched}
    predictor         n_items, n_solvable, n_unsolvable, n_unparsed, agreement, n_agree, n_under, n_over,
                      accuracy, mean_frames, oracle_accuracy, oracle_mean_frames,
                      cheapest_agreement (the agreement of a predictor that always names the cheapest budget:
                      the baseline any agreement is to be read against),
                      fixed [{budget_id, accuracy, mean_frames, accuracy_delta, frames_saved}],
                      predicted_by_kind {kind: {frames: n}}, sufficient_by_kind {kind: {budget or "none": n}}

    python benchmarks/adaptive_seen.py --videos 40 --output-json out.json
    python benchmarks/adaptive_seen.py --smoke      # 2 videos, 1 round: checks the script end to end
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import polars as pl

MODEL = "seen"
STAGES = ["f4", "f8", "f16", "f32"]
FIXED = "f32"


def spec_dict(out: Path, videos: int, seed: int) -> dict[str, Any]:
    return {
        "sweep_id": "adaptive-seen",
        "models": [{"id": MODEL, "family": "qwen2_5_vl", "path": "tiny:qwen2_5_vl_seen", "max_frames": 32,
                    "engine": {"max_model_len": 4096, "max_num_seqs": 32, "dtype": "float32"}}],
        "dataset": {"name": "synthetic", "version": 2, "n_videos": videos, "seed": seed},
        "budgets": [{"frames": int(b[1:]), "policy": "nested@32", "id": b} for b in STAGES],
        "prompt": {"scoring": "letter"},
        "store": {"out_dir": str(out), "commit_interval_s": 5.0},
    }


def _r(x: Any, nd: int = 4) -> Any:
    return None if x is None else round(float(x), nd)


def choose_tau(m: pl.LazyFrame) -> tuple[float, bool]:
    """The cheapest tau whose simulated accuracy reaches the fixed budget's (in sample); else the most accurate."""
    from engine.metrics.cascade import cascade_curve, fixed_cost, match_fixed

    curve = cascade_curve(m.filter(pl.col("budget_id").is_in(STAGES)))
    hit = match_fixed(curve, fixed_cost(m, FIXED)).collect()
    if hit.height:
        return float(hit["tau"][0]), True
    best = curve.collect().sort(["accuracy", "mean_frames", "tau"], descending=[True, False, False])
    return float(best["tau"][0]), False


def crossfit(m: pl.LazyFrame) -> dict[str, Any]:
    from engine.metrics.cascade import DEFAULT_FOLDS, crossfit_match

    summary, _ = crossfit_match(m.filter(pl.col("budget_id").is_in(STAGES)), m, FIXED)
    row = summary.collect().row(0, named=True)
    return {"k": DEFAULT_FOLDS, **{k: _r(row[k]) for k in ("accuracy", "fixed_accuracy", "accuracy_delta",
                                                            "frames_saved", "unique_frames_saved")},
            "n_folds_matched": int(row["n_folds_matched"])}


def counts(df: pl.DataFrame, col: str) -> dict[str, dict[str, int]]:
    """{kind: {value of col (or "none"): n}}."""
    out: dict[str, dict[str, int]] = {}
    for r in df.group_by(["task_type", col]).len().sort(["task_type", col], nulls_last=True).iter_rows(named=True):
        out.setdefault(r["task_type"], {})["none" if r[col] is None else str(r[col])] = int(r["len"])
    return out


def cascade_part(rep: Any, kinds: pl.DataFrame, tau: float, matched_in_sample: bool, cf: dict[str, Any],
                 session: Path) -> dict[str, Any]:
    from engine.adaptive.cascade_report import online_decisions

    fixed_frames = rep.fixed_mean_frames
    stops = online_decisions(session / "round1" / "online", tau).collect().join(kinds, on="item_id", how="left")
    return {
        "tau": tau, "matched": matched_in_sample, "n_items": rep.n_items,
        "accuracy": _r(rep.accuracy), "fixed_accuracy": _r(rep.fixed_accuracy),
        "accuracy_delta": _r(rep.accuracy - rep.fixed_accuracy),
        "mean_frames_processed": _r(rep.mean_frames_processed), "mean_frames_decoded": _r(rep.mean_frames_decoded),
        "fixed_mean_frames": _r(fixed_frames),
        "frames_saved": _r(1 - rep.mean_frames_processed / fixed_frames),
        "unique_frames_saved": _r(1 - rep.mean_frames_decoded / fixed_frames),
        "wall_s": _r(rep.wall_s, 2), "fixed_wall_s": _r(rep.fixed_wall_s, 2),
        "wall_ratio_median": _r(rep.ratio_median), "wall_ratio_min": _r(rep.ratio_min),
        "wall_ratio_max": _r(rep.ratio_max), "wall_saved": _r(1 - rep.ratio_median),
        "rounds": [{k: (_r(v, 3) if isinstance(v, float) else v) for k, v in r.items()} for r in rep.rounds],
        "decision_agreement": _r(rep.decision_agreement),
        "mean_requests": _r(stops["stop_budget"].replace_strict(
            {b: k + 1 for k, b in enumerate(STAGES)}, return_dtype=pl.Float64).mean()),
        "stops_by_kind": counts(stops, "stop_budget"),
        "offline": {k: _r(rep.offline.get(k)) for k in ("accuracy", "mean_frames", "mean_unique_frames")},
        "crossfit": cf,
    }


def predictor_part(out: Path, rows: pl.DataFrame, kinds: pl.DataFrame) -> dict[str, Any]:
    from engine.adaptive.predictions import scan_predictions
    from engine.metrics.predictor import evaluate_predictor

    tables = {k: v.collect() for k, v in evaluate_predictor(rows.lazy(), scan_predictions(out), MODEL).items()}
    s = tables["summary"].row(0, named=True)
    items = tables["items"].join(kinds, on="item_id", how="left")
    keep = ("n_items", "n_solvable", "n_unsolvable", "n_unparsed", "agreement", "n_agree", "n_under", "n_over",
            "accuracy", "mean_frames", "oracle_accuracy", "oracle_mean_frames")
    at_cheapest = int((items["sufficient_budget"] == STAGES[0]).sum())
    return {
        **{k: (_r(s[k]) if isinstance(s[k], float) else s[k]) for k in keep},
        "cheapest_agreement": _r(at_cheapest / s["n_solvable"]) if s["n_solvable"] else None,
        "fixed": [{k: (_r(r[k]) if isinstance(r[k], float) else r[k])
                   for k in ("budget_id", "accuracy", "mean_frames", "accuracy_delta", "frames_saved")}
                  for r in tables["fixed"].iter_rows(named=True)],
        "predicted_by_kind": counts(items, "predicted_frames"),
        "sufficient_by_kind": counts(items, "sufficient_budget"),
    }


def accuracy_tables(m: pl.DataFrame, kinds: pl.DataFrame) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    by_budget = {b: _r(m.filter(pl.col("budget_id") == b)["c"].cast(pl.Float64).mean()) for b in STAGES}
    mk = m.join(kinds, on="item_id", how="left")
    by_kind: dict[str, dict[str, float]] = {}
    for kind in sorted(mk["task_type"].unique().to_list()):
        sub = mk.filter(pl.col("task_type") == kind)
        by_kind[kind] = {b: _r(sub.filter(pl.col("budget_id") == b)["c"].cast(pl.Float64).mean()) for b in STAGES}
    return by_budget, by_kind


async def measure(spec_d: dict[str, Any], repeats: int) -> dict[str, Any]:
    from engine.adaptive.cascade import new_session_dir, run_cascade
    from engine.adaptive.predictor import predict_frames
    from engine.config import parse_spec
    from engine.metrics.grid import matched
    from engine.results.directory import ResultsDir
    from engine.sweep import Sweep, start_backends

    spec = parse_spec(spec_d)
    out = Path(spec.store.out_dir)
    backends = await start_backends(spec)
    try:
        await Sweep(spec, backends=backends).run()
        rows = ResultsDir.open(out).rows().collect()
        kinds = rows.select("item_id", "task_type").unique("item_id")
        m = matched(rows.lazy(), budgets=STAGES)
        tau, hit = choose_tau(m)
        cf = crossfit(m)
        session = new_session_dir(out)
        rep = await run_cascade(spec, STAGES, tau, session, FIXED, backends=backends, repeats=repeats)
        await predict_frames(spec, MODEL, backends)
    finally:
        await asyncio.gather(*(b.close() for b in backends.values()), return_exceptions=True)
    acc, acc_kind = accuracy_tables(m.collect(), kinds)
    return {"errors": int(rows["error_type"].is_not_null().sum()), "accuracy": acc, "accuracy_by_kind": acc_kind,
            "cascade": cascade_part(rep, kinds, tau, hit, cf, session),
            "predictor": predictor_part(out, rows, kinds)}


def show(result: dict[str, Any]) -> None:
    c, p = result["cascade"], result["predictor"]
    print("accuracy by budget: " + "  ".join(f"{b}={a:.3f}" for b, a in result["accuracy"].items()))
    for kind, accs in result["accuracy_by_kind"].items():
        print(f"  {kind:13} " + "  ".join(f"{b}={a:.2f}" for b, a in accs.items()))
    print(f"cascade {' -> '.join(result['stages'])} at tau {c['tau']:g} ({'matched' if c['matched'] else 'NOT matched'}"
          f" in sample): accuracy {c['accuracy']:.3f} vs {result['fixed_budget']} {c['fixed_accuracy']:.3f}; frames "
          f"processed {c['mean_frames_processed']:.2f} ({c['frames_saved']:+.1%} saved), decoded "
          f"{c['mean_frames_decoded']:.2f} ({c['unique_frames_saved']:+.1%} saved) vs {c['fixed_mean_frames']:.2f};"
          f" wall {c['wall_s']:.2f}s vs {c['fixed_wall_s']:.2f}s ({c['wall_saved']:+.1%} saved, median of "
          f"{len(c['rounds'])}; {c['mean_requests']:.2f} requests per item vs 1)")
    cf = c["crossfit"]
    print(f"  out of sample ({cf['k']} folds): accuracy {cf['accuracy']:.3f} vs {cf['fixed_accuracy']:.3f}, frames "
          f"saved {cf['frames_saved']:+.1%}, folds matched {cf['n_folds_matched']}/{cf['k']}")
    print(f"  stops: {c['stops_by_kind']}")
    print(f"predictor: agreement {p['agreement']} ({p['n_agree']}/{p['n_solvable']} solvable; under {p['n_under']},"
          f" over {p['n_over']}; always-cheapest baseline {p['cheapest_agreement']}); accuracy {p['accuracy']:.3f} "
          f"at {p['mean_frames']:.2f} frames; oracle "
          f"{p['oracle_accuracy']:.3f} at {p['oracle_mean_frames']:.2f}")
    print(f"  predicted: {p['predicted_by_kind']}")
    print(f"  sufficient: {p['sufficient_by_kind']}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--videos", type=int, default=40, help="held-out videos (5 questions each)")
    p.add_argument("--seed", type=int, default=2000, help="the evaluation seed of the videos")
    p.add_argument("--repeats", type=int, default=3, help="timing rounds of the fixed budget and the cascade")
    p.add_argument("--smoke", action="store_true", help="2 videos, 1 round: checks the script end to end")
    p.add_argument("--out-dir", type=Path, default=None, help="results directory (default: a temporary one)")
    p.add_argument("--output-json", type=Path, default=None)
    args = p.parse_args(argv)
    videos, repeats = (2, 1) if args.smoke else (args.videos, args.repeats)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out_dir or Path(tmp) / "run"
        measured = asyncio.run(measure(spec_dict(out, videos, args.seed), repeats))
    result = {"model": "tiny:qwen2_5_vl_seen", "videos": videos, "items": videos * 5, "seed": args.seed,
              "budgets": STAGES, "stages": STAGES, "fixed_budget": FIXED, "repeats": repeats, **measured,
              "wall_s": round(time.perf_counter() - t0, 1)}
    show(result)
    if args.output_json:
        args.output_json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
