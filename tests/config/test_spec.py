import re
from pathlib import Path
from typing import Any

import pytest
from helpers.specs import small_spec_dict, write_toml

from engine.config import BudgetPoint, SpecError, load_spec, parse_spec

REPO = Path(__file__).resolve().parents[2]


def test_shipped_grids_load() -> None:
    demo = load_spec(REPO / "grids" / "demo.toml")
    assert [b.budget_id for b in demo.budgets_in_cost_order()] == ["text", "f4", "f8", "f16"]
    matched = load_spec(REPO / "grids" / "matched.toml")
    assert [b.frames for b in matched.budgets_in_cost_order()] == [0, 16, 32, 64]


def test_unknown_field_is_named_with_its_path(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path)
    d["models"][0]["engine"]["max_model_lenn"] = 10
    with pytest.raises(SpecError, match=r"models\.0\.engine\.max_model_lenn: Extra inputs are not permitted"):
        parse_spec(d, "x.toml")


def test_wrong_type_and_missing_field(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path)
    d["budgets"][1]["frames"] = "many"
    del d["store"]
    with pytest.raises(SpecError) as err:
        parse_spec(d, "x.toml")
    msg = str(err.value)
    assert "x.toml: invalid sweep spec (2 error(s))" in msg
    assert "budgets.1.frames" in msg and "store: Field required" in msg


def test_unknown_dataset_and_bad_budget(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path)
    d["dataset"] = {"name": "nope"}
    with pytest.raises(SpecError, match=r"dataset"):
        parse_spec(d)
    d = small_spec_dict(tmp_path)
    d["budgets"].append({"frames": 4, "max_pixels": 100, "short_side": 10})
    with pytest.raises(SpecError, match=r"budgets\.4: Value error, set at most one of max_pixels and short_side"):
        parse_spec(d)


def test_duplicate_budget_ids_rejected(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path)
    d["budgets"].append({"frames": 4})
    with pytest.raises(SpecError, match="duplicate budgets ids: f4"):
        parse_spec(d)


def test_toml_syntax_error_names_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("sweep_id = \n")
    with pytest.raises(SpecError, match=r"bad.toml: not valid TOML"):
        load_spec(bad)
    with pytest.raises(SpecError, match="spec file not found"):
        load_spec(tmp_path / "missing.toml")


def test_budget_ids_are_derived_and_stable() -> None:
    assert BudgetPoint(frames=0).budget_id == "text"
    assert BudgetPoint(frames=16, max_pixels=200704).budget_id == "f16-px200704"
    assert BudgetPoint(frames=32, policy="random", seed=3).budget_id == "f32-random-seed3"
    assert BudgetPoint(frames=8, id="custom").budget_id == "custom"
    with pytest.raises(ValueError):
        BudgetPoint(frames=0, short_side=224)


def test_unknown_policy_fails_at_load(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path)
    d["budgets"][2]["policy"] = "bogus"
    with pytest.raises(SpecError, match=r"budgets\.2\.policy: Value error, unknown sampling policy 'bogus'; known: "):
        parse_spec(d)
    d["budgets"][2]["policy"] = "fps@2"
    assert parse_spec(d).budgets[2].budget_id == "f4-fps@2"


@pytest.mark.parametrize(("policy", "reason"), [
    ("dense_head@2", "head fraction must be in"),
    ("dense_head@0", "head fraction must be in"),
    ("fps@0", "rate must be a positive"),
    ("fps@-1", "rate must be a positive"),
    ("fps@inf", "not a finite number"),
    ("fps@nan", "not a finite number"),
    ("nested@2", "budget 4 exceeds the largest budget 2"),
    ("nested@2.5", "must be a positive integer"),
])
def test_bad_policy_parameter_fails_validation_naming_the_field(tmp_path: Path, policy: str, reason: str) -> None:
    d = small_spec_dict(tmp_path)  # budgets: text, 2, 4, 8 frames
    d["budgets"][2]["policy"] = policy
    with pytest.raises(SpecError, match=rf"budgets\.2\.policy: Value error, .*{reason}"):
        parse_spec(d)


