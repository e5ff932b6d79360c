"""Reading an OpenAI-compatible chat completion, whatever the server put in its JSON.

A reply is checked field by field before anything is scored: a field of the wrong type (a string
where the logprobs should be, a list for the message, a count that is no whole number) is a
`MalformedReply` naming the field, and a log-probability that is no log-probability (NaN, +inf,
above 0, not a number) is an `AbsurdLogprob` naming the token; either fails its own request only.
"""

from __future__ import annotations

from typing import Any

from engine.backends.base import EngineRequest, EngineResult
from engine.scoring import checked_logprob, letter_logprobs

__all__ = ["MalformedReply", "read_reply"]


class MalformedReply(ValueError):
    """A 200 reply that cannot be scored (missing fields, no logprobs where letter scoring needs them)."""

    def __init__(self, message: str, kind: str = "MalformedReply") -> None:
        super().__init__(message)
        self.kind = kind


def _typed(value: Any, kind: type | tuple[type, ...], field: str, *, optional: bool = True) -> Any:
    """`value` when it is of `kind` (or None, when optional), else MalformedReply naming the field."""
    if (value is None and optional) or isinstance(value, kind):
        return value
    what = "missing" if value is None else f"a JSON {type(value).__name__}"
    raise MalformedReply(f"unreadable chat completion: {field} is {what}")


def _count(usage: dict[str, Any], key: str) -> int | None:
    value = usage.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31):
        return value
    raise MalformedReply(f"unreadable chat completion: usage.{key} is {repr(value)[:40]}, not a token count")


def _tokens(content: list[Any]) -> list[dict[str, Any]]:
    """The reply's per-token logprob entries, each a dict whose token (if any) is text and whose top_logprobs are a
    list of such dicts."""
    for k, c in enumerate(content):
        _typed(c, dict, f"logprobs.content[{k}]", optional=False)
        _typed(c.get("token"), str, f"logprobs.content[{k}].token")
        for j, t in enumerate(_typed(c.get("top_logprobs"), list, f"logprobs.content[{k}].top_logprobs") or []):
            _typed(t, dict, f"logprobs.content[{k}].top_logprobs[{j}]", optional=False)
            _typed(t.get("token"), str, f"logprobs.content[{k}].top_logprobs[{j}].token")
    return content


def _letter_logprobs(first: dict[str, Any] | None, letters: list[str]) -> dict[str, float]:
    """The option letters' log-probabilities among the first token's alternatives (-inf: not returned)."""
    out: dict[str, float] = {}
    for t in (first or {}).get("top_logprobs") or []:
        tok, lp = t.get("token"), t.get("logprob")
        if tok in letters and lp is not None:
            value = checked_logprob(lp, f"option letter {tok!r}")
            if value != float("-inf"):
                out[tok] = value
    return out


def read_reply(r: EngineRequest, data: Any, *, engine_s: float, worker: str | None,
               engine_version: str | None) -> EngineResult:
    """The engine result of one chat completion for request `r`.

    Raises:
        MalformedReply: A field is missing or of the wrong type, or letter scoring gets no logprobs (`NoLogprobs`).
        AbsurdLogprob: A log-probability is no log-probability (`engine.scoring.checked_logprob`).
    """
    _typed(data, dict, "the reply", optional=False)
    choices = _typed(data.get("choices"), list, "choices", optional=False)
    if not choices:
        raise MalformedReply("unreadable chat completion: choices is empty")
    choice = _typed(choices[0], dict, "choices[0]", optional=False)
    message = _typed(choice.get("message"), dict, "choices[0].message", optional=False)
    text = _typed(message.get("content"), str, "choices[0].message.content") or ""
    logprobs = _typed(choice.get("logprobs"), dict, "choices[0].logprobs") or {}
    content = _tokens(_typed(logprobs.get("content"), list, "choices[0].logprobs.content") or [])
    if r.mode == "letter" and not content:
        raise MalformedReply(
            "the server answered without logprobs, so the option-letter distribution is unknown "
            "(letter scoring needs them; vLLM: start the server with --logprobs-mode processed_logprobs)",
            kind="NoLogprobs")
    lps = [checked_logprob(c["logprob"], f"generated token {k} ({c.get('token')!r})")
           for k, c in enumerate(content) if c.get("logprob") is not None]
    token_letters = [(c.get("token") or "", letter_logprobs(
        ((t.get("token") or "", t.get("logprob")) for t in [c, *(c.get("top_logprobs") or [])]), r.letters))
        for c in content] if r.mode == "generate" and r.letters else None
    usage = _typed(data.get("usage"), dict, "usage") or {}
    return EngineResult(
        request_id=r.request_id,
        text=text,
        letter_logprobs=_letter_logprobs(content[0] if content else None, r.letters),
        prompt_tokens=_count(usage, "prompt_tokens"),
        output_tokens=_count(usage, "completion_tokens"),
        mean_logprob=sum(lps) / len(lps) if lps else None,
        token_letters=token_letters,
        engine_s=engine_s,
        worker=worker,
        engine_version=engine_version,
    )
