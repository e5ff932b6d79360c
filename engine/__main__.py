"""`python -m engine`: the same as the `framesweep` command."""

from engine.cli import main

if __name__ == "__main__":
    main()
