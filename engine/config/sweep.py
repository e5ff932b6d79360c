"""A whole sweep (`SweepSpec`), the dataset spec classes it accepts, and loading one from TOML.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Union, get_args

from pydantic import Field, ValidationError, model_validator

from engine.config.budgets import BudgetPoint, GridSpec, IsoComputeSpec, cost_order
from engine.config.models import ModelSpec
from engine.config.options import DecodeSpec, PredictorSpec, PromptSpec, StoreSpec
from engine.config.source import SpecError, SpecFileError, read_spec_file
from engine.config.suggest import closest_field
from engine.datasets import BENCHMARKS, Benchmark, DatasetSpec, register_benchmark, unregister_benchmark
from engine.datasets.benchmark import on_benchmarks_changed
from engine.datasets.spec import IMAGE_BUDGETS
from engine.strict import StrictModel


class SweepSpec(StrictModel):
    """A whole sweep: models x dataset items x budget grid."""

    sweep_id: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="Name of this sweep; recorded on every row.")
    models: list[ModelSpec] = Field(min_length=1, description="Models to run.")
    dataset: DatasetSpec | None = Field(default=None, description="Benchmark adapter and its settings (one "
                                        "dataset; or give `[[datasets]]`).")
    datasets: list[DatasetSpec] = Field(default=[], description="Several benchmarks run in one sweep on the same "
                                        "engines (instead of `[dataset]`); items, jobs, status and metrics are "
                                        "per dataset.")
    budgets: list[BudgetPoint] = Field(default=[], description="The budget grid (with those `grids` expand to).")
    grids: list[GridSpec] = Field(default=[], description="Budget cross products, added to `budgets` at load.")
    iso_compute: list[IsoComputeSpec] = Field(
        default=[], description="Iso-compute allocations (one pixel budget over several frame counts), added to "
        "`budgets` at load.")
    primary_protocol: str | None = Field(
        default=None, description="The protocol (budget id without f<N>: default, px50176, random-seed1, cached, "
        "...) whose chain the report leads with; null: the protocol with the most budgets (ties: default, then "
        "the one with the fewest options).")
    prompt: PromptSpec = Field(default_factory=PromptSpec, description="Prompt and scoring options.")
    predictor: PredictorSpec = Field(default_factory=PredictorSpec, description="Hybrid-frame predictor options.")
    decode: DecodeSpec = Field(default_factory=DecodeSpec, description="Decoding options.")
    store: StoreSpec = Field(description="Results store (optional when the command line gives --out).")
    ray_address: str | None = Field(
        default=None, description="Ray cluster to join; null: the cluster in RAY_ADDRESS (as ray.init reads it, "
        "e.g. under `ray job submit`), else the local cluster `framesweep engines up` started, else a new local one.")
    ray_dashboard: bool = Field(
        default=False, description="Start Ray's dashboard with a new local cluster (`--dashboard`; its address is "
        "printed); a cluster that is joined keeps its own setting.")
    max_attempts: int = Field(default=3, ge=1, description="Attempts per job before it is recorded as an error.")

    @model_validator(mode="after")
    def _one_way_to_name_datasets(self) -> SweepSpec:
        if (self.dataset is None) == (not self.datasets):
            raise ValueError("give one [dataset] table or [[datasets]] tables (exactly one of the two)")
        ids = [dataset_id(d) for d in self.dataset_specs()]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"datasets named twice: {', '.join(dup)} (give each an `id`)")
        return self

    def dataset_specs(self) -> list[Any]:
        """The sweep's datasets: `[[datasets]]`, or the one `[dataset]`."""
        return list(self.datasets) if self.datasets else [self.dataset]

    @model_validator(mode="after")
    def _expand_grids(self) -> SweepSpec:
        """Add the budgets of [[iso_compute]] and [[grids]]; every visual budget without a pipeline takes
        the [decode] one first, so a budget given twice (by hand and by a grid) is one budget only when
        it is the same budget, pipeline included."""
        def resolved(b: BudgetPoint) -> BudgetPoint:
            if b.pipeline is None and not b.is_text_only:
                return b.model_copy(update={"pipeline": self.decode.pipeline})
            return b

        self.budgets[:] = [resolved(b) for b in self.budgets]
        ids = {b.budget_id for b in self.budgets}
        for added in [*(b for iso in self.iso_compute for b in iso.expand()), *(b for g in self.grids for b in g.expand())]:
            b = resolved(added)
            if b.budget_id not in ids:
                ids.add(b.budget_id)
                self.budgets.append(b)
        if not self.budgets:
            raise ValueError("no budgets: give [[budgets]] or [[grids]]")
        return self

    @model_validator(mode="after")
    def _protocols(self) -> SweepSpec:
        """One frame count per protocol (visual budgets took the [decode] pipeline in `_expand_grids`)."""
        seen: dict[tuple[str, int], str] = {}
        for b in self.budgets:
            if b.is_text_only:
                continue
            other = seen.setdefault((b.protocol_id, b.frames), b.budget_id)
            if other != b.budget_id:
                raise ValueError(f"budgets {other} and {b.budget_id} have the same frame count ({b.frames}) and "
                                 f"protocol ({b.protocol_id}): a chain orders its budgets by frames")
        known = {b.protocol_id for b in self.budgets if not b.is_text_only} or {"default"}
        if self.primary_protocol is not None and self.primary_protocol not in known:
            raise ValueError(f"primary_protocol {self.primary_protocol!r} is no protocol of the budgets; "
                             f"known: {', '.join(sorted(known))}")
        return self

    @model_validator(mode="after")
    def _unique_keys(self) -> SweepSpec:
        for what, ids in (("models", [m.id for m in self.models]), ("budgets", [b.budget_id for b in self.budgets])):
            dup = sorted({i for i in ids if ids.count(i) > 1})
            if dup:
                raise ValueError(f"duplicate {what} ids: {', '.join(dup)}")
        return self

    @model_validator(mode="after")
    def _dataset_budget_names(self) -> SweepSpec:
        """Every budget a dataset names exists; an image budget's id is no budget of the sweep's."""
        ids = {b.budget_id for b in self.budgets}
        for i, ds in enumerate(self.dataset_specs()):
            images = [b.budget_id for b in self.image_budgets(ds)] if getattr(ds, "asks_images", False) else []
            where = f"datasets.{i}.{ds.name}.budgets" if self.datasets else f"dataset.{ds.name}.budgets"
            if clash := sorted(ids & set(IMAGE_BUDGETS.values())) if images else []:
                raise ValueError(f"budget id {clash[0]!r} is the name of image benchmark {dataset_id(ds)!r}'s "
                                 "image budget: give that budget another id")
            named = getattr(ds, "budgets", None) or []
            if dup := sorted({n for n in named if named.count(n) > 1}):
                raise ValueError(f"{where} names {', '.join(dup)} twice")
            if unknown := [n for n in named if n not in ids and n not in images]:
                raise ValueError(f"{where} names {', '.join(map(repr, unknown))}, no budget of this sweep; known: "
                                 f"{', '.join([*sorted(ids), *images])}")
        return self

    @model_validator(mode="after")
    def _checkpoint_bases(self) -> SweepSpec:
        ids = {m.id for m in self.models}
        for m in self.models:
            base = m.checkpoint.base if m.checkpoint else None
            if base is not None and (base == m.id or base not in ids):
                raise ValueError(f"models {m.id}: checkpoint.base {base!r} names no other model of this spec; "
                                 f"known: {', '.join(sorted(ids - {m.id}))}")
        return self

    def budgets_in_cost_order(self) -> list[BudgetPoint]:
        """Budgets ordered text-only first, then by frames and pixels."""
        return cost_order(self.budgets)

    def budgets_for(self, model: ModelSpec, dataset: str | None = None) -> list[BudgetPoint]:
        """The budgets `model` runs, in cost order: those within its context ceiling (`max_frames`); with a
        `dataset` id, that dataset's (`dataset_budgets`; an id no dataset of the spec has: every budget)."""
        spec = self._dataset(dataset)
        budgets = self.budgets_in_cost_order() if spec is None else self.dataset_budgets(spec)
        return [b for b in budgets if model.fits(b)]

    def image_budgets(self, dataset: Any) -> list[BudgetPoint]:
        """An image benchmark's image budgets: one image at the dataset's size (null: as stored, the model's
        processor then applies its own limits), once per pipeline the sweep's visual budgets use (the [decode]
        one when there is none), named as in `IMAGE_BUDGETS`."""
        pipelines = {b.pipeline or self.decode.pipeline for b in self.budgets if not b.is_text_only}
        size = {k: getattr(dataset, k, None) for k in ("max_pixels", "short_side", "min_pixels")}
        return [BudgetPoint(frames=1, pipeline=p, id=IMAGE_BUDGETS[p], **size)  # type: ignore[arg-type]
                for p in sorted(pipelines or {self.decode.pipeline}, key=list(IMAGE_BUDGETS).index)]

    def dataset_budgets(self, dataset: Any) -> list[BudgetPoint]:
        """The budgets a dataset spec runs, in cost order: those its `budgets` names; by default every budget
        of the sweep, or for an image benchmark its image budgets (the sweep's budgets when it has no visual
        one: a text-only sweep stays text-only)."""
        named = getattr(dataset, "budgets", None)
        images = self.image_budgets(dataset) if getattr(dataset, "asks_images", False) else []
        if named is None:
            has_visual = any(not b.is_text_only for b in self.budgets)
            return cost_order(images) if images and has_visual else self.budgets_in_cost_order()
        known = {b.budget_id: b for b in [*self.budgets, *images]}
        return cost_order([known[n] for n in named])

    def _dataset(self, dataset: str | None) -> Any:
        return next((d for d in self.dataset_specs() if dataset_id(d) == dataset), None) if dataset else None

    def with_out_dir(self, out_dir: Path) -> SweepSpec:
        """A copy of this spec writing to another directory."""
        return self.model_copy(update={"store": self.store.model_copy(update={"out_dir": Path(out_dir)})})


