"""Small benchmark files in their released formats for the study specs and the checkpoint study's end-to-end
test (a helper module, not a conftest): MME, POPE, MMStar, MMBench with real images; Video-MME v1/v2, MLVU,
AVSD, MVBench, Video-MMMU with empty video files (enough for `framesweep inspect`, which counts and finds media)."""

from __future__ import annotations

import base64
import csv
import io
import json
import tomllib
from pathlib import Path
from typing import Any

import polars as pl
from PIL import Image

from helpers.specs import write_toml

IMAGE = pl.Struct({"bytes": pl.Binary(), "path": pl.String()})


def image_bytes(colour: tuple[int, int, int], fmt: str = "PNG", size: tuple[int, int] = (64, 64)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, format=fmt)
    return buf.getvalue()


def _parquet(path: Path, rows: list[dict[str, Any]], schema: dict[str, pl.DataType]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows, schema=schema).write_parquet(path)
    return path


def _json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


# --- image benchmarks ---------------------------------------------------------------------------------

MME_ROWS = [  # two images, two questions each (one perception subtask, one cognition subtask)
    ("celebrity/tt0001.jpg", "Is the actor in this picture Tom Hanks? Please answer yes or no.", "Yes", "celebrity"),
    ("celebrity/tt0001.jpg", "Is the actor in this picture Brad Pitt? Please answer yes or no.", "No", "celebrity"),
    ("code_reasoning/0020.png", "Is the output 3? Please answer yes or no.", "Yes", "code_reasoning"),
    ("code_reasoning/0020.png", "Is the output 4? Please answer yes or no.", "No", "code_reasoning"),
]


def write_mme(root: Path) -> Path:
    """lmms-lab/MME layout: question_id, image (embedded), question, answer (Yes/No), category."""
    colours = {"celebrity/tt0001.jpg": (200, 40, 40), "code_reasoning/0020.png": (40, 40, 200)}
    rows = [{"question_id": qid, "image": {"bytes": image_bytes(colours[qid]), "path": qid.split("/")[1]},
             "question": q, "answer": a, "category": c} for qid, q, a, c in MME_ROWS]
    schema = {"question_id": pl.String(), "image": IMAGE, "question": pl.String(), "answer": pl.String(),
              "category": pl.String()}
    return _parquet(root / "MME" / "test.parquet", rows, schema)


POPE_ROWS = [("1", "Is there a person in the image?", "yes", "adversarial"),
             ("2", "Is there a dog in the image?", "no", "adversarial"),
             ("3", "Is there a car in the image?", "yes", "random"),
             ("4", "Is there a cat in the image?", "no", "random")]


def write_pope(root: Path, embedded: bool = False) -> tuple[Path, Path | None]:
    """lmms-lab/POPE layout: the image embedded (as released), or naming a COCO file under a media root."""
    if embedded:
        image: Any = {"bytes": image_bytes((30, 160, 30)), "path": "COCO_val2014_000000016631.jpg"}
        media = None
    else:
        media = root / "coco"
        media.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (64, 64), (30, 160, 30)).save(media / "COCO_val2014_000000016631.jpg")
        image = "COCO_val2014_000000016631.jpg"
    rows = [{"question_id": qid, "question": q, "answer": a, "image": image, "category": c}
            for qid, q, a, c in POPE_ROWS]
    schema = {"question_id": pl.String(), "question": pl.String(), "answer": pl.String(),
              "image": IMAGE if embedded else pl.String(), "category": pl.String()}
    return _parquet(root / "POPE" / "test.parquet", rows, schema), media


MMBENCH_HEADER = ["index", "question", "hint", "A", "B", "C", "D", "answer", "category", "image", "source",
                  "l2-category", "comment", "split"]


