#!/usr/bin/env python3
"""Refresh a notebook's stored outputs -- the only way they are produced.

    python tools/refresh.py 01_scaled_attention            # or notebooks/py/01_...py, notebooks/01_...ipynb
    python tools/refresh.py --all                          # every twin in notebooks/py/, in book order
    python tools/refresh.py --stale                        # only the stale ones (make refresh-stale), in book order
    python tools/refresh.py --all --out build/book --html  # execute into build/book, render HTML + index
    python tools/refresh.py --all --out build/book --html --stored   # render the stored notebooks only
    python tools/refresh.py --markdown-only 10_wikitext_lm  # prose edits only: no execution, outputs kept

One way only: the twin notebooks/py/NAME.py is read with jupytext and becomes the notebook's
inputs (no stale output survives) -> executed top to bottom by nbclient in a fresh kernel of
this interpreter, with notebooks/ as working directory and TNB_PROFILE=full -> no per-cell
timing metadata is recorded and cell and widget ids are derived, not random, so a refresh
that changes nothing leaves no diff -> nb.metadata["transformer_nb"] is stamped with the code
digest, a digest of what every transformer_nb module the kernel imported does (blind to comments
and docstrings: transformer_nb/fingerprint.py), and the profile.
A cell that raises, or that shows an error without raising (showtraceback() in an except
block, as ipywidgets interact does; a traceback printed by traceback.print_exc() or
logging.exception(), or by an exception in a thread), fails the refresh unless it is tagged raises-exception:
every check runs before the stored notebook is written, so a failed refresh leaves it
byte-identical. Refuses to run with TNB_PROFILE=quick.
Each full-profile time goes into notebooks/runtimes.json (and the package's notebook_index.json) only when it is
outside the noise between two runs (max(5 s, 20 %), as the headers' check allows) of the stored one, so that
refreshing an unchanged notebook changes no file. A notebook whose code shows the map of every notebook's runtimes
(it calls ``notebook_index(``: 00) keeps in its stamp the runtimes it showed, and is stale once one of them moves
beyond that noise.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import notebook_harness as harness  # noqa: E402, I001  (the stamp and the checks; first: it spares nbformat 2 s)
import jupytext  # noqa: E402
import nbformat  # noqa: E402
from ipykernel.kernelspec import RESOURCES, get_kernel_dict  # noqa: E402
from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402
from jupyter_client.manager import AsyncKernelManager  # noqa: E402
from nbclient import NotebookClient  # noqa: E402
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError  # noqa: E402
from traitlets import default  # noqa: E402

# Run at the end of every notebook, then removed: which transformer_nb files were imported.
MODULES_CELL = (
    "import json as _j, sys as _s\n"
    "print(_j.dumps(sorted({getattr(_m, '__file__', None) or '' for _n, _m in list(_s.modules.items())\n"
    f"    if _n == {harness.PACKAGE!r} or _n.startswith({harness.PACKAGE + '.'!r})}} - {{''}})))"
)
WIDGET_STATE = harness.WIDGET_STATE


class CurrentEnvKernelSpecs(KernelSpecManager):
    """'python3' always means this interpreter, whatever kernelspecs are installed elsewhere."""

    def get_kernel_spec(self, kernel_name):
        return self.kernel_spec_class(resource_dir=RESOURCES, **get_kernel_dict())


class CurrentEnvKernelManager(AsyncKernelManager):
    @default("kernel_spec_manager")
    def _current_env_specs(self):
        return CurrentEnvKernelSpecs(data_dir=self.data_dir)


class RefreshError(Exception):
    pass


SHOWS_RUNTIMES = "notebook_index("  # a notebook whose code calls this shows every notebook's runtimes (00's map)
NOISE_S, NOISE_FRACTION = 5.0, 0.2  # two runs of one notebook differ by this much (companion.runtime_problems)


def close(new: float, old: float) -> bool:
    """``new`` is within the noise between two runs of ``old`` seconds."""
    return abs(new - old) <= max(NOISE_S, NOISE_FRACTION * old)


def read_runtimes(root: Path) -> dict:
    """``notebooks/runtimes.json`` as ``{name: {"full_s": s, "quick_s": s}}`` ({} when absent); a RefreshError
    naming the file and its fix when it is not that."""
    path = root / harness.RUNTIMES
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        ok = isinstance(data, dict) and all(
            isinstance(t, dict) and all(isinstance(v, (int, float)) for v in t.values()) for t in data.values()
        )
    except (OSError, ValueError) as err:
        data, ok = err, False
    if not ok:
        why = f"{type(data).__name__}: {data}" if isinstance(data, Exception) else "not {name: {profile_s: seconds}}"
        raise RefreshError(
            f"{harness.RUNTIMES} cannot be read ({why}). Restore it: git checkout {harness.RUNTIMES} "
            "(or delete it: the next refreshes record the times again)"
        )
    return data


def record_runtime(name: str, seconds: float, root: Path) -> bool:
    """Store ``seconds`` as ``name``'s full-profile time unless the stored one is within noise; True if stored."""
    old = read_runtimes(root).get(name, {}).get("full_s")
    if old is not None and close(seconds, old):
        return False
    harness.record_runtime(name, "full", seconds, root=root)
    return True


