"""The core -- the Transformer the chapter teaches -- never imports the companion layer (exercises, the
claims ledger, widgets, lecture mode, benchmarks, the model cache, the notebook tools)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "transformer_nb"
# From attention to the language model and its generation, and the small utilities they share.
CORE = [
    "attention",
    "masks",
    "multihead",
    "rope",
    "positional",
    "block",
    "stack",
    "transformer",
    "models",
    "output_head",
    "generation",
    "utils",
]


def package_imports(source: str) -> set[str]:
    """The ``transformer_nb`` modules a source file imports, anywhere in it (inside functions too)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("transformer_nb.")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("transformer_nb"):
            parts = node.module.split(".")
            found |= {parts[1]} if len(parts) > 1 else {a.name for a in node.names}
    return found


@pytest.mark.parametrize("name", CORE)
def test_a_core_module_imports_only_core_modules(name):
    outside = package_imports((PACKAGE / f"{name}.py").read_text(encoding="utf-8")) - set(CORE)
    assert not outside, f"transformer_nb/{name}.py (core) imports {sorted(outside)}, which are not core"


def test_the_check_sees_imports_inside_functions():
    source = "def f():\n    from transformer_nb import cache\n    import transformer_nb.exercises.attention\n"
    assert package_imports(source) == {"cache", "exercises"}


def test_importing_the_core_loads_no_companion_module():
    code = (
        "import sys\n"
        + "".join(f"import transformer_nb.{name}\n" for name in CORE)
        + "print(' '.join(sorted(m.split('.')[1] for m in sys.modules if m.startswith('transformer_nb.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert set(out.stdout.split()) <= set(CORE), out.stdout


def test_the_package_still_offers_the_notebook_helpers():
    import transformer_nb

    assert transformer_nb.setup.__module__ == "transformer_nb.env"
    assert transformer_nb.check_close.__module__ == "transformer_nb.checks"
    assert "show_source" in dir(transformer_nb)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        transformer_nb.nope  # noqa: B018
