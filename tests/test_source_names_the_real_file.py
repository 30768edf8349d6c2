"""``show_source`` labels each object with the file it really comes from, and refuses objects without source."""

import json

import pytest

from transformer_nb.core.masks import causal_mask
from transformer_nb.source import show_source


def test_objects_are_labelled_with_the_file_they_come_from(capsys):
    show_source(causal_mask)
    out = capsys.readouterr().out
    assert "# transformer_nb/core/masks.py" in out and "def causal_mask" in out
    show_source(json.dumps)  # before: labelled "# transformer_nb//usr/.../json/__init__.py"
    out = capsys.readouterr().out
    assert "json/__init__.py" in out and "transformer_nb/" not in out


@pytest.mark.parametrize("obj", [3, len, None])
def test_objects_without_source_are_refused(obj):
    with pytest.raises(TypeError, match="obj must be a function, class, method or module"):
        show_source(obj)
