"""A fused CPU decoding step, for ``python -m transformer_nb.bench kvcache`` only.

Notebook 10 teaches generation through the model's own modules (``generation.generate``: the KV
cache lives in ``MultiHeadAttention.forward(x, cache=...)``). On a CPU a one-token step does so
little arithmetic that calling ~20 small modules per block costs as much as computing. This file
writes the same pre-LN block in plain ``F`` calls on weights gathered once per generation (q, k, v
stacked into one product): the benchmark's yardstick for what the module calls cost. It reuses
the model's own RoPE rotation (``rope._turn``, its angles computed once per step), ``multihead.KVCache``,
embedding and output head, and
``tests/test_lm_fused_decode.py`` checks that it produces exactly the tokens of ``generate``.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.generation import no_onednn
from transformer_nb.lm import TransformerLM
from transformer_nb.rope import _turn

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


def fused_hidden(model: TransformerLM, ids: torch.Tensor, state: list, weights: list) -> torch.Tensor:
    """``model.hidden(ids, state)[0]`` for a model with ``positions`` learned, sinusoidal or rope."""
    past, (b, t), d = state[0].length, ids.shape, model.d_model
    pairing = None if model.rope is None else model.rope.pairing
    x = model.embed_tokens(ids)
    x = x if model.pos is None else model.pos(x, offset=past)
    mask = None if t == 1 else torch.ones(t, past + t, dtype=torch.bool).tril(past)
    # RoPE's own rotation (rope._turn), its unit complex numbers computed once for every block and q and k
    turn = None if model.rope is None else model.rope._turns(past, t, x.dtype)
    for cache, (h, n1, qkv_w, out_w, n2, act, ff1, gate, ff2) in zip(state, weights):
        qkv = F.linear(F.layer_norm(x, (d,), *n1[:2], n1[2]), *qkv_w).view(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
        q, k = qkv[:2] if turn is None else _turn(qkv[:2], turn, pairing)  # q and k in one product
        k, v = cache.append(k, qkv[2])
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + F.linear(a.transpose(1, 2).reshape(b, t, d), *out_w)
        y = F.layer_norm(x, (d,), *n2[:2], n2[2])
        z = F.linear(y, *ff1)
        z = F.silu(z) * F.linear(y, *gate) if act == "swiglu" else _ACT[act](z)
        x = x + F.linear(z, *ff2)
    return model.norm(x)


@torch.inference_mode()
def fused_generate(model: TransformerLM, prompt: torch.Tensor, n_new: int) -> torch.Tensor:
    """Greedy ``generate(model, prompt, n_new)`` with the fused step: ``(T0,) -> (T0 + n_new,)``."""
    if model.alibi is not None:
        raise ValueError("the fused step does not take ALiBi models")
    if prompt.numel() + n_new > model.max_len:
        raise ValueError(f"prompt + n_new exceeds max_len={model.max_len}")
    was_training = model.training
    model.eval()
    try:
        with no_onednn(), model.head.lookup_table():
            weights, state = block_weights(model), model.init_state()
            out = torch.empty(prompt.numel() + n_new, dtype=torch.long, device=prompt.device)
            n = prompt.numel()
            out[:n] = prompt
            h = fused_hidden(model, out[None, :n], state, weights)
            for i in range(n_new):
                out[n] = model.head.greedy(h[:, -1])[0]
                n += 1
                if i < n_new - 1:
                    h = fused_hidden(model, out[None, n - 1 : n], state, weights)
    finally:
        model.train(was_training)
    return out
