"""The core -- the Transformer the chapter teaches, the modules in ``transformer_nb/core/`` -- never imports
the companion layer (exercises, the claims ledger, widgets, lecture mode, benchmarks, the model cache, the
notebook tools: everything else in ``transformer_nb``)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "transformer_nb"
CORE = sorted(p.stem for p in (PACKAGE / "core").glob("*.py") if p.stem != "__init__")


def package_imports(source: str) -> set[str]:
    """The ``transformer_nb`` modules a source file imports, anywhere in it (inside functions too), as dotted
    names below the package (``"core.attention"``, ``"cache"``)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".", 1)[1] for a in node.names if a.name.startswith("transformer_nb.")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("transformer_nb"):
            below = node.module.split(".", 1)[1] if "." in node.module else ""
            found |= {below} if below not in ("", "core") else {f"{below}.{a.name}".lstrip(".") for a in node.names}
    return found


def is_core(name: str) -> bool:
    return name == "core" or name.startswith("core.")


def test_the_core_folder_holds_the_transformer():
    assert {"attention", "multihead", "block", "transformer", "generation"} <= set(CORE), CORE


@pytest.mark.parametrize("name", CORE)
def test_a_core_module_imports_only_core_modules(name):
    outside = {
        m for m in package_imports((PACKAGE / "core" / f"{name}.py").read_text(encoding="utf-8")) if not is_core(m)
    }
    assert not outside, f"transformer_nb/core/{name}.py imports {sorted(outside)}, which are not core"


def test_the_check_sees_imports_inside_functions():
    source = "def f():\n    from transformer_nb import cache\n    import transformer_nb.exercises.attention\n"
    assert package_imports(source) == {"cache", "exercises.attention"}
    assert package_imports("from transformer_nb.core import block\nfrom transformer_nb.core.masks import x\n") == {
        "core.block",
        "core.masks",
    }


def test_importing_the_core_loads_no_companion_module():
    code = (
        "import sys\n"
        + "".join(f"import transformer_nb.core.{name}\n" for name in CORE)
        + "print(' '.join(sorted(m.split('.', 1)[1] for m in sys.modules if m.startswith('transformer_nb.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    outside = [m for m in out.stdout.split() if not is_core(m)]
    assert not outside, outside


def test_the_package_still_offers_the_notebook_helpers():
    import transformer_nb

    assert transformer_nb.setup.__module__ == "transformer_nb.env"
    assert transformer_nb.check_close.__module__ == "transformer_nb.checks"
    assert "show_source" in dir(transformer_nb) and "setup" in dir(transformer_nb)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        transformer_nb.nope  # noqa: B018
