"""The results page's Python snippet reads a results directory as the CLI does (foreign shards left out)."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from pathlib import Path

from helpers.metric_rows import frame
from typer.testing import CliRunner

from engine.cli import app
from engine.results.store import ResultStore, latest_rows, scan_results

README = Path(__file__).resolve().parents[2] / "docs" / "results-format.md"  # the results page
runner = CliRunner()


def _rows(sweep: str, items: str) -> list:
    rows = frame({i: "10" for i in items}, budgets={"text": 0, "f4": 4})
    for r in rows:
        r.sweep_id = sweep
    return rows


def test_the_readme_snippet_counts_what_status_counts(tmp_path: Path) -> None:
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    for out, sweep, items in ((mine, "mine", "abc"), (theirs, "theirs", "xyzw")):
        with ResultStore(out) as store:
            store.write_manifest({"sweep_id": sweep, "expected_by_dataset": {"d": {"m": {"text": 3, "f4": 3}}}})
            store.add(_rows(sweep, items))
            store.commit()
    for shard in (theirs / "results").glob("part-*.parquet"):  # another sweep's shard copied in
        shutil.copy(shard, mine / "results" / shard.name)
    snippet = next(b for b in re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL) if "ResultsDir" in b)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(snippet.replace('"runs/demo"', repr(str(mine))), {})  # noqa: S102 - the README's own code
    assert printed.getvalue().split()[:1] == ["6"] and "1 shard(s) of another sweep" in printed.getvalue()
    status = runner.invoke(app, ["status", str(mine)])
    assert "6 done, 0 failed, 0 pending" in status.output, status.output
    assert latest_rows(scan_results(mine)).collect().height == 14  # what the README used to show counts both

