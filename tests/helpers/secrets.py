"""A secret registry of the test's own: what a test registers is forgotten after it."""

from __future__ import annotations

import pytest


def isolated_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start the test with no registered secret; the process's registry comes back after it (`monkeypatch`
    restores the module's state), so a value registered here redacts nothing in later tests."""
    from engine.runtime import secrets

    monkeypatch.setattr(secrets, "_secrets", set())
    monkeypatch.setattr(secrets, "_pattern", None)
    monkeypatch.setattr(secrets, "_regex", None)
