"""The released audit artifact: every item's outputs per chain, with its derived annotations and provenance.

`export(out_dir, to)` writes to the folder `to`:

- ``items.parquet``: one row per (model, dataset, protocol chain, item, chain budget) of the
  committed results (text-only rows appear once per chain, since every chain starts with them):
  the item's outputs (response, prediction, correctness, score, confidence, frames sent and
  their indices), the derived annotations of its chain (below) and the provenance of the row
  (sweep, engine and decoder versions, model path and a hash of its config and weight index,
  dataset version);
- ``scores.parquet``: each benchmark's official scores per (model, dataset, chain, budget)
  (`engine.metrics.official.chain_scores`: MME totals and subtasks, POPE, MMStar, MMBench circular
  accuracy with its incomplete questions, Video-MME, the Video-MME v2 group scores, MVBench,
  TempCompass, Video-MMMU; accuracy everywhere), the headline flagged;
- ``videos.parquet``: each video's low-level statistics, one row per (dataset, video_id), as the sweep computed
  them from the frames it decoded (`engine.results.video_stats`: duration, frame rate, resolution, motion
  energy, scene cuts, brightness, contrast, static share); no rows for a sweep that decoded no video;
- ``provenance.json``: the sweep spec as run, and per model its path and hashes;
- ``README.md``: a Hugging Face dataset card: YAML (licence ``other``: the items stay under their benchmarks'
  licences; task categories; the source benchmarks; the three tables as configs of one ``test`` split), then
  counts, the meaning of every column, each benchmark's licence (`engine.datasets.citations`: named where its
  release declares one, else "see the source benchmark", with where its release is) and its citation.

The folder is built whole in a hidden temp folder beside `to` and then renamed into place (an earlier
export there is replaced, its files never mixed with the new ones); a killed export leaves that temp
folder, which the next export to the same place removes. `to` must lie outside the results directory
(an artifact inside it would be read as part of the sweep) and be a new folder, an empty one or an
earlier export (`ExportTargetError` otherwise).

Annotations (definitions: `engine.metrics`; null for items not matched in their chain, i.e.
lacking a usable result at some budget of it): ``trajectory`` ("1"/"0" per chain budget,
cheapest first), ``confused`` (right at some budget, wrong at a later one), ``confused_visual``
(the same over visual budgets), ``text_overwrite`` (right text-only, wrong at some visual
budget), ``transition`` (this budget against the chain's previous one: ``rescue``, ``harm``,
``stay_right``, ``stay_wrong``; null at the first), ``terminal_regression``, and
``oracle_budgets`` (the chain budgets at which the item is right). Beside them the item's scoring
group (``group_id``, ``group_size``, ``group_type``, ``group_structure``) and, for a Video-MME v2
question, its group's score at that budget (``group_score``).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
from huggingface_hub import DatasetCard, DatasetCardData

from engine.config import register_spec_secrets
from engine.datasets.citations import CITATIONS
from engine.datasets.sources import known_sources
from engine.metrics.benchmark_scores import group_scores
from engine.metrics.confusion import confusion_items
from engine.metrics.grid import GROUP, chain_rows, grid_budgets, matched
from engine.metrics.official import chain_scores
from engine.metrics.overwrite import text_items
from engine.metrics.registry import registered_metrics
from engine.metrics.regression import terminal_items
from engine.provenance import model_hash, reader_versions, run_provenance
from engine.results.directory import ResultsDir
from engine.results.schema import REDACTED_COLUMNS
from engine.runtime.atomic import fsync_dir, is_own_temp, temp_name
from engine.runtime.output import write_json
from engine.runtime.processes import pid_alive
from engine.runtime.secrets import redact, redact_columns, register_secret_env

__all__ = ["COLUMNS", "ExportTargetError", "check_target", "export", "model_hash"]

ARTIFACT = ("items.parquet", "scores.parquet", "videos.parquet", "provenance.json", "README.md")
"""The files of an artifact folder."""


class ExportTargetError(ValueError):
    """`--to` cannot take the artifact (inside the results directory, a file, a folder of other files)."""

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
    "group_id": "items scored together (an MME image's questions, an MMBench question's rotations, a Video-MME v2 "
                "group)",
    "group_size": "how many items the benchmark puts in that group (MME 2, an MMBench question's options, "
                  "Video-MME v2 4)",
    "group_type": "Video-MME v2: the group's type (relevance | logic)",
    "group_structure": "Video-MME v2: the group's structure, e.g. [1,[2,3],4]",
    "group_score": "Video-MME v2: the group's score at this budget, 0-100 (null while one of its answers is missing)",
    "sweep_id": "the sweep", "dataset_version": "the adapter's version", "engine_version": "the engine's version",
    "decoder": "the video decoder", "decoder_version": "its package and version (e.g. av 14.2.0)",
    "pipeline": "raw (decoded) or cached (frame cache)",
    "model_path": "the model's path as the spec gives it",
    "model_hash": "the checkpoint's content fingerprint (SHA-256 over every file that shapes an answer)",
}
_ROW_COLUMNS = ["video_id", "frames", "frames_sent", "frame_indices", "width", "height", "pixels_total", "task_kind",
                "task_type", "category", "duration", "response", "pred", "answer", "correct", "score", "confidence",
                "option_probs", "status", "error_type", "sweep_id", "dataset_version", "engine_version", "decoder",
                "decoder_version", "pipeline", "group_id", "group_size", "group_type", "group_structure"]
SCORE_FIELDS: dict[str, str] = {
    "model_id": "the model", "dataset": "the benchmark", "protocol_id": "the chain", "budget_id": "the budget",
    "metric": "the score (engine.metrics.benchmark_scores), e.g. mme_perception, mmbench_circular_accuracy, "
              "videomme_v2_score",
    "subset": "its subtask, split, category, task, format or track (null: the whole benchmark)",
    "value": "MME and Video-MME v2 scores in points, counts as counts, the rest as fractions (null: not given)",
    "headline": "the benchmark's own score (accuracy where it has no official rule)",
    "missing": "a null MME total: the subtasks without a score",
}
"""The columns of ``scores.parquet`` and their meaning."""


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


def _metric_annotations(rows: pl.LazyFrame, frame: pl.LazyFrame) -> tuple[pl.LazyFrame, dict[str, str]]:
    """`frame` with the per-item columns of every registered metric that declares some
    (`engine.metrics.registry.Metric.annotations`), and those columns' meanings."""
    m, columns = matched(rows), dict[str, str]()
    for metric in registered_metrics():
        if metric.annotations is None:
            continue
        extra = metric.annotations(m)
        on = [*GROUP, "item_id", *(["budget_id"] if "budget_id" in extra.collect_schema().names() else [])]
        frame = frame.join(extra, on=on, how="left")
        columns.update(metric.annotation_columns)
    return frame, columns


