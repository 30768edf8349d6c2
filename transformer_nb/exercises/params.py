"""Exercise 8.2 (000) for notebook 07: the parameter count of a Transformer, part by part.

- :data:`breakdown_ex` -- ``count_82(d_model, n_heads, d_ff, n_layers, vocab)`` returns a dict: (a) the
  embedding, (b) attention per layer, (c) FFN per layer, (d) layer norms per layer, and the total.

Exercise 8.4 (memory, FLOPs, the crossover and its reading) is in :mod:`transformer_nb.exercises.complexity`.
"""

__all__ = ["breakdown_ex"]  # what a notebook uses

from transformer_nb.exercises import Exercise, Property
from transformer_nb.exercises.compare import is_number
from transformer_nb.exercises.solutions import params as sol

NOTEBOOK = "07_parameter_counting"  # the notebook whose exercise cells use this module


class DictExercise(Exercise):
    """Answers are dicts of numbers with fixed keys; a wrong kind of answer gets a plain message."""

    def type_problem(self, out, ref):
        if not isinstance(out, dict):
            return f"return a dict with the keys {list(ref)}; your result is a {type(out).__name__}."
        missing = [k for k in ref if k not in out]
        if missing:
            return f"your dict lacks the key(s) {missing}; expected exactly {list(ref)}."
        bad = [k for k in ref if not is_number(out[k])]
        return f"the value(s) for {bad} should be numbers." if bad else None


def exact_dicts(out, ref):
    return isinstance(out, dict) and set(out) == set(ref) and all(is_number(out[k]) and out[k] == ref[k] for k in ref)


# --------------------------------------------------------------------------- Exercise 8.2


def _vary(**changes):
    """The reference with one part changed (and the total made consistent with it)."""

    def fn(d_model, n_heads, d_ff, n_layers, vocab):
        out = sol.count_82(d_model, n_heads, d_ff, n_layers, vocab)
        ctx = dict(d=d_model, h=n_heads, f=d_ff, n=n_layers, v=vocab)
        for key, formula in changes.items():
            out[key] = formula(**ctx)
        if "total" not in changes:
            out["total"] = out["embedding"] + n_layers * (
                out["attention_per_layer"] + out["ffn_per_layer"] + out["norm_per_layer"]
            )
        return out

    return fn


def _part_property(key, hint):
    def holds(args, out):
        return out.get(key) == sol.count_82(*args)[key]

    return Property(holds, hint)


breakdown_ex = DictExercise(
    "Exercise 8.2: parameter count, part by part",
    sol.count_82,
    name="breakdown_ex",
    cases=[
        ("Exercise 8.2: d 512, h 8, d_ff 2048, N 6, |V| 32000", lambda: (512, 8, 2048, 6, 32000)),
        ("BERT-base-like: d 768, h 12, d_ff 3072, N 12, |V| 30522", lambda: (768, 12, 3072, 12, 30522)),
        ("tiny: d 64, h 4, d_ff 96, N 3, |V| 100", lambda: (64, 4, 96, 3, 100)),
    ],
    mistakes=[
        _vary(total=lambda d, h, f, n, v: sol.count_82(d, h, f, n, v)["total"] + v * d),  # an untied output layer
        _vary(embedding=lambda d, v, **_: 2 * v * d),
        _vary(attention_per_layer=lambda d, h, **_: h * 4 * d * d),
        _vary(attention_per_layer=lambda d, **_: 3 * d * d),
        _vary(attention_per_layer=lambda d, h, **_: 4 * d * (d // h)),
        _vary(ffn_per_layer=lambda d, f, **_: d * f),
        _vary(ffn_per_layer=lambda d, **_: 2 * d * 4 * d),
        _vary(norm_per_layer=lambda d, **_: 2 * d),
        _vary(norm_per_layer=lambda d, **_: 2 * d * d),
    ],
    properties=[
        _part_property(
            "embedding",
            "(a) embedding: one vector of size d_model per vocabulary entry; tied, the output layer adds nothing.",
        ),
        _part_property(
            "attention_per_layer", "(b) attention: four d_model × d_model matrices (Q, K, V, O), whatever h is."
        ),
        _part_property("ffn_per_layer", "(c) FFN: two matrices, d_model → d_ff → d_model."),
        _part_property("norm_per_layer", "(d) norms: two LayerNorms per layer, γ and β each of size d_model."),
        lambda args, out: (
            out["total"]
            == out["embedding"] + args[3] * (out["attention_per_layer"] + out["ffn_per_layer"] + out["norm_per_layer"])
        ),
    ],
    compare=exact_dicts,
    answers={"total": 35_270_656, "per layer": 3_147_776},
)
