"""Build a tiny, randomly initialised checkpoint of a real architecture, locally.

No weights can be downloaded in tests or the demo, so framesweep builds its own:
a byte-level BPE tokenizer trained on locally generated text (with the family's
special tokens and chat template), a config of the real architecture with tiny
dimensions, random weights from a fixed seed, and the matching processor. vLLM
loads it like any Hugging Face checkpoint. Random weights give near-flat logits:
use it to test the pipeline, never to read answers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from engine.registry import Registry
from engine.runtime.atomic import atomic_dir, exclusive_lock
from engine.runtime.output import json_line
from engine.runtime.paths import TINY_BUILD_VERSION as BUILD_VERSION
from engine.runtime.paths import TRAINED_WEIGHTS, tiny_checkpoint_dir

__all__ = ["BUILDERS", "SEEN_LAYERS", "SEEN_VISION", "SEEN_WEIGHTS", "build_full_shape_config", "build_tiny_checkpoint",
           "qwen2_5_vl_parts", "register_tiny_builder"]

log = logging.getLogger(__name__)

Builder = Callable[[Path, int], None]
"""`build(out, seed)`: write a tiny checkpoint of one family into the folder `out`."""

BUILDERS: Registry[Builder] = Registry("tiny checkpoint builder")
"""Model family -> the builder of its tiny checkpoint (`tiny:<family>` in a spec)."""


def register_tiny_builder(family: str) -> Callable[[Builder], Builder]:
    """Register the tiny checkpoint builder of `family` (a family registered twice is an error)."""
    return BUILDERS.decorator(family)

_MARKER = "framesweep-tiny.json"

QWEN_SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
]

# The Qwen2-VL chat template, reduced to what framesweep sends (text, image, video parts).
QWEN_VL_CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content or 'video_url' in content %}"
    "{% set video_count.value = video_count.value + 1 %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}"
    "{% endfor %}<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _corpus() -> list[str]:
    """Local training text: benchmark-like questions, option lists, digits and letters."""
    from engine.demo.videos import COLOURS, MCQ_INSTRUCTION, SHAPES

    words = list(COLOURS) + list(SHAPES) + ["video", "frame", "question", "answer", "option", "white", "square"]
    lines = [MCQ_INSTRUCTION, "The best answer is:", "Best Option: (", "You are a helpful assistant."]
    for i, w in enumerate(words * 20):
        lines.append(f"{chr(65 + i % 8)}. {w} {i} {words[(i * 7) % len(words)]} the {w}s")
    lines += [" ".join(str(d) for d in range(k, k + 10)) for k in range(100)]
    lines += [chr(c) * 3 for c in range(32, 127)]
    return lines


def _train_tokenizer(vocab_size: int):  # type: ignore[no-untyped-def]
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=QWEN_SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    return tok


def _qwen_tokenizer(vocab_size: int = 2000):  # type: ignore[no-untyped-def]
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_object=_train_tokenizer(vocab_size),
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        model_max_length=32768,
    )
    tok.chat_template = QWEN_VL_CHAT_TEMPLATE
    return tok


# Dimensions the CPU attention backend accepts (head size 32), about 1M parameters.
_TINY_VISION = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 128,
                "spatial_merge_size": 2, "temporal_patch_size": 2}


def _tiny_text(vocab: int, ids: dict[str, int], **over: object) -> dict[str, object]:
    """A tiny Qwen text tower: 2 layers, hidden 128, 4 heads (head size 32), 2 KV heads."""
    return {"vocab_size": vocab, "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 32768,
            "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"], **over}


def qwen2_5_vl_parts(vision: dict[str, object] | None = None, layers: int = 2):  # type: ignore[no-untyped-def]
    """(config, processor, tokenizer) of the tiny Qwen2.5-VL: `vision` overrides the vision tower's
    dimensions, `layers` sets the text tower's depth (the trained checkpoint's are larger)."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLProcessor, Qwen2VLImageProcessor, Qwen2VLVideoProcessor

    tok = _qwen_tokenizer()
    ids = {t: tok.convert_tokens_to_ids(t) for t in QWEN_SPECIAL_TOKENS}
    config = Qwen2_5_VLConfig(
        text_config=_tiny_text(len(tok), ids, max_window_layers=layers, num_hidden_layers=layers,
                               rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0,
                                                "mrope_section": [4, 6, 6]}),
        vision_config={
            **_TINY_VISION,
            "patch_size": 14,
            "window_size": 112,
            "fullatt_block_indexes": [1],
            "tokens_per_second": 2,
            **(vision or {}),
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=True,
    )
    config.architectures = ["Qwen2_5_VLForConditionalGeneration"]
    image_proc = Qwen2VLImageProcessor(min_pixels=56 * 56, max_pixels=448 * 448)
    video_proc = Qwen2VLVideoProcessor(min_pixels=56 * 56, max_pixels=448 * 448, do_sample_frames=False)
    processor = Qwen2_5_VLProcessor(
        image_processor=image_proc, tokenizer=tok, video_processor=video_proc, chat_template=QWEN_VL_CHAT_TEMPLATE
    )
    return config, processor, tok


