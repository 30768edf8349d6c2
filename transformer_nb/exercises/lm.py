"""Exercises for notebook 10 (the WikiText-2 language model).

- :data:`perplexity_ex` -- ``perplexity(loss_sums, token_counts)``: a split's perplexity from the
  summed NLL and the number of targets of each batch (batches of unequal size).
- :data:`top_k_ex` -- ``top_k_distribution(logits, k, temperature)``: the distribution that
  top-k sampling with a temperature draws from (sampling is then one ``torch.multinomial``).
- :data:`kv_step_ex` -- ``kv_cache_step(q, k_new, v_new, k_cache, v_cache)``: one decoding step
  of attention with a KV cache: append the new key/value, attend, return the grown cache.

Each exercise knows the typical wrong answers and replies with a hint aimed at that mistake.
"""

import math

import torch
import torch.nn.functional as F

from transformer_nb.exercises import Exercise, Mistake, Property


def _g(seed):
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------------------
# perplexity(loss_sums, token_counts) -> float
# ----------------------------------------------------------------------------------------


def _perplexity_solution(loss_sums, token_counts):
    """loss_sums: (n_batches,) summed NLL in nats; token_counts: (n_batches,) targets per batch.

    Perplexity = exp(total NLL / total number of targets).
    """
    return math.exp(float(loss_sums.sum()) / float(token_counts.sum()))


def _mean_of_batch_perplexities(loss_sums, token_counts):
    return float((loss_sums / token_counts).exp().mean())


def _unweighted_mean_loss(loss_sums, token_counts):
    return math.exp(float((loss_sums / token_counts).mean()))


def _no_exp(loss_sums, token_counts):
    return float(loss_sums.sum()) / float(token_counts.sum())


def _per_batch_division(loss_sums, token_counts):
    return math.exp(float(loss_sums.sum()) / len(loss_sums))


def _base_two(loss_sums, token_counts):
    return 2.0 ** (float(loss_sums.sum()) / float(token_counts.sum()))


def _perplexity_case(sizes, mean_losses, seed):
    g = _g(seed)
    counts = torch.tensor(sizes, dtype=torch.float64)
    per_token = torch.tensor(mean_losses, dtype=torch.float64) + 0.01 * torch.rand(
        len(sizes), generator=g, dtype=torch.float64
    )
    return per_token * counts, counts


def _is_positive_number(args, out):
    return isinstance(out, (int, float)) and out >= 1.0


perplexity_ex = Exercise(
    title="Perplexity from summed losses",
    reference=_perplexity_solution,
    cases=[
        ("3 batches of 2,048 targets each", lambda: _perplexity_case([2048, 2048, 2048], [5.2, 5.6, 5.4], 0)),
        (
            "a last batch of 100 targets with a higher loss",
            lambda: _perplexity_case([2048, 2048, 100], [5.0, 5.1, 7.5], 1),
        ),
        ("batches of 10, 500 and 5,000 targets", lambda: _perplexity_case([10, 500, 5000], [3.0, 6.0, 4.5], 2)),
    ],
    mistakes=[
        Mistake(
            _mean_of_batch_perplexities,
            "you average the batches' perplexities; perplexity is exp of the "
            "average loss per *token*, and exp of a mean is not a mean of exps.",
        ),
        Mistake(
            _unweighted_mean_loss,
            "you average the batches' mean losses with equal weight, so a short "
            "last batch counts as much as a full one: divide the total loss by the "
            "total number of targets.",
        ),
        Mistake(_no_exp, "you return the mean loss per token (nats); perplexity is its exponential."),
        Mistake(
            _per_batch_division,
            "you divide by the number of batches; divide by the number of targets (token_counts.sum()).",
        ),
        Mistake(
            _base_two,
            "the losses are natural-log NLLs (F.cross_entropy), so the perplexity is e**loss, "
            "not 2**loss (2**x is for losses in bits).",
        ),
    ],
    properties=[Property(_is_positive_number, "return one Python float >= 1 (a perplexity is at least 1).")],
    compare=lambda out, ref: isinstance(out, (int, float)) and math.isclose(out, ref, rel_tol=1e-6),
)


# ----------------------------------------------------------------------------------------
# top_k_distribution(logits, k, temperature) -> probs
# ----------------------------------------------------------------------------------------


def _top_k_solution(logits, k, temperature):
    """logits: (B, V); k: keep the k largest logits per row; temperature > 0.

    Returns probs (B, V): softmax(logits / temperature) restricted to the top k and
    renormalised; every other entry is exactly 0.
    """
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    scaled = (logits / temperature).masked_fill(logits < kth, float("-inf"))
    return torch.softmax(scaled, dim=-1)


def _k_smallest(logits, k, temperature):
    kth = torch.topk(logits, k, dim=-1, largest=False).values[..., -1:]
    return torch.softmax((logits / temperature).masked_fill(logits > kth, float("-inf")), dim=-1)


def _temperature_multiplied(logits, k, temperature):
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    return torch.softmax((logits * temperature).masked_fill(logits < kth, float("-inf")), dim=-1)


def _not_renormalised(logits, k, temperature):
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    return torch.softmax(logits / temperature, dim=-1).masked_fill(logits < kth, 0.0)


def _k_plus_one(logits, k, temperature):
    kth = torch.topk(logits, k + 1, dim=-1).values[..., -1:]
    return torch.softmax((logits / temperature).masked_fill(logits < kth, float("-inf")), dim=-1)


def _no_temperature(logits, k, temperature):
    return _top_k_solution(logits, k, 1.0)


def _rows_sum_to_one(args, out):
    return torch.allclose(out.sum(-1), torch.ones(out.shape[0], dtype=out.dtype), atol=1e-5)


