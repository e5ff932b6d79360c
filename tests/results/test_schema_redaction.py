"""Which columns of a stored row secret redaction may rewrite: the texts a server, an engine or an error wrote,
never a key column or what came from the dataset or the spec."""

from __future__ import annotations

import pytest
from helpers.metric_rows import row
from helpers.secrets import isolated_secrets

from engine.results.schema import KEY_COLUMNS, REDACTED_COLUMNS, RESULT_SCHEMA, rows_to_frame
from engine.runtime.secrets import register_secret

SECRET = "syn48213977-0001"  # a secret that is also (part of) a video's file name


def test_a_secret_in_a_key_or_dataset_column_is_kept_and_redacted_from_server_text(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A key inside a video file name turned `video_id` and `item_id` into `***`: those keys never matched their
    jobs again, so every rerun committed them again. Key columns and the dataset's columns are kept now; the
    same text in a reply, an error or the server's URL is still redacted."""
    isolated_secrets(monkeypatch)
    register_secret(SECRET)
    r = row("m", "d", f"{SECRET}/flash_count", "f4", 4, "1", video_id=SECRET, category=SECRET,
            answer=SECRET, group_id=SECRET, stage_path=["f4"], response=f"I see {SECRET}", pred=SECRET,
            pred_extracted=SECRET, score_detail=f'{{"pred": "{SECRET}"}}', worker=f"http://h/?key={SECRET}", engine_version=f"openai-http ({SECRET})",
            error=f"echo {SECRET}", error_type="X")
    frame = rows_to_frame([r])
    assert frame.row(0, named=True)["item_id"] == f"{SECRET}/flash_count"
    kept = {c: v for c, v in frame.row(0, named=True).items() if c not in REDACTED_COLUMNS}
    assert kept["video_id"] == kept["category"] == kept["answer"] == kept["group_id"] == SECRET
    redacted = {c: frame[c][0] for c in REDACTED_COLUMNS}
    assert redacted == {"response": "I see ***", "pred": "***", "pred_extracted": "***",
                        "score_detail": '{"pred": "***"}', "error_type": "X",
                        "error": "echo ***", "worker": "http://h/?key=***", "engine_version": "openai-http (***)"}
    assert not set(KEY_COLUMNS) & set(REDACTED_COLUMNS) and set(REDACTED_COLUMNS) <= set(RESULT_SCHEMA)
