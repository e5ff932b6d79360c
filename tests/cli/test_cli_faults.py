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
from helpers.specs import small_spec_dict, write_toml
from helpers.sure_results import SureEngine
from typer.testing import CliRunner

from engine.backends.base import EngineRequest, EngineResult
from engine.cli.app import app
from engine.config import parse_spec
from engine.metrics.status import sweep_status
from engine.results import ResultsDir
from engine.results.store import ForeignSweepError
from engine.sweep import Sweep

runner = CliRunner()


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


def test_ids_with_colons_are_printed_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    """`--pair a:b:` or a model id like `qwen:smile:` must not turn into emoji on the terminal."""
    from engine.cli._console import console, fail

    console.print("pair a:b: model x:smile:")
    fail("unknown budget f4:cross_mark:")
    got = capsys.readouterr()
    assert "a:b: model x:smile:" in got.out
    assert "f4:cross_mark:" in got.err


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
    assert ResultsDir.open(mine).scan().collect().height == 18 + 3 * 3 * 3


@pytest.mark.engine
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
        ResultsDir.open(mnt / "out").scan().collect()  # what was committed still reads
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


@pytest.fixture(scope="module")
def sure_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small finished sweep (text, f2, f4, f8 on three synthetic videos; every answer "A")."""
    out = tmp_path_factory.mktemp("sure") / "out"
    asyncio.run(Sweep(parse_spec(small_spec_dict(out)), backends={"tiny": SureEngine()}).run())
    return out


def _no_traceback(res: Any) -> str:
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output
    return " ".join(res.output.split())


@pytest.mark.parametrize(("args", "said"), [
    (["metrics", "DIR", "--protocol", "nope"], "--protocol: 'nope' is no chain (protocol) of these results; known: "
     "default"),
    (["metrics", "DIR", "--pair", "f4:nope"], "--pair 'f4:nope': 'nope' is no budget of these results; known: f2, f4, "
     "f8, text"),
    (["metrics", "DIR", "--cascade-stages", "f4,zz"], "--cascade-stages: 'zz' is no budget of these results; known: "
     "f2, f4, f8, text"),
    (["metrics", "DIR", "--cascade-match", "zz"], "--cascade-match: 'zz' is no budget"),
    (["metrics", "DIR", "--cascade-stages", "f8,f4"], "--cascade-stages f8,f4: stages go from fewer frames to more, "
     "each once; got f8 (8 frames), f4 (4 frames)"),
    (["metrics", "DIR", "--compare", "tiny:nobody"], "--compare: 'nobody' is no model of these results; known: tiny"),
    (["report", "DIR", "--protocol", "nope", "-o", "OUT/r.html"], "--protocol: 'nope' is no chain"),
    (["report", "DIR", "--checkpoint-models", "nobody,tiny", "-o", "OUT/r.html"], "--checkpoint-models: 'nobody' is "
     "no model of these results; known: tiny"),
    (["checkpoints", "DIR", "--models", "nobody,tiny"], "--models: 'nobody' is no model of these results; known: tiny"),
    (["checkpoints", "DIR", "--models", "tiny,other", "--image-datasets", "mme"], "--image-datasets: 'mme' is no "
     "dataset of these results; known: synthetic"),
    (["predictor-eval", "DIR", "--model-id", "nobody"], "--model-id: 'nobody' is no model"),
    (["predictor-eval", "DIR", "--fallback", "f99"], "--fallback: 'f99' is no budget"),
    (["metrics", "DIR", "--n-boot", "-5"], "Invalid value for '--n-boot'"),
    (["metrics", "DIR", "--engine", "bogus"], "Invalid value for '--engine'"),
    (["checkpoints", "DIR", "--engine", "bogus"], "Invalid value for '--engine'"),
])
def test_an_option_that_names_nothing_in_the_results_fails_listing_the_known_ids(
        sure_results: Path, tmp_path: Path, args: list[str], said: str) -> None:
    """These were accepted silently (an empty or partial table, exit 0), or ended in a Polars traceback
    (`--engine bogus`)."""
    argv = [str(sure_results) if a == "DIR" else a.replace("OUT", str(tmp_path)) for a in args]
    res = runner.invoke(app, [*argv, "--n-boot", "0"] if args[0] in ("metrics", "report") and "--n-boot" not in args
                        else argv, env={"COLUMNS": "200"})
    out = _no_traceback(res)
    assert res.exit_code == 2, out
    assert said in out, out
    assert not (tmp_path / "r.html").exists()


def test_the_ids_checked_are_the_rows_ids(sure_results: Path, tmp_path: Path) -> None:
    """The same options naming what the results hold pass (the check refuses only what names nothing)."""
    res = runner.invoke(app, ["metrics", str(sure_results), "--n-boot", "0", "--protocol", "default", "--pair",
                              "f2:f8", "--cascade-stages", "f2,f4", "--cascade-match", "f8", "--engine", "in-memory",
                              "--json", str(tmp_path / "m.json")], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    import json

    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["options"]["cascade_stages"] == ["f2", "f4"] and doc["groups"][0]["cascade"]["crossfit"]


@pytest.mark.parametrize("command", [["report", "DIR", "-o"], ["metrics", "DIR", "--json"],
                                     ["checkpoints", "DIR", "--models", "tiny,tiny2", "--json"],
                                     ["predictor-eval", "DIR", "--json"]])
def test_an_output_that_is_a_folder_is_named_before_any_work(sure_results: Path, tmp_path: Path,
                                                             command: list[str]) -> None:
    """`report -o FOLDER` computed every metric, then died in an IsADirectoryError traceback."""
    folder = tmp_path / "a-folder"
    folder.mkdir()
    argv = [str(sure_results) if a == "DIR" else a for a in command]
    res = runner.invoke(app, [*argv, str(folder)], env={"COLUMNS": "200"})
    out = _no_traceback(res)
    assert res.exit_code == 2 and f"{command[-1]} {folder}: is a folder; give a file name" in out, out
    (tmp_path / "a-file").write_text("x")
    res = runner.invoke(app, [*argv, str(tmp_path / "a-file" / "r.out")], env={"COLUMNS": "200"})
    assert res.exit_code == 2 and f"{tmp_path / 'a-file'} is a file, not a folder" in _no_traceback(res)
    assert list(folder.iterdir()) == []


def _cascade_report(**over: Any) -> dict[str, Any]:
    from engine.adaptive.cascade_report import CascadeReport

    rep = CascadeReport(tau=0.5, stages=["f2", "f4"], n_items=9, accuracy=0.5, mean_frames_processed=3.0,
                        mean_frames_decoded=3.0, wall_s=1.0, decode_passes=3, fixed_budget="f4", fixed_accuracy=0.5,
                        fixed_mean_frames=4.0, fixed_wall_s=1.2, rounds=[{"round": 1, "order": ["fixed", "cascade"],
                        "fixed_wall_s": 1.2, "cascade_wall_s": 1.0, "ratio": 0.833}], ratio_median=0.833,
                        ratio_min=0.833, ratio_max=0.833)
    return {**rep.to_dict(), **over}


def test_a_cascade_report_of_another_version_is_named_and_left_out(sure_results: Path, tmp_path: Path) -> None:
    """A session's report.json written by another framesweep (other keys) ended `report` in a KeyError traceback;
    it is now named, with both versions, and left out; the sessions this version wrote are shown."""
    import json

    from engine import __version__
    from engine.adaptive.cascade_report import CASCADE_SCHEMA

    out = tmp_path / "out"
    shutil.copytree(sure_results, out)
    unversioned = {k: v for k, v in _cascade_report().items() if k not in ("schema", "framesweep_version", "rounds")}
    sessions = {"20260101T000000": unversioned,
                "20260101T000001": _cascade_report(schema="framesweep.cascade/9", framesweep_version="9.0"),
                "20260101T000002": _cascade_report(), "20260101T000003": "[" * 100_000}
    for name, doc in sessions.items():
        (out / "cascade" / name).mkdir(parents=True)
        (out / "cascade" / name / "report.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    res = runner.invoke(app, ["report", str(out), "--n-boot", "0", "-o", str(tmp_path / "r.html")],
                        env={"COLUMNS": "300"})
    said = _no_traceback(res)
    assert res.exit_code == 0, said
    old = out / "cascade" / "20260101T000000" / "report.json"
    assert (f"{old}: a cascade report of another version (schema none, written by a framesweep that recorded no "
            f"version; this framesweep {__version__} reads {CASCADE_SCHEMA})") in said
    assert ("cascade/20260101T000001/report.json: a cascade report of another version (schema framesweep.cascade/9, "
            "written by framesweep 9.0;") in said
    assert "cascade/20260101T000003/report.json: not a JSON cascade report" in said
    assert said.count("left out of the report") == 3
    html = (tmp_path / "r.html").read_text()
    assert "Confidence cascade, run online" in html and html.count("cascade f2 → f4 @ 0.5") == 1


def test_two_cascades_in_one_second_get_their_own_session_folders(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The session folder was OUT/cascade/<UTC second>: two cascades started in the same second shared it, and
    the second died on the first's store lock. The cascade itself is replaced by one that records its folder and
    stops (the test is about the folder; tests/adaptive/test_adaptive.py runs real cascades). Folders named by the
    seconds around the test exist already, as a first cascade of that second would have left them."""
    import time

    import engine.adaptive.cascade as cascade_mod

    seen: list[Path] = []

    async def record(spec: Any, stages: list[str], tau: float, session: Path, *_: Any, **__: Any) -> None:
        assert session.is_dir() and not any(session.iterdir())  # made for this session, empty
        (session / "mine").write_text("x")
        seen.append(session)
        raise ValueError("stop here")

    monkeypatch.setattr(cascade_mod, "run_cascade", record)
    out = tmp_path / "out"
    now = time.time()
    taken = {time.strftime("%Y%m%dT%H%M%S", time.gmtime(now + s)) for s in range(-2, 30)}
    for name in taken:
        (out / "cascade" / name).mkdir(parents=True)
    spec = str(write_toml(tmp_path / "s.toml", small_spec_dict(out)))
    for _ in range(2):
        res = runner.invoke(app, ["cascade", spec, "--stages", "f2,f4"], env={"COLUMNS": "200"})
        assert res.exit_code == 2 and "stop here" in res.output, res.output
    assert len(seen) == 2 and seen[0] != seen[1]
    assert all(s.parent == out / "cascade" and s.name not in taken for s in seen)
    assert all(not any((out / "cascade" / name).iterdir()) for name in taken)


