"""Notebook 03: Exercise 8.6 (multi-head attention, and which heads are local), GQA, the KV cache."""

import math

import torch


def multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads):
    B, T, d_model = x.shape
    d_k = d_model // n_heads

    def split(t):  # (B, T, d_model) -> (B, h, T, d_k): head i reads features i·d_k .. (i+1)·d_k - 1
        return t.view(B, T, n_heads, d_k).transpose(1, 2)

    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_k), dim=-1)  # (B, h, T, T)
    heads = weights @ v  # (B, h, T, d_k)
    concat = heads.transpose(1, 2).reshape(B, T, d_model)  # the heads side by side again
    return concat @ w_o, weights


def mean_distance(w):
    T = w.shape[-1]
    pos = torch.arange(T, dtype=w.dtype)
    gap = (pos[:, None] - pos[None, :]).abs()  # |i - j| for query i, key j
    return (w * gap).sum(-1).mean(-1)  # weighted over the keys, averaged over the queries


def head_kinds(w):
    T = w.shape[-1]
    pos = torch.arange(T, dtype=w.dtype)
    distance = (w * (pos[:, None] - pos[None, :]).abs()).sum(-1).mean(-1)
    entropy = -(w * w.clamp_min(1e-12).log()).sum(-1).mean(-1)  # 0·log 0 counts as 0
    uniform = (T * T - 1) / (3 * T)  # the mean distance of uniform attention
    kinds = []
    for d, h in zip(distance.tolist(), entropy.tolist()):
        if d < uniform / 2:
            kinds.append("local")
        elif h > 0.9 * math.log(T):
            kinds.append("global")
        else:
            kinds.append("focused")
    return kinds


def expand_kv(kv, n_heads):
    group = n_heads // kv.shape[1]  # query heads per K/V head
    return kv.repeat_interleave(group, dim=1)  # K/V head g serves query heads g·group .. (g+1)·group - 1


def cache_bytes(n_layers, n_heads, n_kv_heads, d_head, seq_len, batch, bytes_per_value):
    # keys and values (2), per layer, per K/V head (queries are never cached), per feature, token, sequence
    return 2 * n_layers * n_kv_heads * d_head * seq_len * batch * bytes_per_value