def _provenance(results: ResultsDir) -> dict[str, Any]:
    """`engine.provenance.run_provenance`, with when and by which versions the artifact was exported."""
    record = run_provenance(results)
    return {**record, "exported_at": datetime.now(UTC).isoformat(), "exported_by": reader_versions()}


def _cell(value: object) -> str:
    """A Markdown table cell: a pipe or a line break in an id would end the cell or the row; HTML is shown as text."""
    text = " ".join(str(value).splitlines())
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


SPLIT = "test"
"""The split every table of the artifact is (an audit evaluates: no table is training data)."""


def _benchmarks(frame: pl.DataFrame, spec: dict[str, Any]) -> dict[str, str | None]:
    """{dataset id of the rows: its adapter name} (from the spec's dataset tables; a dataset id that is an adapter's
    name where the spec has none, as imported lmms-eval logs; None when unknown)."""
    tables = [spec["dataset"]] if isinstance(spec.get("dataset"), dict) else spec.get("datasets") or []
    named = {t.get("id") or t.get("name"): t.get("name") for t in tables if isinstance(t, dict)}
    ids = sorted(frame["dataset"].unique().to_list()) if frame.height else []
    return {d: named.get(d) or (d if d in known_sources() else None) for d in ids}


def _release(adapter: str | None) -> str:
    """Where a benchmark's release (and its licence) is: its Hub page, else the page its source names."""
    src = known_sources().get(adapter or "")
    if src is None:
        return "the source benchmark's own release"
    return f"https://huggingface.co/datasets/{src.where}" if src.on_hub else src.where


def _task_categories(frame: pl.DataFrame) -> list[str]:
    """The Hub's task categories: visual question answering always (images and frames asked with a question),
    video-text-to-text where some row sent more than one frame (a video)."""
    video = frame.height > 0 and bool((frame["frames_sent"].fill_null(0) > 1).any())
    return ["visual-question-answering", *(["video-text-to-text"] if video else [])]


