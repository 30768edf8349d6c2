"""Exercises for notebook 01 (scaled dot-product attention).

- :data:`attention_ex` -- Exercise 8.5 (000): implement ``attention(q, k, v, mask=None)``.
- :data:`causal_ex` -- Exercise 8.5, second half: ``causal_attention(q, k, v)`` builds its own
  causal mask.
- :data:`variance_ex` -- Exercise 8.1 (000), one step made checkable:
  ``dot_product_variance(d_k, var_q, var_k, mean_q, mean_k)``, the variance of ``q·k``.
- :data:`empirical_ex` -- Exercise 8.1, the numeric side: ``score_variance(q, k, scaled)``,
  the sample variance of (scaled) row-wise dot products.

Each exercise knows the typical wrong answers and replies with a hint aimed at that mistake.
"""

import math

import torch

from transformer_nb.exercises import Exercise, Mistake, Property, _clone, _shape, _tensors, allclose


def _nan_to_zero(out):
    if isinstance(out, (tuple, list)):
        return type(out)(_nan_to_zero(o) for o in out)
    if isinstance(out, torch.Tensor) and out.is_floating_point():
        return out.nan_to_num(0.0)
    return out


def _has_nan(out):
    return any(
        isinstance(t, torch.Tensor) and t.is_floating_point() and bool(torch.isnan(t).any()) for t in _tensors(out)
    )


class AttentionExercise(Exercise):
    """An :class:`Exercise` that looks through NaN before naming a mistake.

    A from-scratch attention usually has *two* faults at once: the mistake itself and NaN in
    rows whose keys are all masked. The base class reports the NaN first, which hides the
    real mistake (an inverted causal mask blocks a whole row, so it always shows up as NaN).
    Here the typical mistakes are compared with NaN read as 0 first; if only the NaN is wrong,
    the hint says exactly that.
    """

    nan_hint: str = (
        "a query whose keys are ALL masked gets NaN: the softmax of a row of -inf is 0/0. "
        "Detect such rows and give them zero weights and a zero output (d2l shipped this bug)."
    )

    def diagnose(self, args, out, ref) -> str:
        if _has_nan(out) and _shape(out) == _shape(ref):
            clean = _nan_to_zero(out)
            if self.compare(clean, ref):
                return self.nan_hint
            for m in self.mistakes:
                try:
                    if self.compare(clean, m.fn(*_clone(args))):
                        return m.hint + " (Your output also contains NaN where a row has no key to attend to.)"
                except Exception:
                    continue
        return super().diagnose(args, out, ref)


# ----------------------------------------------------------------------------------------
# Exercise 8.5: attention(q, k, v, mask=None) -> (output, weights)
# ----------------------------------------------------------------------------------------


