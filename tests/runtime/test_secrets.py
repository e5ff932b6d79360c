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
    from helpers.specs import small_spec_dict

    from engine.backends.base import EngineRequest
    from engine.backends.openai_http import OpenAIHTTPBackend
    from engine.config import BudgetPoint, HTTPSpec, parse_spec
    from engine.items import Item, Job
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


# A key with the characters servers and libraries escape: '/' (JSON may write \/, URLs %2F), '+' and ' '
# (URL-encoded %2B, %20 or '+'), a non-ASCII letter (JSON \u00e9, URL %C3%A9).
KEY = "sk-spell/ing+key é=42"


def _spellings(key: str) -> dict[str, str]:
    import json
    from urllib.parse import quote, quote_plus

    lower_hex = quote(key, safe="").replace("%2F", "%2f").replace("%2B", "%2b").replace("%C3%A9", "%c3%a9")
    return {
        "raw": key,
        "json": json.dumps(key)[1:-1],
        "json, slash escaped": json.dumps(key)[1:-1].replace("/", "\\/"),
        "json, upper-case \\u": json.dumps(key)[1:-1].replace("\\u00e9", "\\u00E9"),
        "json, non-ascii kept": json.dumps(key, ensure_ascii=False)[1:-1],
        "every char \\u-escaped": "".join(f"\\u{ord(c):04x}" for c in key),
        "quote": quote(key),
        "quote, no safe chars": quote(key, safe=""),
        "quote_plus": quote_plus(key),
        "url, lower-case hex": lower_hex,
        "mixed": quote(key[:8], safe="") + json.dumps(key[8:])[1:-1],
    }


@pytest.mark.parametrize("spelling", list(_spellings(KEY)))
def test_every_spelling_of_a_secret_is_redacted(spelling: str) -> None:
    """Raw, JSON-escaped and URL-encoded (upper or lower-case hex), in texts and in Polars string and
    list-of-string columns; before, only the raw spelling was found."""
    import polars as pl

    from engine.runtime.secrets import redact_columns

    register_secret(KEY)
    text = f"server said: {_spellings(KEY)[spelling]}!"
    assert redact(text) == "server said: ***!"
    frame = pl.DataFrame({"s": [text, None], "l": [[text, "ok"], None], "n": [1, 2]})
    out = redact_columns(frame)
    assert out["s"].to_list() == ["server said: ***!", None]
    assert out["l"].to_list() == [["server said: ***!", "ok"], None] and out["n"].to_list() == [1, 2]
    assert redact_columns(frame.lazy()).collect().equals(out)


def test_redaction_keeps_other_text() -> None:
    register_secret("tok-keep-0001")
    assert redact("tok-keep-000 and tok-keep-0002, %74ok-keep-0001") == "tok-keep-000 and tok-keep-0002, ***"


def _ctx(item, tmp_path: Path):  # type: ignore[no-untyped-def]
    import numpy as np
    from helpers.specs import small_spec_dict

    from engine.config import BudgetPoint, parse_spec
    from engine.items import Job
    from engine.sweep.rows import JobContext

    ctx = JobContext(job=Job("tiny", item, BudgetPoint(frames=0)), model_family="qwen2_5_vl",
                     indices=np.zeros(0, dtype=np.int64), width=8, height=8, decoder=None, decode_s=0.0, attempt=1)
    return parse_spec(small_spec_dict(tmp_path)), ctx


def test_stored_rows_hold_no_secret_in_any_text_column(tmp_path: Path) -> None:
    """A server that answers with the key: the open answer's `pred` (the text itself) held it verbatim, since
    only `response` was redacted; an error echoing it JSON-escaped or URL-encoded kept it in `error`. Every
    column a server, an engine or an error writes is redacted now; a budget id in `stage_path` is the spec's."""
    import json
    from urllib.parse import quote_plus

    import polars as pl

    from engine.backends.base import EngineResult
    from engine.datasets._base import default_score
    from engine.items import Item
    from engine.results import ResultsDir
    from engine.results.store import ResultStore
    from engine.sweep.rows import error_row, scored_row

    key = "sk-stored/rows+7"
    register_secret(key)
    item = Item(dataset="d", dataset_version="v", item_id="i", video_id="v", video_path=None,
                question="What is the key?", answer="none", kind="open")
    spec, ctx = _ctx(item, tmp_path)
    answered = scored_row(spec, ctx, EngineResult("r", text=f"The key is {key}"), default_score)
    assert answered.pred == f"The key is {key}"  # the scorer's reading, kept until the row is stored
    answered.stage_path = [key]
    escaped = json.dumps(key)[1:-1].replace("/", "\\/")  # as a server's JSON encoder may write it
    failed = error_row(spec, ctx, "HTTPStatusError", f'500: {{"detail": "{escaped}", '
                       f'"url": "/v1?key={quote_plus(key)}"}}')
    failed.item_id, failed.worker = "j", f"http://h/?k={quote_plus(key)}"
    with ResultStore(tmp_path / "out") as store:
        store.add([answered, failed])
        store.commit()
    rows = ResultsDir.open(tmp_path / "out").scan().collect()
    text = rows.select(pl.col(pl.String)).write_csv()
    assert "stored" not in text and "sk-" not in text, text
    assert rows.filter(pl.col("item_id") == "i")["pred"].to_list() == ["The key is ***"]
    assert rows["stage_path"].to_list()[0] == [key]  # budget ids: never rewritten
    assert rows.filter(pl.col("item_id") == "j")["error"][0].count("***") == 2


