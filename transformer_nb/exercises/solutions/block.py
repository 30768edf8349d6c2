"""Notebook 06: RMSNorm, the SwiGLU feed-forward, and Exercise 8.8 (a stack of Pre-LN encoder blocks)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def my_rms_norm(x, weight, eps):
    rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)  # over each token's features, ε inside
    return x / rms * weight


def my_swiglu(x, w_gate, w_up, w_down):
    gate = F.silu(x @ w_gate.T)  # Swish/SiLU: z·σ(z)
    return (gate * (x @ w_up.T)) @ w_down.T  # the gate multiplies a plain linear branch


class PreLNBlock(nn.Module):
    """x + MHA(LN(x)), then x + FFN(LN(x)): (B, T, d_model) in, the same shape out."""

    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        self.n_heads = n_heads
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)  # W_Q, W_K, W_V in one matrix
        self.out = nn.Linear(d_model, d_model)  # W_O
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))

    def attend(self, x):
        B, T, d = x.shape
        d_k = d // self.n_heads
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, d_k).permute(2, 0, 3, 1, 4)  # 3 × (B, h, T, d_k)
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_k), dim=-1)
        return self.out((weights @ v).transpose(1, 2).reshape(B, T, d))

    def forward(self, x):
        x = x + self.attend(self.norm1(x))  # the norm sits inside the residual branch
        return x + self.ffn(self.norm2(x))


def build_encoder_stack(d_model, n_heads, d_ff, n_blocks):
    return nn.Sequential(*[PreLNBlock(d_model, n_heads, d_ff) for _ in range(n_blocks)])  # n separate blocks
