"""Decoders: right frames (by the index each frame shows), union = direct, one pass, upright, VFR, lies."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engine.config import BudgetPoint
from engine.frames.decode import (
    DECODE_CALLS,
    DECODERS,
    DecodeError,
    DecodeRequest,
    decode_video,
    get_decoder,
    sizes_needed,
    target_size,
)
from engine.frames.decode_pyav import PyAVDecoder
from engine.frames.plan import plan_budget, union_indices

ASSETS = Path(__file__).resolve().parents[1] / "assets"
FACTS = json.loads((ASSETS / "assets.json").read_text())
TINY = ASSETS / "tiny.mp4"
BOTH = pytest.mark.parametrize("decoder", ["pyav", "decord"])


def frame_code(frame: np.ndarray) -> int:
    """The index a test asset frame shows: 8 black/white blocks across its top quarter."""
    h, w = frame.shape[:2]
    band = frame[: h // 4]
    bits = [band[h // 32: h // 5, int((b + 0.25) * w / 8): int((b + 0.75) * w / 8)].mean() > 128 for b in range(8)]
    return sum(int(bit) << b for b, bit in enumerate(bits))


def codes(frames: np.ndarray) -> list[int]:
    return [frame_code(f) for f in frames]


def test_registry() -> None:
    assert {"pyav", "decord"} <= set(DECODERS)
    with pytest.raises(KeyError, match="known: .*pyav"):
        get_decoder("torchcodec")


@BOTH
def test_probe_counts_frames(decoder: str) -> None:
    info = get_decoder(decoder).probe(TINY)
    assert (info.n_frames, info.fps, info.width, info.height) == (48, 24.0, 96, 64)
    assert info.rotation == 0 and not info.vfr and not info.count_lies


@BOTH
def test_decoded_frames_are_the_asked_ones(decoder: str) -> None:
    want = np.array([0, 1, 2, 9, 17, 18, 31, 40, 45, 47])
    d = decode_video(DecodeRequest(TINY, want, decoder))
    assert d.indices.tolist() == want.tolist()
    assert codes(d.frames) == want.tolist()
    assert np.allclose(d.timestamps, want / 24.0)
    assert d.pipeline == "raw" and d.missing.size == 0


def test_pyav_seeks_only_over_unneeded_gops() -> None:
    dec = PyAVDecoder()
    dec.decode_frames(DecodeRequest(TINY, np.arange(0, 48, 2)))  # a frame in every GOP: one sequential pass
    assert dec.last_seeks == 0
    out = dec.decode_frames(DecodeRequest(TINY, np.array([1, 40, 41])))  # skips GOPs between: one seek, then forward
    assert dec.last_seeks == 1
    assert codes(out.frames) == [1, 40, 41]


@pytest.mark.parametrize("asset", ["tiny.mp4", "vfr.mp4", "rotated.mp4"])
@pytest.mark.parametrize("thread_type", ["SLICE", "AUTO"])
def test_pyav_skips_unreferenced_frames_nobody_needs_and_stays_exact(asset: str, thread_type: str) -> None:
    # The assets have B-frames (bf=2): some are referenced by no other frame. Those nobody asked
    # for need not be decoded at all; the frames that are asked for must not change by a bit.
    path = ASSETS / asset
    want = np.arange(0, get_decoder("pyav").probe(path).n_frames, 4)
    full = PyAVDecoder(thread_type=thread_type, skip_unneeded=False)
    ref = full.decode_frames(DecodeRequest(path, want))
    dec = PyAVDecoder(thread_type=thread_type)
    got = dec.decode_frames(DecodeRequest(path, want))
    assert got.indices.tolist() == ref.indices.tolist() == want.tolist()
    assert np.array_equal(got.frames, ref.frames) and np.array_equal(got.timestamps, ref.timestamps)
    assert dec.last_frames_out < full.last_frames_out  # some pictures were never decoded
    assert dec.last_frames_out >= want.size


@pytest.mark.parametrize(("codec", "options", "skips"), [
    ("libx265", {"crf": "28", "x265-params": "log-level=error:bframes=3:keyint=24"}, True),
    ("mpeg4", {"bf": "2", "g": "12"}, True),  # MPEG-4 part 2: B-frames are never references
    ("libvpx-vp9", {"crf": "30", "b": "0", "g": "24"}, False),  # nothing to skip: must stay exact
])
def test_skipping_unreferenced_frames_is_exact_in_other_codecs(tmp_path: Path, codec: str,
                                                               options: dict[str, str], skips: bool) -> None:
    import av

    path = tmp_path / f"clip.{'webm' if 'vpx' in codec else 'mp4'}"
    rng = np.random.default_rng(0)
    texture = rng.integers(0, 255, (64, 192, 3), dtype=np.uint8)
    try:
        with av.open(str(path), "w") as c:
            s = c.add_stream(codec, rate=24)
            s.width, s.height, s.pix_fmt, s.options = 96, 64, "yuv420p", options
            for t in range(48):  # a panning texture: every frame differs
                frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(texture[:, t:t + 96]), format="rgb24")
                for packet in s.encode(frame):
                    c.mux(packet)
            for packet in s.encode():
                c.mux(packet)
    except (av.FFmpegError, ValueError) as err:  # this FFmpeg build lacks the encoder (UnknownCodecError)
        pytest.skip(f"{codec}: {err}")
    want = np.arange(0, 48, 4)
    full = PyAVDecoder(skip_unneeded=False)
    ref = full.decode_frames(DecodeRequest(path, want))
    dec = PyAVDecoder()
    got = dec.decode_frames(DecodeRequest(path, want))
    assert got.indices.tolist() == ref.indices.tolist() == want.tolist()
    assert np.array_equal(got.frames, ref.frames)
    assert (dec.last_frames_out < full.last_frames_out) == skips


@BOTH
@pytest.mark.parametrize("size", [None, (48, 32)])
def test_union_view_is_pixel_equal_to_decoding_each_budget(decoder: str, size: tuple[int, int] | None) -> None:
    info = get_decoder(decoder).probe(TINY)
    budgets = [BudgetPoint(frames=n, policy=p) for n in (4, 8, 16) for p in ("uniform", "random", "nested")]
    plans = [plan_budget(b, info.n_frames, info.fps) for b in budgets]
    union = decode_video(DecodeRequest(TINY, union_indices(plans), decoder, size))
    for plan in plans:
        direct = decode_video(DecodeRequest(TINY, plan.unique, decoder, size))
        assert np.array_equal(union.view(plan.indices), direct.view(plan.indices))
    if size is not None:
        assert union.frames.shape[1:3] == (32, 48)  # scaled while decoding
        assert codes(union.frames) == union.indices.tolist()


@BOTH
def test_each_video_is_decoded_once_for_all_budgets(decoder: str) -> None:
    info = get_decoder(decoder).probe(TINY)
    plans = [plan_budget(BudgetPoint(frames=n), info.n_frames, info.fps) for n in (4, 8, 16, 32)]
    before = DECODE_CALLS[str(TINY)]
    d = decode_video(DecodeRequest(TINY, union_indices(plans), decoder))
    for plan in plans:
        for size in (None, (48, 32), (24, 16)):
            d.view(plan.indices, size)
    assert DECODE_CALLS[str(TINY)] == before + 1


def test_views_resize_each_needed_frame_once_per_size() -> None:
    d = decode_video(DecodeRequest(TINY, np.arange(0, 48, 3), "pyav"))
    small = np.array([0, 24, 45])
    a = d.view(small, (48, 32))
    assert a.shape == (3, 32, 48, 3) and d.resizes == 3  # only the frames asked for
    d.view(small, (48, 32))
    d.view(np.array([0, 3, 24]), (48, 32))
    assert d.resizes == 4  # frame 3 is new; 0 and 24 come from the per-size cache
    assert codes(d.view(np.array([45, 0]), (48, 32))) == [45, 0]  # in the order asked
    assert d.view(small, (96, 64)).shape == (3, 64, 96, 3) and d.resizes == 4  # decoded size: no resize
    nbytes = d.nbytes
    d.release((48, 32))
    assert d.nbytes < nbytes
    d.release()
    assert d.nbytes == 0
    with pytest.raises(RuntimeError, match="released"):
        d.view(small)


def test_view_of_frames_not_decoded_fails() -> None:
    d = decode_video(DecodeRequest(TINY, np.array([0, 10]), "pyav"))
    with pytest.raises(KeyError):
        d.view(np.array([5]))


@BOTH
def test_rotation_metadata_gives_upright_frames(decoder: str) -> None:
    path = ASSETS / "rotated.mp4"
    info = get_decoder(decoder).probe(path)
    assert (info.width, info.height, info.rotation) == (96, 64, -90)
    d = decode_video(DecodeRequest(path, np.arange(16), decoder))
    assert d.frames.shape == (16, 64, 96, 3)
    assert codes(d.frames) == list(range(16))
    small = decode_video(DecodeRequest(path, np.array([5, 9]), decoder, (48, 32)))
    assert small.frames.shape == (2, 32, 48, 3) and codes(small.frames) == [5, 9]


@BOTH
def test_variable_frame_rate_keeps_real_timestamps(decoder: str) -> None:
    path = ASSETS / "vfr.mp4"
    info = get_decoder(decoder).probe(path)
    assert info.vfr and info.n_frames == FACTS["vfr_frames"]
    d = decode_video(DecodeRequest(path, np.arange(info.n_frames), decoder))
    assert codes(d.frames) == list(range(info.n_frames))
    assert np.allclose(d.timestamps, np.asarray(FACTS["vfr_pts_ms"]) / 1000, atol=1e-3)


def test_container_that_lies_about_its_frame_count() -> None:
    path = ASSETS / "lying_count.mp4"
    info = get_decoder("pyav").probe(path)
    assert info.declared_frames == FACTS["lying_declared"] and info.n_frames == FACTS["lying_real"]
    assert info.count_lies
    plan = plan_budget(BudgetPoint(frames=32), info.n_frames, info.fps)  # planned on the real count
    assert plan.indices.max() < info.n_frames
    d = decode_video(DecodeRequest(path, plan.unique, "pyav"))
    assert codes(d.view(plan.indices)) == plan.indices.tolist()
    # Asking for frames the header promises but the file lacks: recorded, never faked.
    d = decode_video(DecodeRequest(path, np.array([0, info.n_frames - 1, info.n_frames, 47]), "pyav"))
    assert d.indices.tolist() == [0, info.n_frames - 1]
    assert d.missing.tolist() == [info.n_frames, 47]
    with pytest.raises(DecodeError, match="do not exist"):
        d.view(np.array([0, 47]))


def test_decord_on_a_lying_container_reads_real_frames_or_fails_cleanly() -> None:
    path = ASSETS / "lying_count.mp4"
    info = get_decoder("decord").probe(path)
    try:
        d = decode_video(DecodeRequest(path, np.arange(info.n_frames), "decord"))
    except DecodeError:
        return  # decord cannot open some truncated files: an error row, never a fake frame
    assert codes(d.frames) == list(range(info.n_frames))


@BOTH
def test_short_video_repeats_or_caps_as_the_policy_declares(decoder: str) -> None:
    path = ASSETS / "short.mp4"
    info = get_decoder(decoder).probe(path)
    rep = plan_budget(BudgetPoint(frames=16), info.n_frames, info.fps)
    cap = plan_budget(BudgetPoint(frames=16, policy="nested"), info.n_frames, info.fps)
    d = decode_video(DecodeRequest(path, union_indices([rep, cap]), decoder))
    assert d.indices.tolist() == list(range(6))
    assert rep.repeated and codes(d.view(rep.indices)) == rep.indices.tolist() and len(rep.indices) == 16
    assert cap.capped and codes(d.view(cap.indices)) == list(range(6))


def test_a_request_decodes_at_the_largest_size_any_budget_needs() -> None:
    info = get_decoder("pyav").probe(TINY)

    def request(*budgets: BudgetPoint) -> DecodeRequest:
        planned = [(b, plan_budget(b, info.n_frames, info.fps).indices) for b in budgets]
        return DecodeRequest.at_sizes(TINY, "pyav", info, sizes_needed(info, planned))

    small = request(BudgetPoint(frames=4, max_pixels=1536), BudgetPoint(frames=8, short_side=16))
    assert small.size == (48, 32) and list(small.also) == [(24, 16)]
    assert small.also[(24, 16)].tolist() == plan_budget(BudgetPoint(frames=8), 48, 24.0).unique.tolist()
    stored = request(BudgetPoint(frames=4, max_pixels=1536), BudgetPoint(frames=8))
    assert stored.size is None and list(stored.also) == [(48, 32)]  # the stored size: no scaling while decoding
    assert stored.frames_at((96, 64))[(96, 64)].tolist() == stored.indices.tolist()
    with pytest.raises(ValueError, match="nothing to decode"):
        request(BudgetPoint(frames=0))
    assert target_size(96, 64, 1536, None) == (48, 32)


def test_a_request_is_normalised_and_refuses_negative_indices() -> None:
    req = DecodeRequest(str(TINY), [9, 3, 3], size=(48.0, 32.0), also={(24, 16): np.array([5, 1, 5])})  # type: ignore[arg-type]
    assert req.path == TINY and req.indices.tolist() == [3, 9] and req.size == (48, 32)
    assert req.also[(24, 16)].tolist() == [1, 5] and req.indices.dtype == np.int64
    with pytest.raises(ValueError, match="negative frame index"):
        DecodeRequest(TINY, np.array([-1, 2]))


def test_frames_at_smaller_sizes_come_from_the_same_pass_and_match_a_direct_decode() -> None:
    info = get_decoder("pyav").probe(TINY)
    budgets = [BudgetPoint(frames=16, max_pixels=1536), BudgetPoint(frames=8, max_pixels=384), BudgetPoint(frames=4)]
    plans = [plan_budget(b, info.n_frames, info.fps) for b in budgets]
    also = sizes_needed(info, [(b, p.indices) for b, p in zip(budgets, plans)])
    assert set(also) == {(96, 64), (48, 32), (24, 16)}
    before = DECODE_CALLS[str(TINY)]
    d = decode_video(DecodeRequest.at_sizes(TINY, "pyav", info, also))
    assert DECODE_CALLS[str(TINY)] == before + 1
    for b, p in zip(budgets, plans):
        size = target_size(96, 64, b.max_pixels, b.short_side)
        # a frame at a size is a pure function of (video, index, size): no other size shaped it
        assert np.array_equal(d.view(p.indices, size), decode_video(DecodeRequest(TINY, p.unique, "pyav", size)).view(p.indices))
    assert d.resizes == 0  # every planned (frame, size) was made in the decode pass


def test_shared_views_are_one_read_only_array_per_budget_and_size() -> None:
    d = decode_video(DecodeRequest(TINY, np.arange(0, 48, 4), "pyav"))
    idx = np.array([0, 8, 12, 44])  # no repeat (repeated frames: tests/frames/test_repeated_frames.py)
    a, b = d.view(idx, (48, 32), shared=True), d.view(idx.copy(), (48, 32), shared=True)
    assert a is b and not a.flags.writeable
    assert np.array_equal(a, d.view(idx, (48, 32))) and d.view(idx, (48, 32)).flags.writeable
    assert d.view(idx, shared=True) is not a
    d.release((48, 32))
    assert d.view(idx, (48, 32), shared=True) is not a


def test_decord_frame_numbers_are_mapped_by_timestamp_when_its_count_differs() -> None:
    from fractions import Fraction

    from engine.frames.base import VideoInfo
    from engine.frames.decode_decord import _decord_rows
    from engine.frames.index import StreamIndex

    class FakeReader:  # decord lists 5 frames; the 3rd does not really exist
        def __len__(self) -> int:
            return 5

        def get_frame_timestamp(self, idx: list[int]) -> np.ndarray:
            return np.asarray([[0.5 + 0.1 * i, 0.6 + 0.1 * i] for i in idx])

    ours = StreamIndex(np.array([0, 100, 300, 400]), np.array([0]), Fraction(1, 1000),
                       VideoInfo(4, 10.0, 8, 8, declared_frames=5))
    assert _decord_rows(FakeReader(), ours, np.array([0, 1, 2, 3])).tolist() == [0, 1, 3, 4]
