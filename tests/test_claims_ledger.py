"""The claims ledger: every entry's check passes and fails when the text's numbers change, the structure holds,
the audited verdicts stand, and the interfaces (report, cite, the command line) behave and withhold exercise
answers unless asked."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from transformer_nb import claims as L
from transformer_nb.claims import checks, figures
from transformer_nb.claims.__main__ import main

CHECKED = [c for c in L.LEDGER if c.check]
ROOT = Path(__file__).parents[1]
TWIN = (ROOT / "notebooks" / "py" / "13_claims_ledger.py").read_text(encoding="utf-8")


def test_every_check_passes():
    assert len(CHECKED) == 96 and L.run_checks(CHECKED) == ({}, [])


@pytest.mark.parametrize("claim", [c for c in CHECKED if c.check == "values"], ids=lambda c: c.id)
def test_a_check_fails_when_a_number_of_the_text_changes(claim):
    """The checks recompute what the text claims: change any one of its numbers and the check fails."""
    for case in claim.args["cases"]:
        with pytest.raises(AssertionError):
            checks.values(**{**claim.args, "cases": [{**case, "is": torch.tensor(case["is"]) * 1.01 + 1}]})


def test_structure_size_and_coverage():
    """The rules every entry's structure follows; the ledger's size and verdicts."""
    for c in L.LEDGER:
        needs = {L.WRONG: c.correct, L.IMPRECISE: c.correct, L.ARTEFACT: c.correct, L.NOT_CHECKABLE: c.why}
        assert re.fullmatch(rf"{c.text}-[\w.\-]+", c.id) and c.status in L.STATUSES and c.notebook in L.NOTEBOOKS, c.id
        assert all(getattr(c, n).strip() for n in ("section", "claim", "how")) and needs.get(c.status, "-").strip(), (
            c.id
        )
        assert not c.reveals or re.fullmatch(r"8\.(?:[1-9]|10)", c.reveals), c.id
        assert set(figures.PLACEHOLDER.findall(" ".join(getattr(c, n) for n in L.PROSE))) <= set(figures.FIGURES), c.id
        evidence = c.check or c.nb_check or c.source.strip()  # a check function, a notebook's check cell, a source
        assert c.status == L.NOT_CHECKABLE or (c.value.strip() and evidence), c.id
        assert not c.check or callable(getattr(checks, c.check, None)), c.id
    assert len({c.id for c in L.LEDGER}) == len(L.LEDGER) == 270
    assert min(len(L.claims(text=t)) for t in L.TEXTS) >= 15 and {c.status for c in L.LEDGER} == set(L.STATUSES)
    counts = {s: sum(n[s] for n in L.counts().values()) for s in L.STATUSES}
    assert counts == {L.CONFIRMED: 158, L.WRONG: 38, L.IMPRECISE: 59, L.NOT_CHECKABLE: 14, L.ARTEFACT: 1}


def test_each_nb_check_names_notebook_sections_that_check_and_the_labels_it_quotes():
    """An entry's ``nb_check`` ("NN §k", "NN §k, §m" or "NN appendix", "; " between notebooks) names sections of the
    notebook's twin that hold check calls, and every check label it quotes is in those sections."""
    for c in (c for c in L.LEDGER if c.nb_check):
        for part in c.nb_check.split("; "):
            nb, where = re.match(r"(\d\d) (§[\d, §]+|appendix)", part).groups()
            twin = next((ROOT / "notebooks" / "py").glob(f"{nb}_*.py")).read_text(encoding="utf-8")
            found = [
                re.search(rf"^# ## {h} ·.*?(?=^# ## |\Z)", twin, re.M | re.S) for h in re.findall(r"§(\d+)", where)
            ]
            cells = "".join(m[0] for m in found if m) if found else twin.partition("# ## Appendix ·")[2]
            quoted = re.findall(r"'(.+?)'(?=[,;)]|$| and)", part)
            assert None not in found and re.search(r"check_\w+\(|assert ", cells) and all(q in cells for q in quoted), (
                c.id,
                part,
            )


