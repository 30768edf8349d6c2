"""The claims ledger: every checkable claim of the five source texts, with our verdict, in one place.

Each entry (:class:`Claim`) says what a text claims, whether it is ``confirmed``, ``wrong`` (the text states
something false; with the correct value), ``imprecise`` (defensible wording, stated more exactly), ``not
checkable here`` (with why) or an ``extraction artefact`` (the extracted text lost symbols; the author's
statement, restored, holds), what we computed or which primary source we read, and which notebook's audit
appendix it belongs to (:data:`SCALE` states the scale). The entries are data, one file per text
(``data/000.toml`` … ``data/004.toml``, one ``[[claim]]`` table an entry); an entry that code can check names a
cheap function of :mod:`.checks` (``check = "name"``, with the text's numbers in ``args``), imported only when a
check runs. A figure a notebook produces is read from that notebook's stored outputs (:mod:`.figures`). Notebooks
cite entries by id instead of repeating a refutation::

    from transformer_nb.claims import cite, report
    report(notebook="01")            # the claims of notebook 01, their checks run
    print(cite("000-8.2.5-expsum"))  # one line, to quote in prose

``python -m transformer_nb.claims`` prints the ledger as a table (``--json`` for JSON). Entries that give away
an exercise's answer withhold it everywhere unless asked (``reveal=True``, ``--reveal``).
"""

import contextlib
import difflib
import textwrap
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import figures

__all__ = ["cite", "claims", "counts", "get", "markdown", "report", "run_checks"]
CONFIRMED, WRONG, IMPRECISE, NOT_CHECKABLE = "confirmed", "wrong", "imprecise", "not checkable here"
ARTEFACT = "extraction artefact"  # the extracted text lost symbols; the author's statement, restored, holds
STATUSES = (CONFIRMED, WRONG, IMPRECISE, NOT_CHECKABLE, ARTEFACT)
SCALE = {  # the verdict scale, stated once (notebook 13 prints it)
    CONFIRMED: "the statement holds",
    WRONG: "the text states something false; the entry gives the correct value and how it was obtained",
    IMPRECISE: "defensible wording that the entry states more exactly",
    NOT_CHECKABLE: "neither code nor an available primary source settles it; the entry says why",
    ARTEFACT: "the extraction lost symbols, so the text reads wrongly; the entry restores what the author wrote, "
    "which holds: neither wrong nor imprecise",
}
TEXTS = ("000", "001", "002", "003", "004")
NOTEBOOKS = tuple(f"{i:02d}" for i in range(12))  # 00..11: the notebooks whose appendices cite the ledger
PROSE = ("claim", "value", "correct", "why", "source")  # the fields that may quote a notebook's figure {NN:key}
LABELS = {WRONG: "correct:", IMPRECISE: "exactly:", ARTEFACT: "restored:"}  # what a report calls ``correct``


@dataclass(frozen=True)
class Claim:
    """One claim of one text, with our verdict. ``correct`` is required for ``wrong`` (the correct value),
    ``imprecise`` (the exact statement) and ``extraction artefact`` (the statement restored); ``why`` for ``not
    checkable here``. A notebook's figure is never typed in: the text names it ``{NN:key}`` and :meth:`resolved`
    fills it in. ``reveals`` names the chapter exercise whose answer the verdict gives away (the printed views then
    withhold it); ``check`` names a function of :mod:`.checks`, called with ``args``, that raises
    ``AssertionError`` when the verdict stops holding; ``nb_check`` names the notebook cell that checks it.
    ``tests/test_claims_ledger.py`` holds the rules every entry's structure follows."""

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
    reveals: str = ""
    check: str = ""
    args: dict = field(default_factory=dict)

    def resolved(self, here: str | None = None) -> "Claim":
        """This entry with every ``{NN:key}`` replaced by the figure notebook NN stored (see :mod:`.figures`), or by
        where to find it; in notebook ``here`` its own figures are pointed to, not quoted: the reader sees them
        above, and the stored copy may be a run older."""

        def fill(m) -> str:
            key, where = m.group(1), f"(the figure in {figures.FIGURES[m.group(1)][0]}"
            with contextlib.suppress(figures.Unavailable, figures.NotPrinted):
                return where + ", above)" if key[:2] == here else figures.read(key)
            return where + ")"

        return replace(self, **{n: figures.PLACEHOLDER.sub(fill, getattr(self, n)) for n in PROSE})


DATA = {t: figures.tomllib.loads((Path(__file__).parent / "data" / f"{t}.toml").read_text("utf-8")) for t in TEXTS}
LEDGER = tuple(Claim(text=t, **e) for t in TEXTS for e in DATA[t]["claim"])


def get(claim_id: str) -> Claim:
    """The entry with this id; a ``KeyError`` that suggests close ids otherwise."""
    if not isinstance(claim_id, str):
        raise TypeError(f"claim_id must be an id such as '000-01', got {type(claim_id).__name__}")
    if found := [c for c in LEDGER if c.id == claim_id]:
        return found[0]
    near = difflib.get_close_matches(claim_id, [c.id for c in LEDGER], n=3)
    raise KeyError(f"no claim {claim_id!r} in the ledger" + (f"; did you mean {', '.join(near)}?" if near else ""))


def _entries(entries, reveal: bool = False) -> list[Claim]:
    """``entries`` (a list or tuple of ledger entries; None: the whole ledger) as a list; a ``TypeError`` for anything
    else, and for a ``reveal`` that is not a bool (``reveal="no"`` would reveal)."""
    if not isinstance(reveal, bool):
        raise TypeError(f"reveal must be True or False, got {reveal!r}")
    entries = list(LEDGER) if entries is None else entries
    if not isinstance(entries, (list, tuple)) or not all(isinstance(e, Claim) for e in entries):
        raise TypeError(f"entries must be a list of claims (from claims()), got {entries!r:.60}")
    return list(entries)


