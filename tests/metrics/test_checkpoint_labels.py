"""How the checkpoint study's tables label their rows: the frames = 0 row gives no trap verdict (no video was sent),
and a checkpoint whose base's chains end early (LLaVA-1.5-7B: 4 frames) says its video gains are read there. The
numbers stay the document's; hand-built rows (`helpers.trap_rows`), values by hand."""

from __future__ import annotations

from helpers.trap_rows import CAPPED, short_chain_document

from engine.metrics.checkpoint_study import NO_VIDEO, frame_ceilings, frames_label, trap_verdict


def test_the_document_keeps_its_numbers_and_says_where_video_was_read() -> None:
    doc = short_chain_document()
    trap = {(r["model_id"], r["frames"]): (r["video_gain"], r["image_gain"], r["trapped"])
            for r in doc["temporal_trap"]}
    assert trap == {("qwen-f16", 0): (1.0, -0.5, True), ("qwen-f16", 8): (1.0, -0.5, True),
                    ("qwen-f16", 16): (0.5, -0.5, True), ("llava-f16", 0): (1.0, -0.5, True),
                    ("llava-f16", 4): (0.5, -0.5, True)}  # frames 0 computed as ever: no value changed
    view = {r["model_id"]: (r["video_frames"], r["video_gain"]) for r in doc["train_frames"]}
    assert view == {"qwen-f16": (16, 0.5), "llava-f16": (4, 0.5)}  # each at its base's dearest budget
    pq = {r["model_id"]: r["video_frames"] for r in doc["per_question"]["train_frames"]}
    assert pq == {"qwen-f16": 16, "llava-f16": 4}


def test_labels_of_the_trap_rows() -> None:
    doc = short_chain_document()
    assert frame_ceilings(doc["temporal_trap"]) == {"llava-f16": CAPPED}
    assert frame_ceilings(doc["train_frames"], "video_frames") == {"llava-f16": CAPPED}
    assert [trap_verdict(r) for r in doc["temporal_trap"]] == [NO_VIDEO, "yes", "yes", NO_VIDEO, "yes"]
    assert [frames_label(r["frames"]) for r in doc["temporal_trap"]] == ["text only", "8", "16", "text only", "4"]
    assert frame_ceilings([{"model_id": "t", "frames": 0}, {"model_id": "v", "frames": 8}]) == {
        "t": "no video budget: text only (others up to 8 frames)"}
    assert frame_ceilings([{"model_id": "v", "frames": 8}, {"model_id": "w", "video_frames": None}]) == {}
