"""The built-in benchmarks, one registration each (`engine.datasets.benchmark`): spec class, release, official
score, headline and units. Imported by `engine.datasets`, in the order of the spec's `[dataset]` union."""

from __future__ import annotations

from engine.datasets import lmms_official, official
from engine.datasets.avsd import AVSDSpec
from engine.datasets.benchmark import Benchmark, Source, register_benchmark
from engine.datasets.llava_video_178k import LlavaVideo178KSpec
from engine.datasets.lmms_eval import LmmsEvalSpec
from engine.datasets.mlvu import MLVUSpec
from engine.datasets.mmbench import MMBenchSpec
from engine.datasets.mme import MMESpec
from engine.datasets.mmstar import MMStarSpec
from engine.datasets.mvbench import MVBenchSpec
from engine.datasets.pope import POPESpec
from engine.datasets.synthetic import SyntheticDatasetSpec
from engine.datasets.tempcompass import TempCompassSpec
from engine.datasets.video_mmmu import VideoMMMUSpec
from engine.datasets.videomme import VideoMMESpec
from engine.datasets.videomme_v2 import VideoMMEv2Spec

__all__: list[str] = []

register_benchmark(Benchmark(
    "synthetic", SyntheticDatasetSpec,
    Source("built in (real H.264 files written on first use)", {"root": "."}, on_hub=False,
           note="nothing to fetch: `--data DIR` only says where the videos are written")))
register_benchmark(Benchmark(
    "videomme", VideoMMESpec,
    Source("lmms-lab/Video-MME", {"annotations": "videomme/test-00000-of-00001.parquet", "media_root": "data"},
           ("videomme/*.parquet", "videos_chunked_*.zip"), ("videos_chunked_*.zip",),
           note="about 100 GB of video archives; subtitles are a separate release (subtitle_root)"),
    official.videomme, ("videomme_accuracy",), units={"videomme_n_empty": "count"}, versions=("videomme-v1",)))
register_benchmark(Benchmark(
    "videomme_v2", VideoMMEv2Spec,
    Source("the Video-MME v2 release (see its project page)", {"annotations": "test.parquet", "media_root": "videos"},
           on_hub=False, note="fetch by hand: test.parquet and the videos"),
    official.videomme_v2, ("videomme_v2_score",),
    units={"videomme_v2_score": "points", "videomme_v2_relevance_score": "points", "videomme_v2_logic_score": "points",
           "videomme_v2_n_groups": "count", "videomme_v2_n_incomplete": "count"},
    full_scale={"videomme_v2_score": 100.0}, versions=("videomme-v2",)))
register_benchmark(Benchmark(
    "mlvu", MLVUSpec,
    Source("MLVU/MVLU", {"annotation_dir": "MLVU/json", "media_root": "MLVU/video"},
           ("MLVU/json/*", "MLVU/video/**"), note="the dev set")))
register_benchmark(Benchmark(
    "avsd", AVSDSpec,
    Source("DSTC7 track 3 (AVSD) annotations and the Charades videos (AI2)",
           {"annotations": "test_set4DSTC7-AVSD.json", "media_root": "Charades_v1"}, on_hub=False,
           note="fetch by hand: the dialog JSON and the Charades videos")))
register_benchmark(Benchmark(
    "mvbench", MVBenchSpec,
    Source("OpenGVLab/MVBench", {"annotation_dir": "json", "media_root": "video"}, ("json/*.json", "video/*.zip"),
           ("video/*.zip",)),
    official.mvbench, ("mvbench_accuracy",), versions=("mvbench",)))
register_benchmark(Benchmark(
    "tempcompass", TempCompassSpec,
    Source("lmms-lab/TempCompass", {"annotation_root": ".", "media_root": "videos"},
           ("multi-choice/*", "yes_no/*", "caption_matching/*", "tempcompass_videos.zip"), ("tempcompass_videos.zip",)),
    official.tempcompass, ("tempcompass_score",), versions=("tempcompass",)))
register_benchmark(Benchmark(
    "mmstar", MMStarSpec,
    Source("Lin-Chen/MMStar", {"annotations": "mmstar.parquet"}, ("mmstar.parquet",)),
    official.mmstar, ("mmstar_accuracy",), versions=("mmstar",)))
register_benchmark(Benchmark(
    "pope", POPESpec,
    Source("lmms-lab/POPE", {"annotations": "data"}, ("data/*.parquet",)),
    official.pope, ("pope_f1_split_mean", "pope_accuracy_split_mean"), versions=("pope",)))
register_benchmark(Benchmark(
    "mme", MMESpec,
    Source("lmms-lab/MME", {"annotations": "data"}, ("data/*.parquet",)),
    official.mme, ("mme_perception", "mme_cognition"),
    units={m: "points" for m in ("mme_perception", "mme_cognition", "mme_score", "mme_acc", "mme_acc_plus")},
    full_scale={"mme_perception": 2000.0, "mme_cognition": 800.0}, versions=("mme",)))
register_benchmark(Benchmark(
    "mmbench", MMBenchSpec,
    Source("lmms-lab/MMBench", {"annotations": "en/dev-00000-of-00001.parquet"}, ("en/dev-*.parquet",),
           note="the English dev split (the TSV of VLMEvalKit reads too)"),
    official.mmbench, ("mmbench_circular_accuracy",),
    units={"mmbench_n_questions": "count", "mmbench_n_incomplete": "count"}, versions=("mmbench",)))
register_benchmark(Benchmark(
    "video_mmmu", VideoMMMUSpec,
    Source("lmms-lab/VideoMMMU", {"annotation_root": ".", "media_root": "."},
           ("Perception/*", "Comprehension/*", "Adaptation/*", "*.zip"), ("*.zip",),
           note="one video archive per discipline"),
    official.video_mmmu, ("video_mmmu_accuracy",), headline_per_subset=True, versions=("video_mmmu",)))
register_benchmark(Benchmark(
    "llava_video_178k", LlavaVideo178KSpec,
    Source("lmms-lab/LLaVA-Video-178K", {"annotations": "annotations", "media_root": "."}, on_hub=False,
           note="fetch the subsets you need by hand (hundreds of GB); annotations: their JSON files")))
# no release of its own: lmms-eval reads each task's data (its Hugging Face cache, or dataset_path); its official
# score is the task's own aggregation, in the task's unit, its metric as the subset
register_benchmark(Benchmark(
    "lmms_eval", LmmsEvalSpec, None, lmms_official.scores, (lmms_official.METRIC,), headline_per_subset=True,
    units={lmms_official.METRIC: "points"}, versions=("lmms_eval",)))
