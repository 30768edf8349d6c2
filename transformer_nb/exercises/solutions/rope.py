"""Notebook 05: Exercise 8.10 (RoPE in a two-head attention) and the identity pair by pair."""

import math

import torch


def rope_scores(x, w_q, w_k, n_heads):
    T, d_model = x.shape
    d_k = d_model // n_heads
    q = (x @ w_q).view(T, n_heads, d_k).transpose(0, 1)  # (h, T, d_k)
    k = (x @ w_k).view(T, n_heads, d_k).transpose(0, 1)
    theta = 10000.0 ** (-torch.arange(0, d_k, 2, dtype=x.dtype) / d_k)  # θ_i = 10000^(-2i/d_k)
    angle = torch.arange(T, dtype=x.dtype)[:, None] * theta  # (T, d_k/2): position m times θ_i
    cos, sin = torch.cos(angle), torch.sin(angle)

    def rotate(v):  # turn pair (2i, 2i+1) at position m by m·θ_i
        v1, v2 = v[..., 0::2], v[..., 1::2]
        return torch.stack((v1 * cos - v2 * sin, v1 * sin + v2 * cos), dim=-1).flatten(-2)

    return rotate(q) @ rotate(k).transpose(-2, -1) / math.sqrt(d_k)


def relative_score(q, k, delta):
    d = q.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=q.dtype) / d)
    q1, q2, k1, k2 = q[0::2], q[1::2], k[0::2], k[1::2]
    a = delta * theta
    # pair i: (q1, q2) · R(a) (k1, k2) = (q1 k1 + q2 k2) cos a + (q2 k1 - q1 k2) sin a
    return ((q1 * k1 + q2 * k2) * torch.cos(a) + (q2 * k1 - q1 * k2) * torch.sin(a)).sum()
