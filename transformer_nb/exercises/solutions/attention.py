"""Notebook 01: Exercise 8.1 (the variance of q·k, softmax saturation) and Exercise 8.5 (attention)."""

import math

import torch


def dot_product_moments(d_k, var_q, var_k, mean_q=0.0, mean_k=0.0):
    # one term q_i k_i of independent factors: E[q_i k_i] = E[q_i] E[k_i]
    term_mean = mean_q * mean_k
    # Var(XY) = E[X²] E[Y²] - (E[X] E[Y])², and E[X²] = Var(X) + E[X]²
    term_var = (var_q + mean_q**2) * (var_k + mean_k**2) - term_mean**2
    # q·k adds d_k independent terms: their means add, and so do their variances
    return d_k * term_mean, d_k * term_var


def score_variance(q, k, scaled):
    scores = (q * k).sum(dim=-1)  # one dot product per pair of matching rows
    if scaled:
        scores = scores / math.sqrt(q.shape[-1])
    return scores.var()


def softmax_jacobian(s):
    # p_i = e^{s_i} / Σ_j e^{s_j}, so ∂p_i/∂s_j = p_i (δ_ij - p_j)
    p = torch.softmax(s, dim=-1)
    return torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)


def attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (B, T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))  # blocked keys get probability 0
    weights = torch.softmax(scores, dim=-1)  # each query's weights over the keys sum to 1
    weights = weights.nan_to_num(0.0)  # a query with every key blocked: 0/0 = NaN -> weight 0
    return weights @ v, weights


def causal_attention(q, k, v):
    T, d_k = q.shape[-2], q.shape[-1]
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))  # query i sees keys 0..i
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d_k)).masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
