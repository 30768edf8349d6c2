"""A stack of blocks (000 §8.5–8.6; 001 §19.5–19.7; 004 §11): ``N`` layers, then a final norm.

Blocks are shape-preserving, so they stack: ``(B, T, d) -> (B, T, d)``. A Pre-LN stack ends
with one more norm (the residual stream itself is never normalised inside the blocks); a
Post-LN stack does not need one (``cfg.final_norm`` decides; default: ``cfg.norm_first``).

- ``Encoder(cfg)``: ``EncoderLayer`` × ``cfg.n_layers``. ``causal=False`` is the bidirectional
  encoder (BERT, the original encoder); ``causal=True`` applies the causal mask in every layer,
  which turns the same stack into a GPT-style decoder-only stack.
- ``Decoder(cfg)``: ``DecoderLayer`` × ``cfg.dec_layers`` (causal self-attention + cross-attention
  to ``memory``).

Every model of the package is one of these stacks with embeddings in front and a head
behind: ``transformer.py`` (the one ``Transformer``, all three variants) and ``experiments.py``
(notebook 06's depth and warm-up experiments, which switch the residual connections off with
``residual=False``).
"""

import torch
import torch.nn as nn

from transformer_nb.core.block import DecoderLayer, EncoderLayer, check_decoder_inputs, check_hidden, make_norm
from transformer_nb.core.config import TransformerConfig, check_config
from transformer_nb.core.masks import key_padding
from transformer_nb.core.utils import INNER, check_device, is_int_tensor


def check_keep(keep, b: int, t: int, name: str) -> None:
    """``keep`` must be None or a ``(B, T)`` bool tensor (True = real token) matching the sequence it describes."""
    if keep is None:
        return
    if not isinstance(keep, torch.Tensor):
        raise TypeError(f"{name} must be a (B, T) bool torch.Tensor (True = real token), got {type(keep).__name__}")
    if keep.dtype != torch.bool:
        raise TypeError(
            f"{name} must be a bool mask (True = real token, False = padding), got dtype {keep.dtype}; "
            f"for 0/1 values use {name}.bool()"
        )
    if tuple(keep.shape) != (b, t):
        raise ValueError(
            f"{name} must have the shape (B, T) = ({b}, {t}) of the sequence it describes, got {tuple(keep.shape)}"
        )


def check_ids(ids, name: str = "ids", vocab: int | None = None, min_len: int = 0, device=None) -> None:
    """``ids`` must be a ``(B, T)`` integer tensor with ``T >= min_len`` and, given ``vocab``, ids in ``[0, vocab)``;
    given ``device`` (the model's), on that device (``check_device``).

    The range is checked on the CPU only: elsewhere reading it back would wait for the device at
    every call (and the meta device has no values).
    """
    if not is_int_tensor(ids):
        got = ids.dtype if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise TypeError(
            f"{name} must be an integer tensor of word ids, got {got} "
            "(integer token ids: a torch.Tensor of dtype torch.long)"
        )
    if ids.dim() != 2 or ids.shape[1] < min_len:
        at_least = f" with T >= {min_len}" if min_len else ""
        raise ValueError(f"{name} must have shape (B, T){at_least}, got {tuple(ids.shape)}")
    if device is not None:
        check_device(name, ids, device)
    if vocab is not None and ids.device.type == "cpu" and ids.numel():
        if ids.numel() <= 8:  # a decoding step: a few Python ints are cheaper than a reduction
            vals = ids.reshape(-1).tolist()
            lo, hi = min(vals), max(vals)
        else:
            lo, hi = torch.aminmax(ids)
        if lo < 0 or hi >= vocab:
            raise ValueError(f"{name} must lie in [0, {vocab}), got range [{int(lo)}, {int(hi)}]")


def _final_norm(cfg: TransformerConfig) -> nn.Module:
    """The norm after the last block: by default only a Pre-LN stack has one."""
    return make_norm(cfg) if cfg.has_final_norm else nn.Identity()


class Encoder(nn.Module):
    """A stack of ``EncoderLayer(cfg)``: ``(B, S, d), keep (B, S) -> (B, S, d)``.

    ``causal=True``: every layer also applies the causal mask (the decoder-only stack).
    ``cfg.n_layers`` blocks; ``residual=False`` is for notebook 06's depth experiment only.
    ``forward(x, keep=None, mask=None, rope=None, caches=None)``: ``keep`` is the bool padding mask (True = real
    token); ``mask`` an extra attention mask broadcastable to ``(B, h, S, S)`` (bool, or additive
    float such as ALiBi's bias), combined with the padding; ``rope`` is passed to every attention;
    ``caches``: a ``KVCache`` per layer (``Transformer.hidden`` decodes through them; no padding then).
    """

    def __init__(self, cfg: TransformerConfig, causal: bool = False, residual: bool = True):
        super().__init__()
        self.d_model, self.causal = check_config(cfg).d_model, causal
        self.layers = nn.ModuleList(EncoderLayer(cfg, residual) for _ in range(cfg.n_layers))
        self.norm = _final_norm(cfg)

    def forward(self, x, keep=None, mask=None, rope=None, caches=None):
        if not INNER.depth:  # called by the user (Transformer.hidden checked its own inputs)
            if caches is not None:
                raise ValueError("caches= is for Transformer.hidden(ids, state); call the stack without it")
            check_hidden(x, self.d_model, "the encoder input x", like=self.layers[0].self_attn.q_proj.weight)
            check_keep(keep, x.shape[0], x.shape[1], "keep")
            if mask is not None:
                self.layers[0].self_attn.check_mask(mask, x.shape[0], x.shape[1], x.shape[1])
        if keep is not None:
            pad = key_padding(keep, x.shape[1])  # (B, 1, S, S)
            if mask is None:
                mask = pad
            elif mask.dtype == torch.bool:
                mask = mask & pad
            else:  # an additive float mask: padded keys get -inf on top of it
                mask = torch.where(pad, mask, float("-inf"))
        with INNER:  # the layers trust these checks
            for layer, cache in zip(self.layers, caches or [None] * len(self.layers)):
                x = layer(x, mask=mask, is_causal=self.causal, rope=rope, cache=cache)
            return self.norm(x)


class Decoder(nn.Module):
    """A stack of ``DecoderLayer(cfg)``: ``(B, T, d), memory (B, S, d) -> (B, T, d)``, with
    ``cfg.dec_layers`` blocks.

    ``forward(x, memory, keep=None, memory_keep=None)``: ``keep`` pads the target (B, T),
    ``memory_keep`` the source (B, S); both bool, True = real token. Always causal.
    """

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.d_model = check_config(cfg).d_model
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.dec_layers))
        self.norm = _final_norm(cfg)

    def forward(self, x, memory, keep=None, memory_keep=None):
        check_decoder_inputs(x, memory, self.d_model, self.layers[0].self_attn.q_proj.weight, "decoder")
        check_keep(keep, x.shape[0], x.shape[1], "keep (target padding)")
        check_keep(memory_keep, memory.shape[0], memory.shape[1], "memory_keep (source padding)")
        t = x.shape[1]
        self_mask = None if keep is None else key_padding(keep, t)
        memory_mask = None if memory_keep is None else key_padding(memory_keep, t)
        with INNER:  # the layers trust these checks
            for layer in self.layers:
                x = layer(x, memory, self_mask=self_mask, memory_mask=memory_mask)
            return self.norm(x)
