"""vLLM inside a Ray actor: the in-process serving backend.

The same code runs the CPU build of vLLM (CPU-only machines, tiny checkpoints)
and the CUDA build (one actor per GPU). MCQ scoring constrains the first answer
token to the option letters on an engine created with
``logprobs_mode="processed_logprobs"``, so the returned logprobs are the full,
renormalised distribution over the letters.

    vllm_args.py        what an engine starts with (environment, `vllm.LLM`'s arguments): pure functions
    vllm_supervisor.py  the watch over vLLM's engine processes (found, alive, the actor ended when one dies)
    vllm_actor.py       the actor body (`VLLMWorker`: requests in, results out) and the driver's backend over it
"""

from __future__ import annotations

import asyncio
import gc
import logging
import math
import os
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.backends.base import BackendBase, EngineRequest, EngineResult
from engine.backends.vllm_args import engine_env, in_process_core, llm_kwargs
from engine.backends.vllm_supervisor import EngineProcesses, children_described, core_pids, tree_rss_mb
from engine.backends.warm import NAMESPACE, WarmEngineStoppedError, engine_key, engine_settings, find_engine
from engine.config import EngineSpec
from engine.frames.remote import FRAMES_LOST, FrameResolver, FramesLostError
from engine.runtime.imports import heavy_imports
from engine.runtime.placement import Placement, actor_options, place, release, resolve_gpus
from engine.runtime.replicas import EngineHungError
from engine.scoring import AbsurdLogprob, checked_logprob, letter_logprobs

if TYPE_CHECKING:
    from vllm.inputs import TextPrompt

__all__ = ["VLLMActorBackend", "VLLMWorker", "batch_deadline_s"]

log = logging.getLogger(__name__)


def _cuda_visible() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - no torch or a broken CUDA install both mean "no GPU"
        return False


