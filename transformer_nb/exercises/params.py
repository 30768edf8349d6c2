"""Exercises for notebook 07 (parameter counting, memory, compute).

- ``breakdown_ex``: Exercise 8.2 — the parameter count of a Transformer, part by part
  (a) embedding, (b) attention per layer, (c) FFN per layer, (d) layer norms per layer, total.
- ``attention_memory_ex``: Exercise 8.4 — bytes to store all h attention matrices of one layer.
- ``attention_flops_ex``: Exercise 8.4 — FLOPs of one multi-head self-attention layer, by term.
"""

from transformer_nb.exercises import Exercise, Mistake, Property

KEYS_82 = ("embedding", "attention_per_layer", "ffn_per_layer", "norm_per_layer", "total")
KEYS_FLOPS = ("projections", "scores", "weighted_sum")


class _DictExercise(Exercise):
    """Answers are dicts of integers with fixed keys; a wrong shape of answer gets a plain message."""

    def diagnose(self, args, out, ref) -> str:
        if not isinstance(out, dict):
            return f"return a dict with the keys {list(ref)}, got a {type(out).__name__}."
        missing = [k for k in ref if k not in out]
        if missing:
            return f"your dict lacks the key(s) {missing}; expected exactly {list(ref)}."
        bad = [k for k in ref if isinstance(out[k], bool) or not isinstance(out[k], (int, float))]
        if bad:
            return f"the value(s) for {bad} should be numbers (parameter counts or FLOPs)."
        return super().diagnose(args, out, ref)


def _cmp_dicts(out, ref):
    if not isinstance(out, dict) or set(out) != set(ref):
        return False
    return all(isinstance(out[k], (int, float)) and not isinstance(out[k], bool) and out[k] == ref[k] for k in ref)


# --------------------------------------------------------------------------- Exercise 8.2


def _breakdown_ref(d_model, n_heads, d_ff, n_layers, vocab):
    """Exercise 8.2 as its hint counts: weight matrices and LayerNorm γ/β, no linear biases, tied output."""
    embedding = vocab * d_model  # (a) one table; the tied output layer reuses it
    attention = 4 * d_model * d_model  # (b) W_Q, W_K, W_V, W_O: h does not enter
    ffn = 2 * d_model * d_ff  # (c) W_1 (d×d_ff) and W_2 (d_ff×d)
    norms = 2 * (2 * d_model)  # (d) two sublayers, each LayerNorm has γ and β
    total = embedding + n_layers * (attention + ffn + norms)
    return {
        "embedding": embedding,
        "attention_per_layer": attention,
        "ffn_per_layer": ffn,
        "norm_per_layer": norms,
        "total": total,
    }


def _vary(**changes):
    """The reference with one part changed (and the total made consistent with it)."""

    def fn(d_model, n_heads, d_ff, n_layers, vocab):
        out = _breakdown_ref(d_model, n_heads, d_ff, n_layers, vocab)
        ctx = dict(d=d_model, h=n_heads, f=d_ff, n=n_layers, v=vocab)
        for key, formula in changes.items():
            out[key] = formula(**ctx)
        if "total" not in changes:
            out["total"] = out["embedding"] + n_layers * (
                out["attention_per_layer"] + out["ffn_per_layer"] + out["norm_per_layer"]
            )
        return out

    return fn


def _untied_total(d_model, n_heads, d_ff, n_layers, vocab):
    out = _breakdown_ref(d_model, n_heads, d_ff, n_layers, vocab)
    out["total"] += vocab * d_model
    return out


def _part_property(key, hint):
    def holds(args, out):
        return out.get(key) == _breakdown_ref(*args)[key]

    return Property(holds, hint)


