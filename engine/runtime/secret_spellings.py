"""Every spelling a secret may come back in, as one regular expression (`secret_pattern`).

A server, a library or a log may give a secret back in another spelling than it was sent in. The
pattern finds it:

- character by character, each character in any of its text spellings, mixed freely: raw (in either
  case: a server that upper-cases what it echoes); JSON-escaped (`\\/` for `/`, `\\uXXXX` for any
  character, `\\"`, `\\\\`); Python's `\\'`; URL-encoded once or twice (`%XX` and `%25XX`, hex in
  either case, `+` for a space); an HTML character reference (`&#NN;`, `&#xNN;`, `&amp;` and the
  other named ones);
- as a whole: its UTF-8 bytes in hex (either case), and in base64, standard or URL-safe, padded or
  not, at each of the three alignments it can take inside a longer encoded text (`user:KEY` in Basic
  auth): the characters that encode its bytes, the last one matched by the values it can take with
  the unknown byte after it, and its padding (the first one, shared with the unknown byte before,
  is left: it holds at most 4 bits of the secret);
- split across lines: any run of spaces, tabs and line breaks (or JSON's `\\n`, `\\r`, `\\t`)
  between two characters, as a wrapped base64 block or a hard-wrapped log line has them.

The pattern is written once for both regex engines that run it, Python's `re` (`redact`) and
Polars' Rust `regex` (`redact_columns`): every character that is not an ASCII letter or digit is
written as a `\\x`/`\\u` escape, which both read the same way, inside a class or out.
"""

from __future__ import annotations

import html.entities
import json
from functools import cache

__all__ = ["secret_pattern"]

_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_URL = {"+": "-", "/": "_"}  # the URL-safe alphabet's two other characters
# a line break or indentation inside a secret (wrapped), raw or JSON-escaped
_SPLIT = "(?:[\\x09\\x0a\\x0d\\x20]|\\x5c[nrt])*"


def _escape(c: str) -> str:
    """`c` as a regular expression both Python's `re` and Polars' (Rust) regex read the same way."""
    if c.isascii() and c.isalnum():
        return c
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x80 else f"\\u{n:04x}" if n <= 0xFFFF else f"\\U{n:08x}"


def _hex(text: str) -> str:
    """Hex digits as a pattern matching them in either case (`2f` and `2F`)."""
    return "".join(f"[{h.lower()}{h.upper()}]" if h.isalpha() else h for h in text)


def _json_u(c: str) -> str:
    """The `\\uXXXX` escape(s) of `c` (a surrogate pair beyond the BMP), hex in either case."""
    units = c.encode("utf-16-be")
    return "".join("\\x5cu" + _hex(units[i:i + 2].hex()) for i in range(0, len(units), 2))


def _url(c: str) -> str:
    """`c` URL-encoded, once (`%2F`) or twice (`%252F`), hex in either case."""
    return "".join("%(?:25)?" + _hex(f"{b:02x}") for b in c.encode())


@cache
def _entity_names() -> dict[str, tuple[str, ...]]:
    """Character -> the names of its HTML character references (`&` -> `amp;`, `AMP;`)."""
    names: dict[str, list[str]] = {}
    for name, value in html.entities.html5.items():
        if name.endswith(";") and len(value) == 1:
            names.setdefault(value, []).append(name)
    return {c: tuple(sorted(v)) for c, v in names.items()}


def _html(c: str) -> list[str]:
    """`c` as an HTML character reference: decimal, hex (`x` in either case, leading zeros) or named."""
    n = ord(c)
    refs = [f"\\x26\\x230*{n}\\x3b", f"\\x26\\x23[xX]0*{_hex(f'{n:x}')}\\x3b"]
    refs += ["\\x26" + "".join(_escape(x) for x in name) for name in _entity_names().get(c, ())]
    return refs


def _cased(c: str) -> str:
    """`c` raw, in either case where it has one (a letter whose other case is one character)."""
    lower, upper = c.lower(), c.upper()
    if len(lower) == len(upper) == 1 and lower != upper:
        return f"[{_escape(lower)}{_escape(upper)}]"
    return _escape(c)


def _char_pattern(c: str) -> str:
    """Every text spelling of one character (see the module docstring)."""
    alts = [_json_u(c), _url(c)]
    short = json.dumps(c)[1:-1]  # \" \\ \n ... (json.dumps writes non-ASCII as \uXXXX: covered above)
    if short != c and not short.startswith("\\u"):
        alts.append("".join(_escape(x) for x in short))
    if c == "/":
        alts.append("\\x5c\\x2f")  # \/ (JSON may escape a slash)
    if c == "'":
        alts.append("\\x5c\\x27")  # \' (Python's repr)
    if c == " ":
        alts.append("\\x2b")  # + (quote_plus)
    alts += _html(c)
    alts.append(_cased(c))  # last: a backslash's escape `\\` begins with the backslash itself
    return "(?:" + "|".join(dict.fromkeys(alts)) + ")"


def _b64_char(values: list[int]) -> str:
    """A base64 character taking any of `values` (6-bit), in either alphabet; `/` also as JSON's `\\/` and
    `+`, `/` URL-encoded."""
    chars = [_B64[v] for v in values]
    chars += [_B64_URL[c] for c in chars if c in _B64_URL]
    alts = ["[" + "".join(_escape(c) for c in chars) + "]" if len(chars) > 1 else _escape(chars[0])]
    if "/" in chars:
        alts += ["\\x5c\\x2f", "%2[fF]"]
    if "+" in chars:
        alts.append("%2[bB]")
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _b64_pattern(data: bytes, offset: int) -> str:
    """`data` in base64 when it starts `offset` bytes (0, 1 or 2) into a 3-byte group of a longer text: from the
    first character all of whose 6 bits are `data`'s, every character any of whose bits are, the last one
    matched by the values its other (unknown) bits allow. The character before, shared with the unknown byte
    before, is left (at most 4 bits of the secret: a pattern starting with a many-valued class would test
    nearly every position of every text)."""
    start, end = 8 * offset, 8 * (offset + len(data))
    bits = "".join(f"{b:08b}" for b in data)
    chars = []
    for lo in range(start + (-start) % 6, end, 6):
        known = {p - lo: bits[p - start] for p in range(max(lo, start), min(lo + 6, end))}
        values = [v for v in range(64) if all(f"{v:06b}"[i] == b for i, b in known.items())]
        chars.append(_b64_char(values))
    pad = "(?:\\x3d{1,2})?" if end % 24 else ""  # the text may end with the key: its padding goes with it
    return _SPLIT.join(chars) + pad


def _bytes_patterns(secret: str) -> list[str]:
    """The secret's UTF-8 bytes in hex and in base64 at each alignment (see the module docstring)."""
    data = secret.encode()
    hexed = _SPLIT.join(_hex(f"{b:02x}") for b in data)
    return [hexed, *(_b64_pattern(data, k) for k in range(3))]


def secret_pattern(secret: str) -> str:
    """A regular expression matching `secret` in each of its spellings (see the module docstring)."""
    text = _SPLIT.join(_char_pattern(c) for c in secret)
    return "(?:" + "|".join([text, *_bytes_patterns(secret)]) + ")"

