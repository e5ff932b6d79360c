"""One manifest reader with one failure rule: every command names a damaged manifest.json (exit 2, one sentence)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.specs import small_spec_dict, write_toml
from typer.testing import CliRunner

from engine.cli.app import app
from engine.results.manifest import ManifestError, read_manifest, write_manifest
from engine.results.schema import ResultRow
from engine.results.store import ResultStore

DAMAGED = {
    "not JSON": ('{"sweep_id": "s", ', "not valid JSON"),
    "a list": ('["s"]', "a JSON list, not a framesweep manifest"),
    "garbage counts": ('{"sweep_id": "s", "expected_jobs": {"m": {"f4": "many"}}}',
                       "expected_jobs.m.f4 is 'many'"),
    "negative count": ('{"sweep_id": "s", "expected_by_dataset": {"d": {"m": {"f4": -3}}}}',
                       "expected_by_dataset.d.m.f4 is -3"),
    "spec not a table": ('{"sweep_id": "s", "spec": "grid.toml"}', "spec is 'grid.toml'"),
    "sweep id not text": ('{"sweep_id": 7}', "sweep_id is 7"),
}


def _results(out: Path) -> None:
    with ResultStore(out) as st:
        st.add([ResultRow(sweep_id="s", model_id="m", model_family="qwen2_5_vl", dataset="d", dataset_version="1",
                          item_id="i", video_id="v", task_kind="mcq", budget_id="text", frames=0, policy="uniform",
                          seed=0, correct=True)])


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_read_manifest_names_the_file_and_the_field(tmp_path: Path, case: str) -> None:
    text, says = DAMAGED[case]
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(ManifestError, match="manifest.json: ") as err:
        read_manifest(tmp_path)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_missing_and_kept_fields(tmp_path: Path) -> None:
    assert read_manifest(tmp_path) == {}
    with pytest.raises(ManifestError, match="no manifest.json file"):
        read_manifest(tmp_path, required=True)
    write_manifest(tmp_path, {"sweep_id": "s", "source": "lmms-eval", "runs": ["a/samples.jsonl"]})
    first = read_manifest(tmp_path)
    write_manifest(tmp_path, {"sweep_id": "s"})
    assert read_manifest(tmp_path)["created_at"] == first["created_at"]  # an importer's own keys are allowed too
    assert first["runs"] == ["a/samples.jsonl"]


@pytest.mark.parametrize("case", ["not JSON", "a list", "garbage counts"])
def test_every_command_names_a_damaged_manifest(tmp_path: Path, case: str) -> None:
    """status, metrics, export and run: exit 2 and one sentence naming the file (status raised a
    JSONDecodeError or AttributeError traceback, export a traceback, metrics went on silently)."""
    out = tmp_path / "out"
    _results(out)
    text, says = DAMAGED[case]
    (out / "manifest.json").write_text(text)
    spec = write_toml(tmp_path / "spec.toml", small_spec_dict(out))
    runner = CliRunner()
    commands = {"status": ["status", str(out)], "metrics": ["metrics", str(out), "--n-boot", "0"],
                "export": ["export", str(out), "--to", str(tmp_path / "artifact")], "run": ["run", str(spec)]}
    for name, cmd in commands.items():
        res = runner.invoke(app, cmd, env={"COLUMNS": "300"})
        assert res.exit_code == 2, (name, res.output)
        assert isinstance(res.exception, SystemExit) and "Traceback" not in res.output, (name, res.output)
        assert f"{out / 'manifest.json'}: " in res.output and says in res.output, (name, res.output)