@pytest.mark.parametrize(("args", "said"), [
    (["--predictor", "nobody"], "--predictor 'nobody' is not a model of the spec; known: tiny"),
    (["--predictor", "tiny", "--glimpse", "-2"], "Invalid value for '--glimpse'"),
    (["--predictor", "tiny", "--manifest", "FOLDER"], "--manifest FOLDER: is a folder; give a file name"),
])
def test_predict_refuses_bad_options_before_any_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       args: list[str], said: str) -> None:
    """A negative --glimpse became a BudgetPoint validation traceback after the engines had started; a folder
    given as --manifest failed after every prediction. The engine start is replaced by one that fails the test."""
    import engine.sweep

    async def started(*_: object, **__: object) -> None:
        raise AssertionError("an engine was started")

    monkeypatch.setattr(engine.sweep, "start_backends", started)
    (tmp_path / "folder").mkdir()
    spec = str(write_toml(tmp_path / "s.toml", small_spec_dict(tmp_path / "out")))
    argv = [a.replace("FOLDER", str(tmp_path / "folder")) for a in args]
    res = runner.invoke(app, ["predict", spec, *argv], env={"COLUMNS": "200"})
    out = _no_traceback(res)
    assert res.exit_code == 2 and said.replace("FOLDER", str(tmp_path / "folder")) in out, out
