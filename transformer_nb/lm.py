"""Language models for WikiText-2: a decoder-only Transformer and an LSTM baseline (000 §8.6.2,
Exercise 8.9; 001 §19.11.3, §19.13-19.14; 002 KV cache; 004 §12).

- ``TransformerLM``: token embedding + positions -> ``n_layers`` package ``EncoderLayer`` blocks
  run with ``is_causal=True`` (Pre-LN, GELU) -> final LayerNorm -> an ``OutputHead``.
- ``LSTMLM``: embedding -> ``nn.LSTM`` -> projection to ``d`` -> the same heads.

Both speak one interface (``LanguageModel``); ids are ``(B, T)`` int64, hidden states ``(B, T, d)``:

- ``hidden(ids, state=None) -> (h, state)``. ``state`` is what the model carries from one call to
  the next: the LSTM's ``(h, c)``; the Transformer's per-layer ``KVCache`` list from
  ``init_state()`` (then ``ids`` are the tokens after the cached ones), or ``None`` for a plain
  causal pass over ``ids`` (nothing is carried: it returns ``None``).
- ``forward(ids, targets, state=None, reduction="mean") -> (nll, state)``: the negative
  log-likelihood of ``targets (B, T)`` (``"mean"``, ``"sum"`` or ``"none"`` -> ``(B, T)``).
- ``log_probs(ids) -> (B, T, V)``; ``init_state()``: what generation starts from.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from transformer_nb.block import EncoderLayer
from transformer_nb.multihead import KVCache
from transformer_nb.output_head import OutputHead
from transformer_nb.positional import ALiBi, LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from transformer_nb.rope import RoPE
from transformer_nb.utils import check_device

POSITIONS = ("learned", "sinusoidal", "rope", "alibi")


class LanguageModel(nn.Module):
    """What both language models share: the token embedding, the output head and the loss."""

    max_len: int | None = None  # the longest context the model takes (None: no limit)

    def _make_head(self, head, d_model, vocab_size, ranks, cutoffs, div_value):
        self.vocab_size, self.d_model = vocab_size, d_model
        self.head = OutputHead(head, d_model, vocab_size, ranks, cutoffs, div_value)
        self.tok = None if self.head.embeds else nn.Embedding(vocab_size, d_model)  # tied: the head's table

    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        """``(B, T) -> (B, T, d)`` token embeddings (the head's table when it is tied)."""
        return self.head.embed(ids) if self.tok is None else self.tok(ids)

    def check_ids(self, ids, name: str = "ids") -> None:
        """``ids`` must be a ``(B, T)`` integer tensor of words in ``[0, V)`` (the range is checked on
        the CPU only: on a GPU it would wait for the device at every call)."""
        if (
            not isinstance(ids, torch.Tensor)
            or ids.dtype.is_floating_point
            or ids.dtype.is_complex
            or ids.dtype == torch.bool
        ):
            got = f"{ids.dtype} tensor" if isinstance(ids, torch.Tensor) else type(ids).__name__
            raise TypeError(f"{name} must be an integer tensor of word ids, got {got}")
        if ids.dim() != 2:
            raise ValueError(f"{name} must have shape (B, T), got {tuple(ids.shape)}")
        if ids.device.type == "cpu" and ids.numel():
            if ids.numel() <= 8:  # a decoding step: a few Python ints are cheaper than a reduction
                vals = ids.reshape(-1).tolist()
                lo, hi = min(vals), max(vals)
            else:
                lo, hi = torch.aminmax(ids)
            if lo < 0 or hi >= self.vocab_size:
                raise ValueError(f"{name} must lie in [0, {self.vocab_size}), got range [{int(lo)}, {int(hi)}]")

    def _check_device(self, ids: torch.Tensor, name: str = "ids") -> None:
        """``ids`` must be on the device of the model's parameters (meta ids have no values to embed)."""
        check_device(name, ids, next(self.parameters()).device)

    def init_state(self):
        """The state a generation starts from (``None``: start fresh)."""
        return None

    def forward(self, ids: torch.Tensor, targets: torch.Tensor, state=None, reduction: str = "mean"):
        """``(nll, state)``: NLL of ``targets (B, T)`` given ``ids (B, T)``, float32; ``"mean"``, ``"sum"``
        or ``"none"`` (``(B, T)``)."""
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.check_ids(targets, "targets")
        if not isinstance(ids, torch.Tensor) or targets.shape != ids.shape:
            raise ValueError(f"targets must have the shape of ids, got {tuple(targets.shape)} and {_shape(ids)}")
        h, state = self.hidden(ids, state)
        out = self.head.nll(h.reshape(-1, h.shape[-1]), targets.reshape(-1))
        if reduction == "none":
            return out.view(targets.shape), state
        return (out.sum() if reduction == "sum" else out.mean()), state

    def log_probs(self, ids: torch.Tensor) -> torch.Tensor:
        """``(B, T) -> (B, T, V)`` next-word log-probabilities at every position."""
        h, _ = self.hidden(ids)
        return self.head.log_probs(h.reshape(-1, h.shape[-1])).view(*ids.shape, -1)


def _shape(x) -> str:
    return str(tuple(x.shape)) if isinstance(x, torch.Tensor) else type(x).__name__


class TransformerLM(LanguageModel):
    """Decoder-only Transformer language model built from the package's ``EncoderLayer`` (causal).

    ``positions``: ``"learned"`` (a ``max_len x d`` table), ``"sinusoidal"`` (fixed, added),
    ``"rope"`` (rotary, on queries and keys) or ``"alibi"`` (a per-head linear distance penalty on
    the scores); all refuse positions past ``max_len``. ``head``: see ``output_head.OutputHead``.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 256,
        n_heads: int = 4,
        d_ff: int = 1024,
        n_layers: int = 4,
        max_len: int = 256,
        dropout: float = 0.0,
        positions: str = "learned",
        head: str = "adaptive",
        ranks: torch.Tensor | None = None,
        cutoffs=(2000, 10000),
        div_value: float = 4.0,
        activation: str = "gelu",
    ):
        super().__init__()
        if positions not in POSITIONS:
            raise ValueError(f"positions must be one of {POSITIONS}, got {positions!r}")
        self.max_len, self.n_layers, self.positions = max_len, n_layers, positions
        self._make_head(head, d_model, vocab_size, ranks, cutoffs, div_value)
        self.pos = (
            LearnedPositionalEmbedding(max_len, d_model)
            if positions == "learned"
            else SinusoidalPositionalEncoding(d_model, max_len)
            if positions == "sinusoidal"
            else None
        )
        self.rope = RoPE(d_model // n_heads, max_len) if positions == "rope" else None
        self.alibi = ALiBi(n_heads) if positions == "alibi" else None
        self.drop = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, n_heads, d_ff, dropout, norm_first=True, activation=activation)
            for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.apply(self._init)

    @staticmethod
    def _init(m):
        """GPT-2 style: N(0, 0.02) weights, zero biases (LayerNorms keep 1/0)."""
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)

    def init_state(self) -> list[KVCache]:
        """One empty ``KVCache`` per layer, for ``max_len`` positions."""
        return [KVCache(self.max_len) for _ in self.layers]

    def hidden(self, ids: torch.Tensor, state: list[KVCache] | None = None):
        """``(B, T) -> ((B, T, d), state)``: embeddings (+ positions), causal blocks, final LayerNorm.

        With ``state`` (a KV cache per layer) ``ids`` continue the cached tokens: they sit at
        positions ``past .. past + T - 1``, each block attends over all ``past + T`` keys, and the
        caches grow by ``T``. Equal to the plain pass over the whole sequence at those positions.
        """
        self.check_ids(ids)
        self._check_device(ids)
        if state is not None and (not isinstance(state, list) or len(state) != self.n_layers):
            raise ValueError(f"state must be init_state(): a list of {self.n_layers} KVCache, got {_shape(state)}")
        past, t = (0 if state is None else state[0].length), ids.shape[1]
        if past + t > self.max_len:
            raise ValueError(f"positions {past}..{past + t - 1} exceed max_len={self.max_len}")
        x = self.embed_tokens(ids)
        x = x if self.pos is None else self.pos(x, offset=past)
        x = self.drop(x) if self.training else x
        bias = None if self.alibi is None else self.alibi(t, past + t).to(x.dtype)  # (h, T, past + T)
        for i, layer in enumerate(self.layers):
            x = layer(x, mask=bias, is_causal=True, rope=self.rope, cache=None if state is None else state[i])
        return self.norm(x), state


class LSTMLM(LanguageModel):
    """Recurrent baseline: embedding -> ``n_layers`` LSTM (``hidden_size``) -> projection to d -> head.

    ``hidden(ids, state=None) -> (h (B, T, d), (h_n, c_n))``; training carries the state across
    consecutive windows (truncated back-propagation through time).
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 256,
        hidden_size: int | None = None,
        n_layers: int = 2,
        dropout: float = 0.0,
        head: str = "adaptive",
        ranks: torch.Tensor | None = None,
        cutoffs=(2000, 10000),
        div_value: float = 4.0,
    ):
        super().__init__()
        self._make_head(head, d_model, vocab_size, ranks, cutoffs, div_value)
        self.hidden_size = hidden_size or d_model
        if self.tok is not None:
            nn.init.uniform_(self.tok.weight, -0.1, 0.1)
        self.drop = nn.Dropout(dropout)
        self.rnn = nn.LSTM(
            d_model, self.hidden_size, n_layers, batch_first=True, dropout=dropout if n_layers > 1 else 0.0
        )
        self.proj = nn.Linear(self.hidden_size, d_model) if self.hidden_size != d_model else nn.Identity()

    def hidden(self, ids: torch.Tensor, state=None):
        """``(B, T) -> ((B, T, d), (h_n, c_n))``, each of ``h_n, c_n`` ``(n_layers, B, hidden_size)``."""
        self.check_ids(ids)
        self._check_device(ids)
        out, state = self.rnn(self.drop(self.embed_tokens(ids)), state)
        return self.drop(self.proj(out)), state
