"""The generated setup cell, executed in a real kernel with tripwires on everything it must not do outside Colab.

An audit hook (``sys.addaudithook``) armed before the cell raises on any new process (pip included), any
network connection or URL request, and any write under the data cache. Outside Colab the cell must run
clean: nothing installed, nothing downloaded, WikiText-2 not even imported. With a stub ``google.colab``
on the path (what Colab has), the same cell must trip on the pip install: proof that the tripwires work
and that the module is how the cell recognises Colab. One kernel runs the cases in turn.
"""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import colab  # noqa: E402
from refresh import CurrentEnvKernelManager  # noqa: E402  (a kernel of this interpreter, whatever kernelspecs exist)

TRIPWIRE = r"""
import os, sys
import matplotlib.font_manager  # a first import may build the font cache with fc-list: allowed, before arming

WATCH = os.environ["XDG_CACHE_HOME"]
SPAWN = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "pty.spawn"}
NET = {"socket.connect", "socket.getaddrinfo", "urllib.Request"}
WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND

def _tripwire(event, args, SPAWN=SPAWN, NET=NET, WATCH=WATCH, WRITE=WRITE):  # defaults: still bound at exit
    if event in SPAWN or event in NET:
        raise RuntimeError(f"TRIPWIRE {event}: {str(args)[:400]}")
    if event in ("open", "os.mkdir") and str(args[0]).startswith(WATCH):
        mode, flags = (args[1] or "", args[2] or 0) if event == "open" else ("w", 0)
        if any(c in str(mode) for c in "wax+") or int(flags) & WRITE:
            raise RuntimeError(f"TRIPWIRE {event}: {args[0]}")

sys.addaudithook(_tripwire)
"""
AFTER = (
    "import sys\n"
    "print([m for m in ('pip', 'transformer_nb.wikitext', 'transformer_nb.wikitext_files') if m in sys.modules])"
)


STUBS = {"google but no google.colab": "cloud", "colab": "colab"}


def run_setup_cell(tmp_path, monkeypatch):
    """Execute the tripwire, then [setup cell, probe] three times in one fresh kernel: as found, then with a stub
    ``google.cloud`` and then a stub ``google.colab`` put in front of ``sys.path`` (in front of any PYTHONPATH
    install: wheels unpacked into a folder, as on the offline GPU host); return the notebook (errors kept)."""
    cells = [TRIPWIRE]
    for case in (None, *STUBS.values()):
        if case:
            (tmp_path / case / "google" / case).mkdir(parents=True)  # no google/__init__.py: a namespace package
            (tmp_path / case / "google" / case / "__init__.py").write_text('"""stub"""\n')
            cells.append(f"import sys\nsys.path.insert(0, {str(tmp_path / case)!r})")
        cells += [colab.setup_cell(colab.repo_url()), AFTER]
    for var in ("TNB_DATA_DIR", "TNB_DATA_URL", "TNB_OFFLINE", "TNB_INSTALL_FROM", "TNB_DEVICE", "TNB_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TNB_INSTALL_FROM", str(tmp_path / "no-such.whl"))  # were pip to run, it would fail
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    where = {"metadata": {"path": str(tmp_path)}}
    kernel = dict(kernel_name="python3", kernel_manager_class=CurrentEnvKernelManager, shutdown_kernel="immediate")
    NotebookClient(nb, **kernel, timeout=120, allow_errors=True, resources=where).execute()
    return nb


def _text(cell) -> str:
    """A cell's printed text and errors (``ename: evalue``), joined."""
    return "".join(o["text"] if "text" in o else f"{o.get('ename')}: {o.get('evalue')}\n" for o in cell.outputs)


def test_outside_colab_the_cell_installs_and_downloads_nothing_in_colab_it_installs_with_pip_keeping_torch(
    tmp_path, monkeypatch
):
    nb = run_setup_cell(tmp_path, monkeypatch)
    for case, i in {"no google package": 1, "google but no google.colab": 4}.items():  # cells: setup, probe
        out = _text(nb.cells[i])
        assert not [o for o in nb.cells[i].outputs if o.output_type == "error"] and "TRIPWIRE" not in out, (case, out)
        assert "profile: full | device: cpu" in out, case  # what setup() prints: the cell did its usual work
        assert _text(nb.cells[i + 1]).strip() == "[]", case  # neither pip nor the data loader was even imported
    assert not (tmp_path / "xdg" / "transformer_nb").exists()  # no data cache (matplotlib's font cache is there)
    out = _text(nb.cells[7])  # with google.colab
    assert "TRIPWIRE subprocess.Popen" in out, out  # it tried to start a process ...
    assert "'-m', 'pip', 'install'" in out and str(tmp_path / "no-such.whl") in out  # ... pip, from TNB_INSTALL_FROM
    assert "'torch==" in out  # pinned to the installed torch, so pip keeps it
