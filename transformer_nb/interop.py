"""Our modules and PyTorch's built-in Transformer modules, weight for weight (003; 001 §19.11).

| ours                          | PyTorch                                         |
|-------------------------------|-------------------------------------------------|
| ``MultiHeadAttention``        | ``nn.MultiheadAttention`` (packed ``in_proj_weight = [W_q; W_k; W_v]``) |
| ``EncoderLayer``              | ``nn.TransformerEncoderLayer``                  |
| ``DecoderLayer``              | ``nn.TransformerDecoderLayer`` (its ``multihead_attn`` is our ``cross_attn``) |
| ``Encoder`` (also causal)     | ``nn.TransformerEncoder``                       |
| ``Decoder``                   | ``nn.TransformerDecoder``                       |
| ``Transformer``, encoder-decoder (stacks) | ``nn.Transformer`` (no embeddings, no output layer) |

- ``to_torch(ours)``: a new PyTorch module (``batch_first=True``, dropout 0) with our weights;
- ``copy_to_torch(ours, theirs)`` / ``copy_from_torch(ours, theirs)``: copy the weights across.
  Shapes, norm placement, activation, eps and bias settings must match: a ``ValueError`` says
  which differs. Dropout is not copied: compare the two in ``eval()`` mode or with dropout 0.
- Masks: PyTorch's bool masks mean the opposite of ours (**True = may NOT attend**).
  ``to_torch_attn_mask`` converts an attention mask, ``torch_masks`` builds the keyword
  arguments of ``nn.Transformer*`` from our ``keep`` padding masks, ``additive`` turns a bool mask into
  the 0 / -inf float form (that of ``nn.Transformer.generate_square_subsequent_mask``).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.core.masks import causal_mask

# Our class (by its qualified name, so that this module loads none of the model) -> PyTorch's.
PAIRS = {
    "transformer_nb.core.multihead.MultiHeadAttention": nn.MultiheadAttention,
    "transformer_nb.core.block.EncoderLayer": nn.TransformerEncoderLayer,
    "transformer_nb.core.block.DecoderLayer": nn.TransformerDecoderLayer,
    "transformer_nb.core.stack.Encoder": nn.TransformerEncoder,
    "transformer_nb.core.stack.Decoder": nn.TransformerDecoder,
    "transformer_nb.core.transformer.Transformer": nn.Transformer,
}


def _their_class(ours) -> type:
    want = PAIRS.get(f"{type(ours).__module__}.{type(ours).__qualname__}")
    if want is None:
        names = ", ".join(name.rsplit(".", 1)[1] for name in PAIRS)
        raise TypeError(f"expected one of {names}, got {type(ours).__name__}")
    if want is nn.Transformer and ours.decoder is None:
        raise TypeError(
            f"only an encoder-decoder Transformer pairs with nn.Transformer, got arch={ours.cfg.arch!r}; "
            "compare its stack instead: to_torch(model.blocks)"
        )
    return want


def _check_pair(ours, theirs) -> None:
    """``ours`` and ``theirs`` compute the same function once the weights are copied; else a clear error."""
    want = _their_class(ours)
    if not isinstance(theirs, want):
        raise TypeError(f"a {type(ours).__name__} pairs with an nn.{want.__name__}, got {type(theirs).__name__}")
    if want is nn.MultiheadAttention:
        _check_attention(ours, theirs)
    elif want is nn.Transformer:
        _check_whole(ours)
    elif want in (nn.TransformerEncoder, nn.TransformerDecoder):
        _check_stack(ours, theirs)
    else:
        _check_layer(ours, theirs)
    for mine, other in _pairs(ours, theirs)[1]:  # the layers of a stack, the attention of a layer, ...
        _check_pair(mine, other)


# --------------------------------------------------------------------------- compatibility checks


def _check_attention(ours, theirs: nn.MultiheadAttention) -> None:
    if ours.n_kv_heads != ours.n_heads:
        raise ValueError(
            f"nn.MultiheadAttention has no shared key/value heads; this module has "
            f"n_kv_heads={ours.n_kv_heads} < n_heads={ours.n_heads} (GQA/MQA)"
        )
    if (theirs.embed_dim, theirs.num_heads) != (ours.d_model, ours.n_heads):
        raise ValueError(
            f"shapes differ: nn.MultiheadAttention(embed_dim={theirs.embed_dim}, num_heads={theirs.num_heads}) "
            f"vs MultiHeadAttention(d_model={ours.d_model}, n_heads={ours.n_heads})"
        )
    if not theirs._qkv_same_embed_dim or theirs.bias_k is not None:
        raise ValueError(
            "only nn.MultiheadAttention with kdim = vdim = embed_dim and add_bias_kv=False "
            "has the same parameters as MultiHeadAttention"
        )
    if (theirs.in_proj_bias is not None) != (ours.q_proj.bias is not None):
        raise ValueError(
            f"bias settings differ: nn.MultiheadAttention bias={theirs.in_proj_bias is not None}, "
            f"MultiHeadAttention bias={ours.q_proj.bias is not None}"
        )


def _torch_activation(theirs) -> str:
    act = theirs.activation
    if act is F.relu or isinstance(act, nn.ReLU):
        return "relu"
    if act is F.gelu or (isinstance(act, nn.GELU) and act.approximate == "none"):
        return "gelu"
    raise ValueError(
        f"{type(theirs).__name__} uses activation {act!r}; only relu and (exact) gelu have a counterpart in FeedForward"
    )


def _check_layer(ours, theirs) -> None:
    if isinstance(theirs, nn.TransformerEncoderLayer) and not ours.residual:
        raise ValueError("this layer has residual=False; torch's layers always add the residual")
    if ours.norm_first != theirs.norm_first:
        raise ValueError(
            f"norm placement differs: ours norm_first={ours.norm_first}, torch norm_first={theirs.norm_first}"
        )
    if ours.ff.activation != _torch_activation(theirs):
        raise ValueError(f"activation differs: ours {ours.ff.activation!r}, torch {_torch_activation(theirs)!r}")
    if not isinstance(ours.norm1, nn.LayerNorm):
        raise ValueError("torch's Transformer layers use LayerNorm; this layer uses RMSNorm")
    if ours.norm1.eps != theirs.norm1.eps:
        raise ValueError(f"LayerNorm eps differs: ours {ours.norm1.eps}, torch {theirs.norm1.eps}")
    if ours.ff.linear1.weight.shape != theirs.linear1.weight.shape:
        raise ValueError(
            f"FFN shapes differ: ours linear1 {tuple(ours.ff.linear1.weight.shape)}, "
            f"torch linear1 {tuple(theirs.linear1.weight.shape)}"
        )
    if (ours.ff.linear1.bias is None) != (theirs.linear1.bias is None):
        raise ValueError("bias settings differ between the two layers")


def _check_stack(ours, theirs) -> None:
    kind = type(theirs).__name__
    if len(ours.layers) != len(theirs.layers):
        raise ValueError(f"layer counts differ: ours has {len(ours.layers)}, torch's {kind} has {len(theirs.layers)}")
    has_norm = not isinstance(ours.norm, nn.Identity)
    if has_norm != (theirs.norm is not None):
        raise ValueError(
            f"final norms differ: ours {'has' if has_norm else 'has no'} final LayerNorm, torch's "
            f"{kind} {'has' if theirs.norm is not None else 'has none'}"
        )
    if has_norm and not isinstance(ours.norm, nn.LayerNorm):
        raise ValueError("torch's stacks end with a LayerNorm; this stack ends with an RMSNorm")


def _check_whole(ours) -> None:
    if isinstance(ours.blocks.norm, nn.Identity) or isinstance(ours.decoder.norm, nn.Identity):
        raise ValueError(
            "nn.Transformer always applies a final LayerNorm after each stack; this Post-LN model "
            "(norm_first=False) has none, so no nn.Transformer computes the same function. "
            "Compare the stacks with to_torch(model.blocks) / to_torch(model.decoder) instead"
        )


# --------------------------------------------------------------------------- copying


def _pairs(ours, theirs) -> tuple[list, list]:
    """``([(our tensor, torch's tensor), ...], [(our submodule, torch's), ...])``: the tensors that hold the same
    numbers, and the sub-pairs to copy recursively. Attention: torch packs ``[W_q; W_k; W_v]`` into one
    ``in_proj_weight``; its ``chunk(3)`` views are the three."""
    if isinstance(theirs, nn.MultiheadAttention):
        projs, out = (ours.q_proj, ours.k_proj, ours.v_proj), (ours.out_proj, theirs.out_proj)
        pairs = [*zip([p.weight for p in projs], theirs.in_proj_weight.chunk(3)), (out[0].weight, out[1].weight)]
        if theirs.in_proj_bias is not None:
            pairs += [*zip([p.bias for p in projs], theirs.in_proj_bias.chunk(3)), (out[0].bias, out[1].bias)]
        return pairs, []
    if isinstance(theirs, nn.Transformer):
        return [], [(ours.blocks, theirs.encoder), (ours.decoder, theirs.decoder)]
    if isinstance(theirs, (nn.TransformerEncoder, nn.TransformerDecoder)):
        mods = [] if isinstance(ours.norm, nn.Identity) else [(ours.norm, theirs.norm)]  # a stack's final norm
        subs = list(zip(ours.layers, theirs.layers))
    else:  # a layer
        mods = [(ours.ff.linear1, theirs.linear1), (ours.ff.linear2, theirs.linear2)]
        mods += [
            (getattr(ours, f"norm{i}"), getattr(theirs, f"norm{i}")) for i in (1, 2, 3) if hasattr(ours, f"norm{i}")
        ]
        subs = [(ours.self_attn, theirs.self_attn)]
        subs += [(ours.cross_attn, theirs.multihead_attn)] if isinstance(theirs, nn.TransformerDecoderLayer) else []
    return [(a.weight, b.weight) for a, b in mods] + [(a.bias, b.bias) for a, b in mods if a.bias is not None], subs


@torch.no_grad()
def _copy(ours, theirs, to_torch_side: bool) -> None:
    pairs, subs = _pairs(ours, theirs)
    for mine, other in subs:
        _copy(mine, other, to_torch_side)
    for mine, other in pairs:
        (other if to_torch_side else mine).copy_(mine if to_torch_side else other)


def copy_to_torch(ours, theirs):
    """Copy our weights into the PyTorch module ``theirs`` (see the table above) and return ``theirs``."""
    _check_pair(ours, theirs)
    _copy(ours, theirs, to_torch_side=True)
    return theirs


def copy_from_torch(ours, theirs):
    """Copy the PyTorch module ``theirs``' weights into ``ours`` and return ``ours`` (inverse of ``copy_to_torch``)."""
    _check_pair(ours, theirs)
    _copy(ours, theirs, to_torch_side=False)
    return ours


