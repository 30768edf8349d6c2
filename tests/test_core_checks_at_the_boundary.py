"""The core reads like nanoGPT: its input checks live in ``core/checks.py``; a constructor or ``forward`` of a core
module is checked by one ``@checks.boundary`` line and its body is the computation alone; the reading path
from attention to generation stays within ``tools/reading_path.py``'s limit."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "transformer_nb" / "core"
MODULES = sorted(p for p in CORE.glob("*.py") if p.name not in ("checks.py", "utils.py", "__init__.py"))
CHECK_NAMES = {  # what the checks module offers (a call to one of them is a check)
    n.name for n in ast.parse((CORE / "checks.py").read_text()).body if isinstance(n, ast.FunctionDef)
} - {"boundary"}


def _methods(tree):
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for fn in cls.body:
            if isinstance(fn, ast.FunctionDef) and fn.name in ("__init__", "forward"):
                yield cls.name, fn


def _is_boundary(dec) -> bool:
    return isinstance(dec, ast.Call) and ast.unparse(dec.func) == "checks.boundary"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_constructor_and_forward_bodies_call_no_check(path):
    tree = ast.parse(path.read_text())
    for cls, fn in _methods(tree):
        where = f"{path.name}: {cls}.{fn.name}"
        for node in ast.walk(ast.Module(body=fn.body, type_ignores=[])):
            assert not isinstance(node, ast.Raise), f"{where} raises: its check belongs in checks.py"
            if isinstance(node, ast.Call):
                name = ast.unparse(node.func).split(".")[-1]
                assert name not in CHECK_NAMES or not ast.unparse(node.func).startswith(("checks.", name)), (
                    f"{where} calls the check {name}: check at the boundary (@checks.boundary)"
                )
        if cls[0] != "_" and not (fn.name == "__init__" and not fn.args.args[1:]):
            assert any(_is_boundary(d) for d in fn.decorator_list), f"{where} is not checked at its boundary"


def test_reading_path_stays_within_its_limit():
    out = subprocess.run([sys.executable, "tools/reading_path.py"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "reading path:" in out.stdout and "multihead.py" in out.stdout


def test_the_decode_loop_pays_no_check_per_token(monkeypatch):
    import torch

    from transformer_nb.core import checks
    from transformer_nb.core.generation import generate
    from transformer_nb.core.transformer import Transformer

    model = Transformer(vocab=20, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_len=32, positions="rope")
    seen = []
    for name in ("check_ids", "check_hidden", "check_keep", "check_device", "_rotated", "_cache"):
        real = getattr(checks, name)
        monkeypatch.setattr(checks, name, lambda *a, _real=real, _name=name, **k: seen.append(_name) or _real(*a, **k))
    for use_cache in (True, False):
        seen.clear()
        generate(model, torch.tensor([1, 2, 3]), 12, use_cache=use_cache)
        assert seen == ["check_ids"], seen  # the prompt's ids, once: no step is checked
