"""Notebook 02: the causal mask, the padding mask, and both together (True = may attend)."""

import torch


def my_causal_mask(T):
    i = torch.arange(T)[:, None]  # query position, one per row
    j = torch.arange(T)[None, :]  # key position, one per column
    return j <= i  # a query sees itself and the past


def my_padding_mask(lengths, max_len):
    lengths = torch.as_tensor(lengths)
    return torch.arange(max_len)[None, :] < lengths[:, None]  # position t is real iff t < length


def my_decoder_mask(keep):
    T = keep.shape[-1]
    causal = torch.ones(T, T, dtype=torch.bool).tril()  # (T_q, T_k)
    # block padded KEYS (the last axis) and future keys; (B, 1, 1, T_k) & (T_q, T_k) -> (B, 1, T_q, T_k)
    return keep[:, None, None, :] & causal
