"""The released audit artifact: every item's outputs per chain, with its derived annotations and provenance.

`export(out_dir, to)` writes to the folder `to`:

- ``items.parquet``: one row per (model, dataset, protocol chain, item, chain budget) of the
  committed results (text-only rows appear once per chain, since every chain starts with them):
  the item's outputs (response, prediction, correctness, score, confidence, frames sent and
  their indices), the derived annotations of its chain (below) and the provenance of the row
  (sweep, engine and decoder versions, model path and a hash of its config and weight index,
  dataset version);
- ``provenance.json``: the sweep spec as run, and per model its path and hashes;
- ``README.md``: a datacard with counts and the meaning of every column.

Annotations (definitions: `engine.metrics`; null for items not matched in their chain, i.e.
lacking a usable result at some budget of it): ``trajectory`` ("1"/"0" per chain budget,
cheapest first), ``confused`` (right at some budget, wrong at a later one), ``confused_visual``
(the same over visual budgets), ``text_overwrite`` (right text-only, wrong at some visual
budget), ``transition`` (this budget against the chain's previous one: ``rescue``, ``harm``,
``stay_right``, ``stay_wrong``; null at the first), ``terminal_regression``, and
``oracle_budgets`` (the chain budgets at which the item is right).
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from engine import __version__
from engine.backends.checkpoint import checkpoint_fingerprint, model_folder
from engine.metrics.confusion import confusion_items
from engine.metrics.grid import GROUP, chain_rows, grid_budgets, matched
from engine.metrics.overwrite import text_items
from engine.metrics.regression import terminal_items
from engine.results.store import own_rows
from engine.runtime.atomic import atomic_write
from engine.runtime.secrets import redact, redact_columns, register_secret_env

__all__ = ["COLUMNS", "export"]

COLUMNS: dict[str, str] = {
    "model_id": "the model (the spec's id)",
    "dataset": "the benchmark",
    "protocol_id": "the chain: everything but the frame count (resolution, policy, seed, pipeline); default = none",
    "item_id": "the benchmark's item id",
    "video_id": "the item's video (or image)",
    "budget_id": "the budget (frames and protocol)",
    "frames": "frames asked for (0: text-only)",
    "frames_sent": "frames actually sent",
    "frame_indices": "indices of the sent frames in the video",
    "width": "width of the sent frames", "height": "height of the sent frames",
    "pixels_total": "frames_sent x width x height",
    "task_kind": "mcq | yesno | open | dialog", "task_type": "the benchmark's task type",
    "category": "the benchmark's category", "duration": "the benchmark's duration class",
    "response": "the model's answer text", "pred": "the prediction scored (a letter, yes/no or the text)",
    "answer": "the reference answer", "correct": "right or wrong (mcq, yes/no; null for open answers)",
    "score": "1/0, or token-F1 for open answers", "confidence": "probability of the predicted option letter",
    "option_probs": "probability of every option letter",
    "status": "ok | error", "error_type": "the error's type (error rows)",
    "trajectory": "1/0 per chain budget, cheapest first (matched items)",
    "confused": "right at some chain budget and wrong at a later one",
    "confused_visual": "the same over the chain's visual budgets only",
    "text_overwrite": "right text-only and wrong at some visual budget",
    "transition": "this budget against the chain's previous one: rescue, harm, stay_right, stay_wrong",
    "terminal_regression": "wrong at the chain's dearest budget, right at a cheaper visual one",
    "oracle_budgets": "the chain budgets at which the item is right",
    "sweep_id": "the sweep", "dataset_version": "the adapter's version", "engine_version": "the engine's version",
    "decoder": "the video decoder", "decoder_version": "its package and version (e.g. av 14.2.0)",
    "pipeline": "raw (decoded) or cached (frame cache)",
    "model_path": "the model's path as the spec gives it", "model_hash": "SHA-256 of its config and weight index",
}
_ROW_COLUMNS = ["video_id", "frames", "frames_sent", "frame_indices", "width", "height", "pixels_total", "task_kind",
                "task_type", "category", "duration", "response", "pred", "answer", "correct", "score", "confidence",
                "option_probs", "status", "error_type", "sweep_id", "dataset_version", "engine_version", "decoder",
                "decoder_version", "pipeline"]


def model_hash(path: str) -> str | None:
    """SHA-256 over the model's config.json, its weight index and its weight files' names and sizes
    (`engine.backends.checkpoint.checkpoint_fingerprint` without modification times: copies hash alike), None
    if not found.

    `path` is a folder, ``tiny:NAME`` (the local tiny build) or a hub id, read from the local hub
    cache's snapshot of its default revision (nothing is downloaded)."""
    folder = model_folder(path)
    return None if folder is None else checkpoint_fingerprint(folder, mtime=False)


def _annotations(rows: pl.LazyFrame) -> pl.LazyFrame:
    m = matched(rows)
    bit = pl.when(pl.col("c")).then(pl.lit("1")).otherwise(pl.lit("0"))
    per_item = m.group_by([*GROUP, "item_id"]).agg(
        bit.sort_by("rank").str.join("").alias("trajectory"),
        pl.col("budget_id").filter(pl.col("c")).sort_by(pl.col("rank").filter(pl.col("c"))).alias("oracle_budgets"))
    text = text_items(m).select(*GROUP, "item_id", (pl.col("text_correct") & pl.col("any_wrong").fill_null(False))
                                .alias("text_overwrite"))
    prev = pl.col("c").shift(1).over([*GROUP, "item_id"], order_by="rank")
    transition = (pl.when(prev.is_null()).then(None)
                  .when(prev & pl.col("c")).then(pl.lit("stay_right"))
                  .when(prev).then(pl.lit("harm"))
                  .when(pl.col("c")).then(pl.lit("rescue"))
                  .otherwise(pl.lit("stay_wrong")))
    cells = m.select(*GROUP, "item_id", "budget_id", transition.alias("transition"))
    items = (per_item.join(confusion_items(m), on=[*GROUP, "item_id"], how="left")
             .join(text, on=[*GROUP, "item_id"], how="left")
             .join(terminal_items(m).rename({"terminal": "terminal_regression"}), on=[*GROUP, "item_id"], how="left"))
    return cells.join(items, on=[*GROUP, "item_id"], how="left")


