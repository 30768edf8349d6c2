"""Notebook 05's exercises (8.10 RoPE scores, the pair-by-pair identity): each checker accepts an independent
package-based solution; the rotate-half pairing that notebook 05 itself teaches gets its own hint in both, and
notebook 05's former demo cells (frequencies from d_model, the flipped sign) are named."""

import math

import pytest
import torch

from transformer_nb.exercises.rope import relative_score_ex, rope_scores_ex


def test_rope_scores_names_the_wrong_shape():
    r = rope_scores_ex.check(lambda x, wq, wk, h: torch.zeros(x.shape[0], x.shape[0]), quiet=True)
    assert not r.passed and "shape" in r.message


def rope_scores_half(x, w_q, w_k, n_heads):  # the rotate_half pairing (GPT-NeoX, Hugging Face LLaMA)
    t, d = x.shape
    dk = d // n_heads
    ang = torch.arange(t, dtype=x.dtype)[:, None] * 10000.0 ** (-torch.arange(0, dk, 2, dtype=x.dtype) / dk)
    cos, sin = torch.cos(ang).repeat(1, 2), torch.sin(ang).repeat(1, 2)

    def rot(v):  # (h, T, d_k): pair i with i + d_k/2
        half = torch.cat([-v[..., dk // 2 :], v[..., : dk // 2]], -1)
        return v * cos + half * sin

    q, k = (rot((x @ w).view(t, n_heads, dk).transpose(0, 1)) for w in (w_q, w_k))
    return q @ k.transpose(-2, -1) / math.sqrt(dk)


def relative_score_half(q, k, delta):
    d = q.shape[-1]
    a = delta * 10000.0 ** (-torch.arange(0, d, 2, dtype=q.dtype) / d)
    q1, q2, k1, k2 = q[: d // 2], q[d // 2 :], k[: d // 2], k[d // 2 :]
    return ((q1 * k1 + q2 * k2) * torch.cos(a) + (q2 * k1 - q1 * k2) * torch.sin(a)).sum()


def rope_scores_dmodel_freqs(x, w_q, w_k, n_heads):  # notebook 05's demo cell
    t, d_model = x.shape
    d_k = d_model // n_heads
    q = (x @ w_q).view(t, n_heads, d_k).transpose(0, 1)
    k = (x @ w_k).view(t, n_heads, d_k).transpose(0, 1)
    ang = torch.arange(t, dtype=x.dtype)[:, None] * 10000.0 ** (-torch.arange(0, d_k, 2, dtype=x.dtype) / d_model)
    c, s = torch.cos(ang), torch.sin(ang)

    def rot(v):
        return torch.stack((v[..., 0::2] * c - v[..., 1::2] * s, v[..., 0::2] * s + v[..., 1::2] * c), -1).flatten(-2)

    return rot(q) @ rot(k).transpose(-2, -1) / math.sqrt(d_k)


def relative_score_flipped(q, k, delta):  # notebook 05's demo cell
    d = q.shape[-1]
    a = delta * 10000.0 ** (-torch.arange(0, d, 2, dtype=q.dtype) / d)
    q1, q2, k1, k2 = q[0::2], q[1::2], k[0::2], k[1::2]
    return ((q1 * k1 + q2 * k2) * torch.cos(a) - (q2 * k1 - q1 * k2) * torch.sin(a)).sum()


@pytest.mark.parametrize(
    "ex, wrong, words",
    [
        (rope_scores_ex, rope_scores_half, "rotate_half"),
        (relative_score_ex, relative_score_half, "rotate_half"),
        (rope_scores_ex, rope_scores_dmodel_freqs, "frequencies use d_model"),
        (relative_score_ex, relative_score_flipped, "wrong sign"),
    ],
)
def test_mistakes_are_named(ex, wrong, words):
    r = ex.check(wrong, quiet=True)
    assert not r.passed and words in r.message, r.message
