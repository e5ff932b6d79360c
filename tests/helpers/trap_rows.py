"""A hand-built checkpoint study of two families whose chains end at different frame counts: Qwen's at 16 frames,
LLaVA-1.5's at 4 (its 4,096-token context), over one video and one image benchmark."""

from __future__ import annotations

from engine.metrics.checkpoint_study import Checkpoint
from engine.metrics.checkpoints import checkpoint_document, checkpoint_tables
from engine.results.schema import ResultRow
from helpers.metric_rows import frame, lazy

STUDY = [Checkpoint("qwen"), Checkpoint("qwen-f16", base="qwen", train_frames=16, size="7B", architecture="Qwen"),
         Checkpoint("llava"),
         Checkpoint("llava-f16", base="llava", train_frames=16, size="7B", architecture="LLaVA-1.5")]
QWEN = {"text": 0, "f8": 8, "f16": 16}
LLAVA = {"text": 0, "f4": 4}
CAPPED = "video at 4 frames at most (its base's budgets end there; others up to 16)"
"""The note on LLaVA-1.5's rows."""


def short_chain_rows() -> list[ResultRow]:
    """vid: qwen a 000 b 001, qwen-f16 a 111 b 111 (gains +1, +1, +1/2); llava a 00 b 01, llava-f16 a 11 b 11 (+1,
    +1/2). img (one image): qwen 1 1, qwen-f16 0 1 (-1/2); llava 1 0, llava-f16 0 0 (-1/2)."""
    vid = {"qwen": ({"a": "000", "b": "001"}, QWEN), "qwen-f16": ({"a": "111", "b": "111"}, QWEN),
           "llava": ({"a": "00", "b": "01"}, LLAVA), "llava-f16": ({"a": "11", "b": "11"}, LLAVA)}
    img = {"qwen": {"p": "1", "q": "1"}, "qwen-f16": {"p": "0", "q": "1"}, "llava": {"p": "1", "q": "0"},
           "llava-f16": {"p": "0", "q": "0"}}
    return [*(r for m, (t, b) in vid.items() for r in frame(t, model=m, dataset="vid", budgets=b)),
            *(r for m, t in img.items() for r in frame(t, model=m, dataset="img", budgets={"img": 1}))]


def short_chain_document() -> dict:
    """The study's checkpoint document (`engine.metrics.checkpoints.checkpoint_document`)."""
    tables = {k: t.collect() for k, t in checkpoint_tables(lazy(short_chain_rows()), STUDY, categories=()).items()}
    return checkpoint_document(tables, STUDY)
