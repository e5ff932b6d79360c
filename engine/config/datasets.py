"""Dataset specs: one pydantic model per benchmark adapter, joined in `DatasetSpec`.

Each adapter's settings are typed (unknown fields fail); `name` picks the adapter.
A new adapter may define its spec class in its own module and register it with
`engine.config.register_dataset_spec`; the built-in ones are joined in `DatasetSpec`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "IMAGE_BUDGETS",
    "AVSDSpec",
    "DatasetBase",
    "DatasetSpec",
    "LlavaVideo178KSpec",
    "MLVUSpec",
    "MMBenchSpec",
    "MMESpec",
    "MMStarSpec",
    "MVBenchSpec",
    "POPESpec",
    "StrictModel",
    "SyntheticDatasetSpec",
    "TempCompassSpec",
    "VideoMMESpec",
    "VideoMMEv2Spec",
    "VideoMMMUSpec",
]


class StrictModel(BaseModel):
    """Base of every user-written model: unknown fields are errors; values are frozen; a number is finite
    (TOML's inf and nan fail where they are written, not in an engine that turns them into an int)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class DatasetBase(StrictModel):
    """What every dataset table may carry besides its adapter's settings."""

    asks_images: ClassVar[bool] = False
    """An image benchmark: its items are images, asked at its own image budgets (`IMAGE_BUDGETS`)."""

    id: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9_.@+-]+$",
        description="Name of this dataset in the results (default: the adapter's name); two datasets of one "
        "sweep that use the same adapter (e.g. Video-MME short and long) need distinct ids.",
    )
    budgets: list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None, min_length=1,
        description="Budget ids this dataset runs (of the sweep's budgets, e.g. [\"text\", \"f16\"]; an image "
        "benchmark also has `image`, and `image-cached` when a budget is cached). null: every budget of the "
        "sweep for a video benchmark; for an image benchmark its image budgets only: the image asked once as one "
        "image per pipeline the sweep's visual budgets use, never a text-only (blind) run unless listed here. "
        "Only chooses jobs: answers already made are kept.",
    )

    @property
    def dataset_id(self) -> str:
        """The `dataset` column of this dataset's rows."""
        return self.id or str(self.name)


class SyntheticDatasetSpec(DatasetBase):
    """The embedded synthetic video benchmark (real H.264 files, known answers)."""

    name: Literal["synthetic"] = Field(description="Adapter name.")
    root: Path | None = Field(
        default=None, description="Where the videos are written; null: a cache folder keyed by the settings."
    )
    n_videos: int = Field(default=6, ge=1, le=10_000, description="Number of videos.")
    seed: int = Field(default=0, ge=0, description="Seed (from 0): the same seed gives the same videos and answers.")
    seconds: float = Field(default=8.0, gt=0, le=3600, description="Video length in seconds.")
    fps: int = Field(default=8, ge=1, le=120, description="Frames per second.")
    width: int = Field(default=128, ge=16, le=4096, description="Frame width (even).")
    height: int = Field(default=96, ge=16, le=4096, description="Frame height (even).")
    questions: list[Literal["flash_count", "first_colour", "static_shape"]] = Field(
        default_factory=lambda: ["flash_count", "first_colour", "static_shape"],
        min_length=1,
        description="Question kinds asked about each video.",
    )


_VIDEO_EXTS = [".mp4", ".MP4", ".mkv", ".webm"]
Duration = Literal["short", "medium", "long"]
MLVUTask = Literal["1_plotQA", "2_needle", "3_ego", "4_count", "5_order", "6_anomaly_reco", "7_topic_reasoning",
                   "8_sub_scene", "9_summary"]
MVBenchTask = Literal["action_sequence", "action_prediction", "action_antonym", "fine_grained_action",
                      "unexpected_action", "object_existence", "object_interaction", "object_shuffle",
                      "moving_direction", "action_localization", "scene_transition", "action_count", "moving_count",
                      "moving_attribute", "state_change", "fine_grained_pose", "character_order",
                      "egocentric_navigation", "episodic_reasoning", "counterfactual_inference"]
TempCompassConfig = Literal["multi-choice", "yes_no", "caption_matching"]
POPECategory = Literal["adversarial", "popular", "random"]
MLVU_TASKS = get_args(MLVUTask)
MVBENCH_TASKS = get_args(MVBenchTask)


class _FileDatasetSpec(DatasetBase):
    """Settings every benchmark read from files shares. Relative paths are taken from the working directory."""

    strict: bool = Field(
        default=True,
        description="true: any malformed row fails the load, listing every problem at once; "
        "false: malformed rows are skipped and reported (escaping paths and unreadable files always fail).",
    )
    limit: int | None = Field(
        default=None, ge=1, description="Keep only the first N questions (smoke runs); null: all. A benchmark "
        "scored in groups keeps each group whole: MMBench counts questions, not rotations; MME and Video-MME v2 "
        "complete a pair or group the cut falls in.")