def _spec_name(cls: type[StrictModel]) -> str:
    """The adapter name a dataset spec class is tagged with (its `name: Literal["..."]` field)."""
    (name,) = get_args(cls.model_fields["name"].annotation)
    return str(name)


def dataset_id(spec: Any) -> str:
    """The `dataset` column of a dataset spec's rows: its `id`, else its adapter's name."""
    return getattr(spec, "id", None) or str(spec.name)


def dataset_spec_classes() -> dict[str, type[StrictModel]]:
    """Adapter name -> the spec class of its `[dataset]` table: every registered benchmark's
    (`engine.datasets.benchmark`)."""
    return {name: b.spec for name, b in BENCHMARKS.items()}


def register_dataset_spec(cls: type[StrictModel]) -> type[StrictModel]:
    """Accept `cls` as a `[dataset]` table, tagged by its `name: Literal["..."]` field: a benchmark with only a
    spec class (`engine.datasets.register_benchmark` registers one with its release and official score too).
    """
    name = _spec_name(cls)
    if name in BENCHMARKS and BENCHMARKS.get(name).spec is cls:
        return cls
    register_benchmark(Benchmark(name, cls))  # another class of that name: an error naming both
    return cls


def unregister_dataset_spec(cls: type[StrictModel]) -> None:
    """Forget a registered dataset spec class (tests that register one for a while)."""
    name = _spec_name(cls)
    if name in BENCHMARKS and BENCHMARKS.get(name).spec is cls:
        unregister_benchmark(name)


