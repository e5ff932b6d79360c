"""A local copy of lmms-lab's POPE in its real schema (the hub's parquet features, ``image`` an Image), for the
lmms-eval bridge's image-task tests: three questions over two images of known pixels."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

_RNG = np.random.default_rng(7)
PIXELS = [_RNG.integers(0, 256, (5, 7, 3), dtype=np.uint8), _RNG.integers(0, 256, (4, 6, 3), dtype=np.uint8)]
# POPE's test split: (question_id, question, answer, image_source, image index, category); two questions share image 0
POPE = [("1", "Is there a dog in the image?", "yes", "COCO_val2014_000000310196", 0, "adversarial"),
        ("2", "Is there a car in the image?", "no", "COCO_val2014_000000310196", 0, "adversarial"),
        ("3", "Is there a person in the image?", "yes", "COCO_val2014_000000210789", 1, "popular")]


def _png(pixels: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def pope_release(root: Path) -> Path:
    """A local copy of lmms-lab's POPE: ``data/test-*.parquet`` with the hub's features (``image`` an Image)."""
    import datasets

    features = datasets.Features({"id": datasets.Value("string"), "question_id": datasets.Value("string"),
                                  "question": datasets.Value("string"), "answer": datasets.Value("string"),
                                  "image_source": datasets.Value("string"), "image": datasets.Image(),
                                  "category": datasets.Value("string")})
    docs: dict[str, list[Any]] = {k: [] for k in features}
    for i, (qid, question, answer, source, image, category) in enumerate(POPE):
        for key, value in (("id", str(i)), ("question_id", qid), ("question", question), ("answer", answer),
                           ("image_source", source), ("image", {"bytes": _png(PIXELS[image]), "path": None}),
                           ("category", category)):
            docs[key].append(value)
    (root / "data").mkdir(parents=True)
    datasets.Dataset.from_dict(docs, features=features).to_parquet(root / "data" / "test-00000-of-00001.parquet")
    return root


