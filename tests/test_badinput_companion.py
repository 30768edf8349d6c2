"""Bad input to the companion's own helpers (notebook 00's map, runtimes)."""

from badinput import Case, parametrize

from transformer_nb import companion

C = "transformer_nb.companion."

CASES = {
    "format_runtime_refuses_negative_seconds": Case(
        C + "format_runtime", lambda: companion.format_runtime(-1), ValueError, "seconds must be >= 0"
    ),
    "format_runtime_refuses_a_str": Case(
        C + "format_runtime", lambda: companion.format_runtime("35 s"), TypeError, "seconds must be a real"
    ),
}


@parametrize(CASES)
def test_companion_refuses_bad_input_by_name(name):
    CASES[name].check()
