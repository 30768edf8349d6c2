"""The notebook harness in one place: how a stored notebook is stamped, and how it is checked.

`tools/refresh.py` imports this module to stamp the notebooks it executes; the harness tests
(`test_notebook_twins_in_sync.py`, `test_notebook_outputs_fresh.py`,
`test_notebooks_executed_cleanly.py`) call the `*_problems` functions below. Each of those
returns a list of human-readable problems (empty = fine) that names the notebook, what is
wrong and the command that fixes it.

The module is also a tiny pytest plugin (loaded with `-p notebook_harness`, see
pyproject.toml) that prints the wall time of each notebook run under nbval and orders a session's files
(longest first: the notebooks under nbval, then the tests that load the models they cached).

Layout assumed: ROOT/notebooks/NAME.ipynb and its twin ROOT/notebooks/py/NAME.py; the
package modules recorded in a stamp are paths relative to ROOT.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from importlib.util import module_from_spec, spec_from_file_location
from itertools import zip_longest
from pathlib import Path

# jsonschema (under nbformat) imports rfc3987_syntax, which builds 38 parsers on import (2 s of CPU in every process
# that reads a notebook; python-jsonschema/jsonschema#1428) for the "iri" formats no notebook schema uses.
sys.modules.setdefault("rfc3987_syntax", None)
ROOT = Path(__file__).resolve().parents[1]


def _fingerprint():
    """This checkout's transformer_nb/fingerprint.py, loaded by path: the harness stamps with it even
    where another ``transformer_nb`` comes first on the path (the stand-in package of the harness tests)."""
    spec = spec_from_file_location("_tnb_fingerprint", ROOT / "transformer_nb" / "fingerprint.py")
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


source_digest = _fingerprint().source_digest
STAMP_KEY = "transformer_nb"  # nb.metadata[STAMP_KEY] = {"code_digest", "modules", "profile"}
PACKAGE = "transformer_nb"
RAISES = "raises-exception"


# --------------------------------------------------------------------------- paths


def notebooks_in(root: Path = ROOT) -> list[Path]:
    """The stored notebooks, in book order (their names start with NN_)."""
    return sorted((Path(root) / "notebooks").glob("*.ipynb"))


def twins_in(root: Path = ROOT) -> list[Path]:
    return sorted((Path(root) / "notebooks" / "py").glob("*.py"))


def twin_of(ipynb: Path) -> Path:
    return Path(ipynb).parent / "py" / (Path(ipynb).stem + ".py")


def ipynb_of(twin: Path) -> Path:
    return Path(twin).parent.parent / (Path(twin).stem + ".ipynb")


def root_of(ipynb: Path) -> Path:
    return Path(ipynb).resolve().parent.parent


def fix(name: str) -> str:
    return f"Fix: make refresh NB={name}"


# --------------------------------------------------------------------------- cells


def load(ipynb: Path) -> dict:
    return json.loads(Path(ipynb).read_text(encoding="utf-8"))


def source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def tags(cell) -> list[str]:
    return sorted(cell.get("metadata", {}).get("tags", []))


def code_digest(nb) -> str:
    """sha256 over every code cell's source and tags, in order."""
    h = hashlib.sha256()
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            h.update(json.dumps([source(cell), tags(cell)]).encode("utf-8") + b"\n")
    return h.hexdigest()


def module_hashes(files, root: Path) -> dict[str, str]:
    """{"transformer_nb/x.py": digest} for module files that must lie under `root`.

    The digest follows what the code does (``transformer_nb.fingerprint``): a comment or docstring
    edit leaves every notebook fresh; a code edit makes stale the notebooks that imported the module.
    """
    root = Path(root).resolve()
    out = {}
    for f in files:
        path = Path(f).resolve()
        if not path.is_relative_to(root):
            raise ValueError(
                f"{PACKAGE} was imported from {path}, not from this checkout ({root}); "
                f"install the checkout in editable mode: make install (pip install -e .)"
            )
        out[path.relative_to(root).as_posix()] = source_digest(path.read_text(encoding="utf-8"))
    return dict(sorted(out.items()))