# --------------------------------------------------------------------------- building the PyTorch twin


def _build(ours):
    """A fresh PyTorch module shaped like ``ours`` (dropout 0, ``batch_first=True``), weights not yet copied."""
    want = _their_class(ours)
    if want is nn.MultiheadAttention:
        w = ours.q_proj.weight
        bias = ours.q_proj.bias is not None
        return nn.MultiheadAttention(
            ours.d_model, ours.n_heads, bias=bias, batch_first=True, device=w.device, dtype=w.dtype
        )
    if want in (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer):
        if ours.ff.activation == "swiglu":
            raise ValueError("torch's Transformer layers have no SwiGLU feed-forward")
        w = ours.ff.linear1.weight  # an RMSNorm layer is refused by the check that follows the build
        return want(
            ours.self_attn.d_model,
            ours.self_attn.n_heads,
            dim_feedforward=w.shape[0],
            dropout=0.0,
            activation=ours.ff.activation,
            layer_norm_eps=ours.norm1.eps,
            batch_first=True,
            norm_first=ours.norm_first,
            bias=ours.ff.linear1.bias is not None,
            device=w.device,
            dtype=w.dtype,
        )
    if want in (nn.TransformerEncoder, nn.TransformerDecoder):
        layers, norm = [_build(layer) for layer in ours.layers], None
        if not isinstance(ours.norm, nn.Identity):  # an RMSNorm is refused by the check that follows the build
            w = ours.norm.weight
            norm = nn.LayerNorm(ours.norm.normalized_shape, eps=ours.norm.eps, device=w.device, dtype=w.dtype)
        if want is nn.TransformerEncoder:
            theirs = nn.TransformerEncoder(layers[0], len(layers), norm=norm, enable_nested_tensor=False)
        else:
            theirs = nn.TransformerDecoder(layers[0], len(layers), norm=norm)
        theirs.layers = nn.ModuleList(layers)  # one module per layer, not torch's deep copies of layers[0]
        return theirs
    _check_whole(ours)
    enc, dec = _build(ours.blocks), _build(ours.decoder)
    attn = enc.layers[0].self_attn  # nn.Transformer re-initialises the custom stacks: to_torch copies afterwards
    return nn.Transformer(attn.embed_dim, attn.num_heads, custom_encoder=enc, custom_decoder=dec, batch_first=True)


