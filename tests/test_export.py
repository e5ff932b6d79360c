"""`framesweep export`: the audit artifact round-trips through Polars and the `datasets` library, with
exact per-chain annotations on hand-made rows."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
import pytest
from helpers.metric_rows import frame
from typer.testing import CliRunner

from engine.cli import app
from engine.results.store import ResultStore

BUDGETS = {"text": 0, "f4": 4, "f8": 8}


def _sweep(out: Path) -> None:
    rows = frame({"a": "101", "b": "011", "c": "1.1"}, budgets=BUDGETS)  # c lacks f4: not matched
    rows += frame({"a": "10", "b": "01"}, budgets={"f4-random": 4, "f8-random": 8},
                  per_item={"a": {"policy": "random"}, "b": {"policy": "random"}})
    with ResultStore(out) as store:
        store.add(rows)
        store.commit()
        store.write_manifest({"sweep_id": "t", "spec": {"sweep_id": "t", "models": [
            {"id": "m", "family": "qwen2_5_vl", "path": str(out / "model")}]}})
    (out / "model").mkdir()
    (out / "model" / "config.json").write_text('{"hidden_size": 128}')


def test_export_annotations_and_round_trip(tmp_path: Path) -> None:
    _sweep(tmp_path / "out")
    res = CliRunner().invoke(app, ["export", str(tmp_path / "out"), "--to", str(tmp_path / "art")])
    assert res.exit_code == 0, res.output
    items = pl.read_parquet(tmp_path / "art" / "items.parquet")
    assert pl.read_parquet(tmp_path / "art" / "videos.parquet").height == 0  # hand-made rows: no video decoded
    # two chains: default {text, f4, f8} and random {text, f4-random, f8-random}; text rows in both
    assert sorted(items["protocol_id"].unique()) == ["default", "random"]
    # default: a, b at 3 budgets, c at 2 (no f4); random: the text rows of a, b, c and a, b at 2 budgets
    assert items.height == 8 + 7
    d = items.filter(pl.col("protocol_id") == "default").sort("item_id", "frames")
    a = d.filter(pl.col("item_id") == "a")
    assert a["trajectory"].to_list() == ["101"] * 3 and a["transition"].to_list() == [None, "harm", "rescue"]
    assert a["confused"].to_list() == [True] * 3 and a["text_overwrite"].to_list() == [True] * 3
    assert a["terminal_regression"].to_list() == [False] * 3
    assert a["oracle_budgets"].to_list()[0] == ["text", "f8"]
    b = d.filter(pl.col("item_id") == "b")
    assert b["trajectory"][0] == "011" and b["confused"][0] is False and b["text_overwrite"][0] is False
    c = d.filter(pl.col("item_id") == "c")
    assert c["trajectory"].is_null().all() and c.height == 2  # not matched: outputs kept, no annotations
    r = items.filter((pl.col("protocol_id") == "random") & (pl.col("item_id") == "a")).sort("frames")
    assert r["trajectory"][0] == "110" and r["terminal_regression"][0] is True  # right at f4-random, wrong at f8
    # provenance
    assert set(items["model_hash"]) == {json.loads((tmp_path / "art" / "provenance.json").read_text())
                                        ["models"]["m"]["hash"]}
    assert items["model_hash"][0] is not None and len(items["model_hash"][0]) == 64
    card = (tmp_path / "art" / "README.md").read_text()
    assert "| m | d | random | 3 | 3 | 6 |" in card and "`terminal_regression`" in card
    # the datasets library reads the same table
    from datasets import load_dataset

    ds = load_dataset("parquet", data_files=str(tmp_path / "art" / "items.parquet"), split="train",
                      cache_dir=str(tmp_path / "hf"))
    assert ds.num_rows == items.height and ds.column_names == items.columns
    assert ds[0]["item_id"] == items["item_id"][0] and ds[0]["trajectory"] == items["trajectory"][0]


def test_export_refuses_a_folder_without_results(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["export", str(tmp_path), "--to", str(tmp_path / "art")])
    assert res.exit_code == 2 and not (tmp_path / "art").exists()


def test_provenance_versions_and_a_hub_model_hashed_from_the_local_cache(tmp_path: Path, monkeypatch) -> None:
    """A model named by hub id is hashed from the hub cache's snapshot (the cache's own layout: refs/main
    names the snapshot), the same bytes as a folder give the same hash, and an id not in the cache has
    none (nothing is downloaded: the hub is unreachable here). Rows carry the decoder's package and
    version; provenance.json the framesweep version the sweep ran with and the exporter's."""
    from engine.export import model_hash

    hub = tmp_path / "hub"
    snap = hub / "models--org--tiny-vl" / "snapshots" / "0123abcd"
    snap.mkdir(parents=True)
    (hub / "models--org--tiny-vl" / "refs").mkdir()
    (hub / "models--org--tiny-vl" / "refs" / "main").write_text("0123abcd")
    (snap / "config.json").write_text('{"hidden_size": 64}')
    (snap / "model.safetensors").write_bytes(b"\0" * 10)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub))
    folder = tmp_path / "copy"
    folder.mkdir()
    (folder / "config.json").write_text('{"hidden_size": 64}')
    (folder / "model.safetensors").write_bytes(b"\0" * 10)
    got = model_hash("org/tiny-vl")
    assert got is not None and got == model_hash(str(folder))
    (folder / "model.safetensors").write_bytes(b"\0" * 11)  # a weight of another size: another hash
    assert model_hash(str(folder)) != got
    assert model_hash("org/not-cached") is None

    out = tmp_path / "out"
    rows = frame({"a": "11"}, budgets={"text": 0, "f4": 4}, per_item={"a": {"decoder": "pyav",
                                                                           "decoder_version": "av 1.2.3"}})
    with ResultStore(out) as store:
        store.add(rows)
        store.commit()
        store.write_manifest({"sweep_id": "t", "framesweep_version": "0.0.9", "spec": {"sweep_id": "t", "models": [
            {"id": "m", "family": "qwen2_5_vl", "path": "org/tiny-vl"}]}})
    res = CliRunner().invoke(app, ["export", str(out), "--to", str(tmp_path / "art")])
    assert res.exit_code == 0, res.output
    items = pl.read_parquet(tmp_path / "art" / "items.parquet")
    assert set(items["decoder_version"]) == {"av 1.2.3"} and set(items["model_hash"]) == {got}
    prov = json.loads((tmp_path / "art" / "provenance.json").read_text())
    assert prov["framesweep_version"] == "0.0.9" and prov["exported_by"]["framesweep"]
    assert prov["exported_by"]["polars"] == pl.__version__


