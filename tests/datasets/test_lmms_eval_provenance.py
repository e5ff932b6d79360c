"""import-lmms-eval records what every import read (lmms-eval version, model_args, task hash), keeps
lmms-eval's own parse as it is (empty when it found none), and says what an import with another
--extraction does."""

from __future__ import annotations

import json
from pathlib import Path

from test_lmms_eval_runs import HUB_ID, N_ITEMS, RUNS, _write_run
from typer.testing import CliRunner

from engine.cli import app
from engine.results.lmms_eval import find_runs, import_lmms_eval, run_rows
from engine.results.manifest import read_manifest


def test_every_import_is_recorded_with_its_logs(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    first = _write_run(logs / "a", *RUNS[1])  # max_num_frames=4
    second = _write_run(logs / "b", *RUNS[2], model_args=f"pretrained={HUB_ID},max_num_frames=8,fps=None")
    out = tmp_path / "out"
    import_lmms_eval([first], out)
    import_lmms_eval([second], out, extraction="strict")
    manifest = read_manifest(out)
    assert manifest["runs"] == [str(first), str(second)]  # every import's logs, not the first one's only
    one, two = manifest["imports"]
    (log1,), (log2,) = one["logs"], two["logs"]
    assert (one["extraction"], two["extraction"]) == (None, "strict")
    assert log1 == {**log1, "samples": str(first), "task": "videomme", "budget_id": "f4", "frames": 4,
                    "rows": N_ITEMS, "lmms_eval_version": "0.7.2", "task_hash": "5c0b2e",
                    "model_args": f"pretrained={HUB_ID},max_num_frames=4,max_pixels=602112",
                    "run_date": RUNS[1][0]}
    assert log2["model_args"] == f"pretrained={HUB_ID},max_num_frames=8,fps=None" and log2["budget_id"] == "f8"
    from engine.provenance import run_provenance

    prov = run_provenance(out)
    assert prov["source"] == "lmms-eval" and prov["imports"] == manifest["imports"]
    assert prov["rows"]["rows"] == 2 * N_ITEMS


def _log(root: Path, samples: list[dict]) -> Path:
    d = root / "model"
    d.mkdir(parents=True)
    (d / "20250101_000000_samples_videomme.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    return d


def test_pred_extracted_is_lmms_evals_own_parse(tmp_path: Path) -> None:
    """lmms-eval's Video-MME parse leaves pred_answer "" when its regex finds no letter: that is what it
    read, not the response (which older imports put there)."""
    none = {"question_id": "q0", "pred_answer": "", "answer": "B", "score": 0}
    letter = {"question_id": "q1", "pred_answer": "C", "answer": "C", "score": 1}
    vague = "I cannot tell from the video"
    samples = [{"doc_id": 0, "resps": [[vague]], "filtered_resps": [vague], "videomme_perception_score": none},
               {"doc_id": 1, "resps": [["C. a cat"]], "filtered_resps": ["C. a cat"], "videomme_perception_score": letter},
               {"doc_id": 2, "resps": [["a red ball"]], "filtered_resps": ["red ball"], "token_f1": 0.5}]
    (run,) = find_runs([_log(tmp_path, samples)])
    rows = list(run_rows(run, frames=8))
    assert [r.pred_extracted for r in rows] == ["", "C", "red ball"]  # the last: its filters' output
    assert [r.pred for r in rows] == [None, "C", "red ball"]
    assert rows[0].response == vague
    assert [r.correct for r in rows][:2] == [False, True]


def test_reimport_with_another_extraction_says_what_it_does(tmp_path: Path) -> None:
    answers = [("Answer: C", "C", "C"), ("Best answer: D", "D", "D"), ("I think it is option B, not C", "C", "B")]
    samples = [{"doc_id": i, "resps": [[resp]], "filtered_resps": [resp], "doc": {"options": ["A. w", "B. x", "C. y",
                                                                                           "D. z"]},
                "videomme_perception_score": {"question_id": f"q{i}", "pred_answer": got, "answer": want,
                                              "score": int(got == want)}}
               for i, (resp, got, want) in enumerate(answers)]
    logs, out = _log(tmp_path / "logs", samples), tmp_path / "out"
    base = ["import-lmms-eval", str(logs), "--out", str(out), "--frames", "8"]
    res = CliRunner().invoke(app, base)
    assert res.exit_code == 0, res.output
    assert "multiple-choice answers: lmms-eval's own parse (also in pred_extracted)" in res.output
    res = CliRunner().invoke(app, [*base, "--extraction", "strict"])  # strict reads item 2 as B: one answer changes
    assert res.exit_code == 2
    said = " ".join(res.output.split())
    assert (f"{out} holds these logs' answers read by lmms-eval's own parse; reading them with --extraction strict "
            "would change 1 of 3 answers") in said
    assert "nothing was written" in said and "import into another --out to compare the two readings" in said
    res = CliRunner().invoke(app, [*base[:3], str(tmp_path / "strict"), *base[4:], "--extraction", "strict"])
    assert res.exit_code == 0, res.output
    assert "read again with --extraction strict (lmms-eval's own parse kept in pred_extracted)" in res.output
