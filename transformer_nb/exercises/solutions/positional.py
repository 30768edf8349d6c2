"""Notebook 04: Exercise 8.3 (the offset matrix), Exercise 8.7 (similarity per offset), ALiBi slopes."""

import math

import torch


def offset_matrix(k, omega):
    # with a = pos·ω and b = k·ω: sin(a+b) = sin a cos b + cos a sin b, cos(a+b) = cos a cos b - sin a sin b
    c, s = math.cos(k * omega), math.sin(k * omega)
    return torch.tensor([[c, s], [-s, c]], dtype=torch.float64)


def offset_average_similarity(pe):
    unit = pe / pe.norm(dim=-1, keepdim=True)  # each position's vector scaled to length 1
    sim = unit @ unit.T  # (T, T) cosine similarities
    return torch.stack([sim.diagonal(k).mean() for k in range(pe.shape[0])])  # the T - k pairs (i, i+k)


def my_alibi_slopes(n_heads):
    def geometric(n):  # n a power of 2: start at 2^(-8/n), ratio 2^(-8/n)
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]

    n0 = 2 ** math.floor(math.log2(n_heads))  # the largest power of 2 not above n_heads
    slopes = geometric(n0)
    if n0 < n_heads:  # the paper's rule: every other slope of 2·n0 heads, until there are n_heads
        slopes += geometric(2 * n0)[0::2][: n_heads - n0]
    return torch.tensor(slopes, dtype=torch.float64)
