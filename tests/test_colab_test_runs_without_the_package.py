"""`make colab-test` runs tools/colab_test.py with the system Python, before any venv has the package or torch:
the script (and the tools it imports) must not import transformer_nb."""

import ast
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_colab_test_and_colab_import_neither_the_package_nor_torch():
    for name in ("colab_test.py", "colab.py"):
        assert not imported_modules(TOOLS / name) & {"transformer_nb", "torch"}, name


def test_the_check_sees_a_package_import(tmp_path):
    path = tmp_path / "x.py"
    path.write_text("def f():\n    from transformer_nb.core.utils import env_path\n")
    assert "transformer_nb" in imported_modules(path)
