"""What framesweep builds for its demo and its tests, and no part of a real sweep.

A real sweep reads a real benchmark and loads a real checkpoint; none of it needs this package. The demo
(`framesweep demo`) and the test suite cannot download either, so they build their own here:

- `tiny`: tiny, randomly initialised checkpoints of the real architectures (`tiny:<family>` in a spec),
  one builder per model family (`BUILDERS`, `register_tiny_builder`), and a full-shape config without weights;
- `videos`: the synthetic benchmark's vocabulary (`COLOURS`, `SHAPES`, `MCQ_INSTRUCTION`), what each of its
  videos shows (`VideoScript`, `render_frames`) and the H.264 writer (`write_h264`).

Two modules of the engine reach in, each the edge where a name a spec may hold is resolved: a `tiny:<family>`
model id (`engine.backends.model_ids`) and the `synthetic` benchmark's adapter, registered beside the other
benchmarks (`engine.datasets.synthetic`). `tests/test_architecture.py` checks that no other module does, and
that this package imports nothing above the runtime (no CLI).
"""

__all__: list[str] = []
