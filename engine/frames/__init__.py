"""The media plane: plan frame indices, decode each video once, take per-budget views.

    plan.py          sampling policies (registry) and per-budget frame plans
    index.py         a video's real frames, pts and keyframes, by demuxing (shared by decoders)
    base.py          VideoInfo, FrameBatch, DecodeError, the decoder registry
    decode_pyav.py   the PyAV decoder (default)       decode_decord.py  the decord decoder
    decode.py        decode_union: one pass per video (the front door; re-exports the above)
    video.py         DecodedVideo: decoded frames and their pure per-budget views
    resize.py        target_size (a budget's resolution rule) and the one resize filter
    cache.py         FrameCache: the on-disk frame cache (the "cached" pipeline)
"""

from engine.frames import decode as _decode  # noqa: F401  (registers the decoders)