def write_mmbench(root: Path) -> Path:
    """MMBench_DEV_EN.tsv (VLMEvalKit layout, base64 images): two 4-option questions, rotated by framesweep."""
    rows = [
        {"index": "0", "question": "Which animal is shown?", "hint": "", "A": "cat", "B": "dog", "C": "bird",
         "D": "fish", "answer": "B", "category": "attribute_recognition",
         "image": base64.b64encode(image_bytes((120, 90, 30), "JPEG")).decode(), "source": "MMBench",
         "l2-category": "fine-grained_perception (instance-level)", "comment": "", "split": "dev"},
        {"index": "1", "question": "What colour is the square?", "hint": "A plain picture.", "A": "red", "B": "green",
         "C": "blue", "D": "black", "answer": "C", "category": "color",
         "image": base64.b64encode(image_bytes((20, 20, 220), "JPEG")).decode(), "source": "MMBench",
         "l2-category": "coarse_perception", "comment": "", "split": "dev"},
    ]
    path = root / "MMBench" / "MMBench_DEV_EN.tsv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, MMBENCH_HEADER, delimiter="\t")
        w.writeheader()
        w.writerows(rows)
    return path


def write_mmstar(root: Path) -> Path:
    """Lin-Chen/MMStar val layout (embedded images, the options inside the question)."""
    q = "What is the main colour?\nOptions: A: red, B: green, C: blue, D: white"
    rows = [{"index": i, "question": q, "image": {"bytes": image_bytes(c), "path": f"{i}.png"}, "answer": a,
             "category": "coarse perception", "l2_category": "image scene and topic",
             "meta_info": {"source": "MMBench", "split": "val"}}
            for i, (c, a) in enumerate([((200, 0, 0), "A"), ((0, 0, 200), "C")])]
    schema = {"index": pl.Int64(), "question": pl.String(), "image": IMAGE, "answer": pl.String(),
              "category": pl.String(), "l2_category": pl.String(),
              "meta_info": pl.Struct({"source": pl.String(), "split": pl.String()})}
    return _parquet(root / "MMStar" / "mmstar.parquet", rows, schema)


# --- video benchmarks (empty files: found by inspect, never decoded) --------------------------------------

def write_videomme(root: Path) -> tuple[Path, Path]:
    """Video-MME v1 test parquet: one video per duration group, one question each; the videos as empty files."""
    schema = {c: pl.String() for c in ("video_id", "duration", "domain", "sub_category", "url", "videoID",
                                       "question_id", "task_type", "question")}
    schema |= {"options": pl.List(pl.String()), "answer": pl.String()}
    rows = []
    for n, (dur, vid) in enumerate((("short", "fFjv93ACGo8"), ("medium", "aBcD1234xyz"), ("long", "zYxW9876abc"))):
        rows.append({"video_id": f"00{n + 1}", "duration": dur, "domain": "Knowledge",
                     "sub_category": "Humanity & History", "url": f"https://www.youtube.com/watch?v={vid}",
                     "videoID": vid, "question_id": f"00{n + 1}-1", "task_type": "Counting Problem",
                     "question": "How many apples are there?",
                     "options": ["A. One.", "B. Two.", "C. Three.", "D. Four."], "answer": "B"})
        _touch(root / "videomme" / "data" / f"{vid}.mp4")
    return _parquet(root / "videomme" / "test-00000-of-00001.parquet", rows, schema), root / "videomme" / "data"


def write_videomme_v2(root: Path) -> tuple[Path, Path]:
    """Video-MME v2 test.parquet: one relevance group of four 8-option questions over one video."""
    options = "\n".join(f"{chr(65 + i)}. choice {i}" for i in range(8))
    rows = [{"video": "001", "question_id": f"001-{q}", "question": f"What happens ({q})?", "options": options,
             "answer": "C", "group_type": "relevance", "group_structure": "[1, 2, 3, 4]", "level": 2,
             "second_head": "Temporal Dynamics", "third_head": "Causality"} for q in (1, 2, 3, 4)]
    schema = {c: pl.String() for c in ("video", "question_id", "question", "options", "answer", "group_type",
                                       "group_structure")}
    schema |= {"level": pl.Int64(), "second_head": pl.String(), "third_head": pl.String()}
    _touch(root / "videomme_v2" / "videos" / "001.mp4")
    return _parquet(root / "videomme_v2" / "test.parquet", rows, schema), root / "videomme_v2" / "videos"


