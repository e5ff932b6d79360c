"""`framesweep checkpoints` prints the trap tables as the report labels them: the frames = 0 row text only with no
verdict, and a line for each checkpoint read at fewer frames than the study's most (`helpers.trap_rows`)."""

from __future__ import annotations

from pathlib import Path

from helpers.trap_rows import CAPPED, STUDY, short_chain_rows
from typer.testing import CliRunner

from engine.cli import app
from engine.results.store import ResultStore


def test_checkpoints_prints_text_only_rows_without_a_verdict_and_the_frame_ceiling(tmp_path: Path) -> None:
    spec = {"models": [{"id": c.model_id, "family": "f", **({"checkpoint": {"base": c.base, "train_frames": 16}}
                                                           if c.base else {})} for c in STUDY]}
    with ResultStore(tmp_path / "sweep") as store:
        store.add(short_chain_rows())
        store.commit()
        store.write_manifest({"sweep_id": "t", "spec": spec})
    res = CliRunner().invoke(app, ["checkpoints", str(tmp_path / "sweep")], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    rows = [line for line in res.output.splitlines() if "llava-f16" in line and "│" in line]
    assert any("text only" in r and "none (text only: no video)" in r for r in rows), res.output
    assert f"llava-f16: {CAPPED}" in res.output
    assert not any("text only" in r and "yes" in r for r in rows)
