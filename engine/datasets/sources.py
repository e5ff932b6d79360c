"""Where each benchmark comes from, and how its files lie in a data folder.

A `Source` names an adapter's public release (a Hugging Face dataset repository, or a page
to fetch it from by hand), the files of that release framesweep reads (`patterns`, as
`huggingface_hub.snapshot_download` takes them), the archives among them that hold the
media, and the `layout`: the dataset spec's path fields, relative to a data folder laid
out as the release is (its files where the repository has them, every archive unpacked
beside itself). `framesweep fetch NAME --to DIR` lays out such a folder; `framesweep run
--dataset NAME --data DIR` fills the spec's path fields from the layout.
"""

from __future__ import annotations

import logging
import os
import zipfile
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

__all__ = ["SOURCES", "FetchError", "Source", "fetch", "get_source", "layout_fields"]

log = logging.getLogger(__name__)


class FetchError(RuntimeError):
    """A release that could not be fetched or laid out (the message names the dataset and the cause)."""


@dataclass(frozen=True)
class Source:
    """One adapter's public release and its layout in a data folder."""

    adapter: str
    where: str
    """The release: a Hugging Face dataset id (`org/name`) when `on_hub`, else a page to fetch it from by hand."""
    layout: dict[str, str] = field(default_factory=dict)
    """Spec field -> path relative to the data folder."""
    patterns: tuple[str, ...] = ()
    """The release's files framesweep reads (glob patterns of `snapshot_download`'s `allow_patterns`)."""
    archives: tuple[str, ...] = ()
    """Patterns of the zip archives among them, each unpacked into the folder that holds it."""
    on_hub: bool = True
    note: str = ""

    @property
    def fetchable(self) -> bool:
        return self.on_hub and bool(self.patterns)


SOURCES: dict[str, Source] = {s.adapter: s for s in (
    Source("synthetic", "built in (real H.264 files written on first use)", {"root": "."}, on_hub=False,
           note="nothing to fetch: `--data DIR` only says where the videos are written"),
    Source("videomme", "lmms-lab/Video-MME",
           {"annotations": "videomme/test-00000-of-00001.parquet", "media_root": "data"},
           ("videomme/*.parquet", "videos_chunked_*.zip"), ("videos_chunked_*.zip",),
           note="about 100 GB of video archives; subtitles are a separate release (subtitle_root)"),
    Source("videomme_v2", "the Video-MME v2 release (see its project page)", {"annotations": "test.parquet",
           "media_root": "videos"}, on_hub=False, note="fetch by hand: test.parquet and the videos"),
    Source("mlvu", "MLVU/MVLU", {"annotation_dir": "MLVU/json", "media_root": "MLVU/video"},
           ("MLVU/json/*", "MLVU/video/**"), note="the dev set"),
    Source("mvbench", "OpenGVLab/MVBench", {"annotation_dir": "json", "media_root": "video"},
           ("json/*.json", "video/*.zip"), ("video/*.zip",)),
    Source("tempcompass", "lmms-lab/TempCompass", {"annotation_root": ".", "media_root": "videos"},
           ("multi-choice/*", "yes_no/*", "caption_matching/*", "tempcompass_videos.zip"),
           ("tempcompass_videos.zip",)),
    Source("avsd", "DSTC7 track 3 (AVSD) annotations and the Charades videos (AI2)",
           {"annotations": "test_set4DSTC7-AVSD.json", "media_root": "Charades_v1"}, on_hub=False,
           note="fetch by hand: the dialog JSON and the Charades videos"),
    Source("mmstar", "Lin-Chen/MMStar", {"annotations": "mmstar.parquet"}, ("mmstar.parquet",)),
    Source("pope", "lmms-lab/POPE", {"annotations": "data"}, ("data/*.parquet",)),
    Source("mme", "lmms-lab/MME", {"annotations": "data"}, ("data/*.parquet",)),
    Source("mmbench", "lmms-lab/MMBench", {"annotations": "en/dev-00000-of-00001.parquet"}, ("en/dev-*.parquet",),
           note="the English dev split (the TSV of VLMEvalKit reads too)"),
    Source("video_mmmu", "lmms-lab/VideoMMMU", {"annotation_root": ".", "media_root": "."},
           ("Perception/*", "Comprehension/*", "Adaptation/*", "*.zip"), ("*.zip",),
           note="one video archive per discipline"),
    Source("llava_video_178k", "lmms-lab/LLaVA-Video-178K", {"annotations": "annotations", "media_root": "."},
           on_hub=False, note="fetch the subsets you need by hand (hundreds of GB); annotations: their JSON files"),
)}