def _provenance(out_dir: Path) -> dict[str, Any]:
    manifest_path = out_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    spec = manifest.get("spec") or {}
    models = {m["id"]: {"path": m.get("path"), "family": m.get("family"), "hash": model_hash(m.get("path") or "")}
              for m in spec.get("models", [])}
    return {"sweep_id": manifest.get("sweep_id"), "exported_at": datetime.now(UTC).isoformat(),
            "framesweep_version": manifest.get("framesweep_version"), "exported_by": exporter_versions(),
            "spec": spec, "models": models}


def exporter_versions() -> dict[str, str | None]:
    """The versions of framesweep and of the packages that read and wrote the artifact."""
    def version(dist: str) -> str | None:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return None

    return {"framesweep": __version__, "python": platform.python_version(), "polars": version("polars"),
            "pyarrow": version("pyarrow")}


def _datacard(frame: pl.DataFrame, prov: dict[str, Any]) -> str:
    groups = frame.group_by("model_id", "dataset", "protocol_id").agg(
        pl.col("item_id").n_unique().alias("items"), pl.col("budget_id").n_unique().alias("budgets"),
        pl.col("trajectory").is_not_null().sum().alias("rows_matched")).sort("model_id", "dataset", "protocol_id")
    lines = [f"# framesweep audit artifact: {prov.get('sweep_id')}", "",
             f"Exported {prov['exported_at']}. {frame.height} rows in `items.parquet`; the spec as run and the "
             "models' hashes in `provenance.json`.", "",
             "Load it with Polars (`pl.read_parquet('items.parquet')`) or with the `datasets` library "
             "(`load_dataset('parquet', data_files='items.parquet')`).", "",
             ("Rows are the budgets of each chain (text-only first, then one protocol's budgets by frames). "
              "The per-chain annotations describe right/wrong trajectories: they are null for items not "
              "matched in their chain (no usable result at some budget of it) and for open answers (scored, "
              "not judged right or wrong; their `score` is kept). Rows off every chain (the confidence "
              "cascade's decisions, answers at predicted budgets) are not part of the artifact."), "",
             "## Chains", "", "| model | dataset | protocol | items | budgets | rows matched |",
             "| --- | --- | --- | ---: | ---: | ---: |"]
    lines += [f"| {r['model_id']} | {r['dataset']} | {r['protocol_id']} | {r['items']} | {r['budgets']} | "
              f"{r['rows_matched']} |" for r in groups.iter_rows(named=True)]
    lines += ["", "## Columns", "", "| column | meaning |", "| --- | --- |"]
    lines += [f"| `{c}` | {COLUMNS[c]} |" for c in frame.columns]
    return "\n".join(lines) + "\n"


def _register_secrets(spec: dict[str, Any]) -> None:
    """The API keys the spec's servers were called with (read from this environment, by the variable each
    model names) and the cluster token, so that none is copied into the artifact."""
    names = [(m.get("http") or {}).get("api_key_env") for m in spec.get("models", [])]
    register_secret_env("RAY_AUTH_TOKEN", *[n for n in names if n])


def export(out_dir: Path | str, to: Path | str) -> dict[str, Any]:
    """Write the artifact of the results in `out_dir` to the folder `to` (see the module docstring).

    Returns:
        {"rows": n, "path": items.parquet path, "chains": n}.
    """
    out_dir, to = Path(out_dir), Path(to)
    prov = _provenance(out_dir)
    _register_secrets(prov["spec"])
    rows = own_rows(out_dir)[0].collect().lazy()
    on_chain = chain_rows(rows).join(grid_budgets(rows), on=[*GROUP, "budget_id"], how="semi")
    models = pl.LazyFrame({"model_id": list(prov["models"]) or [""],
                           "model_path": [v["path"] for v in prov["models"].values()] or [None],
                           "model_hash": [v["hash"] for v in prov["models"].values()] or [None]},
                          schema={"model_id": pl.String, "model_path": pl.String, "model_hash": pl.String})
    frame = (
        on_chain.select(*GROUP, "item_id", "budget_id", *_ROW_COLUMNS)
        .join(_annotations(rows), on=[*GROUP, "item_id", "budget_id"], how="left")
        .join(models, on="model_id", how="left")
        .select([c for c in COLUMNS])
        .sort([*GROUP, "item_id", "frames", "budget_id"])
        .pipe(redact_columns)  # rows stored by an older version or imported may hold a key
        .collect()
    )
    to.mkdir(parents=True, exist_ok=True)
    items = to / "items.parquet"
    atomic_write(items, lambda fh: frame.write_parquet(fh, compression="zstd"))
    atomic_write(to / "provenance.json", redact(json.dumps(prov, indent=2, default=str)))
    atomic_write(to / "README.md", redact(_datacard(frame, prov)))
    return {"rows": frame.height, "path": str(items), "chains": frame.select(GROUP).n_unique()}
