"""`python -m engine.cli`: the same as the `framesweep` command."""

from engine.cli.app import main

main()
