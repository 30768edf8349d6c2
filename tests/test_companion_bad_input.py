"""``transformer_nb.companion`` refuses arguments it cannot read, naming them (issue 18)."""

import pytest

from transformer_nb import companion


@pytest.mark.parametrize(
    "call,exc,words",
    [
        (lambda: companion.info(3), TypeError, "path must be a path"),
        (lambda: companion.notebook_index(3), TypeError, "folder must be a path"),
        (lambda: companion.exercise_map("01"), TypeError, "index must be the list"),
    ],
)
def test_bad_arguments_are_named(call, exc, words):
    with pytest.raises(exc, match=words):
        call()
