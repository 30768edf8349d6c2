"""`tools/refresh.py --markdown-only` copies prose edits into a stored notebook, and refuses as soon
as a code cell differs (then only a full refresh may produce the outputs)."""

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import refresh  # noqa: E402

TWIN = """# %% [markdown]
# # Title
# {prose}

# %%
x = 1 + 1
print(x)
"""


def _stored(tmp_path, prose="old words", code="x = 1 + 1\nprint(x)"):
    (tmp_path / "notebooks" / "py").mkdir(parents=True)
    twin = tmp_path / "notebooks" / "py" / "demo.py"
    twin.write_text(TWIN.format(prose=prose))
    nb = refresh.build_inputs(twin)
    nb.cells[1].source = code
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="2\n")]
    nbformat.write(nb, tmp_path / "notebooks" / "demo.ipynb")
    return twin


def test_prose_edit_is_copied_and_outputs_are_kept(tmp_path):
    twin = _stored(tmp_path)
    twin.write_text(TWIN.format(prose="new words"))
    target = refresh.sync_markdown(twin)
    nb = nbformat.read(target, as_version=4)
    assert "new words" in nb.cells[0].source
    assert nb.cells[1].outputs[0]["text"] == "2\n"


def test_a_changed_code_cell_is_refused(tmp_path):
    twin = _stored(tmp_path, code="x = 1 + 2\nprint(x)")
    with pytest.raises(refresh.RefreshError, match="full refresh"):
        refresh.sync_markdown(twin)
