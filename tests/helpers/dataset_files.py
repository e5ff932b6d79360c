"""Fixture writers for the benchmark adapter tests: real formats, tiny contents (a helper module, not a conftest)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import polars as pl
from PIL import Image

from engine.config.datasets import VideoMMEv2Spec


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def write_parquet(path: Path, rows: list[dict[str, Any]], schema: dict[str, pl.DataType]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows, schema=schema).write_parquet(path)
    return path


def touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


def png_bytes(colour: tuple[int, int, int] = (200, 30, 30), size: tuple[int, int] = (8, 6)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, format="PNG")
    return buf.getvalue()


VIDEOMME_SCHEMA: dict[str, pl.DataType] = {
    "video_id": pl.String(), "duration": pl.String(), "domain": pl.String(), "sub_category": pl.String(),
    "url": pl.String(), "videoID": pl.String(), "question_id": pl.String(), "task_type": pl.String(),
    "question": pl.String(), "options": pl.List(pl.String()), "answer": pl.String(),
}


def videomme_row(vnum: str, vid: str, q: int, answer: str = "B", **over: Any) -> dict[str, Any]:
    """One Video-MME test row (column order and types as in videomme/test-00000-of-00001.parquet)."""
    row = {
        "video_id": vnum, "duration": "short", "domain": "Knowledge", "sub_category": "Humanity & History",
        "url": f"https://www.youtube.com/watch?v={vid}", "videoID": vid, "question_id": f"{vnum}-{q}",
        "task_type": "Counting Problem", "question": f"How many apples are there in question {q}?",
        "options": ["A. One.", "B. Two.", "C. Three.", "D. Four."], "answer": answer,
    }
    row.update(over)
    return row


def videomme_fixture(root: Path, rows: list[dict[str, Any]] | None = None, present: tuple[str, ...] = ("fFjv93ACGo8",)
                     ) -> tuple[Path, Path]:
    """(parquet, media root): two videos x 3 questions; only the videos in `present` exist (empty files)."""
    rows = rows if rows is not None else (
        [videomme_row("001", "fFjv93ACGo8", q) for q in (1, 2, 3)]
        + [videomme_row("002", "aBcD1234xyz", q, answer="D", duration="medium") for q in (1, 2, 3)]
    )
    ann = write_parquet(root / "videomme" / "test-00000-of-00001.parquet", rows, VIDEOMME_SCHEMA)
    media = root / "data"
    media.mkdir(parents=True, exist_ok=True)
    for vid in present:
        touch(media / f"{vid}.mp4")
    return ann, media


VIDEOMME_V2_SCHEMA = {
    "video": pl.String(), "question_id": pl.String(), "question": pl.String(), "options": pl.String(),
    "answer": pl.String(), "group_type": pl.String(), "group_structure": pl.String(), "level": pl.Int64(),
    "second_head": pl.String(), "third_head": pl.String(),
}
VIDEOMME_V2_OPTIONS = "\n".join(f"{chr(65 + i)}. choice {i}" for i in range(8))


def videomme_v2_row(video: str, q: int, gtype: str, structure: str, answer: str = "C") -> dict[str, object]:
    """One Video-MME v2 row (8 options in one string)."""
    return {"video": video, "question_id": f"{video}-{q}", "question": f"What happens ({q})?",
            "options": VIDEOMME_V2_OPTIONS, "answer": answer, "group_type": gtype, "group_structure": structure, "level": 2,
            "second_head": "Temporal Dynamics", "third_head": "Causality"}


def videomme_v2_fixture(tmp_path: Path, rows: list[dict[str, object]] | None = None) -> VideoMMEv2Spec:
    """A Video-MME v2 annotation table of three groups of four (the first video present)."""
    rows = rows if rows is not None else (
        [videomme_v2_row("001", q, "relevance", "[1, 2, 3, 4]") for q in (1, 2, 3, 4)]
        + [videomme_v2_row("002", q, "logic", "[1, [2, 3], 4]") for q in (1, 2, 3, 4)]
        + [videomme_v2_row("003", q, "logic", "[[1, 2], 3, 4]") for q in (1, 2, 3, 4)]
    )
    ann = write_parquet(tmp_path / "test.parquet", rows, VIDEOMME_V2_SCHEMA)
    touch(tmp_path / "videos" / "001.mp4")
    return VideoMMEv2Spec(name="videomme_v2", annotations=ann, media_root=tmp_path / "videos")
