"""`framesweep datasets` and `framesweep inspect`: what adapters exist, and what a spec would run."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from engine.cli._console import UNWRAPPED, console, fail

if TYPE_CHECKING:
    from engine.config.catalog import AdapterInfo
    from engine.sweep.survey import DatasetSurvey

__all__ = ["register"]


_MISSING_SHOWN = 10
_PLAIN_WIDTH = 80
"""The width of `datasets NAME` in a file or a pipe without `COLUMNS` (its descriptions are paragraphs)."""


def datasets(
    name: Annotated[str | None, typer.Argument(help="Show this adapter's fields: type, default, description.")] = None,
    lmms_eval: Annotated[bool, typer.Option("--lmms-eval", help="List the tasks of the installed lmms-eval and "
                                            "whether the `lmms_eval` adapter runs each (and why not).")] = False,
    include_path: Annotated[Path | None, typer.Option("--include-path", metavar="DIR", help="With --lmms-eval: "
                                                      "a folder of your own lmms-eval task YAMLs too.")] = None,
) -> None:
    """List the dataset adapters (name, version, fields); `framesweep datasets NAME` describes one adapter's fields."""
    from engine.config.catalog import describe_adapters

    if lmms_eval:
        _lmms_eval_tasks(include_path)
        return
    infos = describe_adapters()
    if name is None:  # one narrow table, readable at 80 columns
        t = Table(title="dataset adapters ([dataset] name = ...)", title_justify="left", title_style="bold")
        for col in ("name", "version", "fields (* required)"):
            t.add_column(col, overflow="fold")
        for info in infos:
            t.add_row(info.name, info.version,
                      ", ".join(f.name + ("*" if f.required else "") for f in info.fields if f.name != "name"))
        console.print(t)
        console.print("framesweep datasets NAME: each field's type, default and description", style="dim")
        return
    infos = [i for i in infos if i.name == name]
    if not infos:
        known = ", ".join(i.name for i in describe_adapters())
        fail(f"unknown dataset {name!r}; known: {known}")
        raise typer.Exit(2)
    for info in infos:
        if console.is_terminal:
            _print_field_table(info)
        else:
            _print_field_blocks(info)
        _print_source(info.name)


def _lmms_eval_tasks(include_path: Path | None) -> None:
    """`datasets --lmms-eval`: every task of the installed lmms-eval, and whether the bridge runs it."""
    from rich.markup import escape

    from engine.datasets._lmms_tasks import INSTALL_HINT, installed_version, list_tasks

    version = installed_version()
    if version is None:
        fail(f"lmms-eval is not installed: {INSTALL_HINT}")
        raise typer.Exit(2)
    tasks = list_tasks(include_path)
    t = Table(title=f"lmms-eval {version} tasks ([dataset] name = \"lmms_eval\", task = ...)", title_justify="left",
              title_style="bold")
    for col in ("task", "bridge", "why not"):
        t.add_column(col, overflow="fold")
    for task in tasks:
        t.add_row(escape(task.task), "runs" if task.runs else "no", escape(task.reason))
    console.print(t)
    runs = sum(task.runs for task in tasks)
    console.print(f"{runs} of {len(tasks)} tasks pass the bridge's checks of their YAML; `framesweep inspect` loads "
                  "the task and checks the rest (each document's visual is one video or image: a file, or a PIL "
                  "image written to the image cache; no LLM judge in its process_results)", soft_wrap=True)


def _width() -> int:
    """The width of `datasets NAME`: the terminal's, `COLUMNS`, else 80 (a file or a pipe)."""
    return console.width if console.width < UNWRAPPED else _PLAIN_WIDTH


def _say(text: str, indent: str = "", style: str | None = None) -> None:
    """A paragraph wrapped at `_width()` (paths and ids never split)."""
    for line in textwrap.wrap(text, _width(), initial_indent=indent, subsequent_indent=indent or "  ",
                              break_long_words=False, break_on_hyphens=False) or [""]:
        console.print(line, soft_wrap=True, style=style)


def _print_field_table(info: AdapterInfo) -> None:
    t = Table(title=f"{info.name} ({info.version}): {info.summary}", title_justify="left", title_style="bold")
    for col in ("field", "type", "default", "description"):
        t.add_column(col, overflow="fold")
    for f in info.fields:
        t.add_row(f.name, f.type, "required" if f.required else f.default, f.description)
    console.print(t)


def _print_field_blocks(info: AdapterInfo) -> None:
    """Off a terminal: one block per field (its name, type and default, then its description indented), every
    line within `_width()` columns, so a pipe, a pager or a file reads it as it is."""
    _say(f"{info.name} ({info.version}): {info.summary}", style="bold")
    for f in info.fields:
        console.print()
        _say(f"{f.name}: {f.type}; " + ("required" if f.required else f"default {f.default}"), indent="")
        _say(f.description, indent="    ")
    console.print()


def _print_source(name: str) -> None:
    """Where the benchmark comes from, and the layout `run --data DIR` expects."""
    from engine.datasets.sources import known_sources

    src = known_sources().get(name)
    if src is None:
        return
    how = f"framesweep fetch {name} --to DIR" if src.fetchable else "by hand"
    _say(f"source: {src.where} ({how}){'; ' + src.note if src.note else ''}")
    _say("layout under --data DIR: " + ", ".join(f"{k} = DIR/{v}" if v != "." else f"{k} = DIR"
                                                 for k, v in src.layout.items()))


