"""Every exercise checker (the capstone's have their own tests): its reference and its student-style
solution pass; at least two typical mistakes are rejected, each with its own hint; a stub is 'not
attempted'; a crash is reported, not raised; hints escalate and end by pointing to the solution; no message
contains the solution's code; a wrong kind of answer (None, a number, a result on the meta device) never passes."""

import contextlib
import io

import pytest
import torch

from transformer_nb.exercises import all_exercises
from transformer_nb.exercises.compare import on_meta, same_answers
from transformer_nb.exercises.solutions import capstone as capstone_solutions

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

EXERCISES = all_exercises()
IDS = sorted(EXERCISES)
MISTAKES = [(k, i) for k in IDS for i in range(len(EXERCISES[k].mistakes))]


def _solution_lines(ex):
    lines = [line.strip() for line in ex.solution_source().splitlines()]
    return [line for line in lines if len(line) > 25 and not line.startswith(("#", "import", "from", '"', "def "))]


def _quiet(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        fn(*args)
    return out.getvalue()


def test_every_chapter_exercise_has_checkers():
    titles = " ".join(ex.title for ex in EXERCISES.values())
    for n in range(1, 11):
        assert f"Exercise 8.{n}" in titles, f"no checker for Exercise 8.{n}"
    assert len(EXERCISES) >= 39


@pytest.mark.parametrize("key", IDS)
def test_name_is_the_variable_and_reference_passes(key):
    ex = EXERCISES[key]
    assert key.split(".")[1] == ex.name
    r = ex.check(ex.reference, quiet=True)
    assert r.passed, r.message
    assert r.extension is None, r.extension  # the reference also handles the extension cases


@pytest.mark.parametrize("key", IDS)
def test_student_style_solution_defines_the_stub_and_passes(key):
    ex = EXERCISES[key]
    # the capstone's solutions build on the earlier steps' (as the solutions run pastes them one after another)
    namespace = {
        name: getattr(capstone_solutions, name)
        for name in ("attention", "my_causal_mask", "MultiHeadAttention", "Block")
    }
    exec(compile(ex.solution_source(), f"<solution of {key}>", "exec"), namespace)
    names = ex.defined_names()
    assert names, "the solution binds the stub's name"
    answer = namespace[names[-1]]
    assert ex.check(answer, quiet=True).passed
    if ex.compare is not same_answers:  # an answer stated as a dict may have any name
        assert answer.__name__ == ex.reference.__name__ or ex.solution_code, "the solution has the stub's name"


@pytest.mark.parametrize("key,i", MISTAKES)
def test_each_mistake_is_rejected_with_its_own_hint_and_no_solution_code(key, i):
    ex = EXERCISES[key]
    m = ex.mistakes[i]
    r = ex.check(m.fn, quiet=True)
    assert not r.passed
    assert m.hint in r.message, r.message
    for line in _solution_lines(ex):
        assert line not in r.message


@pytest.mark.parametrize("key", IDS)
def test_stub_crash_and_wrong_kinds_never_pass_and_never_raise(key):
    ex = EXERCISES[key]

    def stub(*args):
        raise NotImplementedError

    def crashes(*args):
        raise RuntimeError("boom")

    r = ex.check(stub, quiet=True)
    assert not r.passed and "not attempted" in r.message
    r = ex.check(crashes, quiet=True)
    assert not r.passed and "RuntimeError: boom" in r.message
    for answer in (lambda *a: None, lambda *a: torch.empty(2, 3, device="meta"), 42):
        r = ex.check(answer, quiet=True)
        assert not r.passed, r.message


@pytest.mark.parametrize("key", IDS)
def test_mistakes_have_their_own_hints_and_hints_escalate_then_point_to_the_solution(key):
    ex = EXERCISES[key]
    assert len(ex.mistakes) >= 2 or ex.compare is same_answers
    assert len({m.hint for m in ex.mistakes}) == len(ex.mistakes), "each mistake has its own hint"
    assert len(ex.hints) >= 3
    ex._hint_level = 0
    shown = [_quiet(ex.hint) for _ in ex.hints]
    for i, text in enumerate(shown):
        assert text.startswith(f"Hint {i + 1}/{len(ex.hints)}") and ex.hints[i] in text
        assert not any(line in text for line in _solution_lines(ex)), "a hint is the solution's code"
    assert f"{ex.name}.solution()" in _quiet(ex.hint)
    ex._hint_level = 0
    assert ex.title in _quiet(ex.solution)


def test_use_returns_the_students_function_once_it_passes_else_the_reference():
    ex = EXERCISES["warmup.softmax_ex"]
    mine = ex.reference

    def stub(x):
        raise NotImplementedError

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert ex.use(stub) is ex.reference
        assert ex.use(lambda x: mine(x)) is not ex.reference
    assert "hidden reference" in out.getvalue() and "use your" in out.getvalue()


def _on_meta(x):
    if isinstance(x, dict):
        return {k: _on_meta(v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return type(x)(_on_meta(v) for v in x)
    if isinstance(x, torch.Tensor):
        return x.to("meta")
    return torch.tensor(float(x), device="meta") if isinstance(x, (int, float)) and not isinstance(x, bool) else x


@pytest.mark.parametrize("key", IDS)
def test_a_result_on_the_meta_device_is_told_so(key):
    """The reference's own result moved to the meta device: the message names the device, not a symptom."""
    ex = EXERCISES[key]
    answer = lambda *a: _on_meta(ex.reference(*a))
    if key.startswith("capstone") or not on_meta(ex._call(answer, ex.cases[0][1]())):
        pytest.skip("its answer holds no tensor or number (words, a module, a class)")
    r = ex.check(answer, quiet=True)
    assert not r.passed and "meta" in r.message, r.message
