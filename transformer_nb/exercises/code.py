"""The code of a solution, as ``Exercise.solution()`` shows it and ``make solutions`` runs it: the source of
each object, and the ``import`` lines it needs from the module that defines it."""

__all__ = []  # what a notebook uses

import ast
import importlib
import inspect
import textwrap


def source_of(obj) -> str:
    """The source of a function or class, or of a module-level assignment named ``"module:name"``."""
    if not isinstance(obj, str):
        return textwrap.dedent(inspect.getsource(obj)).rstrip()
    module_name, name = obj.split(":")
    source = inspect.getsource(importlib.import_module(module_name))
    lines = source.splitlines()
    for node in ast.parse(source).body:
        if name in bound_names(node):
            start = node.lineno - 1
            while start > 0 and lines[start - 1].startswith("#"):  # keep the comment above it
                start -= 1
            return "\n".join(lines[start : node.end_lineno])
    raise ValueError(f"{module_name} does not assign {name!r}")


def module_imports(module) -> list:
    """The module's top-level ``import`` lines, one per bound name."""
    if module is None:
        return []
    lines = []
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) and "__future__" not in ast.unparse(node):
            lines.extend(_split_import(node))
    return lines


def _split_import(node) -> list:
    """``from a import b, c`` -> one line per bound name, so that only the names used are kept."""
    if isinstance(node, ast.Import):
        return [f"import {a.name}" + (f" as {a.asname}" if a.asname else "") for a in node.names]
    return [f"from {node.module} import {a.name}" + (f" as {a.asname}" if a.asname else "") for a in node.names]


def bound_names(node) -> list:
    """The names a top-level statement ``node`` (an ``ast`` node) binds: a definition's, assignment targets, imports."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    return []
