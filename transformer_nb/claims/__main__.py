"""``python -m transformer_nb.claims``: the ledger as a table, or as JSON with ``--json``.

python -m transformer_nb.claims                      # every entry, one line each, and the counts
python -m transformer_nb.claims --text 002 --status wrong
python -m transformer_nb.claims --notebook 01 --report   # full entries, checks run (what a notebook shows)
python -m transformer_nb.claims --json > ledger.json
python -m transformer_nb.claims --check                  # run every check; exit 1 if one fails
python -m transformer_nb.claims --json --reveal          # include what gives away exercises' answers
"""

import argparse
import json
import sys

from . import NOTEBOOKS, STATUSES, TEXTS, claims, detail, report, run_checks, summary

WITHHELD = ("value", "how", "correct", "why", "source")  # what --json leaves out of an entry that gives away an answer


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m transformer_nb.claims", description=__doc__.splitlines()[0])
    p.add_argument("--text", choices=TEXTS, help="only this source text")
    p.add_argument("--notebook", choices=NOTEBOOKS, help="only the entries that belong to this notebook")
    p.add_argument("--status", choices=STATUSES, help="only this verdict")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="JSON: a list of entries with all fields")
    out.add_argument("--report", action="store_true", help="full entries, with their checks run")
    out.add_argument("--check", action="store_true", help="run the checks; exit 1 if one fails")
    p.add_argument("--reveal", action="store_true", help="show the findings that give away exercises' answers")
    args = p.parse_args(argv)
    entries = claims(text=args.text, notebook=args.notebook, status=args.status)
    enc = sys.stdout.encoding or "utf-8"
    if plain := "§—²".encode(enc, errors="replace").decode(enc) != "§—²":  # e.g. PYTHONIOENCODING=ascii
        sys.stdout.reconfigure(errors="backslashreplace")  # escape what it cannot print
    if args.json:  # every field but the check's args; figures filled in; answers withheld unless --reveal
        hide = lambda c: dict.fromkeys(WITHHELD, detail(c)) | {"check": None} if c.reveals and not args.reveal else {}
        rows = [{**vars(c.resolved()), "check": c.check or None, **hide(c)} for c in entries]
        print(json.dumps([{k: v for k, v in r.items() if k != "args"} for r in rows], ensure_ascii=plain, indent=1))
    elif args.report:
        try:
            report(notebook=args.notebook, text=args.text, status=args.status, reveal=args.reveal)
        except AssertionError as exc:
            return print(exc, file=sys.stderr) or 1
    elif args.check:
        failures, skipped = run_checks(entries)
        print(*(f"FAIL {cid}: {err}" for cid, err in failures.items()), sep="\n", end="\n" if failures else "")
        n_pass = sum(bool(c.check) for c in entries) - len(failures) - len(skipped)
        need = f", {len(skipped)} need the stored notebooks" if skipped else ""
        print(f"{n_pass} checks pass, {len(failures)} fail{need}")
        return 1 if failures else 0
    else:  # a table: id, text §, status, the claim cut to 60 characters; then the counts
        rows = [("id", "where", "status", "claim")]
        cut = lambda s: s if len(s) <= 60 else s[:59] + "…"
        rows += [(c.id, f"{c.text} {c.section}"[:24], c.status, cut(c.claim)) for c in entries]
        w = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:<{w[2]}}  {r[3]}" for r in rows]
        print(lines[0], "-" * (sum(w) + 6), *lines[1:], "", summary(entries), sep="\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
