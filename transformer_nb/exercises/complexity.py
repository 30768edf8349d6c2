"""Exercise 8.4 (000) for notebook 07: the cost of self-attention, in full.

- :data:`attention_memory_ex` -- ``attention_bytes(seq_len, n_heads, bytes_per_value)``: all h attention
  matrices of one layer.
- :data:`attention_flops_ex` -- ``attn_flops(seq_len, d_model, n_heads)``: FLOPs of one layer, by term.
- :data:`crossover_ex` -- ``crossover_lengths(d_model, n_heads)``: the smallest T at which the quadratic
  term wins, by the exercise's inequality, by all FLOPs, and for memory (the hint's d/h).
- :data:`interpretation_ex` -- ``my_interpretation``: which term dominates for typical models and lengths.
"""

__all__ = ["attention_flops_ex", "attention_memory_ex", "crossover_ex", "interpretation_ex"]  # what a notebook uses

from transformer_nb.exercises import Exercise, answer_hints
from transformer_nb.exercises.compare import equal, same_answers
from transformer_nb.exercises.params import DictExercise, exact_dicts
from transformer_nb.exercises.solutions import params as sol

NOTEBOOK = "07_parameter_counting"  # the notebook whose exercise cells use this module

attention_memory_ex = Exercise(
    "Exercise 8.4: attention-matrix memory in bytes",
    sol.attention_bytes,
    name="attention_memory_ex",
    cases=[
        ("T 4096, h 32, fp16", lambda: (4096, 32, 2)),
        ("T 512, h 1, fp16", lambda: (512, 1, 2)),
        ("T 1000, h 12, fp32", lambda: (1000, 12, 4)),
    ],
    mistakes=[
        lambda t, h, b: t * t * b,
        lambda t, h, b: h * t * t,
        lambda t, h, b: h * t * t * b / 1e9,
        lambda t, h, b: h * t * t * b / 2**30,
        lambda t, h, b: h * t * b,
        lambda t, h, b: h * t * t * b * 8,
        lambda t, h, b: 2 * h * t * t * b,
    ],
    compare=equal,
    answers={"T=4096, h=32, fp16 (bytes)": 1_073_741_824},
)


def _flops(proj=4, per_mac=2, heads=True, d_k=True, quadratic=True):
    def fn(t, d, h):
        width = (d // h if d_k else d) * (h if heads else 1)
        inner = per_mac * t * (t if quadratic else d) * width
        return {"projections": proj * per_mac * t * d * d, "scores": inner, "weighted_sum": inner}

    return fn


attention_flops_ex = DictExercise(
    "Exercise 8.4: FLOPs of multi-head self-attention",
    sol.attn_flops,
    name="attention_flops_ex",
    cases=[
        ("T 4096, d 4096, h 32", lambda: (4096, 4096, 32)),
        ("T 128, d 512, h 8", lambda: (128, 512, 8)),
        ("T 1000, d 768, h 12", lambda: (1000, 768, 12)),
    ],
    mistakes=[_flops(per_mac=1), _flops(proj=3), _flops(heads=False), _flops(d_k=False), _flops(quadratic=False)],
    compare=exact_dicts,
    answers={"projections, T=d=4096": 549_755_813_888, "scores, T=d=4096, h=32": 137_438_953_472},
)

crossover_ex = DictExercise(
    "Exercise 8.4: the crossover lengths",
    sol.crossover_lengths,
    name="crossover_ex",
    cases=[
        ("the exercise: d_model 4096, h 32", lambda: (4096, 32)),
        ("BERT-base: d_model 768, h 12", lambda: (768, 12)),
        ("d_model 100, h 5", lambda: (100, 5)),
    ],
    mistakes=[
        lambda d, h: {**sol.crossover_lengths(d, h), "flops": d // h + 1},
        lambda d, h: {**sol.crossover_lengths(d, h), "flops": d + 1},
        lambda d, h: {k: v - 1 for k, v in sol.crossover_lengths(d, h).items()},
        lambda d, h: {**sol.crossover_lengths(d, h), "memory": d + 1},
    ],
    compare=exact_dicts,
    answers={"flops crossover, d=4096": 8193},
)

_SETTINGS = {
    "BERT-base: T=512, d=768, h=12": (512, 768, 12),
    "GPT-3: T=2048, d=12288, h=96": (2048, 12288, 96),
    "a small model with a long window: T=4096, d=512, h=8": (4096, 512, 8),
    "LLaMA-2-7B: T=4096, d=4096, h=32": (4096, 4096, 32),
    "a 128K context: T=131072, d=4096, h=32": (131072, 4096, 32),
}


def _dominant(settings):
    """Which term of one attention layer costs more FLOPs, for each (T, d_model, h)."""
    out = {}
    for name, (t, d, h) in settings.items():
        f = sol.attn_flops(t, d, h)
        out[name] = "attention" if f["scores"] + f["weighted_sum"] > f["projections"] else "projections"
    return out


interpretation_ex = Exercise(
    "Exercise 8.4: which term dominates, for typical models?",
    _dominant,
    name="interpretation_ex",
    cases=[("five typical settings", lambda: (_SETTINGS,))],
    solution_code=("transformer_nb.exercises.solutions.params:my_interpretation",),
    compare=same_answers,
    properties=answer_hints(
        _dominant, dict.fromkeys(_SETTINGS, "compare 4T²d (scores and weighted sums) with 8Td² (projections) here.")
    ),
)
