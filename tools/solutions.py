"""The solutions run: every notebook with exercises, top to bottom, each stub replaced by its solution.

    python tools/solutions.py [NOTEBOOK.ipynb | notebooks/py/NOTEBOOK.py ...] [--out DIR] [--timeout S] [--stubs]

For each notebook that has cells tagged ``exercise`` (default: all of ``notebooks/*.ipynb``), every exercise
cell is rewritten: the top-level definitions the exercise's solution binds (the stubs) are replaced by the
solution's code, written as a student would (``Exercise.solution_source()``), and an assertion that the
cell's checks passed is appended. The notebook then runs top to bottom in a fresh kernel in ``notebooks/``,
in the quick profile; a check that does not pass, or any later cell that fails with a correct answer (the
``if result:`` branches included), fails the run, and the report names the notebook, the cell and the
exercise before it. Worked-solution cells (``if some_ex.unlocked():``) open once their exercise passes, so they
run here too (one that stays closed fails the run). With ``--stubs`` the notebooks run as a student's Run All
does, and every output of the run is checked for an exercise's answer (``exercises.shown_answers``): a leak
fails the run. A jupytext twin (``notebooks/py/NAME.py``) can be given instead of the stored notebook.
``TNB_CACHE_DIR`` is inherited: after the nbval run of ``make test`` the trained models are in the cache, so
nothing trains twice. Notebooks without exercise cells are not run at all.
"""

import argparse
import ast
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from refresh import CurrentEnvKernelManager  # noqa: E402, I001  (one copy of the current-env kernel; first: see refresh)
import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError  # noqa: E402

PREFIX = "transformer_nb.exercises."
LOCKED = "(The worked solution of "  # what a worked-solution cell prints while it stays closed (unlocked())


class SolutionsError(Exception):
    pass


def _source(cell) -> str:
    return cell.source if isinstance(cell.source, str) else "".join(cell.source)


def exercise_names(nb) -> dict:
    """``{local name: Exercise}`` for every ``from transformer_nb.exercises.MOD import ...`` in the notebook."""
    import importlib

    names = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(
                "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in _source(cell).split("\n"))
            )
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PREFIX):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    names[alias.asname or alias.name] = getattr(module, alias.name)
    return names


def _checked(tree, scope) -> list:
    """The exercises whose ``check`` the cell calls: ``[(local name, Exercise)]`` in order."""
    found = []
    for node in ast.walk(tree):
        f = getattr(node, "func", None)
        ok = isinstance(f, ast.Attribute) and f.attr == "check" and isinstance(f.value, ast.Name)
        if ok and f.value.id in scope and f.value.id not in [n for n, _ in found]:
            found.append((f.value.id, scope[f.value.id]))
    return found


def solve_cell(source: str, scope: dict) -> tuple:
    """An exercise cell's source with its stubs replaced by the solutions; also the exercises it checks."""
    tree = ast.parse(source)
    checked = _checked(tree, scope)
    if not checked:
        raise SolutionsError(f"an exercise cell calls no known exercise's check():\n{source}")
    replaced = {name for _, ex in checked for name in ex.defined_names()}
    lines, drop = source.split("\n"), set()
    for node in tree.body:
        bound = {t.id for t in ast.walk(node) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound = {node.name}
        if bound & replaced and isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)):
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            drop.update(range(start - 1, node.end_lineno))
    kept = "\n".join(line for i, line in enumerate(lines) if i not in drop).strip("\n")
    solutions = [f"# --- the solution of {ex.title} (make solutions)\n{ex.solution_source()}" for _, ex in checked]
    asserts = [
        f"assert {name}.last is not None and {name}.last.passed, "
        f'"make solutions: the solution does not pass {ex.title}: " + ({name}.last.message if {name}.last else "")'
        for name, ex in checked
    ]
    return "\n\n".join([*solutions, kept, "\n".join(asserts)]) + "\n", [ex.title for _, ex in checked]


def prepare(nb) -> list:
    """Rewrite the exercise cells of ``nb`` in place; return ``[(cell index, [exercise titles])]``."""
    scope = exercise_names(nb)
    solved = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and "exercise" in cell.metadata.get("tags", []):
            cell.source, titles = solve_cell(_source(cell), scope)
            solved.append((i, titles))
    return solved