def _card_data(prov: dict[str, Any], frame: pl.DataFrame, benchmarks: dict[str, str | None]) -> DatasetCardData:
    """The Hub's dataset-card metadata: licence, task categories, the source benchmarks, and the three tables as
    configs of one `test` split (`load_dataset(folder)` reads items.parquet)."""
    sources = known_sources()
    hub = sorted({sources[a].where for a in benchmarks.values() if a in sources and sources[a].on_hub})
    return DatasetCardData(
        pretty_name=f"framesweep audit: {prov.get('sweep_id')}", tags=["video", "evaluation", "framesweep"],
        license="other", license_name="source-benchmark-terms", task_categories=_task_categories(frame),
        source_datasets=hub or None,
        configs=[{"config_name": "items", "data_files": [{"split": SPLIT, "path": "items.parquet"}], "default": True},
                 {"config_name": "scores", "data_files": [{"split": SPLIT, "path": "scores.parquet"}]},
                 {"config_name": "videos", "data_files": [{"split": SPLIT, "path": "videos.parquet"}]}])


def _licence_lines(benchmarks: dict[str, str | None]) -> list[str]:
    """The card's licence section: the items are each benchmark's, under its licence (named where its release
    declares one) and terms; where to read them."""
    lines = ["## Licence", "",
             "The items (questions, options, answers, video and image ids) are the source benchmarks'; each "
             "benchmark's licence and terms govern them, and this artifact adds nothing that lifts them. The "
             "responses are the models' (their licences apply); the annotations and scores are derived from both. "
             "The header's `license: other` stands for these terms: set it to the licence you release the artifact "
             "under, no looser than the benchmarks'.", "", "| dataset | benchmark | licence | where |",
             "| --- | --- | --- | --- |"]
    for dataset, adapter in benchmarks.items():
        cite = CITATIONS.get(adapter or "")
        if adapter == "synthetic":
            name, licence = "framesweep's synthetic videos", "framesweep's own (no source benchmark)"
        else:
            name = cite.name if cite else adapter or "unknown"
            licence = (f"{cite.licence} (as its release declares)" if cite and cite.licence
                       else "see the source benchmark")
        terms = f"; {cite.terms}" if cite and cite.terms else ""
        lines.append(f"| {_cell(dataset)} | {_cell(name)} | {_cell(licence + terms)} | {_cell(_release(adapter))} |")
    return lines


def _citation_lines(benchmarks: dict[str, str | None]) -> list[str]:
    """The card's citation section: each benchmark's paper, or where to find it."""
    lines = ["## Citation", "", "Cite the benchmarks whose items this artifact holds:", ""]
    for adapter in dict.fromkeys(benchmarks.values()):
        if adapter == "synthetic":
            continue
        cite = CITATIONS.get(adapter or "")
        lines.append(f"- {cite.name}: {cite.line()}" if cite else
                     f"- {adapter or 'unknown'}: see the source benchmark ({_release(adapter)})")
    if len(lines) == 4:
        lines.append("- no source benchmark (framesweep's synthetic videos only)")
    return lines


_VIDEO_FIELDS = {
    "dataset": "Dataset id.", "video_id": "Video id (joins `items.parquet`).",
    "duration_s": "Length in seconds.", "fps": "Frames per second.", "width": "Displayed width (pixels).",
    "height": "Displayed height (pixels).", "pixels": "width x height.", "n_frames": "Frames in the file.",
    "frames_used": "Decoded frames the statistics come from (the union of the sweep's budgets).",
    "motion_energy": "Mean absolute luma difference of consecutive decoded frames (luma in [0, 1]).",
    "scene_cuts": "Consecutive decoded frames that differ past the cut threshold.", "brightness": "Mean luma.",
    "contrast": "Mean of each frame's luma standard deviation (RMS contrast).",
    "static_share": "Share of consecutive decoded frame pairs that barely differ.",
}
"""The columns of ``videos.parquet`` and their meaning (`engine.frames.stats` defines each statistic)."""


