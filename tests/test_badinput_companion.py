"""Bad input to the companion's own helpers (notebook 00's map, runtimes)."""

from pathlib import Path

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
    "runtime_line_refuses_runtimes_that_are_not_a_dict": Case(
        C + "runtime_line", lambda: companion.runtime_line("01_x", "abc"), TypeError, "runtimes must be"
    ),
    "runtime_line_refuses_a_name_that_is_not_a_str": Case(
        C + "runtime_line", lambda: companion.runtime_line(None, {}), TypeError, "name must be"
    ),
    "runtime_line_names_the_notebook_with_no_runtime": Case(
        C + "runtime_line", lambda: companion.runtime_line("01_x", {}), ValueError, "no quick and no full runtime"
    ),
    "write_index_refuses_a_folder_that_does_not_exist": Case(
        C + "write_index",
        lambda: companion.write_index(Path("/nonexistent-notebooks"), Path("/nonexistent-notebooks/x.json")),
        ValueError,
        "folder must be a notebooks/ folder",
    ),
}


@parametrize(CASES)
def test_companion_refuses_bad_input_by_name(name):
    CASES[name].check()
