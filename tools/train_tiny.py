"""Train the tiny Qwen2.5-VL that sees (`tiny:qwen2_5_vl_seen`) on the synthetic benchmark's v2 videos.

    .venv/bin/python tools/train_tiny.py                      # the committed weights (about an hour, 2 cores)
    .venv/bin/python tools/train_tiny.py --steps 3 --out /tmp/w.safetensors   # a quick determinism check

The architecture is the real `Qwen2_5_VLForConditionalGeneration` at the dimensions `engine.demo.tiny`
declares (`SEEN_VISION`, `SEEN_LAYERS`), with the demo tokenizer and processor. The training videos are
the project's own (`engine.demo.videos.seen_script`, rendered, written as H.264 by `write_h264` and decoded
by framesweep's PyAV decoder at full size and at half size, as a sweep does), drawn from a seed stream
(`TRAIN_KEY`) that no evaluation seed reaches: the benchmark's videos come from `default_rng([seed, index])`,
these from `default_rng([TRAIN_KEY, seed, index])`. Frames are picked as a sweep picks them (`uniform` and
`segment_centre` at 4, 8, 16 and 32 frames), prompts are the Qwen family's, and the loss is the
cross-entropy of the answer letter and the end-of-turn token over the whole vocabulary, so greedy
generation answers with one letter.

A curriculum: the one-frame questions (colours, shape, texture) first, then all five with flash counting
weighted up. The same seed, steps, thread count and library versions give the same weights: the digest
and the held-out accuracies are written beside them (`<out>.json`). `--work DIR` keeps a resumable state
every `--eval-every` steps, so a stopped run goes on where it was.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.demo.tiny import SEEN_LAYERS, SEEN_VISION, SEEN_WEIGHTS, qwen2_5_vl_parts
from engine.demo.videos import (
    QUESTIONS,
    SEEN_FPS,
    SEEN_FRAMES,
    SEEN_SIZE,
    answer_of,
    mcq_text,
    render_frames,
    seen_script,
    write_h264,
)
from engine.frames.plan import segment_centre, uniform

TRAIN_KEY = 7_357_001
"""First word of every training seed sequence: the evaluation streams ([seed, index]) never start with it."""
EVAL_SEED = 999
"""The held-out check's videos (the training tool's own, from a seed it never trains on)."""
LOW_SIZE = (SEEN_SIZE[0] // 2, SEEN_SIZE[1] // 2)
ONE_FRAME = ("first_colour", "last_colour", "static_shape", "texture")
KINDS = ("flash_count", *ONE_FRAME)
BUDGETS = (4, 8, 16, 32)
SYSTEM = "You are a helpful assistant."


def prompt(kind: str, answer: str | None = None) -> str:
    """The Qwen family's prompt for one question about one video (the answer appended when training)."""
    question, options = QUESTIONS[kind]
    text = (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n<|vision_start|><|video_pad|><|vision_end|>"
            f"{mcq_text(question, options)}<|im_end|>\n<|im_start|>assistant\n")
    return text if answer is None else text + answer + "<|im_end|>"


def mrope_positions(input_ids, attention_mask, video_grid_thw, second_per_grid_ts, video_token: int,
                    tokens_per_second: float, merge: int = 2):  # type: ignore[no-untyped-def]
    """Qwen2.5-VL's 3-D rotary positions as vLLM computes them (`get_mrope_input_positions`): text counts up,
    a video's tokens take (t * seconds-per-grid * tokens-per-second, h, w) from where the text stopped, and the
    text after it goes on from the largest position so far plus one. The model is trained on these, not on
    `transformers`' own (5.x starts the text after a video at the video's start plus its height or width,
    whatever its length), so that it answers in the engine as it did in training."""
    import torch

    batch, length = input_ids.shape
    out = torch.ones(3, batch, length, dtype=torch.long)
    for row in range(batch):
        keep = attention_mask[row].bool()
        ids = input_ids[row][keep].tolist()
        start = ids.index(video_token)
        t, h, w = (int(x) for x in video_grid_thw[row])
        h, w = h // merge, w // merge
        factor = float(second_per_grid_ts[row]) * tokens_per_second
        parts = [torch.arange(start).expand(3, -1)]
        grid = torch.stack(torch.meshgrid(torch.arange(t), torch.arange(h), torch.arange(w), indexing="ij")).reshape(3, -1)
        if factor != 1.0:
            grid[0] = (grid[0] * factor).long()
        parts.append(grid + start)
        after = len(ids) - start - t * h * w
        parts.append(torch.arange(after).expand(3, -1) + int(parts[-1].max()) + 1)
        out[:, row, keep] = torch.cat(parts, dim=1)
    return out


