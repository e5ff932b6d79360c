"""What page checksums cost a commit: encoding one result shard with Polars' writer (no checksums, as
before) and with the store's writer (pyarrow, a CRC-32 per page), side by side on the same rows.

Rows look like a sweep's (keys, 16 frame indices, 4 option probabilities, a short response). Timed: the
encoding to bytes only (the commit's file write and fsync are the same for both), best of --repeats.

    python benchmarks/shard_write.py --rows 1000,5000 --output-json out.json
"""

from __future__ import annotations

import argparse
import io
import json
import time
from pathlib import Path
from typing import Any

import polars as pl

from engine.results.pages import encode_shard
from engine.results.schema import ResultRow, rows_to_frame


def add_cli_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--rows", default="1000,5000", help="rows per shard, comma-separated")
    parser.add_argument("--repeats", type=int, default=20, help="timed encodings per size (best is kept)")
    parser.add_argument("--output-json", type=Path, default=None, help="write the results here")
    return parser


def _rows(n: int) -> list[ResultRow]:
    return [ResultRow(sweep_id="bench", model_id="m", model_family="qwen2_5_vl", dataset="videomme",
                      dataset_version="1", item_id=f"item-{i:06d}", video_id=f"v{i // 3}", task_kind="mcq",
                      budget_id=f"f{16 << (i % 4)}", frames=16, policy="uniform", seed=0,
                      frame_indices=list(range(0, 160, 10)), option_probs=[0.4, 0.3, 0.2, 0.1],
                      response="B", pred="B", correct=i % 2 == 0, decode_s=0.01, engine_s=0.2)
            for i in range(n)]


def _polars(frame: pl.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.write_parquet(buf, compression="zstd", statistics=True)
    return buf.getvalue()


def _best_ms(fn: Any, frame: pl.DataFrame, repeats: int) -> tuple[float, int]:
    best, size = float("inf"), 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        size = len(fn(frame))
        best = min(best, time.perf_counter() - t0)
    return best * 1e3, size


def main(args: argparse.Namespace) -> dict[str, Any]:
    sizes = {}
    for n in (int(x) for x in args.rows.split(",")):
        frame = rows_to_frame(_rows(n))
        before_ms, before_bytes = _best_ms(_polars, frame, args.repeats)
        after_ms, after_bytes = _best_ms(encode_shard, frame, args.repeats)
        sizes[str(n)] = {"polars_ms": before_ms, "checksummed_ms": after_ms, "ratio": after_ms / before_ms,
                         "polars_bytes": before_bytes, "checksummed_bytes": after_bytes}
    out = {"rows": sizes, "repeats": args.repeats}
    print(" ".join(f"rows={n}: polars={s['polars_ms']:.2f}ms checksummed={s['checksummed_ms']:.2f}ms "
                   f"x{s['ratio']:.2f}" for n, s in sizes.items()))
    if args.output_json:
        args.output_json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main(add_cli_args(argparse.ArgumentParser(description=__doc__.splitlines()[0])).parse_args())