def make_stamp(nb, module_files, root: Path, profile: str = "full", name: str = "") -> dict:
    stamp = {"code_digest": code_digest(nb), "modules": module_hashes(module_files, root), "profile": profile}
    figures = printed_figures(nb, name, root)
    stamp = {**stamp, "figures": figures} if figures else stamp
    ledger = ledger_digests(nb, root)
    return {**stamp, "ledger": ledger} if ledger else stamp


FIGURES_FILE = "transformer_nb/claims/figures.py"  # how the ledger reads figures from other notebooks' outputs


def _figures(root: Path):
    """The project's ``claims/figures.py``, loaded on its own (it needs only the standard library)."""
    spec = spec_from_file_location("_stored_figures", Path(root) / FIGURES_FILE)
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def printed_figures(nb, name: str, root: Path) -> dict[str, str]:
    """``{key: value}`` of the figures of *other* notebooks' stored outputs (``claims/figures.py``) that ``nb``
    prints: when one of them changes, ``nb`` is stale although none of its code did."""
    if not (Path(root) / FIGURES_FILE).exists():
        return {}
    figures, out = _figures(root), {}
    printed = "\n".join(output_text(o) for cell in nb.get("cells", []) for o in cell.get("outputs", []))
    for key in figures.FIGURES:
        if key[:2] == name[:2]:
            continue
        try:
            value = figures.read(key, Path(root) / "notebooks")
        except (figures.Unavailable, figures.NotPrinted):
            continue
        if re.search(rf"(?<![\w.]){re.escape(value)}(?![\w]|\.\d)", printed):  # 14.2, not 19.14.2 or 14.25
            out[key] = value
    return out


LEDGER_DATA = "transformer_nb/claims/data"  # the claims ledger's entries: one TOML file per text, [[claim]] tables


def _ledger(root: Path) -> dict[str, dict]:
    """``{id: entry}`` from the ledger's data files under ``root`` (read as data: no package import)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    out = {}
    for path in sorted((Path(root) / LEDGER_DATA).glob("*.toml")):
        with open(path, "rb") as f:
            out.update({e["id"]: {**e, "text": path.stem} for e in tomllib.load(f).get("claim", [])})
    return out


def _strings(x):
    """Every string in a notebook's JSON value (images left out)."""
    if isinstance(x, str):
        yield x
    elif isinstance(x, (list, dict)):
        for k, y in x.items() if isinstance(x, dict) else enumerate(x):
            if not str(k).startswith("image/"):
                yield from _strings(y)


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


def ledger_digests(nb, root: Path) -> dict:
    """The claims ledger as far as ``nb`` shows it: a digest of each entry whose id its outputs (widget views
    included) print, and one of every entry's verdict (id, text, status, notebook, check, reveals: what counts
    and selections depend on). A wording fix in one entry stales only the notebooks that show that entry.
    Empty when the notebook shows no entry."""
    entries = _ledger(root)
    if not entries:
        return {}
    ids = re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, sorted(entries, key=len, reverse=True))) + r")(?![\w-])")
    printed = "\n".join(_strings([cell.get("outputs", []) for cell in nb.get("cells", [])]))
    shown = sorted(set(ids.findall(printed + "\n" + "\n".join(_strings(nb.get("metadata", {}).get("widgets"))))))
    if not shown:
        return {}
    verdicts = [
        [e.get(k, "") for k in ("id", "text", "status", "notebook", "check", "reveals")] for e in entries.values()
    ]
    return {"verdicts": _digest(verdicts), "entries": {i: _digest(entries[i]) for i in shown}}


