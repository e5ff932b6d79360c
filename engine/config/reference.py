"""The spec reference, generated from the pydantic models: every field, its type, default and description.

`framesweep spec --reference` prints it (the copy in docs/spec-reference.md is checked against it by a
test), and `framesweep spec --example` prints a full spec with every field at its default, commented.
"""

from __future__ import annotations

import json
import re
import types
import typing
from typing import Any, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo, PydanticUndefined

from engine.config import SweepSpec
from engine.config.toml_out import toml_value
from engine.datasets import DatasetSpec

__all__ = ["example_toml", "reference_markdown"]


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (a model, a list of them, an optional or a union of them)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for a in get_args(annotation) for m in _models_in(a)]


def _type_name(annotation: Any) -> str:
    if get_origin(annotation) is typing.Annotated:
        return _type_name(get_args(annotation)[0])
    if get_origin(annotation) is typing.Literal:
        return " | ".join(json.dumps(a) for a in get_args(annotation))
    if get_origin(annotation) in (typing.Union, types.UnionType):
        return " | ".join("null" if a is type(None) else _type_name(a) for a in get_args(annotation))
    if get_origin(annotation) in (list, dict):
        return f"{get_origin(annotation).__name__}[{', '.join(_type_name(a) for a in get_args(annotation))}]"
    if isinstance(annotation, type):
        return {"NoneType": "null", "Path": "path"}.get(annotation.__name__, annotation.__name__)
    return re.sub(r"\b(typing|pathlib)\.", "", str(annotation))


def _default(field: FieldInfo) -> Any:
    if field.default is not PydanticUndefined:
        return field.default
    if field.default_factory is not None:
        return field.default_factory()  # type: ignore[call-arg]
    return PydanticUndefined


def _default_text(field: FieldInfo) -> str:
    value = _default(field)
    if value is PydanticUndefined:
        return "required"
    if isinstance(value, BaseModel):
        return "(table)"
    return "null" if value is None else json.dumps(value, default=str)


def _sections(model: type[BaseModel], path: str) -> list[tuple[str, type[BaseModel]]]:
    out = [(path, model)]
    for name, field in model.model_fields.items():
        subs = _models_in(field.annotation)
        if name == "dataset":
            subs = _models_in(DatasetSpec)
        for sub in subs:
            label = f"{path}.{name}" if path else name
            if len(subs) > 1:
                label += f' (name = "{get_args(sub.model_fields["name"].annotation)[0]}")'
            out += _sections(sub, label)
    return out


def reference_markdown() -> str:
    """Markdown: one table per spec section (generated; do not edit docs/spec-reference.md by hand)."""
    lines = ["# Sweep spec reference", "",
             "Generated from the pydantic models by `framesweep spec --reference`; every field, its type, "
             "default and description. A full example: `framesweep spec --example`.", ""]
    for path, model in _sections(SweepSpec, ""):
        title = f"`[{path}]`" if path else "top level"
        lines += [f"## {title}", "", (model.__doc__ or "").strip().splitlines()[0], "",
                  "| field | type | default | description |", "|---|---|---|---|"]
        for name, field in model.model_fields.items():
            desc = (field.description or "").replace("|", "\\|").replace("\n", " ")
            typ = _type_name(field.annotation).replace("|", "\\|")
            lines.append(f"| `{name}` | `{typ}` | `{_default_text(field)}` | {desc} |")
        lines.append("")
    return "\n".join(lines)


def _toml_value(value: Any) -> str:
    return toml_value(value) or ""


def _fields_toml(model: type[BaseModel], given: dict[str, Any]) -> list[str]:
    lines = []
    for name, field in model.model_fields.items():
        if _models_in(field.annotation):
            continue
        lines.append(f"# {field.description}")
        value = given.get(name, _default(field))
        if value is None or value is PydanticUndefined:
            lines.append(f"# {name} =")
        else:
            lines.append(f"{name} = {_toml_value(value)}")
    return lines


def example_toml() -> str:
    """A complete spec: every field at its default (required ones filled in), each with its description."""
    from engine.config import (
        BudgetPoint,
        DecodeSpec,
        EngineSpec,
        GridSpec,
        HTTPSpec,
        IsoComputeSpec,
        ModelSpec,
        PredictorSpec,
        PromptSpec,
        StoreSpec,
    )
    from engine.config.checkpoint import CheckpointSpec
    from engine.datasets import SyntheticDatasetSpec

    def commented(lines: list[str]) -> list[str]:
        return ["# " + x if not x.startswith("#") else "#" + x[1:] for x in lines]

    out = ["# framesweep sweep spec: every field, at its default (see docs/spec-reference.md)", ""]
    out += _fields_toml(SweepSpec, {"sweep_id": "my-audit"})
    out += ["", "[[models]]"] + _fields_toml(ModelSpec, {"id": "tiny", "family": "qwen2_5_vl",
                                                          "path": "tiny:qwen2_5_vl"})
    out += ["", "[models.engine]"] + _fields_toml(EngineSpec, {})
    out += ["", "# backend = \"openai\" needs this table (and only then):", "# [models.http]"]
    out += commented(_fields_toml(HTTPSpec, {"base_url": "http://127.0.0.1:8000"}))
    out += ["", "# a checkpoint of a fine-tuning study (`framesweep checkpoints`) says where it sits:",
            "# [models.checkpoint]"]
    out += commented(_fields_toml(CheckpointSpec, {"base": "base-model-id", "train_frames": 16}))
    out += ["", "[dataset]  # other adapters and their fields: framesweep datasets NAME",
            "# several datasets in one sweep: [[datasets]] tables (each an adapter table like this one, with an",
            "# `id` where two share an adapter) instead of [dataset]"]
    out += _fields_toml(SyntheticDatasetSpec, {"name": "synthetic"})
    out += ["", "[[budgets]]"] + _fields_toml(BudgetPoint, {"frames": 0})
    out += ["", "[[budgets]]"] + _fields_toml(BudgetPoint, {"frames": 16})
    out += ["", "# cross products of budgets, expanded at load (beside or instead of [[budgets]]):", "# [[grids]]"]
    out += commented(_fields_toml(GridSpec, {"frames": [0, 16, 32, 64]}))
    out += ["", "# allocations of one pixel budget over frame counts, expanded at load:", "# [[iso_compute]]"]
    out += commented(_fields_toml(IsoComputeSpec, {"total_pixels": 9_700_000}))
    out += ["", "[prompt]"] + _fields_toml(PromptSpec, {})
    out += ["", "[predictor]"] + _fields_toml(PredictorSpec, {})
    out += ["", "[decode]"] + _fields_toml(DecodeSpec, {})
    out += ["", "[store]  # optional when --out is given"] + _fields_toml(StoreSpec, {"out_dir": "runs/my-audit"})
    return "\n".join(out) + "\n"
