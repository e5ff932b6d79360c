"""Humane labels for what the figures and the report name by id: a chain's protocol, say.

A protocol id (`engine.config.BudgetPoint.protocol_id`, `engine.metrics.grid.protocol_id`) is a key: ``px200704``,
``s448-random-seed7``. A reader wants ``max 448x448 px`` and ``short side 448, random sampling, seed 7``. Ids stay
the keys (file names, table ids, JSON); these labels are only what a person reads.
"""

from __future__ import annotations

import math
import re

from engine.frames.plan import POLICIES

__all__ = ["pixels", "protocol_label"]

_SIZES = ((re.compile(r"px(\d+)"), "max {} px"), (re.compile(r"min(\d+)"), "min {} px"),
          (re.compile(r"ex(\d+)"), "exactly {} px"))
_SHORT, _SEED = re.compile(r"s(\d+)"), re.compile(r"seed(\d+)")


def pixels(n: int) -> str:
    """A pixel count as a square's sides where it is one (200704: ``448x448``), else grouped (``230,400``)."""
    side = math.isqrt(n)
    return f"{side}x{side}" if side * side == n else f"{n:,}"


def _part(part: str) -> str | None:
    """One dash-separated part of a protocol id as words, None when it is none of the id's parts."""
    for pattern, words in _SIZES:
        if m := pattern.fullmatch(part):
            return words.format(pixels(int(m.group(1))))
    if m := _SHORT.fullmatch(part):
        return f"short side {m.group(1)}"
    if m := _SEED.fullmatch(part):
        return f"seed {m.group(1)}"
    if part == "cached":
        return "frame cache"
    if part.partition("@")[0] in POLICIES:
        return f"{part} sampling"
    return None


def protocol_label(protocol_id: str) -> str:
    """A chain's protocol in words: ``px200704`` -> ``max 448x448 px``, ``s448-random-seed7`` -> ``short side 448,
    random sampling, seed 7``, ``default`` -> ``decoded size``; the id itself where a part has no such form."""
    if protocol_id == "default":
        return "decoded size"
    words = [_part(p) for p in protocol_id.split("-")]
    return protocol_id if None in words else ", ".join(w for w in words if w)
