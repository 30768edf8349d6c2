"""The README speaks to students and instructors first: its part before the "For maintainers" heading stays
under 1,200 words (`wc -w`), names the two commands, Colab, lecture mode, the book and the doctor, and leaves
the maintainer material (CI, refresh, torchrun, benchmarks, where the suite was verified, known problems,
versions) to CONTRIBUTING.md."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAINTAINERS = "## For maintainers"
LIMIT = 1200


def _student_part() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.count(MAINTAINERS) == 1, f"the README marks its maintainer material with one {MAINTAINERS!r} heading"
    return text.split(MAINTAINERS)[0]


def test_the_student_part_is_at_most_1200_words():
    words = len(_student_part().split())  # what `wc -w` counts: runs of non-blank characters
    assert words <= LIMIT, f"the README's part before {MAINTAINERS!r} has {words} words (at most {LIMIT})"


def test_the_student_part_covers_what_a_student_and_an_instructor_need():
    part = _student_part()
    for needed in ("make lab", "make test", "Open in Colab", "make lecture", "make book", "make doctor"):
        assert needed in part, needed
    assert re.search(r"make doctor.{0,400}bug report", part, flags=re.S), (
        "the README must say to paste the doctor's output into a report"
    )
    for nb in sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        assert f"`{nb}`" in part, f"the notebook table lacks {nb}"


def test_maintainer_material_lives_in_contributing():
    part, contributing = _student_part(), (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    topics = ["torchrun --standalone", "Where the suite was verified", "Known problems", "Versions tested"]
    for topic in [*topics, ".ci/run", "make refresh"]:
        assert topic not in part, f"{topic!r} is maintainer material: it belongs after {MAINTAINERS!r}"
        assert topic in contributing, f"{topic!r} is missing from CONTRIBUTING.md"
    assert "CONTRIBUTING.md" in (ROOT / "README.md").read_text(encoding="utf-8").split(MAINTAINERS)[1]
