"""The peer benchmark's lmms-eval task over framesweep's synthetic items (see benchmarks/peer_sweep.py)."""

from __future__ import annotations

from typing import Any


def doc_to_visual(doc: dict[str, Any]) -> list[str]:
    return [doc["video"]]


def doc_to_no_visual(doc: dict[str, Any]) -> list[str]:
    return []


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    kw = lmms_eval_specific_kwargs or {}
    return f"{kw.get('pre_prompt', '')}{doc['question']}\n" + "\n".join(doc["options"]) + kw.get("post_prompt", "")


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    from lmms_eval.tasks._task_utils.mcq_extract import extract_mcq_answer

    letters = [o.split(".", 1)[0] for o in doc["options"]]
    pred = extract_mcq_answer(results[0], choices=letters)
    return {"fs_peer_score": {"question_id": doc["question_id"], "pred_answer": pred, "answer": doc["answer"],
                              "score": float(pred == doc["answer"])}}


def aggregate(results: list[dict[str, Any]]) -> float:
    return 100.0 * sum(r["score"] for r in results) / max(len(results), 1)
