"""The generated setup cell, executed in a real kernel with tripwires on everything it must not do outside Colab.

An audit hook (``sys.addaudithook``) armed before the cell raises on any new process (pip included), any
network connection or URL request, and any write under the data cache. Outside Colab the cell must run
clean: nothing installed, nothing downloaded, WikiText-2 not even imported. With a stub ``google.colab``
on the path (what Colab has), the same cell must trip on the pip install: proof that the tripwires work
and that the module is how the cell recognises Colab.
"""

import os
import sys
from pathlib import Path

import nbformat
import pytest
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


def run_setup_cell(tmp_path, monkeypatch, stub: str | None):
    """Execute [tripwire, setup cell, probe] in a fresh kernel; return the notebook (errors kept in outputs)."""
    if stub:
        (tmp_path / "stub" / "google" / stub).mkdir(parents=True)  # no google/__init__.py: a namespace package
        (tmp_path / "stub" / "google" / stub / "__init__.py").write_text('"""stub"""\n')
        # in front of any PYTHONPATH install (wheels unpacked into a folder, as on the offline GPU host)
        monkeypatch.setenv(
            "PYTHONPATH", os.pathsep.join(p for p in [str(tmp_path / "stub"), os.environ.get("PYTHONPATH", "")] if p)
        )
    for var in ("TNB_DATA_DIR", "TNB_DATA_URL", "TNB_OFFLINE", "TNB_INSTALL_FROM", "TNB_DEVICE", "TNB_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TNB_INSTALL_FROM", str(tmp_path / "no-such.whl"))  # were pip to run, it would fail
    cells = [TRIPWIRE, colab.setup_cell(colab.repo_url()), AFTER]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    where = {"metadata": {"path": str(tmp_path)}}
    kernel = dict(kernel_name="python3", kernel_manager_class=CurrentEnvKernelManager)
    NotebookClient(nb, **kernel, timeout=120, allow_errors=True, resources=where).execute()
    return nb


def _text(cell) -> str:
    """A cell's printed text and errors (``ename: evalue``), joined."""
    return "".join(o["text"] if "text" in o else f"{o.get('ename')}: {o.get('evalue')}\n" for o in cell.outputs)


@pytest.mark.parametrize("stub", [None, "cloud"], ids=["no google package", "google but no google.colab"])
def test_outside_colab_the_cell_installs_and_downloads_nothing(tmp_path, monkeypatch, stub):
    nb = run_setup_cell(tmp_path, monkeypatch, stub)
    setup = nb.cells[1]
    assert not [o for o in setup.outputs if o.output_type == "error"], _text(setup)
    assert "TRIPWIRE" not in _text(setup)
    assert "profile: full | device: cpu" in _text(setup)  # what setup() prints: the cell did its usual work
    assert _text(nb.cells[2]).strip() == "[]"  # neither pip nor the data loader was even imported
    assert not (tmp_path / "xdg" / "transformer_nb").exists()  # no data cache (matplotlib's font cache is there)


def test_in_colab_the_cell_installs_with_pip_keeping_torch(tmp_path, monkeypatch):
    nb = run_setup_cell(tmp_path, monkeypatch, "colab")
    out = _text(nb.cells[1])
    assert "TRIPWIRE subprocess.Popen" in out, out  # it tried to start a process ...
    assert "'-m', 'pip', 'install'" in out and str(tmp_path / "no-such.whl") in out  # ... pip, from TNB_INSTALL_FROM
    assert "'torch==" in out  # pinned to the installed torch, so pip keeps it
