#!/usr/bin/env python
"""Build a tiny randomly initialised checkpoint of a real architecture, locally (no downloads).

    python tools/build_tiny_checkpoint.py qwen2_5_vl [--out DIR] [--seed 0] [--force]
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from engine.demo.tiny import BUILDERS, build_tiny_checkpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("family", choices=sorted(BUILDERS))
    parser.add_argument("--out", type=Path, default=None, help="target directory (default: the framesweep cache)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--force", action="store_true", help="rebuild even if it exists")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    print(build_tiny_checkpoint(args.family, args.out, args.seed, args.force))


if __name__ == "__main__":
    main()