@register_tiny_builder("qwen2_5_vl")
def _build_qwen2_5_vl(out: Path, seed: int) -> None:
    import torch
    from transformers import Qwen2_5_VLForConditionalGeneration

    config, processor, tok = qwen2_5_vl_parts()
    torch.manual_seed(seed)
    model = Qwen2_5_VLForConditionalGeneration(config).to(torch.float32).eval()
    model.save_pretrained(out)
    processor.save_pretrained(out)
    tok.save_pretrained(out)


SEEN_VISION: dict[str, object] = {"hidden_size": 64, "intermediate_size": 128}
SEEN_LAYERS = 4
"""The trained tiny Qwen2.5-VL's dimensions (vision 64 wide, 4 text layers; about 1M parameters)."""
SEEN_WEIGHTS = TRAINED_WEIGHTS / "qwen2_5_vl_seen.safetensors"
"""The trained weights, committed beside the code; `tools/train_tiny.py` regenerates them."""


@register_tiny_builder("qwen2_5_vl_seen")
def _build_qwen2_5_vl_seen(out: Path, seed: int) -> None:
    """The tiny Qwen2.5-VL trained on the synthetic benchmark (v2) by `tools/train_tiny.py`: it sees."""
    import torch
    from safetensors.torch import load_file
    from transformers import Qwen2_5_VLForConditionalGeneration

    if not SEEN_WEIGHTS.exists():
        raise FileNotFoundError(f"{SEEN_WEIGHTS} is missing: run tools/train_tiny.py to train it")
    config, processor, tok = qwen2_5_vl_parts(SEEN_VISION, SEEN_LAYERS)
    model = Qwen2_5_VLForConditionalGeneration(config).to(torch.float32).eval()
    state = load_file(str(SEEN_WEIGHTS))
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or [k for k in missing if k != "lm_head.weight"]:
        raise ValueError(f"{SEEN_WEIGHTS} does not fit the architecture: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    model.save_pretrained(out)
    processor.save_pretrained(out)
    tok.save_pretrained(out)


@register_tiny_builder("qwen3_vl")
def _build_qwen3_vl(out: Path, seed: int) -> None:
    import torch
    from transformers import (
        Qwen2VLImageProcessor,
        Qwen3VLConfig,
        Qwen3VLForConditionalGeneration,
        Qwen3VLProcessor,
        Qwen3VLVideoProcessor,
    )

    tok = _qwen_tokenizer()
    ids = {t: tok.convert_tokens_to_ids(t) for t in QWEN_SPECIAL_TOKENS}
    config = Qwen3VLConfig(
        text_config=_tiny_text(len(tok), ids, head_dim=32,
                               rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0,
                                                "mrope_section": [6, 5, 5], "mrope_interleaved": True}),
        vision_config={
            **_TINY_VISION,
            "patch_size": 16,
            "num_position_embeddings": 576,
            "deepstack_visual_indexes": [1],
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=True,
    )
    config.architectures = ["Qwen3VLForConditionalGeneration"]
    torch.manual_seed(seed)
    Qwen3VLForConditionalGeneration(config).to(torch.float32).eval().save_pretrained(out)
    image_proc = Qwen2VLImageProcessor(patch_size=16, merge_size=2, min_pixels=64 * 64, max_pixels=512 * 512)
    # A high total-pixel cap: resolution stays what framesweep sent, whatever the frame count.
    video_proc = Qwen3VLVideoProcessor(size={"shortest_edge": 64 * 64, "longest_edge": 256 * 512 * 512},
                                       do_sample_frames=False)
    Qwen3VLProcessor(image_processor=image_proc, tokenizer=tok, video_processor=video_proc,
                     chat_template=QWEN_VL_CHAT_TEMPLATE).save_pretrained(out)
    tok.save_pretrained(out)


LLAVA_CHAT_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'system' %}{{ message['content'] }} "
    "{% elif message['role'] == 'user' %}USER: {% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for c in message['content'] %}{% if c['type'] in ['video', 'video_url'] %}<video>\n"
    "{% elif c['type'] in ['image', 'image_url'] %}<image>\n{% elif c['type'] == 'text' %}{{ c['text'] }}"
    "{% endif %}{% endfor %}{% endif %} {% elif message['role'] == 'assistant' %}ASSISTANT:{{ message['content'] }}"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)


