"""One protocol for a decoded video wherever its pixels are (`engine.frames.held.HeldVideo`): both kinds answer every
member of it, and no code outside the protocol's own module asks which kind a video is."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

from engine.frames.decode import DecodeRequest, decode_video
from engine.frames.held import HeldVideo
from engine.frames.remote import DecodedPart, RemoteVideo

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "tests" / "assets"
KINDS = {"DecodedVideo", "RemoteVideo"}


def _names(node: ast.AST) -> set[str]:
    """The names a type argument of isinstance/issubclass mentions (`a.B`, `(A, B)`, `A | B`)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def kind_checks(root: Path) -> list[str]:
    """`file:line` (under `root`) of every isinstance/issubclass/`type(...) is` on a video kind under `root`, outside held.py."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "held.py" and path.parent.name == "frames":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2
                    and _names(node.args[1]) & KINDS):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
            if isinstance(node, ast.Compare) and any(isinstance(o, (ast.Is, ast.IsNot, ast.Eq)) for o in node.ops) \
                    and isinstance(node.left, ast.Call) and getattr(node.left.func, "id", None) == "type" \
                    and any(_names(c) & KINDS for c in node.comparators):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_code_asks_which_kind_of_video_it_holds() -> None:
    assert kind_checks(ROOT / "engine") == []


def test_the_check_finds_a_kind_check(tmp_path: Path) -> None:
    """The scan itself: each way of asking a video's kind is found."""
    (tmp_path / "x.py").write_text("def f(v):\n    return isinstance(v, RemoteVideo)\n"
                                   "def g(v):\n    return isinstance(v, (int, remote.RemoteVideo | DecodedVideo))\n"
                                   "def h(v):\n    return type(v) is DecodedVideo or isinstance(v, int)\n")
    assert kind_checks(tmp_path) == ["x.py:2", "x.py:4", "x.py:6"]


def _members() -> set[str]:
    return {n for n in vars(HeldVideo) if not n.startswith("_")}


def test_both_kinds_answer_every_member_of_the_protocol() -> None:
    """A `RemoteVideo` is built here around a stand-in reference (nothing is read through it)."""
    local = decode_video(DecodeRequest(ASSETS / "tiny.mp4", np.array([0, 3]), "pyav"))
    remote = RemoteVideo(DecodedPart(local.facts(), local.held(), local.nbytes, "node-a", "w:1"), object())
    members = _members()
    assert {"budget", "absorb", "release", "covered", "node_id", "fetched_bytes", "stats", "info"} <= members
    for video in (local, remote):
        assert {m for m in members if not hasattr(video, m)} == set(), type(video).__name__
    assert (remote.node_id, remote.fetched_bytes, remote.info) == ("node-a", 0, local.info)


def test_a_local_video_gives_its_pixels_whatever_is_asked() -> None:
    """A video decoded here has no reference to give: by reference or not, a budget is its pixels (shared, read-only)
    and nothing was fetched."""
    video = decode_video(DecodeRequest(ASSETS / "tiny.mp4", np.array([0, 3, 7]), "pyav"))
    size = (video.info.width, video.info.height)
    for by_ref in (True, False):
        frames, jpeg = video.budget(np.array([0, 7]), size, by_ref=by_ref)
        assert isinstance(frames, np.ndarray) and frames.shape[0] == 2 and not frames.flags.writeable and jpeg is None
    assert (video.node_id, video.fetched_bytes) == (None, 0)