def get_source(name: str) -> Source:
    """The source of adapter `name`; KeyError (naming the known ones) for an adapter without one."""
    try:
        return SOURCES[name]
    except KeyError:
        raise KeyError(f"no known source for dataset {name!r}; known: {', '.join(sorted(SOURCES))}") from None


def layout_fields(name: str, data_dir: Path) -> dict[str, Any]:
    """The spec's path fields of adapter `name` for a data folder laid out as its release."""
    return {k: str(data_dir / v) if v != "." else str(data_dir) for k, v in get_source(name).layout.items()}


def _download(src: Source, revision: str | None) -> Path:
    """The release's files in the Hugging Face cache (`HF_HUB_CACHE`, `HF_HUB_OFFLINE` as huggingface_hub reads
    them): the snapshot folder."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:
        return Path(snapshot_download(src.where, repo_type="dataset", revision=revision,
                                      allow_patterns=list(src.patterns)))
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError, ValueError) as err:
        raise FetchError(f"{src.adapter}: could not fetch {src.where} from the Hugging Face hub ({type(err).__name__}: "
                         f"{str(err).splitlines()[0] if str(err) else 'no detail'})") from None


def _unpack(archive: Path, into: Path) -> None:
    """Unpack a zip beside itself (once: a marker file remembers it); a member that would land outside is refused."""
    marker = into / f".{archive.name}.unpacked"
    if marker.exists():
        return
    root = into.resolve()
    with zipfile.ZipFile(archive) as z:
        for member in z.infolist():
            target = (into / member.filename).resolve()
            if target != root and root not in target.parents:
                raise FetchError(f"{archive.name}: member {member.filename!r} would land outside {into}")
        z.extractall(into)
    marker.touch()


def fetch(name: str, to: Path, *, revision: str | None = None) -> dict[str, Any]:
    """Download adapter `name`'s release through `huggingface_hub` and lay it out in `to`: each file linked to the
    cache where the release has it, each archive unpacked beside itself. Returns the spec's path fields for `to`.

    Raises:
        FetchError: a dataset not on the hub, a download that failed, an archive that cannot be unpacked.
    """
    src = get_source(name)
    if not src.fetchable:
        raise FetchError(f"{name}: {src.where} is not fetched automatically ({src.note})")
    snapshot = _download(src, revision)
    files = [p for p in sorted(snapshot.rglob("*")) if p.is_file()
             and any(fnmatch(str(p.relative_to(snapshot)), pat) for pat in src.patterns)]
    if not files:
        raise FetchError(f"{name}: {src.where} holds none of {', '.join(src.patterns)}")
    for path in files:
        rel = path.relative_to(snapshot)
        dest = to / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if any(fnmatch(str(rel), pat) for pat in src.archives):
            try:
                _unpack(path, dest.parent)
            except (zipfile.BadZipFile, OSError) as err:
                raise FetchError(f"{name}: cannot unpack {rel} ({err})") from None
            continue
        if dest.is_symlink() or dest.exists():
            dest.unlink()
        os.symlink(path.resolve(), dest)  # the file stays in the hub cache once
    log.info("%s: %d file(s) of %s laid out in %s", name, len(files), src.where, to)
    return layout_fields(name, to)
