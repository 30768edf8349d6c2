"""Notebook 12, the capstone: a decoder-only Transformer language model built from the student's own parts.

Steps 1 and 2 are notebook 01's ``attention`` (Exercise 8.5) and notebook 02's ``my_causal_mask``; the code
below calls them by those names, as the notebook's cells do.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.exercises.solutions import attention as _notebook01
from transformer_nb.exercises.solutions import masks as _notebook02

attention = _notebook01.attention  # step 1: attention(q, k, v, mask=None) -> (output, weights)
my_causal_mask = _notebook02.my_causal_mask  # step 2: (T, T) bool, True where query i may see key j


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.weights = None

    def forward(self, x, mask=None):
        B, T, d_model = x.shape
        d_k = d_model // self.n_heads

        def split(t):  # (B, T, d_model) -> (B, h, T, d_k): head i reads features i·d_k .. (i+1)·d_k - 1
            return t.view(B, T, self.n_heads, d_k).transpose(1, 2)

        heads, weights = attention(split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x)), mask)
        self.weights = weights.detach()  # (B, h, T, T), for the attention maps
        concat = heads.transpose(1, 2).reshape(B, T, d_model)  # the heads side by side again
        return self.out_proj(concat)


class Block(nn.Module):
    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = MultiHeadAttention(d_model, n_heads)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)

    def forward(self, x, mask=None):
        x = x + self.attn(self.norm1(x), mask)  # Pre-LN: the norm sits inside the residual branch
        return x + self.ff2(F.relu(self.ff1(self.norm2(x))))


class LanguageModel(nn.Module):
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList([Block(d_model, n_heads, d_ff) for _ in range(n_layers)])
        self.norm = nn.LayerNorm(d_model)
        self.bias = nn.Parameter(torch.zeros(vocab_size))  # the output layer's bias; its matrix is tok.weight
        for m in self.modules():  # small weights: before training every word gets about the same logit
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, ids):
        B, T = ids.shape
        x = self.tok(ids) + self.pos(torch.arange(T, device=ids.device))  # (B, T, d_model)
        mask = my_causal_mask(T).to(ids.device)
        for block in self.blocks:
            x = block(x, mask)
        return self.norm(x) @ self.tok.weight.T + self.bias  # (B, T, vocab_size) logits, tied to the embedding


def count_parameters(vocab_size, d_model, n_heads, d_ff, n_layers, max_len):
    attn = 4 * d_model * d_model + 4 * d_model  # W_Q, W_K, W_V, W_O (000 §8.3.5) and their biases
    ffn = 2 * d_model * d_ff + d_ff + d_model  # W_1, W_2 (000 §8.5.4) and their biases
    norms = 2 * (2 * d_model)  # two LayerNorms, each a scale and a shift per feature
    embeddings = vocab_size * d_model + max_len * d_model  # tokens and learned positions
    # n_heads does not appear: splitting d_model into heads adds no parameters
    return embeddings + n_layers * (attn + ffn + norms) + 2 * d_model + vocab_size  # final norm, output bias


@torch.no_grad()
def generate(model, prompt, n_new, max_len):
    ids = prompt.clone()
    for _ in range(n_new):
        logits = model(ids[-max_len:][None])  # one batch row; the model knows at most max_len positions
        next_id = logits[0, -1].argmax()  # the prediction after the LAST token
        ids = torch.cat([ids, next_id[None]])
    return ids
