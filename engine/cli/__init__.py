"""The `framesweep` command line: the app and its command groups, registered explicitly."""

from engine.cli.app import app, main

__all__ = ["app", "main"]
