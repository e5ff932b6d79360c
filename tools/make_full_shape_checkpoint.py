#!/usr/bin/env python
"""Write a Qwen2.5-VL-7B-shaped checkpoint directory (config + local tokenizer/processor, no weights).

vLLM's `load_format="dummy"` fills it with random weights, so real-scale throughput can be measured
on a GPU without downloading anything:

    python tools/make_full_shape_checkpoint.py runs/qwen25vl-7b-shape
    python benchmarks/sweep_throughput.py --model runs/qwen25vl-7b-shape --load-format dummy \\
        --dtype bfloat16 --budgets 0,16,32,64 --max-pixels 200704
"""

from __future__ import annotations

import argparse
from pathlib import Path

from engine.demo.tiny import build_full_shape_config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--dtype", default="bfloat16")
    args = parser.parse_args()
    print(build_full_shape_config(args.out, args.dtype))


if __name__ == "__main__":
    main()
