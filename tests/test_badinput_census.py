"""The census of bad-input coverage: every public callable of ``transformer_nb`` (in each public module, i.e.
no part of its dotted name with a leading underscore: ``__all__`` where the module has one, else the functions
and classes it defines without a leading underscore; exceptions aside) has a bad-input case, or a documented
reason why not.

Where a callable's case lives:
- ``CASES`` of a ``tests/test_badinput_<area>.py`` (``tests/badinput.py``: the call, the exception, the message);
- ``ELSEWHERE``: another test that feeds it bad input and sees it refused;
- ``NO_ARGUMENTS``: it takes no argument, so there is no bad input to give it;
- ``TRUSTS_CALLER``: a helper the package calls after its public function checked the input;
- ``PENDING``: its module is being rewritten on another branch; its case comes with the rewrite;
- ``ANSWER_KEYS``: an exercise's reference solution (``exercises/solutions/``), student-style code that no user
  calls with their own arguments.

``python tests/test_badinput_census.py`` prints the count per area.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pkgutil
import sys
from collections import Counter
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))

from badinput import qualname  # noqa: E402
from badinput_registry import ANSWER_KEYS, ELSEWHERE, NO_ARGUMENTS, PENDING, PENDING_FILES, TRUSTS_CALLER  # noqa: E402


def modules():
    """The package and its public modules (no part of the dotted name with a leading underscore)."""
    pkg = importlib.import_module("transformer_nb")
    yield pkg
    for info in pkgutil.walk_packages(pkg.__path__, "transformer_nb."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            yield importlib.import_module(info.name)


def public_callables(mod) -> list[str]:
    """The functions and classes (exceptions aside) ``mod`` defines and exports: ``__all__`` where it has one."""
    names = getattr(mod, "__all__", None)
    if names is None or mod.__name__ == "transformer_nb":
        names = [n for n in vars(mod) if not n.startswith("_")]
    objs = {n: getattr(mod, n, None) for n in names}
    return sorted(
        n
        for n, obj in objs.items()
        if (inspect.isfunction(obj) or inspect.isclass(obj))
        and getattr(obj, "__module__", None) == mod.__name__
        and not (inspect.isclass(obj) and issubclass(obj, BaseException))
    )


def takes_arguments(obj) -> bool:
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return True
    return any(p not in ("self", "cls") for p in params)


def public() -> dict[str, object]:
    """Qualified name -> object, for every public callable."""
    out = {}
    for mod in modules():
        for n in public_callables(mod):
            out[f"{mod.__name__}.{n}"] = getattr(mod, n)
    return out


def area_cases() -> dict[str, str]:
    """Qualified name -> the ``tests/test_badinput_<area>.py::case`` that covers it."""
    out = {}
    for path in sorted(TESTS.glob("test_badinput_*.py")):
        if path.name == Path(__file__).name:
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for key, case in mod.CASES.items():
            out.setdefault(qualname(case.target), f"tests/{path.name}::{key}")
    return out


def area(name: str) -> str:
    """The report's grouping: the first package level under transformer_nb (a top module by itself)."""
    return name.split(".")[1]


def census() -> dict[str, dict[str, str]]:
    """Qualified name -> {"how": cases|elsewhere|no-arguments|pending|none, "where": ...}."""
    cases, rows = area_cases(), {}
    for q in public():
        for how, reg in (
            ("cases", cases),
            ("elsewhere", ELSEWHERE),
            ("no-arguments", NO_ARGUMENTS),
            ("trusts-caller", TRUSTS_CALLER),
            ("pending", PENDING),
        ):
            if q in reg:
                rows[q] = {"how": how, "where": reg[q]}
                break
        else:
            rows[q] = {"how": "answer-key" if q.startswith(ANSWER_KEYS) else "none", "where": ""}
    return rows


def test_every_public_callable_has_a_bad_input_case_or_a_reason():
    missing = sorted(q for q, r in census().items() if r["how"] == "none")
    assert not missing, f"{len(missing)} public callables have no bad-input case: {missing}"


def test_every_registry_entry_names_a_public_callable():
    names = set(public())
    for reg in (area_cases(), ELSEWHERE, NO_ARGUMENTS, TRUSTS_CALLER, PENDING):
        stale = sorted(set(reg) - names)
        assert not stale, f"not public callables (renamed or removed?): {stale}"


def test_exemptions_take_no_arguments_and_give_a_reason():
    objs = public()
    for q, reason in NO_ARGUMENTS.items():
        assert not takes_arguments(objs[q]), f"{q} takes arguments: it needs a case"
        assert len(reason.split()) >= 3, f"{q}: give a reason"


def test_pending_callables_live_in_files_being_rewritten_elsewhere():
    root = TESTS.parent
    for q in PENDING:
        rel = Path(sys.modules[q.rsplit(".", 1)[0]].__file__).resolve().relative_to(root).as_posix()
        assert any(rel == f or rel.startswith(f.rstrip("/") + "/") for f in PENDING_FILES), (
            f"{q} ({rel}) is not pending"
        )


def test_pending_is_only_what_has_no_case_yet():
    covered = set(area_cases()) | set(ELSEWHERE)
    assert not covered & set(PENDING), f"covered, drop from PENDING: {sorted(covered & set(PENDING))}"


@pytest.mark.parametrize("name", sorted(ELSEWHERE))
def test_elsewhere_points_at_a_test_that_exists_and_names_the_callable(name):
    ref, _, via = ELSEWHERE[name].partition(" via ")
    path, _, test = ref.partition("::")
    source = (TESTS.parent / path).read_text()
    functions = {n.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)}
    assert test.split("[")[0] in functions, f"{ref}: no such test"
    assert (via or name.rsplit(".", 1)[1]) in source, f"{path} never names {via or name}"


def report() -> str:
    rows, per = census(), {}
    for q, r in rows.items():
        per.setdefault(area(q), Counter())[r["how"]] += 1
    lines = [
        f"{'area':14s} {'public':>6s} {'covered':>7s} {'no-args':>7s} {'answers':>7s} {'pending':>7s} {'none':>5s}"
    ]
    total = Counter()
    for a, c in sorted(per.items()):
        n, cov = sum(c.values()), c["cases"] + c["elsewhere"]
        total.update(c)
        lines.append(
            f"{a:14s} {n:6d} {cov:7d} {c['no-arguments']:7d} {c['answer-key']:7d} {c['pending']:7d} {c['none']:5d}"
        )
    n, cov = sum(total.values()), total["cases"] + total["elsewhere"]
    lines.append(
        f"{'all':14s} {n:6d} {cov:7d} {total['no-arguments']:7d} {total['answer-key']:7d} {total['pending']:7d} "
        f"{total['none']:5d}"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())
    if "-v" in sys.argv:
        for q, r in sorted(census().items()):
            if r["how"] in ("none", "pending"):
                print(r["how"], q)
