"""tools/colab.py: the badge and setup cell come from the one setting, --apply is idempotent, --check catches drift.

``--apply`` is exercised on copies of the notebooks only (the real ones get it in phase 2).
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

import transformer_nb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import colab  # noqa: E402

URL = "https://github.com/transformer-nb/transformer-nb"


@pytest.fixture
def copies(tmp_path):
    """A copy of notebooks/ (twins and stored notebooks) and of pyproject.toml."""
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def tool(*args):
    """Run ``tools/colab.py ARGS`` as a maintainer would."""
    cmd = [sys.executable, str(ROOT / "tools" / "colab.py"), *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True)


def test_the_one_setting_is_the_repository_url_and_colab_installs_the_release_the_package_reports():
    """(a version bump in pyproject.toml or the package only fails here)"""
    assert colab.repo_url() == URL
    assert colab.badge("05_rope", URL) == (
        "[![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        "(https://colab.research.google.com/github/transformer-nb/transformer-nb/blob/main/notebooks/05_rope.ipynb)"
    )
    assert colab.release() == f"v{transformer_nb.__version__}"
    assert f'"TNB_INSTALL_FROM", "git+{URL}@v{transformer_nb.__version__}"' in colab.setup_cell(URL)


def test_a_version_bump_stales_the_setup_cells_until_apply(copies):
    pyproject, nbdir = copies / "pyproject.toml", copies / "notebooks"
    tool("--apply", "05_rope", "--notebooks", nbdir)
    pyproject.write_text(pyproject.read_text().replace('version = "', 'version = "9.', 1))
    assert colab.release(pyproject).startswith("v9.")
    result = tool("--check", "05_rope", "--notebooks", nbdir, "--pyproject", pyproject)
    assert result.returncode == 1 and "py/05_rope.py: the first code cell is not the generated setup" in result.stdout
    tool("--apply", "05_rope", "--notebooks", nbdir, "--pyproject", pyproject)
    assert f"git+{URL}@{colab.release(pyproject)}" in (nbdir / "py" / "05_rope.py").read_text()


@pytest.mark.parametrize(
    "pyproject,refused",
    [(f'[project]\nversion = "{v}"\n', r"version must be a release such as 1\.2\.0") for v in ("", "main", "1.0 b")]
    + [
        (f'[project.urls]\nRepository = "{u}"\n', "Repository must be https://github.com/OWNER/REPO")
        for u in ("", "https://gitlab.com/a/b", "github.com/a/b", "https://github.com/a")
    ],
)
def test_a_version_that_is_no_release_or_a_repository_colab_cannot_open_is_refused(tmp_path, pyproject, refused):
    (tmp_path / "pyproject.toml").write_text(pyproject)
    read = colab.release if "version" in pyproject else colab.repo_url
    with pytest.raises(ValueError, match=refused):
        read(tmp_path / "pyproject.toml")


def test_changing_the_setting_changes_badges_and_install_source(copies):
    pyproject = copies / "pyproject.toml"
    text = pyproject.read_text()
    pyproject.write_text(text.replace(f'Repository = "{URL}"', 'Repository = "https://github.com/someone/fork.git"'))
    assert colab.repo_url(pyproject) == "https://github.com/someone/fork"
    shown = tool("--show", "--pyproject", pyproject, "--notebooks", copies / "notebooks").stdout
    assert f"install source in Colab: git+https://github.com/someone/fork@{colab.release()}" in shown
    assert "colab.research.google.com/github/someone/fork/blob/main/notebooks/00_start_here.ipynb" in shown
    assert "transformer-nb/transformer-nb" not in shown


def test_apply_writes_the_cells_once_and_check_then_passes(copies):
    nbdir = copies / "notebooks"
    first = tool("--apply", "--notebooks", nbdir)
    assert first.returncode == 0, first.stderr
    twins = sorted((nbdir / "py").glob("[0-9][0-9]_*.py"))
    after = {p: p.read_text() for p in twins}
    again = tool("--apply", "--notebooks", nbdir)
    assert "updated" not in again.stdout and {p: p.read_text() for p in twins} == after  # idempotent
    for twin in twins:
        assert colab.check_twin(after[twin], twin.stem, URL) == []
        # the stored notebook that jupytext makes from the twin has exactly the generated cell, magic included
        nb = json.loads(jupytext.writes(jupytext.reads(after[twin], fmt="py:percent"), fmt="ipynb"))
        assert colab.check_ipynb(nb, twin.stem, URL) == [], twin.stem


def old_style(nbdir, name, first_code, rest="import os\nimport time\n"):
    """A notebook written before the Colab cells existed: twin and stored copy, title then ``first_code``."""
    text = f"# %% [markdown]\n# # {name} · A title\n\n# %%\n{first_code}\n\n# %%\n{rest}"
    (nbdir / "py" / f"{name}.py").write_text(text)
    (nbdir / f"{name}.ipynb").write_text(jupytext.writes(jupytext.reads(text, fmt="py:percent"), fmt="ipynb"))
    return nbdir / "py" / f"{name}.py"


def test_apply_keeps_a_notebooks_setup_arguments_and_its_other_cells(copies):
    nbdir = copies / "notebooks"
    twin = old_style(
        nbdir, "97_threads", "%matplotlib inline\nfrom transformer_nb import setup\nenv = setup(threads=1)"
    )
    before = twin.read_text()
    tool("--apply", "97_threads", "--notebooks", nbdir)
    after = twin.read_text()
    assert after.count("env = setup(threads=1)  # seeds everything") == 1
    assert after.count("# %%") == before.count("# %%")  # the old setup cell was replaced, not duplicated
    rest = before[before.index("# %%\nimport os\nimport time") :]
    assert after.endswith(rest)  # everything after the setup cell is untouched


def test_apply_inserts_before_a_mixed_first_cell_and_says_so(copies):
    nbdir = copies / "notebooks"
    mixed = "%matplotlib inline\nimport torch\n\nfrom transformer_nb import setup\n\nenv = setup()"
    before = old_style(nbdir, "98_mixed", mixed).read_text()
    out = tool("--apply", "98_mixed", "--notebooks", nbdir).stdout
    assert "98_mixed: the next code cell also calls setup()" in out
    assert (nbdir / "py" / "98_mixed.py").read_text().count("# %%") == before.count("# %%") + 1


def test_check_catches_any_drift(copies):
    nbdir = copies / "notebooks"
    twin = old_style(nbdir, "99_drift", "%matplotlib inline\nfrom transformer_nb import setup\nenv = setup()")
    tool("--apply", "99_drift", "--notebooks", nbdir)
    good = twin.read_text()
    assert colab.check_twin(good, "99_drift", URL) == []
    for old, new in [
        ('"-q", source, pin]', '"-q", source]'),  # torch no longer pinned
        (f'@{colab.release()}")', '")'),  # the companion no longer pinned
        ("blob/main/notebooks/99_drift", "blob/dev/notebooks/99_drift"),
        ("# %matplotlib inline", "# %matplotlib widget"),
        ('find_spec("google.colab")', 'find_spec("google.cloud")'),
    ]:
        assert old in good
        assert colab.check_twin(good.replace(old, new), "99_drift", URL) != [], old
    assert colab.check_twin(good, "02_masking", URL) == ["the first markdown cell lacks the generated Colab badge line"]
    result = tool("--check", "99_drift", "--notebooks", nbdir)  # the twin is right, the .ipynb not yet
    assert result.returncode == 1 and "notebooks/99_drift.ipynb:" in result.stdout
    assert "notebooks/py/99_drift.py" not in result.stdout


def test_apply_to_a_stored_copy_matches_check():
    nb = json.loads((ROOT / "notebooks" / "00_start_here.ipynb").read_text())
    nb = colab.apply_ipynb(nb, "00_start_here", URL)
    assert colab.check_ipynb(nb, "00_start_here", URL) == []
    assert colab.check_ipynb(colab.apply_ipynb(nb, "00_start_here", URL), "00_start_here", URL) == []


def test_every_notebook_has_the_colab_cells():
    names = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    names += sorted(p.stem for p in (ROOT / "notebooks" / "py").glob("[0-9][0-9]_*.py") if p.stem not in names)
    url, wrong = colab.repo_url(), []
    for name in names:
        twin, stored = ROOT / "notebooks" / "py" / f"{name}.py", ROOT / "notebooks" / f"{name}.ipynb"
        problems = (colab.check_twin(twin.read_text(), name, url) if twin.exists() else []) + (
            colab.check_ipynb(json.loads(stored.read_text()), name, url) if stored.exists() else []
        )
        wrong += [f"{name}: {problems}"] if problems else []
    assert not wrong, "run `tools/colab.py --apply NAME`, then `make refresh NB=NAME`:\n" + "\n".join(wrong)
