"""What a new or hostile user meets before any work: messages printed literally (rich markup in user
text), every unusable field named before the results directory is touched, shards of another sweep
ignored and reported, and the exit codes."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import small_spec_dict, write_toml
from typer.testing import CliRunner

from engine.backends.base import BackendBase, EngineRequest, EngineResult
from engine.cli.app import app
from engine.metrics.status import sweep_status
from engine.results.store import ForeignSweepError, scan_results
from engine.spec import parse_spec
from engine.sweep import Sweep

runner = CliRunner()


class SureEngine(BackendBase):
    """Answers "A" with certainty (the pipeline around the engine is what these tests check)."""

    name = "fake"

    async def start(self) -> dict[str, Any]:
        return {}

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        return [EngineResult(r.request_id, text="A", letter_logprobs={"A": 0.0}) for r in requests]


class SlowSureEngine(SureEngine):
    """SureEngine taking 0.2 s a batch, so the sweep is still running at its first commits."""

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        await asyncio.sleep(0.2)
        return await super().generate(requests)


def test_markup_in_user_text_is_printed_literally(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path / "out")
    d["models"][0]["backend"] = "openai"  # and no [models.http] table
    path = write_toml(tmp_path / "s.toml", d)
    # an unknown field whose name closes a tag nobody opened
    path.write_text(path.read_text().replace("[dataset]\n", '[dataset]\n"x[/b]" = 1\n'))
    res = runner.invoke(app, ["run", str(path)])
    assert res.exit_code == 2, res.output
    assert "needs an [models.http] table" in res.output
    assert "x[/b]" in res.output and "Extra inputs are not permitted" in res.output


def test_every_unusable_field_is_named_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FS_TEST_UNSET_KEY", raising=False)
    out = tmp_path / "a-file"
    out.write_text("not a directory")
    d = small_spec_dict(out)
    base = d["models"][0]
    d["models"] = [
        {**base, "id": "m0", "family": "nope"},
        {**base, "id": "m1", "path": "tiny:nope"},
        {**base, "id": "m2", "path": str(tmp_path / "no-such-checkpoint")},
        {"id": "m3", "family": "qwen2_5_vl", "path": "served", "backend": "openai",
         "http": {"base_url": "http://127.0.0.1:9", "api_key_env": "FS_TEST_UNSET_KEY"}},
    ]
    d["decode"] = {"decoder": "nope"}
    res = runner.invoke(app, ["run", str(write_toml(tmp_path / "s.toml", d))])
    assert res.exit_code == 2, res.output
    for field, why in [("models.0.family", "unknown model family 'nope'"),
                       ("models.1.path", "no tiny checkpoint for 'nope'"),
                       ("models.2.path", "no such checkpoint directory"),
                       ("models.3.http.api_key_env", "FS_TEST_UNSET_KEY is not set"),
                       ("decode.decoder", "unknown decoder 'nope'"),
                       ("store.out_dir", "is a file, not a directory")]:
        assert f"{field}: " in res.output and why in res.output, (field, res.output)
    assert out.read_text() == "not a directory"


def test_store_table_is_optional_with_out(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path / "unused")
    del d["store"]
    d["decode"] = {"decoder": "nope"}  # stops at the preflight, after the spec itself was accepted
    res = runner.invoke(app, ["run", str(write_toml(tmp_path / "s.toml", d)), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "decode.decoder" in res.output and "store:" not in res.output
    res = runner.invoke(app, ["run", str(write_toml(tmp_path / "s.toml", d))])
    assert res.exit_code == 2 and "store: Field required" in res.output


def test_a_shard_of_another_sweep_is_not_done_and_is_reported(tmp_path: Path) -> None:
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    other = small_spec_dict(theirs, sweep_id="other")
    other["budgets"] = [{"frames": 0}, {"frames": 2}, {"frames": 16}]  # f16 is not in my spec
    asyncio.run(Sweep(parse_spec(other), backends={"tiny": SureEngine()}).run())
    spec = parse_spec(small_spec_dict(mine, sweep_id="mine", budgets=[{"frames": 0}, {"frames": 2}]))
    (mine / "results").mkdir(parents=True)
    copied = [shutil.copy(p, mine / "results") for p in sorted((theirs / "results").glob("part-*.parquet"))]
    summary = asyncio.run(Sweep(spec, backends={"tiny": SureEngine()}).run())
    assert summary.jobs_skipped == 0 and summary.jobs_ok == 3 * 3 * 2  # nothing of theirs counted as done
    assert sorted(summary.foreign_shards) == sorted(str(p) for p in copied)
    st = sweep_status(mine)
    assert (st.done, st.failed, st.pending) == (18, 0, 0)
    assert set(st.per_budget["budget_id"]) == {"text", "f2"}  # their f16 is not counted
    assert sorted(st.foreign_shards) == sorted(str(p) for p in copied)
    res = runner.invoke(app, ["status", str(mine)], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "not counted" in res.output
    # and their spec is refused in my directory (one directory holds one sweep)
    with pytest.raises(ForeignSweepError, match="holds sweep 'mine'"):
        asyncio.run(Sweep(parse_spec(other).with_out_dir(mine), backends={"tiny": SureEngine()}).run())
    assert scan_results(mine).collect().height == 18 + 3 * 3 * 3


def test_a_sweep_stops_loudly_when_the_disk_is_full(tmp_path: Path) -> None:
    """The committer's ENOSPC stops the sweep with StoreFullError (it used to die silently while the sweep
    ran on); every shard committed before stays readable. A real full filesystem: a small tmpfs."""
    import subprocess

    from engine.results.store import StoreFullError

    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24k", "tmpfs", str(mnt)],
                      capture_output=True, check=False).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        d = small_spec_dict(mnt / "out", budgets=[{"frames": f} for f in (0, 1, 2, 3, 4, 5, 6, 7, 8)])
        d["dataset"]["n_videos"] = 6
        d["store"]["commit_interval_s"] = 0.1
        done: list[int] = []
        sweep = Sweep(parse_spec(d), backends={"tiny": SlowSureEngine()},
                      progress=lambda event, n: done.append(n) if event == "done" else None)
        with pytest.raises(StoreFullError, match="no space left on device"):
            asyncio.run(sweep.run())
        assert sum(done) < 6 * 3 * 9, "the sweep ran on after the failed commit"
        scan_results(mnt / "out").collect()  # what was committed still reads
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


@pytest.mark.parametrize("command", [["cascade", "SPEC", "--stages", "f2,f4"],
                                     ["predict", "SPEC", "--predictor", "tiny", "--no-run"],
                                     ["engines", "up", "SPEC"]], ids=["cascade", "predict", "engines-up"])
@pytest.mark.parametrize("fault", ["family", "path"])
def test_cascade_predict_and_engines_up_run_the_preflight_before_ray(
        command: list[str], fault: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Like `run`: an unknown family or a missing checkpoint is named (exit 2) before Ray, a cluster or an
    engine starts (they had started Ray first, then failed with a KeyError or inside the actor)."""
    import ray

    from engine.runtime import local_cluster
    from engine.sweep import engines as sweep_engines

    def started(*_: object, **__: object) -> None:
        raise AssertionError("Ray was started before the preflight")

    monkeypatch.setattr(sweep_engines, "ensure_ray", started)
    monkeypatch.setattr(local_cluster, "start_local_cluster", started)
    monkeypatch.setenv("FRAMESWEEP_CACHE", str(tmp_path / "cache"))
    d = small_spec_dict(tmp_path / "out")
    if fault == "family":
        d["models"][0]["family"] = "nope"
        field, why = "models.0.family", "unknown model family 'nope'"
    else:
        d["models"][0]["path"] = str(tmp_path / "no-such-checkpoint")
        field, why = "models.0.path", "no such checkpoint directory"
    if command[0] == "engines":
        del d["store"]  # engines write no results: their spec needs no [store] (the fault is named, not it)
    spec = str(write_toml(tmp_path / "s.toml", d))
    res = runner.invoke(app, [spec if a == "SPEC" else a for a in command], env={"COLUMNS": "200"})
    assert res.exit_code == 2, (res.output, res.exception)
    assert f"{field}: " in res.output and why in res.output, res.output
    assert not ray.is_initialized()
    assert not (tmp_path / "cache").exists()  # no local cluster recorded
    assert not (tmp_path / "out").exists()


