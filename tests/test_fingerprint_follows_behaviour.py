"""transformer_nb.fingerprint: a digest that changes with what code does, not with how it is written down."""

import shutil
import subprocess
from pathlib import Path

import pytest

from transformer_nb.fingerprint import source_digest

BASE = '''"""Module doc."""


def scale(x, k=2):
    """Multiply."""
    label = f"x{k!r:>3}"
    return (x * k, label)
'''

SAME = {
    "docstrings": BASE.replace("Module doc.", "Other words.").replace("Multiply.", "Times k, shape kept."),
    "comments and blank lines": BASE.replace("def scale", "# a comment\n\n\ndef scale").replace(
        "label =", "# why\n    label ="
    ),
    "spacing and line breaks inside brackets": BASE.replace(
        "return (x * k, label)", "return (x*k,\n            label)"
    ),
    "a docstring removed": BASE.replace('    """Multiply."""\n', ""),
}

DIFFERENT = {
    "an operator": BASE.replace("x * k", "x + k"),
    "a default": BASE.replace("k=2", "k=3"),
    "a string constant": BASE.replace('f"x', 'f"y'),
    "an f-string's format": BASE.replace("!r:>3", "!r:>4"),
    "a statement added": BASE.replace("    return", "    x = x.clone()\n    return"),
}


@pytest.mark.parametrize("edit", [*SAME, *DIFFERENT])
def test_only_code_edits_change_the_digest(edit):
    assert (source_digest(SAME.get(edit) or DIFFERENT[edit]) == source_digest(BASE)) == (edit in SAME)


def test_source_that_does_not_parse_is_digested_as_text():
    assert source_digest("def (:") != source_digest("def ((:")


@pytest.mark.parametrize("version", ["3.10", "3.12", "3.13"])
def test_the_digest_is_the_same_on_other_python_versions(version):
    """Python 3.12 tokenizes f-strings into several tokens; the digest must not notice."""
    python = shutil.which(f"python{version}")
    if python is None or subprocess.run([python, "-c", "pass"], capture_output=True, timeout=60).returncode:
        pytest.skip(f"no working python{version} on PATH")
    module = Path(__file__).resolve().parents[1] / "transformer_nb" / "fingerprint.py"
    code = (
        "import importlib.util as u, sys\n"
        f"s = u.spec_from_file_location('fp', {str(module)!r}); m = u.module_from_spec(s); s.loader.exec_module(m)\n"
        "print(m.source_digest(sys.stdin.read()))"
    )
    out = subprocess.run([python, "-c", code], input=BASE, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == source_digest(BASE)