breakdown_ex = _DictExercise(
    "Exercise 8.2: parameter count, part by part",
    _breakdown_ref,
    cases=[
        ("Exercise 8.2: d 512, h 8, d_ff 2048, N 6, |V| 32000", lambda: (512, 8, 2048, 6, 32000)),
        ("BERT-base-like: d 768, h 12, d_ff 3072, N 12, |V| 30522", lambda: (768, 12, 3072, 12, 30522)),
        ("tiny: d 64, h 4, d_ff 96, N 3, |V| 100", lambda: (64, 4, 96, 3, 100)),
    ],
    mistakes=[
        Mistake(
            _untied_total,
            "your total counts the embedding matrix twice. With weight tying the output "
            "projection *is* the embedding matrix: count it once.",
        ),
        Mistake(
            _vary(embedding=lambda d, v, **_: 2 * v * d),
            "(a) is twice too big: with weight tying the output layer shares the |V|×d_model embedding "
            "matrix, so the embedding layer is counted once.",
        ),
        Mistake(
            _vary(attention_per_layer=lambda d, h, **_: h * 4 * d * d),
            "(b) grows with the number of heads, but it must not: each head's W_Q, W_K, W_V are "
            "d_model × d_model/h, so the h heads together hold 3·d_model² (plus W_O).",
        ),
        Mistake(
            _vary(attention_per_layer=lambda d, **_: 3 * d * d),
            "(b) is missing the output projection W_O (d_model × d_model) that mixes the concatenated heads.",
        ),
        Mistake(
            _vary(attention_per_layer=lambda d, h, **_: 4 * d * (d // h)),
            "(b) counts one head only: the h heads of size d_model/h together span d_model columns.",
        ),
        Mistake(
            _vary(ffn_per_layer=lambda d, f, **_: d * f),
            "(c) counts one FFN matrix; there are two, W_1 (d_model × d_ff) and W_2 (d_ff × d_model).",
        ),
        Mistake(
            _vary(ffn_per_layer=lambda d, **_: 2 * d * 4 * d),
            "(c) assumes d_ff = 4·d_model; use the d_ff you are given.",
        ),
        Mistake(
            _vary(norm_per_layer=lambda d, **_: 2 * d),
            "(d) counts one LayerNorm; a layer has two sublayers, each with its own LayerNorm (γ and β).",
        ),
        Mistake(
            _vary(norm_per_layer=lambda d, **_: 2 * d * d),
            "(d) is quadratic in d_model, but a LayerNorm only has a scale γ and a shift β, each of size d_model.",
        ),
    ],
    properties=[
        _part_property(
            "embedding",
            "(a) embedding: one vector of size d_model per vocabulary entry; tying "
            "means the output layer adds nothing.",
        ),
        _part_property(
            "attention_per_layer", "(b) attention: four d_model × d_model matrices (Q, K, V, O), whatever h is."
        ),
        _part_property("ffn_per_layer", "(c) FFN: two matrices, d_model → d_ff → d_model."),
        _part_property("norm_per_layer", "(d) norms: two LayerNorms per layer, γ and β each of size d_model."),
        Property(
            lambda args, out: (
                out["total"]
                == out["embedding"]
                + args[3] * (out["attention_per_layer"] + out["ffn_per_layer"] + out["norm_per_layer"])
            ),
            "your total is not embedding + N × (attention + FFN + norms) of your own parts.",
        ),
    ],
    compare=_cmp_dicts,
)


# --------------------------------------------------------------------------- Exercise 8.4, memory


def _memory_ref(seq_len, n_heads, bytes_per_value):
    """Bytes of all h attention matrices of one layer, for one sequence."""
    return n_heads * seq_len * seq_len * bytes_per_value


attention_memory_ex = Exercise(
    "Exercise 8.4: attention-matrix memory in bytes",
    _memory_ref,
    cases=[
        ("T 4096, h 32, fp16", lambda: (4096, 32, 2)),
        ("T 512, h 1, fp16", lambda: (512, 1, 2)),
        ("T 1000, h 12, fp32", lambda: (1000, 12, 4)),
    ],
    mistakes=[
        Mistake(lambda t, h, b: t * t * b, "you stored one attention matrix; every head has its own T × T matrix."),
        Mistake(
            lambda t, h, b: h * t * t,
            "that is the number of values; multiply by the bytes per value (2 for fp16, 4 for fp32).",
        ),
        Mistake(lambda t, h, b: h * t * t * b / 1e9, "return bytes, not gigabytes (convert only when you print)."),
        Mistake(lambda t, h, b: h * t * t * b / 2**30, "return bytes, not GiB (convert only when you print)."),
        Mistake(
            lambda t, h, b: h * t * b,
            "memory grows with T², not T: each of the T queries has a weight for each of the T keys.",
        ),
        Mistake(lambda t, h, b: h * t * t * b * 8, "you multiplied by bits (8 per byte); fp16 takes 2 bytes."),
        Mistake(
            lambda t, h, b: 2 * h * t * t * b,
            "twice too much: there is one attention-weight matrix per "
            "head (the keys and values are separate, smaller T × d_k tensors).",
        ),
    ],
)


# --------------------------------------------------------------------------- Exercise 8.4, FLOPs


def _flops_ref(seq_len, d_model, n_heads):
    """FLOPs (a multiply-add = 2) of one multi-head self-attention layer on one sequence of length T."""
    t, d = seq_len, d_model
    d_k = d // n_heads
    return {
        "projections": 4 * 2 * t * d * d,  # Q, K, V, O: each (T × d) @ (d × d)
        "scores": n_heads * 2 * t * t * d_k,  # Q_i K_iᵀ: (T × d_k) @ (d_k × T) per head
        "weighted_sum": n_heads * 2 * t * t * d_k,
    }  # A_i V_i: (T × T) @ (T × d_k) per head


def _flops_vary(**changes):
    def fn(t, d, h):
        out = _flops_ref(t, d, h)
        for k, f in changes.items():
            out[k] = f(t, d, h)
        return out

    return fn


attention_flops_ex = _DictExercise(
    "Exercise 8.4: FLOPs of multi-head self-attention",
    _flops_ref,
    cases=[
        ("T 4096, d 4096, h 32", lambda: (4096, 4096, 32)),
        ("T 128, d 512, h 8", lambda: (128, 512, 8)),
        ("T 1000, d 768, h 12", lambda: (1000, 768, 12)),
    ],
    mistakes=[
        Mistake(
            lambda t, d, h: {k: v // 2 for k, v in _flops_ref(t, d, h).items()},
            "every term is half of what FLOP counters report: a multiply-add is 2 FLOPs "
            "(an (m × k) @ (k × n) product costs 2·m·k·n).",
        ),
        Mistake(
            _flops_vary(projections=lambda t, d, h: 3 * 2 * t * d * d),
            "projections: you counted Q, K and V but not the output projection W_O.",
        ),
        Mistake(
            _flops_vary(projections=lambda t, d, h: 4 * t * d * d),
            "projections: a multiply-add is 2 FLOPs, so each (T × d) @ (d × d) product costs 2·T·d².",
        ),
        Mistake(
            _flops_vary(scores=lambda t, d, h: 2 * t * t * (d // h), weighted_sum=lambda t, d, h: 2 * t * t * (d // h)),
            "scores and weighted sum: that is one head; all h heads together cost h times as much (h · d_k = d_model).",
        ),
        Mistake(
            _flops_vary(scores=lambda t, d, h: 2 * t * t * d * h, weighted_sum=lambda t, d, h: 2 * t * t * d * h),
            "scores and weighted sum: each head works in d_k = d_model/h dimensions, not d_model.",
        ),
        Mistake(
            _flops_vary(scores=lambda t, d, h: 2 * t * d * d, weighted_sum=lambda t, d, h: 2 * t * d * d),
            "scores and weighted sum: these are the quadratic terms, T × T per head, so they grow with T².",
        ),
    ],
    compare=_cmp_dicts,
)