def _attention_solution(q, k, v, mask=None):
    """q: (B, T_q, d_k), k: (B, T_k, d_k), v: (B, T_k, d_v), mask: (T_q, T_k) bool, True = may attend.

    Returns output (B, T_q, d_v) and weights (B, T_q, T_k); a query whose keys are all
    masked gets zero weights and a zero output.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    empty = torch.isneginf(scores).all(dim=-1, keepdim=True)
    weights = torch.softmax(scores.masked_fill(empty, 0.0), dim=-1).masked_fill(empty, 0.0)
    return weights @ v, weights


def _safe(scores):
    empty = torch.isneginf(scores).all(dim=-1, keepdim=True)
    return torch.softmax(scores.masked_fill(empty, 0.0), dim=-1).masked_fill(empty, 0.0)


def _no_scale(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = _safe(scores)
    return w @ v, w


def _scale_by_dk(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1]
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = _safe(scores)
    return w @ v, w


def _softmax_wrong_axis(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = torch.softmax(scores, dim=-2).nan_to_num(0.0)
    return w @ v, w


def _transposed_scores(q, k, v, mask=None):
    scores = k @ q.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (T_k, T_q): the transpose of Q Kᵀ
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = _safe(scores)
    return w @ v, w


def _mask_inverted(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    w = _safe(scores)
    return w @ v, w


def _mask_after_softmax(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    w = torch.softmax(scores, dim=-1)
    if mask is not None:
        w = w * mask
    return w @ v, w


def _output_is_weights_times_v_transposed(q, k, v, mask=None):
    out, w = _attention_solution(q, k, v, mask)
    return out, w.transpose(-2, -1)


def _weights_rows_sum_to_one(args, out):
    q, k, v, mask = (list(args) + [None])[:4]
    w = out[1]
    rows = w.sum(-1)
    if mask is None:
        return torch.allclose(rows, torch.ones_like(rows), atol=1e-5)
    live = mask.any(-1).expand_as(rows)
    return torch.allclose(rows[live], torch.ones_like(rows[live]), atol=1e-5)


def _exact_zeros_where_masked(args, out):
    q, k, v, mask = (list(args) + [None])[:4]
    if mask is None:
        return True
    return bool((out[1].masked_select(~mask.expand_as(out[1])) == 0).all())


def _output_is_weights_at_v(args, out):
    q, k, v = args[:3]
    return torch.allclose(out[0], out[1] @ v, atol=1e-5)


def _returns_pair(args, out):
    return isinstance(out, (tuple, list)) and len(out) == 2


def _g(seed):
    return torch.Generator().manual_seed(seed)


def _case_plain():
    g = _g(1)
    return (torch.randn(2, 8, 16, generator=g), torch.randn(2, 8, 16, generator=g), torch.randn(2, 8, 16, generator=g))


def _case_causal():
    return (*_case_plain(), torch.ones(8, 8, dtype=torch.bool).tril())


def _case_rect():
    g = _g(2)  # T_q != T_k and d_v != d_k: catches transposes that square inputs hide
    return (
        torch.randn(2, 3, 16, generator=g) * 2,
        torch.randn(2, 5, 16, generator=g) * 2,
        torch.randn(2, 5, 4, generator=g),
    )


def _case_padding():
    g = _g(3)
    mask = torch.ones(4, 6, dtype=torch.bool)
    mask[:, 4:] = False  # the last two keys are padding
    return (
        torch.randn(2, 4, 8, generator=g) * 3,
        torch.randn(2, 6, 8, generator=g) * 3,
        torch.randn(2, 6, 5, generator=g),
        mask,
    )


def _case_empty_row():
    g = _g(4)
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    mask[0] = False  # query 0 may attend to nothing at all
    return (
        torch.randn(1, 4, 8, generator=g),
        torch.randn(1, 4, 8, generator=g),
        torch.randn(1, 4, 8, generator=g),
        mask,
    )


attention_ex = AttentionExercise(
    title="Exercise 8.5: scaled dot-product attention",
    reference=_attention_solution,
    cases=[
        ("batch=2, seq_len=8, d_k=d_v=16, no mask", _case_plain),
        ("the same input with a causal (8, 8) mask", _case_causal),
        ("T_q=3 queries, T_k=5 keys, d_k=16, d_v=4, no mask", _case_rect),
        ("a (4, 6) padding mask that blocks the last two keys", _case_padding),
        ("a causal mask whose first row blocks every key", _case_empty_row),
    ],
    mistakes=[
        Mistake(
            _no_scale,
            "the scores are not scaled: divide QKᵀ by sqrt(d_k) before the softmax "
            "(the weights you return are too peaked).",
        ),
        Mistake(
            _scale_by_dk,
            "you divide by d_k; the scale is 1/sqrt(d_k), which brings the variance of a score from d_k back to 1.",
        ),
        Mistake(
            _softmax_wrong_axis,
            "the softmax runs over the wrong axis: each *query's* weights over "
            "the keys must sum to 1, so normalise over the last axis (dim=-1).",
        ),
        Mistake(
            _transposed_scores,
            "your score matrix is transposed: entry (i, j) must be q_i · k_j, "
            "i.e. Q Kᵀ with rows = queries, columns = keys.",
        ),
        Mistake(
            _mask_inverted,
            "the mask is applied with the wrong polarity: True means 'may attend', "
            "so fill -inf where the mask is False (~mask).",
        ),
        Mistake(
            _mask_after_softmax,
            "you zero the masked weights after the softmax, so the remaining "
            "weights no longer sum to 1: put -inf into the scores *before* the softmax.",
        ),
        Mistake(
            _output_is_weights_times_v_transposed,
            "the weights you return are transposed: return them with shape (B, T_q, T_k), one row per query.",
        ),
    ],
    properties=[
        Property(_returns_pair, "return a pair (output, weights)."),
        Property(
            _weights_rows_sum_to_one,
            "rows of the weights do not sum to 1: did you softmax over the last axis (the keys)?",
        ),
        Property(
            _exact_zeros_where_masked,
            "masked positions must get exactly 0 weight: fill the scores with "
            "-inf (not a large negative number) before the softmax.",
        ),
        Property(_output_is_weights_at_v, "the output must be weights @ v (the weighted sum of the values)."),
    ],
    stub_hint="Write attention(q, k, v, mask=None) returning (output, weights).",
)

# ----------------------------------------------------------------------------------------
# Exercise 8.5, second half: causal_attention(q, k, v) builds its own mask
# ----------------------------------------------------------------------------------------


def _causal_solution(q, k, v):
    """q, k: (B, T, d_k), v: (B, T, d_v). Query i may attend to keys 0..i (itself included)."""
    t = q.shape[-2]
    allowed = torch.ones(t, t, dtype=torch.bool).tril()
    return _attention_solution(q, k, v, allowed)


def _causal_with(diagonal=0, upper=False, after_softmax=False, no_scale=False):
    def fn(q, k, v):
        t = q.shape[-2]
        ones = torch.ones(t, t, dtype=torch.bool)
        allowed = ones.triu(diagonal) if upper else ones.tril(diagonal)
        scores = q @ k.transpose(-2, -1) / (1.0 if no_scale else math.sqrt(q.shape[-1]))
        if after_softmax:
            w = torch.softmax(scores, dim=-1) * allowed
        else:
            w = _safe(scores.masked_fill(~allowed, float("-inf")))
        return w @ v, w

    return fn


def _upper_zero(args, out):
    w = out[1]
    t = w.shape[-1]
    return bool((w.masked_select(torch.ones(t, t, dtype=torch.bool).triu(1).expand_as(w)) == 0).all())


def _diag_positive(args, out):
    return bool((out[1].diagonal(dim1=-2, dim2=-1) > 0).all())


causal_ex = AttentionExercise(
    title="Exercise 8.5 (causal): attention with a causal mask",
    reference=_causal_solution,
    cases=[
        ("batch=2, seq_len=8, d_k=d_v=16", lambda: _case_plain()),
        (
            "batch=1, seq_len=5, d_k=4, d_v=3, large scores",
            lambda: (
                torch.randn(1, 5, 4, generator=_g(5)) * 3,
                torch.randn(1, 5, 4, generator=_g(6)) * 3,
                torch.randn(1, 5, 3, generator=_g(7)),
            ),
        ),
    ],
    mistakes=[
        Mistake(
            _causal_with(upper=True),
            "your mask has the wrong polarity: it lets each query see the "
            "*future*. Keep the lower triangle (torch.tril), block the upper one.",
        ),
        Mistake(
            _causal_with(upper=True, diagonal=1),
            "you blocked the lower triangle instead of the upper one: query i may attend to keys j <= i.",
        ),
        Mistake(
            _causal_with(diagonal=-1),
            "off by one: your mask stops query i from attending to itself. "
            "The diagonal must stay visible (tril with diagonal=0).",
        ),
        Mistake(
            _causal_with(diagonal=1),
            "off by one: your mask lets query i see key i+1, one step into the future. Use tril with diagonal=0.",
        ),
        Mistake(
            _causal_with(after_softmax=True),
            "you zero the future after the softmax, so rows no longer sum "
            "to 1: fill -inf into the scores before the softmax.",
        ),
        Mistake(_causal_with(no_scale=True), "the scores are not scaled by 1/sqrt(d_k)."),
    ],
    properties=[
        Property(_upper_zero, "weights above the diagonal must be exactly 0 (no attention to the future)."),
        Property(_diag_positive, "every query must be able to attend to itself: the diagonal weights are 0."),
        Property(
            lambda a, o: torch.allclose(o[1].sum(-1), torch.ones_like(o[1].sum(-1)), atol=1e-5),
            "rows of the weights do not sum to 1: softmax over the last axis, after masking.",
        ),
    ],
    stub_hint="Write causal_attention(q, k, v) returning (output, weights).",
)

# ----------------------------------------------------------------------------------------
# Exercise 8.1, one step: the variance of q·k for general means and variances
# ----------------------------------------------------------------------------------------


def _variance_solution(d_k, var_q, var_k, mean_q=0.0, mean_k=0.0):
    """Var(q·k) for q, k with i.i.d. independent components (mean_q, var_q) and (mean_k, var_k)."""
    return d_k * (var_q * var_k + var_q * mean_k**2 + var_k * mean_q**2)


def _v_one_term(d_k, var_q, var_k, mean_q=0.0, mean_k=0.0):
    return var_q * var_k + var_q * mean_k**2 + var_k * mean_q**2


def _v_std(d_k, var_q, var_k, mean_q=0.0, mean_k=0.0):
    return math.sqrt(_variance_solution(d_k, var_q, var_k, mean_q, mean_k))


def _v_no_means(d_k, var_q, var_k, mean_q=0.0, mean_k=0.0):
    return d_k * var_q * var_k


def _v_dk_squared(d_k, var_q, var_k, mean_q=0.0, mean_k=0.0):
    return d_k**2 * (var_q * var_k + var_q * mean_k**2 + var_k * mean_q**2)


def _v_sum(d_k, var_q, var_k, mean_q=0.0, mean_k=0.0):
    return d_k * (var_q + var_k)


def _v_swapped_means(d_k, var_q, var_k, mean_q=0.0, mean_k=0.0):
    return d_k * (var_q * var_k + var_q * mean_q**2 + var_k * mean_k**2)


variance_ex = Exercise(
    title="Exercise 8.1: Var(q·k) in general",
    reference=_variance_solution,
    cases=[
        ("d_k=64, unit variances, zero means", lambda: (64, 1.0, 1.0, 0.0, 0.0)),
        ("d_k=16, var_q=2, var_k=3, zero means", lambda: (16, 2.0, 3.0, 0.0, 0.0)),
        ("d_k=10, var_q=4, var_k=0.25, mean_q=0.5, mean_k=-1", lambda: (10, 4.0, 0.25, 0.5, -1.0)),
        ("d_k=3, var_q=1, var_k=2, mean_q=2, mean_k=0", lambda: (3, 1.0, 2.0, 2.0, 0.0)),
    ],
    mistakes=[
        Mistake(
            _v_one_term,
            "that is the variance of ONE term q_i k_i (which is also the variance of the SCALED "
            "score q·k/sqrt(d_k)). The unscaled q·k sums d_k independent terms, and variances of "
            "independent terms add.",
        ),
        Mistake(_v_std, "you returned the standard deviation; the question asks for the variance."),
        Mistake(
            _v_dk_squared,
            "d_k appears squared: for a SUM of independent terms the variances add (a factor "
            "d_k); a factor d_k² would need perfectly correlated terms.",
        ),
        Mistake(
            _v_sum,
            "variances of a product do not add: for independent zero-mean q_i, k_i, Var(q_i k_i) = Var(q_i) Var(k_i).",
        ),
        Mistake(
            _v_no_means,
            "right for zero means, but with non-zero means Var(q_i k_i) has two more terms: "
            "expand E[q_i² k_i²] - E[q_i k_i]² with E[x²] = Var(x) + E[x]².",
        ),
        Mistake(
            _v_swapped_means,
            "the mean terms are paired the wrong way round: Var(q_i) multiplies E[k_i]², "
            "and Var(k_i) multiplies E[q_i]².",
        ),
    ],
    properties=[
        Property(
            lambda a, o: isinstance(o, (int, float)) or (isinstance(o, torch.Tensor) and o.numel() == 1),
            "return one number.",
        ),
    ],
    stub_hint="Write dot_product_variance(d_k, var_q, var_k, mean_q=0.0, mean_k=0.0) returning a number.",
)

# ----------------------------------------------------------------------------------------
# Exercise 8.1, the numeric side: sample variance of (scaled) row-wise dot products
# ----------------------------------------------------------------------------------------


def _empirical_solution(q, k, scaled):
    """q, k: (N, d_k) samples; the sample variance of the N dot products q_n · k_n,
    divided by sqrt(d_k) first when ``scaled``."""
    s = (q * k).sum(-1)
    if scaled:
        s = s / math.sqrt(q.shape[-1])
    return s.var()


def _e_all_pairs(q, k, scaled):
    s = q @ k.T
    return (s / math.sqrt(q.shape[-1]) if scaled else s).var()


def _e_no_scale(q, k, scaled):
    return (q * k).sum(-1).var()


def _e_by_dk(q, k, scaled):
    s = (q * k).sum(-1)
    return (s / q.shape[-1] if scaled else s).var()


def _e_std(q, k, scaled):
    return _empirical_solution(q, k, scaled).sqrt()


def _e_mean_over_dims(q, k, scaled):
    s = (q * k).mean(-1)
    return (s / math.sqrt(q.shape[-1]) if scaled else s).var()


def _e_var_of_products(q, k, scaled):
    return (q * k).var()


def _emp_case(n, d, scaled, seed):
    def make():
        g = _g(seed)
        return torch.randn(n, d, generator=g), torch.randn(n, d, generator=g), scaled

    return make


empirical_ex = Exercise(
    title="Exercise 8.1 (numeric): variance of the (scaled) scores",
    reference=_empirical_solution,
    cases=[
        ("N=2000 samples, d_k=64, unscaled", _emp_case(2000, 64, False, 11)),
        ("N=2000 samples, d_k=64, scaled", _emp_case(2000, 64, True, 12)),
        ("N=2000 samples, d_k=256, scaled", _emp_case(2000, 256, True, 13)),
    ],
    mistakes=[
        Mistake(
            _e_all_pairs,
            "you took every pair q_n · k_m (a matrix product: N² scores). The question asks "
            "for the N row-wise dot products q_n · k_n, one per pair of matching rows.",
        ),
        Mistake(_e_no_scale, "when scaled=True, divide the dot products by sqrt(d_k) before taking the variance."),
        Mistake(_e_by_dk, "you divided by d_k; the scaled score is q·k / sqrt(d_k)."),
        Mistake(_e_std, "that is the standard deviation; return the variance."),
        Mistake(_e_mean_over_dims, "a dot product is a SUM over the d_k components, not a mean."),
        Mistake(
            _e_var_of_products,
            "that is the variance of the single products q_i k_i; sum over the last "
            "axis first to get the dot products.",
        ),
    ],
    properties=[],
    # unbiased (N-1) or biased (N) variance are both fine: they differ by 1/N = 5e-4 relative
    compare=lambda out, ref: allclose(out, ref, atol=1e-6, rtol=2e-3),
    stub_hint="Write score_variance(q, k, scaled) returning the sample variance (a 0-d tensor or a float).",
)

EXERCISES = {"attention": attention_ex, "causal": causal_ex, "variance": variance_ex, "empirical": empirical_ex}
