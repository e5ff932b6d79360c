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
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from engine.datasets.benchmark import BENCHMARKS, Source

__all__ = ["FetchError", "Source", "fetch", "get_source", "known_sources", "layout_fields"]

log = logging.getLogger(__name__)


class FetchError(RuntimeError):
    """A release that could not be fetched or laid out (the message names the dataset and the cause)."""


def known_sources() -> dict[str, Source]:
    """Benchmark name -> its release, for every registered benchmark that has one (`Benchmark.source`)."""
    return {name: b.source for name, b in BENCHMARKS.items() if b.source is not None}


def get_source(name: str) -> Source:
    """The source of benchmark `name`; KeyError (naming the known ones) for a benchmark without one."""
    known = known_sources()
    if name not in known:
        raise KeyError(f"no known source for dataset {name!r}; known: {', '.join(sorted(known))}")
    return known[name]


def layout_fields(name: str, data_dir: Path) -> dict[str, Any]:
    """The spec's path fields of adapter `name` for a data folder laid out as its release."""
    return {k: str(data_dir / v) if v != "." else str(data_dir) for k, v in get_source(name).layout.items()}


def _download(name: str, src: Source, revision: str | None) -> Path:
    """The release's files in the Hugging Face cache (`HF_HUB_CACHE`, `HF_HUB_OFFLINE` as huggingface_hub reads
    them): the snapshot folder."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:
        return Path(snapshot_download(src.where, repo_type="dataset", revision=revision,
                                      allow_patterns=list(src.patterns)))
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError, ValueError) as err:
        raise FetchError(f"{name}: could not fetch {src.where} from the Hugging Face hub ({type(err).__name__}: "
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
    snapshot = _download(name, src, revision)
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
