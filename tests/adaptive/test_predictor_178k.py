"""The hybrid-frame predictor over LLaVA-Video-178K-style instructions with the real vLLM CPU engine:
the minimum-frames question, visual options only, committed and resumed predictions, the training manifest.

One engine for the whole module; the CLI test borrows it.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from helpers.specs import small_spec_dict, write_toml
from typer.testing import CliRunner

from engine.adaptive.predictions import export_manifest, scan_predictions
from engine.adaptive.predictor import QuestionPolicy, predict_frames, predictor_options
from engine.config import BudgetPoint, SweepSpec, parse_spec
from engine.datasets import build_adapter
from engine.results import ResultsDir

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

ASSETS = Path(__file__).resolve().parents[1] / "assets"
VIDEOS = ["academic_source/activitynet/v_abc.mp4", "academic_source/youcook2/v_def.mp4"]


def _data(root: Path) -> dict[str, Any]:
    """A small 178K-style file (5 samples over 2 videos) and its media root."""
    media = root / "media"
    for v in VIDEOS:
        (media / v).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ASSETS / "tiny.mp4", media / v)
    turns = [("<image>\nDescribe the video in detail.", "..."), ("<image>\nHow many people appear?", "Two."),
             ("<image>\nWhat colour is the car at the end?", "Red."), ("<image>\nWhat is being cooked?", "Soup."),
             ("<image>\nIn what order are the ingredients added?", "Salt, then pepper.")]
    data = [{"id": f"s{k}", "video": VIDEOS[k % 2], "data_source": "0_30_s_academic_v0_1",
             "conversations": [{"from": "human", "value": q}, {"from": "gpt", "value": a}]}
            for k, (q, a) in enumerate(turns)]
    ann = root / "llava_video_178k_sample.json"
    ann.write_text(json.dumps(data))
    return {"name": "llava_video_178k", "annotations": str(ann), "media_root": str(media)}


def _spec_dict(root: Path, out: Path, **over: Any) -> dict[str, Any]:
    d = small_spec_dict(out, dataset=_data(root), budgets=[{"frames": 0}, {"frames": 4}, {"frames": 8},
                                                           {"frames": 16}])
    d.update(over)
    return d


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, warm_engine_cache: Path):
    """(spec, backends, loop): the suite's warm tiny Qwen2.5-VL engine (conftest), reused for the module."""
    import ray

    from engine.sweep import start_backends

    root = tmp_path_factory.mktemp("p178k")
    spec = parse_spec(_spec_dict(root, root / "out"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FRAMESWEEP_CACHE", str(warm_engine_cache))
        loop = asyncio.new_event_loop()
        backends = loop.run_until_complete(start_backends(spec))
        assert backends["tiny"].reused, "the module started its own engine instead of reusing the warm one"
        yield spec, backends, loop

        async def close() -> None:
            await asyncio.gather(*(b.close() for b in backends.values()))

        loop.run_until_complete(close())
        loop.close()
        ray.shutdown()


def test_options_and_prompt_ask_for_the_minimum(engine) -> None:
    spec: SweepSpec = engine[0]
    assert predictor_options(spec) == [4, 8, 16]  # the grid's text-only budget is not offered by default
    with_text = spec.model_copy(update={"predictor": spec.predictor.model_copy(update={"text_only_option": True})})
    assert predictor_options(with_text) == [0, 4, 8, 16]
    items = list(build_adapter(spec.dataset).items())
    jobs = QuestionPolicy("tiny", predictor_options(spec), BudgetPoint(frames=0)).plan(spec, items, set())
    asked = next(iter(jobs.values()))[0].item
    assert "minimum number of frames that suffices" in asked.prompt
    assert asked.options == ("4 frames", "8 frames", "16 frames") and "text only" not in asked.prompt
    assert "Instruction: Describe the video in detail." in asked.prompt and "<image>" not in asked.prompt


def test_predictions_committed_resumed_and_manifest(engine, tmp_path: Path) -> None:
    spec, backends, loop = engine
    out = spec.store.out_dir
    preds = loop.run_until_complete(predict_frames(spec, "tiny", backends))
    asked_dir = Path(out) / "predictions" / "asked" / "tiny"
    n_asked = ResultsDir.open(asked_dir).scan().collect().height
    again = loop.run_until_complete(predict_frames(spec, "tiny", backends))
    assert preds.height == 5 and set(preds["parse_status"]) == {"letter"}
    assert set(preds["predicted_frames"]) <= {4, 8, 16}
    assert preds["predicted_frames"].to_list() == again["predicted_frames"].to_list()
    # resumed: the second call found every question answered and asked nothing again
    assert n_asked == 5 and ResultsDir.open(asked_dir).scan().collect().height == 5
    assert (ResultsDir.open(asked_dir).scan().collect()["status"] == "ok").all()
    # nothing was answered at the predicted budgets: there are no answers to score
    assert not (Path(out) / "results").exists() or ResultsDir.open(out).scan().collect().height == 0
    assert scan_predictions(out).collect().height == 10  # both calls committed their table
    path = tmp_path / "frames.jsonl"
    assert export_manifest(scan_predictions(out), None, path, predictor_id="tiny") == 5
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [x["id"] for x in lines] == [f"llava_video_178k/llava_video_178k_sample/s{k}" for k in range(5)]
    assert [x["video"] for x in lines] == [VIDEOS[k % 2] for k in range(5)]  # as the training JSON names it
    assert lines[1]["instruction"] == "How many people appear?"
    assert [x["frames"] for x in lines] == preds.sort("item_id")["predicted_frames"].to_list()


class _Borrowed:
    """The module's engine, lent to the CLI (which closes what it starts)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def close(self) -> None:
        pass


def test_cli_predict_writes_the_manifest_without_answering(engine, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.sweep as sweep_pkg
    from engine.cli import app

    _, backends, _ = engine

    async def lend(spec: SweepSpec, **_: Any) -> dict[str, Any]:  # start_backends(spec, progress=...)
        return {k: _Borrowed(b) for k, b in backends.items()}

    monkeypatch.setattr(sweep_pkg, "start_backends", lend)
    spec_path = write_toml(tmp_path / "predict.toml", _spec_dict(tmp_path, tmp_path / "out"))
    manifest = tmp_path / "m.jsonl"
    res = CliRunner().invoke(app, ["predict", str(spec_path), "--predictor", "tiny", "--manifest", str(manifest)])
    assert res.exit_code == 0, res.output
    shown = res.output + (getattr(res, "stderr", "") if res.stderr_bytes is not None else "")
    assert "instructions only" in " ".join(shown.split())
    lines = [json.loads(x) for x in manifest.read_text().splitlines()]
    assert len(lines) == 5 and {x["frames"] for x in lines} <= {4, 8, 16}
    results = tmp_path / "out" / "results"
    assert not results.exists() or ResultsDir.open(tmp_path / "out").scan().filter(
        pl.col("budget_id").str.starts_with("pred-")).collect().height == 0