def runtime_problems(ipynb: Path, stamp: dict, root: Path) -> list[str]:
    """The runtimes a map notebook showed (its stamp's ``runtimes``) that moved beyond noise since."""
    if not stamp.get("runtimes"):
        return []
    now, moved = read_runtimes(root), []
    for name, shown in sorted(stamp["runtimes"].items()):
        for key, old in shown.items():
            new = now.get(name, {}).get(key)
            if new is not None and not close(new, old):
                moved.append(f"{name} {key.removesuffix('_s')} {old:g} s -> {new:g} s")
    if not moved:
        return []
    return [f"notebooks/{ipynb.name} shows runtimes that changed since ({', '.join(moved)}). {harness.fix(ipynb.stem)}"]


def twin_for(arg: str) -> Path:
    """NAME, notebooks/NAME.ipynb or notebooks/py/NAME.py -> the twin's path."""
    path = Path(arg)
    if path.suffix == ".py" and path.exists():
        return path.resolve()
    if path.suffix == ".ipynb" and path.exists():
        return harness.twin_of(path.resolve())
    name = path.name.removesuffix(".ipynb").removesuffix(".py")
    return ROOT / "notebooks" / "py" / f"{name}.py"


def build_inputs(twin: Path) -> nbformat.NotebookNode:
    nb = jupytext.read(twin)
    nb.metadata = nbformat.from_dict(
        {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}}
    )
    seen: dict[str, int] = {}
    for cell in nb.cells:  # ids from content, not random: no diff when nothing changed
        base = hashlib.sha256((cell.cell_type + "\n" + cell.source).encode()).hexdigest()[:8]
        seen[base] = seen.get(base, 0) + 1
        cell.id = base if seen[base] == 1 else f"{base}-{seen[base]}"
    return nb


def execute(nb, workdir: Path, timeout: int) -> list[str]:
    """Execute nb in place; return the transformer_nb module files the kernel imported."""
    nb.cells.append(nbformat.v4.new_code_cell(MODULES_CELL))
    client = NotebookClient(
        nb,
        kernel_name="python3",
        kernel_manager_class=CurrentEnvKernelManager,
        timeout=timeout,
        startup_timeout=120,
        store_widget_state=True,
        shutdown_kernel="immediate",  # the outputs are in: a graceful shutdown waits seconds for the kernel to exit
        record_timing=False,
        resources={"metadata": {"path": str(workdir)}},
    )
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as err:
        raise RefreshError(str(err)) from None
    finally:
        last = nb.cells.pop()
    text = "".join(o.get("text", "") for o in last.outputs if o.get("name") == "stdout")
    return json.loads(text)