def decode_pool(key: list[int], n: int, log: bool = True) -> tuple[list, np.ndarray, np.ndarray]:
    """`n` videos of one seed stream: scripts, and every frame at full and at half size, through H.264."""
    from engine.frames.base import DecodeRequest
    from engine.frames.decode_pyav import PyAVDecoder

    decoder = PyAVDecoder()
    scripts, full, low = [], np.empty((n, SEEN_FRAMES, SEEN_SIZE[1], SEEN_SIZE[0], 3), np.uint8), \
        np.empty((n, SEEN_FRAMES, LOW_SIZE[1], LOW_SIZE[0], 3), np.uint8)
    every = np.arange(SEEN_FRAMES)
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            s = seen_script(np.random.default_rng([*key, i]), f"v{i}")
            path = Path(tmp) / "v.mp4"
            write_h264(path, render_frames(s), s.fps, s.width, s.height)
            batch = decoder.decode_frames(DecodeRequest(path, every, "pyav", None, {LOW_SIZE: every}))
            full[i] = batch.frames
            low[i] = np.stack([batch.extra[LOW_SIZE][int(j)] for j in every])
            scripts.append(s)
            if log and (i + 1) % 256 == 0:
                print(f"pool {i + 1}/{n}", flush=True)
    return scripts, full, low