def test_export_redacts_rows_stored_unredacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows written before redaction covered every column (or imported from another tool) may hold the key:
    the export redacts what it copies, knowing the key from the variable the spec names."""
    import json

    import polars as pl
    from helpers.metric_rows import frame

    from engine.export import export
    from engine.results import ResultsDir
    from engine.results.store import ResultStore

    key = "sk-export-only-3141"  # not registered in this process before the export
    rows = frame({"a": "101", "b": "011"}, budgets={"text": 0, "f4": 4, "f8": 8})
    rows[0].pred, rows[1].response, rows[2].error = key, json.dumps({"k": key}), f"k={key}"
    with ResultStore(tmp_path / "out") as store:
        store.add(rows)
        store.commit()
        store.write_manifest({"sweep_id": "t", "spec": {"sweep_id": "t", "models": [
            {"id": "m", "family": "qwen2_5_vl", "path": "tiny", "backend": "openai",
             "http": {"base_url": "http://127.0.0.1:9", "api_key_env": "FS_EXPORT_KEY"}}]}})
    stored = ResultsDir.open(tmp_path / "out").scan().collect()
    assert stored.select(pl.col(pl.String)).write_csv().count(key) == 3  # the store kept it (not registered)
    monkeypatch.setenv("FS_EXPORT_KEY", key)
    export(tmp_path / "out", tmp_path / "art")
    items = pl.read_parquet(tmp_path / "art" / "items.parquet")
    text = items.select(pl.col(pl.String)).write_csv()
    assert key not in text and text.count("***") == 2, text  # pred and response (`error` is not exported)
    for name in ("README.md", "provenance.json"):
        assert key not in (tmp_path / "art" / name).read_text()


def test_log_tracebacks_are_redacted() -> None:
    """A handler renders a record's traceback itself (rich does, from exc_info): one holding a secret is
    rendered redacted into the message instead."""
    register_secret("tok-traceback-77")
    log = logging.getLogger("fs-test-secrets-tb")
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(self.format(record))

    handler = Keep()
    handler.addFilter(RedactingFilter())
    log.addHandler(handler)
    try:
        try:
            raise RuntimeError("server said tok-traceback-77")
        except RuntimeError:
            log.exception("request failed")
    finally:
        log.removeHandler(handler)
    assert seen and "tok-traceback-77" not in seen[0] and "server said ***" in seen[0], seen


# --- encoded spellings: base64 and base64url, hex, split across lines, HTML references, case, URL-encoded twice ---

ENCODED_KEY = "sk-Enc0ded/Key+9&_zq"  # "/", "+", "&": escaped by JSON, URLs or HTML; base64 of "/", "+" differs


def _b64(data: bytes, urlsafe: bool, padded: bool) -> str:
    import base64

    text = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(data).decode()
    return text if padded else text.rstrip("=")


@pytest.mark.parametrize("urlsafe", [False, True])
@pytest.mark.parametrize("padded", [True, False])
@pytest.mark.parametrize("before", [b"", b"u:", b"us:"])  # the key at each of the 3 alignments of a group
@pytest.mark.parametrize("after", [b"", b"!", b"!!"])
def test_a_secret_echoed_in_base64_is_redacted(urlsafe: bool, padded: bool, before: bytes, after: bytes,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that echoes the Authorization header of Basic auth (`user:KEY` in base64), or a key base64url-
    encoded in a token: stored as sent before. Now only the few characters that encode the neighbouring bytes
    are left (the first of them may hold 4 bits of the key), in text and in a Polars column alike."""
    import re

    import polars as pl
    from helpers.secrets import isolated_secrets

    from engine.runtime.secrets import redact_columns

    isolated_secrets(monkeypatch)
    register_secret(ENCODED_KEY)
    encoded = _b64(before + ENCODED_KEY.encode() + after, urlsafe, padded)
    text = f"echo: {encoded}."
    for out in (redact(text), redact_columns(pl.DataFrame({"s": [text]}))["s"][0]):
        assert re.fullmatch(r"echo: [\w+/-]{0,5}\*\*\*[\w+/=-]{0,5}\.", out), (encoded, out)  # ~27 if kept