MLVU_MC = ("1_plotQA", "2_needle", "3_ego", "4_count", "5_order", "6_anomaly_reco", "7_topic_reasoning")


def write_mlvu(root: Path) -> tuple[Path, Path]:
    """MLVU dev json/ and video/ folders: one question in each multiple-choice task and in the summary task."""
    ann, media = root / "MLVU" / "json", root / "MLVU" / "video"
    for task in MLVU_MC:
        _json(ann / f"{task}.json", [{"video": "movie101_66.mp4", "duration": 246, "question": "What colour is it?",
                                      "candidates": ["Yellow", "Red", "Blue", "Green"], "answer": "Red",
                                      "question_type": task.split("_", 1)[1]}])
        _touch(media / task / "movie101_66.mp4")
    _json(ann / "9_summary.json", [{"video": "summary_1.mp4", "duration": 700, "question": "Summarise the video.",
                                    "answer": "A dog plays in the park.", "question_type": "summary"}])
    _touch(media / "9_summary" / "summary_1.mp4")
    return ann, media


def write_avsd(root: Path) -> tuple[Path, Path]:
    """DSTC7-AVSD test JSON (one dialog) over a Charades folder."""
    dialog = {"image_id": "3MSZA", "summary": "a man cooks", "caption": "A man is cooking in a kitchen.",
              "dialog": [{"question": "is there a man ?", "answer": "yes , one man"},
                         {"question": "does he talk ?", "answer": "no , he does not"}]}
    ann = _json(root / "AVSD" / "test_set4DSTC7-AVSD.json", {"dialogs": [dialog]})
    _touch(root / "AVSD" / "Charades" / "3MSZA.mp4")
    return ann, root / "AVSD" / "Charades"


def write_mvbench(root: Path) -> tuple[Path, Path]:
    """MVBench json/ and video/ folders: one question per task, its media in the task's source folder."""
    from engine.datasets.mvbench import TASKS

    ann, media = root / "MVBench" / "json", root / "MVBench" / "video"
    for task, (_, folder, kind, bounded) in TASKS.items():
        rec: dict[str, Any] = {"video": "clip1.mp4" if kind == "video" else "clip1", "question": "What happens?",
                               "candidates": ["It starts.", "It stops."], "answer": "It stops."}
        if bounded:
            rec |= {"start": 1.0, "end": 3.0}
        _json(ann / f"{task}.json", [rec])
        if kind == "video":
            _touch(media / folder / "clip1.mp4")
        else:
            _touch(media / folder / "clip1" / "00001.jpg")
    return ann, media


def write_video_mmmu(root: Path) -> tuple[Path, Path]:
    """Video-MMMU per-track parquet folders (Perception, Comprehension, Adaptation) over one lecture video."""
    ann, media = root / "VideoMMMU", root / "VideoMMMU-videos"
    vid = "validation_Chemistry_12"
    _touch(media / "Science" / f"{vid}.mp4")
    schema = {"id": pl.String(), "question": pl.String(), "options": pl.List(pl.String()), "answer": pl.String(),
              "question_type": pl.String()}
    opts = ["2 moles", "4 moles", "6 moles", "8 moles"]
    _parquet(ann / "Perception" / "test-00000-of-00001.parquet", [
        {"id": vid, "question": "How many moles are shown?", "options": opts, "answer": "B",
         "question_type": "multiple-choice"}], schema)
    _parquet(ann / "Comprehension" / "test-00000-of-00001.parquet", [
        {"id": vid, "question": "What is the molar mass of water in g/mol?", "options": [], "answer": "18.02",
         "question_type": "open"}], schema)
    _parquet(ann / "Adaptation" / "test-00000-of-00001.parquet", [
        {"id": vid, "question": "<image 1> Which reagent is limiting?", "options": ["A. H2", "B. N2", "C. O2"],
         "answer": "C", "question_type": "multiple-choice",
         "image": {"bytes": image_bytes((9, 9, 9)), "path": "q.png"}}], {**schema, "image": IMAGE})
    return ann, media


