"""Secrets a spec names: credentials written into a server's `base_url` and the key `api_key_env` names are
registered for redaction when the spec is read (or checked), and one too short or too plain to be redacted
safely is refused, naming where it sits, never its value."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.secrets import isolated_secrets
from helpers.specs import small_spec_dict

from engine.config import HTTPSpec, SpecError, parse_spec, register_spec_secrets
from engine.runtime.secrets import redact

STRONG = "Zq8-url-cred-0b1c2d3e4f"


def _http_spec(tmp_path: Path, **http: object) -> dict:
    d = small_spec_dict(tmp_path)
    d["models"] = [{"id": "remote", "family": "qwen2_5_vl", "path": "served", "backend": "openai",
                    "http": {"base_url": "http://127.0.0.1:9", **http}}]
    return d


@pytest.mark.parametrize(("url", "where"), [
    ("http://127.0.0.1:9/?api_key=flash", "query parameter 'api_key'"),
    ("http://admin:hunter2@127.0.0.1:9", "password"),
    ("http://127.0.0.1:9/v1?model=m&token=sk-no-key-required", "query parameter 'token'"),
])
def test_a_weak_credential_in_base_url_is_refused_without_its_value(url: str, where: str, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_secrets(monkeypatch)
    with pytest.raises(SpecError) as err:
        parse_spec(_http_spec(tmp_path, base_url=url), "s.toml")
    text = str(err.value)
    assert "models.0.http.base_url:" in text and where in text and "cannot keep out" in text, text
    assert all(secret not in text for secret in ("flash", "hunter2", "sk-no-key-required")), text


def test_a_credential_in_base_url_is_registered_when_the_spec_is_read(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_secrets(monkeypatch)
    assert redact(STRONG) == STRONG
    parse_spec(_http_spec(tmp_path, base_url=f"http://127.0.0.1:9/?api_key={STRONG}"))
    assert redact(f"url http://127.0.0.1:9/?api_key={STRONG}") == "url http://127.0.0.1:9/?api_key=***"


def test_a_weak_api_key_is_named_by_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 5-letter key (`flash`) turned the item ids holding the word into `***`; it is refused now, by the
    variable's name, before any work."""
    isolated_secrets(monkeypatch)
    http = HTTPSpec(base_url="http://127.0.0.1:9", api_key_env="FS_TEST_WEAK_KEY")
    for weak in ("flash", "token-abc123", "changeme-changeme"):
        monkeypatch.setenv("FS_TEST_WEAK_KEY", weak)
        problem = http.api_key_problem()
        assert problem is not None and "FS_TEST_WEAK_KEY" in problem and weak not in problem, problem
    assert redact("flash") == "flash"  # a refused key is not registered
    monkeypatch.setenv("FS_TEST_WEAK_KEY", "sk-strong-0123456789abcdef")
    assert http.api_key_problem() is None and redact("sk-strong-0123456789abcdef") == "***"
    monkeypatch.delenv("FS_TEST_WEAK_KEY")
    assert http.api_key_problem() == "environment variable FS_TEST_WEAK_KEY is not set"


def test_a_no_key_placeholder_is_sent_but_never_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """`EMPTY` (vLLM's documented "no key" value for its OpenAI-compatible server) is not a secret: it passes the
    check and is never redacted, so answers holding the word keep it."""
    isolated_secrets(monkeypatch)
    http = HTTPSpec(base_url="http://127.0.0.1:9", api_key_env="FS_TEST_EMPTY_KEY")
    for placeholder in ("EMPTY", "none", "dummy"):
        monkeypatch.setenv("FS_TEST_EMPTY_KEY", placeholder)
        assert http.api_key_problem() is None
        assert redact(f"the box is {placeholder}") == f"the box is {placeholder}"


def test_a_recorded_spec_registers_its_strong_secrets_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A manifest's spec (a mapping; malformed parts skipped): its URL credential and its key variable's value
    are registered; a weak one is left out, as a run refuses it."""
    isolated_secrets(monkeypatch)
    monkeypatch.setenv("FS_TEST_REC_KEY", "sk-recorded-0123456789")
    monkeypatch.setenv("FS_TEST_REC_WEAK", "flash")
    register_spec_secrets({"models": [
        {"http": {"base_url": f"http://h/?key={STRONG}", "api_key_env": "FS_TEST_REC_KEY"}},
        {"http": {"base_url": "http://h/?key=short", "api_key_env": "FS_TEST_REC_WEAK"}},
        {"http": None}, "not a table", {"http": {"base_url": 3}}]})
    register_spec_secrets(None)
    assert redact(f"{STRONG} sk-recorded-0123456789 short flash") == "*** *** short flash"
