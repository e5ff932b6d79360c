"""vLLM's conventions in `[models.engine]`: enforce_eager left to vLLM on a GPU (true only on the CPU build),
and tensor/pipeline parallel sizes as fields that set the GPUs an engine actor reserves, and change how fast
an answer comes, never which answer (the answer fingerprint ignores them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.specs import small_spec_dict

from engine.config import EngineSpec, SpecError, parse_spec
from engine.items import Item, Job
from engine.runtime.placement import resolve_gpus
from engine.sweep.fingerprint import AnswerPrints


def test_enforce_eager_is_vllms_default_on_a_gpu_and_true_on_the_cpu_build() -> None:
    default = EngineSpec()
    assert default.enforce_eager is None
    assert "enforce_eager" not in default.vllm_args(cuda=True)  # vLLM captures CUDA graphs
    assert default.vllm_args(cuda=False) == {"enforce_eager": True}
    assert EngineSpec(enforce_eager=True).vllm_args(cuda=True) == {"enforce_eager": True}
    assert EngineSpec(enforce_eager=False).vllm_args(cuda=False) == {"enforce_eager": False}


def test_parallel_sizes_are_fields_that_set_the_gpus_per_actor() -> None:
    e = EngineSpec(tensor_parallel_size=2, pipeline_parallel_size=2)
    assert e.world_size == 4 and e.vllm_args(cuda=True) == {"tensor_parallel_size": 2, "pipeline_parallel_size": 2}
    assert resolve_gpus(e.num_gpus, e.world_size, cuda_visible=lambda: True) == 4.0
    assert resolve_gpus(e.num_gpus, e.world_size, cuda_visible=lambda: False) == 0.0  # the CPU build
    assert EngineSpec().vllm_args(cuda=True) == {}
    # the older spelling in extra sets the field (and leaves extra, so vLLM is not given it twice)
    old = EngineSpec(extra={"tensor_parallel_size": 2, "seed": 1})
    assert (old.tensor_parallel_size, old.extra, old.world_size) == (2, {"seed": 1}, 2)


def _spec(tmp_path: Path, **engine: object) -> dict:
    d = small_spec_dict(tmp_path / "out")
    d["models"][0]["engine"].update(engine)
    return d


@pytest.mark.parametrize(("engine", "message"), [
    ({"tensor_parallel_size": 0}, "models.0.engine.tensor_parallel_size: Input should be greater than or equal to 1"),
    ({"tensor_parallel_size": 4, "extra": {"tensor_parallel_size": 2}},
     "tensor_parallel_size = 4 and extra.tensor_parallel_size = 2: give it once"),
    ({"num_gpus": 1, "tensor_parallel_size": 2}, "num_gpus = 1 but tensor_parallel_size x pipeline_parallel_size = 2"),
])
def test_bad_parallel_settings_fail_at_spec_time(tmp_path: Path, engine: dict, message: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec(_spec(tmp_path, **engine))
    assert message in " ".join(str(err.value).split())


def test_parallel_sizes_and_eager_leave_the_answer_fingerprint_alone(tmp_path: Path) -> None:
    item = Item(dataset="synthetic", dataset_version="1", item_id="1", video_id="v1", video_path=None,
                question="q", options=["a", "b"], answer="A")

    def prints(**engine: object) -> str:
        spec = parse_spec(_spec(tmp_path, **engine))
        p = AnswerPrints(spec, {"synthetic": "s1"}, checkpoints={"tiny": "sha256:x"}, templates={"qwen2_5_vl": "t"})
        return p.of(Job("tiny", item, spec.budgets[1]))

    base = prints()
    assert prints(tensor_parallel_size=2) == base
    assert prints(pipeline_parallel_size=2, enforce_eager=False) == base
    assert prints(extra={"tensor_parallel_size": 2}) == base  # the older spelling too
    assert prints(dtype="bfloat16") != base  # a setting that changes the answer does change it