def ledger_problems(nb, stamp: dict, root: Path, name: str) -> list[str]:
    """The ledger entries the notebook shows, or the ledger's verdicts, changed since its outputs were stored."""
    now, was = ledger_digests(nb, root), stamp.get("ledger", {})
    if now == was:
        return []
    new, old = now.get("entries", {}), was.get("entries", {})
    changed = sorted(i for i in {*new, *old} if new.get(i) != old.get(i))
    if not was:
        what = "its stamp has no digests of the ledger entries it shows"
    elif changed:
        what = f"the ledger entries {', '.join(changed[:3])}{' …' if len(changed) > 3 else ''} changed"
    else:
        what = "the ledger's verdicts (a status, notebook, check or id) changed"
    return [f"notebooks/{name}.ipynb shows claims of the ledger: {what} since its outputs were stored. {fix(name)}"]


def output_text(o) -> str:
    """What an output printed: its stream text or plain-text result."""
    text = o.get("text") or o.get("data", {}).get("text/plain", "")
    return text if isinstance(text, str) else "".join(text)


# --------------------------------------------------------------------------- checks


def twin_problems(ipynb: Path, twin: Path) -> list[str]:
    """The twin .py, read with jupytext, has the same cells (type, source, tags) as the ipynb."""
    name = Path(ipynb).stem
    if not Path(twin).exists():
        return [
            f"notebooks/{name}.ipynb has no text twin notebooks/py/{name}.py. Write the twin "
            f"(e.g. jupytext --to py:percent -o notebooks/py/{name}.py notebooks/{name}.ipynb), "
            f"then run make refresh NB={name}; the twin is the file you edit."
        ]
    if not Path(ipynb).exists():
        return [f"notebooks/py/{name}.py has no notebook notebooks/{name}.ipynb. {fix(name)}"]
    import jupytext

    def key(cell):
        text = "\n".join(line.rstrip() for line in source(cell).splitlines()).rstrip()
        return cell["cell_type"], text, tags(cell)

    stored = [key(c) for c in load(ipynb)["cells"]]
    text = [key(c) for c in jupytext.read(twin)["cells"]]
    if stored == text:
        return []
    problems = []
    for i, (a, b) in enumerate(zip(stored, text), start=1):
        if a != b:
            problems.append(f"cell {i} ({a[0]}) differs in {_difference(a, b)}")
        if len(problems) == 3:
            break
    if len(stored) != len(text) and len(problems) < 3:
        problems.append(f"the notebook has {len(stored)} cells, the twin has {len(text)}")
    return [
        f"notebooks/{name}.ipynb is out of sync with its twin notebooks/py/{name}.py:\n  "
        + "\n  ".join(problems)
        + f"\nThe twin is the source of truth: edit notebooks/py/{name}.py, then run make refresh "
        f"NB={name}. If you edited the .ipynb in JupyterLab without jupytext pairing, copy the "
        f"change into the twin first."
    ]


def _difference(a, b) -> str:
    """Where two (type, source, tags) keys differ, quoting the first differing source line."""
    if a[0] != b[0]:
        return f"cell type: notebook has {a[0]}, twin has {b[0]}"
    if a[2] != b[2]:
        return f"tags: notebook has {a[2]}, twin has {b[2]}"
    lines = zip_longest(a[1].splitlines(), b[1].splitlines(), fillvalue="<no line>")
    j, (x, y) = next((j, xy) for j, xy in enumerate(lines, start=1) if xy[0] != xy[1])
    return f"source, line {j}: notebook has {x[:70]!r}, twin has {y[:70]!r}"


