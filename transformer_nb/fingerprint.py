"""What a piece of Python code *does*, as a digest: blind to comments, docstrings and layout.

Two digests in the companion follow behaviour, not text, through this one function:

- a notebook's freshness stamp (``tests/notebook_harness.py``): a module's digest changes, and the
  notebooks that imported it become stale, only when its code changes;
- a cached model's code digest (``cache.py``): a docstring edit keeps every trained model valid.

The digest is built from the token stream (``tokenize``), so it is the same on every Python version
that reads the file: comments, blank lines, indentation width and line breaks inside brackets are
dropped; docstrings (a string expression first in a module, class or function body, found with
``ast``) are dropped; every other token, string constants included, counts.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import io
import itertools
import textwrap
import tokenize

__all__ = ["source_digest"]

_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
_DOC = {tokenize.STRING, tokenize.NEWLINE}  # a docstring and the end of its statement


def _docstring_lines(tree: ast.AST) -> set[int]:
    """Line numbers covered by docstrings in ``tree``."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def _tokens(src: str):
    """The behaviour-carrying token strings of ``src``; an f-string is one token on every Python."""
    skip_lines = _docstring_lines(ast.parse(src))
    starts = [0, *itertools.accumulate(map(len, src.splitlines(keepends=True)))]  # where each line begins
    fstring_start, fstring_end = getattr(tokenize, "FSTRING_START", -1), getattr(tokenize, "FSTRING_END", -1)
    depth, begin = 0, 0
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == fstring_start:  # Python >= 3.12 splits f-strings; keep the whole literal
            depth, begin = depth + 1, begin if depth else starts[tok.start[0] - 1] + tok.start[1]
        elif tok.type == fstring_end:
            depth -= 1
            if not depth:
                yield src[begin : starts[tok.end[0] - 1] + tok.end[1]]
        elif depth or tok.type in _SKIP or (tok.type in _DOC and tok.start[0] in skip_lines):
            continue
        elif tok.type in (tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE):
            yield tokenize.tok_name[tok.type]
        else:
            yield tok.string


def source_digest(src: str) -> str:
    """16 hex digits of sha256 over the tokens of ``src`` that carry behaviour.

    Source that does not parse is digested as raw text (any edit then counts).
    """
    if not isinstance(src, str):
        raise TypeError(f"src must be Python source text (a str), got {type(src).__name__} {src!r}")
    return _digest(src)


@functools.lru_cache(maxsize=512)
def _digest(src: str) -> str:
    """``source_digest`` of checked ``src``, computed once per source text (an edited source is a new key)."""
    try:
        text = "\x1f".join(_tokens(textwrap.dedent(src)))  # a method's source comes indented
    except (SyntaxError, tokenize.TokenError):
        text = src
    return hashlib.sha256(text.encode()).hexdigest()[:16]