def to_torch(ours):
    """A new PyTorch module (``batch_first=True``, dropout 0) holding ``ours``' weights, in ``ours``' train/eval mode.

    ``MultiHeadAttention`` -> ``nn.MultiheadAttention``; ``EncoderLayer`` / ``DecoderLayer`` ->
    ``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer``; ``Encoder`` / ``Decoder`` ->
    ``nn.TransformerEncoder`` / ``nn.TransformerDecoder`` (call a causal ``Encoder``'s twin with
    ``mask=~causal_mask(T), is_causal=True``); an encoder-decoder ``Transformer`` -> ``nn.Transformer`` holding the
    two stacks (only a Pre-LN model has one: ``nn.Transformer`` always ends each stack with a norm).
    """
    return copy_to_torch(ours, _build(ours)).train(ours.training)


# --------------------------------------------------------------------------- masks in torch's polarity


def additive(mask: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    """Bool mask -> float mask of ``dtype`` (a floating dtype): 0 where True (attend), -inf where False (blocked)."""
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        what = f"dtype {mask.dtype}" if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise TypeError(f"additive() expects a bool mask (True = may attend), got {what}")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"additive(): dtype must be a floating torch.dtype (it holds -inf), got {dtype!r}")
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask, float("-inf"))


def to_torch_attn_mask(mask: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Our attention mask -> ``nn.MultiheadAttention``'s ``attn_mask``.

    Ours: bool **True = may attend** (or additive float), broadcastable to ``(B, h, T_q, T_k)``.
    Torch's ``attn_mask``: ``(T_q, T_k)`` or ``(B·h, T_q, T_k)``, bool **True = may NOT attend**
    (float masks are additive in both). A ``(B, T_k)`` key-padding mask is passed to torch
    separately as ``key_padding_mask=~keep`` (True = padding, ignore).
    """
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"mask must be a torch.Tensor, got {type(mask).__name__}")
    if mask.dtype != torch.bool and not mask.is_floating_point():
        raise TypeError(f"mask must be bool (True = may attend) or an additive float mask, got dtype {mask.dtype}")
    if isinstance(n_heads, bool) or not isinstance(n_heads, int) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive integer, got {n_heads!r}")
    flip = (lambda m: ~m) if mask.dtype == torch.bool else (lambda m: m)
    if mask.dim() == 2:
        return flip(mask)
    if mask.dim() != 4:
        raise ValueError(f"mask must be (T_q, T_k) or (B, h or 1, T_q, T_k), got {tuple(mask.shape)}")
    b, h, t_q, t_k = mask.shape
    if h not in (1, n_heads):
        raise ValueError(f"mask has {h} heads; expected 1 or n_heads={n_heads}")
    return flip(mask.expand(b, n_heads, t_q, t_k).reshape(b * n_heads, t_q, t_k))


def torch_masks(src_keep=None, tgt_keep=None, t: int | None = None) -> dict:
    """Our masks in the keyword arguments of ``nn.Transformer*`` (bool, **True = blocked**).

    ``src_keep``/``tgt_keep``: ``(B, S)``/``(B, T)`` bool, True at real tokens; ``t``: the target
    length for the causal ``tgt_mask`` (defaults to ``tgt_keep``'s length).
    """
    for name, keep in (("src_keep", src_keep), ("tgt_keep", tgt_keep)):
        if keep is not None and (not isinstance(keep, torch.Tensor) or keep.dtype != torch.bool or keep.dim() != 2):
            what = f"{keep.dtype} {tuple(keep.shape)}" if isinstance(keep, torch.Tensor) else type(keep).__name__
            raise TypeError(f"{name} must be a (B, T) bool tensor (True = real token), got {what}")
    out = {}
    if src_keep is not None:
        out["src_key_padding_mask"] = ~src_keep
        out["memory_key_padding_mask"] = ~src_keep
    if tgt_keep is not None:
        out["tgt_key_padding_mask"] = ~tgt_keep
        t = tgt_keep.shape[1] if t is None else t
    if t is not None:
        device = tgt_keep.device if tgt_keep is not None else None
        out["tgt_mask"] = ~causal_mask(t, device=device)
        out["tgt_is_causal"] = True
    return out
