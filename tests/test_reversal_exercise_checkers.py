"""The notebook-09 checkers accept the package's versions and name the typical mistakes (notebook 09's former
demo cells among them: EOS in the last column, logits read at position 0); float ids are refused."""

import torch

from transformer_nb import reversal as rv
from transformer_nb.exercises import reversal as ex


def test_shift_checker_accepts_reference_and_package_version(capsys):
    assert ex.shift_ex.check(rv.shift_for_teacher_forcing)
    res = ex.shift_ex.check(lambda tgt: tuple(t.float() for t in rv.shift_for_teacher_forcing(tgt)), quiet=True)
    assert not res and "integers" in res.message


def test_greedy_checker_accepts_reference_and_package_version():
    assert ex.greedy_ex.check(lambda model, src, max_new: rv.greedy_decode(model, src, max_new=max_new), quiet=True)


def test_greedy_checker_shape_hints():
    res = ex.greedy_ex.check(lambda model, src, max_new: torch.zeros(1, 2, 3), quiet=True)
    assert not res and "(B, max_new)" in res.message
    res = ex.greedy_ex.check(
        lambda model, src, max_new: torch.zeros(src.shape[0], max_new + 1, dtype=torch.long) + 5, quiet=True
    )
    assert not res


def test_hand_built_reverser_punishes_wrong_prefixes():
    m = ex.HandBuiltReverser()
    src = torch.tensor([[3, 4, 5]])
    logits = m.decode(torch.tensor([[1, 5, 9]]), m.encode(src))  # second output wrong (9, not 4)
    assert logits.argmax(-1).tolist() == [[5, 4, 2]]
