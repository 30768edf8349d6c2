"""A stack of blocks (000 §8.5–8.6; 001 §19.5–19.7; 004 §11): ``N`` layers, then a final norm.

Blocks are shape-preserving, so they stack: ``(B, T, d) -> (B, T, d)``. A Pre-LN stack ends
with one more norm (the residual stream itself is never normalised inside the blocks); a
Post-LN stack does not need one (``cfg.final_norm`` decides; default: ``cfg.norm_first``).

- ``Encoder(cfg)``: ``EncoderLayer`` × ``cfg.n_layers``. ``causal=False`` is the bidirectional
  encoder (BERT, the original encoder); ``causal=True`` applies the causal mask in every layer,
  which turns the same stack into a GPT-style decoder-only stack.
- ``Decoder(cfg)``: ``DecoderLayer`` × ``cfg.dec_layers`` (causal self-attention + cross-attention
  to ``memory``).
"""

import torch
import torch.nn as nn

from transformer_nb.core import checks
from transformer_nb.core.block import DecoderLayer, EncoderLayer, make_norm
from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.masks import key_padding


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

    @checks.boundary(checks._built_from_config)
    def __init__(self, cfg: TransformerConfig, causal: bool = False, residual: bool = True):
        super().__init__()
        self.d_model, self.causal = cfg.d_model, causal
        self.layers = nn.ModuleList(EncoderLayer(cfg, residual) for _ in range(cfg.n_layers))
        self.norm = _final_norm(cfg)

    @checks.boundary(checks._encoder)
    def forward(self, x, keep=None, mask=None, rope=None, caches=None):
        if keep is not None:
            pad = key_padding(keep, x.shape[1])  # (B, 1, S, S)
            if mask is None:
                mask = pad
            elif mask.dtype == torch.bool:
                mask = mask & pad
            else:  # an additive float mask: padded keys get -inf on top of it
                mask = torch.where(pad, mask, float("-inf"))
        for layer, cache in zip(self.layers, caches or [None] * len(self.layers)):
            x = layer(x, mask=mask, is_causal=self.causal, rope=rope, cache=cache)
        return self.norm(x)


# --------------------------------------------------------------------------- apart: the encoder-decoder's stack


class Decoder(nn.Module):
    """A stack of ``DecoderLayer(cfg)``: ``(B, T, d), memory (B, S, d) -> (B, T, d)``, with
    ``cfg.dec_layers`` blocks.

    ``forward(x, memory, keep=None, memory_keep=None)``: ``keep`` pads the target (B, T),
    ``memory_keep`` the source (B, S); both bool, True = real token. Always causal.
    """

    @checks.boundary(checks._built_from_config)
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.d_model = cfg.d_model
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.dec_layers))
        self.norm = _final_norm(cfg)

    @checks.boundary(checks._decoder)
    def forward(self, x, memory, keep=None, memory_keep=None):
        t = x.shape[1]
        self_mask = None if keep is None else key_padding(keep, t)
        memory_mask = None if memory_keep is None else key_padding(memory_keep, t)
        for layer in self.layers:
            x = layer(x, memory, self_mask=self_mask, memory_mask=memory_mask)
        return self.norm(x)
