"""The reading path of the core: the code a student reads from attention to generation, and its length.

    python tools/reading_path.py          # the files and objects, their lines, the total; exit 1 above LIMIT

The path is the decoder-only language model: scaled dot-product attention, the causal mask, multi-head
attention with its KV cache, the feed-forward layer, the block, the stack, ``Transformer`` as a language model,
``generate``, and the configuration they are built from. A file counts with its module docstring and imports;
an object with its decorators, docstring, comments and blank lines. What the language model does not use and
that shares a file (padding masks, the encoder-decoder's ``DecoderLayer`` / ``Decoder`` / ``encode`` /
``decode``) is listed apart; the input checks live in ``core/checks.py``, off the path.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "transformer_nb" / "core"
LIMIT = 800

PATH = {
    "attention.py": ["scaled_dot_product_attention"],
    "masks.py": ["causal_mask"],
    "multihead.py": ["split_heads", "merge_heads", "MultiHeadAttention", "KVCache"],
    "block.py": ["make_norm", "FeedForward", "_dropped", "EncoderLayer"],
    "stack.py": ["_final_norm", "Encoder"],
    "transformer.py": ["LanguageModel", "Transformer"],
    "generation.py": ["top_k_filter", "sample_next", "_pick", "no_onednn", "generate"],
    "config.py": ["ARCHS", "POSITIONS", "ACTIVATIONS", "NORMS", "T5_BUCKETS", "FLAGS", "TransformerConfig"],
}
APART = {"Transformer": ["encode", "decode"]}  # methods of a path class that the language model does not run


def _span(node: ast.AST) -> tuple[int, int]:
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return start, node.end_lineno


def _names(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def count(file: str, objects: list[str]) -> tuple[int, dict[str, int]]:
    """Lines of ``file`` on the path: the module docstring, the imports, and ``objects`` (each with the blank
    and comment lines above it); and the lines per object."""
    lines = (CORE / file).read_text().splitlines()
    tree = ast.parse("\n".join(lines))
    keep, per = set(), {}
    prev_end = 0
    for node in tree.body:
        start, end = _span(node)
        names = _names(node)
        head = isinstance(node, (ast.Import, ast.ImportFrom)) or (
            isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and node is tree.body[0]
        )
        if head or any(n in objects for n in names):
            span = set(range(prev_end + 1, end + 1))  # with the blank and comment lines above it
            for method in APART.get(names[0] if names else "", []):
                for sub in node.body:
                    if getattr(sub, "name", None) == method:
                        s, e = _span(sub)
                        span -= set(range(s, e + 1))
            keep |= span
            for n in names:
                if n in objects:
                    per[n] = per.get(n, 0) + len(span)
        prev_end = end
    return len(keep), per


def main() -> int:
    total = 0
    for file, objects in PATH.items():
        n, per = count(file, objects)
        missing = [o for o in objects if o not in per]
        if missing:
            print(f"{file}: not found: {missing}")
            return 2
        total += n
        whole = len((CORE / file).read_text().splitlines())
        print(f"{file:16s} {n:4d} of {whole:4d} lines  " + ", ".join(f"{o} {k}" for o, k in per.items()))
    print(f"reading path: {total} lines in {len(PATH)} files (limit {LIMIT})")
    return 0 if total <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
