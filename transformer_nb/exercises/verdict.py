"""Exercises whose answer is a stated conclusion, checked against the numbers it is about.

A :class:`VerdictExercise` takes a dict ``{question: answer}`` (or a function of the numbers that returns
one). The reference derives the right answers from the numbers: the exercise's own cases, or the numbers
of the student's run passed as ``check(answer, numbers)``. A wrong answer gets that question's hint, never
the right answer.
"""

from dataclasses import dataclass, field

import torch

from transformer_nb.exercises import Exercise, Result


def same_answer(out, ref) -> bool:
    """One stated answer against the right one: words ignore case and spaces; yes/no may be 0-d tensors."""
    if isinstance(ref, bool):
        if isinstance(out, torch.Tensor) and out.numel() == 1 and out.device.type != "meta":
            out = bool(out)
        return isinstance(out, (bool, int)) and not isinstance(out, float) and bool(out) == ref
    if isinstance(ref, str):
        return isinstance(out, str) and out.strip().lower() == ref.lower()
    return False


def same_answers(out, ref) -> bool:
    return isinstance(out, dict) and all(k in out and same_answer(out[k], ref[k]) for k in ref)


@dataclass(eq=False)
class VerdictExercise(Exercise):
    """``choices``: the possible answers of each question; ``key_hints``: what to say when one is wrong."""

    choices: dict = field(default_factory=dict)
    key_hints: dict = field(default_factory=dict)
    compare: object = same_answers

    def check(self, answer, *numbers, quiet: bool = False) -> Result:
        """Check ``answer`` (a dict, or a function of the numbers) on ``numbers`` if given, else on the cases."""
        if isinstance(answer, dict) and any(v is None or v is Ellipsis for v in answer.values()):
            result = Result(
                False,
                f"… {self.title}: not attempted yet. Replace each None with your answer and run the cell again "
                f"({self.name}.hint() if you want a start).",
            )
        else:
            fn = answer if callable(answer) else (lambda *args: answer)
            saved = self.cases
            if numbers:
                self.cases = [("this run's numbers", lambda: numbers)]
            try:
                result = self._check(fn)
            finally:
                self.cases = saved
        self.last, self._last_fn = result, answer
        if not quiet:
            print(result.message)
        return result

    def type_problem(self, out, ref):
        if not isinstance(out, dict):
            return f"state your answers as a dict {{question: answer}} with the keys {list(ref)}."
        missing = [k for k in ref if k not in out]
        return f"your dict lacks the question(s) {missing}." if missing else None

    def diagnose(self, args, out, ref) -> str:
        problem = self.type_problem(out, ref)
        if problem:
            return problem
        k = next(k for k in ref if not same_answer(out[k], ref[k]))
        options = self.choices.get(k, ())
        if options and not any(same_answer(out[k], o) for o in options):
            return f"'{k}': answer one of {list(options)}."
        return f"'{k}': {self.key_hints.get(k, 'the numbers say otherwise.')}"
