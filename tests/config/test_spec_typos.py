"""A misspelt spec key names the closest field of its own table, wherever the table is in the spec."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.specs import small_spec_dict

from engine.config import SpecError, parse_spec


def _error(tmp_path: Path, **change: object) -> str:
    d = small_spec_dict(tmp_path / "out")
    for where, value in change.items():
        table: dict = d
        *path, key = where.split("__")
        for part in path:
            table = table[int(part)] if part.isdigit() else table.setdefault(part, {})  # type: ignore[index]
        table[key] = value
    with pytest.raises(SpecError) as err:
        parse_spec(d, "s.toml")
    return str(err.value)


@pytest.mark.parametrize(("where", "said"), [
    ("models__0__engine__max_model_lenn", "models.0.engine.max_model_lenn: Extra inputs are not permitted "
                                          "(did you mean max_model_len?)"),
    ("models__0__famly", "models.0.famly: Extra inputs are not permitted (did you mean family?)"),
    ("dataset__n_vidoes", "dataset.synthetic.n_vidoes: Extra inputs are not permitted (did you mean n_videos?)"),
    ("budgets__1__framse", "budgets.1.framse: Extra inputs are not permitted (did you mean frames?)"),
    ("store__out_dri", "store.out_dri: Extra inputs are not permitted (did you mean out_dir?)"),
    ("prompt__sytem", "prompt.sytem: Extra inputs are not permitted (did you mean system_prompt?)"),
    ("decode__decodr", "decode.decodr: Extra inputs are not permitted (did you mean decoder?)"),
    ("sweep_di", "sweep_di: Extra inputs are not permitted (did you mean sweep_id?)"),
])
def test_a_misspelt_key_names_the_closest_field(tmp_path: Path, where: str, said: str) -> None:
    assert said in _error(tmp_path, **{where: 1})


def test_tables_in_lists_and_each_adapters_table_get_their_own_fields(tmp_path: Path) -> None:
    d = small_spec_dict(tmp_path / "out")
    d["grids"] = [{"frames": [2], "max_pixel": [50176]}]
    d["models"][0]["http"] = {"base_url": "http://127.0.0.1:1", "timeout": 3}
    d["datasets"] = [d.pop("dataset"), {"name": "videomme", "annotations": "a.parquet", "media_root": ".",
                                        "limt": 3}]
    with pytest.raises(SpecError) as err:
        parse_spec(d, "s.toml")
    text = str(err.value)
    assert "grids.0.max_pixel: Extra inputs are not permitted (did you mean max_pixels?)" in text
    assert "models.0.http.timeout: Extra inputs are not permitted (did you mean timeout_s?)" in text
    assert "datasets.1.videomme.limt: Extra inputs are not permitted (did you mean limit?)" in text


def test_a_key_like_no_field_gets_no_guess(tmp_path: Path) -> None:
    text = _error(tmp_path, decode__zzz=1)
    assert "decode.zzz: Extra inputs are not permitted" in text and "did you mean" not in text