class WrongEngine(SureEngine):
    """Answers "B" with certainty: another sweep's rows that would change every number they were mixed into."""

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        return [EngineResult(r.request_id, text="B", letter_logprobs={"B": 0.0}) for r in requests]


def test_metrics_and_report_leave_out_a_shard_of_another_sweep(tmp_path: Path) -> None:
    import json

    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    other = small_spec_dict(theirs, sweep_id="other", budgets=[{"frames": 0}, {"frames": 2}, {"frames": 16}])
    asyncio.run(Sweep(parse_spec(other), backends={"tiny": WrongEngine()}).run())
    spec = parse_spec(small_spec_dict(mine, sweep_id="mine", budgets=[{"frames": 0}, {"frames": 2}]))
    asyncio.run(Sweep(spec, backends={"tiny": SureEngine()}).run())

    def metrics(name: str) -> tuple[dict[str, Any], str]:
        res = runner.invoke(app, ["metrics", str(mine), "--n-boot", "0", "--json", str(tmp_path / name)],
                            env={"COLUMNS": "200"})
        assert res.exit_code == 0, res.output
        return json.loads((tmp_path / name).read_text()), res.output

    clean, out = metrics("clean.json")
    assert "another sweep" not in out
    copied = [Path(shutil.copy(p, mine / "results")) for p in sorted((theirs / "results").glob("part-*.parquet"))]
    mixed, out = metrics("mixed.json")
    assert mixed == clean  # their rows (other answers, another budget) count for nothing
    assert f"{len(copied)} shard(s) hold rows of another sweep and are not counted" in out
    assert all(p.name in out for p in copied), out
    res = runner.invoke(app, ["report", str(mine), "--n-boot", "0", "-o", str(tmp_path / "r.html")],
                        env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert res.output.count("hold rows of another sweep") == 1 and all(p.name in res.output for p in copied)
    assert "f16" not in (tmp_path / "r.html").read_text()  # their budget is not in my report
    # without a manifest (a directory made by `import-lmms-eval`) every row counts, as before
    (mine / "manifest.json").unlink()
    alone, out = metrics("alone.json")
    assert "another sweep" not in out and alone != clean
    assert any("f16" in g["grid"] for g in alone["groups"])


def test_predict_without_answering_starts_the_predictors_engine_only(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`predict --no-run` asks for one engine, the predictor's; with --run every model's (they answer).
    The engine start is replaced by one that records what it was asked for and stops there (a placement
    failure), so no engine starts: the test is about what is asked for."""
    import engine.sweep
    from engine.runtime.placement import PlacementError

    asked: list[list[str]] = []

    async def record(spec: Any, **_: object) -> dict:
        asked.append([m.id for m in spec.models])
        raise PlacementError("stop here")

    monkeypatch.setattr(engine.sweep, "start_backends", record)
    d = small_spec_dict(tmp_path / "out")
    d["models"].append({**d["models"][0], "id": "other"})
    spec = str(write_toml(tmp_path / "s.toml", d))
    for flag in ("--no-run", "--run"):
        res = runner.invoke(app, ["predict", spec, "--predictor", "tiny", flag])
        assert res.exit_code == 2 and "stop here" in res.output, res.output
    assert asked == [["tiny"], ["tiny", "other"]]