class VideoMMESpec(_FileDatasetSpec):
    """Video-MME v1 (lmms-lab/Video-MME): the test parquet and a folder of `<videoID>.mp4` files."""

    name: Literal["videomme"] = Field(description="Adapter name.")
    annotations: Path = Field(description="videomme/test-00000-of-00001.parquet (or a folder of parquet shards).")
    media_root: Path = Field(description="Folder holding `<videoID>.mp4` (the unzipped `data/` folder).")
    video_exts: list[str] = Field(
        default_factory=lambda: list(_VIDEO_EXTS), min_length=1,
        description="Extensions tried in order for each videoID; the first that exists is used.",
    )
    durations: list[Duration] = Field(
        default_factory=lambda: list(get_args(Duration)), min_length=1, description="Duration groups to keep."
    )
    subtitles: bool = Field(
        default=False, description="Put the video's subtitles in the prompt (the official 'w/ subs' setting)."
    )
    subtitle_root: Path | None = Field(
        default=None,
        description="Folder holding `<videoID>.srt` (the unzipped `subtitle/` folder); needed with subtitles.",
    )
    extraction: Literal["official", "strict"] = Field(
        default="official",
        description="official: Video-MME's extract_characters_regex, quirks included (parity with published "
        "numbers); strict: a corrected reading (see engine.scoring.extract_letter_videomme_strict).",
    )

    @model_validator(mode="after")
    def _subtitle_root(self) -> VideoMMESpec:
        if self.subtitles and self.subtitle_root is None:
            raise ValueError("subtitles = true needs subtitle_root")
        return self


class VideoMMEv2Spec(_FileDatasetSpec):
    """Video-MME v2: test.parquet (8 options A-H, questions in groups of 4) and its videos."""

    name: Literal["videomme_v2"] = Field(description="Adapter name.")
    annotations: Path = Field(description="test.parquet (or a folder of parquet shards).")
    media_root: Path = Field(description="Folder holding the videos named by the `video` / `video_id` column.")
    video_exts: list[str] = Field(
        default_factory=lambda: list(_VIDEO_EXTS), min_length=1,
        description="Extensions tried in order when the video column has none.",
    )


class MLVUSpec(_FileDatasetSpec):
    """MLVU dev: MLVU/json/<task>.json with videos in MLVU/video/<task>/."""

    name: Literal["mlvu"] = Field(description="Adapter name.")
    annotation_dir: Path = Field(description="The MLVU/json folder (one JSON list per task).")
    media_root: Path = Field(description="The MLVU/video folder (one sub-folder per task, named like its JSON).")
    tasks: list[MLVUTask] = Field(
        default_factory=lambda: list(MLVU_TASKS), min_length=1,
        description="Task files to read: the seven multiple-choice tasks and the two generation tasks.",
    )
    subplot_references: Literal["answer", "answer_and_scoring_points"] = Field(
        default="answer",
        description="References for sub-scene captioning token-F1: the answer, or also each scoring point.",
    )


class AVSDSpec(_FileDatasetSpec):
    """AVSD (DSTC7): a {"dialogs": [...]} JSON over Charades videos; target: the next answer."""

    name: Literal["avsd"] = Field(description="Adapter name.")
    annotations: Path = Field(description="train/valid/test_set4DSTC7-AVSD.json.")
    references: Path | None = Field(
        default=None,
        description="JSON of the same shape whose dialogs' answers replace '__UNDISCLOSED__' ones (the test "
        "references); an answer there may be a string or a list of strings (several references).",
    )
    media_root: Path = Field(description="Folder holding the Charades videos `<image_id><video_ext>`.")
    video_ext: str = Field(default=".mp4", description="Video file extension.")
    turns: Literal["last", "all"] = Field(
        default="last", description="last: one item per dialog (its last turn, the DSTC7 protocol); all: every turn."
    )
    use_caption: bool = Field(default=False, description="Put the video's caption before the dialog history.")


class MVBenchSpec(_FileDatasetSpec):
    """MVBench (OpenGVLab/MVBench): json/<task>.json, videos under video/<source folder>/."""

    name: Literal["mvbench"] = Field(description="Adapter name.")
    annotation_dir: Path = Field(description="The MVBench json/ folder.")
    media_root: Path = Field(description="The MVBench video/ folder (star/, clevrer/, ssv2_video/, ...).")
    tasks: list[MVBenchTask] = Field(
        default_factory=lambda: list(MVBENCH_TASKS), min_length=1, description="Task files to read."
    )


class TempCompassSpec(_FileDatasetSpec):
    """TempCompass (lmms-lab/TempCompass): one parquet folder per config, videos `<video_id>.mp4`."""

    name: Literal["tempcompass"] = Field(description="Adapter name.")
    annotation_root: Path = Field(description="Folder holding the config folders (multi-choice/, yes_no/, ...).")
    media_root: Path = Field(description="Folder holding `<video_id>.mp4` (the unzipped videos).")
    configs: list[TempCompassConfig] = Field(
        default_factory=lambda: list(get_args(TempCompassConfig)), min_length=1,
        description="Configs to read (captioning needs an LLM judge and is not offered).",
    )