def _datacard(frame: pl.DataFrame, prov: dict[str, Any], n_videos: int = 0,
              columns: dict[str, str] | None = None) -> str:
    groups = frame.group_by("model_id", "dataset", "protocol_id").agg(
        pl.col("item_id").n_unique().alias("items"), pl.col("budget_id").n_unique().alias("budgets"),
        pl.col("trajectory").is_not_null().sum().alias("rows_matched")).sort("model_id", "dataset", "protocol_id")
    lines = [f"# framesweep audit artifact: {_cell(prov.get('sweep_id'))}", "",
             f"Exported {prov['exported_at']}. {frame.height} rows in `items.parquet`; the spec as run and the "
             "models' hashes in `provenance.json`.", "",
             "Load it with Polars (`pl.read_parquet('items.parquet')`) or with the `datasets` library "
             f"(`load_dataset(FOLDER, split='{SPLIT}')`; `load_dataset(FOLDER, 'scores', split='{SPLIT}')` for the "
             "official scores).", "",
             ("Rows are the budgets of each chain (text-only first, then one protocol's budgets by frames). "
              "The per-chain annotations describe right/wrong trajectories: they are null for items not "
              "matched in their chain (no usable result at some budget of it) and for open answers (scored, "
              "not judged right or wrong; their `score` is kept). Rows off every chain (the confidence "
              "cascade's decisions, answers at predicted budgets) are not part of the artifact."), "",
             "## Chains", "", "| model | dataset | protocol | items | budgets | rows matched |",
             "| --- | --- | --- | ---: | ---: | ---: |"]
    lines += ["| " + " | ".join(_cell(r[k]) for k in ("model_id", "dataset", "protocol_id", "items", "budgets",
                                                     "rows_matched")) + " |" for r in groups.iter_rows(named=True)]
    lines += ["", "## Columns", "", "| column | meaning |", "| --- | --- |"]
    lines += [f"| `{c}` | {(columns or COLUMNS)[c]} |" for c in frame.columns]
    lines += ["", "## Official scores (`scores.parquet`)", "",
              "One row per (model, dataset, chain, budget, score): every benchmark as it publishes its score, over "
              "the ok rows of the budget.", "", "| column | meaning |", "| --- | --- |"]
    lines += [f"| `{c}` | {m} |" for c, m in SCORE_FIELDS.items()]
    lines += ["", "## Videos (`videos.parquet`)", "",
              f"Low-level statistics of the {n_videos} video(s) the sweep decoded, computed from the frames it "
              "decoded (no second pass): one row per (dataset, video_id).", "", "| column | meaning |",
              "| --- | --- |"]
    lines += [f"| `{c}` | {m} |" for c, m in _VIDEO_FIELDS.items()]
    benchmarks = _benchmarks(frame, prov.get("spec") or {})
    lines += ["", *_licence_lines(benchmarks), "", *_citation_lines(benchmarks)]
    body = "\n".join(lines) + "\n"
    return str(DatasetCard(f"---\n{_card_data(prov, frame, benchmarks).to_yaml()}\n---\n\n{body}"))


def _register_secrets(spec: dict[str, Any]) -> None:
    """The API keys the spec's servers were called with (read from this environment, by the variable each
    model names), the credentials in their URLs and the cluster token, so that none is copied into the artifact."""
    register_spec_secrets(spec)
    register_secret_env("RAY_AUTH_TOKEN")


def export(out_dir: Path | str | ResultsDir, to: Path | str) -> dict[str, Any]:
    """Write the artifact of the results in `out_dir` to the folder `to` (see the module docstring).

    Returns:
        {"rows": n, "path": items.parquet path, "chains": n}.

    Raises:
        ResultsDirError: `out_dir` cannot be read (named: no results/, a damaged manifest, an unreadable shard).
    """
    results = ResultsDir.of(out_dir)  # its manifest and each shard's footer read once, here
    out_dir, to = results.path, Path(to)
    check_target(out_dir, to)
    to = to.resolve()  # a link to a folder: the folder it names is replaced, not the link
    prov = _provenance(results)
    _register_secrets(prov["spec"])
    rows = results.rows().collect().lazy()
    on_chain = chain_rows(rows).join(grid_budgets(rows), on=[*GROUP, "budget_id"], how="semi")
    models = pl.LazyFrame({"model_id": list(prov["models"]) or [""],
                           "model_path": [v["path"] for v in prov["models"].values()] or [None],
                           "model_hash": [v["hash"] for v in prov["models"].values()] or [None]},
                          schema={"model_id": pl.String, "model_path": pl.String, "model_hash": pl.String})
    groups = group_scores(rows).select("model_id", "dataset", "budget_id", "group_id",
                                       pl.col("score").alias("group_score"))
    annotated, extra = _metric_annotations(rows, on_chain.select(*GROUP, "item_id", "budget_id", *_ROW_COLUMNS)
                                           .join(_annotations(rows), on=[*GROUP, "item_id", "budget_id"], how="left"))
    columns = {**COLUMNS, **extra}
    frame = (
        annotated
        .join(groups, on=["model_id", "dataset", "budget_id", "group_id"], how="left")
        .join(models, on="model_id", how="left")
        .select(list(columns))
        .sort([*GROUP, "item_id", "frames", "budget_id"])
        .pipe(redact_columns, REDACTED_COLUMNS)  # rows stored by an older version or imported may hold a key
        .collect()
    )
    scores = chain_scores(rows).select(list(SCORE_FIELDS)).collect()  # keys and numbers: nothing a server wrote
    videos = results.video_stats().drop("written_at").sort("dataset", "video_id").collect()
    with _building(to) as tmp:
        _write_parquet(frame, tmp / "items.parquet")
        _write_parquet(scores, tmp / "scores.parquet")
        _write_parquet(videos, tmp / "videos.parquet")
        write_json(tmp / "provenance.json", prov, durable=False)  # the folder is synced whole
        (tmp / "README.md").write_text(redact(_datacard(frame, prov, videos.height, columns)))
    return {"rows": frame.height, "path": str(to / "items.parquet"), "chains": frame.select(GROUP).n_unique()}


