"""Union decoding: one pass per video, pixel-equal to decoding each budget on its own."""

from pathlib import Path

import numpy as np
import pytest

from engine.config import BudgetPoint
from engine.config.datasets import SyntheticDatasetSpec
from engine.datasets.synthetic import SyntheticBenchmark
from engine.frames.decode import DECODE_CALLS, decode_union, get_decoder
from engine.frames.plan import plan_budget, union_indices


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bench = SyntheticBenchmark(SyntheticDatasetSpec(name="synthetic", root=tmp_path_factory.mktemp("syn"),
                                                    n_videos=1, seconds=5.0, fps=10, width=96, height=64))
    bench.ensure_videos()
    return bench.root / f"{bench.scripts()[0].video_id}.mp4"


@pytest.mark.parametrize("decoder", ["pyav", "decord"])
def test_union_views_equal_direct_decodes(video: Path, decoder: str) -> None:
    info = get_decoder(decoder).probe(video)
    assert info.n_frames == 50 and (info.width, info.height) == (96, 64)
    budgets = [BudgetPoint(frames=n) for n in (3, 4, 7, 16)]
    plans = [plan_budget(b, info.n_frames, info.fps) for b in budgets]
    union = union_indices(plans)
    before = DECODE_CALLS[str(video)]
    decoded = decode_union(video, union, decoder)
    assert DECODE_CALLS[str(video)] == before + 1
    assert decoded.frames.shape == (union.size, 64, 96, 3)
    for plan in plans:
        direct = decode_union(video, np.unique(plan.indices), decoder)
        view = decoded.view(plan.indices)
        # the view is in the plan's order and equals a direct decode of exactly those frames
        expected = direct.frames[np.searchsorted(np.unique(plan.indices), plan.indices)]
        assert view.shape == (plan.indices.size, 64, 96, 3)
        assert np.array_equal(view, expected)


def test_view_of_undecoded_frame_fails(video: Path) -> None:
    decoded = decode_union(video, np.array([0, 10, 20]))
    with pytest.raises(KeyError):
        decoded.view(np.array([0, 11]))


def test_resized_view_keeps_aspect_and_is_cached(video: Path) -> None:
    decoded = decode_union(video, np.array([0, 25, 49]))
    a = decoded.view(np.array([0, 49]), (48, 32))
    b = decoded.view(np.array([49]), (48, 32))
    assert a.shape == (2, 32, 48, 3)
    assert np.array_equal(a[1], b[0])


@pytest.mark.parametrize("asset", ["synthetic", "rotated.mp4", "vfr.mp4"])
def test_pipelined_colour_conversion_equals_serial(video: Path, asset: str) -> None:
    """Conversion on a second thread (long unions) gives the same frames as converting in the decode loop."""
    from engine.frames.decode_pyav import PyAVDecoder

    path = video if asset == "synthetic" else Path(__file__).resolve().parents[1] / "assets" / asset
    info = PyAVDecoder().probe(path)
    idx = np.arange(0, info.n_frames, 2, dtype=np.int64)
    also = {(32, 24): idx[::3]}
    piped = PyAVDecoder(pipeline_min_frames=1).decode_frames(path, idx, None, also)
    serial = PyAVDecoder(pipeline_min_frames=1 << 30).decode_frames(path, idx, None, also)
    assert piped.frames.shape[0] == idx.size and np.array_equal(piped.indices, serial.indices)
    assert np.array_equal(piped.frames, serial.frames)
    assert piped.extra.keys() == serial.extra.keys()
    for size, frames in serial.extra.items():
        assert frames.keys() == piped.extra[size].keys()
        assert all(np.array_equal(frames[i], piped.extra[size][i]) for i in frames)