def _exactly_k_nonzero(args, out):
    return bool(((out > 0).sum(-1) == args[1]).all())


def _top_k_case(b, v, k, t, seed):
    return (torch.randn(b, v, generator=_g(seed)) * 2, k, t)


top_k_ex = Exercise(
    title="Top-k sampling with a temperature",
    reference=_top_k_solution,
    cases=[
        ("4 rows over 50 words, k=5, temperature 1", lambda: _top_k_case(4, 50, 5, 1.0, 0)),
        ("k=10, temperature 0.5 (sharper)", lambda: _top_k_case(3, 40, 10, 0.5, 1)),
        ("k=3, temperature 2.0 (flatter)", lambda: _top_k_case(2, 30, 3, 2.0, 2)),
        ("k=1: greedy as a distribution", lambda: _top_k_case(2, 20, 1, 0.7, 3)),
    ],
    mistakes=[
        Mistake(
            _k_smallest,
            "you keep the k *least* likely words: torch.topk returns the largest by default; "
            "keep logits >= the k-th largest.",
        ),
        Mistake(
            _temperature_multiplied,
            "the temperature divides the logits (T < 1 sharpens, T > 1 flattens); you multiplied.",
        ),
        Mistake(
            _not_renormalised,
            "you zeroed the words outside the top k *after* the softmax, so the row no "
            "longer sums to 1: set their logits to -inf before the softmax.",
        ),
        Mistake(
            _k_plus_one,
            "you keep k + 1 words: the threshold is the k-th largest logit, topk(logits, k).values[..., -1].",
        ),
        Mistake(_no_temperature, "the temperature is ignored: divide the logits by it before the softmax."),
    ],
    properties=[
        Property(_rows_sum_to_one, "each row must be a probability distribution that sums to 1."),
        Property(_exactly_k_nonzero, "exactly k words per row must have a probability above 0."),
    ],
)


# ----------------------------------------------------------------------------------------
# kv_cache_step(q, k_new, v_new, k_cache, v_cache) -> (out, k_all, v_all)
# ----------------------------------------------------------------------------------------


def _kv_step_solution(q, k_new, v_new, k_cache, v_cache):
    """One decoding step with a KV cache.

    q, k_new, v_new: (B, h, 1, d_head) for the newest token; k_cache, v_cache: (B, h, T, d_head)
    for the T tokens before it. Returns out (B, h, 1, d_head), the new token's attention over all
    T + 1 keys (it may attend to every earlier token and to itself), and the grown caches
    k_all, v_all: (B, h, T + 1, d_head), the new entry last.
    """
    k_all = torch.cat([k_cache, k_new], dim=2)
    v_all = torch.cat([v_cache, v_new], dim=2)
    scores = q @ k_all.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return torch.softmax(scores, dim=-1) @ v_all, k_all, v_all


def _forgot_new_key(q, k_new, v_new, k_cache, v_cache):
    k_all = torch.cat([k_cache, k_new], dim=2)
    v_all = torch.cat([v_cache, v_new], dim=2)
    scores = q @ k_cache.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return torch.softmax(scores, dim=-1) @ v_cache, k_all, v_all


def _sdpa_is_causal(q, k_new, v_new, k_cache, v_cache):
    k_all = torch.cat([k_cache, k_new], dim=2)
    v_all = torch.cat([v_cache, v_new], dim=2)
    return F.scaled_dot_product_attention(q, k_all, v_all, is_causal=True), k_all, v_all


def _prepended(q, k_new, v_new, k_cache, v_cache):
    k_all = torch.cat([k_new, k_cache], dim=2)
    v_all = torch.cat([v_new, v_cache], dim=2)
    scores = q @ k_all.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return torch.softmax(scores, dim=-1) @ v_all, k_all, v_all


def _only_new_token(q, k_new, v_new, k_cache, v_cache):
    k_all = torch.cat([k_cache, k_new], dim=2)
    v_all = torch.cat([v_cache, v_new], dim=2)
    return v_new.clone(), k_all, v_all


def _returns_triple(args, out):
    return isinstance(out, (tuple, list)) and len(out) == 3


def _kv_case(b, h, t, d, seed):
    g = _g(seed)
    r = lambda n: torch.randn(b, h, n, d, generator=g)
    return (r(1), r(1), r(1), r(t), r(t))


kv_step_ex = Exercise(
    title="One decoding step with a KV cache",
    reference=_kv_step_solution,
    cases=[
        ("B=2, h=4, 7 cached tokens, d_head=8", lambda: _kv_case(2, 4, 7, 8, 0)),
        ("B=1, h=2, 1 cached token, d_head=16", lambda: _kv_case(1, 2, 1, 16, 1)),
        ("B=3, h=1, 20 cached tokens, d_head=4", lambda: _kv_case(3, 1, 20, 4, 2)),
    ],
    mistakes=[
        Mistake(
            _sdpa_is_causal,
            "F.scaled_dot_product_attention(is_causal=True) aligns its mask top-left: with "
            "1 query and T + 1 keys the query may only see the *first* key. The newest token "
            "may attend to every cached key, so pass no mask at all (or a bottom-right one).",
        ),
        Mistake(
            _forgot_new_key,
            "the new token does not attend to itself: append k_new / v_new to the cache "
            "*before* computing the attention.",
        ),
        Mistake(
            _prepended,
            "the new key and value must go at the end of the cache (dim=2, after the T cached "
            "tokens), in the order the tokens came.",
        ),
        Mistake(
            _only_new_token,
            "you return the new token's own value: the output is the softmax-weighted sum of all T + 1 values.",
        ),
    ],
    properties=[Property(_returns_triple, "return three tensors: (out, k_all, v_all).")],
)
