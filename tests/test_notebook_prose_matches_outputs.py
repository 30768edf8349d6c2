"""What a notebook's prose quotes from a stored run is what the stored run printed, and no stored output shows the
machine that ran it (issue 39). A figure quoted as "N s in the run stored here" (or "in its stored run", for the
notebook the sentence names) must be printed by that notebook; a stored output holds no machine path (/tmp/…,
/root/…, /home/…, /work/…) and no profiler log line ("USDT: … profiler_start"). The header runtimes are checked
against notebooks/runtimes.json by test_notebook_runtimes_in_headers.py."""

import re

import jupytext
import notebook_harness as h
import pytest

MACHINE = re.compile(r"(?:^|[\s'\"(=:])(/(?:tmp|root|home|work)/\S*)|^(?:USDT|STAGE):.*", re.M)
# "152 s in the run stored here", "560 s of training in its stored run", "97 % in the stored run"
QUOTE = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*(s|%)(?=[\s,][^.;()]{0,40}?\b(?:(its|the) stored run|run stored (here)))")
NAMED = re.compile(r"\bnotebook\s+(\d\d)\b", re.I)


def machine_lines(text: str) -> list[str]:
    """The lines of stored output that show the machine: a path under /tmp, /root, /home or /work, or a profiler
    log line."""
    return sorted({text[: m.end()].rsplit("\n", 1)[-1][:160] for m in MACHINE.finditer(text)})


def stored_run_quotes(markdown: str, here: str) -> list[tuple[str, str, str]]:
    """``(notebook, number, unit)`` for each figure ``markdown`` quotes from a stored run: "here" and "the stored
    run" are notebook ``here``'s, "its stored run" the last notebook the text named before it (else ``here``)."""
    text = " ".join(markdown.split())
    out = []
    for m in QUOTE.finditer(text):
        named = NAMED.findall(text[: m.start()])
        nb = named[-1] if m.group(3) == "its" and named else here
        out.append((nb, m.group(1).replace(",", ""), m.group(2)))
    return out


def printed(number: str, unit: str, outputs: str) -> bool:
    """Whether ``outputs`` prints ``number`` with ``unit`` ("151 s", "97.3 %"), to the digits quoted."""
    return re.search(rf"(?<![\d.,]){re.escape(number)}(?:\.\d+)?\s*{re.escape(unit)}(?!\w)", outputs) is not None


def outputs_of(nb: str) -> str:
    found = sorted((h.ROOT / "notebooks").glob(f"{nb}_*.ipynb"))
    if not found:
        return ""
    return "\n".join(h.output_text(o) for c in h.load(found[0])["cells"] for o in c.get("outputs", []))


@pytest.mark.parametrize("name", h.parametrize_notebooks(h.notebooks_in()))
def test_no_stored_output_shows_the_machine(name):
    leaks = machine_lines(outputs_of(name[:2]))
    assert not leaks, f"{name}: stored outputs show the machine that ran them: {leaks}. {h.fix(name)}"


@pytest.mark.parametrize("name", h.parametrize_notebooks(h.twins_in()))
def test_a_figure_quoted_from_a_stored_run_is_what_it_printed(name):
    markdown = "\n".join(
        c.source for c in jupytext.read(h.ROOT / "notebooks" / "py" / f"{name}.py").cells if c.cell_type == "markdown"
    )
    wrong = [
        f"{n} {u} (notebook {nb})"
        for nb, n, u in stored_run_quotes(markdown, name[:2])
        if not printed(n, u, outputs_of(nb))
    ]
    assert not wrong, f"{name}: the prose quotes {wrong} from a stored run that does not print it"


def test_the_machine_is_found():
    out = "no cache at /tmp/refresh-cache/x.pt\nok\nloaded trained weights from /root/.cache/y.pt\n"
    out += "USDT:2026-11-28 11:49:27 28520:28520 SyncActivityProfilerHandler.cpp:52] profiler_start\n"
    assert len(machine_lines(out)) == 3
    assert machine_lines("a/tmp/b is not a path; 3/4 work/tmp either; loss 0.5 s/step") == []


def test_quotes_are_read_and_compared():
    header = "full ~3 min cold, of which about 2.5 min train the model (152 s in the\n# run stored here); a re-run"
    assert stored_run_quotes(header, "12") == [("12", "152", "s")]
    assert not printed("152", "s", "trained now: 600 steps in 151 s of training")
    assert printed("151", "s", "trained now: 600 steps in 151 s of training")
    other = "Notebook 10 trains it in about nine minutes (560 s of training in its stored run)."
    assert stored_run_quotes(other, "11") == [("10", "560", "s")]
    assert stored_run_quotes("the stored run shows it; 3 s later", "09") == []