def number_widgets(nb, name: str) -> None:
    """Replace the random widget model ids by ids derived from the notebook name and order."""
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    if not state:
        nb.metadata.pop("widgets", None)
        return
    text = json.dumps(nb)
    ids = sorted(state, key=text.find)
    new = {old: hashlib.sha256(f"{name}:{i}".encode()).hexdigest()[:32] for i, old in enumerate(ids)}
    text = re.sub("|".join(map(re.escape, ids)), lambda m: new[m.group(0)], text)
    nb.clear()
    nb.update(nbformat.from_dict(json.loads(text)))


def refresh(twin: Path, out_dir: Path | None = None, timeout: int = 3600) -> Path:
    """Refresh one notebook from its twin; return the path written."""
    if not twin.exists():
        raise RefreshError(
            f"no twin {twin}: write notebooks/py/{twin.stem}.py first (percent format, see CONTRIBUTING.md)"
        )
    root = twin.parent.parent.parent
    target = (out_dir / f"{twin.stem}.ipynb") if out_dir else harness.ipynb_of(twin)
    try:
        nb = build_inputs(twin)
    except (OSError, ValueError) as err:
        raise RefreshError(f"{twin} cannot be read ({type(err).__name__}: {err}); fix or restore it (git)") from None
    modules = execute(nb, workdir=twin.parent.parent, timeout=timeout)
    number_widgets(nb, twin.stem)
    try:
        stamp = harness.make_stamp(nb, modules, root, profile="full", name=twin.stem)
    except ValueError as err:
        raise RefreshError(str(err)) from None
    if SHOWS_RUNTIMES in twin.read_text(encoding="utf-8"):  # what it showed, but its own time (not known yet)
        stamp["runtimes"] = {n: t for n, t in read_runtimes(root).items() if n != twin.stem}
    nb.metadata[harness.STAMP_KEY] = stamp
    text = nbformat.writes(nb)
    text += "" if text.endswith("\n") else "\n"  # as nbformat.write does
    problems = harness.execution_problems(target, nb=json.loads(text))  # every check before any write
    if problems:
        raise RefreshError("the refreshed notebook is not clean:\n  " + "\n  ".join(problems))
    write_atomically(target, text)
    return target


