"""One Transformer from one configuration (000 §8.5–8.6; 001 §19.7–19.8, §19.11; 002; 004 §12–14).

``Transformer(cfg)`` builds the variant ``cfg.arch`` names from the same blocks: ``"decoder"`` (GPT) is the
encoder stack run causally, a language model; ``"encoder"`` (BERT) the same stack, bidirectional;
``"encoder-decoder"`` (the original) adds a decoder stack that attends to it (``encode(src)`` gives the
memory, ``decode(tgt, memory)`` the target's logits). A GPT block *is* an encoder block run causally.

The contract, as in nanoGPT: ``forward(ids (B, T), targets (B, T) | None) -> (logits, loss)``, logits
``(B, T, V)`` (log-probabilities for an adaptive head; ``None`` when it is given targets). Generation feeds
one token at a time through ``hidden(ids, state)``, ``state`` a ``KVCache`` per block.
``LanguageModel`` is what a language model shares with the LSTM baseline of ``lstm.py``.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.core import checks
from transformer_nb.core.block import _dropped, make_norm
from transformer_nb.core.config import T5_BUCKETS, TransformerConfig
from transformer_nb.core.multihead import KVCache
from transformer_nb.core.output_head import OutputHead
from transformer_nb.core.positional import ALiBi, LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from transformer_nb.core.rope import RoPE
from transformer_nb.core.stack import Decoder, Encoder


class LanguageModel(nn.Module):
    """What a language model shares: the output ``head``, the loss and the checks of its inputs.

    A subclass sets ``head`` (an ``OutputHead``), ``tok`` (the token table, or None when the head
    provides it) and ``vocab_size``, and defines ``hidden(ids, state=None) -> (h (B, T, d), state)``.
    """

    max_len: int | None = None  # the longest context the model takes (None: no limit)
    recurrent: bool = False  # whether ``forward`` carries a ``state`` from one window to the next

    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        """``(B, T) -> (B, T, d)`` token embeddings (the head's table when it is tied)."""
        return self.head.embed(ids) if self.tok is None else self.tok(ids)

    def init_state(self):
        """The state a generation starts from (``None``: start fresh)."""
        return None

    @checks.boundary(checks._lm_forward)
    def forward(self, ids: torch.Tensor, targets: torch.Tensor | None = None, state=None):
        """``(logits, loss)`` for ``ids (B, T)`` (see the module doc); ``state`` carries a recurrent
        model's state across calls (``init_state()``, updated in place)."""
        return self._output(self.hidden(ids, state)[0], targets)

    def _output(self, h: torch.Tensor, targets):
        """Hidden states ``(B, T, d)`` -> ``(logits, loss)``."""
        if targets is None:
            scores = self.head.log_probs if self.head.adaptive else self.head.logits
            out = scores(h.reshape(-1, h.shape[-1]))
            return out.view(*h.shape[:-1], out.shape[-1]), None
        if self.head.adaptive:
            return None, self.head.nll(h.reshape(-1, h.shape[-1]), targets.reshape(-1)).mean()
        logits = self.head.logits(h)
        return logits, F.cross_entropy(logits.flatten(0, 1).float(), targets.reshape(-1))

    @checks.boundary(checks._nll)
    def nll(self, ids: torch.Tensor, targets: torch.Tensor, state=None, reduction: str = "mean"):
        """``(nll, state)``: NLL of ``targets (B, T)`` given ``ids (B, T)``, float32; ``"mean"``, ``"sum"``
        or ``"none"`` (``(B, T)``). For evaluation, which sums per-token losses over a whole text."""
        h, state = self.hidden(ids, state)
        out = self.head.nll(h.reshape(-1, h.shape[-1]), targets.reshape(-1))
        if reduction == "none":
            return out.view(targets.shape), state
        return (out.sum() if reduction == "sum" else out.mean()), state

    @checks.boundary(checks._model_inputs)
    def log_probs(self, ids: torch.Tensor) -> torch.Tensor:
        """``(B, T) -> (B, T, V)`` next-word log-probabilities at every position."""
        h, _ = self.hidden(ids)
        return self.head.log_probs(h.reshape(-1, h.shape[-1])).view(*ids.shape, -1)


class RelativeBiasTable(nn.Module):
    """T5's relative-position bias table: ``(32 buckets, n_heads)`` learned scalars (counted only)."""

    @checks.boundary(checks._alibi_init)
    def __init__(self, n_heads: int):
        super().__init__()
        self.table = nn.Embedding(T5_BUCKETS, n_heads)


class Transformer(LanguageModel):
    """The Transformer that ``cfg`` describes (``Transformer(cfg)``, or ``Transformer(**fields)``).

    Parts: the output ``head`` (first: a tied head's table is the token table), ``tok`` / ``tgt_tok``,
    positions (``pos`` / ``tgt_pos``, ``rope`` or ``alibi``), the ``blocks`` (an ``Encoder``, causal for
    ``"decoder"``) and the encoder-decoder's ``decoder``. Weights start GPT-2 style: N(0, 0.02), zero
    biases. ``ranks`` (``output_head.frequency_ranks``) orders an adaptive head's words.
    """

    @checks.boundary(checks._transformer_init)
    def __init__(self, cfg: TransformerConfig | None = None, ranks: torch.Tensor | None = None, **fields):
        super().__init__()
        self.cfg = cfg = TransformerConfig(**fields) if cfg is None else replace(cfg, **fields)
        d, enc_dec = cfg.d_model, cfg.arch == "encoder-decoder"
        self.vocab_size, self.d_model, self.max_len = cfg.vocab, d, cfg.max_len
        self.head = None
        if cfg.lm_head:
            self.head = OutputHead(cfg.head, d, cfg.target_vocab, ranks, cfg.cutoffs, cfg.div_value, cfg.output_bias)
        self.head_table = self.head is not None and self.head.embeds  # the head holds the (target) table
        source_in_head = self.head_table and (cfg.share_embeddings or not enc_dec)
        self.tok = None if source_in_head else nn.Embedding(cfg.vocab, d, padding_idx=cfg.pad_id)
        own_target = enc_dec and not cfg.share_embeddings and not self.head_table
        self.tgt_tok = nn.Embedding(cfg.target_vocab, d, padding_idx=cfg.pad_id) if own_target else None
        self.scale = math.sqrt(d) if cfg.scale_embeddings else None  # the original Transformer's factor
        self.token_type = nn.Embedding(cfg.token_types, d) if cfg.token_types else None
        self.pos = self._positions()
        self.tgt_pos = self._positions() if enc_dec else None
        self.embed_norm = make_norm(cfg) if cfg.embed_norm else None
        self.rope = RoPE(d // cfg.n_heads, cfg.max_len) if cfg.positions == "rope" else None
        self.alibi = ALiBi(cfg.n_heads) if cfg.positions == "alibi" else None
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = Encoder(cfg, causal=cfg.arch == "decoder")
        self.decoder = Decoder(cfg) if enc_dec else None
        self.pooler = nn.Linear(d, d) if cfg.pooler else None
        self.apply(partial(self._init, drawn=set()))  # a tied weight (the token table's) is drawn once

    def _positions(self):
        cfg = self.cfg
        if cfg.positions == "learned":
            return LearnedPositionalEmbedding(cfg.max_len, cfg.d_model)
        if cfg.positions == "t5-bias":  # counted, not implemented: forward refuses this model
            return RelativeBiasTable(cfg.n_heads)
        if cfg.positions == "sinusoidal":
            return SinusoidalPositionalEncoding(cfg.d_model, cfg.max_len)
        return None

    @staticmethod
    def _init(m, drawn: set):
        """GPT-2 style: N(0, 0.02) weights (a shared one once), zero biases and padding rows (norms keep 1/0)."""
        if isinstance(m, (nn.Linear, nn.Embedding)) and m.weight not in drawn:
            drawn.add(m.weight)
            nn.init.normal_(m.weight, std=0.02)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)
            if getattr(m, "padding_idx", None) is not None:
                nn.init.zeros_(m.weight[m.padding_idx])

    def init_state(self) -> list[KVCache]:
        """One empty ``KVCache`` per block, for ``max_len`` positions."""
        return [KVCache(self.max_len) for _ in self.blocks.layers]

    def _embed(self, ids, past: int = 0, target: bool = False) -> torch.Tensor:
        """``(B, T) -> (B, T, d)``: token embeddings (+ segment, positions from ``past``, norm), dropout."""
        if target:
            table = self.head.embed if self.head_table else self.tgt_tok or self.tok
        else:
            table = self.head.embed if self.tok is None else self.tok
        x = table(ids) if self.scale is None else table(ids) * self.scale
        pos = self.tgt_pos if target else self.pos
        x = x if pos is None else pos(x, offset=past)
        x = x if self.token_type is None else x + self.token_type.weight[0]
        x = x if self.embed_norm is None else self.embed_norm(x)
        return _dropped(self.drop, x)

    @checks.boundary(checks._hidden)
    def hidden(self, ids: torch.Tensor, state: list[KVCache] | None = None, keep: torch.Tensor | None = None):
        """``(B, T) -> ((B, T, d), state)``: embeddings (+ positions), the blocks, the final norm.

        With ``state`` (a KV cache per block, ``init_state()``) ``ids`` continue the cached tokens:
        they sit at positions ``past .. past + T - 1``, each block attends over all ``past + T``
        keys, and the caches grow by ``T``. Equal to the plain pass over the whole sequence.
        ``keep (B, T)`` (bool, True = real token) masks padding (not with a cache).
        """
        past, t = (0 if state is None else state[0].length), ids.shape[1]
        x = self._embed(ids, past)
        bias = None if self.alibi is None else self.alibi(t, past + t).to(x.dtype)  # (h, T, past + T)
        rope = None if self.rope is None else partial(self.rope, in_place=True)  # its q, k are fresh projections
        return self.blocks(x, keep, mask=bias, rope=rope, caches=state), state

    @checks.boundary(checks._encode)
    def encode(self, src: torch.Tensor, src_keep: torch.Tensor | None = None) -> torch.Tensor:
        """The encoder-decoder's encoder: ``src (B, S)`` -> memory ``(B, S, d)``; ``src_keep (B, S)`` (bool)
        masks its padding."""
        return self.hidden(src, keep=src_keep)[0]

    @checks.boundary(checks._decode)
    def decode(self, tgt, memory, src_keep=None, tgt_keep=None) -> torch.Tensor:
        """The encoder-decoder's decoder: input ``tgt (B, T)`` attending to ``memory = encode(src, src_keep)``
        -> the target's logits ``(B, T, V)`` (log-probabilities for an adaptive head; without a head,
        the hidden states)."""
        h = self.decoder(self._embed(tgt, target=True), memory, tgt_keep, src_keep)
        return h if self.head is None else self._output(h, None)[0]

    @checks.boundary(checks._transformer_forward)
    def forward(self, ids, targets=None, keep=None, tgt=None, tgt_keep=None):
        """``(logits, loss)``; ``ids (B, T)``, ``targets (B, T)`` or None, ``keep (B, T)`` bool padding mask.

        An encoder-decoder reads the source ``ids`` and the decoder input ``tgt (B, T')`` (with
        ``tgt_keep``); its logits and targets are the target side's. Without a head the "logits"
        are the final hidden states ``(B, T, d)``.
        """
        h, _ = self.hidden(ids, keep=keep)
        if self.decoder is not None:
            h = self.decoder(self._embed(tgt, target=True), h, tgt_keep, keep)
        return (h, None) if self.head is None else self._output(h, targets)
