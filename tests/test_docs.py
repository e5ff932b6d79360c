"""The README and docs/ say only what exists: every `framesweep` command and flag they use is one the CLI's parser
has (built in-process, no process started), every repository path and module they name is there, every link
resolves, and the README stays short."""

from __future__ import annotations

import importlib
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer.main

from engine.cli import app

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
SPAN = re.compile(r"`([^`\n]+(?:\n[^`\n]+)?)`")  # an inline code span may wrap onto a second line
ROOTS = ("engine/", "tests/", "benchmarks/", "tools/", "grids/", "docs/", ".ci/")
TOP_FILES = {"README.md", "ARCHITECTURE.md", "pyproject.toml", "docker-compose.yml", "Dockerfile"}
STOP = {"|", ";", "&&", "||", ">", "2>&1", "&", "#", ")"}


def _texts(page: Path) -> tuple[list[str], list[str]]:
    """The page's fenced code blocks (continuation lines joined) and its inline code spans outside them."""
    text = page.read_text()
    blocks = [b.replace("\\\n", " ") for b in FENCE.findall(text)]
    spans = [" ".join(s.split()) for s in SPAN.findall(FENCE.sub("", text))]
    return blocks, spans


def _commands(page: Path) -> list[str]:
    """Every `framesweep ...` command line the page gives, in a code block or an inline code span, and every span
    that starts with a command's name and gives a flag (`figures OUT --to DIR`)."""
    blocks, spans = _texts(page)
    lines = [line.split(" #")[0] for block in blocks for line in block.splitlines()] + spans
    names = set(_root().commands)
    found = [f"framesweep {s}" for s in spans if s.split(" ")[0] in names and " -" in s]  # `figures OUT --to DIR`
    for line in lines:
        for m in re.finditer(r"(?:^|[\s/(])framesweep((?: [^\s]+)*)", line):
            found.append("framesweep" + m.group(1))
    return found


def _root() -> Any:
    """The CLI's parser as typer builds it (a command group with `.commands`; commands with `.params`)."""
    return typer.main.get_command(app)


def _is_group(command: Any) -> bool:
    return hasattr(command, "commands")


def _flags(command: Any) -> set[str]:
    return {o for p in command.params for o in (*p.opts, *p.secondary_opts) if o.startswith("-")} | {"-h", "--help"}


def _check(command_line: str, root: Any) -> list[str]:
    """What in one documented command line the parser does not have (empty: all of it exists)."""
    try:
        words = shlex.split(command_line, comments=True)
    except ValueError:
        words = command_line.split()
    words = words[1:]
    command = root
    problems = []
    for i, word in enumerate(words):
        if word in STOP or word.startswith(("#", ">")):
            break
        word = word.strip("[]()`,;.")
        if word.startswith("-") and len(word) > 1 and not word[1].isdigit():
            flag = word.split("=")[0]
            if flag not in _flags(command):
                problems.append(f"{flag} is no option of `{command.name}`")
        elif _is_group(command) and (i == 0 or command is not root):
            if re.fullmatch(r"[a-z][a-z0-9-]*", word) and word in command.commands:
                command = command.commands[word]
            elif command is root and re.fullmatch(r"[a-z][a-z0-9-]*", word):
                problems.append(f"{word!r} is no framesweep command")
                break
            elif command is root:
                break  # prose such as `framesweep's`: no command given
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_documented_command_and_flag_exists(page: Path) -> None:
    root = _root()
    problems = [f"`{line}`: {why}" for line in _commands(page) for why in _check(line, root)]
    assert problems == [], f"{page.name} documents what the CLI does not have:\n" + "\n".join(problems)


