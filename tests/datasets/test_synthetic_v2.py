"""The synthetic benchmark's version 2: what a frame-budget audit needs, read back from the decoded H.264 files.

Each question's answer is checked against the pixels the real decoder returns (not against the script that drew
them), so a renderer that drew something else than the annotation says fails here.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from engine.backends.families import get_family
from engine.datasets.synthetic import SyntheticBenchmark, SyntheticDatasetSpec
from engine.demo.videos import COLOURS, QUESTIONS, SHAPES, TEXTURES
from engine.frames.base import DecodeRequest
from engine.frames.decode_pyav import PyAVDecoder
from engine.frames.plan import uniform
from engine.frames.view import MediaView

ROOT = Path(__file__).resolve().parents[2]


def _spec(**kw: object) -> SyntheticDatasetSpec:
    return SyntheticDatasetSpec.model_validate({"name": "synthetic", "version": 2, **kw})


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> SyntheticBenchmark:
    b = SyntheticBenchmark(_spec(root=tmp_path_factory.mktemp("v2"), n_videos=20, seed=3))
    b.ensure_videos()
    return b


def _decode(path: Path, size: tuple[int, int] | None = None) -> np.ndarray:
    every = np.arange(64)
    batch = PyAVDecoder().decode_frames(DecodeRequest(path, every, "pyav", size))
    return batch.frames


def _nearest_colour(pixel: np.ndarray) -> str:
    return min(COLOURS, key=lambda c: float(np.abs(np.array(COLOURS[c]) - pixel).sum()))


def test_version_2_asks_five_kinds_with_options_in_one_fixed_order(bench: SyntheticBenchmark) -> None:
    items = list(bench.items())
    assert len(items) == 20 * 5
    assert {i.task_type for i in items} == set(QUESTIONS)
    for item in items:
        assert item.options == QUESTIONS[item.task_type][1]
        assert item.options[("ABCD").index(item.answer)] in item.prompt
        assert item.dataset_version == "synthetic-v2"
    # the answers are spread over the letters (a fixed order does not make one letter always right)
    assert len({i.answer for i in items if i.task_type == "static_shape"}) >= 3


def test_every_answer_is_what_the_decoded_frames_show(bench: SyntheticBenchmark) -> None:
    by_video: dict[str, dict[str, str]] = {}
    for item in bench.items():
        by_video.setdefault(item.video_id, {})[item.task_type] = item.options["ABCD".index(item.answer)]
    for video_id, answers in by_video.items():
        frames = _decode(bench.root / f"{video_id}.mp4")
        assert frames.shape == (64, 84, 112, 3)
        assert _nearest_colour(frames[0, 4, 4]) == answers["first_colour"]
        assert _nearest_colour(frames[-1, 4, 4]) == answers["last_colour"]
        # the flash square (right third, vertical middle) is white in runs of 5 frames
        on = frames[:, 40, 84].min(axis=1) > 200
        runs = int(np.sum(np.diff(np.concatenate([[0], on.astype(int), [0]])) == 1))
        assert runs == int(answers["flash_count"])
        assert on.sum() == 5 * runs
        # the patch: a 20x20 square at the bottom centre whose rows/columns alternate per the texture
        patch = frames[10, 60:80, 46:66, 0].astype(float)
        rows, cols = np.abs(np.diff(patch, axis=0)).mean(), np.abs(np.diff(patch, axis=1)).mean()
        seen = ("plain grey" if max(rows, cols) < 40 else "checks" if min(rows, cols) > 80
                else "horizontal stripes" if rows > cols else "vertical stripes")
        assert seen == answers["texture"], (video_id, rows, cols)
        assert answers["static_shape"] in SHAPES


def test_half_resolution_makes_every_texture_the_same_grey(bench: SyntheticBenchmark) -> None:
    """The resolution question: at 56x42 (the decoder's area filter) the four fills cannot be told apart."""
    textures = {}
    for item in bench.items():
        if item.task_type == "texture":
            textures[item.options["ABCD".index(item.answer)]] = item.video_id
    assert set(textures) == set(TEXTURES)  # 20 videos draw all four
    # the patch's inside at half size (its one-pixel rim takes colour from the background around it)
    patches = {t: _decode(bench.root / f"{v}.mp4", (56, 42))[10, 31:39, 24:32].astype(float)
               for t, v in textures.items()}
    for t, p in patches.items():
        assert abs(p.mean() - 128) < 6 and p.std() < 4, (t, p.mean(), p.std())
    full = {t: _decode(bench.root / f"{v}.mp4")[10, 60:80, 46:66].astype(float).std() for t, v in textures.items()}
    assert min(full[t] for t in TEXTURES if t != "plain grey") > 60  # at full size they differ


def test_version_2_fixes_the_video_settings_and_version_1_has_no_texture() -> None:
    with pytest.raises(ValidationError, match="remove fps, width"):
        _spec(width=128, fps=4)
    with pytest.raises(ValidationError, match="texture question needs version = 2"):
        SyntheticDatasetSpec(name="synthetic", questions=["texture"])
    assert _spec(questions=["flash_count"]).questions == ["flash_count"]


def test_version_1_keeps_its_cache_folder_and_version_2_has_its_own() -> None:
    v1 = SyntheticBenchmark(SyntheticDatasetSpec(name="synthetic"))
    v1_explicit = SyntheticBenchmark(SyntheticDatasetSpec(name="synthetic", version=1))
    v2 = SyntheticBenchmark(_spec())
    assert v1.root == v1_explicit.root and v1.root.name.startswith("synthetic-v1-")
    assert v2.root.name.startswith("synthetic-v2-") and v2.version == "synthetic-v2"


def _train_tool():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("train_tiny", ROOT / "tools" / "train_tiny.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_training_prompt_is_the_qwen_familys_prompt_for_the_same_item(bench: SyntheticBenchmark) -> None:
    """The model is trained on exactly what a sweep asks it (the family's prompt, uniform indices)."""
    tool = _train_tool()
    media = MediaView(np.zeros((4, 84, 112, 3), np.uint8), uniform(64, 8.0, 4, 0), 8.0, 64, "u:syn:f4", "pyav")
    for item in bench.items():
        request = get_family("qwen2_5_vl").build("r", item, media, "letter", None, 1)
        assert request.prompt == tool.prompt(item.task_type), item.item_id


def test_training_videos_come_from_a_seed_stream_no_evaluation_seed_reaches() -> None:
    tool = _train_tool()
    # the benchmark draws video i of seed s from default_rng([s, i]); the tool from default_rng([TRAIN_KEY, s, i])
    assert tool.TRAIN_KEY > 10**6 and tool.EVAL_SEED != 0
    evaluation = {tuple(np.random.default_rng([s, i]).integers(0, 2**31, 4)) for s in range(8) for i in range(64)}
    training = {tuple(np.random.default_rng([tool.TRAIN_KEY, 0, i]).integers(0, 2**31, 4)) for i in range(1024)}
    assert not evaluation & training