def _node_facts() -> dict[str, Any]:
    """The Ray node this process runs on (empty outside Ray)."""
    try:
        import ray

        if not ray.is_initialized():
            return {}
        ctx = ray.get_runtime_context()
        return {"node_id": ctx.get_node_id(), "node_ip": ray.util.get_node_ip_address(),
                "gpu_ids": [str(g) for g in ctx.get_accelerator_ids().get("GPU", [])],
                "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
    except Exception:  # noqa: BLE001 - facts for the record only
        return {}


def _no_torch_compile() -> None:
    """Eager on the CPU build means no compilation at all. vLLM compiles one sampler helper with inductor
    (`batched_count_greater_than`, a C++ build) on its first logprobs call, eager mode or not: about 5 CPU-s
    of every engine start on two cores, for an integer count that eager computes exactly. Set before vLLM is
    imported; an engine-core process inherits the variable."""
    os.environ["TORCHDYNAMO_DISABLE"] = "1"
    import torch._dynamo

    torch._dynamo.config.disable = True


def compiled_graphs() -> int:
    """Graphs torch.compile has compiled in this process (0 where nothing was compiled)."""
    dynamo = sys.modules.get("torch._dynamo.utils")
    return int(dynamo.counters["stats"]["unique_graphs"]) if dynamo is not None else 0


def _full_collections() -> int:
    """Full (oldest-generation) collections the cyclic garbage collector has run in this process."""
    return int(gc.get_stats()[2]["collections"])


def batch_deadline_s(engine: EngineSpec, requests: Sequence[EngineRequest]) -> float:
    """How long one engine call may take before the engine counts as hung: a base plus allowances
    per request and per frame sent (the frames of a video, or the separate images)."""
    frames = sum(len(r.video) if r.video is not None else len(r.images or ()) for r in requests)
    return engine.deadline_base_s + engine.deadline_per_request_s * len(requests) + engine.deadline_per_frame_s * frames


def _placement(engine: EngineSpec) -> Placement:
    """What one engine actor asks of the cluster (`num_gpus = \"auto\"` asks the cluster's GPU nodes)."""
    return Placement(gpus=resolve_gpus(engine.num_gpus, engine.world_size))


class VLLMWorker:
    """The actor body: owns one `vllm.LLM` and answers batches of requests."""

    def __init__(self, model_path: str, engine: EngineSpec, seed: int = 0,
                 family_kwargs: dict[str, Any] | None = None) -> None:
        t_enter = time.perf_counter()
        os.environ.update(engine_env(engine))
        # the settings (checkpoint fingerprint included) as they were when this engine loaded them
        self._settings = engine_settings(model_path, engine, family_kwargs, seed)
        full_before = _full_collections()
        with heavy_imports():  # torch's and vLLM's imports without repeated full collections (see there)
            cuda = _cuda_visible()
            self.engine_core = "in_process" if in_process_core(engine, cuda) else "process"
            # read by vLLM when the engine starts: the core runs in this process, with its model (no second
            # and third process importing vLLM); a crash of the core is then this actor's crash (Ray restarts it)
            os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0" if self.engine_core == "in_process" else "1"
            if not cuda and engine.vllm_args(False).get("enforce_eager"):
                _no_torch_compile()
            import vllm
            from vllm import LLM

            import engine as _fs  # noqa: F401  (installs the torchvision import hook in this process)

        self.import_s = time.perf_counter() - t_enter
        self.import_full_collections = _full_collections() - full_before
        t0 = time.perf_counter()
        self.llm = LLM(**llm_kwargs(model_path, engine, seed, family_kwargs, cuda=cuda))
        self.start_s = time.perf_counter() - t0
        self.version = f"vllm {vllm.__version__}"
        self.worker = f"{socket.gethostname()}:{os.getpid()}"
        self.node = _node_facts()
        self._frames_timeout_s = engine.deadline_base_s / 2  # frames that take longer to arrive count as lost
        self._tok = self.llm.get_tokenizer()
        self._letter_ids: dict[str, int] = {}
        self.engine_procs = EngineProcesses.find(self.llm, self.engine_core == "process", self.worker)
        self.engine_procs.watch()  # the actor ends when an engine process dies (Ray restarts it)

    def info(self) -> dict[str, Any]:
        return {"engine_version": self.version, "worker": self.worker, "import_s": self.import_s,
                "start_s": self.start_s, "engine_core": self.engine_core, "children": children_described(),
                "engine_core_pid": next(iter(core_pids(self.llm)), None),
                "engine_pids": self.engine_procs.pids, "frame_refs": True,
                "compiled_graphs": compiled_graphs(), "import_full_collections": self.import_full_collections,
                **self.node}

    def describe(self) -> dict[str, Any]:
        """What `framesweep engines` lists: the key and settings, engine facts, memory, resets so far."""
        settings = self._settings
        return {"key": engine_key(settings), "settings": settings, **self.info(), "rss_mb": tree_rss_mb(),
                "cache_resets": getattr(self, "cache_resets", 0)}

    def placement_group(self) -> Any:
        """The placement group this actor runs in (None for a CPU engine)."""
        from ray.util import get_current_placement_group

        return get_current_placement_group()

    def reset_caches(self) -> int:
        """Empty the prefix cache, the multimodal processor cache and the encoder cache (vision embeddings
        kept across requests by media uuid, which `reset_mm_cache` leaves), so timed strategies start cold.

        Returns how many resets this engine has done (a fact the timing reports record).
        """
        self.llm.reset_prefix_cache()
        self.llm.reset_mm_cache()
        reset_encoder = getattr(self.llm.llm_engine, "reset_encoder_cache", None)
        if reset_encoder is not None:  # vLLM releases before the encoder cache could be reset have none
            reset_encoder()
        self.cache_resets = getattr(self, "cache_resets", 0) + 1
        return self.cache_resets

    def letter_token_id(self, letter: str) -> int:
        """The single token that spells an option letter at the start of the answer."""
        if letter not in self._letter_ids:
            ids = self._tok.encode(letter, add_special_tokens=False)
            if len(ids) != 1:
                raise ValueError(f"option letter {letter!r} is not a single token ({ids})")
            self._letter_ids[letter] = ids[0]
        return self._letter_ids[letter]

    def _inputs(self, r: EngineRequest) -> TextPrompt:
        prompt: TextPrompt = {"prompt": r.prompt}
        if r.video is not None:
            # vLLM's processor takes one array: frames that repeat (`RepeatedFrames`) become it here, once per view
            frames = r.video if isinstance(r.video, np.ndarray) else np.asarray(r.video)
            video = (frames, r.video_meta) if r.video_meta is not None else frames
            prompt["multi_modal_data"] = {"video": video}
            if r.media_uuid:
                prompt["multi_modal_uuids"] = {"video": [r.media_uuid]}
        elif r.images:
            prompt["multi_modal_data"] = {"image": r.images if len(r.images) > 1 else r.images[0]}
            if r.image_uuids:
                prompt["multi_modal_uuids"] = {"image": list(r.image_uuids)}
        kwargs = dict(r.mm_processor_kwargs or {})
        if r.video is not None and r.video_meta is not None and r.video_meta.get("do_sample_frames") is False:
            # framesweep sampled these frames: the processor must not sample again, whatever the checkpoint's
            # processor config says (vLLM drops the flag from Qwen2.5-VL's video metadata before the processor)
            kwargs.setdefault("do_sample_frames", False)
        if kwargs:
            prompt["mm_processor_kwargs"] = kwargs
        return prompt

    def _params(self, r: EngineRequest):  # type: ignore[no-untyped-def]
        from vllm import SamplingParams

        if r.mode == "letter":
            ids = [self.letter_token_id(x) for x in r.letters]
            return SamplingParams(max_tokens=1, temperature=0.0, allowed_token_ids=ids, logprobs=len(ids))
        if r.choices:  # the answer is one of these strings, whole (vLLM's structured outputs)
            from vllm.sampling_params import StructuredOutputsParams

            return SamplingParams(max_tokens=r.max_tokens, temperature=r.temperature, logprobs=20, stop=r.stop,
                                  structured_outputs=StructuredOutputsParams(choice=list(r.choices)))
        return SamplingParams(max_tokens=r.max_tokens, temperature=r.temperature, logprobs=20, stop=r.stop)

    def _read(self, r: EngineRequest, out: Any, engine_s: float) -> EngineResult:
        """The result of one request's output; a log-probability that is no log-probability (`AbsurdLogprob`)
        fails this request only, never the batch (which the driver would take for a dead engine)."""
        try:
            return self._result(r, out, engine_s)
        except AbsurdLogprob as err:
            return EngineResult(r.request_id, error_type="AbsurdLogprob",
                                error=f"the engine's reply cannot be scored: {err}", worker=self.worker,
                                engine_version=self.version)

    def _result(self, r: EngineRequest, out: Any, engine_s: float) -> EngineResult:
        comp = out.outputs[0]
        first = comp.logprobs[0] if comp.logprobs else {}
        by_token = {tid: lp.logprob for tid, lp in first.items()}
        letter_lp = {}
        for x in r.letters:
            try:
                tid = self.letter_token_id(x)
            except ValueError:
                continue
            if tid in by_token:
                lp = checked_logprob(by_token[tid], f"option letter {x!r}")
                if math.isfinite(lp):
                    letter_lp[x] = lp
        chosen = [comp.logprobs[i].get(t) for i, t in enumerate(comp.token_ids)] if comp.logprobs else []
        lps = [checked_logprob(c.logprob, f"generated token {k}") for k, c in enumerate(chosen) if c is not None]
        return EngineResult(
            request_id=r.request_id,
            text=comp.text,
            letter_logprobs=letter_lp,
            token_letters=self._token_letters(r, comp) if r.mode == "generate" and r.letters else None,
            prompt_tokens=len(out.prompt_token_ids or []),
            output_tokens=len(comp.token_ids),
            mean_logprob=float(sum(lps) / len(lps)) if lps else None,
            engine_s=engine_s,
            worker=self.worker,
            engine_version=self.version,
        )

    def _token_letters(self, r: EngineRequest, comp: Any) -> list[tuple[str, dict[str, float]]]:
        """Per generated token: its text and the option letters' log-probabilities among the top-k there."""
        out = []
        for i, tid in enumerate(comp.token_ids):
            alts = (comp.logprobs[i] if comp.logprobs and i < len(comp.logprobs) else None) or {}
            text = alts[tid].decoded_token if tid in alts and alts[tid].decoded_token is not None else \
                self._tok.decode([tid])
            out.append((text, letter_logprobs(
                ((lp.decoded_token if lp.decoded_token is not None else self._tok.decode([t]), lp.logprob)
                 for t, lp in alts.items()), r.letters)))
        return out

    def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        """Answer a batch. Frames sent by reference are read here first, one copy per video for the whole batch
        (a request whose frames are gone gets a `FramesLostError` result: the driver decodes them again)."""
        resolver = FrameResolver(self.node.get("node_id"), self._frames_timeout_s)
        lost: dict[int, EngineResult] = {}
        ready: list[EngineRequest] = []
        for i, r in enumerate(requests):
            try:
                r.video = resolver(r.video)
                r.images = [resolver(x) for x in r.images] if r.images else r.images
                ready.append(r)
            except FramesLostError as err:
                lost[i] = EngineResult(r.request_id, error_type=FRAMES_LOST, error=str(err), worker=self.worker,
                                       engine_version=self.version)
        answers = iter(self._answer(ready))
        out = [lost[i] if i in lost else next(answers) for i in range(len(requests))]
        if out:
            out[0].frame_bytes_pulled = resolver.pulled_bytes
        return out

    def _answer(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        """Answer a batch; if the batch fails, answer one by one so a bad request becomes its own error."""
        if not requests:
            return []
        t0 = time.perf_counter()
        try:
            outs = self.llm.generate([self._inputs(r) for r in requests], [self._params(r) for r in requests],
                                     use_tqdm=False)
        except Exception as err:  # noqa: BLE001 - isolate the failing request below
            if type(err).__name__ == "EngineDeadError" or not self.engine_procs.alive():
                # not a bad request: the engine is gone (Ray restarts the actor, the driver retries)
                self.engine_procs.die()
            log.warning("batch of %d failed (%s: %s); retrying one by one", len(requests), type(err).__name__, err)
            return [self._one(r) for r in requests]
        per = (time.perf_counter() - t0) / len(requests)
        return [self._read(r, o, per) for r, o in zip(requests, outs)]

    def _one(self, r: EngineRequest) -> EngineResult:
        t0 = time.perf_counter()
        try:
            (out,) = self.llm.generate([self._inputs(r)], [self._params(r)], use_tqdm=False)
        except Exception as err:  # noqa: BLE001 - errors are data
            if type(err).__name__ == "EngineDeadError" or not self.engine_procs.alive():
                self.engine_procs.die()
            # whole: the driver redacts the secrets it knows, then cuts (a cut here could split a secret)
            return EngineResult(r.request_id, error_type=type(err).__name__, error=str(err),
                                worker=self.worker, engine_version=self.version)
        return self._read(r, out, time.perf_counter() - t0)


def _killed(err: BaseException) -> bool:
    """Whether Ray reports the actor killed on purpose (`ray.kill`, as `engines down` does), not crashed."""
    from ray.exceptions import ActorDiedError

    return isinstance(err, ActorDiedError) and "ray.kill" in str(err)


class VLLMActorBackend(BackendBase):
    """`Backend` over a Ray actor running `VLLMWorker` (restarted by Ray if it dies).

    With `warm_name`, `start` first looks for a live warm engine of that name (`engine.backends.warm`:
    the name carries the key of every setting) and uses it instead of starting one: its caches are
    emptied (no prefix or media cached by an earlier run can answer for this one) and `close` leaves
    it running. With `detached`, the engine started is that warm engine: named `warm_name`, outliving
    this process (`framesweep engines up`).
    """

    name = "vllm"
    worker_cls: Any = VLLMWorker  # the actor body (tests place light stand-ins through the same path)

    def __init__(self, model_path: Path | str, engine: EngineSpec, seed: int = 0, max_restarts: int = 2,
                 family_kwargs: dict[str, Any] | None = None, warm_name: str | None = None,
                 detached: bool = False) -> None:
        self.model_path = str(model_path)
        self.family_kwargs = family_kwargs
        self.engine = engine
        self.seed = seed
        self.max_restarts = max_restarts
        self.warm_name = warm_name
        self.detached = detached
        self.reused = False
        """True when `start` found a live warm engine and uses it (it is left running by `close`)."""
        self._actor: Any = None
        self._pg: Any = None  # the placement group holding this engine's GPUs
        self.info: dict[str, Any] = {}

    async def start(self) -> dict[str, Any]:
        if self.warm_name is not None and self._actor is None and await self._attach():
            return self.info
        import ray

        need = await asyncio.to_thread(_placement, self.engine)
        placed_now = self._pg is None
        if placed_now:  # kept across restarts: a revived engine gets its GPUs back
            self._pg = await place(need, f"an engine for {self.model_path}", self.engine.placement_timeout_s,
                                   detached=self.detached)
        cls = ray.remote(self.worker_cls)
        t0 = time.perf_counter()
        named = {"name": self.warm_name, "namespace": NAMESPACE, "lifetime": "detached"} \
            if self.detached else {}
        try:
            self._actor = cls.options(
                **actor_options(need, self._pg),
                **named,
                max_restarts=self.max_restarts,
                max_task_retries=0,
            ).remote(self.model_path, self.engine, self.seed, self.family_kwargs)
            self.info = await self._actor.info.remote()
        except BaseException:
            if placed_now:  # an engine that never came up gives its GPUs back at once
                if self._actor is not None:
                    ray.kill(self._actor, no_restart=True)
                    self._actor = None
                release(self._pg)
                self._pg = None
            raise
        self.info["ready_s"] = time.perf_counter() - t0  # from asking Ray for the actor to a loaded engine
        if self.detached:
            self.info["warm"] = self.warm_name
        return self.info

    async def _attach(self) -> bool:
        """Use the live warm engine named `warm_name`, if there is one; its caches are emptied first."""
        import ray

        actor = await asyncio.to_thread(find_engine, self.warm_name)  # type: ignore[arg-type]
        if actor is None:
            return False
        try:
            self.info = await actor.info.remote()
            await actor.reset_caches.remote()
        except ray.exceptions.RayError as err:
            log.warning("warm engine %s does not answer (%s); starting a new engine", self.warm_name, err)
            return False
        self._actor, self.reused = actor, True
        self.info["warm"] = self.warm_name
        log.info("reusing warm engine %s for %s (%s)", self.warm_name, self.model_path, self.info.get("worker"))
        return True

    async def recover(self, timeout_s: float = 600.0) -> None:
        """After the actor died: wait for Ray to restart it, or start a new one if it is gone for good."""
        from engine.runtime.replicas import revive_actor

        async def start_new() -> Any:
            self._actor = None
            await self.start()
            return self._actor

        self._actor, self.info = await revive_actor(self._actor, start_new, timeout_s, "engine actor")

    @property
    def actor(self) -> Any:
        return self._actor

    @property
    def takes_frame_refs(self) -> bool:
        """Whether the engine reads frames by reference (an engine of this version says so in its facts)."""
        return bool(self.info.get("frame_refs"))

    @property
    def node_id(self) -> str | None:
        """The Ray node the engine runs on."""
        return self.info.get("node_id")

    async def generate(self, requests: Sequence[EngineRequest]) -> list[EngineResult]:
        """Answer a batch in the actor; an engine that does not answer within the batch's deadline
        (`batch_deadline_s`) is killed, Ray restarts it, and `EngineHungError` is raised (a death)."""
        if self._actor is None:
            raise RuntimeError("backend not started")
        deadline = batch_deadline_s(self.engine, requests)
        try:
            return await asyncio.wait_for(self._actor.generate.remote(list(requests)), timeout=deadline)
        except TimeoutError:
            import ray

            ray.kill(self._actor, no_restart=False)  # a restart, not an end: recover() waits for it
            raise EngineHungError(f"engine {self.info.get('worker')} answered no batch of {len(requests)} "
                                  f"request(s) within its deadline of {deadline:.0f}s; restarting it") from None
        except Exception as err:
            if self.reused and _killed(err):  # `engines down` took the warm engine away: not a crash to recover
                raise WarmEngineStoppedError(str(self.warm_name)) from None
            raise

    async def reset_caches(self) -> int:
        """Empty the engine's prefix and multimodal caches; returns the engine's reset count."""
        if self._actor is None:
            raise RuntimeError("backend not started")
        return int(await self._actor.reset_caches.remote())

    async def close(self) -> None:
        """End the engine, unless it is a warm one (reused, or started detached): those stay up."""
        if self._actor is not None and not (self.reused or self.detached):
            import ray

            ray.kill(self._actor, no_restart=True)
        self._actor = None
        if not self.detached:
            release(self._pg)
        self._pg = None
