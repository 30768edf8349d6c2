"""Notebooks 09 and 10's checkers: a stub is 'not attempted', and no message shows the solution."""

import pytest

from transformer_nb.exercises import lm, reversal

EXERCISES = {e.title: e for e in (reversal.shift_ex, reversal.greedy_ex, lm.perplexity_ex, lm.top_k_ex, lm.kv_step_ex)}


@pytest.mark.parametrize("title", sorted(EXERCISES))
def test_stub_is_not_attempted_and_messages_hide_the_solution(title):
    ex = EXERCISES[title]

    def stub(*args):
        raise NotImplementedError

    assert "not attempted" in ex.check(stub, quiet=True).message
    src_lines = [
        l.strip()
        for l in ex.solution_source().splitlines()[1:]
        if len(l.strip()) > 25 and not l.strip().startswith(('"""', "#")) and '"""' not in l
    ]
    assert src_lines, "the solution has lines to look for"
    assert len(ex.mistakes) >= 2
    for m in ex.mistakes:
        res = ex.check(m.fn, quiet=True)
        assert not res.passed
        for line in src_lines:
            assert line not in res.message