IMAGE_BUDGETS = {"raw": "image", "cached": "image-cached"}
"""An image benchmark's image budget id per pipeline: one image, sent as one image, at the dataset's own size."""


class _ImageTableSpec(_FileDatasetSpec):
    """An image benchmark in one parquet table; each item is one image.

    It runs its image budgets (`IMAGE_BUDGETS`: the image at its stored size, which the model's processor
    brings within its own limits, unless `max_pixels` / `short_side` / `min_pixels` set one) unless `budgets`
    names others; a video budget named there sends the one image at that budget's size.
    """

    asks_images: ClassVar[bool] = True

    max_pixels: int | None = Field(
        default=None, gt=0, description="Upper bound on width*height of each image at the image budgets (aspect "
        "kept); null: the stored image, so the model's processor applies its own limits (its native resolution).")
    short_side: int | None = Field(
        default=None, gt=0, description="Resize each image at the image budgets so its short side has this many "
        "pixels (aspect kept; never enlarges).")
    min_pixels: int | None = Field(
        default=None, gt=0, description="Lower bound on width*height of each image at the image budgets (smaller "
        "ones are enlarged to it, aspect kept).")
    annotations: Path = Field(description="The parquet file (or a folder of parquet shards).")
    media_root: Path | None = Field(
        default=None, description="Folder the `image` column's paths are under, when it holds paths, not bytes."
    )
    image_cache: Path | None = Field(
        default=None,
        description="Where embedded image bytes are written once (by content hash); null: the framesweep cache.",
    )

    @model_validator(mode="after")
    def _one_size(self) -> _ImageTableSpec:
        if self.max_pixels is not None and self.short_side is not None:
            raise ValueError("set at most one of max_pixels and short_side")
        if self.min_pixels is not None and self.max_pixels is not None and self.min_pixels > self.max_pixels:
            raise ValueError(f"min_pixels ({self.min_pixels}) is above max_pixels ({self.max_pixels})")
        return self


class MMStarSpec(_ImageTableSpec):
    """MMStar val (Lin-Chen/MMStar): index, question, image, answer (letter), category, l2_category."""

    name: Literal["mmstar"] = Field(description="Adapter name.")


class POPESpec(_ImageTableSpec):
    """POPE (lmms-lab/POPE): question_id, question, answer (yes/no), image, category."""

    name: Literal["pope"] = Field(description="Adapter name.")
    categories: list[POPECategory] = Field(
        default_factory=lambda: list(get_args(POPECategory)), min_length=1, description="Splits to keep."
    )


class MMESpec(_ImageTableSpec):
    """MME (lmms-lab/MME): question_id, image, question, answer (Yes/No), category; two questions per image."""

    name: Literal["mme"] = Field(description="Adapter name.")


class MMBenchSpec(_ImageTableSpec):
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


VideoMMMUTrack = Literal["Perception", "Comprehension", "Adaptation"]


class VideoMMMUSpec(_FileDatasetSpec):
    """Video-MMMU (lmms-lab/VideoMMMU): one parquet folder per track, lecture videos `<id>.mp4`."""

    name: Literal["video_mmmu"] = Field(description="Adapter name.")
    annotation_root: Path = Field(
        description="Folder holding the track folders Perception/, Comprehension/, Adaptation/ (parquet shards)."
    )
    media_root: Path = Field(
        description="Folder holding the videos: `<discipline>/<id>.mp4` (Art, Business, Engineering, Humanities, "
        "Medicine, Science: the unzipped archives) or `<id>.mp4`."
    )
    tracks: list[VideoMMMUTrack] = Field(
        default_factory=lambda: list(get_args(VideoMMMUTrack)), min_length=1, description="Tracks to read."
    )


class LlavaVideo178KSpec(_FileDatasetSpec):
    """LLaVA-Video-178K-style fine-tuning data: instructions only (no answers, no scoring), for the predictor."""

    name: Literal["llava_video_178k"] = Field(description="Adapter name.")
    annotations: Path = Field(
        description="A JSON list of {id, video, conversations: [{from, value}, ...]}, or a folder of such files."
    )
    media_root: Path = Field(description="Folder the `video` paths are relative to.")
    instruction: Literal["first", "joined"] = Field(
        default="first",
        description="first: the first human turn is the instruction; joined: every human turn, joined by newlines.",
    )


DatasetSpec = Annotated[
    SyntheticDatasetSpec | VideoMMESpec | VideoMMEv2Spec | MLVUSpec | AVSDSpec | MVBenchSpec | TempCompassSpec
    | MMStarSpec | POPESpec | MMESpec | MMBenchSpec | VideoMMMUSpec | LlavaVideo178KSpec,
    Field(discriminator="name"),
]
