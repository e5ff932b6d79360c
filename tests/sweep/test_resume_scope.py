"""The resume check on hand-built state, no engine: every committed row is compared with the run, whether or not its
key is planned (a dataset setting that renames the items, a prompt changed with only a new model), the rows' own
fingerprints outrank the manifest's fields, and what must still resume resumes.

A "first run" here is what `prepare` records for a spec: each planned job's fingerprint on its committed row, and the
manifest `manifest_doc` writes (through JSON, as on disk). The checkpoint and template identities are given, so no
checkpoint is built.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from helpers.specs import small_spec_dict

from engine.config import SweepSpec, dataset_id, parse_spec
from engine.items import Item, Job
from engine.sweep.fingerprint import AnswerPrints, fingerprint
from engine.sweep.jobs import plan_jobs
from engine.sweep.record import manifest_doc
from engine.sweep.resume import AnswerMismatchError, check_resume

OUT = Path("out")
QUESTIONS = ("flash_count", "first_colour", "static_shape")
CHECKPOINT = "sha256:" + "ab" * 32


def _spec(budgets: list[dict] | None = None, **over: Any) -> SweepSpec:
    d = small_spec_dict(OUT, budgets=budgets or [{"frames": 0}, {"frames": 2}])
    dataset = over.pop("dataset", {})
    models = over.pop("models", None)
    d["dataset"] = {**d["dataset"], **dataset}
    if models is not None:
        d["models"] = [{**d["models"][0], **m} for m in models]
    d.update(over)
    return parse_spec(d)


def _items(spec: SweepSpec, media_kind: str = "video") -> list[Item]:
    """The synthetic items `spec` names (ids as the adapter builds them: `syn<seed>-<video>/<question>`)."""
    out = []
    for ds in spec.dataset_specs():
        for v in range(ds.n_videos):
            video = f"syn{ds.seed}-{v:04d}"
            out += [Item(dataset=dataset_id(ds), dataset_version="synthetic-v1", item_id=f"{video}/{q}",
                         video_id=video, video_path=Path(f"/data/{video}.mp4"), question=q, options=("a", "b"),
                         answer="A", media_kind=media_kind) for q in QUESTIONS]  # type: ignore[arg-type]
    return out


def _prints(spec: SweepSpec, checkpoint: str = CHECKPOINT) -> AnswerPrints:
    return AnswerPrints(spec, {dataset_id(d): "synthetic-v1" for d in spec.dataset_specs()},
                        checkpoints={m.id: checkpoint for m in spec.models}, templates={"qwen2_5_vl": "t" * 16})


def _jobs(spec: SweepSpec, items: list[Item] | None = None) -> list[Job]:
    return [j for v in plan_jobs(spec, _items(spec) if items is None else items, set()).values() for j in v]


def _first_run(spec: SweepSpec, items: list[Item] | None = None,
               checkpoint: str = CHECKPOINT) -> tuple[dict[tuple[str, str, str, str], str | None], dict[str, Any]]:
    """The committed fingerprints and the manifest after a finished run of `spec`."""
    prints, jobs = _prints(spec, checkpoint), _jobs(spec, items)
    cells = check_resume(OUT, jobs, {}, prints, {})
    doc = manifest_doc({}, spec, policy="GridPolicy", grid=True, datasets=["synthetic"], expected={}, cells=cells,
                       fields=prints.fields, pending=0, committed=len(jobs))
    return {tuple(j.key): prints.of(j) for j in jobs}, json.loads(json.dumps(doc))  # type: ignore[misc]


def _check(spec: SweepSpec, committed: dict, manifest: dict, items: list[Item] | None = None,
           checkpoint: str = CHECKPOINT) -> dict:
    return check_resume(OUT, _jobs(spec, items), committed, _prints(spec, checkpoint), manifest)


def test_a_seed_that_renames_the_items_is_refused_though_no_key_matches() -> None:
    """The issue's case: seed 1 on the out dir of a seed-0 run plans syn1-* items, none of them committed, so the
    check compared nothing and the run mixed two item sets. The seed is a dataset setting of the fingerprint."""
    committed, manifest = _first_run(_spec())
    renamed = _spec(dataset={"seed": 1})
    assert not {tuple(j.key) for j in _jobs(renamed)} & set(committed)  # no committed key is planned
    with pytest.raises(AnswerMismatchError) as err:
        _check(renamed, committed, manifest)
    msg = str(err.value)
    assert msg.startswith("out: 18 committed key(s) were answered another way than this spec asks")
    for budget in ("text", "f2"):
        assert f"model tiny, dataset synthetic, budget {budget} (9 key(s)): dataset.seed: 0 -> 1" in msg


def test_a_changed_dataset_setting_is_refused_with_only_new_budgets() -> None:
    """No planned (model, dataset, budget) has a committed row: the old budgets' rows still share the dataset's
    settings with the run, so a new seed (or frame size) with only new budgets is refused too, naming them."""
    committed, manifest = _first_run(_spec())
    with pytest.raises(AnswerMismatchError, match=r"budget f2 \(9 key\(s\)\): dataset.seed: 0 -> 1; "
                                                  r"dataset.width: 96 -> 128"):
        _check(_spec([{"frames": 4}], dataset={"seed": 1, "width": 128}), committed, manifest)
    _check(_spec([{"frames": 4}]), committed, manifest)  # the same settings: a new budget resumes


def test_a_changed_prompt_or_checkpoint_is_refused_with_only_a_new_model() -> None:
    """The sweep's prompt is shared by every row, a model's checkpoint by every row of that model id."""
    committed, manifest = _first_run(_spec())
    other = [{"id": "tiny2"}]
    _check(_spec(models=other), committed, manifest)  # a new model (the old one dropped) resumes
    with pytest.raises(AnswerMismatchError, match=r"model tiny, dataset synthetic, budget f2 \(9 key\(s\)\): "
                                                  r"prompt.system_prompt: None -> 'Be brief.'"):
        _check(_spec(models=other, prompt={"system_prompt": "Be brief."}), committed, manifest)
    with pytest.raises(AnswerMismatchError, match=r"budget text \(9 key\(s\)\): checkpoint: 'sha256:abab"):
        _check(_spec([{"frames": 4}]), committed, manifest, checkpoint="sha256:" + "cd" * 32)


def test_item_selectors_new_datasets_and_data_moves_resume() -> None:
    committed, manifest = _first_run(_spec(dataset={"n_videos": 4}))
    fewer = _spec(dataset={"n_videos": 2, "questions": ["static_shape"], "root": "/elsewhere"})
    assert len(_jobs(fewer)) < len(committed)
    assert set(_check(fewer, committed, manifest)) == {("tiny", "synthetic", "text"), ("tiny", "synthetic", "f2")}
    more = small_spec_dict(OUT, budgets=[{"frames": 0}, {"frames": 2}])
    more["datasets"] = [{**more.pop("dataset"), "n_videos": 4},
                        {"name": "synthetic", "id": "syn-b", "seed": 7, "width": 64, "n_videos": 1}]
    _check(parse_spec(more), committed, manifest)  # another dataset id with its own settings


def test_an_item_of_the_other_media_kind_no_longer_selected_resumes() -> None:
    """Image items are decoded by PyAV, videos by the spec's decoder: a committed image item of a cell that now
    plans only videos is answered as the cell would answer it."""
    spec = _spec(decode={"decoder": "decord", "max_videos_in_flight": 1})
    images = [replace(it, item_id="img/" + it.item_id, media_kind="image") for it in _items(spec)]
    committed, manifest = _first_run(spec, [*_items(spec), *images])
    assert len(set(committed.values())) == 3  # text, f2 of videos, f2 of images
    _check(spec, committed, manifest)  # the videos only: the image rows are not planned
    with pytest.raises(AnswerMismatchError, match=r"budget f2 \(9 key\(s\)\): decode.decoder: 'decord' -> 'pyav'"):
        _check(_spec(decode={"decoder": "pyav", "max_videos_in_flight": 1}), committed, manifest,
               [*_items(spec), *images])


def test_edited_answer_fields_cannot_hide_a_changed_prompt() -> None:
    """The rows' own fingerprints are the authority: the manifest's fields for the old fingerprint, edited to
    read as the new prompt, no longer make the changed prompt resume (they no longer hash to it)."""
    committed, manifest = _first_run(_spec())
    changed = _spec(prompt={"system_prompt": "Be brief."})
    now = _prints(changed)
    for job in _jobs(changed):
        old = committed[tuple(job.key)]  # type: ignore[index]
        manifest["answer_fields"][old] = now.fields_for(job.model_id, "synthetic", job.budget,
                                                        None if job.budget.is_text_only else "pyav")
    assert all(fingerprint(f) != fp for fp, f in manifest["answer_fields"].items())
    with pytest.raises(AnswerMismatchError) as err:
        _check(changed, committed, manifest)
    assert "(the fields the manifest records for it are not the ones it was made from: edited since)" in str(err.value)
    assert "budget text (9 key(s)): fingerprint " in str(err.value)


def test_a_hub_checkpoint_fetched_since_resumes_only_as_recorded() -> None:
    """`unresolved:` -> a content is no change, when the manifest's fields are the ones the rows were made from;
    fields edited to claim an unresolved checkpoint for rows of another content are refused."""
    spec = _spec()
    committed, manifest = _first_run(spec, checkpoint="unresolved:org/model")
    _check(spec, committed, manifest)  # the hub id is in the cache now: its content is known
    committed, manifest = _first_run(spec, checkpoint="sha256:" + "cd" * 32)
    for fields in manifest["answer_fields"].values():
        fields["checkpoint"] = "unresolved:org/model"
    with pytest.raises(AnswerMismatchError, match="edited since"):
        _check(spec, committed, manifest)