class Trainer:
    def __init__(self, args: argparse.Namespace) -> None:
        import torch
        from transformers import Qwen2_5_VLForConditionalGeneration

        self.args, self.torch = args, torch
        torch.set_num_threads(args.threads)
        torch.use_deterministic_algorithms(True)
        config, self.processor, self.tok = qwen2_5_vl_parts(SEEN_VISION, SEEN_LAYERS)
        torch.manual_seed(args.seed)
        self.model = Qwen2_5_VLForConditionalGeneration(config).float()
        self.letters = [self.tok.convert_tokens_to_ids(x) for x in "ABCD"]
        self.end = self.tok.convert_tokens_to_ids("<|im_end|>")
        self.pool = decode_pool([TRAIN_KEY, args.seed], args.pool)
        self.held = decode_pool([TRAIN_KEY, EVAL_SEED], args.held, log=False)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
        warm, steps = 100, args.steps
        self.sched = torch.optim.lr_scheduler.LambdaLR(
            self.opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
        self.step = 0

    def inputs(self, pool: tuple[list, np.ndarray, np.ndarray], videos: list[int], kinds: list[str], n: int,
               low: bool, policy: str, answers: bool):  # type: ignore[no-untyped-def]
        scripts, full, small = pool
        idx = (uniform if policy == "uniform" else segment_centre)(SEEN_FRAMES, float(SEEN_FPS), n, 0)
        frames = [(small if low else full)[v][idx] for v in videos]
        texts, targets = [], []
        for v, kind in zip(videos, kinds):
            truth = answer_of(scripts[v], kind)
            letter = "ABCD"[QUESTIONS[kind][1].index(truth)]
            texts.append(prompt(kind, letter if answers else None))
            targets.append("ABCD".index(letter))
        meta = [{"fps": float(SEEN_FPS), "duration": SEEN_FRAMES / SEEN_FPS, "total_num_frames": SEEN_FRAMES,
                 "frames_indices": [int(i) for i in idx], "video_backend": "pyav"} for _ in videos]
        batch = self.processor(text=texts, videos=frames, video_metadata=meta, do_sample_frames=False,
                               padding=True, padding_side="left", return_tensors="pt")
        batch["position_ids"] = mrope_positions(
            batch["input_ids"], batch["attention_mask"], batch["video_grid_thw"], batch["second_per_grid_ts"],
            self.model.config.video_token_id, self.model.config.vision_config.tokens_per_second)
        return batch, self.torch.tensor(targets)

    def train_batch(self, rng: np.random.Generator):  # type: ignore[no-untyped-def]
        a = self.args
        if self.step < a.phase1:
            kinds = [ONE_FRAME[int(k)] for k in rng.integers(len(ONE_FRAME), size=a.batch)]
        else:
            p = np.array([a.flash_weight] + [(1 - a.flash_weight) / len(ONE_FRAME)] * len(ONE_FRAME))
            kinds = [KINDS[int(k)] for k in rng.choice(len(KINDS), size=a.batch, p=p)]
        videos = [int(v) for v in rng.integers(a.pool, size=a.batch)]
        n = int(rng.choice(BUDGETS))
        low = bool(rng.random() < 0.25)
        policy = "uniform" if rng.random() < 0.5 else "segment_centre"
        return self.inputs(self.pool, videos, kinds, n, low, policy, answers=True)

    def loss(self, batch):  # type: ignore[no-untyped-def]
        torch = self.torch
        logits = self.model(**batch).logits
        # left padding: the answer letter and <|im_end|> are the last two tokens of every row
        pred = logits[:, -3:-1].reshape(-1, logits.shape[-1])
        return torch.nn.functional.cross_entropy(pred, batch["input_ids"][:, -2:].reshape(-1))

    def evaluate(self) -> dict[str, float]:
        torch = self.torch
        self.model.eval()
        acc: dict[str, list[bool]] = collections.defaultdict(list)
        n_held = len(self.held[0])
        with torch.no_grad():
            for kind in KINDS:
                for n, low in ((4, False), (16, False), (16, True)):
                    for lo in range(0, n_held, 32):
                        videos = list(range(lo, min(n_held, lo + 32)))
                        batch, y = self.inputs(self.held, videos, [kind] * len(videos), n, low, "uniform", False)
                        out = self.model(**batch).logits[:, -1, self.letters]
                        acc[f"{kind}@{n}{'low' if low else ''}"] += (out.argmax(1) == y).tolist()
        self.model.train()
        return {k: round(float(np.mean(v)), 3) for k, v in acc.items()}

    def save_state(self, work: Path) -> None:
        work.mkdir(parents=True, exist_ok=True)
        tmp = work / "state.pt.tmp"
        self.torch.save({"step": self.step, "model": self.model.state_dict(), "opt": self.opt.state_dict(),
                         "sched": self.sched.state_dict()}, tmp)
        tmp.replace(work / "state.pt")

    def load_state(self, work: Path) -> None:
        state = self.torch.load(work / "state.pt", weights_only=False)
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["opt"])
        self.sched.load_state_dict(state["sched"])
        self.step = state["step"]
        print(f"resumed at step {self.step}", flush=True)

    def run(self) -> dict[str, float]:
        a = self.args
        if a.work and (a.work / "state.pt").exists():
            self.load_state(a.work)
        self.model.train()
        t0, ema = time.perf_counter(), None
        stop = min(a.steps, a.stop_after or a.steps)
        while self.step < stop:
            rng = np.random.default_rng([TRAIN_KEY, a.seed, 1, self.step])  # per step: resumes exactly
            batch, _ = self.train_batch(rng)
            loss = self.loss(batch)
            self.opt.zero_grad()
            loss.backward()
            self.torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.opt.step()
            self.sched.step()
            self.step += 1
            value = float(loss.detach())
            ema = value if ema is None else 0.95 * ema + 0.05 * value
            if self.step % 25 == 0:
                print(f"step {self.step} loss {ema:.3f} {time.perf_counter() - t0:.0f}s", flush=True)
            if a.eval_every and self.step % a.eval_every == 0:
                print(f"held-out step {self.step}: {self.evaluate()}", flush=True)
                if a.work:
                    self.save_state(a.work)
        if self.step < a.steps:  # --stop-after: keep the state, write no weights
            if a.work:
                self.save_state(a.work)
            return {}
        return self.evaluate()

    def weights(self) -> dict:  # type: ignore[type-arg]
        # tied embeddings: lm_head.weight is embed_tokens.weight, stored once
        return {k: v.detach().contiguous() for k, v in self.model.state_dict().items() if k != "lm_head.weight"}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", type=Path, default=SEEN_WEIGHTS, help="the weights file to write (.safetensors)")
    p.add_argument("--steps", type=int, default=2400)
    p.add_argument("--phase1", type=int, default=400, help="steps of one-frame questions only, first")
    p.add_argument("--flash-weight", type=float, default=0.4, help="share of flash-count questions after phase 1")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pool", type=int, default=1024, help="training videos (decoded once, reused)")
    p.add_argument("--held", type=int, default=64, help="held-out videos for the progress check")
    p.add_argument("--threads", type=int, default=2, help="torch threads (part of what makes a run reproducible)")
    p.add_argument("--eval-every", type=int, default=200)
    p.add_argument("--work", type=Path, default=None, help="folder for the resumable state")
    p.add_argument("--stop-after", type=int, default=None,
                   help="stop after this step, keeping the state in --work (a later run with the same settings goes on)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t0 = time.perf_counter()
    trainer = Trainer(args)
    held_out = trainer.run()
    if trainer.step < args.steps:
        print(f"stopped after step {trainer.step}; state kept in {args.work}", flush=True)
        return 3
    import torch
    import transformers
    from safetensors.torch import save_file

    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    save_file(trainer.weights(), str(tmp), metadata={"format": "pt"})
    tmp.replace(args.out)
    record = {"sha256": digest(args.out), "steps": args.steps, "phase1": args.phase1, "flash_weight": args.flash_weight,
              "batch": args.batch, "lr": args.lr, "seed": args.seed, "pool": args.pool, "threads": args.threads,
              "torch": torch.__version__, "transformers": transformers.__version__,
              "held_out_accuracy": held_out, "seconds": round(time.perf_counter() - t0)}
    args.out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
