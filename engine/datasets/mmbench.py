"""MMBench dev (MMBench_DEV_EN.tsv): single-image multiple choice, judged by circular evaluation.

The file is VLMEvalKit's TSV: ``index, question, hint, A, B, C, D, answer, category,
image, source, l2-category, comment, split``, the image a base64 string (or, in a row
whose image repeats another's, that row's index). The lmms-lab/MMBench parquet, with
``L2-category`` and embedded image structs, is read too.

Circular evaluation: a question with k options is asked k times, its options rotated
by one each time (the answer letter moving with them); it counts as right only when
every rotation is answered right (`engine.datasets.scoring_rules.mmbench_circular_accuracy`).
Files that already hold the rotated copies (index + r x 1,000,000, the original MMBench
release) are used as they are; otherwise framesweep rotates the options itself, with the
same ids. Every rotation of a question shares its `group_id` (the question's index);
``extra["position"]`` is the rotation and ``extra["group_size"]`` the question's rotation count,
its number of options (1 without circular evaluation): the scoring reads a question's
rotations from its options, never from the rows present. A file with rotated copies must
hold every rotation of each question it rotates (each row of one that does not is an error).
`limit` counts questions, never rotations.

Prompt: lmms-eval's (``<hint> <question> There are several options:\\nA. ...`` and the
post-prompt). Answers are read with MMBench's own heuristics (`extract_letter_mmbench`:
a lone option letter, then a unique option text in the answer); the LLM judge MMBench
falls back to is not run, so an answer neither reads is wrong.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections import defaultdict
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from engine.datasets._base import first_groups
from engine.datasets._image_table import ImageTableAdapter, ImageTableSpec
from engine.datasets._images import image_cache_dir, image_media
from engine.datasets._paths import check_root
from engine.datasets._tables import Kind, collect_rows, need, read_parquet, read_tsv
from engine.datasets.errors import Problems, RowError
from engine.datasets.registry import register_adapter
from engine.items import Item, option_letters

__all__ = ["CIRCULAR_STEP", "MMBench", "MMBenchSpec", "extract_letter_mmbench", "mmbench_prompt", "rotate"]


class MMBenchSpec(ImageTableSpec):
    """MMBench dev (MMBench_DEV_EN.tsv, images as base64): circular evaluation over rotated options."""

    name: Literal["mmbench"] = Field(description="Adapter name.")
    annotations: Path = Field(
        description="MMBench_DEV_EN.tsv (index, question, hint, A-D, answer, category, image as base64, source, "
        "l2-category, ...), or the lmms-lab/MMBench parquet (file or folder of shards)."
    )
    circular: bool = Field(
        default=True,
        description="true: each question is asked once per rotation of its options (the file's own rotated "
        "copies, index + k x 1e6, when it holds them; else framesweep rotates them) and counts as right only "
        "when every rotation is (mmbench_circular_accuracy); false: each question once, as written.",
    )


VERSION = "mmbench-dev.fs1"
CIRCULAR_STEP = 1_000_000
"""A rotated copy of question i has index i + r x CIRCULAR_STEP (MMBench's own convention)."""
OPTIONS_HEADER = "There are several options:"
POST_PROMPT = "Answer with the option's letter from the given choices directly."
_CANDIDATES = "ABCDE"  # what MMBench's answer matcher accepts, whatever the question's options
_TUPS = (("", "."), ("", ","), ("", ":"), ("", ")"), ("", ")."), ("(", ")"), ("(", ")."), (":", ""), (":", ","),
         (":", "."), (":", ")"), (":", ")."))
_REFERENCE_MAX = 64  # VLMEvalKit: an image cell this short names the row whose image it shares
_TSV_COLUMNS: dict[str, Kind] = {"index": "str", "question": "str", "A": "str", "B": "str", "answer": "str",
                                 "category": "str", "image": "str"}


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or (
        isinstance(value, str) and value.strip() in ("", "nan"))


def mmbench_prompt(question: str, hint: str | None, options: Sequence[str]) -> str:
    """lmms-eval's MMBench prompt: hint, question, the lettered options, the post-prompt."""
    lines = "\n".join(f"{lt}. {o}" for lt, o in zip(option_letters(len(options)), options, strict=True))
    body = f"{question} {OPTIONS_HEADER}\n{lines}"
    return f"{hint} {body}\n{POST_PROMPT}" if hint else f"{body}\n{POST_PROMPT}"


def _infer_option(answer: str) -> str:
    """MMBench's `can_infer_option`: a lone letter among the words, else a unique letter with punctuation."""
    if "Failed to obtain answer via API" in answer:
        return ""
    splits = [x.strip() for x in answer.split()]

    def count(prefix: str = "", suffix: str = "") -> int:
        return sum(prefix + c + suffix in splits for c in _CANDIDATES)

    # a lone "A" among more than three words may be the article: then only the punctuated forms count
    if count() == 1 and not ("A" in splits and len(splits) > 3):
        return next(c for c in _CANDIDATES if c in splits)
    for prefix, suffix in _TUPS:
        if count(prefix, suffix) == 1:
            return next(c for c in _CANDIDATES if prefix + c + suffix in splits)
    return ""


def extract_letter_mmbench(response: str, options: Sequence[str]) -> str:
    """MMBench's answer matching without its LLM judge: `can_infer_option`, then `can_infer_text`
    (exactly one option's text inside the lowercased answer); "" when neither decides."""
    letter = _infer_option(response)
    if letter:
        return letter
    low = response.lower()
    hits = [lt for lt, o in zip(option_letters(len(options)), options, strict=True) if str(o).lower() in low]
    return hits[0] if len(hits) == 1 else ""


def rotate(options: Sequence[str], answer: str, r: int) -> tuple[tuple[str, ...], str]:
    """Options shifted left by `r` (option r comes first) and the answer's new letter."""
    k = len(options)
    letters = option_letters(k)
    return tuple(options[(j + r) % k] for j in range(k)), letters[(letters.index(answer) - r) % k]


@register_adapter("mmbench")
class MMBench(ImageTableAdapter):
    """MMBench adapter (one item per rotation of each question)."""

    name = "mmbench"
    version = VERSION
    COLUMNS: ClassVar[dict[str, Kind]] = {"index": "int|str", "question": "str", "A": "str", "B": "str",
                                          "answer": "str", "category": "str", "image": "image"}

    def __init__(self, spec: MMBenchSpec) -> None:
        super().__init__(spec)
        self.spec: MMBenchSpec = spec
        self._images: dict[str, Any] = {}
        self._file_rotates = False
        self._where: dict[str, tuple[Path, int]] = {}

    def extract(self, response: str, item: Item | None = None) -> str:
        return extract_letter_mmbench(response, item.options if item else ())

    def _tables(self, problems: Problems) -> list[tuple[Path, list[dict[str, Any]]]]:
        path = Path(self.spec.annotations)
        if path.suffix.lower() == ".tsv":
            df = read_tsv(path, _TSV_COLUMNS, problems)
            return [] if df is None else [(path, df.to_dicts())]
        return [(f, df.to_dicts()) for f, df in read_parquet(path, self.COLUMNS, problems)]

    def _load(self, problems: Problems) -> list[Item]:
        problems.extend(check_root(self.spec.media_root, "media_root"))
        tables = self._tables(problems) if not problems.fatal else []
        if problems.fatal:
            return []
        recs = [rec for _, rows in tables for rec in rows]
        self._images = {str(rec.get("index")): rec.get("image") for rec in recs}
        indices = [_index(rec.get("index")) for rec in recs]
        self._file_rotates = any(i is not None and i >= CIRCULAR_STEP for i in indices)
        items: list[Item] = []
        for source, rows in tables:
            items += collect_rows(source, enumerate(rows), partial(self._row, source), problems)
        return self._whole_questions(items, problems) if self._file_rotates and self.spec.circular else items

    def _whole_questions(self, items: list[Item], problems: Problems) -> list[Item]:
        """A file's rotated copies: keep the questions with one row per rotation 0..k-1 (k options)."""
        questions: dict[str | None, list[Item]] = defaultdict(list)
        for it in items:
            questions[it.group_id].append(it)
        keep = []
        for index, members in questions.items():
            got = sorted(it.extra["position"] for it in members)
            if got == list(range(len(members[0].options))):
                keep += members
                continue
            for it in members:
                source, row = self._where[it.item_id]
                problems.add(source, row, f"question {index}: the file holds rotations {got} of its "
                             f"{len(it.options)} options (circular evaluation needs each once)", item_id=it.item_id)
        return keep

    def _limit(self, items: list[Item], limit: int) -> list[Item]:
        return first_groups(items, limit)

    def _image_of(self, rec: dict[str, Any], source: Path, i: int, item_id: str) -> tuple[str, Path]:
        cell = need(rec, "image", "image")
        if isinstance(cell, str) and len(cell) <= _REFERENCE_MAX:
            shared = self._images.get(cell.strip())
            if not isinstance(shared, str) or len(shared) <= _REFERENCE_MAX:
                raise RowError(f"image: {cell[:40]!r} names no row with an image")
            cell = shared
        if isinstance(cell, str):
            try:
                cell = base64.b64decode(cell, validate=True)
            except (binascii.Error, ValueError):
                raise RowError("image: not a base64-encoded image") from None
        return image_media(cell, media_root=self.spec.media_root,
                           cache=image_cache_dir(self.spec.image_cache, self.name), source=source, row=i,
                           item_id=item_id)

    def _row(self, source: Path, i: int, rec: dict[str, Any]) -> list[Item]:
        index = _index(need(rec, "index", "int|str"))
        if index is None or index < 0:
            raise RowError(f"index: expected a non-negative integer, got {rec.get('index')!r}")
        position, base = divmod(index, CIRCULAR_STEP)
        if position and not self.spec.circular:
            return []  # a rotated copy: vanilla evaluation asks the question once
        options: list[str] = []
        for letter in "ABCD":
            if _missing(rec.get(letter)):
                break
            options.append(str(rec[letter]).strip())
        if len(options) < 2:
            raise RowError(f"options: expected at least A and B, got {len(options)}")
        answer = need(rec, "answer").strip().upper()
        if answer not in option_letters(len(options)):
            raise RowError(f"answer: expected one of {', '.join(option_letters(len(options)))}, got {answer!r}")
        question = need(rec, "question").strip()
        hint = None if _missing(rec.get("hint")) else str(rec["hint"]).strip()
        l2 = next((rec[c] for c in ("l2-category", "L2-category") if not _missing(rec.get(c))), None)
        media_id, path = self._image_of(rec, source, i, str(index))
        rotations = range(len(options)) if self.spec.circular and not self._file_rotates else range(1)
        out = []
        for r in rotations:
            opts, ans = rotate(options, answer, r)
            self._where[str(index + r * CIRCULAR_STEP)] = (source, i)
            out.append(self._item(
                item_id=str(index + r * CIRCULAR_STEP), video_id=media_id, video_path=path, question=question,
                options=opts, answer=ans, kind="mcq", task_type=l2, category=need(rec, "category"),
                prompt=mmbench_prompt(question, hint, opts), group_id=str(base),
                extra={"position": position + r, "group_size": len(options) if self.spec.circular else 1,
                       "source": None if _missing(rec.get("source")) else rec["source"]},
            ))
        return out


def _index(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None
