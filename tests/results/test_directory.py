"""The one reader of a results directory (`engine.results.directory.ResultsDir`): each command opens its
directory once (each shard's footer checked once, the manifest read once), and every command names the
same error, with the same exit code, for the same broken directory."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from helpers.specs import small_spec_dict, write_toml
from typer.testing import CliRunner

from engine.backends.base import BackendBase, EngineRequest, EngineResult
from engine.cli.app import app
from engine.config import parse_spec
from engine.results import CorruptShardError, NoResultsDirError, ResultsDir
from engine.results.manifest import write_manifest
from engine.results.schema import ResultRow, rows_to_frame
from engine.results.store import ResultStore
from engine.sweep import Sweep

runner = CliRunner()


def row(item: str, budget: str, frames: int, correct: bool, sweep: str = "s", model: str = "m") -> ResultRow:
    return ResultRow(sweep_id=sweep, model_id=model, model_family="qwen2_5_vl", dataset="d", dataset_version="1",
                     item_id=item, video_id=f"v{item}", task_kind="mcq", budget_id=budget, frames=frames,
                     policy="uniform", seed=0, frames_sent=frames, frame_indices=list(range(frames)), correct=correct,
                     score=float(correct), pred="A" if correct else "B", answer="A")


def _directory(out: Path, shards: int = 3) -> list[Path]:
    """A results directory of sweep "s" (`shards` commits of its own rows: models m and its checkpoint n) plus
    one shard of another sweep."""
    with ResultStore(out) as store:
        expected = {"text": 2 * shards, "f4": 2 * shards}
        store.write_manifest({"sweep_id": "s", "expected_by_dataset": {"d": {"m": expected, "n": expected}}})
        for n in range(shards):
            items = [f"{n}-{i}" for i in range(2)]
            store.add([row(i, "text", 0, k % 2 == 0, model=m) for k, i in enumerate(items) for m in "mn"]
                      + [row(i, "f4", 4, m == "m", model=m) for i in items for m in "mn"])
            store.commit()
        store.add([row("x", "text", 0, False, sweep="other")])
    return sorted((out / "results").glob("part-*.parquet"))


class _Reads:
    """Counts each results shard's footer reads and the manifest's reads, as made through Polars and Path."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.footers: collections.Counter[str] = collections.Counter()
        self.manifests = 0
        for name in ("read_parquet_schema", "read_parquet_metadata"):
            monkeypatch.setattr(pl, name, self._counting(getattr(pl, name)))
        read_bytes = Path.read_bytes

        def counted(path: Path) -> bytes:
            self.manifests += path.name == "manifest.json"
            return read_bytes(path)

        monkeypatch.setattr(Path, "read_bytes", counted)

    def _counting(self, read: Any) -> Any:
        def counted(source: Any, *args: Any, **kwargs: Any) -> Any:
            if Path(source).parent.name == "results":
                self.footers[Path(source).name] += 1
            return read(source, *args, **kwargs)

        return counted

    def clear(self) -> None:
        self.footers.clear()
        self.manifests = 0


@pytest.mark.parametrize("command", ["status", "metrics", "report", "export", "checkpoints", "predictor-eval"])
def test_a_command_checks_each_shard_footer_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 command: str) -> None:
    """`report` checked every footer twice (the metrics, then the provenance's row facts; four times with
    predictions and a checkpoint study) and read the manifest four times; `export` twice, `status` read the
    manifest twice. Each now opens its directory once."""
    out = tmp_path / "out"
    shards = _directory(out)
    argv = {"status": ["status", str(out)], "metrics": ["metrics", str(out), "--n-boot", "0"],
            "report": ["report", str(out), "--n-boot", "0", "-o", str(tmp_path / "r.html"),
                       "--checkpoint-models", "m,n", "--predictions", str(tmp_path / "preds")],
            "export": ["export", str(out), "--to", str(tmp_path / "artifact")],
            "checkpoints": ["checkpoints", str(out), "--models", "m,n"],
            "predictor-eval": ["predictor-eval", str(out), "--predictions", str(tmp_path / "preds")]}[command]
    reads = _Reads(monkeypatch)
    res = runner.invoke(app, argv, env={"COLUMNS": "300"})
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output, res.output
    assert dict(reads.footers) == {p.name: 1 for p in shards}, (command, reads.footers)
    assert reads.manifests == 1, (command, reads.manifests)


class _Sure(BackendBase):
    name = "fake"

    async def start(self) -> dict[str, Any]:
        return {}

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        return [EngineResult(r.request_id, text="A", letter_logprobs={"A": 0.0}) for r in requests]


def test_a_runs_start_up_checks_each_shard_footer_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rerun reads the manifest, the done keys, the attempts, the fingerprints and the foreign shards: each
    shard's footer once (it was once per read: three times)."""
    d = small_spec_dict(tmp_path / "out", budgets=[{"frames": 0}])
    asyncio.run(Sweep(parse_spec(d), backends={"tiny": _Sure()}).run())
    d["budgets"].append({"frames": 2})
    asyncio.run(Sweep(parse_spec(d), backends={"tiny": _Sure()}).run())  # a second shard
    shards = sorted((tmp_path / "out" / "results").glob("part-*.parquet"))
    assert len(shards) > 1
    reads = _Reads(monkeypatch)
    summary = asyncio.run(Sweep(parse_spec(d), backends={"tiny": _Sure()}).run())
    assert summary.jobs_skipped == summary.jobs_total > 0  # everything was read as done
    assert dict(reads.footers) == {p.name: 1 for p in shards}, reads.footers