# --- where the artifact goes: never into the sweep, never over a user's file, never half-written ---------

def _export(out: Path, to: Path) -> object:
    return CliRunner().invoke(app, ["export", str(out), "--to", str(to)])


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_export_into_the_results_directory_is_refused(tmp_path: Path) -> None:
    """Before, `--to OUT/results/art` wrote an items.parquet among the shards: the sweep read it as rows."""
    out = tmp_path / "out"
    _sweep(out)
    before = _tree(out)
    for to in (out, out / "results" / "art", out / "art"):
        res = _export(out, to)
        assert res.exit_code == 2, res.output
        assert "inside the results directory" in " ".join(res.output.split()) and "Traceback" not in res.output
    assert _tree(out) == before  # nothing written, nothing created


def test_export_to_an_existing_file_or_a_folder_of_other_files_is_one_sentence(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _sweep(out)
    (tmp_path / "notes.txt").write_text("mine")
    res = _export(out, tmp_path / "notes.txt")
    assert res.exit_code == 2 and "is an existing file" in " ".join(res.output.split())
    assert len(res.output.strip().splitlines()) <= 2 and "Traceback" not in res.output  # one sentence, wrapped
    assert (tmp_path / "notes.txt").read_text() == "mine"
    res = _export(out, tmp_path)  # a folder holding the sweep and the notes: an export would replace it
    assert res.exit_code == 2 and "holding other files" in " ".join(res.output.split())
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_an_earlier_export_is_replaced_whole_and_an_empty_folder_taken(tmp_path: Path) -> None:
    out, art = tmp_path / "out", tmp_path / "art"
    _sweep(out)
    art.mkdir()
    assert _export(out, art).exit_code == 0
    (art / ".items.parquet.fs-1-2-0123abcd.tmp").write_bytes(b"x")  # a temp an older version left inside
    res = _export(out, art)
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in art.iterdir()) == ["README.md", "items.parquet", "provenance.json",
                                                     "scores.parquet", "videos.parquet"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp folder left beside


_KILLED_MID_WRITE = """
import os, sys, time
import engine.export
from engine.cli.app import main

def stalled(frame, path):  # writes part of the file, then stalls there for the test to kill it
    with open(path, "wb") as fh:
        fh.write(b"PAR1 partial")
    print("WRITING", flush=True)
    time.sleep(600)

engine.export._write_parquet = stalled  # the artifact's one Parquet writer
sys.argv = ["framesweep", "export", sys.argv[1], "--to", sys.argv[2]]
main()
"""


def _killed_mid_write(out: Path, art: Path, sig: int) -> int:
    """A real `framesweep export` process killed with `sig` while it writes items.parquet. Only the stall is
    injected (a real write is too short to be caught in the middle); the kill and the cleanup are real."""
    import os
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", _KILLED_MID_WRITE, str(out), str(art)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
    assert proc.stdout is not None and proc.stderr is not None
    line = proc.stdout.readline().strip()
    if line != "WRITING":
        proc.kill()
        raise AssertionError(f"the export did not reach its write: {line!r} {proc.communicate()[1][-3000:]}")
    os.kill(proc.pid, sig)
    rc = proc.wait(timeout=60)
    left = [p.name for p in art.parent.iterdir() if p.name.startswith(".")]
    print(f"export killed with {sig}: exit {rc}, left beside --to: {left}; stderr: {proc.stderr.read()[-2000:]}")
    return rc


@pytest.mark.engine
def test_a_killed_export_leaves_the_earlier_artifact_and_its_temp_is_removed_next_time(tmp_path: Path) -> None:
    import signal

    out, art = tmp_path / "out", tmp_path / "art"
    _sweep(out)
    assert _export(out, art).exit_code == 0
    earlier = _tree(art)
    assert _killed_mid_write(out, art, signal.SIGKILL) == -signal.SIGKILL
    assert _tree(art) == earlier  # the artifact is the earlier one, whole; no temp inside it
    left = [p for p in tmp_path.iterdir() if p.name.startswith(".art.")]
    assert len(left) == 1 and (left[0] / "items.parquet").read_bytes() == b"PAR1 partial"  # beside, not in it
    assert _export(out, art).exit_code == 0  # the next export recognises the dead one's folder and removes it
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    # SIGTERM: the export cleans up after itself at once
    assert _killed_mid_write(out, art, signal.SIGTERM) == 128 + signal.SIGTERM
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert pl.read_parquet(art / "items.parquet").height == 15


@pytest.mark.engine  # runs `framesweep demo` and `export` as processes
def test_export_of_the_quickstart_demos_own_results(tmp_path: Path, fs_cache: Path) -> None:
    """`framesweep demo` then `framesweep export` of its results, as the Quickstart reads: the demo's model is a
    `tiny:` id (the trained `tiny:qwen2_5_vl_seen`), whose hash step once failed (TypeError, nothing written) while
    every test exported folder-path models only. The demo starts its own engine (not the small spec's model)."""
    import os
    import subprocess

    from engine.runtime.checkpoint import checkpoint_fingerprint
    from engine.runtime.paths import tiny_checkpoint_dir

    root = Path(__file__).resolve().parents[1]
    out, art = tmp_path / "demo", tmp_path / "art"
    r = subprocess.run([sys.executable, "-m", "engine.cli", "demo", "--out", str(out)], check=False, cwd=root,
                       capture_output=True, text=True, timeout=600, env=dict(os.environ, COLUMNS="120"))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    r = subprocess.run([sys.executable, "-m", "engine.cli", "export", str(out), "--to", str(art)], check=False,
                       cwd=root, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    items = pl.read_parquet(art / "items.parquet")
    assert items.height == 8 * 5 * 4 and set(items["model_path"]) == {"tiny:qwen2_5_vl_seen"}
    fingerprint = checkpoint_fingerprint(tiny_checkpoint_dir("qwen2_5_vl_seen"))
    assert fingerprint is not None and set(items["model_hash"]) == {fingerprint}
    prov = json.loads((art / "provenance.json").read_text())
    (model,) = prov["models"].values()
    assert model["path"] == "tiny:qwen2_5_vl_seen" and model["hash"] == fingerprint
    assert items["trajectory"].null_count() < items.height  # annotated: the demo's items are matched
    # each decoded video's low-level statistics, computed by the sweep's decode pass, travel with the artifact
    videos = pl.read_parquet(art / "videos.parquet")
    assert videos.height == 8 and set(videos["video_id"]) == set(items["video_id"])
    assert (videos["frames_used"] > 1).all() and videos["motion_energy"].is_not_null().all()
    assert (videos["pixels"] == videos["width"] * videos["height"]).all()
    card = (art / "README.md").read_text()
    assert "config_name: videos" in card and "Low-level statistics of the 8 video(s)" in card
