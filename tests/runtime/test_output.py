"""The one JSON writer and the one number format for people (`engine.runtime.output`), on real files."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from engine.runtime.output import JSONValueError, finite, json_text, write_json, write_json_lines


def _strict(text: str) -> object:
    """JSON as a strict reader takes it: NaN and infinities are not JSON."""
    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(("bad", "where"), [
    (float("nan"), "groups[1].cascade.ratio"), (float("inf"), "groups[1].cascade.ratio"),
    (float("-inf"), "groups[1].cascade.ratio")])
def test_a_nan_or_infinity_is_refused_naming_its_key_path_and_nothing_is_written(tmp_path: Path, bad: float,
                                                                                 where: str) -> None:
    path = tmp_path / "m.json"
    path.write_text('{"old": 1}')
    doc = {"schema": "x", "groups": [{"cascade": {"ratio": 0.5}}, {"cascade": {"ratio": bad}}]}
    with pytest.raises(JSONValueError) as err:
        write_json(path, doc)
    assert f"{path}: {bad!r} at {where} cannot be written as JSON" in str(err.value)
    assert path.read_text() == '{"old": 1}'  # the file there before is left as it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]  # and no temp file beside it


def test_an_object_json_has_no_form_for_is_refused_by_key_path(tmp_path: Path) -> None:
    with pytest.raises(JSONValueError, match=r"a value of type object at rows\[2\] cannot be written"):
        write_json(tmp_path / "m.json", {"rows": [1, 2, object()]})
    assert not (tmp_path / "m.json").exists()


def test_a_document_is_written_indented_in_key_order_with_paths_and_dates_as_text(tmp_path: Path) -> None:
    doc = {"b": 1, "a": [0.5, None, True], "path": Path("/data/x.mp4"), "day": dt.date(2026, 1, 2), "é": "ü"}
    path = write_json(tmp_path / "sub" / "d.json", doc)
    text = path.read_text()
    assert text == json.dumps({**doc, "path": "/data/x.mp4", "day": "2026-01-02"}, indent=2)  # one set of options
    assert text.index('"b"') < text.index('"a"') and "\\u00e9" in text and not text.endswith("\n")
    assert _strict(text) == {"b": 1, "a": [0.5, None, True], "path": "/data/x.mp4", "day": "2026-01-02", "é": "ü"}
    assert json_text(doc) == text


def test_json_lines_are_one_record_a_line_and_refuse_nan_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    assert write_json_lines(path, iter([{"id": "d/1", "text": "é"}, {"id": "d/2", "frames": 8}])) == 2
    assert path.read_text(encoding="utf-8") == '{"id": "d/1", "text": "é"}\n{"id": "d/2", "frames": 8}\n'
    with pytest.raises(JSONValueError, match=r"m2\.jsonl line 2: nan at frames cannot be written as JSON"):
        write_json_lines(tmp_path / "m2.jsonl", [{"frames": 1.0}, {"frames": float("nan")}])
    assert not (tmp_path / "m2.jsonl").exists()


def test_finite_writes_null_where_a_value_is_undefined() -> None:
    assert finite({"a": [float("nan"), 1.0, {"b": float("inf")}], "c": "x"}) == {"a": [None, 1.0, {"b": None}],
                                                                                   "c": "x"}


def test_every_json_document_is_written_without_a_registered_secret(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the export asked for redaction (`redacted=True`): a spec's key reached `manifest.json` and
    `summary.json` raw. Every document is scrubbed now, whatever its writer; JSONL lines (keyed data) are not."""
    from helpers.secrets import isolated_secrets

    from engine.runtime.secrets import register_secret

    isolated_secrets(monkeypatch)
    key = "sk-doc/key-0123456789"
    register_secret(key)
    write_json(tmp_path / "doc.json", {"spec": {"base_url": f"http://h/?api_key={key}"}, key: 1})
    assert json.loads((tmp_path / "doc.json").read_text()) == {"spec": {"base_url": "http://h/?api_key=***"},
                                                               "***": 1}
    write_json_lines(tmp_path / "items.jsonl", [{"id": key}])
    assert json.loads((tmp_path / "items.jsonl").read_text()) == {"id": key}