def _rebuild_dataset_fields() -> None:
    """The `[dataset]` union of every registered benchmark's spec class (run after each registration)."""
    # a union built at run time from the registry: values for pydantic (typed Any: no static type to check)
    union: Any = Union[tuple(dataset_spec_classes().values())]  # noqa: UP007
    tagged: Any = Annotated[union, Field(discriminator="name")]
    SweepSpec.model_fields["dataset"].annotation = tagged | None
    SweepSpec.model_fields["datasets"].annotation = list[tagged]
    SweepSpec.model_rebuild(force=True)


on_benchmarks_changed(_rebuild_dataset_fields)


def _format_error(source: str, err: ValidationError) -> str:
    """One line per error at its field path; a key no table has names the closest field it does have."""
    lines = [f"{source}: invalid sweep spec ({err.error_count()} error(s))"]
    for e in err.errors():
        path = ".".join(str(p) for p in e["loc"]) or "<root>"
        near = closest_field(SweepSpec, e["loc"]) if e["type"] == "extra_forbidden" else None
        lines.append(f"  {path}: {e['msg']}" + (f" (did you mean {near}?)" if near else ""))
    return "\n".join(lines)


def parse_spec(data: dict[str, Any], source: str = "<spec>") -> SweepSpec:
    """Validate a spec mapping; raise `SpecError` naming each bad field path."""
    try:
        return SweepSpec.model_validate(data)
    except ValidationError as err:
        raise SpecError(_format_error(source, err)) from None


def load_spec(path: str | Path, out_dir: str | Path | None = None, *, writes: bool = True) -> SweepSpec:
    """Load and validate a TOML sweep spec; `out_dir` (the CLI's --out) sets `store.out_dir`, so a spec
    needs no [store] table when it is given. A command that writes no results (`writes=False`:
    inspect, engines) needs neither: its spec gets a store in the current folder that it never uses."""
    p = Path(path)
    try:
        data = read_spec_file(p)
    except SpecFileError as err:
        raise SpecError(str(err)) from None
    if out_dir is not None and isinstance(data.get("store", {}), dict):
        data["store"] = {**data.get("store", {}), "out_dir": str(out_dir)}
    elif not writes and "store" not in data:
        data["store"] = {"out_dir": "."}
    return parse_spec(data, str(p))
