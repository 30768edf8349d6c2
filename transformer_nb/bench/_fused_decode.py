"""A fused CPU decoding step, for ``python -m transformer_nb.bench kvcache`` only.

Notebook 10 teaches generation through the model's own modules (``generation.generate``: the KV
cache lives in ``MultiHeadAttention.forward(x, cache=...)``). On a CPU a one-token step does so
little arithmetic that calling ~20 small modules per block costs as much as computing. This file
writes the same pre-LN block in plain ``F`` calls on weights gathered once per generation: q, k
and v in one product, RoPE as an in-place complex product with the model's own ``cos``/``sin``
tables (interleaved pairs, ``rope.py``'s layout), and each block's keys and values in one buffer
``(2, B, h, max_len, d_head)``, written with one copy per step. It is the benchmark's yardstick for
what the module calls cost; ``tests/test_lm_fused_decode.py`` checks that it produces exactly the
tokens of ``generate``.
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


def fused_hidden(model: TransformerLM, ids: torch.Tensor, past: int, kv: list, weights: list, rot) -> torch.Tensor:
    """``model.hidden(ids, state)[0]`` for ``ids (B, T)`` at positions ``past .. past + T - 1``.

    ``kv[i]``: block ``i``'s keys and values ``(2, B, h, max_len, d_head)`` (None before the first
    call); ``rot``: RoPE's turns ``cos + i·sin``, ``(max_len, d_head/2)`` complex, or None.
    """
    (b, t), d = ids.shape, model.d_model
    x = model.embed_tokens(ids)
    x = (x if model.pos is None else model.pos(x, offset=past)).view(b * t, d)  # rows: (B·T, d)
    mask = None if t == 1 else torch.ones(t, past + t, dtype=torch.bool).tril(past)
    for i, (h, n1, qkv_w, out_w, n2, act, ff1, gate, ff2) in enumerate(weights):
        qkv = F.linear(torch.layer_norm(x, (d,), *n1), *qkv_w).view(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
        if rot is not None:  # turn q and k (pairs read as complex numbers) to their positions, in place
            torch.view_as_complex(qkv[:2].unflatten(-1, (-1, 2))).mul_(rot[past : past + t])
        if kv[i] is None:
            kv[i] = qkv.new_empty(2, b, h, model.max_len, d // h)
        kv[i][:, :, :, past : past + t] = qkv[1:]  # this step's keys and values: one copy
        k, v = kv[i][:, :, :, : past + t].unbind(0)  # every key and value so far, (B, h, past + T, d_head) each
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
            weights, kv = block_weights(model), [None] * len(model.layers)
            rot = None if model.rope is None else torch.complex(model.rope.cos, model.rope.sin)
            out = torch.empty(prompt.numel() + n_new, dtype=torch.long, device=prompt.device)
            n = prompt.numel()
            out[:n] = prompt
            h = fused_hidden(model, out[None, :n], 0, kv, weights, rot)
            for i in range(n_new):
                out[n] = model.head.greedy(h[:, -1])[0]
                n += 1
                if i < n_new - 1:
                    h = fused_hidden(model, out[None, n - 1 : n], n - 1, kv, weights, rot)
    finally:
        model.train(was_training)
    return out
