"""The frames a budget plans are the frames the model sees: checked through the trained tiny model.

`tiny:qwen2_5_vl_seen` answers from what it sees (colours at the start and end, a shape, a fine texture, brief
flashes), so its option probabilities are a fingerprint of the exact pixels, order, size and time positions it
got. Each sweep here runs the whole pipeline (planner, one decode per video, union views, the frame cache, the
family's request, the real vLLM engine in a Ray actor); the reference asks the same engine about frames this
test decodes itself, video by video, at each row's recorded indices and size (no union, no cache, no views),
under media ids of its own (no cache hit). Clean, the two agree on every row; each fault below, injected into
one step of the path with monkeypatch (a fault the real components cannot produce on demand), makes them
disagree, or, where the reference would share the fault (colour conversion in the decoder both use), drops
the model's accuracy on the questions the fault must hurt.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from engine.backends import families
from engine.backends.families import get_family
from engine.config import parse_spec
from engine.datasets.synthetic import SyntheticBenchmark, SyntheticDatasetSpec
from engine.frames import decode_pyav
from engine.frames.base import DecodeRequest
from engine.frames.cache import FrameCache
from engine.frames.decode_pyav import PyAVDecoder
from engine.frames.video import DecodedVideo
from engine.frames.view import MediaView
from engine.items import Item
from engine.results.directory import ResultsDir
from engine.scoring import score_letters
from engine.sweep import Sweep, start_backends

pytestmark = pytest.mark.engine  # starts processes (see conftest: the fast tier)

SEED, VIDEOS = 77, 6
TOL = 2e-3  # option probabilities of the same request agree to ~1e-5 whatever the batch; a fault moves them more
MODEL = {"id": "seen", "family": "qwen2_5_vl", "path": "tiny:qwen2_5_vl_seen", "max_frames": 32,
         "engine": {"max_model_len": 4096, "max_num_seqs": 32, "dtype": "float32"}}
_runs = itertools.count()


def _spec_dict(out: Path, root: Path, budgets: list[dict[str, Any]], **decode: Any) -> dict[str, Any]:
    return {"sweep_id": "fidelity", "models": [MODEL],
            "dataset": {"name": "synthetic", "version": 2, "n_videos": VIDEOS, "seed": SEED, "root": str(root)},
            "budgets": budgets, "prompt": {"scoring": "letter"},
            "decode": {"actors": 0, **decode}, "store": {"out_dir": str(out), "commit_interval_s": 1.0}}


def _spec(out: Path, root: Path, budgets: list[dict[str, Any]], **decode: Any):  # type: ignore[no-untyped-def]
    return parse_spec(_spec_dict(out, root, budgets, **decode))


BUDGETS = [{"frames": 4}, {"frames": 16}]


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Item]]:
    root = tmp_path_factory.mktemp("fidelity-videos")
    bench = SyntheticBenchmark(SyntheticDatasetSpec(name="synthetic", version=2, n_videos=VIDEOS, seed=SEED, root=root))
    return root, {i.item_id: i for i in bench.items()}


@pytest.fixture(scope="module")
def engine(fs_cache: Path, videos: tuple[Path, dict[str, Item]], tmp_path_factory: pytest.TempPathFactory):
    """One engine of the trained model for the module; every sweep and reference request goes to it."""
    import ray

    ray.shutdown()  # a test before may have left its driver connected elsewhere
    loop = asyncio.new_event_loop()
    spec = _spec(tmp_path_factory.mktemp("fidelity-start"), videos[0], BUDGETS)
    backend = loop.run_until_complete(start_backends(spec))["seen"]
    yield backend, loop
    loop.run_until_complete(backend.close())
    loop.close()
    ray.shutdown()


def sweep(engine, videos, out: Path, budgets: list[dict[str, Any]] = BUDGETS, ok: bool = True,  # type: ignore[no-untyped-def]
          **decode: Any) -> pl.DataFrame:
    """Run the whole pipeline once (engine caches emptied first, so no answer comes from an earlier run); `ok`:
    every row must have an answer."""
    backend, loop = engine
    loop.run_until_complete(backend.reset_caches())
    loop.run_until_complete(Sweep(_spec(out, videos[0], budgets, **decode), backends={"seen": backend}).run())
    rows = ResultsDir.open(out).rows().collect().sort("item_id", "budget_id")
    assert rows.height == VIDEOS * 5 * len(budgets)
    if ok:
        assert rows["error_type"].is_null().all(), rows["error"].drop_nulls().to_list()[:3]
    return rows


def reference(engine, videos, rows: pl.DataFrame) -> list[list[float]]:  # type: ignore[no-untyped-def]
    """Each row's option probabilities when the engine is asked about frames decoded here, at the row's recorded
    indices and size, one video at a time."""
    backend, loop = engine
    root, items = videos
    family, run = get_family("qwen2_5_vl"), next(_runs)
    requests = []
    for n, row in enumerate(rows.iter_rows(named=True)):
        idx = np.asarray(row["frame_indices"], dtype=np.int64)
        size = (row["width"], row["height"])
        batch = PyAVDecoder().decode_frames(DecodeRequest(root / f"{row['video_id']}.mp4", idx, "pyav",
                                                          None if size == (112, 84) else size))
        assert np.array_equal(batch.indices, idx)
        media = MediaView(batch.frames, idx, 8.0, 64, f"reference{run}:{n}", "pyav")
        requests.append(family.build(f"ref{n}", items[row["item_id"]], media, "letter", None, 1))
    results = loop.run_until_complete(backend.generate(requests))
    return [score_letters(list(items[row["item_id"]].letters), r.letter_logprobs).probs
            for row, r in zip(rows.iter_rows(named=True), results)]


def disagreements(engine, videos, rows: pl.DataFrame) -> list[str]:  # type: ignore[no-untyped-def]
    """The rows whose option probabilities differ from the reference's by more than TOL."""
    ref = reference(engine, videos, rows)
    out = []
    for row, want in zip(rows.iter_rows(named=True), ref):
        got = row["option_probs"]
        if max(abs(a - b) for a, b in zip(got, want)) > TOL:
            out.append(f"{row['item_id']}@{row['budget_id']}: {np.round(got, 4).tolist()} vs {np.round(want, 4).tolist()}")
    return out