def test_a_failing_check_is_reported_by_id(monkeypatch, capsys):
    monkeypatch.setattr(checks, "broken", lambda n: checks.close(n, 3), raising=False)
    fake = L.Claim(
        "001-test-fail", "001", "§0", "1 + 1 is 3", L.CONFIRMED, "3", "h", "09", check="broken", args={"n": 2}
    )
    assert L.run_checks([fake])[0]["001-test-fail"] == "AssertionError: 2 is not within 0.0 of 3"
    monkeypatch.setattr(L, "LEDGER", (*L.LEDGER, fake))
    with pytest.raises(AssertionError, match="001-test-fail"):
        L.report(notebook="09")
    assert "✗ check FAILS" in capsys.readouterr().out


AUDITED = {  # id: (verdict, what its source, how or correction must say)
    "000-8.2.5-q1k1": (L.ARTEFACT, "1·1 + 0·0 + 1·0"),
    "000-8.2.5-expsum": (L.IMPRECISE, "7.7354"),
    "001-19.9.2-rule": (L.CONFIRMED, "vocab_size - 1"),
    "000-ex8.9-ppl": (L.IMPRECISE, "AdamW"),
    "002-gpt2": (L.CONFIRMED, ""),
    "003-families": (L.CONFIRMED, ""),
    "000-ex8.4-crossover": (L.WRONG, "2d + d_ff = 6d"),
    "000-8.5.4-linear": (L.WRONG, ""),  # the weights are a softmax of the input
    "004-6.1-orthogonal": (L.IMPRECISE, ""),
    "004-5.7-128k": (L.CONFIRMED, ""),
    "000-8.5.3-eps": (L.CONFIRMED, "norm_epsilon=1e-6"),
    "001-19.14.1-nomask": (L.IMPRECISE, "docstring"),
    "002-flash-speed": (L.CONFIRMED, "2-4X speedup at sequence lengths between 128 and 4K"),
    "000-8.3.2-cost": (L.CONFIRMED, "§3.2.2"),
    "000-8.2.5-sum1": (L.CONFIRMED, ""),
    "002-wavelength": (L.CONFIRMED, "§3.5"),
    "004-8.2-batchnorm": (L.IMPRECISE, "BatchNorm1d"),
    "001-19.14.1-recompute": (L.WRONG, ""),  # O(n²) total against the text's own O(n²·d) per pass
    "004-4.2-rope": (L.IMPRECISE, "RoFormer"),  # a function of q, k and m − n, not of m − n alone
    "004-7.2-gelu": (L.WRONG, "Table 1"),
    "000-8.5.4-swiglu": (L.CONFIRMED, "Tables 1–3"),
    "000-8.1-team": (L.WRONG, "footnote"),
    "000-8.1-successors": (L.WRONG, "arXiv"),
    "000-8.5.3-universal": (L.WRONG, "do_layer_norm_before"),
}
SAME_FACT = [  # one fact, one verdict in every text
    ("001-19.14.1-recompute", "002-kv-recompute", "004-13.2-recompute"),
    ("002-flash-speed", "004-5.7-flash-speed"),
    ("000-8.3.2-cost", "002-mha-cost"),
    ("004-4.2-rope", "003-rope"),
    ("000-8.5.4-linear", "004-6.2-linear"),
    ("003-rope-length", "004-4.2-rope-length"),
    ("003-gqa", "004-16-gqa"),
    ("003-sinusoidal", "004-4.2-sinusoidal"),
]


def test_the_audited_verdicts():
    """Each re-graded entry has its verdict and cites what settles it; one fact has one verdict in every text."""
    for cid, (status, cited) in AUDITED.items():
        c = L.get(cid)
        assert c.status == status and cited in c.source + c.how + c.correct and (c.check or c.source or c.nb_check), cid
    for ids in SAME_FACT:
        assert len({L.get(cid).status for cid in ids}) == 1, ids


def test_the_verdict_scale_is_stated_once_and_in_notebook_13():
    assert set(L.SCALE) == set(L.STATUSES) and "ledger.SCALE" in TWIN
    assert all(f"| **{status}** |" in TWIN for status in L.STATUSES)
    assert "the text states something false" in TWIN and "defensible wording that the ledger states more" in TWIN


def test_report_is_deterministic_and_complete(capsys):
    L.report(notebook="01")
    first = capsys.readouterr().out
    L.report(notebook="01")
    assert capsys.readouterr().out == first and first.startswith("Claims ledger (notebook 01): ")
    assert "all pass" in first
    assert all(c.id in first for c in L.claims(notebook="01")) and "0x" not in first  # nothing run-dependent