def _print_survey(s: DatasetSurvey) -> None:
    console.print(f"{s.dataset} ({s.version}): {s.n_items} items; "
                  + ", ".join(f"{k} {v}" for k, v in s.by_kind.items()))
    t = Table(title="items per task")
    t.add_column("task")
    t.add_column("items", justify="right")
    for task, n in s.by_task.items():
        t.add_row(task, str(n))
    console.print(t)
    kinds = ", ".join(f"{k} {v}" for k, v in s.media_kind.items()) or "none"
    absent = {} if s.media_written_by_run else s.media_missing
    console.print(f"media ({kinds}): {s.media_found} found, {len(s.media_missing)} missing"
                  + (" (written by the first run)" if s.media_written_by_run else ""),
                  style="yellow" if absent else "green")
    for path, ids in list(absent.items())[:_MISSING_SHOWN]:
        shown = ", ".join(ids[:3]) + (", ..." if len(ids) > 3 else "")
        console.print(f"  missing: {path} ({len(ids)} item(s): {shown})")
    if len(absent) > _MISSING_SHOWN:
        console.print(f"  ... and {len(absent) - _MISSING_SHOWN} more (their jobs become error rows)")
    if s.subtitles_total:
        console.print(f"subtitles: {s.subtitles_found} found, {s.subtitles_total - s.subtitles_found} missing")
    if s.problems:
        console.print(f"{len(s.problems)} bad row(s) skipped (strict = false):", style="yellow")
        for p in s.problems[:_MISSING_SHOWN]:
            console.print(f"  {p}")
    t = Table(title="jobs: items x budgets within max_frames")
    for col in ("model", "budgets", "jobs"):
        t.add_column(col, justify="right" if col == "jobs" else "left")
    for model, n in s.jobs_by_model.items():
        t.add_row(model, " ".join(s.budgets_by_model[model]), str(n))
    t.add_row("total", "", str(s.jobs_total), style="bold")
    console.print(t)


EXIT_MEDIA_MISSING = 6
"""`inspect`: the spec would run, but some items' media are missing: `run` would fail their jobs for good (its exit 6
when nothing else fails)."""


def inspect(
    spec_path: Annotated[Path, typer.Argument(metavar="SPEC.toml", help="Sweep spec (TOML).")],
) -> None:
    """Before running: item counts, media found / missing, and the job count the grid implies. Runs `run`'s
    preflight (families, model paths, decoder, ...): exit 2 where `run` would stop, 6 when media are missing."""
    from engine.config import SpecError, load_spec
    from engine.datasets.errors import DatasetError
    from engine.sweep.preflight import preflight
    from engine.sweep.survey import survey

    try:
        spec = load_spec(spec_path, writes=False)  # [store] may be left to the run's --out
        preflight(spec, str(spec_path))
        surveys = survey(spec)
    except (SpecError, DatasetError) as err:
        fail(err)  # messages hold paths with [brackets]: printed literally
        raise typer.Exit(2) from None
    for s in surveys:
        _print_survey(s)
    if len(surveys) > 1:
        console.print(f"{len(surveys)} datasets: {sum(s.jobs_total for s in surveys)} jobs in all")
    missing = sum(len(s.media_missing) for s in surveys if not s.media_written_by_run)
    if missing:
        fail(f"{spec_path}: {missing} media file(s) missing: their jobs would be error rows")
        raise typer.Exit(EXIT_MEDIA_MISSING)


def fetch(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Dataset adapter (`framesweep datasets`).")],
    to: Annotated[Path, typer.Option("--to", metavar="DIR", help="Folder to lay the release out in (its files "
                                     "linked to the Hugging Face cache, its archives unpacked).")],
    revision: Annotated[str | None, typer.Option("--revision", help="A branch, tag or commit of the "
                                                 "release.")] = None,
) -> None:
    """Download a benchmark's public release through huggingface_hub and lay it out for `run --data DIR`.

    The hub's own settings apply (HF_TOKEN, HF_HUB_CACHE, HF_HUB_OFFLINE). Exit codes: 0 laid out; 2 an unknown
    dataset, or one that is not on the hub (its source is named); 1 the download or an archive failed.
    """
    from engine.datasets.sources import FetchError, get_source
    from engine.datasets.sources import fetch as run_fetch

    try:
        src = get_source(name)
    except KeyError as err:
        fail(err.args[0])
        raise typer.Exit(2) from None
    if not src.fetchable:
        fail(f"{name}: {src.where} is not fetched automatically ({src.note})")
        raise typer.Exit(2)
    try:
        fields = run_fetch(name, to, revision=revision)
    except FetchError as err:
        fail(err)
        raise typer.Exit(1) from None
    console.print(f"{name}: {src.where} laid out in {to}", soft_wrap=True)
    for field, value in fields.items():
        console.print(f"  {field} = {value}", soft_wrap=True)
    console.print(f"run it: framesweep run --model PATH --dataset {name} --data {to} --frames 0,8,32 --limit 20 "
                  "--out OUT", soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add `datasets`, `inspect` and `fetch` to the framesweep app."""
    app.command("datasets")(datasets)
    app.command("inspect")(inspect)
    app.command("fetch")(fetch)