def _broken(tmp_path: Path, case: str) -> tuple[Path, str]:
    """A results directory broken one way, and the sentence every command must print for it."""
    out = tmp_path / "out"
    if case == "missing":
        return out, f"{out}: no results/ directory (not a framesweep results directory?)"
    _directory(out, shards=1)
    if case == "no results folder":
        for p in (out / "results").iterdir():
            p.unlink()
        (out / "results").rmdir()
        return out, f"{out}: no results/ directory (not a framesweep results directory?)"
    if case == "damaged manifest":
        (out / "manifest.json").write_text('{"sweep_id": "s", "expected_jobs": {"m": {"f4": "many"}}}')
        return out, f"{out / 'manifest.json'}: not a framesweep manifest: expected_jobs.m.f4 is 'many'"
    bad = out / "results" / "part-zz-pandas.parquet"  # `frames` as Int64, as pandas writes it: not read as Int32
    rows_to_frame([row("p", "f4", 4, True)]).with_columns(pl.col("frames").cast(pl.Int64)).write_parquet(bad)
    return out, (f"{bad}: unreadable result shard (column frames is Int64, not Int32); run `framesweep doctor "
                 f"{out}` to move it to quarantine/")


COMMANDS = {
    "status": ["status", "OUT"], "metrics": ["metrics", "OUT", "--n-boot", "0"],
    "report": ["report", "OUT", "--n-boot", "0", "-o", "TMP/r.html"],
    "figures": ["figures", "OUT", "--to", "TMP/figs", "--n-boot", "0"],
    "checkpoints": ["checkpoints", "OUT", "--models", "m,n"], "predictor-eval": ["predictor-eval", "OUT"],
    "export": ["export", "OUT", "--to", "TMP/artifact"], "compact": ["compact", "OUT"], "doctor": ["doctor", "OUT"],
    "run": ["run", "TMP/spec.toml"],
}
# what a command does not read: `doctor` and `compact` read no rows of an unreadable shard (doctor moves it
# aside, compact leaves it as it is), `doctor` reads no manifest; `run` makes a missing directory
NOT_READ = {"missing": {"run"}, "no results folder": {"run"}, "damaged manifest": {"doctor"},
            "corrupt shard": {"doctor", "compact"}}


@pytest.mark.parametrize("case", ["missing", "no results folder", "damaged manifest", "corrupt shard"])
def test_every_command_names_the_same_error_for_the_same_broken_directory(tmp_path: Path, case: str) -> None:
    """One error per failure: `export` said "no results folder", `status` "no manifest.json" for a missing
    directory, the others "no results/ directory"; each sentence is now the reader's, from every command."""
    out, said = _broken(tmp_path, case)
    write_toml(tmp_path / "spec.toml", small_spec_dict(out, sweep_id="s"))
    for name, argv in COMMANDS.items():
        if name in NOT_READ[case]:
            continue
        args = [a.replace("OUT", str(out)).replace("TMP", str(tmp_path)) for a in argv]
        res = runner.invoke(app, args, env={"COLUMNS": "1000"})
        assert res.exit_code == 2, (name, res.output, res.exception)
        assert isinstance(res.exception, SystemExit) and "Traceback" not in res.output, (name, res.output)
        assert said in " ".join(res.output.split()), (name, said, res.output)


def test_the_value_keeps_what_it_read(tmp_path: Path) -> None:
    """`ResultsDir`: the manifest, the own sweep's latest rows, the foreign shards and the bad ones; rows() and
    foreign refuse a directory with a bad shard, naming it; a missing directory is one error."""
    out = tmp_path / "out"
    shards = _directory(out)
    results = ResultsDir.open(out)
    assert results.sweep_id == "s" and results.manifest["sweep_id"] == "s" and results.bad == []
    assert results.rows().collect().height == 24 and results.scan().collect().height == 25
    (theirs,) = results.foreign
    assert theirs in shards and pl.read_parquet(theirs)["sweep_id"].to_list() == ["other"]
    assert ResultsDir.open(out, sweep_id="other").rows().collect().height == 1  # read as another sweep's
    write_manifest(out, {})  # without a sweep id every row counts and no shard is foreign
    assert ResultsDir.open(out).rows().collect().height == 25 and ResultsDir.open(out).foreign == []
    bad = out / "results" / "part-zz-bad.parquet"
    bad.write_bytes(b"PAR1 not a shard")
    results = ResultsDir.open(out)
    assert [p for p, _ in results.bad] == [bad]
    with pytest.raises(CorruptShardError, match="part-zz-bad.parquet: unreadable result shard"):
        results.rows()
    with pytest.raises(NoResultsDirError, match="no results/ directory"):
        ResultsDir.open(tmp_path / "nowhere")