def test_cite_get_and_bad_input():
    assert L.cite("004-5.2-scores").startswith("[004-5.2-scores] 004 §5.2: wrong — QKᵀ = [[1, 1, 1]")
    assert L.cite("000-8.2.5-q1k1").startswith("[000-8.2.5-q1k1] 000 §8.2.5: extraction")
    with pytest.raises(KeyError, match="did you mean 000-8.2.5-expsum"):
        L.get("000-8.2.5-expsun")
    with pytest.raises(ValueError, match="text='005'"):
        L.claims(text="005")
    with pytest.raises(ValueError, match="no claims"):
        L.report(notebook="11", status=L.WRONG)
    md = L.markdown(L.claims(text="003"))  # one row an entry, pipes escaped
    assert md.count("\n") == len(L.claims(text="003")) + 1
    assert all(line.startswith("| `") and line.endswith(" |") for line in md.splitlines()[2:])


def test_command_line(capsys):
    assert main(["--text", "002"]) == 0 and "002-kv-40gb" in capsys.readouterr().out
    assert main(["--check", "--text", "003"]) == 0 and "0 fail" in capsys.readouterr().out
    assert main(["--status", L.ARTEFACT]) == 0 and "000-8.2.5-q1k1" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["--text", "009"])
    assert exc.value.code == 2 and "invalid choice" in capsys.readouterr().err
    assert main(["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data) == len(L.LEDGER) and set(data[0]) == set(L.Claim.__dataclass_fields__) - {"args"}
    assert all(d["check"] is None for d in data if d["reveals"])  # withheld entries give nothing away


def _secrets():
    """For each entry that gives away an exercise's answer: the texts only --reveal may print."""
    out = {}
    for c in (c.resolved() for c in L.LEDGER if c.reveals):
        out[c.id] = [t for t in (c.value, c.correct, c.why, c.source, c.how) if t and len(t) > 12]
    return out


def test_no_view_shows_an_exercise_answer_unless_revealed(capsys):
    """Notebooks print reports, cites and Markdown tables before their exercises are attempted (notebook 13 all of
    them, and it never asks to reveal), the command line JSON: none may show an answer; ``reveal=True`` shows it."""
    for text in L.TEXTS:
        L.report(text=text)
    assert main(["--json"]) == 0 and main([]) == 0
    hidden = L.markdown() + capsys.readouterr().out
    assert main(["--json", "--reveal"]) == 0
    shown, secrets = capsys.readouterr().out, _secrets()
    assert {c.split("-")[1] for c in secrets} >= {"ex8.2", "ex8.4", "ex8.9"}
    for cid, texts in secrets.items():
        assert all(t.replace("|", "\\|") not in hidden and t not in hidden for t in texts), cid
        assert all(json.dumps(t, ensure_ascii=False)[1:-1] in shown for t in texts), cid
    assert "35,270,656" not in hidden and "35,270,656" in shown and "T > 2d" not in hidden and "T > 2d" in shown
    code = [line for line in TWIN.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in code if "reveal" in line] and "--reveal" in TWIN
    revealing = [c for c in L.LEDGER if c.reveals]
    assert {c.reveals for c in revealing} >= {"8.2", "8.4", "8.7", "8.9"}
    for c in revealing:
        secret = L.detail(c.resolved(), reveal=True)
        assert all(secret not in view and f"Exercise {c.reveals}" in view for view in (L.cite(c.id), L.markdown([c])))
        assert secret in L.cite(c.id, reveal=True) and secret.replace("|", "\\|") in L.markdown([c], reveal=True)


def test_a_terminal_that_cannot_print_unicode_gets_escapes_not_a_crash(monkeypatch, capsys):
    """PYTHONIOENCODING=ascii: '§' and '²' are escaped, and the JSON stays valid JSON with the same content.
    One process prints the three views (table, report, JSON), an END line after each."""
    monkeypatch.setenv("PYTHONIOENCODING", "ascii")
    views = [[], ["--report"], ["--json"]]
    code = f"from transformer_nb.claims.__main__ import main\nfor v in {views!r}:\n    main(['--text', '000', *v])\n"
    code += "    print('END', flush=True)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, encoding="ascii", check=True)
    *plain, as_json, _ = out.stdout.split("\nEND\n")
    assert len(plain) == 2 and all("000-8.2.2-262144" in v and "\\xa7" in v for v in plain)  # '§'
    main(["--text", "000", "--json"])
    assert json.loads(as_json) == json.loads(capsys.readouterr().out)