def test_the_command_check_finds_a_missing_flag_and_command() -> None:
    """The checker itself: a flag or command the parser lacks is reported, a real one is not."""
    root = _root()
    assert _check("framesweep run SPEC --out runs/x --limit 20", root) == []
    assert _check("framesweep engines up SPEC --dashboard", root) == []
    assert _check("framesweep compact OUT [--grace-s S]", root) == []
    assert _check("framesweep run SPEC --no-such-flag", root) == ["--no-such-flag is no option of `run`"]
    assert _check("framesweep export OUT --items x", root) == ["--items is no option of `export`"]
    assert _check("framesweep frobnicate OUT", root) == ["'frobnicate' is no framesweep command"]
    assert _check("framesweep engines sideways", root) == []  # a positional word: not checked
    assert _check("framesweep --version", root) == []


def _paths(page: Path) -> set[str]:
    blocks, spans = _texts(page)
    words = {w.strip("`'\",;:()") for b in blocks for w in b.split()} | {s.strip() for s in spans}
    return {w for w in words if (w.startswith(ROOTS) or w in TOP_FILES) and not set(w) & set(" <>")}  # <name>: a placeholder


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_repository_path_named_exists(page: Path) -> None:
    missing = sorted(p for p in _paths(page) if not (list(REPO.glob(p)) if "*" in p else (REPO / p).exists()))
    assert missing == [], f"{page.name} names files that are not in the repository: {missing}"


def _resolves(dotted: str) -> bool:
    """`engine.a.b.Name`: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_module_and_name_named_exists(page: Path) -> None:
    _, spans = _texts(page)
    dotted = {s for s in spans if re.fullmatch(r"engine(\.[A-Za-z_][A-Za-z0-9_]*)+", s)}
    assert sorted(d for d in dotted if not _resolves(d)) == [], f"{page.name} names modules or names that do not exist"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_link_resolves(page: Path) -> None:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", FENCE.sub("", page.read_text()))
    local = [link for link in links if "://" not in link]
    assert sorted(link for link in local if not (page.parent / link).exists()) == []


def test_the_readme_is_at_most_300_lines() -> None:
    n = len((REPO / "README.md").read_text().splitlines())
    assert n <= 300, f"README.md has {n} lines; move a subject into docs/ and link it"


def test_the_readme_links_every_docs_page() -> None:
    readme = (REPO / "README.md").read_text()
    assert sorted(p.name for p in (REPO / "docs").glob("*.md") if f"(docs/{p.name})" not in readme) == []


def test_export_help_and_the_results_page_name_every_file_of_the_artifact() -> None:
    """`export -h` and docs/results-format.md name the files `engine.export` writes (the help once left out
    videos.parquet)."""
    from engine.export import ARTIFACT

    export = _root().commands["export"]
    to_help = next(p for p in export.params if "--to" in p.opts)
    assert to_help.help is not None
    page = (REPO / "docs" / "results-format.md").read_text()
    assert [f for f in ARTIFACT if f not in to_help.help] == []
    assert [f for f in ARTIFACT if f"`{f}`" not in page] == []


def test_the_readme_layout_names_folders_and_modules_that_exist() -> None:
    """Each folder and module the Layout block lists is in the repository (it once listed `engine/spec/`)."""
    readme = (REPO / "README.md").read_text()
    block = FENCE.findall(readme[readme.index("## Layout"):])[0]
    missing = []
    for line in block.splitlines():
        if line.startswith("   "):
            continue  # a description's second line
        first = line.strip().split("  ")[0]
        base = REPO / "engine" if line.startswith("  ") else REPO
        for name in (n.strip() for n in first.split(",") if n.strip()):
            if name.endswith(("/", ".py")) and not (base / name).exists():
                missing.append(str((base / name).relative_to(REPO)))
    assert missing == []


def test_the_quickstart_gives_the_two_commands_and_ci_runs_the_second() -> None:
    readme = (REPO / "README.md").read_text()
    block = FENCE.findall(readme[readme.index("## Quickstart"):])[0]
    demo = "bash tools/setup.sh && .venv/bin/framesweep demo"
    suite = "FRAMESWEEP_EXTRA=lmms bash tools/setup.sh && .venv/bin/python -m pytest -n 2"  # with the bridge's tests
    assert block.splitlines() == [demo, suite]
    assert suite in (REPO / ".ci" / "run").read_text().splitlines()
