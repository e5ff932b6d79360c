"""Registered secrets are redacted from texts and log records."""

from __future__ import annotations

import logging

import pytest

from engine.runtime.secrets import RedactingFilter, redact, register_secret


def test_redact_replaces_every_registered_secret() -> None:
    register_secret("tok-abcdef-123")
    register_secret("ab")  # too short to be a secret: ignored
    assert redact("Authorization: Bearer tok-abcdef-123 (tok-abcdef-123)") == "Authorization: Bearer *** (***)"
    assert redact("a b ab") == "a b ab"
    assert redact(None) is None


def test_log_records_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    register_secret("tok-logged-999")
    log = logging.getLogger("fs-test-secrets")
    log.addFilter(RedactingFilter())
    with caplog.at_level(logging.WARNING):
        log.warning("server said %s", "bad key tok-logged-999")
    assert "tok-logged-999" not in caplog.text and "bad key ***" in caplog.text