def _nest_clip_weights(path: Path) -> None:
    """Store the CLIP tower under `vision_tower.vision_model.*`, the layout LLaVA checkpoints (and vLLM) use."""
    from safetensors.torch import load_file, save_file

    tensors = load_file(path)
    renamed = {
        (k.replace("vision_tower.", "vision_tower.vision_model.", 1)
         if k.startswith("vision_tower.") and not k.startswith("vision_tower.vision_model.") else k): v
        for k, v in tensors.items()
    }
    save_file(renamed, path, metadata={"format": "pt"})


@register_tiny_builder("llava_next_video")
def _build_llava_next_video(out: Path, seed: int) -> None:
    import torch
    from tokenizers import Tokenizer
    from transformers import (
        LlavaNextImageProcessor,
        LlavaNextVideoConfig,
        LlavaNextVideoForConditionalGeneration,
        LlavaNextVideoProcessor,
        LlavaNextVideoVideoProcessor,
        PreTrainedTokenizerFast,
    )

    base: Tokenizer = _train_tokenizer(2000)
    base.add_special_tokens(["<s>", "</s>", "<unk>", "<video>", "<image>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=base, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                  pad_token="<unk>", model_max_length=4096)
    tok.chat_template = LLAVA_CHAT_TEMPLATE
    # vLLM needs image_size >= patch_size**2; 14 x 14 patches per frame, pooled to 7 x 7 video tokens
    size = 196
    config = LlavaNextVideoConfig(
        text_config={"model_type": "llama", "vocab_size": len(tok), "hidden_size": 128, "intermediate_size": 256,
                     "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                     "max_position_embeddings": 4096, "bos_token_id": tok.bos_token_id,
                     "eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id},
        vision_config={"model_type": "clip_vision_model", "hidden_size": 64, "intermediate_size": 128,
                       "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": size, "patch_size": 14,
                       "projection_dim": 64},
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        video_token_index=tok.convert_tokens_to_ids("<video>"),
        image_grid_pinpoints=[[size, size]],
        image_seq_length=(size // 14) ** 2,
        video_seq_length=(size // 28) ** 2,
        vision_feature_layer=-1,
    )
    config.architectures = ["LlavaNextVideoForConditionalGeneration"]
    torch.manual_seed(seed)
    LlavaNextVideoForConditionalGeneration(config).to(torch.float32).eval().save_pretrained(out)
    _nest_clip_weights(out / "model.safetensors")
    resize = {"shortest_edge": size}
    crop = {"height": size, "width": size}
    LlavaNextVideoProcessor(
        video_processor=LlavaNextVideoVideoProcessor(size=resize, crop_size=crop),
        image_processor=LlavaNextImageProcessor(size=resize, crop_size=crop, image_grid_pinpoints=[[size, size]]),
        tokenizer=tok, patch_size=14, vision_feature_select_strategy="default", num_additional_image_tokens=1,
        chat_template=LLAVA_CHAT_TEMPLATE,
    ).save_pretrained(out)
    tok.save_pretrained(out)


@register_tiny_builder("llava_1_5")
def _build_llava_1_5(out: Path, seed: int) -> None:
    """LLaVA-1.5 in the llava-hf layout: a CLIP tower, a 2-layer MLP projector and a Llama text model.

    The real model has 336 px images in 14 px patches (576 tokens each); the tiny one keeps the
    structure with 64 px images in 8 px patches (64 tokens per image, CLS dropped by the "default"
    feature strategy), head size 32 everywhere.
    """
    import torch
    from tokenizers import Tokenizer
    from transformers import (
        CLIPImageProcessor,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    base: Tokenizer = _train_tokenizer(2000)
    base.add_special_tokens(["<s>", "</s>", "<unk>", "<image>", "<pad>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=base, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                  pad_token="<pad>", model_max_length=4096)
    tok.chat_template = LLAVA_CHAT_TEMPLATE
    size, patch = 64, 8  # vLLM wants image_size >= patch_size ** 2
    config = LlavaConfig(
        text_config={"model_type": "llama", "vocab_size": len(tok), "hidden_size": 128, "intermediate_size": 256,
                     "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4,
                     "max_position_embeddings": 4096, "bos_token_id": tok.bos_token_id,
                     "eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id},
        vision_config={"model_type": "clip_vision_model", "hidden_size": 64, "intermediate_size": 128,
                       "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": size, "patch_size": patch,
                       "projection_dim": 64},
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        image_seq_length=(size // patch) ** 2,
        vision_feature_layer=-2,
        vision_feature_select_strategy="default",
        projector_hidden_act="gelu",
    )
    config.architectures = ["LlavaForConditionalGeneration"]
    torch.manual_seed(seed)
    LlavaForConditionalGeneration(config).to(torch.float32).eval().save_pretrained(out)
    _nest_clip_weights(out / "model.safetensors")
    LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": size}, crop_size={"height": size, "width": size}),
        tokenizer=tok, patch_size=patch, vision_feature_select_strategy="default", num_additional_image_tokens=1,
        chat_template=LLAVA_CHAT_TEMPLATE,
    ).save_pretrained(out)
    tok.save_pretrained(out)


# The published architecture of Qwen2.5-VL-7B-Instruct (its config.json), for full-size shapes with
# vLLM's load_format="dummy" (random weights from the config: real-scale throughput, no download).
QWEN25_VL_7B = {
    "text": {"hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
             "num_key_value_heads": 4, "max_position_embeddings": 128000, "max_window_layers": 28,
             "vocab_size": 152064, "rms_norm_eps": 1e-6,
             "rope_parameters": {"rope_type": "default", "rope_theta": 1_000_000.0, "mrope_section": [16, 24, 24]}},
    "vision": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16, "out_hidden_size": 3584,
               "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "window_size": 112,
               "fullatt_block_indexes": [7, 15, 23, 31], "tokens_per_second": 2, "hidden_act": "silu"},
}


def build_full_shape_config(out: Path, dtype: str = "bfloat16") -> Path:
    """A Qwen2.5-VL-7B-shaped checkpoint directory without weights: the real architecture config,
    the locally built tokenizer and processor. Load it with vLLM's `load_format="dummy"`."""
    from transformers import AutoProcessor, Qwen2_5_VLConfig

    tiny = build_tiny_checkpoint("qwen2_5_vl")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    processor = AutoProcessor.from_pretrained(tiny)
    processor.save_pretrained(out)
    tok = processor.tokenizer
    ids = {t: tok.convert_tokens_to_ids(t) for t in QWEN_SPECIAL_TOKENS}
    text = {**QWEN25_VL_7B["text"], "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"]}
    config = Qwen2_5_VLConfig(
        text_config=text, vision_config=QWEN25_VL_7B["vision"], image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"], tie_word_embeddings=False, dtype=dtype,
    )
    config.architectures = ["Qwen2_5_VLForConditionalGeneration"]
    config.save_pretrained(out)
    return out


TRAINED: dict[str, Path] = {"qwen2_5_vl_seen": SEEN_WEIGHTS}
"""Tiny checkpoints built around committed trained weights (their folder's name carries the weights' digest:
`engine.runtime.paths.tiny_checkpoint_dir`)."""


def build_tiny_checkpoint(family: str, out: Path | None = None, seed: int = 0, force: bool = False) -> Path:
    """Build (once) and return the directory of a tiny checkpoint of `family`."""
    build = BUILDERS.get(family)  # an unknown family fails here, listing the known ones
    out = Path(out) if out is not None else tiny_checkpoint_dir(family, seed)
    marker = out / _MARKER
    if marker.exists() and not force:
        return out
    # two processes asking at once: one builds, the other finds it built (without the lock, a second builder's
    # folder would replace the first one's whole while an engine loads from it)
    with exclusive_lock(out.parent / f".{out.name}.lock"):
        if marker.exists() and not force:
            return out
        log.info("building tiny %s checkpoint in %s", family, out)
        with atomic_dir(out) as tmp:
            build(tmp, seed)
            (tmp / _MARKER).write_text(json_line({"family": family, "seed": seed, "build_version": BUILD_VERSION}))
    return out

