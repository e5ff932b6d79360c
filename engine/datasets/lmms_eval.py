"""Any lmms-eval task as a framesweep dataset (``name = "lmms_eval"``, ``task = "<task name>"``).

The task is loaded by lmms-eval itself (`engine.datasets._lmms_tasks`): its YAML, its dataset (a local copy,
``dataset_path``, or the Hugging Face cache, never downloaded), its ``doc_to_text`` / ``doc_to_visual`` /
``doc_to_target`` / ``doc_to_choice`` with the ``lmms_eval_specific_kwargs`` of ``lmms_model``. Each document
becomes one item:

- its id is lmms-eval's key, as `engine.results.lmms_eval` keys an imported log: the document's
  ``question_id`` when it has one, else its ``doc_id`` (its position in the task's evaluation split), so a
  bridged run and an imported lmms-eval log join on the same keys;
- its prompt is the task's ``doc_to_text``, its options the task's ``doc_to_choice`` (when it has one; else,
  for a letter or index answer, the ``A. ...`` lines the prompt lists: `options_in_text`), its answer the
  task's ``doc_to_target`` (an option index, NExT-QA's ``2``, as that option's letter where the task's
  ``process_results`` scores the letter right, so letter scoring compares letters); an item with options is
  multiple choice, one whose answer is yes or no (POPE's) yes/no, any other open;
- its generated answers are made with the task's ``generation_kwargs`` (`generation_of`: ``max_new_tokens``,
  ``until`` as stop strings, the temperature where it samples), letter scoring's one token aside;
- its media is the one file ``doc_to_visual`` names, which must lie under the media root (``media_root``,
  default where lmms-eval unpacks the task: ``$HF_HOME/<the task's dataset_kwargs.cache_dir>``); framesweep
  plans and decodes the frames itself, lmms-eval's sampling is never called. A task whose ``doc_to_visual``
  returns one PIL image (MME, POPE, ...) has that image written once, losslessly (PNG, by content hash), to the
  image cache (``image_cache``), as the image benchmarks' embedded images are; several visuals are refused;
- an image task (its first document's visual is one image) is asked as the image benchmarks are: once, as one
  image, at its image budgets (``asks_images``), not at every frame budget;
- a task whose text depends on the frames shown (Video-MME with subtitles' ``frame_num``, LongVideoBench's
  ``insert_interleave_subtitles``: subtitles at the frames) has each job's prompt built by the task's own
  ``doc_to_text`` at the frames that job sends (`job_prompt`, `engine.datasets._lmms_frames`), so every budget's
  prompt describes its own frames; the rows' rule says so (``|frames=<key>``).

Each answer is scored by the task's own ``process_results`` on the response as the task's filter pipeline
leaves it (a task without ``filter_list``: the raw response), reading the task's first metric: a number is the
score (a 0/1 one is correctness on a multiple-choice or yes/no item), a dict gives its ``score``, else its
``correct``, else its prediction against its gold answer (Video-MME's ``pred_answer`` / ``answer``, LongVideoBench's
``parsed_pred`` / ``answer``, EgoSchema's ``pred`` / ``ground_truth``). A metric
the task declares lower-is-better (``higher_is_better: false``: RepCount's ``mae_norm``) is negated in the row's
score (rule ``-<rule>``, no correctness), so framesweep's paired score metrics (the best budget, the oracle, the
regressions) read higher as better. The value itself is kept, as JSON, in the row's ``score_detail``: the task's
own ``aggregation`` of that metric over each budget's rows is the official score (`engine.datasets.lmms_official`).
`process_results` runs under a `random` state seeded from the item id and the response, the global state restored
after: a task that draws a letter at random for a response without one (LongVideoBench, EgoSchema) scores the same
answer alike in any run and order, where lmms-eval's one seed per run makes it depend on the documents before it.
The metric, the rule and the filter pipeline are in every row's ``dataset_version``
(``lmms_eval-<version>/<task>@<task version>/<metric>:<rule>[|filter=<name>]``; a task from a user's folder,
``include_path``, has ``+<digest of the folder's task files>`` after its version: `folder_digest`). A task the
bridge cannot run faithfully is refused when its items are read (`framesweep inspect`), naming the task and the
reason.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import math
import random
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
from PIL import Image
from pydantic import Field, model_validator

from engine.datasets._base import BaseAdapter, ItemScore
from engine.datasets._images import image_cache_dir, image_file
from engine.datasets._lmms_frames import FramePrompt, frame_prompt
from engine.datasets._lmms_tasks import LmmsTaskError, installed_version, load_task, remember_task_folders
from engine.datasets.errors import DatasetError, Problem, Problems
from engine.datasets.registry import register_adapter
from engine.datasets.spec import FileDatasetSpec
from engine.items import Generation, Item, MediaKind, TaskKind

__all__ = ["LmmsEvalBridge", "LmmsEvalSpec", "folder_digest", "generation_of", "image_task", "options_in_text",
           "read_result", "result_json"]

log = logging.getLogger(__name__)

VERSION = "lmms-eval"
VIDEO_SUFFIXES = frozenset({".mp4", ".mkv", ".webm", ".avi", ".mov", ".m4v", ".flv", ".mpg", ".mpeg"})
IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff"})
YES_NO = frozenset({"yes", "no"})
"""Targets of a yes/no question (POPE's, MME's): such an item's 0/1 score is its correctness, as a letter's is."""
_LETTER = re.compile(r"^[A-Z]$")
_OPTION_LINE = re.compile(r"^\(?([A-Z])[.):]\s*(.*)$")
_VIDEO_KEYS = ("videoID", "video_id", "video", "video_idx", "video_name")
_PRED_GOLD = (("pred_answer", "answer"), ("parsed_pred", "answer"), ("pred", "ground_truth"))
"""A per-document dict's (prediction, gold) keys: Video-MME's, LongVideoBench's, EgoSchema's ``score``."""


class LmmsEvalSpec(FileDatasetSpec):
    """One lmms-eval task, loaded by the installed lmms-eval (``framesweep[lmms]``)."""

    name: Literal["lmms_eval"] = Field(description="Adapter name.")
    id: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9_.@+-]+$",
        description="Name of this dataset in the results; default: the task's name (the dataset an imported "
        "lmms-eval log of the task gets, so the two join).",
    )
    task: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.@+-]+$",
                      description="The lmms-eval task (`framesweep datasets --lmms-eval` lists them), e.g. videomme. "
                      "Its generation_kwargs shape its generated answers: max_new_tokens (in place of [prompt] "
                      "max_new_tokens where the task sets it), until (stop strings; where it sets none, "
                      "lmms-eval's default: a blank line) and the temperature where it samples; letter scoring of its multiple-"
                      "choice items is unchanged (one token).")
    include_path: Path | None = Field(
        default=None, description="A folder of your own lmms-eval task YAMLs, searched besides lmms-eval's own.")
    dataset_path: Path | None = Field(
        default=None, description="A local copy of the task's dataset (a folder `datasets.load_dataset` reads: "
        "the hub repository's files, with its README configs) in place of the task's hub id; null: the task's "
        "hub id, read from the Hugging Face cache (never downloaded).")
    media_root: Path | None = Field(
        default=None, description="Folder every file the task's doc_to_visual names must lie in; null: where "
        "lmms-eval unpacks the task's media, $HF_HOME/<the task's dataset_kwargs.cache_dir>.")
    lmms_model: str | None = Field(
        default=None, description="The lmms-eval model name whose lmms_eval_specific_kwargs (pre/post prompt) the "
        "task's doc_to_text uses; null: the task's `default` entry.")
    image_cache: Path | None = Field(
        default=None,
        description="Where an image task's images (the PIL images its doc_to_visual returns) are written once, as "
        "PNG, by content hash; null: the framesweep cache.",
    )

    @property
    def asks_images(self) -> bool:  # type: ignore[override]
        """An image task (its first document's visual is one image): asked once as one image, at its image budgets
        (`IMAGE_BUDGETS`), as the image benchmarks are, not at every frame budget."""
        return image_task(self.task, self.include_path, self.dataset_path, self.lmms_model)

    @model_validator(mode="before")
    @classmethod
    def _task_is_the_dataset(cls, data: Any) -> Any:
        """The rows' `dataset` is the task's name (an imported lmms-eval log's), unless `id` says otherwise."""
        if isinstance(data, dict) and not data.get("id") and isinstance(data.get("task"), str):
            return {**data, "id": data["task"]}
        return data


def _is_image(visual: Any) -> bool:
    return isinstance(visual, Image.Image) or (isinstance(visual, str | Path)
                                                and Path(visual).suffix.lower() in IMAGE_SUFFIXES)


@functools.cache
def image_task(task: str, include_path: Path | None, dataset_path: Path | None, lmms_model: str | None) -> bool:
    """Whether the task's first document's visual is one image (a PIL image or an image file); False where the task
    cannot be loaded (the adapter then refuses it, naming why, when its items are read)."""
    try:
        loaded = load_task(task, include_path=include_path, dataset_path=dataset_path, model_name=lmms_model)
        docs = loaded.task.eval_docs
        visuals = loaded.task.doc_to_visual(docs[0]) if len(docs) else []
    except (Exception, SystemExit):  # noqa: BLE001 - lmms-eval absent, a task it refuses, task code failing
        return False
    visuals = visuals if isinstance(visuals, list | tuple) else [visuals]
    return len(visuals) == 1 and _is_image(visuals[0])


def options_in_text(text: str) -> tuple[str, ...]:
    """The options a prompt lists, one per line as ``A. ...`` (or ``(A) ...``, ``A) ...``, ``A: ...``), in order
    from A: how a multiple-choice task without `doc_to_choice` (Video-MME, NExT-QA) shows them; () for none."""
    found: list[str] = []
    for line in text.splitlines():
        match = _OPTION_LINE.match(line.strip())
        if match and match.group(1) == chr(ord("A") + len(found)):
            found.append(match.group(2).strip())
    return tuple(found) if len(found) >= 2 else ()


def _number(value: Any) -> float | None:
    """A finite number (a bool is 0/1), else None."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and math.isfinite(float(value)):
        return float(value)
    return None


def read_result(value: Any, kind: TaskKind, response: str) -> tuple[ItemScore, str] | None:
    """One metric value of `process_results` as a score, and the rule that read it; None when it holds none.

    A number is the score (on a multiple-choice or yes/no item a 0/1 value is also correctness); a dict's
    ``score`` likewise, else its ``correct`` (PerceptionTest's), else its prediction against its gold answer, compared
    case-insensitively (as lmms-eval's Video-MME does; its aggregations compare the same two values exactly):
    ``pred_answer`` / ``answer`` (Video-MME), ``parsed_pred`` / ``answer`` (LongVideoBench), ``pred`` /
    ``ground_truth`` (EgoSchema's option index); its ``pred_answer`` / ``parsed_pred`` / ``pred`` / ``pred_id``
    is the extracted answer.
    """
    pred: Any = response.strip() or None
    number = _number(value)
    rule = "value"
    if isinstance(value, dict):
        pred = next((value[k] for k in ("pred_answer", "parsed_pred", "pred", "pred_id") if k in value), pred)
        number, rule = _number(value.get("score")), "score"
        if number is None and "correct" in value:
            number, rule = _number(value["correct"]), "correct"
        pair = next(((p, g) for p, g in _PRED_GOLD if p in value and g in value), None)
        if number is None and pair is not None:
            number = float(str(value[pair[0]]).strip().lower() == str(value[pair[1]]).strip().lower())
            rule = f"{pair[0]}=={pair[1]}"
    if number is None:
        return None
    correct = number >= 1.0 if kind in ("mcq", "yesno") and number in (0.0, 1.0) else None
    text = None if pred is None or str(pred) == "" else str(pred)
    return ItemScore(text, correct, number), rule


@register_adapter("lmms_eval")
class LmmsEvalBridge(BaseAdapter):
    """An lmms-eval task's documents as items, scored by the task's own `process_results`."""

    name = "lmms_eval"
    version = VERSION

    def __init__(self, spec: LmmsEvalSpec) -> None:
        super().__init__(spec)
        self.spec: LmmsEvalSpec = spec
        self._task: Any = None
        self._media_root = Path()
        self._docs: dict[str, Any] = {}
        self.metric = ""
        self.rule = ""
        self.lower_is_better = False
        self.generation = Generation()
        self._frames: FramePrompt | None = None

    def _source(self) -> str:
        return f"lmms-eval task {self.spec.task}"

    def _refuse(self, reason: str) -> DatasetError:
        return DatasetError([Problem(self._source(), None, reason, fatal=True)], self.spec.dataset_id)

    def _load_task(self) -> Any:
        if self._task is None:
            try:
                loaded = load_task(self.spec.task, include_path=self.spec.include_path,
                                   dataset_path=self.spec.dataset_path, model_name=self.spec.lmms_model)
            except LmmsTaskError as err:
                raise self._refuse(str(err)) from None
            self._frames, why = frame_prompt(loaded.task.lmms_eval_specific_kwargs, loaded.task.config.doc_to_text)
            if why is not None:
                raise self._refuse(f"lmms-eval task {self.spec.task!r}: {why}")
            self._task, self._media_root = loaded.task, loaded.media_root
            if self.spec.include_path is not None:  # the metrics step finds the task's aggregation there
                remember_task_folders({"datasets": [{"name": "lmms_eval", "task": self.spec.task,
                                                     "include_path": str(self.spec.include_path)}]})
            self.metric = str(self._task.config.metric_list[0]["metric"])
            self.lower_is_better = self._task.higher_is_better().get(self.metric) is False
            self.generation = generation_of(self._task.config.generation_kwargs)
        return self._task

    def _load(self, problems: Problems) -> list[Item]:
        task = self._load_task()
        root = (self.spec.media_root or self._media_root).expanduser().resolve()
        items: list[Item] = []
        for doc_id, doc in enumerate(task.eval_docs):
            item = self._item(task, doc_id, doc, root, problems)
            if item is not None:
                self._docs[item.item_id] = doc
                items.append(item)
        if items:
            self._probe(task, items[0])
        return items

    def _visual(self, task: Any, doc: Any, doc_id: int, root: Path, problems: Problems) -> Path | None:
        """The one media file of a document: the file it names, under `root`, or the one image it returns written
        to the image cache (PNG, by content hash); a problem (the doc's row) when it has none."""
        try:
            visuals = task.doc_to_visual(doc)
        except (Exception, SystemExit) as err:  # noqa: BLE001 - task code; lmms-eval's sys.exit()s on a missing video
            problems.add(self._source(), doc_id, f"doc_to_visual failed: {err}")
            return None
        visuals = visuals if isinstance(visuals, list | tuple) else [visuals]
        if len(visuals) == 1 and isinstance(visuals[0], Image.Image):
            return image_file(visuals[0], image_cache_dir(self.spec.image_cache, self.spec.dataset_id))[1]
        if len(visuals) > 1 and all(isinstance(v, Image.Image) for v in visuals):
            raise self._refuse(f"lmms-eval task {self.spec.task!r}: its doc_to_visual returns {len(visuals)} images "
                               "(frames its own code decoded, as longvideobench_val_i's, or several pictures), not "
                               "one video or image: the bridge decodes a video's frames itself and asks one visual "
                               "per item; run the task's video variant (e.g. longvideobench_val_v)")
        if len(visuals) != 1 or not isinstance(visuals[0], str | Path):
            what = f"{len(visuals)} visuals" if len(visuals) != 1 else f"a {type(visuals[0]).__name__}"
            raise self._refuse(f"lmms-eval task {self.spec.task!r}: its doc_to_visual returns {what}, not one "
                               "video or image (file or PIL image): the bridge asks one visual per item")
        if not root.is_dir():
            raise self._refuse(f"media root {root} does not exist or is not a folder (set media_root, or HF_HOME "
                               "where lmms-eval unpacked the task's media)")
        path = Path(visuals[0]).expanduser().resolve()
        if path.suffix.lower() not in VIDEO_SUFFIXES | IMAGE_SUFFIXES:
            raise self._refuse(f"lmms-eval task {self.spec.task!r}: its doc_to_visual returns {path}, neither a "
                               "video nor an image file")
        if not path.is_relative_to(root):
            problems.add(self._source(), doc_id, f"doc_to_visual names {path}, outside the media root {root}",
                         fatal=True)
            return None
        return path

    def _item(self, task: Any, doc_id: int, doc: Any, root: Path, problems: Problems) -> Item | None:
        path = self._visual(task, doc, doc_id, root, problems)
        if path is None:
            return None
        target = task.doc_to_target(doc)
        text = str(task.doc_to_text(doc))
        options = tuple(str(o) for o in task.doc_to_choice(doc)) if task.config.doc_to_choice is not None else ()
        letter = isinstance(target, int) or (isinstance(target, str) and bool(_LETTER.match(target.strip())
                                                                           or target.strip().isdigit()))
        listed = not options
        options = options or (options_in_text(text) if letter else ())
        qid = doc.get("question_id")
        item_id = str(qid) if qid not in (None, "") else str(doc_id)
        answer = self._letter_answer(task, doc, target, options, item_id)
        if listed and isinstance(target, str) and target.strip().isdigit() and not _LETTER.match(answer or ""):
            options = ()  # a number the task does not score as an option's letter (RepCount's count): open
        kind: TaskKind = "mcq" if options else "yesno" if str(target).strip().lower() in YES_NO else "open"
        media: MediaKind = "image" if path.suffix.lower() in IMAGE_SUFFIXES else "video"
        video = next((doc[k] for k in _VIDEO_KEYS if doc.get(k) not in (None, "")), path.stem)
        return Item(
            dataset=self.spec.dataset_id, dataset_version=VERSION, item_id=item_id, video_id=str(video),
            video_path=path, question=text, options=options,
            answer=answer, kind=kind, prompt=text, media_kind=media,
            task_type=_text(doc.get("task_type")), category=_text(doc.get("domain", doc.get("category"))),
            duration=_text(doc.get("duration")), generation=self.generation,
            extra={"doc_id": doc_id, "lmms_task": self.spec.task},
        )

    def _letter_answer(self, task: Any, doc: Any, target: Any, options: tuple[str, ...], item_id: str) -> str | None:
        """The item's answer: for an option index (NExT-QA's 2, PerceptionTest's answer_id) among known options, the
        letter of that option (0-based) where the task's own `process_results` scores that letter right (so letter
        scoring compares letters with letters); else the target as the task gives it."""
        if target is None:
            return None
        index = target if isinstance(target, int) and not isinstance(target, bool) else \
            int(target) if isinstance(target, str) and target.strip().isdigit() else None
        if index is None or not options or not 0 <= index < len(options):
            return str(target)
        letter = chr(ord("A") + index)
        try:
            read = read_result(_process(task, doc, item_id, _filtered(task, doc, letter)).get(self.metric), "mcq",
                               letter)
        except Exception:  # noqa: BLE001 - task code that cannot read a bare letter: the target stays as given
            return str(target)
        return letter if read is not None and read[0].correct else str(target)

    def _probe(self, task: Any, item: Item) -> None:
        """Score the first item's own target with the task's `process_results`: the metric must be readable.

        Sets the rule and stamps every row's version with it (so a run under another lmms-eval, task version,
        metric or rule is never mixed with this one)."""
        doc = self._docs[item.item_id]
        results = _process(task, doc, item.item_id, str(task.doc_to_target(doc)))
        if self.metric not in results:
            raise self._refuse(f"lmms-eval task {self.spec.task!r}: its process_results scores document "
                               f"{item.item_id} under {', '.join(map(repr, results)) or 'no metric'}, not its first "
                               f"metric {self.metric!r}: a task that scores its documents under different metrics "
                               "(MME: perception and cognition) is no one score per row the bridge can read")
        value = results[self.metric]
        read = read_result(value, item.kind, "")
        if read is None:
            raise self._refuse(f"lmms-eval task {self.spec.task!r}: its metric {self.metric!r} gives "
                               f"{type(value).__name__} per document, not a score the bridge can read")
        pipeline = task._filters[0].name
        self.rule = (("-" if self.lower_is_better else "") + read[1]
                     + ("" if pipeline == "none" else f"|filter={pipeline}")
                     + ("" if self._frames is None else f"|frames={self._frames.key}"))
        version = _task_version(task.config.metadata)
        if self.spec.include_path is not None:  # a user's task: its files may change under one version
            version += f"+{folder_digest(self.spec.include_path)}"
        self.version = f"lmms_eval-{installed_version()}/{self.spec.task}@{version}/{self.metric}:{self.rule}"

    def job_prompt(self, item: Item, indices: np.ndarray, fps: float | None) -> str | None:
        """The prompt of one job of a task whose text depends on the frames (subtitles at them: `_lmms_frames`): the
        task's own doc_to_text at the frames the job sends (none for a text-only job); None, the item's own prompt,
        for any other task."""
        if self._frames is None:
            return None
        return self._frames.text(self._doc(item), [int(i) for i in indices], fps)

    def _doc(self, item: Item) -> Any:
        doc = self._docs.get(item.item_id)
        return doc if doc is not None else self._load_task().eval_docs[int(item.extra["doc_id"])]

    def load(self) -> list[Item]:
        items = super().load()
        return [replace(it, dataset_version=self.version) for it in items]

    def score(self, item: Item, response: str) -> ItemScore:
        """The task's own `process_results` on the filtered response, its first metric read by `read_result`."""
        task = self._load_task()
        doc = self._doc(item)
        filtered = _filtered(task, doc, response)
        value = _process(task, doc, item.item_id, filtered).get(self.metric)
        read = read_result(value, item.kind, filtered)
        if read is None:
            raise ValueError(f"lmms-eval task {self.spec.task}: item {item.item_id}: metric {self.metric!r} gave "
                             f"{value!r}, not a score")
        scored = replace(read[0], correct=None, score=0.0 - read[0].score) if self.lower_is_better else read[0]
        return replace(scored, detail=result_json(value))


def result_json(value: Any) -> str:
    """One `process_results` value as the row's ``score_detail`` (JSON; a numpy number as the number it holds, any
    other value JSON cannot hold as its text): what the task's aggregation reads at metrics time."""
    def plain(obj: Any) -> Any:
        item = getattr(obj, "item", None)
        return item() if callable(item) else str(obj)

    return json.dumps(value, default=plain, sort_keys=True)


def generation_of(kwargs: Any) -> Generation:
    """An lmms-eval task's ``generation_kwargs`` (as its `TaskConfig` completes them: ``until`` defaults to
    ``["\n\n"]``) as the items' `Generation`: ``max_new_tokens``, ``until`` as stop strings, and the temperature
    where the task samples (``temperature`` > 0 and ``do_sample`` not false; else greedy, as lmms-eval's models
    decide). Other keys (top_p, num_beams) are not carried: framesweep generates greedily, one beam."""
    kwargs = kwargs if isinstance(kwargs, dict) else {}
    until = kwargs.get("until") or ()
    stops = (until,) if isinstance(until, str) else tuple(str(u) for u in until)
    limit = kwargs.get("max_new_tokens")
    temperature = float(kwargs.get("temperature") or 0.0)
    samples = temperature > 0 and kwargs.get("do_sample") is not False
    return Generation(max_new_tokens=int(limit) if limit else None, stop=stops,
                      temperature=temperature if samples else 0.0)


@contextlib.contextmanager
def _seeded(item_id: str, response: str) -> Iterator[None]:
    """Python's `random` seeded from the item and its response for the block, the global state restored after: a
    task's `process_results` that draws at random (a response with no option letter: LongVideoBench's and
    EgoSchema's parsers pick ``random.choice`` of the letters) scores the same answer of the same item alike in any
    run, order or process. A string seed is hashed by SHA-512, not by `hash`, so no PYTHONHASHSEED enters."""
    state = random.getstate()
    random.seed(f"{item_id}\x00{response}")
    try:
        yield
    finally:
        random.setstate(state)


def _process(task: Any, doc: Any, item_id: str, response: str) -> Any:
    """The task's `process_results` of one (filtered) response, under `_seeded`."""
    with _seeded(item_id, response):
        return task.process_results(doc, [response])


def _filtered(task: Any, doc: Any, response: str) -> str:
    """The response as the task's filter pipeline leaves it (lmms-eval's `FilterEnsemble.apply` on one answer):
    ``take_first`` alone (a task without filter_list) leaves it as it is; a regex pipeline extracts the answer."""
    resps: Any = [[response]]
    for step in task._filters[0].filters:
        resps = step.apply(resps, [doc])
    return str(next(iter(resps)))


TASK_FILE_SUFFIXES = frozenset({".yaml", ".yml", ".py", ""})
"""The files of a task folder that define its tasks: YAMLs, their utils, lmms-eval's extensionless include files."""


def folder_digest(folder: Path) -> str:
    """12 hex digits of SHA-256 over a user's task folder's defining files (`TASK_FILE_SUFFIXES`; names relative to
    the folder, with their bytes; caches skipped): part of its tasks' version, so an edited YAML or utils (its
    prompt, generation_kwargs, scoring) under an unchanged ``metadata: version`` is another version, and a resume
    does not mix its rows with the old ones."""
    digest = hashlib.sha256()
    root = folder.expanduser()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in TASK_FILE_SUFFIXES
                       and "__pycache__" not in p.parts and not p.name.startswith(".")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\x00" + path.read_bytes() + b"\x00")
    return digest.hexdigest()[:12]


def _task_version(metadata: Any) -> str:
    """The task's own version (its YAML's ``metadata: version``, a mapping or a list of them); "?" when none."""
    entries = metadata if isinstance(metadata, list) else [metadata]
    found = [e["version"] for e in entries if isinstance(e, dict) and "version" in e]
    return str(found[0]) if found else "?"


def _text(value: Any) -> str | None:
    return None if value in (None, "") else str(value)
