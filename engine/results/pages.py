"""Parquet page checksums of result shards: written with every shard, verified by `framesweep doctor`.

Polars' writer puts no checksum in a page header, and a bit flipped inside a compressed data page
often still decompresses, to other values: a changed `item_id` or `budget_id` read back without an
error, so a key was silently replaced by another. Shards are therefore encoded by pyarrow with a
CRC-32 in every page header (`write_page_checksum`), and `page_problem` reads a shard with the
checksums verified. Pages without a checksum (a shard written before, or by another tool) are
read unverified, so old shards stay readable.
"""

from __future__ import annotations

import io
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["encode_shard", "page_problem"]


def encode_shard(frame: pl.DataFrame, metadata: dict[str, str] | None = None) -> bytes:
    """`frame` as Parquet bytes: zstd, column statistics, a CRC-32 in every page header; `metadata` goes into
    the footer's key-value metadata (a compacted shard's list of the shards it holds)."""
    buf = io.BytesIO()
    table = frame.to_arrow()
    if metadata:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
    pq.write_table(table, buf, compression="zstd", write_statistics=True, write_page_checksum=True)
    return buf.getvalue()


def page_problem(path: Path) -> str | None:
    """Why a shard's pages do not read back as written (a checksum that does not match, a page that does
    not decode), naming the column; None when every page reads. Reads one row group at a time."""
    try:
        with pq.ParquetFile(path, page_checksum_verification=True) as shard:
            for group in range(shard.num_row_groups):
                try:
                    shard.read_row_group(group)
                except _ERRORS as err:
                    return _in_column(shard, group) or _why(err)
    except _ERRORS as err:  # the footer itself
        return _why(err)
    return None


_ERRORS = (OSError, pa.ArrowException)


def _why(err: BaseException) -> str:
    return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"


def _in_column(shard: pq.ParquetFile, group: int) -> str | None:
    """The first column of row group `group` whose pages fail, and why (only after the group failed)."""
    for name in shard.schema_arrow.names:
        try:
            shard.read_row_group(group, columns=[name])
        except _ERRORS as err:
            return f"column {name}, row group {group}: {_why(err)}"
    return None