def _failure(nb, solved) -> str:
    """Which cell failed, with what, and the exercise just before it."""
    for i, cell in enumerate(nb.cells):
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if errors and "raises-exception" not in cell.metadata.get("tags", []):
            before = [t for j, titles in solved if j <= i for t in titles]
            first = next((ln for ln in _source(cell).split("\n") if ln.strip() and not ln.startswith("# ---")), "")
            where = (
                f"the exercise cell of {before[-1]}"
                if any(j == i for j, _ in solved)
                else (f"a cell after {before[-1]}" if before else "a cell before any exercise")
            )
            return f"cell {i} ({first[:70]!r}), {where}: {errors[0]['ename']}: {errors[0]['evalue']}"
    return "the kernel stopped (no cell recorded an error)"


def run(path: Path, out_dir: Path | None = None, timeout: int = 600, solve: bool = True) -> dict:
    """Run one notebook with its solutions (``solve=False``: with its stubs, as nbval does, without comparing);
    return a report, or raise SolutionsError saying where it failed."""
    if path.suffix == ".py":  # a jupytext twin
        import jupytext

        nb = jupytext.read(path)
    else:
        nb = nbformat.read(path, as_version=4)
    solved = (
        prepare(nb)
        if solve
        else [(i, ["(stub)"]) for i, c in enumerate(nb.cells) if "exercise" in c.metadata.get("tags", [])]
    )
    report = {"notebook": path.stem, "exercises": sum(len(t) for _, t in solved), "cells": len(nb.cells)}
    if not solved:
        return {**report, "skipped": True}
    client = NotebookClient(
        nb,
        kernel_name="python3",
        kernel_manager_class=CurrentEnvKernelManager,
        timeout=timeout,
        startup_timeout=120,
        record_timing=False,
        shutdown_kernel="immediate",  # the outputs are in: a graceful shutdown waits seconds for the kernel to exit
        resources={"metadata": {"path": str(ROOT / "notebooks")}},
    )
    start = time.perf_counter()
    try:
        # the quick profile, and this checkout's package (not another one installed or on the path)
        pythonpath = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        client.execute(env={**os.environ, "TNB_PROFILE": "quick", "PYTHONPATH": pythonpath})
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as err:
        message = _failure(nb, solved) if not isinstance(err, (CellTimeoutError, DeadKernelError)) else str(err)
        raise SolutionsError(f"{path.stem}: {message}") from None
    finally:
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, out_dir / f"{path.stem}.ipynb")
    closed = [i for i, c in enumerate(nb.cells) if LOCKED in "".join(o.get("text", "") for o in c.get("outputs", []))]
    if solve and closed:
        raise SolutionsError(f"{path.stem}: worked-solution cells {closed} stayed closed though every exercise passed")
    if not solve:
        from transformer_nb.exercises import shown_answers

        texts = [
            "\n".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in c.get("outputs", []))
            for c in nb.cells
        ]
        leaks = [f"cell {i} shows {', '.join(shown_answers(t))}" for i, t in enumerate(texts) if shown_answers(t)]
        if leaks:
            raise SolutionsError(f"{path.stem}: run with its stubs, it shows answers:\n" + "\n".join(leaks))
    return {**report, "seconds": round(time.perf_counter() - start, 1)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="paths or names (default: notebooks/*.ipynb)")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "solutions", help="executed copies go here")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    parser.add_argument("--stubs", action="store_true", help="run the notebooks as they are (stubs), not solved")
    args = parser.parse_args(argv)
    paths = [p if p.exists() else ROOT / "notebooks" / f"{p.stem}.ipynb" for p in args.notebooks]
    paths = [p if p.exists() else ROOT / "notebooks" / "py" / f"{p.stem}.py" for p in paths]
    paths = paths or sorted((ROOT / "notebooks").glob("*.ipynb"))
    failures, skipped, start = [], 0, time.perf_counter()
    for path in paths:
        try:
            r = run(path, args.out, args.timeout, solve=not args.stubs)
        except SolutionsError as err:
            failures.append(str(err))
            print(f"✗ {err}", flush=True)
            continue
        if r.get("skipped"):
            skipped += 1
            print(f"- {r['notebook']}: no exercise cells, not run", flush=True)
        else:
            print(
                f"✓ {r['notebook']}: {r['exercises']} exercises {'left as stubs' if args.stubs else 'solved'}, "
                f"{r['cells']} cells run, {r['seconds']} s",
                flush=True,
            )
    ran = len(paths) - skipped
    print(
        f"solutions run: {ran - len(failures)}/{ran} notebooks with exercises passed ({skipped} without exercises "
        f"not run) in {time.perf_counter() - start:.0f} s"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
