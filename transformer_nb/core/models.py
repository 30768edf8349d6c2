"""The three architecture variants from the same blocks (000 §8.6; 001 §19.7–19.8, §19.11; 003; 004 §12–14).

Only the masks and the presence of cross-attention differ:

| variant         | blocks                      | self-attention mask            | cross-attention  |
|-----------------|-----------------------------|--------------------------------|------------------|
| encoder-only    | ``EncoderLayer``            | padding                        | no               |
| decoder-only    | ``EncoderLayer``, causal    | causal (+ padding)             | no               |
| encoder–decoder | ``EncoderLayer`` + ``DecoderLayer`` | enc: padding; dec: causal + padding | dec → enc |

A GPT block *is* an encoder block run with ``is_causal=True``: the decoder-only ``Transformer``
uses ``Encoder(cfg, causal=True)``. ``DecoderLayer`` (with cross-attention) is used only by the
encoder–decoder. The stacks ``Encoder`` and ``Decoder`` live in ``stack.py``; this module adds
the embeddings in front and the heads behind. The encoder-only model is ``Transformer(arch="encoder")``.

Elsewhere: the three training objectives in ``objectives.py``, the masks and shapes each
sublayer really used in ``probes.py``, the parameter groups in ``params.numel_breakdown``, and
``nn.Transformer`` twins in ``interop.py``.
"""

import torch
import torch.nn as nn

from transformer_nb.core.positional import SinusoidalPositionalEncoding, embedding_scale
from transformer_nb.core.stack import Decoder, Encoder, check_ids, check_keep
from transformer_nb.core.transformer import Transformer, TransformerConfig
from transformer_nb.core.utils import as_int

__all__ = ["Decoder", "Embedder", "Encoder", "EncoderDecoder", "Transformer", "TransformerConfig"]


class Embedder(nn.Module):
    """Token embedding × sqrt(d_model) plus sinusoidal positions: ``(B, T) ids -> (B, T, d)``."""

    def __init__(self, vocab_size: int, d_model: int, max_len: int, dropout: float = 0.0, pad_id: int | None = None):
        super().__init__()
        for name, v in (("vocab_size", vocab_size), ("d_model", d_model), ("max_len", max_len)):
            as_int(name, v, 1)
        if pad_id is not None and (
            isinstance(pad_id, bool) or not isinstance(pad_id, int) or not 0 <= pad_id < vocab_size
        ):
            raise ValueError(f"pad_id must be None or an id in [0, vocab_size={vocab_size}), got {pad_id!r}")
        self.vocab_size = vocab_size
        self.tok = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        self.pos = SinusoidalPositionalEncoding(d_model, max_len)
        self.scale = embedding_scale(d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        check_ids(ids, "token ids", self.vocab_size, device=self.tok.weight.device)
        return self.drop(self.pos(self.tok(ids) * self.scale))


# --------------------------------------------------------------------------- the sequence-to-sequence model


class EncoderDecoder(nn.Module):
    """The original Transformer for sequence-to-sequence tasks.

    - ``encode(src (B, S), src_keep (B, S) | None) -> memory (B, S, d)``
    - ``decode(tgt_in (B, T), memory, src_keep, tgt_keep) -> logits (B, T, tgt_vocab)``
    - ``forward(src, tgt_in, src_keep=None, tgt_keep=None) -> logits``
    ``*_keep`` are bool padding masks, True at real tokens.
    ``tie_weights``: the output projection shares the target embedding's ``(V, d)`` matrix
    (saves ``|V|·d`` parameters; 001 §19.8.3). ``share_embeddings``: source and target use one
    embedding table (needs ``src_vocab == tgt_vocab``; the original paper shares all three).
    """

    def __init__(
        self,
        src_vocab: int,
        tgt_vocab: int,
        d_model: int = 64,
        n_heads: int = 4,
        n_enc_layers: int = 2,
        n_dec_layers: int = 2,
        d_ff: int = 256,
        dropout: float = 0.0,
        max_len: int = 256,
        norm_first: bool = True,
        pad_id: int | None = 0,
        activation: str = TransformerConfig.activation,
        tie_weights: bool = False,
        share_embeddings: bool = False,
    ):
        super().__init__()
        self.src_embed = Embedder(src_vocab, d_model, max_len, dropout, pad_id)
        self.tgt_embed = Embedder(tgt_vocab, d_model, max_len, dropout, pad_id)
        cfg = TransformerConfig(
            arch="encoder-decoder",
            d_model=d_model,
            n_heads=n_heads,
            n_layers=n_enc_layers,
            n_dec_layers=n_dec_layers,
            d_ff=d_ff,
            vocab=src_vocab,
            tgt_vocab=tgt_vocab,
            activation=activation,
            max_len=max_len,
            dropout=dropout,
            norm_first=norm_first,
            share_embeddings=share_embeddings,
        )
        if share_embeddings:
            self.tgt_embed.tok.weight = self.src_embed.tok.weight
        self.encoder, self.decoder = Encoder(cfg), Decoder(cfg)
        self.generator = nn.Linear(d_model, tgt_vocab)
        if tie_weights:
            self.generator.weight = self.tgt_embed.tok.weight

    def encode(self, src, src_keep=None):
        if isinstance(src, torch.Tensor) and src.dim() == 2:
            check_keep(src_keep, src.shape[0], src.shape[1], "src_keep")
        return self.encoder(self.src_embed(src), src_keep)

    def decode(self, tgt_in, memory, src_keep=None, tgt_keep=None):
        if isinstance(tgt_in, torch.Tensor) and tgt_in.dim() == 2:
            check_keep(tgt_keep, tgt_in.shape[0], tgt_in.shape[1], "tgt_keep")
        if isinstance(memory, torch.Tensor) and memory.dim() == 3:
            check_keep(src_keep, memory.shape[0], memory.shape[1], "src_keep")
        return self.generator(self.decoder(self.tgt_embed(tgt_in), memory, tgt_keep, src_keep))

    def forward(self, src, tgt_in, src_keep=None, tgt_keep=None):
        return self.decode(tgt_in, self.encode(src, src_keep), src_keep, tgt_keep)