def broken(twin: Path, ipynb: Path) -> Path:
    """Which of a twin and its notebook cannot be read as text (the notebook: as JSON); else the notebook, whose
    structure is then what is wrong."""
    for path, parse in ((twin, str), (ipynb, json.loads)):
        try:
            parse(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return path
    return ipynb


def stale_twins(root: Path) -> list[Path]:
    """The twins whose notebook needs a refresh, in book order, each printed with its first reason. A stored
    notebook (or twin) that cannot be read is stale: the refresh writes it again from the twin."""
    stale = []
    for twin in harness.twins_in(root):
        ipynb = harness.ipynb_of(twin)
        try:
            problems = harness.twin_problems(ipynb, twin)
            if ipynb.exists():
                stamp = harness.load(ipynb).get("metadata", {}).get(harness.STAMP_KEY) or {}
                problems = (
                    problems
                    or harness.stamp_problems(ipynb)
                    or harness.execution_problems(ipynb)
                    or runtime_problems(ipynb, stamp, root)
                )
        except RefreshError as err:  # runtimes.json
            problems = [str(err)]
        except (OSError, ValueError, TypeError, AttributeError, KeyError) as err:
            bad = os.path.relpath(broken(twin, ipynb), root)
            fix = f"{harness.fix(twin.stem)} writes it again from its twin" if bad.endswith(".ipynb") else "Mend it"
            problems = [f"{bad} cannot be read ({type(err).__name__}: {err}). {fix}, or restore it: git checkout {bad}"]
        if problems:
            print(f"refresh: {twin.stem} is stale: {problems[0].splitlines()[0]}", flush=True)
            stale.append(twin)
    return stale


def list_stale(root: Path) -> int:
    """Print the stale notebooks (``stale_twins``) and the minutes of refresh they cost, from
    ``notebooks/runtimes.json`` (each notebook's last full-profile run); execute nothing."""
    try:
        times = read_runtimes(root)
    except RefreshError as err:
        print(f"refresh: {err}; the times below are unknown", file=sys.stderr)
        times = {}
    twins = stale_twins(root)
    known = [(times.get(t.stem) or {}).get("full_s") for t in twins]
    total = sum(s for s in known if s is not None)
    unknown = f" ({known.count(None)} with no stored time)" if None in known else ""
    print(f"refresh: {len(twins)} stale; their full-profile runs took {total / 60:.1f} min{unknown}")
    return 0


def write_atomically(target: Path, text: str) -> None:
    """Write ``text`` to a unique temporary file beside ``target``, then rename it over ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def sync_markdown(twin: Path) -> Path:
    """Copy the twin's markdown cells into the stored notebook, keeping every code cell and its
    outputs -- allowed only when the code cells are unchanged (same code digest, same cell
    layout), so the outputs stay those of the full-profile run of this very code."""
    target = harness.ipynb_of(twin)
    if not target.exists():
        raise RefreshError(f"no stored {target.name}: run a full refresh first")
    stored, fresh = nbformat.read(target, as_version=4), build_inputs(twin)
    if [c.cell_type for c in stored.cells] != [c.cell_type for c in fresh.cells] or harness.code_digest(
        stored
    ) != harness.code_digest(fresh):
        raise RefreshError("code cells or the cell layout changed: run a full refresh instead")
    for old, new in zip(stored.cells, fresh.cells):
        if old.cell_type == "markdown":
            old.source, old.metadata, old.id = new.source, new.metadata, new.id
    text = nbformat.writes(stored)
    write_atomically(target, text if text.endswith("\n") else text + "\n")
    return target


def write_html(notebooks: list[Path], out_dir: Path) -> None:
    """NAME.html for each executed notebook (widget state embedded) and an index.html."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab")
    items = []
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
        (out_dir / f"{path.stem}.html").write_text(body, encoding="utf-8")
        title = next(
            (
                line.lstrip("# ").strip()
                for c in nb.cells
                if c.cell_type == "markdown"
                for line in c.source.splitlines()
                if line.startswith("# ")
            ),
            path.stem,
        )
        items.append(f'<li><a href="{path.stem}.html">{html.escape(title)}</a> (<a href="{path.name}">.ipynb</a>)</li>')
    (out_dir / "index.html").write_text(
        '<!doctype html>\n<meta charset="utf-8">\n<title>transformer-nb</title>\n'
        "<h1>transformer-nb: the notebooks</h1>\n<p>Executed in the full profile, in book order.</p>\n<ul>\n"
        + "\n".join(items)
        + "\n</ul>\n",
        encoding="utf-8",
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="NAME, notebooks/py/NAME.py or notebooks/NAME.ipynb")
    parser.add_argument("--all", action="store_true", help="every twin in notebooks/py/")
    parser.add_argument(
        "--stale",
        action="store_true",
        help="every notebook whose stored outputs the harness finds stale, out of sync with its twin or not "
        "from a clean full-profile run, in book order",
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="with --stale: list the stale notebooks and how long their stored full-profile runs took; run nothing",
    )
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="with --all or --stale: the project (default: this one)"
    )
    parser.add_argument("--out", type=Path, help="write the executed notebooks here, not in notebooks/")
    parser.add_argument("--html", action="store_true", help="with --out: also NAME.html and index.html")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per cell (default 3600)")
    parser.add_argument(
        "--stored",
        action="store_true",
        help="with --out --html: render the stored notebooks (their outputs come from a full-"
        "profile refresh, which the harness tests keep fresh) instead of executing again",
    )
    parser.add_argument(
        "--markdown-only",
        action="store_true",
        help="only copy edited markdown cells into the stored notebooks (refused when a code "
        "cell changed); nothing is executed",
    )
    args = parser.parse_args(argv)
    if not (args.root / "notebooks" / "py").is_dir():
        parser.error(f"--root {args.root}: no notebooks/py/ there; name a transformer-nb checkout")
    if args.list:
        if not args.stale:
            parser.error("--list goes with --stale")
        return list_stale(args.root)
    if args.markdown_only:
        twins = [twin_for(a) for a in args.notebooks] + (harness.twins_in(args.root) if args.all else [])
        for twin in twins:
            try:
                print(f"refresh: markdown of {twin.stem} -> {os.path.relpath(sync_markdown(twin))}")
            except RefreshError as err:
                print(f"refresh: {twin.stem}: {err}", file=sys.stderr)
                return 1
        return 0
    if args.stored:
        if not (args.out and args.html):
            parser.error("--stored needs --out DIR --html")
        twins = [twin_for(a) for a in args.notebooks] + (harness.twins_in(args.root) if args.all else [])
        out_dir = args.out.resolve()
        out_dir.mkdir(parents=True, exist_ok=True)
        copies = []
        for twin in twins:
            src = harness.ipynb_of(twin)
            if not src.exists():
                print(
                    f"refresh: {twin.stem} has no stored notebook; run `make refresh NB={twin.stem}`", file=sys.stderr
                )
                return 1
            copies.append(out_dir / src.name)
            copies[-1].write_bytes(src.read_bytes())
        write_html(copies, out_dir)
        print(f"refresh: {len(copies)} stored notebooks rendered -> {os.path.relpath(out_dir)}/index.html")
        return 0

    profile = os.environ.get("TNB_PROFILE", "full")
    if profile != "full":
        print(
            f"refresh: refusing to run with TNB_PROFILE={profile}. Stored outputs come from the "
            f"full profile; unset TNB_PROFILE (or set it to full) and run again.",
            file=sys.stderr,
        )
        return 2
    if args.html and not args.out:
        parser.error("--html needs --out DIR")
    twins = [twin_for(a) for a in args.notebooks] + (harness.twins_in(args.root) if args.all else [])
    if args.stale:
        twins += stale_twins(args.root)
        if not twins:
            print("refresh: no stale notebook; nothing to do")
            return 0
    if not twins:
        parser.error("name a notebook, or pass --all or --stale")
    if not args.out:
        try:  # each refresh records its time there: a file that cannot be read stops the run before it starts
            read_runtimes(args.root)
        except RefreshError as err:
            print(f"refresh: {err}", file=sys.stderr)
            return 2
    os.environ["TNB_PROFILE"] = "full"  # inherited by the kernel

    out_dir = args.out.resolve() if args.out else None
    written, failed, start = [], [], time.perf_counter()
    done, again = set(), set()
    while twins:
        twin = twins.pop(0)
        done.add(twin.stem)
        t0 = time.perf_counter()
        print(f"refresh: {twin.stem} ...", flush=True)
        try:
            written.append(refresh(twin, out_dir, args.timeout))
        except RefreshError as err:
            failed.append(twin.stem)
            print(
                f"refresh: {twin.stem} FAILED after {time.perf_counter() - t0:.1f} s; "
                f"the stored notebook is unchanged.\n{err}",
                file=sys.stderr,
                flush=True,
            )
            continue
        if out_dir is None:
            record_runtime(twin.stem, time.perf_counter() - t0, root=twin.parent.parent.parent)
        print(
            f"refresh: {twin.stem} done in {time.perf_counter() - t0:.1f} s -> {os.path.relpath(written[-1])}",
            flush=True,
        )
        # a figure or a runtime this run changed may be shown elsewhere: in 00's map too, which may run once more
        if (args.stale or args.all) and out_dir is None and not twins:
            twins = [
                t
                for t in stale_twins(args.root)
                if t.stem not in done or (t.stem not in again and SHOWS_RUNTIMES in t.read_text(encoding="utf-8"))
            ]
            again.update(t.stem for t in twins)
    if args.html and written:
        write_html(written, out_dir)
        print(f"refresh: HTML in {os.path.relpath(out_dir)}/index.html")
    print(
        f"refresh: {len(written)} refreshed, {len(failed)} failed"
        + (f" ({', '.join(failed)})" if failed else "")
        + f", {time.perf_counter() - start:.1f} s in all"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