def _text_spellings(key: str) -> dict[str, str]:
    import html
    import json
    from urllib.parse import quote

    return {
        "hex": key.encode().hex(),
        "HEX": key.encode().hex().upper(),
        "hex, wrapped": key.encode().hex()[:16] + "\n" + key.encode().hex()[16:],
        "split across lines": key[:5] + "\n" + key[5:12] + "\r\n    " + key[12:],
        "split, JSON-escaped": json.dumps(key[:7] + "\n" + key[7:])[1:-1],
        "html.escape": html.escape(key),
        "&#NN;": "".join(f"&#{ord(c)};" for c in key),
        "&#xNN;": "".join(f"&#x{ord(c):X};" for c in key),
        "named references": key.replace("/", "&sol;").replace("+", "&plus;").replace("_", "&lowbar;"),
        "upper case": key.upper(),
        "lower case": key.lower(),
        "URL-encoded twice": quote(quote(key, safe=""), safe=""),
    }


@pytest.mark.parametrize("spelling", list(_text_spellings(ENCODED_KEY)))
def test_a_secret_echoed_in_another_encoding_is_redacted(spelling: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hex, a line-wrapped key (raw or JSON-escaped line breaks), HTML character references, a case-changed echo,
    a key URL-encoded twice: each was stored as sent."""
    import polars as pl
    from helpers.secrets import isolated_secrets

    from engine.runtime.secrets import redact_columns

    isolated_secrets(monkeypatch)
    register_secret(ENCODED_KEY)
    text = f"server said: {_text_spellings(ENCODED_KEY)[spelling]}!"
    assert redact(text) == "server said: ***!"
    assert redact_columns(pl.DataFrame({"s": [text]}))["s"].to_list() == ["server said: ***!"]


@pytest.mark.parametrize("spelling", ["base64", "hex", "split across lines", "&#NN;"])
def test_an_encoded_secret_across_the_cut_leaves_no_prefix(spelling: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Redact, then cut, for the encoded spellings too: an error row's text is cut at 2000 characters after
    the whole message is redacted, so an encoded key that straddles the cut leaves nothing of itself."""
    from helpers.secrets import isolated_secrets
    from helpers.specs import small_spec_dict

    from engine.config import parse_spec
    from engine.items import Item
    from engine.sweep.rows import error_row

    isolated_secrets(monkeypatch)
    register_secret(ENCODED_KEY)
    encoded = (_b64(ENCODED_KEY.encode(), False, True) if spelling == "base64"
               else _text_spellings(ENCODED_KEY)[spelling])
    message = "x" * 1990 + encoded + " and more"  # the cut falls inside the encoded key
    item = Item(dataset="d", dataset_version="v", item_id="i", video_id="v", video_path=None, question="Q?",
                answer="A", kind="mcq")
    spec = parse_spec(small_spec_dict(tmp_path))
    row = error_row(spec, _ctx(item, tmp_path)[1], "X", message)
    assert row.error == ("x" * 1990 + "*** and more")[:2000], row.error[1980:]


@pytest.mark.parametrize(("value", "why"), [
    ("flash", "5 character(s) long"),
    ("token-abc123", "12 character(s) long"),
    ("sk-no-key-required", "words"),
    ("InternationalBusinessMachines", "words"),
    ("PLACEHOLDER_API_KEY", "words"),
    ("1234567890123456", "a number"),
    ("2024-01-01 12:00:00", "a number"),
    ("abababababababab", "2 different"),
])
def test_a_value_that_could_be_ordinary_text_is_no_safe_secret(value: str, why: str) -> None:
    from engine.runtime.secrets import secret_problem

    problem = secret_problem(value)
    assert problem is not None and why in problem and value not in problem


@pytest.mark.parametrize("value", [
    "sk-proj-" + "Xq7_" * 12,  # OpenAI's shape
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",  # Hugging Face's shape
    "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",  # Google's shape
    "0f3a9c1be47d52a8",  # 16 hex digits
    "token-abc123-long-enough-42",
])
def test_keys_of_real_formats_are_safe_secrets(value: str) -> None:
    from engine.runtime.secrets import secret_problem

    assert secret_problem(value) is None


def test_credentials_in_a_url_are_found_decoded() -> None:
    from engine.runtime.secrets import url_credentials

    url = "https://bob:p%40ss-w0rd-123456@h:8000/v1?model=m&api_key=K1&access_token=a+b#sig=S9"
    assert [v for _, v in url_credentials(url)] == ["p@ss-w0rd-123456", "K1", "a b", "S9"]
    assert [w for w, _ in url_credentials(url)][1] == "the URL's query parameter 'api_key'"
    assert url_credentials("https://tok-0123456789abcdef@h/")[0][1] == "tok-0123456789abcdef"
    assert url_credentials("http://127.0.0.1:8000") == [] and url_credentials("http://[::1") == []
