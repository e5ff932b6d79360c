"""A full disk under what a command writes: one sentence naming the file, exit 5, never a traceback. Real ENOSPC:
a small tmpfs filled up (mounting needs root; skipped without it).

- `report`, `metrics --json`, `export` (it said "Invalid thrift: transport error": the Parquet writer's word for
  ENOSPC), `figures`;
- the run log: logging printed "--- Logging error ---" and a traceback for every record it could not write;
- `run` itself: the lock it cannot sign.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.mounts import fill, tmpfs
from helpers.specs import small_spec_dict, write_toml
from helpers.sure_results import sure_results
from typer.testing import CliRunner

from engine.cli import app

pytestmark = pytest.mark.engine  # mounts a tmpfs (`mount`: a process)

runner = CliRunner()


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sure_results(tmp_path_factory.mktemp("sure") / "out")


def _said(res: object) -> str:
    return " ".join(getattr(res, "output", "").split())


@pytest.mark.parametrize(("args", "what"), [
    (["report", "OUT", "-o", "FULL/report.html", "--n-boot", "0"], "the report to FULL/report.html"),
    (["metrics", "OUT", "--json", "FULL/metrics.json", "--n-boot", "0"], "the JSON document to FULL/metrics.json"),
    (["export", "OUT", "--to", "FULL/artifact"], "the artifact to FULL/artifact"),
    (["figures", "OUT", "--to", "FULL/figures", "--n-boot", "0", "--format", "svg"], "the figures to FULL/figures"),
], ids=["report", "metrics", "export", "figures"])
def test_an_output_onto_a_full_disk_is_one_sentence_and_exit_5(results: Path, tmp_path: Path, args: list[str],
                                                                what: str) -> None:
    with tmpfs(tmp_path / "full", size="256k") as mnt:
        fill(mnt)
        argv = [a.replace("OUT", str(results)).replace("FULL", str(mnt)) for a in args]
        res = runner.invoke(app, argv)
        assert res.exit_code == 5, res.output
        expected = f"could not write {what.replace('FULL', str(mnt))}: no space left on device (free space and rerun)"
        assert expected in _said(res), res.output
        assert "Traceback" not in res.output and "thrift" not in res.output
        assert [p.name for p in mnt.rglob("*") if not p.is_dir()] == ["filler"]  # nothing half-written left behind


def test_a_run_log_on_a_full_disk_says_so_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The log opens (a file takes no space), its lines do not fit: one sentence, then the file takes no more."""
    import logging

    from engine.cli.runlog import run_log

    with tmpfs(tmp_path / "full", size="256k") as mnt:
        fill(mnt)
        with run_log(mnt) as path:
            assert path is not None
            for n in range(50):
                logging.getLogger("engine.sweep.scheduler").info("record %d %s", n, "x" * 200)
        err = " ".join(capsys.readouterr().err.split())
    assert "Logging error" not in err and "Traceback" not in err, err
    assert err.count(f"the run log {path} takes no more lines: No space left on device (the run goes on without "
                     "it)") == 1, err


def test_a_run_onto_a_full_disk_is_one_sentence_and_exit_5(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "full", size="256k") as mnt:
        fill(mnt)
        d = small_spec_dict(mnt / "out")
        d["models"][0].update(backend="openai", http={"base_url": "http://127.0.0.1:9"})  # never asked
        res = runner.invoke(app, ["run", str(write_toml(tmp_path / "spec.toml", d))])
    assert res.exit_code == 5, res.output
    assert "no space left on device to take the directory's lock" in _said(res)
    assert "Logging error" not in res.output and "Traceback" not in res.output, res.output
