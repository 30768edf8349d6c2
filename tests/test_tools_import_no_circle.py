"""The scripts in tools/ import one another without a circle (each can be read, and loaded, on its own terms), and
`make colab-test`'s script (run with the system Python, before any venv has the package or torch) and the tool it
imports import neither transformer_nb nor torch."""

import ast
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def imports_of(path: Path) -> set[str]:
    """The top-level names of the modules ``path`` imports anywhere (at the top or inside a function)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def test_no_tool_imports_a_tool_that_imports_it_back():
    names = {p.stem for p in TOOLS.glob("*.py")}
    graph = {p.stem: imports_of(p) & names - {p.stem} for p in TOOLS.glob("*.py")}
    assert graph["slides"] == {"book"}  # the case the graph must keep seeing: slides builds on the book

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    circles = sorted(name for name in graph if name in reach(name))
    assert not circles, f"these tools import themselves through others: {circles} ({graph})"


def test_colab_test_and_colab_import_neither_the_package_nor_torch():
    assert "colab" in imports_of(TOOLS / "colab_test.py")  # the case the check must keep seeing
    for name in ("colab_test.py", "colab.py"):
        assert not imports_of(TOOLS / name) & {"transformer_nb", "torch"}, name
