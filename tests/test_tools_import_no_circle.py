"""The scripts in tools/ import one another without a circle (each can be read, and loaded, on its own terms)."""

import ast
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def imports_of(path: Path, names: set[str]) -> set[str]:
    """The sibling tools that ``path`` imports anywhere (at the top or inside a function)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found & names - {path.stem}


def test_no_tool_imports_a_tool_that_imports_it_back():
    names = {p.stem for p in TOOLS.glob("*.py")}
    graph = {p.stem: imports_of(p, names) for p in TOOLS.glob("*.py")}
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
