"""The claims ledger: every checkable claim of the five source texts, with our verdict, in one place.

Each entry (:class:`Claim`) says what a text claims, whether it is ``confirmed``, ``wrong`` (the text states
something false; with the correct value), ``imprecise`` (defensible wording, stated more exactly), ``not
checkable here`` (with why) or an ``extraction artefact`` (the extracted text lost symbols; the author's
statement, restored, holds), what we computed or which primary source we read, and which notebook's audit
appendix it belongs to (:data:`SCALE` states the scale). The entries are data, one file per text
(``data/000.toml`` … ``data/004.toml``); an entry that code can check names a cheap function of :mod:`.checks`
(``check = "name"``), imported only when a check runs. A figure a notebook produces is read from that
notebook's stored outputs (:mod:`.figures`). Notebooks cite entries by id instead of repeating a refutation::

    from transformer_nb.claims import cite, report
    report(notebook="01")            # the claims of notebook 01, their checks run
    print(cite("000-8.2.5-expsum"))  # one line, to quote in prose

``python -m transformer_nb.claims`` prints the ledger as a table (``--json`` for JSON). Entries that give away
an exercise's answer withhold it everywhere unless asked (``reveal=True``, ``--reveal``).
"""

from __future__ import annotations

import difflib
import json
import sys
import textwrap

from ..core.utils import as_int
from . import figures
from ._base import ARTEFACT, CONFIRMED, IMPRECISE, NOT_CHECKABLE, NOTEBOOKS, SCALE, STATUSES, TEXTS, WRONG, Claim, load

__all__ = [
    "ARTEFACT",
    "CONFIRMED",
    "IMPRECISE",
    "LEDGER",
    "NOT_CHECKABLE",
    "SCALE",
    "STATUSES",
    "TEXTS",
    "WRONG",
    "Claim",
    "cite",
    "claims",
    "counts",
    "get",
    "markdown",
    "problems",
    "report",
    "run_checks",
    "table",
    "to_json",
]

LEDGER: tuple[Claim, ...] = tuple(c for t in TEXTS for c in load(t))
_BY_ID = {c.id: c for c in LEDGER}


def get(claim_id: str) -> Claim:
    """The entry with this id; a ``KeyError`` that suggests close ids otherwise."""
    if not isinstance(claim_id, str):
        raise TypeError(f"claim_id must be an id such as '000-01', got {type(claim_id).__name__}")
    if claim_id not in _BY_ID:
        near = difflib.get_close_matches(str(claim_id), _BY_ID, n=3)
        raise KeyError(f"no claim {claim_id!r} in the ledger" + (f"; did you mean {', '.join(near)}?" if near else ""))
    return _BY_ID[claim_id]


def _entries(entries) -> list[Claim]:
    """``entries`` as a list of ledger entries (None: the whole ledger); a ``TypeError`` for anything else."""
    if entries is None:
        return list(LEDGER)
    if isinstance(entries, (str, bytes, Claim)) or not hasattr(entries, "__iter__"):
        raise TypeError(f"entries must be a list of claims (from claims()), got {type(entries).__name__}")
    entries = list(entries)
    bad = next((e for e in entries if not isinstance(e, Claim)), None)
    if bad is not None:
        raise TypeError(f"entries must hold claims (from claims()), got a {type(bad).__name__}: {bad!r:.40}")
    return entries


def _flag(name: str, value) -> None:
    if not isinstance(value, bool):  # reveal="no" would reveal
        raise TypeError(f"{name} must be True or False, got {value!r}")


def _one_of(name: str, value, allowed) -> None:
    if value is not None and value not in allowed:
        raise ValueError(f"{name}={value!r} is not one of {', '.join(map(str, allowed))}")


def claims(text: str | None = None, notebook: str | None = None, status: str | None = None) -> list[Claim]:
    """The entries of one text (``"000"``…``"004"``), one notebook (``"00"``…``"11"``) and/or one status."""
    _one_of("text", text, TEXTS)
    _one_of("notebook", notebook, NOTEBOOKS)
    _one_of("status", status, STATUSES)
    return [
        c
        for c in LEDGER
        if (text is None or c.text == text)
        and (notebook is None or c.notebook == notebook)
        and (status is None or c.status == status)
    ]


def counts(entries=None) -> dict[str, dict[str, int]]:
    """``{text: {status: n}}`` over ``entries`` (default: the whole ledger); every text and status is present."""
    out = {t: dict.fromkeys(STATUSES, 0) for t in TEXTS}
    for c in _entries(entries):
        out[c.text][c.status] += 1
    return out


def _withheld(c: Claim) -> str:
    return f"(withheld: it gives away Exercise {c.reveals}'s answer; the exercise's solution shows it)"


def _detail(c: Claim, reveal: bool) -> str:
    if c.reveals and not reveal:
        return _withheld(c)
    return {WRONG: c.correct, IMPRECISE: c.correct, ARTEFACT: c.correct, NOT_CHECKABLE: c.why}.get(c.status, c.value)


def cite(claim_id: str, reveal: bool = False) -> str:
    """One line for prose: id, text and section, verdict, and the correct value or exact statement
    (withheld for an entry that gives away an exercise's answer, unless ``reveal``)."""
    _flag("reveal", reveal)
    c = get(claim_id).resolved()
    return f"[{c.id}] {c.text} {c.section}: {c.status} — {_detail(c, reveal)}"


def problems() -> dict[str, list[str]]:
    """Structural problems per entry id (empty when the ledger is well formed), duplicate ids included."""
    out = {c.id: c.problems() for c in LEDGER if c.problems()}
    for cid in {c.id for c in LEDGER if sum(d.id == c.id for d in LEDGER) > 1}:
        out.setdefault(cid, []).append("duplicate id")
    return out