def stamp_problems(ipynb: Path) -> list[str]:
    """The stored outputs were produced by tools/refresh.py from the current code and modules."""
    name = Path(ipynb).stem
    nb = load(ipynb)
    stamp = nb.get("metadata", {}).get(STAMP_KEY)
    if not stamp:
        return [
            f"notebooks/{name}.ipynb has no refresh stamp (metadata.{STAMP_KEY}): its outputs "
            f"were not produced by tools/refresh.py. {fix(name)}"
        ]
    problems = []
    if stamp.get("code_digest") != code_digest(nb):
        problems.append(
            f"notebooks/{name}.ipynb: its code cells changed since the outputs were "
            f"stored (code_digest differs). {fix(name)}"
        )
    root = root_of(ipynb)
    for rel, digest in sorted(stamp.get("modules", {}).items()):
        path = root / rel
        if not path.exists():
            problems.append(
                f"notebooks/{name}.ipynb: its outputs were computed with {rel}, which no longer exists. {fix(name)}"
            )
        elif source_digest(path.read_text(encoding="utf-8")) != digest:
            problems.append(
                f"notebooks/{name}.ipynb: stale outputs, the code of {rel} changed since they were stored. {fix(name)}"
            )
    if stamp.get("figures"):
        figures = _figures(root)
        for key, value in stamp["figures"].items():
            try:
                now = figures.read(key, root / "notebooks")
            except (figures.Unavailable, figures.NotPrinted):
                now = "nothing"
            if now != value:
                problems.append(
                    f"notebooks/{name}.ipynb prints {key} = {value} from notebook {key[:2]}'s stored outputs, "
                    f"which now give {now}. {fix(name)}"
                )
    problems += ledger_problems(nb, stamp, root, name)
    for rel, shown in shown_sources(nb):
        path = root / rel
        if path.exists() and shown not in path.read_text(encoding="utf-8"):
            problems.append(
                f"notebooks/{name}.ipynb shows source of {rel} that the file no longer holds (a comment or "
                f"docstring changed: the digests ignore those, a reader does not). {fix(name)}"
            )
    return problems


def shown_sources(nb) -> list[tuple[str, str]]:
    """``(path, text)`` of every package source a cell displays with ``show_source`` (its first line names the file)."""
    out = []
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []):
            head, _, body = output_text(o).partition("\n")
            if o.get("output_type") == "display_data" and head.startswith("# transformer_nb/") and body:
                out.append((head[2:], body))
    return out


TRACEBACK = "Traceback (most recent call last)"


def error_outputs(outputs) -> list[str]:
    """What in ``outputs`` (a cell's, or an Output widget's) reports an error: every error output, as
    ``"Name: message"``, and every traceback printed to a stream (``traceback.print_exc()``,
    ``logging.exception()``, an exception raised in a thread), as its last line."""
    found = []
    for out in outputs or []:
        if out.get("output_type") == "error":
            found.append(f"{out.get('ename')}: {out.get('evalue', '')[:80]}")
        elif out.get("output_type") == "stream" and TRACEBACK in source({"source": out.get("text", "")}):
            text = source({"source": out.get("text", "")})
            last = text[text.index(TRACEBACK) :].strip().splitlines()[-1]
            found.append(f"a traceback printed to {out.get('name')}, ending {last[:80]!r}")
    return found


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def execution_problems(ipynb: Path, nb: dict | None = None) -> list[str]:
    """A clean top-to-bottom run: counts 1..n, no stored errors, refreshed in the full profile.

    ``nb``: check this notebook (e.g. one not yet written) instead of reading ``ipynb``. Errors
    count wherever they are stored: in a cell's outputs, or in an Output widget's state (where
    ipywidgets ``interact`` shows an exception it caught), unless the cell is tagged raises-exception.
    """
    name = Path(ipynb).stem
    nb = load(ipynb) if nb is None else nb
    problems, expected = [], 1
    for i, cell in enumerate(nb["cells"], start=1):
        if cell["cell_type"] != "code" or not source(cell).strip():
            continue
        count = cell.get("execution_count")
        if count is None:
            problems.append(f"cell {i} has never been executed (execution_count is null)")
        elif count != expected:
            problems.append(
                f"cell {i} has execution_count {count}, expected {expected} (not a clean top-to-bottom run)"
            )
        expected += 1
        if RAISES not in tags(cell):
            problems += [
                f"cell {i} stores an error output ({e}) and is not tagged {RAISES}"
                for e in error_outputs(cell.get("outputs"))
            ]
    state = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for model_id, model in sorted(state.items()):
        for e in error_outputs(model.get("state", {}).get("outputs")):
            problems.append(f"widget {model_id[:8]} (an Output widget, e.g. of interact) stores an error output ({e})")
    profile = nb.get("metadata", {}).get(STAMP_KEY, {}).get("profile", "no stamp")
    if profile != "full":
        problems.append(f"outputs were not refreshed in the full profile (stamp profile: {profile})")
    return [f"notebooks/{name}.ipynb: {p}. {fix(name)}" for p in problems]