def accuracy(rows: pl.DataFrame, kinds: tuple[str, ...], frames: int = 16) -> float:
    sub = rows.filter(pl.col("task_type").is_in(kinds) & (pl.col("frames") == frames) & pl.col("short_side").is_null())
    return float(sub["correct"].mean())  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def clean(engine, videos, tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:  # type: ignore[no-untyped-def]
    return sweep(engine, videos, tmp_path_factory.mktemp("clean"), [*BUDGETS, {"frames": 16, "short_side": 42}])


def test_the_engine_sees_what_the_planner_planned(engine, videos, clean: pl.DataFrame) -> None:  # type: ignore[no-untyped-def]
    assert clean.height == VIDEOS * 5 * 3
    assert disagreements(engine, videos, clean) == []
    # and the model does see: the one-frame questions are answered at 16 frames, not at chance
    assert accuracy(clean, ("first_colour", "last_colour", "static_shape")) >= 0.85


def test_the_cached_pipeline_sends_what_the_raw_one_sends(engine, videos, clean, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Lossless frame cache (npy): the same option probabilities as decoding the files, row for row (warm and cold)."""
    cache = tmp_path / "frames"
    for out in ("cold", "warm"):
        rows = sweep(engine, videos, tmp_path / out, pipeline="cached", cache_dir=str(cache), cache_format="npy")
        assert (rows["pipeline"] == "cached").all()
        assert disagreements(engine, videos, rows) == [], out


# --- faults: each must be seen -----------------------------------------------------------------------------

Patch = Callable[[pytest.MonkeyPatch], None]


def _frames_fault(change: Callable[[np.ndarray], np.ndarray]) -> Patch:
    def patch(mp: pytest.MonkeyPatch) -> None:
        real = DecodedVideo.budget

        def budget(self, indices, size, *, by_ref=False):  # type: ignore[no-untyped-def]
            frames, jpeg = real(self, indices, size, by_ref=by_ref)
            return change(np.asarray(frames)), jpeg

        mp.setattr(DecodedVideo, "budget", budget)
    return patch


def _union_off_by_one(mp: pytest.MonkeyPatch) -> None:
    """The union view reads the row after the one the frame index names."""
    def rows(self, indices):  # type: ignore[no-untyped-def]
        idx = np.asarray(self.check(indices), dtype=np.int64)
        return np.minimum(np.searchsorted(self.indices, idx) + 1, self.indices.size - 1)

    mp.setattr(DecodedVideo, "_rows", rows)


def _metadata_fault(change: Callable[[dict[str, Any]], dict[str, Any]]) -> Patch:
    def patch(mp: pytest.MonkeyPatch) -> None:
        real = families.video_metadata
        mp.setattr(families, "video_metadata", lambda media: change(real(media)))
    return patch


def _processor_resize(mp: pytest.MonkeyPatch) -> None:
    """The processor is told to shrink frames below the size the row records (56x56 pixels at most)."""
    mp.setattr(families.Qwen25VL, "mm_kwargs", lambda self, media: {"size": {"shortest_edge": 28 * 28,
                                                                               "longest_edge": 56 * 56}})


def _processor_resamples(mp: pytest.MonkeyPatch) -> None:
    """The processor is asked to sample frames itself (at 1 fps) out of the frames framesweep sent."""
    mp.setattr(families.Qwen25VL, "mm_kwargs", lambda self, media: {"do_sample_frames": True, "fps": 1.0})


def _resized_view(mp: pytest.MonkeyPatch) -> None:
    """The view hands frames at half the size the row records."""
    import cv2

    _frames_fault(lambda f: np.stack([cv2.resize(x, (x.shape[1] // 2, x.shape[0] // 2), interpolation=cv2.INTER_AREA)
                                      for x in f]))(mp)


FAULTS: dict[str, Patch] = {
    "reversed": _frames_fault(lambda f: f[::-1].copy()),
    "shuffled": _frames_fault(lambda f: f[np.random.default_rng(0).permutation(len(f))]),
    "repeated": _frames_fault(lambda f: np.repeat(f[:1], len(f), axis=0)),
    "union_off_by_one": _union_off_by_one,
    "view_resized": _resized_view,
    "processor_resizes": _processor_resize,
    "processor_resamples": _processor_resamples,
    "metadata_fps": _metadata_fault(lambda m: {**m, "fps": m["fps"] * 4}),
    "metadata_indices": _metadata_fault(lambda m: {**m, "frames_indices": m["frames_indices"][::2]}),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_fault_on_the_path_is_seen(engine, videos, fault: str, tmp_path: Path,  # type: ignore[no-untyped-def]
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    FAULTS[fault](monkeypatch)
    rows = sweep(engine, videos, tmp_path / "out", ok=False)
    monkeypatch.undo()  # the reference decodes and asks without the fault
    answered = rows.filter(pl.col("error_type").is_null())
    bad = disagreements(engine, videos, answered) if answered.height else []
    failed = rows.height - answered.height  # a request the engine refused is seen too (an error row)
    # clean, none differs (test_the_engine_sees_what_the_planner_planned); a subtle fault (one union position off
    # moves a frame to a neighbour that often looks the same) still moves a tenth of the rows
    assert failed + len(bad) >= rows.height // 10, f"{fault}: only {failed + len(bad)} of {rows.height} rows differ"


def test_swapped_colour_channels_are_seen_by_the_answers(engine, videos, clean, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """BGR instead of RGB out of the decoder. The reference decodes with the same decoder (it would share the
    fault), so the model's colour answers are the check: red and blue swap, yellow turns cyan."""
    real = decode_pyav._Converter._rgb
    monkeypatch.setattr(decode_pyav._Converter, "_rgb",
                        lambda self, frame, dst=None: _bgr(real(self, frame, None), dst))
    rows = sweep(engine, videos, tmp_path / "out")
    colours = ("first_colour", "last_colour")
    assert accuracy(clean, colours) >= 0.9
    assert accuracy(rows, colours) <= accuracy(clean, colours) - 0.3


def _bgr(rgb: np.ndarray, dst: np.ndarray | None) -> np.ndarray:
    out = rgb[..., ::-1]
    if dst is None:
        return out.copy()
    dst[...] = out
    return dst


def test_a_cache_that_returns_another_frame_is_seen(engine, videos, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The cached pipeline, warm, with a cache whose reads come back from the neighbouring frame's file."""
    cache = tmp_path / "frames"
    sweep(engine, videos, tmp_path / "fill", pipeline="cached", cache_dir=str(cache), cache_format="npy")
    real = FrameCache._read

    def read(self, path, size):  # type: ignore[no-untyped-def]
        held = sorted(path.parent.glob(f"*{path.suffix}"))  # the frames cached at this size, in index order
        return real(self, held[(held.index(path) + 1) % len(held)], size)

    monkeypatch.setattr(FrameCache, "_read", read)
    rows = sweep(engine, videos, tmp_path / "out", pipeline="cached", cache_dir=str(cache), cache_format="npy")
    monkeypatch.undo()
    bad = disagreements(engine, videos, rows)
    assert len(bad) >= rows.height // 4, bad


def test_the_training_positions_are_the_engines(engine, videos, clean: pl.DataFrame) -> None:  # type: ignore[no-untyped-def]
    """transformers' forward with the training tool's rotary positions gives the engine's option probabilities:
    the model answers in the engine as it was trained (transformers' own positions for text after a video differ
    from vLLM's; trained on those, the model lost its sense of the clip's start in the engine)."""
    import importlib.util

    import torch
    from transformers import AutoProcessor, Qwen2_5_VLForConditionalGeneration

    from engine.demo.tiny import build_tiny_checkpoint

    spec = importlib.util.spec_from_file_location("train_tiny", Path(__file__).resolve().parents[2] / "tools" / "train_tiny.py")
    assert spec and spec.loader
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    folder = build_tiny_checkpoint("qwen2_5_vl_seen")
    proc = AutoProcessor.from_pretrained(folder)
    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(folder).float().eval()
    letters = [proc.tokenizer.convert_tokens_to_ids(x) for x in "ABCD"]
    root = videos[0]
    rows = clean.filter(pl.col("short_side").is_null()).head(12)
    for row in rows.iter_rows(named=True):
        idx = np.asarray(row["frame_indices"])
        frames = PyAVDecoder().decode_frames(DecodeRequest(root / f"{row['video_id']}.mp4", idx, "pyav")).frames
        meta = [{"fps": 8.0, "duration": 8.0, "total_num_frames": 64, "frames_indices": idx.tolist(),
                 "video_backend": "pyav"}]
        b = proc(text=[tool.prompt(row["task_type"])], videos=[frames], video_metadata=meta, do_sample_frames=False,
                 return_tensors="pt")
        b["position_ids"] = tool.mrope_positions(b["input_ids"], b["attention_mask"], b["video_grid_thw"],
                                                 b["second_per_grid_ts"], model.config.video_token_id,
                                                 model.config.vision_config.tokens_per_second)
        with torch.no_grad():
            probs = torch.softmax(model(**b).logits[0, -1], -1)[letters]
        probs = (probs / probs.sum()).tolist()
        assert max(abs(a - b) for a, b in zip(probs, row["option_probs"])) < 5e-3, (row["item_id"], probs,
                                                                                   row["option_probs"])



def test_the_http_path_answers_as_the_engine_does(engine, videos, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The same sweep through a real `vllm` OpenAI server of the trained checkpoint and through framesweep's own
    engine: the same answers and option probabilities, row for row. Both send the frame cache's JPEG bytes (the
    server decodes them, the engine gets the pixels framesweep decoded from them), so both see the same pixels."""
    import os

    from helpers.vllm_server import vllm_server

    from engine.demo.tiny import build_tiny_checkpoint

    folder = build_tiny_checkpoint("qwen2_5_vl_seen")
    cache = {"pipeline": "cached", "cache_dir": str(tmp_path / "frames"), "cache_format": "jpeg"}
    in_process = sweep(engine, videos, tmp_path / "engine", **cache)
    with vllm_server(folder, Path(os.environ["FRAMESWEEP_CACHE"])) as url:
        model = {"id": "seen", "family": "qwen2_5_vl", "path": str(folder), "backend": "openai",
                 "http": {"base_url": url}}
        spec = {**_spec_dict(tmp_path / "http", videos[0], BUDGETS, **cache), "models": [model]}
        asyncio.run(Sweep(parse_spec(spec)).run())
    via_http = ResultsDir.open(tmp_path / "http").rows().collect().sort("item_id", "budget_id")
    assert via_http["error_type"].is_null().all(), via_http["error"].drop_nulls().to_list()[:3]
    assert via_http["item_id"].to_list() == in_process["item_id"].to_list()
    assert via_http["pred"].to_list() == in_process["pred"].to_list()
    for h, e in zip(via_http["option_probs"].to_list(), in_process["option_probs"].to_list()):
        assert max(abs(a - b) for a, b in zip(h, e)) < 1e-3, (h, e)
    # answers that vary and are mostly right: the parity is not the flat-logit agreement of a random model
    assert via_http["pred"].n_unique() == 4 and accuracy(via_http, ("first_colour", "last_colour")) >= 0.85