def run_checks(entries=None, skipped: list | None = None) -> dict[str, str]:
    """Run the check of every entry that has one; returns ``{id: error}`` for those that fail. A check that needs
    a notebook figure this installation does not store is not a failure: its id goes into ``skipped``."""
    if skipped is not None and not isinstance(skipped, list):
        raise TypeError(f"skipped must be a list (the skipped ids go into it), got {type(skipped).__name__}")
    from . import checks  # torch and the checks load only when a check runs

    failures = {}
    for c in _entries(entries):
        if c.check:
            try:
                getattr(checks, c.check)()
            except figures.Unavailable:
                if skipped is not None:
                    skipped.append(c.id)
            except Exception as exc:  # a check that crashes is a failing check, reported by id
                failures[c.id] = f"{type(exc).__name__}: {exc}"
    return failures


def _summary(entries) -> str:
    n = {s: sum(c.status == s for c in entries) for s in STATUSES}
    return f"{len(entries)} claims (" + ", ".join(f"{n[s]} {s}" for s in STATUSES) + ")"


def _wrap(label: str, text: str, width: int = 100) -> str:
    return textwrap.fill(text, width=width, initial_indent=f"  {label:<8} ", subsequent_indent=" " * 11)


def report(
    notebook: str | None = None,
    text: str | None = None,
    status: str | None = None,
    run: bool = True,
    file=None,
    reveal: bool = False,
) -> None:
    """Print the selected entries (and run their checks): text that is the same on every device and profile,
    for an nbval-checked cell. Raises ``AssertionError`` naming every entry whose check fails. An entry that
    gives away an exercise's answer shows its verdict only with ``reveal=True`` (a solution cell)."""
    _flag("reveal", reveal)
    entries = claims(text=text, notebook=notebook, status=status)
    if not entries:
        raise ValueError(f"no claims for notebook={notebook!r}, text={text!r}, status={status!r}")
    skipped = []
    failures = run_checks(entries, skipped) if run else {}
    file = file or sys.stdout
    scope = ", ".join(f"{k} {v}" for k, v in (("notebook", notebook), ("text", text), ("status", status)) if v)
    n_checks = sum(bool(c.check) for c in entries)
    print(
        f"Claims ledger ({scope or 'all'}): {_summary(entries)}; "
        f"{n_checks} checks {'run' if run else 'not run'}" + (", all pass" if run and not failures else ""),
        file=file,
    )
    for c in (c.resolved(here=notebook) for c in entries):  # a notebook's own figures are above it
        mark = "" if not c.check or not run else (" ✗ check FAILS" if c.id in failures else " ✓ checked")
        mark = " (check needs the stored notebooks)" if c.id in skipped else mark
        print(f"\n{c.id} · {c.text} {c.section} · {c.status.upper()}{mark}", file=file)
        print(_wrap("claim:", c.claim), file=file)
        if c.reveals and not reveal:
            print(_wrap("verdict:", _withheld(c)), file=file)
            continue
        for label, body in (
            ("correct:", c.correct if c.status == WRONG else ""),
            ("exactly:", c.correct if c.status == IMPRECISE else ""),
            ("restored:", c.correct if c.status == ARTEFACT else ""),
            ("why:", c.why),
            ("found:", c.value if c.status in (CONFIRMED,) else ""),
            ("source:", c.source),
        ):
            if body:
                print(_wrap(label, body), file=file)
    if failures:
        raise AssertionError("ledger checks failed: " + "; ".join(f"{k}: {v}" for k, v in failures.items()))


def table(entries=None, width: int = 60) -> str:
    """A plain-text table: id, text §, status, the claim (cut to ``width`` characters)."""
    entries, width = _entries(entries), as_int("width", width, minimum=2)
    rows = [("id", "where", "status", "claim")]
    rows += [
        (c.id, f"{c.text} {c.section}"[:24], c.status, c.claim if len(c.claim) <= width else c.claim[: width - 1] + "…")
        for c in entries
    ]
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:<{w[2]}}  {r[3]}" for r in rows]
    lines.insert(1, "-" * (sum(w) + 6 + min(width, max(len(r[3]) for r in rows))))
    return "\n".join([*lines, "", _summary(entries)])


def markdown(entries=None, reveal: bool = False) -> str:
    """A Markdown table for a notebook: id, section, verdict, the claim, and what is correct or found
    (withheld for an entry that gives away an exercise's answer, unless ``reveal``)."""
    _flag("reveal", reveal)
    esc = lambda s: s.replace("|", "\\|").replace("\n", " ")
    out = ["| id | § | verdict | the text says | correct / exactly / why / found |", "|---|---|---|---|---|"]
    for c in (c.resolved() for c in _entries(entries)):
        out.append(f"| `{c.id}` | {esc(c.section)} | **{c.status}** | {esc(c.claim)} | {esc(_detail(c, reveal))} |")
    return "\n".join(out)


def to_json(entries=None, reveal: bool = False) -> str:
    """The entries as a JSON list of objects with every field (``check``: the check function's name or null),
    figures filled in. An entry that gives away an exercise's answer has its findings withheld unless ``reveal``."""
    _flag("reveal", reveal)
    out = []
    for c in (c.resolved() for c in _entries(entries)):
        d = c.as_dict()
        if c.reveals and not reveal:
            d.update(dict.fromkeys(("value", "how", "correct", "why", "source"), _withheld(c)), check=None)
        out.append(d)
    return json.dumps(out, ensure_ascii=False, indent=1)
