"""The media plane: plan frame indices, decode each video once, take per-budget views.

    plan.py          sampling policies (registry) and per-budget frame plans
    index.py         a video's real frames, pts and keyframes, by demuxing (shared by decoders)
    base.py          VideoInfo, DecodeRequest (one decode pass, and the decode-size rule), FrameBatch,
                     DecodeError, the decoder registry
    decode_pyav.py   the PyAV decoder (default)       decode_decord.py  the decord decoder
    decode.py        decode_video(request, cache): the one way to decode, one pass per video (re-exports the
                     above); the pipeline, the decode actors and the benchmarks call it
    video.py         DecodedVideo: decoded frames and their pure per-budget views
    resize.py        target_size (a budget's resolution rule) and the one resize filter
    cache.py         FrameCache: the on-disk frame cache (the "cached" pipeline)
    view.py          MediaView (a budget's frames as a request carries them), FrameRef (the same by reference),
                     RepeatedFrames (a short video's repeated frames, each held once)
    actors.py        decode actors beside the engines: frames stay in their node's object store
    remote.py        RemoteVideo (the driver's handle on such a video), FrameResolver (the engine's reader)
    held.py          HeldVideo: what the later steps ask of a decoded video, here or in the object store
    meter.py         FrameMeter: frame arrays deserialised in a process (benchmarks and tests)
    buffers.py       recycled memory for decoded frames (a gone video's array serves the next)
    stats.py         low-level statistics of a video from the frames one decode pass holds
"""

from engine.frames import decode as _decode  # noqa: F401  (registers the decoders)
