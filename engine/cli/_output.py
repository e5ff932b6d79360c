"""How a command hands its JSON document over: `--json PATH` on every command that has one.

PATH is written atomically by the one JSON writer (`engine.runtime.output.write_json`: no NaN, the
same options everywhere); ``--json -`` prints the document to stdout instead of the command's
tables, for a pipe (``framesweep metrics OUT --json - | jq``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from engine.cli._checks import check_output
from engine.cli._console import console, fail, writing
from engine.runtime.output import JSONValueError, json_text, write_json
from engine.runtime.secrets import redact

__all__ = ["STDOUT", "JsonPath", "check_json", "emit_json", "to_stdout"]

STDOUT = "-"
"""The PATH of ``--json -``: the document on stdout, and nothing else there."""

JsonPath = Annotated[Path | None, typer.Option(
    "--json", metavar="PATH", help="Write the JSON document to PATH (-: print it to stdout instead of the tables).")]


def to_stdout(path: Path | None) -> bool:
    """Whether ``--json`` asks for the document on stdout (the command then prints no tables there)."""
    return path is not None and str(path) == STDOUT


def check_json(path: Path | None) -> None:
    """Exit 2 before any work when ``--json PATH`` cannot be written as a file (`check_output`)."""
    if not to_stdout(path):
        check_output("--json", path)


def emit_json(path: Path | None, doc: Any) -> None:
    """The document to PATH (then a line saying so) or to stdout; a value JSON cannot hold is named, exit 1; a PATH
    that cannot be written is named with the system's reason (`writing`: exit 5 on a full disk, else 1)."""
    if path is None:
        return
    try:
        if to_stdout(path):
            typer.echo(redact(json_text(doc, "the JSON document")))  # as `write_json` writes it to a file
            return
        with writing("the JSON document", path):
            write_json(path, doc)
    except JSONValueError as err:
        fail(err)
        raise typer.Exit(1) from None
    console.print(f"wrote {path}", soft_wrap=True)