def claims(text: str | None = None, notebook: str | None = None, status: str | None = None) -> list[Claim]:
    """The entries of one text (``"000"``…``"004"``), one notebook (``"00"``…``"11"``) and/or one status."""
    chosen = {"text": text, "notebook": notebook, "status": status}
    for (name, value), allowed in zip(chosen.items(), (TEXTS, NOTEBOOKS, STATUSES)):
        if value is not None and value not in allowed:
            raise ValueError(f"{name}={value!r} is not one of {', '.join(allowed)}")
    return [c for c in LEDGER if all(v is None or getattr(c, k) == v for k, v in chosen.items())]


def counts(entries=None) -> dict[str, dict[str, int]]:
    """``{text: {status: n}}`` over ``entries`` (default: the whole ledger); every text and status is present."""
    n = Counter((c.text, c.status) for c in _entries(entries))
    return {t: {s: n[t, s] for s in STATUSES} for t in TEXTS}


def detail(c: Claim, reveal: bool = False) -> str:
    """What an entry found: the correct value, the exact statement, why it cannot be checked, or the confirmed
    value; withheld for an entry that gives away an exercise's answer, unless ``reveal``."""
    if c.reveals and not reveal:
        return f"(withheld: it gives away Exercise {c.reveals}'s answer; the exercise's solution shows it)"
    return c.why if c.status == NOT_CHECKABLE else c.value if c.status == CONFIRMED else c.correct


def cite(claim_id: str, reveal: bool = False) -> str:
    """One line for prose: id, text and section, verdict, and the correct value or exact statement
    (withheld for an entry that gives away an exercise's answer, unless ``reveal``)."""
    c = _entries([get(claim_id)], reveal)[0].resolved()
    return f"[{c.id}] {c.text} {c.section}: {c.status} — {detail(c, reveal)}"


def run_checks(entries=None) -> tuple[dict[str, str], list[str]]:
    """Run the check of every entry that has one; returns ``({id: error} for those that fail, [skipped ids])``. A
    check that needs a notebook figure this installation does not store is not a failure: it is skipped."""
    from . import checks  # torch and the checks load only when a check runs

    failures, skipped = {}, []
    for c in (c for c in _entries(entries) if c.check):
        try:
            getattr(checks, c.check)(**c.args)
        except figures.Unavailable:
            skipped.append(c.id)
        except Exception as exc:  # a check that crashes is a failing check, reported by id
            failures[c.id] = f"{type(exc).__name__}: {exc}"
    return failures, skipped


def summary(entries) -> str:
    """``"n claims (a confirmed, b wrong, …)"``."""
    n = Counter(c.status for c in entries)
    return f"{len(entries)} claims (" + ", ".join(f"{n[s]} {s}" for s in STATUSES) + ")"


def report(notebook=None, text=None, status=None, reveal: bool = False) -> None:
    """Print the selected entries and run their checks: text that is the same on every device and profile, for an
    nbval-checked cell. Raises ``AssertionError`` naming every entry whose check fails. An entry that gives away an
    exercise's answer shows its verdict only with ``reveal=True`` (a solution cell)."""
    entries = _entries(claims(text=text, notebook=notebook, status=status), reveal)
    if not entries:
        raise ValueError(f"no claims for notebook={notebook!r}, text={text!r}, status={status!r}")
    failures, skipped = run_checks(entries)
    scope = ", ".join(f"{k} {v}" for k, v in (("notebook", notebook), ("text", text), ("status", status)) if v)
    ran = f"{sum(bool(c.check) for c in entries)} checks run{'' if failures else ', all pass'}"
    print(f"Claims ledger ({scope or 'all'}): {summary(entries)}; {ran}")
    wrap = lambda label, s: textwrap.fill(s, 100, initial_indent=f"  {label:<8} ", subsequent_indent=" " * 11)
    for c in (c.resolved(here=notebook) for c in entries):  # a notebook's own figures are above it
        mark = " ✗ check FAILS" if c.id in failures else " ✓ checked" if c.check else ""
        mark = " (check needs the stored notebooks)" if c.id in skipped else mark
        found = [(LABELS.get(c.status), c.correct), ("why:", c.why), ("found:", c.value * (c.status == CONFIRMED))]
        body = found + [("source:", c.source)] if reveal or not c.reveals else [("verdict:", detail(c))]
        head = f"\n{c.id} · {c.text} {c.section} · {c.status.upper()}{mark}"
        print(head, *(wrap(k, s) for k, s in [("claim:", c.claim), *body] if k and s), sep="\n")
    if failures:
        raise AssertionError("ledger checks failed: " + "; ".join(f"{k}: {v}" for k, v in failures.items()))


def markdown(entries=None, reveal: bool = False) -> str:
    """A Markdown table for a notebook: id, section, verdict, the claim, and what is correct or found
    (withheld for an entry that gives away an exercise's answer, unless ``reveal``)."""
    esc = lambda s: s.replace("|", "\\|").replace("\n", " ")
    row = lambda c: f"| `{c.id}` | {esc(c.section)} | **{c.status}** | {esc(c.claim)} | {esc(detail(c, reveal))} |"
    head = "| id | § | verdict | the text says | correct / exactly / why / found |\n|---|---|---|---|---|"
    return "\n".join([head, *(row(c.resolved()) for c in _entries(entries, reveal))])