# --------------------------------------------------------------------------- pytest helpers


def parametrize_notebooks(paths: list[Path]) -> list[str]:
    """The notebook names of ``paths``, for ``pytest.mark.parametrize``."""
    return sorted({Path(p).stem for p in paths})


RUNTIMES = "notebooks/runtimes.json"  # {name: {"full_s": .., "quick_s": ..}}, read by notebook 00


def record_runtime(name: str, profile: str, seconds: float, root: Path = ROOT) -> None:
    """Remember how long notebook ``name`` took in ``profile`` (2 CPU cores unless said otherwise)."""
    path = root / RUNTIMES
    data = json.loads(path.read_text()) if path.exists() else {}
    data.setdefault(name, {})[f"{profile}_s"] = round(seconds, 1)
    path.write_text(json.dumps(dict(sorted(data.items())), indent=1) + "\n")
    from transformer_nb.companion import write_index  # the map shipped in the package follows the notebooks

    write_index(root / "notebooks", root / "transformer_nb" / "notebook_index.json")


_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        _seconds[path] = _seconds.get(path, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if not _seconds:
        return
    tr = terminalreporter
    tr.write_sep("=", "notebook wall time under nbval (budget: CONTRIBUTING.md, the profile)")
    for path, seconds in _seconds.items():
        tr.write_line(f"{seconds:8.1f} s  {path}")
    tr.write_line(f"{sum(_seconds.values()):8.1f} s  all notebooks")
    if os.environ.get("TNB_RECORD_RUNTIMES") == "1":  # make runtimes: keep them for notebook 00
        for path, seconds in _seconds.items():
            record_runtime(Path(path).stem, os.environ.get("TNB_PROFILE", "full"), seconds)
        tr.write_line(f"recorded in {RUNTIMES}")


WIDGETS_IN_BROWSER = "tests/browser/test_widgets_in_browser.py"
SOLUTIONS_RUN = "tests/test_notebooks_pass_with_their_solutions.py"


def _run_order(item, quick_s: dict) -> tuple:
    """Where ``item``'s file comes in a session: the notebooks under nbval, longest first (``notebooks/runtimes.json``,
    quick profile), then the widgets in the browser and the solutions run, which load the models those notebooks
    cached, then the longest unit-test file (~35 s, last in the alphabet: it left one worker idle at the end), then
    everything else in collection order."""
    path = Path(str(item.path)).resolve()
    if path.suffix == ".ipynb":
        return 0, -quick_s.get(path.stem, 0.0)
    rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else ""
    return {WIDGETS_IN_BROWSER: 1, SOLUTIONS_RUN: 2, "tests/test_widget_base.py": 3}.get(rel, 4), 0.0


def pytest_collection_modifyitems(session, config, items):
    """The longest work first, so that ``make test``'s xdist workers (``--dist loadfile --no-loadscope-reorder``
    hands out files in this order) end together, and a test that loads a notebook's trained model finds it."""
    runtimes = ROOT / RUNTIMES
    data = json.loads(runtimes.read_text()) if runtimes.exists() else {}
    quick_s = {name: r.get("quick_s", 0.0) for name, r in data.items()}
    items.sort(key=lambda item: _run_order(item, quick_s))  # stable: a file's items keep their order


def pytest_addoption(parser):
    parser.addoption(
        "--solutions",
        action="store_true",
        help="also run every notebook with exercises, each stub replaced by its solution (tools/solutions.py)",
    )
