"""One entry of the claims ledger, and the rules every entry must satisfy.

A :class:`Claim` records one checkable statement of one of the five source texts: what the text says, our
verdict (one of :data:`STATUSES`), the value we computed or the primary source we read, how we got it, the
notebook whose audit appendix it belongs to, and, where code can check it, the name of a function of
:mod:`.checks` that raises ``AssertionError`` when the recorded verdict stops being true. :func:`load` reads one
text's entries from ``data/<text>.toml``, where each ``[[claim]]`` table holds one entry's fields.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path

from . import figures

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIRMED, WRONG, IMPRECISE, NOT_CHECKABLE = "confirmed", "wrong", "imprecise", "not checkable here"
ARTEFACT = "extraction artefact"  # the extracted text lost symbols; the author's statement, restored, holds
STATUSES = (CONFIRMED, WRONG, IMPRECISE, NOT_CHECKABLE, ARTEFACT)
# The verdict scale, stated once (notebook 13 prints it):
SCALE = {
    CONFIRMED: "the statement holds",
    WRONG: "the text states something false; the entry gives the correct value and how it was obtained",
    IMPRECISE: "defensible wording that the entry states more exactly",
    NOT_CHECKABLE: "neither code nor an available primary source settles it; the entry says why",
    ARTEFACT: "the extraction lost symbols, so the text reads wrongly; the entry restores what the author wrote, "
    "which holds: neither wrong nor imprecise",
}
TEXTS = ("000", "001", "002", "003", "004")
NOTEBOOKS = tuple(f"{i:02d}" for i in range(12))  # 00..11: the notebooks whose appendices cite the ledger
ID_PATTERN = re.compile(r"^00[0-4]-[A-Za-z0-9.\-]+$")


@dataclass(frozen=True)
class Claim:
    """One claim of one text, with our verdict.

    ``correct`` is required for ``wrong`` (the correct value), ``imprecise`` (the exact statement) and
    ``extraction artefact`` (the statement as restored);
    ``why`` is required for ``not checkable here``. A figure that a notebook produces is never typed in: the text
    names it ``{NN:key}`` (see :mod:`.figures`) and :meth:`resolved` fills it in from that notebook's stored
    outputs. ``reveals`` names the
    chapter exercise whose answer the verdict gives away: the printed views then withhold it.
    """

    id: str
    text: str
    section: str
    claim: str
    status: str
    value: str
    how: str
    notebook: str
    correct: str = ""
    why: str = ""
    source: str = ""
    nb_check: str = ""
    reveals: str = ""  # "8.2": the verdict gives away that exercise's answer (shown only with reveal=True)
    check: str = ""  # the name of a function of .checks that raises AssertionError when the verdict stops holding

    def problems(self) -> list[str]:
        """Everything wrong with this entry's structure (an empty list when it is well formed)."""
        out = []
        if not ID_PATTERN.match(self.id) or not self.id.startswith(self.text):
            out.append(f"id {self.id!r} must look like '{self.text}-<section>-<slug>'")
        if self.text not in TEXTS:
            out.append(f"text {self.text!r} is not one of {TEXTS}")
        if self.status not in STATUSES:
            out.append(f"status {self.status!r} is not one of {STATUSES}")
        if self.notebook not in NOTEBOOKS:
            out.append(f"notebook {self.notebook!r} is not one of 00..11")
        for name in ("section", "claim", "how"):
            if not getattr(self, name).strip():
                out.append(f"{name} is empty")
        if self.status in (WRONG, IMPRECISE, ARTEFACT) and not self.correct.strip():
            out.append(f"a {self.status!r} entry needs 'correct'")
        if self.status == NOT_CHECKABLE and not self.why.strip():
            out.append("a 'not checkable here' entry needs 'why'")
        if self.reveals and not re.fullmatch(r"8\.(?:[1-9]|10)", self.reveals):
            out.append(f"reveals {self.reveals!r} must name a chapter exercise, 8.1 .. 8.10")
        for key in sorted(self.figure_keys() - set(figures.FIGURES)):
            out.append(f"figure {{{key}}} is not one of figures.FIGURES")
        if self.status != NOT_CHECKABLE:
            if not self.value.strip():
                out.append("needs 'value' (what we computed or found)")
            if not self.check and not self.source.strip():
                out.append("needs a check function or a cited source")
        if self.check:
            from . import checks

            if not callable(getattr(checks, self.check, None)):
                out.append(f"check {self.check!r} is not a function of claims.checks")
        return out

    def resolved(self, root=None, here: str | None = None) -> Claim:
        """This entry with every ``{NN:key}`` figure filled in from the stored notebooks (see :mod:`.figures`);
        notebook ``here``'s own figures are pointed to instead."""
        names = ("claim", "value", "correct", "why", "source")
        return replace(self, **{n: figures.fill(getattr(self, n), root, here) for n in names})

    def figure_keys(self) -> set[str]:
        """The notebook figures this entry quotes."""
        return {
            k
            for n in ("claim", "value", "correct", "why", "source")
            for k in figures.PLACEHOLDER.findall(getattr(self, n))
        }

    def as_dict(self) -> dict:
        """All fields as JSON-ready values; ``check`` is the check function's name (or null)."""
        return {f.name: getattr(self, f.name) or (None if f.name == "check" else "") for f in fields(self)}


DATA = Path(__file__).parent / "data"


def load(text: str) -> list[Claim]:
    """The entries of one text, read from ``data/<text>.toml`` (each ``[[claim]]`` table is one entry)."""
    with open(DATA / f"{text}.toml", "rb") as f:
        return [Claim(text=text, **entry) for entry in tomllib.load(f)["claim"]]