def _write_parquet(frame: pl.DataFrame, path: Path) -> None:
    """`frame` as Parquet, encoded in memory first: a full disk then fails in a plain write with ENOSPC, not inside
    the Parquet writer (which reports it as "Invalid thrift: transport error")."""
    buf = io.BytesIO()
    frame.write_parquet(buf, compression="zstd")
    path.write_bytes(buf.getvalue())


def check_target(out_dir: Path | str, to: Path | str) -> None:
    """Raise `ExportTargetError` (one sentence) unless `to` can take the artifact of `out_dir`."""
    out_dir, to = Path(out_dir), Path(to)
    real_out, real_to = out_dir.resolve(), to.resolve()
    if real_to == real_out or real_out in real_to.parents:
        raise ExportTargetError(f"--to {to} is inside the results directory {out_dir} (the artifact would be read "
                                "as part of the sweep); give a folder outside it")
    if not to.exists():
        return
    if not to.is_dir():
        raise ExportTargetError(f"--to {to} is an existing file; give a folder (a new one, or an earlier "
                                "export to replace)")
    other = sorted(p.name for p in to.iterdir() if p.name not in ARTIFACT and not is_own_temp(p.name))
    if other:
        raise ExportTargetError(f"--to {to} is a folder holding other files ({', '.join(other[:3])}"
                                f"{', ...' if len(other) > 3 else ''}), which an export would replace; give a new "
                                "or empty folder, or an earlier export")


def _stale_pattern(to: Path) -> re.Pattern[str]:
    """The temp folders `_building` names beside `to` (`temp_name`'s names), the pid first."""
    return re.compile(rf"\.{re.escape(to.name)}\.fs-(\d+)-\d+-[0-9a-f]+\.(?:new|old)")


def _temp(to: Path, kind: str) -> Path:
    """A folder name beside `to` in framesweep's temp naming, `.NAME.fs-<pid>-<thread>-<hex>.<kind>`."""
    name = temp_name(to).name
    return to.with_name(f"{name.removesuffix('.tmp')}.{kind}")


def clean_stale_exports(to: Path) -> list[Path]:
    """Remove the temp folders a killed export to `to` left beside it (their process gone); an earlier export
    moved aside (`.old`) while `to` itself is missing is put back first. Returns what was removed."""
    pattern, removed = _stale_pattern(to), []
    for p in sorted(to.parent.iterdir()):
        m = pattern.fullmatch(p.name)
        if m is None or not p.is_dir() or p.is_symlink() or pid_alive(int(m.group(1))):
            continue
        if p.name.endswith(".old") and not to.exists():
            os.replace(p, to)  # killed between its two renames: the earlier export is still the artifact
            continue
        shutil.rmtree(p, ignore_errors=True)
        removed.append(p)
    return removed


@contextlib.contextmanager
def _building(to: Path) -> Iterator[Path]:
    """A hidden folder beside `to` to write the artifact in; on success it replaces `to` whole (an earlier
    export moved aside first, removed after); on any error it is removed."""
    to.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_exports(to)
    tmp, old = _temp(to, "new"), _temp(to, "old")
    tmp.mkdir()
    try:
        yield tmp
        for f in tmp.iterdir():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        fsync_dir(tmp)
        if to.exists():
            os.replace(to, old)
        os.replace(tmp, to)
        fsync_dir(to.parent)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
