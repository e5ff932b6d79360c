"""A run checks its spec's environment once (`engine.sweep.preflight`): `framesweep run`, `cascade` and `predict`
check before they touch OUT and hand the record to their sweep of the spec, which does not check again (the sweeps
they run in folders of their own, such as a cascade round's, check their own folder); a `Sweep` without a record
that covers its spec checks itself when it starts.

The model is served by a registered stand-in backend that answers "A" (no server, no engine, no process): the run
itself, its items, decode, scoring and store are the real ones."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.specs import small_spec_dict, write_toml
from helpers.sure_results import SureEngine

import engine.sweep.preflight as preflight_module
import engine.sweep.scheduler as scheduler_module
from engine.backends.kinds import BACKENDS, BackendKind, register_backend
from engine.config import SweepSpec, parse_spec
from engine.sweep import Sweep
from engine.sweep.preflight import Preflight, preflight


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[SweepSpec]]:
    """Every call of `preflight`, by the spec it checked (through each name the run reaches it by)."""
    calls: list[SweepSpec] = []

    def counted(spec: SweepSpec, *args: Any, **kwargs: Any) -> Preflight:
        calls.append(spec)
        return preflight(spec, *args, **kwargs)

    monkeypatch.setattr(preflight_module, "preflight", counted)
    monkeypatch.setattr(scheduler_module, "preflight", counted)
    yield calls


@pytest.fixture
def served() -> Iterator[None]:
    """The `openai` backend replaced by one that builds a `SureEngine` (restored after the test)."""

    async def build(model: Any, detached: bool) -> SureEngine:
        return SureEngine()

    original = BACKENDS.get("openai")
    BACKENDS.unregister("openai")
    register_backend("openai", BackendKind(build))
    try:
        yield
    finally:
        BACKENDS.unregister("openai")
        register_backend("openai", original)


def _spec_dict(out: Path) -> dict:
    d = small_spec_dict(out)
    d["dataset"]["n_videos"] = 1
    d["budgets"] = [{"frames": 0}, {"frames": 2}]
    d["models"] = [{"id": "tiny", "family": "qwen2_5_vl", "path": "served", "backend": "openai",
                    "http": {"base_url": "http://127.0.0.1:9"}}]
    return d


def _spec(out: Path) -> SweepSpec:
    return parse_spec(_spec_dict(out))


def test_run_checks_the_spec_once(tmp_path: Path, checks: list[SweepSpec], served: None) -> None:
    from engine.cli.run import run_spec

    spec = _spec(tmp_path / "out")
    assert run_spec(spec, "s.toml") == 0
    assert checks == [spec], "checked before OUT is touched, and not again by the sweep"
    assert (tmp_path / "out" / "results").is_dir()


@pytest.mark.parametrize("argv", [["cascade", "--stages", "f2", "--repeats", "1"], ["predict", "--predictor", "tiny"]],
                         ids=["cascade", "predict"])
def test_cascade_and_predict_check_the_spec_once(tmp_path: Path, checks: list[SweepSpec], served: None,
                                                 argv: list[str]) -> None:
    from typer.testing import CliRunner

    from engine.cli import app

    out = tmp_path / "out"
    spec_path = write_toml(tmp_path / "s.toml", _spec_dict(out))
    res = CliRunner().invoke(app, [argv[0], str(spec_path), *argv[1:]])
    assert res.exit_code == 0, res.output
    assert [Path(c.store.out_dir) for c in checks].count(out) == 1, "the spec checked by the command alone"
    assert all(Path(c.store.out_dir) != out for c in checks[1:]), "its sweep of OUT did not check it again"
    assert (out / "results").is_dir()


def test_a_sweep_checks_unless_given_the_check_of_its_own_spec(tmp_path: Path, checks: list[SweepSpec]) -> None:
    spec = _spec(tmp_path / "a")
    asyncio.run(Sweep(spec, backends={"tiny": SureEngine()}).run())
    assert checks == [spec]
    other = _spec(tmp_path / "b")
    checked = preflight(other, engines=False)  # not through the counted name
    asyncio.run(Sweep(other, backends={"tiny": SureEngine()}, checked=checked).run())
    assert checks == [spec], "given its own spec's check, the sweep does not check again"
    asyncio.run(Sweep(spec.with_out_dir(tmp_path / "c"), backends={"tiny": SureEngine()}, checked=checked).run())
    assert len(checks) == 2, "another spec's check is no check of this one"


def test_what_a_check_covers(tmp_path: Path) -> None:
    spec = _spec(tmp_path / "out")
    full, bare = preflight(spec), preflight(spec, engines=False)
    engines_only = preflight(spec, only_engines=True)
    assert full.covers(spec, engines=True) and full.covers(spec, engines=False)
    assert bare.covers(spec, engines=False) and not bare.covers(spec, engines=True)
    assert not engines_only.covers(spec, engines=True) and not engines_only.covers(spec, engines=False)
    assert not full.covers(spec.model_copy(), engines=False)