def study_files(root: Path) -> dict[str, dict[str, Path]]:
    """Every fixture, as the path fields each adapter's table takes: {adapter name: {field: path}}."""
    pope, _ = write_pope(root, embedded=True)
    vmme, vmme_media = write_videomme(root)
    v2, v2_media = write_videomme_v2(root)
    mlvu, mlvu_media = write_mlvu(root)
    avsd, charades = write_avsd(root)
    mvb, mvb_media = write_mvbench(root)
    vmmmu, vmmmu_media = write_video_mmmu(root)
    cache = root / "image-cache"
    return {
        "mme": {"annotations": write_mme(root), "image_cache": cache},
        "pope": {"annotations": pope, "image_cache": cache},
        "mmstar": {"annotations": write_mmstar(root), "image_cache": cache},
        "mmbench": {"annotations": write_mmbench(root), "image_cache": cache},
        "videomme": {"annotations": vmme, "media_root": vmme_media},
        "videomme_v2": {"annotations": v2, "media_root": v2_media},
        "mlvu": {"annotation_dir": mlvu, "media_root": mlvu_media},
        "avsd": {"annotations": avsd, "media_root": charades},
        "mvbench": {"annotation_dir": mvb, "media_root": mvb_media},
        "video_mmmu": {"annotation_root": vmmmu, "media_root": vmmmu_media},
    }


def _study_extra_files(root: Path, files: dict[str, dict[str, Path]]) -> dict[str, dict[str, Path]]:
    """Fixtures study_files lacks: TempCompass, a LLaVA-Video-178K file, and MLVU's sub-scene task."""
    tc = root / "TempCompass"
    for config, question, answer in (
            ("multi-choice", "What is the direction of the car?\nA. left\nB. right", "B. right"),
            ("yes_no", "Is the car moving right?", "yes"),
            ("caption_matching", "Which caption matches?\nCaption A: Left.\nCaption B: Right.", "Caption B: Right.")):
        (tc / config).mkdir(parents=True)
        pl.DataFrame([{"video_id": "1008", "question": question, "answer": answer, "dim": "direction"}]).write_parquet(
            tc / config / "test-00000-of-00001.parquet")
    _touch(root / "tc-videos" / "1008.mp4")
    sample = {"id": "s0", "video": "academic/v_abc.mp4",
              "conversations": [{"from": "human", "value": "<image>\nHow many people appear?"},
                                {"from": "gpt", "value": "Two."}]}
    _touch(root / "178k" / "academic" / "v_abc.mp4")
    _json(root / "178k" / "sample.json", [sample])
    mlvu = files["mlvu"]
    _json(mlvu["annotation_dir"] / "8_sub_scene.json", [{
        "video": "subPlot_1.mp4", "duration": 500, "question": "Describe the scene where the car stops.",
        "answer": "The car stops at a light.", "question_type": "subPlot", "scoring_points": ["a car stops"]}])
    _touch(mlvu["media_root"] / "8_sub_scene" / "subPlot_1.mp4")
    return {"tempcompass": {"annotation_root": tc, "media_root": root / "tc-videos"},
            "llava_video_178k": {"annotations": root / "178k" / "sample.json", "media_root": root / "178k"}}


def study_spec_on_fixtures(tmp_path: Path, spec: Path) -> tuple[Path, dict[str, Any]]:
    """A shipped study spec with every dataset's paths pointed at these fixtures (under tmp_path/data) and its
    store at tmp_path/out: the TOML file written and its data."""
    data = tomllib.loads(spec.read_text())
    files = study_files(tmp_path / "data")
    files |= _study_extra_files(tmp_path / "data", files)
    for ds in data.get("datasets") or [data["dataset"]]:
        paths = {k: str(v) for k, v in files[ds["name"]].items() if k in ds or k == "image_cache"}
        ds.update(paths)
        if "references" in ds:  # the test references: dialogs of the same shape
            ds["references"] = paths["annotations"]
    data["store"] = {"out_dir": str(tmp_path / "out")}
    return write_toml(tmp_path / spec.name, data), data
