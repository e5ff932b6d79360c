"""MVBench (OpenGVLab/MVBench): 20 tasks, json/<task>.json, videos under video/<source folder>/.

Prompt, system message and answer start ("Best option:(") follow the official
`mvbench.ipynb`; the answer is the option text, turned into its letter. Five tasks
ask about a clip (`start`/`end` seconds, kept in `Item.clip`); episodic reasoning
points at a folder of frames (`media_kind = "frames"`).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from engine.config.datasets import MVBenchSpec
from engine.datasets._base import BaseAdapter, Occurrences
from engine.datasets._mcq import answer_letter, check_option_count, paren_block
from engine.datasets._paths import check_root, resolve_under
from engine.datasets._tables import collect_rows, json_list, need
from engine.datasets.errors import Problems, RowError
from engine.datasets.registry import register_adapter
from engine.items import Item

__all__ = ["TASKS", "MVBench", "extract_letter_mvbench"]

VERSION = "mvbench.fs1"
SYSTEM = (
    "Carefully watch the video and pay attention to the cause and sequence of events, the detail and movement "
    "of objects, and the action and pose of persons. Based on your observations, select the best option that "
    "accurately addresses the question.\n"
)
SUFFIX = "\nOnly give the best option."
ANSWER_START = "Best option:("

# json stem -> (task name, folder under video/, media kind, has start/end)
TASKS: dict[str, tuple[str, str, str, bool]] = {
    "action_sequence": ("Action Sequence", "star/Charades_v1_480/", "video", True),
    "action_prediction": ("Action Prediction", "star/Charades_v1_480/", "video", True),
    "action_antonym": ("Action Antonym", "ssv2_video/", "video", False),
    "fine_grained_action": ("Fine-grained Action", "Moments_in_Time_Raw/videos/", "video", False),
    "unexpected_action": ("Unexpected Action", "FunQA_test/test/", "video", False),
    "object_existence": ("Object Existence", "clevrer/video_validation/", "video", False),
    "object_interaction": ("Object Interaction", "star/Charades_v1_480/", "video", True),
    "object_shuffle": ("Object Shuffle", "perception/videos/", "video", False),
    "moving_direction": ("Moving Direction", "clevrer/video_validation/", "video", False),
    "action_localization": ("Action Localization", "sta/sta_video/", "video", True),
    "scene_transition": ("Scene Transition", "scene_qa/video/", "video", False),
    "action_count": ("Action Count", "perception/videos/", "video", False),
    "moving_count": ("Moving Count", "clevrer/video_validation/", "video", False),
    "moving_attribute": ("Moving Attribute", "clevrer/video_validation/", "video", False),
    "state_change": ("State Change", "perception/videos/", "video", False),
    "fine_grained_pose": ("Fine-grained Pose", "nturgbd/", "video", False),
    "character_order": ("Character Order", "perception/videos/", "video", False),
    "egocentric_navigation": ("Egocentric Navigation", "vlnqa/", "video", False),
    "episodic_reasoning": ("Episodic Reasoning", "tvqa/frames_fps3_hq/", "frames", True),
    "counterfactual_inference": ("Counterfactual Inference", "clevrer/video_validation/", "video", False),
}


def extract_letter_mvbench(response: str, letters: str = "ABCDEFGH") -> str:
    """The option letter the official `check_ans` reads: the first word of "(" + the first output line.

    The official check compares that word to "(x)" by substring, so an empty answer "("
    counts as right for every item; here it is empty (wrong) instead.
    """
    lines = response.strip().split("\n")
    words = ("(" + lines[0].strip()).split(" ")
    word = words[0].lstrip("(").rstrip(").:,")
    return word if len(word) == 1 and word in letters else ""


@register_adapter("mvbench")
class MVBench(BaseAdapter):
    """MVBench adapter."""

    name = "mvbench"
    version = VERSION

    def __init__(self, spec: MVBenchSpec) -> None:
        super().__init__(spec)
        self.spec: MVBenchSpec = spec

    def extract(self, response: str, item: Item | None = None) -> str:
        return extract_letter_mvbench(response, "".join(item.letters) if item else "ABCDEFGH")

    def _load(self, problems: Problems) -> list[Item]:
        problems.extend(check_root(self.spec.media_root, "media_root"))
        if problems.fatal:
            return []
        items: list[Item] = []
        for task in self.spec.tasks:
            source = Path(self.spec.annotation_dir) / f"{task}.json"
            ids = Occurrences()
            items += collect_rows(source, iter(json_list(source, problems)), partial(self._row, task, source, ids),
                                  problems)
        return items

    def _row(self, task: str, source: Path, ids: Occurrences, i: int, rec: dict[str, Any]) -> Item:
        title, folder, media, bounded = TASKS[task]
        video = need(rec, "video")
        item_id = ids.next(f"{task}/{video}")
        path = resolve_under(self.spec.media_root, folder + video, source=source, row=i, item_id=item_id)
        question = need(rec, "question")
        candidates = list(need(rec, "candidates", "list[str]"))
        check_option_count(candidates, "candidates")
        answer = need(rec, "answer")
        clip = None
        if bounded:
            start, end = float(need(rec, "start", "num")), float(need(rec, "end", "num"))
            if not 0 <= start < end:
                raise RowError(f"start/end: expected 0 <= start < end, got {start}, {end}")
            clip = (start, end)
        return Item(
            dataset=self.name, dataset_version=self.version, item_id=item_id, video_id=folder + video,
            video_path=path, question=question, options=tuple(candidates),
            answer=answer_letter(answer, candidates), kind="mcq", task_type=title, category=task,
            prompt=paren_block(question, candidates) + SUFFIX, media_kind=media,  # type: ignore[arg-type]
            system_prompt=SYSTEM, response_prefix=ANSWER_START, clip=clip, extra={"answer_text": answer},
        )
