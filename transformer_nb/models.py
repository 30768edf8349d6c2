"""The three architecture variants from the same blocks (000 §8.6; 001 §19.7–19.8; 004 §12–14).

Only the masks and the presence of cross-attention differ:

| variant          | self-attention mask     | cross-attention |
|------------------|-------------------------|-----------------|
| encoder-only     | padding                 | no              |
| decoder-only     | causal (+ padding)      | no              |
| encoder–decoder  | enc: padding; dec: causal + padding | dec → enc, source padding |
"""
import torch
import torch.nn as nn

from transformer_nb.block import DecoderLayer, EncoderLayer, make_norm
from transformer_nb.masks import cross_attention_mask, key_padding
from transformer_nb.positional import SinusoidalPositionalEncoding, embedding_scale


class Embedder(nn.Module):
    """Token embedding × sqrt(d_model) plus sinusoidal positions: ``(B, T) ids -> (B, T, d)``."""

    def __init__(self, vocab_size: int, d_model: int, max_len: int, dropout: float = 0.0, pad_id: int | None = None):
        super().__init__()
        self.vocab_size = vocab_size
        self.tok = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        self.pos = SinusoidalPositionalEncoding(d_model, max_len)
        self.scale = embedding_scale(d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if ids.dim() != 2:
            raise ValueError(f"token ids must have shape (B, T), got {tuple(ids.shape)}")
        if ids.numel() and (ids.min() < 0 or ids.max() >= self.vocab_size):
            raise ValueError(f"token ids must lie in [0, {self.vocab_size}), got range "
                             f"[{int(ids.min())}, {int(ids.max())}]")
        return self.drop(self.pos(self.tok(ids) * self.scale))


class Encoder(nn.Module):
    """A stack of (non-causal) ``EncoderLayer``: ``(B, S, d), keep (B, S) -> (B, S, d)``."""

    def __init__(self, d_model, n_heads, d_ff, n_layers, dropout=0.0, norm_first=True, activation="relu"):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, n_heads, d_ff, dropout, norm_first, activation)
                                    for _ in range(n_layers))
        self.norm = make_norm("layer", d_model) if norm_first else nn.Identity()

    def forward(self, x, keep=None):
        mask = None if keep is None else key_padding(keep, x.shape[1])
        for layer in self.layers:
            x = layer(x, mask=mask)
        return self.norm(x)


class Decoder(nn.Module):
    """A stack of ``DecoderLayer``: ``(B, T, d), memory (B, S, d) -> (B, T, d)``."""

    def __init__(self, d_model, n_heads, d_ff, n_layers, dropout=0.0, norm_first=True, activation="relu"):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(d_model, n_heads, d_ff, dropout, norm_first, activation)
                                    for _ in range(n_layers))
        self.norm = make_norm("layer", d_model) if norm_first else nn.Identity()

    def forward(self, x, memory, keep=None, memory_keep=None):
        t = x.shape[1]
        self_mask = None if keep is None else key_padding(keep, t)
        memory_mask = None if memory_keep is None else cross_attention_mask(memory_keep, t)
        for layer in self.layers:
            x = layer(x, memory, self_mask=self_mask, memory_mask=memory_mask)
        return self.norm(x)


class EncoderDecoder(nn.Module):
    """The original Transformer for sequence-to-sequence tasks.

    - ``encode(src (B, S), src_keep (B, S) | None) -> memory (B, S, d)``
    - ``decode(tgt_in (B, T), memory, src_keep, tgt_keep) -> logits (B, T, tgt_vocab)``
    - ``forward(src, tgt_in, src_keep=None, tgt_keep=None) -> logits``
    ``*_keep`` are bool padding masks, True at real tokens.
    """

    def __init__(self, src_vocab: int, tgt_vocab: int, d_model: int = 64, n_heads: int = 4,
                 n_enc_layers: int = 2, n_dec_layers: int = 2, d_ff: int = 256, dropout: float = 0.0,
                 max_len: int = 256, norm_first: bool = True, pad_id: int | None = 0, activation: str = "relu"):
        super().__init__()
        self.src_embed = Embedder(src_vocab, d_model, max_len, dropout, pad_id)
        self.tgt_embed = Embedder(tgt_vocab, d_model, max_len, dropout, pad_id)
        self.encoder = Encoder(d_model, n_heads, d_ff, n_enc_layers, dropout, norm_first, activation)
        self.decoder = Decoder(d_model, n_heads, d_ff, n_dec_layers, dropout, norm_first, activation)
        self.generator = nn.Linear(d_model, tgt_vocab)

    def encode(self, src, src_keep=None):
        return self.encoder(self.src_embed(src), src_keep)

    def decode(self, tgt_in, memory, src_keep=None, tgt_keep=None):
        return self.generator(self.decoder(self.tgt_embed(tgt_in), memory, tgt_keep, src_keep))

    def forward(self, src, tgt_in, src_keep=None, tgt_keep=None):
        return self.decode(tgt_in, self.encode(src, src_keep), src_keep, tgt_keep)