def test_bad_policy_parameter_exits_2_before_any_work(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from engine.cli.app import app

    d = small_spec_dict(tmp_path / "out")
    d["budgets"][1]["policy"] = "fps@inf"
    res = CliRunner().invoke(app, ["run", str(write_toml(tmp_path / "s.toml", d))])
    assert res.exit_code == 2
    assert "budgets.1.policy" in res.output and "finite" in res.output
    assert not (tmp_path / "out").exists()  # no manifest, no results directory


def test_spec_reference_in_docs_is_current() -> None:
    from engine.config.reference import reference_markdown

    doc = REPO / "docs" / "spec-reference.md"
    assert doc.read_text() == reference_markdown(), \
        "docs/spec-reference.md is stale: regenerate it with `framesweep spec --reference > docs/spec-reference.md`"
    for field in ("max_new_tokens", "kv_cache_gib", "deadline_base_s", "out_dir"):
        assert f"`{field}`" in doc.read_text()


def test_spec_example_is_a_complete_valid_spec(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from engine.cli.app import app

    res = CliRunner().invoke(app, ["spec", "--example"])
    assert res.exit_code == 0
    (tmp_path / "example.toml").write_text(res.output)
    spec = load_spec(tmp_path / "example.toml")
    assert spec.models[0].engine.kv_cache_gib == 1.0 and spec.prompt.max_new_tokens == 16
    assert "# Token limit for `generate` scoring." in res.output
    # every table a spec can have is there, the optional ones commented out with their fields
    for table in ("[predictor]", "# [models.checkpoint]", "# [[grids]]", "# [[iso_compute]]", "[[datasets]]",
                  "# [models.http]", "# train_frames = 16", "# total_pixels = 9700000"):
        assert table in res.output, table


def test_protocol_ids_are_budget_ids_without_the_frames_and_cached_joins_the_id() -> None:
    cases = [(BudgetPoint(frames=16), "f16", "default"),
             (BudgetPoint(frames=16, max_pixels=50176), "f16-px50176", "px50176"),
             (BudgetPoint(frames=32, policy="random", seed=1), "f32-random-seed1", "random-seed1"),
             (BudgetPoint(frames=32, pipeline="cached"), "f32-cached", "cached"),
             (BudgetPoint(frames=32, pipeline="raw"), "f32", "default"),
             (BudgetPoint(frames=16, short_side=292, policy="random", seed=1, pipeline="cached"),
              "f16-s292-random-seed1-cached", "s292-random-seed1-cached")]
    assert [(b.budget_id, b.protocol_id) for b, _, _ in cases] == [(i, p) for _, i, p in cases]
    with pytest.raises(ValueError, match="takes no cached pipeline"):
        BudgetPoint(frames=0, pipeline="cached")


def test_budget_pipeline_defaults_to_the_decode_setting_and_both_run_in_one_spec(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path, budgets=[{"frames": 0}, {"frames": 2}, {"frames": 2, "pipeline": "cached"}])
    assert [b.budget_id for b in parse_spec(d).budgets] == ["text", "f2", "f2-cached"]
    d = small_spec_dict(tmp_path, budgets=[{"frames": 0}, {"frames": 2}, {"frames": 2, "pipeline": "raw"}],
                        decode={"pipeline": "cached"})
    spec = parse_spec(d)
    assert [(b.budget_id, b.pipeline) for b in spec.budgets] == [("text", None), ("f2-cached", "cached"),
                                                                 ("f2", "raw")]



def test_a_grid_budget_takes_the_decode_pipeline_before_it_is_matched_with_a_hand_given_one(tmp_path: Path) -> None:
    """With [decode] pipeline = "cached", a grid's 4-frame budget is f4-cached: a hand-given raw f4 is
    another budget (both run), and a hand-given cached f4 is the same budget (given twice, run once)."""
    cached = {"pipeline": "cached", "cache_dir": str(tmp_path / "c")}
    d = small_spec_dict(tmp_path, budgets=[{"frames": 0}, {"frames": 4, "pipeline": "raw"}], grids=[{"frames": [4, 8]}],
                        decode=cached)
    assert [(b.budget_id, b.pipeline) for b in parse_spec(d).budgets] == [
        ("text", None), ("f4", "raw"), ("f4-cached", "cached"), ("f8-cached", "cached")]
    d = small_spec_dict(tmp_path, budgets=[{"frames": 0}, {"frames": 4, "pipeline": "cached"}],
                        grids=[{"frames": [4, 8]}], decode=cached)
    assert [b.budget_id for b in parse_spec(d).budgets] == ["text", "f4-cached", "f8-cached"]
    d = small_spec_dict(tmp_path, budgets=[{"frames": 0}, {"frames": 4}], grids=[{"frames": [4, 8]}])
    assert [b.budget_id for b in parse_spec(d).budgets] == ["text", "f4", "f8"]


def test_two_budgets_of_one_protocol_with_the_same_frames_are_an_error(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path, budgets=[{"frames": 4}, {"frames": 4, "id": "four"}])
    same = r"budgets f4 and four have the same frame count \(4\) and protocol \(default\)"
    with pytest.raises(SpecError, match=same):
        parse_spec(d)


def test_primary_protocol_must_name_a_protocol_of_the_budgets(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path, budgets=[{"frames": 2}, {"frames": 2, "max_pixels": 5000}],
                        primary_protocol="px5000")
    assert parse_spec(d).primary_protocol == "px5000"
    with pytest.raises(SpecError, match=r"primary_protocol 'px9' is no protocol of the budgets; known: default, px50"):
        parse_spec({**d, "primary_protocol": "px9"})


def test_iso_compute_tables_expand_into_budgets_at_load(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path, budgets=[{"frames": 0}],
                        iso_compute=[{"total_pixels": 9_830_400, "frames": [32, 64, 128], "axis": "short_side"}])
    assert [b.budget_id for b in parse_spec(d).budgets] == ["text", "f32-s414", "f64-s292", "f128-s206"]
    d["iso_compute"] = [{"total_pixels": 9_700_000}]
    assert [b.budget_id for b in parse_spec(d).budgets] == ["text", "f32-px303125", "f64-px151562",
                                                            "f128-px75781"]


def test_inspect_needs_no_store_table_and_run_still_asks_for_one(tmp_path: Path) -> None:
    """A spec written for `run --out DIR` has no [store]: inspect (which writes nothing) reads it; a
    command that writes results without --out names the missing field."""
    from typer.testing import CliRunner

    from engine.cli import app

    d = small_spec_dict(tmp_path / "out")
    del d["store"]
    d["dataset"]["root"] = str(tmp_path / "synthetic")
    path = write_toml(tmp_path / "spec.toml", d)
    res = CliRunner().invoke(app, ["inspect", str(path)])
    assert res.exit_code == 0, res.output
    assert "synthetic" in res.output and not (tmp_path / "out").exists()
    res = CliRunner().invoke(app, ["run", str(path)])
    assert res.exit_code == 2 and "store" in res.output


def _cli(*args: str) -> tuple[int, str]:
    from typer.testing import CliRunner

    from engine.cli.app import app

    res = CliRunner().invoke(app, list(args))
    return res.exit_code, res.output


def test_a_spec_file_that_cannot_be_read_is_one_sentence_naming_it(tmp_path: Path) -> None:
    """Not UTF-8 (the byte's offset and line), a directory, a name the file system refuses, a NUL byte in the
    text or the path, tables nested without end: each a SpecError naming the file (exit 2 from `run` and
    `inspect`), never a UnicodeDecodeError, IsADirectoryError, OSError or RecursionError."""
    cases = {
        "latin1.toml": (b'sweep_id = "ok"\nname = "caf\xe9"\n', r"not UTF-8 text: byte 0xe9 at offset 27 \(line 2, "
                        r"column 12\)"),
        "nul.toml": (b'sweep_id = "a\x00"\n', r"not valid TOML: .*line 1"),
        "deep.toml": (b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n", "tables or arrays nested too deeply to read"),
        "deep40.toml": (b"a = " + b"[" * 40 + b"]" * 40 + b"\n", "tables or arrays nested more than 32 levels deep"),
    }
    for name, (data, why) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(SpecError, match=rf"^{re.escape(str(tmp_path / name))}: {why}"):
            load_spec(tmp_path / name)
    (tmp_path / "dir.toml").mkdir()
    with pytest.raises(SpecError, match=r"dir\.toml: is a directory, not a spec file$"):
        load_spec(tmp_path / "dir.toml")
    with pytest.raises(SpecError, match=r"a{300}\.toml: the file name is too long for the file system$"):
        load_spec(tmp_path / ("a" * 300 + ".toml"))
    with pytest.raises(SpecError, match=r"a\\x00b\.toml: a spec path cannot hold a NUL byte$"):
        load_spec(tmp_path / "a\x00b.toml")
    for name in ("latin1.toml", "deep.toml", "dir.toml"):
        for command in ("run", "inspect"):
            code, out = _cli(command, str(tmp_path / name))
            assert code == 2 and name in out and "Traceback" not in out, (command, name, out)


@pytest.mark.parametrize(("where", "value", "field"), [
    (("models", 0, "engine", "kv_cache_gib"), float("inf"), "models.0.engine.kv_cache_gib: Input should be a finite"),
    (("models", 0, "engine", "mm_processor_cache_gb"), float("inf"), "models.0.engine.mm_processor_cache_gb: Input "
     "should be a finite"),
    (("models", 0, "engine", "deadline_base_s"), float("inf"), "models.0.engine.deadline_base_s: Input should be "
     "a finite"),
    (("models", 0, "engine", "placement_timeout_s"), float("nan"), "models.0.engine.placement_timeout_s: Input "
     "should be a finite"),
    (("models", 0, "engine", "num_gpus"), float("inf"), "models.0.engine.num_gpus"),
    (("models", 0, "engine", "extra"), {"tensor_parallel_size": float("inf")}, "models.0.engine.extra: Value error, "
     "tensor_parallel_size = inf: give a finite number"),
    (("models", 0, "engine", "extra"), {"tensor_parallel_size": 2.5}, "tensor_parallel_size must be a whole number"),
    (("models", 0, "engine", "extra"), {"swap": {"x": [float("nan")]}}, "swap.x.0 = nan: give a finite number"),
    (("decode", "actor_cpus"), float("inf"), "decode.actor_cpus: Input should be a finite"),
    (("store", "commit_interval_s"), float("inf"), "store.commit_interval_s: Input should be a finite"),
    (("dataset", "seconds"), float("nan"), "dataset.synthetic.seconds: Input should be a finite"),
    (("dataset", "seed"), -1, "dataset.synthetic.seed: Input should be greater than or equal to 0"),
    (("budgets", 2, "seed"), -1, "budgets.2.seed: Input should be greater than or equal to 0"),
    (("budgets", 2, "seed"), 2**63, "budgets.2.seed: Input should be less than or equal to"),
    (("budgets", 2, "policy"), "uniform@", "budgets.2.policy: Value error, sampling policy 'uniform@' has nothing "
     "after '@'"),
    (("budgets", 2, "policy"), "fps@ ", "has nothing after '@'"),
])
def test_values_that_pass_but_cannot_work_are_refused_naming_the_field(
        tmp_path: Path, where: tuple, value: object, field: str) -> None:
    """inf/nan in an engine setting crashed the engine actor (`int(inf)`) with no rows; a negative seed made
    every random-policy job an error row on every run; `uniform@` was a second, silent copy of uniform."""
    d = small_spec_dict(tmp_path)
    target: Any = d
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    with pytest.raises(SpecError) as err:
        parse_spec(d, "x.toml")
    assert field in str(err.value)


@pytest.mark.parametrize(("table", "field"), [
    ({"grids": [{"frames": [4], "policies": ["uniform", "bogus"]}]}, "grids.0.policies.1: Value error, unknown "
     "sampling policy 'bogus'"),
    ({"grids": [{"frames": [4, 8], "policies": ["nested@4"]}]}, "grids.0.policies.0: Value error, "
     ".*exceeds the largest budget 4"),
    ({"grids": [{"frames": [4], "policies": ["random@"]}]}, "grids.0.policies.0: .*nothing after '@'"),
    ({"grids": [{"frames": [4], "seeds": [0, -2]}]}, r"grids.0.seeds.1: Input should be greater than or equal to 0"),
    ({"grids": [{"frames": [4], "max_pixels": [0]}]}, r"grids.0.max_pixels.0: Input should be greater than 0"),
    ({"iso_compute": [{"total_pixels": 100_000, "policy": "bogus"}]}, "iso_compute.0.policy: Value error, unknown "
     "sampling policy 'bogus'"),
    ({"iso_compute": [{"total_pixels": 100_000, "frames": [8, 0]}]}, "iso_compute.0.frames.1: Input should be "
     "greater than 0"),
    ({"iso_compute": [{"total_pixels": 100, "frames": [64]}]}, "iso_compute.0: Value error, 64 frames leave fewer "
     "than 4 pixels"),
    ({"iso_compute": [{"total_pixels": 100_000, "seed": -1}]}, "iso_compute.0.seed: Input should be greater"),
])
def test_a_bad_policy_or_value_inside_grids_and_iso_compute_keeps_its_field_path(
        tmp_path: Path, table: dict, field: str) -> None:
    """Such errors were raised while the grids were expanded, at the spec's root (`policy: ...` or `<root>:`)."""
    d = small_spec_dict(tmp_path, **table)
    with pytest.raises(SpecError, match=rf"\n  {field}"):
        parse_spec(d, "x.toml")
