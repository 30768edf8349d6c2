"""A fused CPU decoding step, for ``python -m transformer_nb.bench kvcache`` only.

Notebook 10 teaches generation through the model's own modules (``generation.generate``: the KV
cache lives in ``MultiHeadAttention.forward(x, cache=...)``). On a CPU a one-token step does so
little arithmetic that calling ~20 small modules per block costs as much as computing. This file
writes the same pre-LN block in plain ``F`` calls on weights gathered once per generation (q, k
and v in one product), with the package's ``multihead.KVCache``, embedding and output head, and
RoPE's unit complex numbers for every position taken once from ``RoPE._turns``. One piece is
written again for speed: the rotation itself, an in-place complex product on q and k (what
``rope._turn`` computes, for the interleaved pairs ``TransformerLM`` uses; ``_turn`` allocates a
new tensor, and with it the step took 0.105 s against 0.090 s for 256 tokens: medians of 20
alternated rounds on 2 CPU cores, in-place faster in 17). It is the
benchmark's yardstick for what the module calls cost; ``tests/test_lm_fused_decode.py`` checks
that it produces exactly the tokens of ``generate`` and the hidden states of ``hidden``.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.generation import no_onednn
from transformer_nb.lm import TransformerLM

_ACT = {"relu": F.relu, "gelu": F.gelu}


def block_weights(model: TransformerLM) -> list:
    """Per block: its weights as plain tensors, q, k and v stacked into one ``(3d, d)`` matrix."""
    out = []
    for layer in model.layers:
        a, ff = layer.self_attn, layer.ff
        if not (layer.norm_first and isinstance(layer.norm1, nn.LayerNorm) and a.n_kv_heads == a.n_heads):
            raise ValueError("the fused step is written for pre-LN LayerNorm blocks with one K/V head per query head")
        stack = None if a.q_proj.bias is None else torch.cat([a.q_proj.bias, a.k_proj.bias, a.v_proj.bias])
        out.append(
            (
                a.n_heads,
                (layer.norm1.weight, layer.norm1.bias, layer.norm1.eps),
                (torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]), stack),
                (a.out_proj.weight, a.out_proj.bias),
                (layer.norm2.weight, layer.norm2.bias, layer.norm2.eps),
                ff.activation,
                (ff.linear1.weight, ff.linear1.bias),
                None if ff.gate is None else (ff.gate.weight, ff.gate.bias),
                (ff.linear2.weight, ff.linear2.bias),
            )
        )
    return out


def fused_hidden(model: TransformerLM, ids: torch.Tensor, state: list, weights: list, turns) -> torch.Tensor:
    """``model.hidden(ids, state)[0]`` for ``ids (B, T)``; ``state``: ``model.init_state()``'s caches;
    ``turns``: RoPE's ``cos + i·sin`` for every position, ``(max_len, d_head/2)`` complex, or None."""
    past, (b, t), d = state[0].length, ids.shape, model.d_model
    x = model.embed_tokens(ids)
    x = (x if model.pos is None else model.pos(x, offset=past)).view(b * t, d)  # rows: (B·T, d)
    mask = None if t == 1 else torch.ones(t, past + t, dtype=torch.bool).tril(past)
    for cache, (h, n1, qkv_w, out_w, n2, act, ff1, gate, ff2) in zip(state, weights):
        qkv = F.linear(torch.layer_norm(x, (d,), *n1), *qkv_w).view(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
        if turns is not None:  # turn q and k (pairs read as complex numbers) to their positions, in place
            torch.view_as_complex(qkv[:2].unflatten(-1, (-1, 2))).mul_(turns[past : past + t])
        k, v = cache.append(qkv[1], qkv[2])  # every key and value so far, (B, h, past + T, d_head) each
        a = F.scaled_dot_product_attention(qkv[0], k, v, attn_mask=mask)
        x = x + F.linear(a.transpose(1, 2).reshape(b * t, d), *out_w)
        y = torch.layer_norm(x, (d,), *n2)
        z = F.linear(y, *ff1)
        z = F.silu(z) * F.linear(y, *gate) if act == "swiglu" else _ACT[act](z)
        x = x + F.linear(z, *ff2)
    return torch.layer_norm(x, (d,), model.norm.weight, model.norm.bias, model.norm.eps).view(b, t, d)


@torch.inference_mode()
def fused_generate(model: TransformerLM, prompt: torch.Tensor, n_new: int) -> torch.Tensor:
    """Greedy ``generate(model, prompt, n_new)`` with the fused step: ``(T0,) -> (T0 + n_new,)``."""
    if model.alibi is not None:
        raise ValueError("the fused step does not take ALiBi models")
    if model.rope is not None and model.rope.pairing != "interleaved":
        raise ValueError("the fused step turns interleaved RoPE pairs only")
    if prompt.numel() + n_new > model.max_len:
        raise ValueError(f"prompt + n_new exceeds max_len={model.max_len}")
    was_training = model.training
    model.eval()
    try:
        with no_onednn(), model.head.lookup_table():
            weights, state = block_weights(model), model.init_state()
            turns = None if model.rope is None else model.rope._turns(0, model.max_len, model.rope.cos.dtype)
            out = torch.empty(prompt.numel() + n_new, dtype=torch.long, device=prompt.device)
            n = prompt.numel()
            out[:n] = prompt
            h = fused_hidden(model, out[None, :n], state, weights, turns)
            for i in range(n_new):
                out[n] = model.head.greedy(h[:, -1])[0]
                n += 1
                if i < n_new - 1:
                    h = fused_hidden(model, out[None, n - 1 : n], state, weights, turns)
    finally:
        model.train(was_training)
    return out
