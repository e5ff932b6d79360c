"""Registered secrets are redacted from texts and log records."""

from __future__ import annotations

import logging
from pathlib import Path

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


def test_a_secret_straddling_the_length_cut_leaves_no_prefix(tmp_path: Path) -> None:
    """Error texts are cut at 2000 characters after redaction: a key across the cut (which `redact` of the
    cut text no longer matched) leaves none of itself in an error row or an HTTP error result."""
    import numpy as np
    from conftest import small_spec_dict

    from engine.backends.base import EngineRequest
    from engine.backends.openai_http import OpenAIHTTPBackend
    from engine.items import Item, Job
    from engine.spec import BudgetPoint, HTTPSpec, parse_spec
    from engine.sweep.rows import JobContext, error_row

    key = "sk-straddle-0123456789abcdef"
    register_secret(key)
    message = "x" * (2000 - 10) + key + " and more"  # the cut falls inside the key
    assert key[:8] in message[:2000]
    item = Item(dataset="synthetic", dataset_version="v", item_id="i", video_id="v", video_path=None,
                question="Q?", answer="A", kind="mcq")
    ctx = JobContext(job=Job("tiny", item, BudgetPoint(frames=0)), model_family="qwen2_5_vl",
                     indices=np.zeros(0, dtype=np.int64), width=8, height=8, decoder=None, decode_s=0.0, attempt=1)
    row = error_row(parse_spec(small_spec_dict(tmp_path)), ctx, "X", message)
    http = OpenAIHTTPBackend(HTTPSpec(base_url="http://127.0.0.1:9"), "served")
    res = http._error(EngineRequest("r", "Q?"), "X", message)
    for text in (row.error, res.error):
        assert text is not None and len(text) <= 2000
        assert key[:8] not in text and text.startswith("x" * 1990 + "***")
