"""A small word-level language model for WikiText-2 (000 §8.6.2, Exercise 8.9; 001 §19.11.3,
§19.13-19.14; 002 KV cache; 004 §12).

- ``TransformerLM``: decoder-only. Token embedding + positions -> ``n_layers`` package
  ``EncoderLayer`` blocks run with ``is_causal=True`` (Pre-LN, GELU) -> final LayerNorm ->
  an output head. The blocks' attention is ``F.scaled_dot_product_attention``.
- ``LSTMLM``: the recurrent baseline, with the same embedding and output heads.
- ``OutputHead``: ``"full"`` (its own ``V x d`` matrix), ``"tied"`` (the embedding matrix,
  Press & Wolf 2017) or ``"adaptive"`` (``nn.AdaptiveLogSoftmaxWithLoss``, Grave et al. 2017:
  frequent words get the full width, rare words a cheaper projection). The adaptive head
  needs words sorted by frequency; ``frequency_ranks`` gives that order and the head keeps
  it in a buffer, so every public method speaks ordinary vocabulary ids.
- ``train_lm``: AdamW, or ``torch.optim.Muon`` for the hidden weight matrices beside AdamW
  (``make_optimizers``), warm-up + cosine learning rate (``LambdaLR``), gradient clipping,
  optional bf16 autocast, a step or wall-clock budget, live curves (``LiveLoss``).
- ``evaluate``: perplexity on a whole split, ``exp(summed NLL / tokens)``.
- ``generate``: greedy, temperature and top-k sampling (seeded), with or without a KV cache.
  ``cached_hidden`` is the KV-cache forward: it reuses each block's own weights (q, k, v
  projections stacked into one product, ``out_proj``, norms, FFN) and stores K, V per layer
  in a ``KVCache`` (buffers allocated once).

Shapes: ids ``(B, T)`` int64; hidden ``(B, T, d)``; log-probs ``(B, T, V)``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.block import EncoderLayer
from transformer_nb.masks import causal_mask
from transformer_nb.multihead import merge_heads
from transformer_nb.positional import ALiBi, LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from transformer_nb.rope import RoPE
from transformer_nb.train import Progress, rank_and_world, train
from transformer_nb.wikitext import batchify

HEADS = ("full", "tied", "adaptive", "adaptive_tied")
POSITIONS = ("learned", "sinusoidal", "rope", "alibi")
OPTIMIZERS = ("adamw", "muon")


# --------------------------------------------------------------------------- baselines


def frequency_ranks(train_ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """``(V,)`` int64: ``rank[id]`` = position of ``id`` when words are sorted by training count
    (0 = most frequent; ties keep id order)."""
    counts = torch.bincount(train_ids.reshape(-1), minlength=vocab_size)
    if counts.numel() != vocab_size:
        raise ValueError(f"train_ids hold ids >= vocab_size={vocab_size}")
    order = torch.argsort(counts, descending=True, stable=True)  # rank -> id
    ranks = torch.empty_like(order)
    ranks[order] = torch.arange(vocab_size)
    return ranks


def unigram_perplexity(train_ids: torch.Tensor, eval_ids: torch.Tensor, vocab_size: int) -> float:
    """Perplexity of the unigram model ``p(w) = count_train(w) / N_train`` on ``eval_ids``.

    Raises ``ValueError`` if an evaluated word never occurs in training (infinite perplexity).
    """
    counts = torch.bincount(train_ids.reshape(-1), minlength=vocab_size).double()
    logp = (counts / counts.sum()).log()
    nll = -logp[eval_ids.reshape(-1)]
    if torch.isinf(nll).any():
        raise ValueError("an evaluated word has zero training count: the unigram perplexity is infinite")
    return math.exp(nll.mean().item())


# --------------------------------------------------------------------------- output heads


class OutputHead(nn.Module):
    """Hidden states ``(N, d)`` -> per-token NLL or log-probabilities over ``V`` words.

    ``kind``: ``"full"`` (Linear d->V with bias), ``"tied"`` (logits ``h @ E^T`` with the
    embedding ``E`` passed in, plus a bias), ``"adaptive"`` (needs ``ranks`` from
    ``frequency_ranks``; ``cutoffs`` split the ranks into a head and tail clusters) or
    ``"adaptive_tied"``: the adaptive softmax whose weights also serve as the input embedding
    (``embed``; "adaptive input", Baevski & Auli 2019): a frequent word's embedding is its row
    of the head matrix, a rarer word's is its row of the cluster matrix ``(n, d/4^i)``
    mapped back to ``d`` by the transpose of the cluster's projection.
    """

    def __init__(
        self,
        kind: str,
        d_model: int,
        vocab_size: int,
        embedding: nn.Embedding | None = None,
        ranks: torch.Tensor | None = None,
        cutoffs=(2000, 10000),
        div_value: float = 4.0,
    ):
        super().__init__()
        if kind not in HEADS:
            raise ValueError(f"head must be one of {HEADS}, got {kind!r}")
        self.kind, self.d_model, self.vocab_size = kind, d_model, vocab_size
        if kind == "full":
            self.proj = nn.Linear(d_model, vocab_size)
        elif kind == "tied":
            if embedding is None or embedding.weight.shape != (vocab_size, d_model):
                raise ValueError(f"a tied head needs the ({vocab_size}, {d_model}) token embedding")
            self.embedding = [embedding]  # a list: not registered twice as a submodule
            self.bias = nn.Parameter(torch.zeros(vocab_size))
        else:
            if ranks is None:
                raise ValueError(
                    f"the {kind} head needs ranks = frequency_ranks(train_ids, V): "
                    "its clusters only save work if frequent words come first"
                )
            if ranks.shape != (vocab_size,):
                raise ValueError(f"ranks must have shape ({vocab_size},), got {tuple(ranks.shape)}")
            self.register_buffer("ranks", ranks.clone().long())
            self.asm = nn.AdaptiveLogSoftmaxWithLoss(d_model, vocab_size, list(cutoffs), div_value=div_value)

    @property
    def adaptive(self) -> bool:
        return self.kind in ("adaptive", "adaptive_tied")

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """``adaptive_tied`` only: ids ``(...)`` -> embeddings ``(..., d)`` read from the softmax weights."""
        if self.kind != "adaptive_tied":
            raise ValueError("only the adaptive_tied head doubles as an embedding")
        if torch.is_inference_mode_enabled() and not self.training:  # generation: one table lookup
            return F.embedding(ids, self._table())
        return self._embed_rows(ids)

    def _memo(self, name: str, key, build):
        """``build()``, remembered under ``name`` until ``key`` changes (a derived tensor that is
        rebuilt only when the weights or ranks it comes from were rewritten)."""
        memo = self.__dict__.setdefault("_memos", {})
        if name not in memo or memo[name][0] != key:
            memo[name] = (key, build())
        return memo[name][1]

    def _table(self) -> torch.Tensor:
        """The ``(V, d)`` embedding table for generation, rebuilt whenever a softmax weight was
        modified in place (its version counter) or replaced (its address)."""
        key = tuple((p.data_ptr(), p._version) for p in self.asm.parameters())
        return self._memo(
            "table", key, lambda: self._embed_rows(torch.arange(self.vocab_size, device=self.ranks.device))
        )

    def train(self, mode: bool = True):
        if mode:  # writes through ``.data`` do not bump the version counter: start afresh
            self.__dict__.get("_memos", {}).pop("table", None)
        return super().train(mode)

    def _embed_rows(self, ids: torch.Tensor) -> torch.Tensor:
        asm = self.asm
        r = self.ranks[ids.reshape(-1)]
        bounds = [0] + list(asm.cutoffs)  # [0, 2000, 10000, V]
        out = F.embedding(r.clamp(max=bounds[1] - 1), asm.head.weight)  # frequent words: head rows
        for i, (lo, hi) in enumerate(zip(bounds[1:-1], bounds[2:])):
            idx = ((r >= lo) & (r < hi)).nonzero().squeeze(1)
            if idx.numel():
                low = F.embedding(r[idx] - lo, asm.tail[i][1].weight)  # (n, d / div^(i+1))
                out = out.index_copy(0, idx, low @ asm.tail[i][0].weight)
        # The softmax weights are initialised small (uniform in +-1/sqrt(d)); scaled by sqrt(d) the
        # embeddings have roughly unit size, as an nn.Embedding's would (as in Vaswani et al. §3.4).
        return out.view(*ids.shape, self.d_model) * self.d_model**0.5

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """``(N, d) -> (N, V)`` logits (full/tied only)."""
        if self.kind == "full":
            return self.proj(h)
        if self.kind == "tied":
            return F.linear(h, self.embedding[0].weight, self.bias)
        raise ValueError("the adaptive head has no single logit matrix; use log_probs")

    def nll(self, h: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Per-token negative log-likelihood: ``h (N, d)``, ``y (N,)`` -> ``(N,)`` float32."""
        if self.adaptive:
            with torch.autocast(h.device.type, enabled=False):  # the adaptive head runs in fp32
                return -self.asm(h.float(), self.ranks[y]).output
        return F.cross_entropy(self.logits(h).float(), y, reduction="none")

    def _rank_order(self) -> torch.Tensor:
        """``(V,)``: the word id of each frequency rank (the adaptive head answers in rank order)."""
        return self._memo("order", (self.ranks.data_ptr(), self.ranks._version), lambda: torch.argsort(self.ranks))

    def next_token_scores(self, h: torch.Tensor):
        """For sampling: ``(log_probs (N, V), order)`` where column ``j`` is word ``order[j]``
        (``order`` is None for id order). The adaptive head answers in frequency-rank order,
        which saves reordering 33k numbers at every generated token."""
        if self.adaptive:
            with torch.autocast(h.device.type, enabled=False):
                return self.asm.log_prob(h.float()), self._rank_order()
        return self.log_probs(h), None

    def greedy(self, h: torch.Tensor) -> torch.Tensor:
        """``(N, d) -> (N,)`` the most likely word ids, exactly ``log_probs(h).argmax(-1)``.

        The adaptive head skips what cannot win. A word of tail cluster ``i`` has log-probability
        ``log p(cluster i) + log p(word | cluster i) <= log p(cluster i)``, so the cluster is
        computed only when its own entry in the head beats the best word found so far. (The
        library's ``AdaptiveLogSoftmaxWithLoss.predict`` computes all 33k log-probabilities as
        soon as any cluster wins the head, which in generation is most steps.) The head's
        log-softmax is never needed: every head entry is shifted by the same log-sum-exp, so
        its raw logits rank the same way.
        """
        if not self.adaptive:
            return self.logits(h).argmax(dim=-1)
        asm, s = self.asm, self.asm.shortlist_size
        with torch.autocast(h.device.type, enabled=False):
            h = h.float()
            z = F.linear(h, asm.head.weight, asm.head.bias)  # (N, shortlist + clusters) logits
            best, rank = z[:, :s].max(dim=1)
            may_win = (z[:, s:] > best[:, None]).any(dim=0).tolist()  # per cluster, for any row
            for i in range(asm.n_clusters):
                if not may_win[i]:
                    continue  # no word of cluster i can win
                c = z[:, s + i]
                v, j = (F.log_softmax(asm.tail[i](h), dim=1) + c[:, None]).max(dim=1)
                win = v > best  # ties: the lower rank, as argmax
                best, rank = torch.where(win, v, best), torch.where(win, j + asm.cutoffs[i], rank)
        return self._rank_order()[rank]

    def log_probs(self, h: torch.Tensor) -> torch.Tensor:
        """``(N, d) -> (N, V)`` log-probabilities in vocabulary-id order."""
        if self.adaptive:
            with torch.autocast(h.device.type, enabled=False):
                return self.asm.log_prob(h.float())[:, self.ranks]
        return F.log_softmax(self.logits(h).float(), dim=-1)


class _LM(nn.Module):
    """What both language models share: the head and the loss/log-prob helpers."""

    def _make_head(self, head, d_model, vocab_size, ranks, cutoffs, div_value):
        self.head_kind = head
        if head == "adaptive_tied":
            self.tok = None  # the head provides the embeddings
        self.head = OutputHead(head, d_model, vocab_size, self.tok, ranks, cutoffs, div_value)

    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        """``(B, T) -> (B, T, d)`` token embeddings (from the softmax weights when ``adaptive_tied``)."""
        return self.head.embed(ids) if self.tok is None else self.tok(ids)

    def nll(self, ids: torch.Tensor, targets: torch.Tensor, reduction: str = "mean", state=None):
        """NLL of ``targets (B, T)`` given ``ids (B, T)``: ``"mean"``, ``"sum"`` or ``"none"`` ``(B, T)``."""
        h = self._hidden_for_loss(ids, state)
        out = self.head.nll(h.reshape(-1, h.shape[-1]), targets.reshape(-1))
        if reduction == "none":
            return out.view(targets.shape)
        return out.sum() if reduction == "sum" else out.mean()

    def log_probs(self, ids: torch.Tensor) -> torch.Tensor:
        """``(B, T) -> (B, T, V)`` next-word log-probabilities at every position."""
        h = self.hidden(ids)
        if isinstance(h, tuple):
            h = h[0]
        return self.head.log_probs(h.reshape(-1, h.shape[-1])).view(*ids.shape, -1)

    def _hidden_for_loss(self, ids, state):
        return self.hidden(ids)

    def _state_after(self):
        return None

    def forward(self, ids: torch.Tensor, targets: torch.Tensor, state=None):
        """``(mean NLL, state)`` of ``targets (B, T)`` given ``ids (B, T)`` (what DDP and ``train`` call)."""
        loss = self.nll(ids, targets, state=state)
        return loss, self._state_after()

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


# --------------------------------------------------------------------------- the Transformer LM


def rotate_complex_(x: torch.Tensor, rot: torch.Tensor) -> torch.Tensor:
    """RoPE (interleaved pairs) as complex multiplication, in place: ``x (..., T, d)`` float,
    ``rot (T, d/2)`` complex ``cos + i sin``; returns ``x``. Pair ``(x[2i], x[2i+1])`` read as
    the complex number ``x[2i] + i x[2i+1]`` and multiplied by ``e^{i theta}`` is the pair turned
    by ``theta``: ``(x1 cos - x2 sin) + i (x1 sin + x2 cos)``, as in ``rope.rotate_pairs``."""
    torch.view_as_complex(x.unflatten(-1, (-1, 2))).mul_(rot)
    return x


class KVCache:
    """Per-layer keys and values of everything seen so far, and what a decoding step reads.

    ``k[i]``, ``v[i]`` are ``(B, h, T_past, d_head)`` views of buffers allocated once for
    ``capacity`` positions (the model's ``max_len``): a decoding step writes its one new key and
    value in place, where ``torch.cat`` would copy all ``T_past`` stored ones at every step.
    ``weights`` holds, per layer, the block's weights (``decoding_weights``), ``table`` the
    ``(V, d)`` token embeddings and ``rot`` RoPE's rotations as unit complex numbers
    ``cos + i sin``, ``(capacity, d_head/2)``: gathered once per cache (``TransformerLM.new_cache``).
    """

    def __init__(
        self,
        n_layers: int,
        capacity: int,
        weights: list | None = None,
        table: torch.Tensor | None = None,
        rot: torch.Tensor | None = None,
    ):
        self.capacity, self.weights, self.table, self.rot, self.length = capacity, weights, table, rot, 0
        self._kv: list[torch.Tensor | None] = [None] * n_layers  # per layer (2, B, h, capacity, d_head)

    def store(self, i: int, kv: torch.Tensor):
        """Write layer ``i``'s new keys and values ``kv: (2, B, h, T_new, d_head)`` at positions
        ``length ..`` (one copy) and return all keys and values so far, ``(B, h, length + T_new,
        d_head)`` each. ``advance(T_new)`` moves ``length`` on once every layer has stored its share."""
        t0, t1 = self.length, self.length + kv.shape[3]
        if t1 > self.capacity:
            raise ValueError(f"the KV cache holds {self.capacity} positions; {t1} were asked for")
        if self._kv[i] is None:
            self._kv[i] = kv.new_empty(*kv.shape[:3], self.capacity, kv.shape[4])
        self._kv[i][:, :, :, t0:t1] = kv
        return self._kv[i][0, :, :, :t1], self._kv[i][1, :, :, :t1]

    def advance(self, t_new: int) -> None:
        self.length += t_new

    @property
    def k(self) -> list:
        return [None if t is None else t[0, :, :, : self.length] for t in self._kv]

    @property
    def v(self) -> list:
        return [None if t is None else t[1, :, :, : self.length] for t in self._kv]

    def nbytes(self) -> int:
        """Bytes of the keys and values stored so far (it grows linearly with the length)."""
        return sum(t.numel() * t.element_size() for t in self.k + self.v if t is not None)


class TransformerLM(_LM):
    """Decoder-only Transformer language model built from the package's ``EncoderLayer`` (causal).

    ``positions``: ``"learned"`` (a ``max_len x d`` table), ``"sinusoidal"`` (fixed, added),
    ``"rope"`` (rotary, on queries and keys) or ``"alibi"`` (a per-head linear distance penalty
    on the scores); all refuse sequences longer than ``max_len``. ``head``: see ``OutputHead``. ``hidden(ids)``
    is the training path (each block's own ``forward(x, is_causal=True)``);
    ``cached_hidden(ids, cache)`` is the generation path with a KV cache.
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
        self.vocab_size, self.d_model, self.max_len, self.n_layers = vocab_size, d_model, max_len, n_layers
        self.positions = positions
        self.tok = nn.Embedding(vocab_size, d_model)
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
        self._make_head(head, d_model, vocab_size, ranks, cutoffs, div_value)
        self.apply(self._init)

    @staticmethod
    def _init(m):
        """GPT-2 style: N(0, 0.02) weights, zero biases (LayerNorms keep 1/0)."""
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)

    def _embed(self, ids: torch.Tensor, offset: int = 0, check: bool = True, table: torch.Tensor | None = None):
        """``(B, T) -> (B, T, d)``: token embeddings (read from ``table`` if given) plus positions."""
        if ids.dim() != 2:
            raise ValueError(f"ids must have shape (B, T), got {tuple(ids.shape)}")
        if check and ids.numel() and (ids.min() < 0 or ids.max() >= self.vocab_size):
            raise ValueError(f"ids must lie in [0, {self.vocab_size}), got range [{int(ids.min())}, {int(ids.max())}]")
        if offset + ids.shape[1] > self.max_len:
            raise ValueError(f"positions {offset}..{offset + ids.shape[1] - 1} exceed max_len={self.max_len}")
        x = self.embed_tokens(ids) if table is None else F.embedding(ids, table)
        x = x if self.pos is None else self.pos(x, offset=offset)
        return self.drop(x) if self.training else x

    def hidden(self, ids: torch.Tensor) -> torch.Tensor:
        """``(B, T) -> (B, T, d)``: embeddings (+ positions), causal blocks, final LayerNorm.

        Positions are added to the embeddings (learned, sinusoidal), rotate queries and keys
        (``rope``), or bias the attention scores (``alibi``, an additive float mask).
        """
        x = self._embed(ids)
        t = ids.shape[1]
        bias = None if self.alibi is None else self.alibi(t).to(x.dtype)
        for layer in self.layers:
            x = layer(x, mask=bias, is_causal=True, rope=self.rope)
        return self.norm(x)

    # ----- the KV cache --------------------------------------------------------------------
    def new_cache(self) -> KVCache:
        """An empty cache with the weights a decoding step reads, gathered once (valid until the
        weights change: make a new cache for every generation)."""
        with torch.no_grad():
            weights = [decoding_weights(layer) for layer in self.layers]
            table = self.head._table() if self.tok is None else self.tok.weight
            rot = None if self.rope is None else torch.complex(self.rope.cos, self.rope.sin)  # interleaved pairs
        return KVCache(self.n_layers, self.max_len, weights, table, rot)

    def cached_hidden(self, ids: torch.Tensor, cache: KVCache, check: bool = True) -> torch.Tensor:
        """Process only the new tokens ``ids (B, T_new)`` given ``cache`` of the ``T_past`` before.

        Each block computes q, k, v for the new tokens only, appends k, v to the cache and
        attends over all ``T_past + T_new`` keys (a bottom-right causal mask when
        ``T_new > 1``; the model's blocks have as many key/value heads as query heads).
        Returns ``(B, T_new, d)``; equal to ``hidden`` of the whole sequence at those
        positions. Eval mode only (no dropout).

        A step does so little arithmetic that calling modules costs as much as computing:
        the block is written out in ``F`` calls on the weights that ``new_cache`` gathered
        (the same pre-LN block as ``EncoderLayer.forward``; the tests check that they agree).
        """
        if self.training:
            raise ValueError("cached_hidden is for generation; call model.eval() first")
        past, (b, t_new), d = cache.length, ids.shape, self.d_model
        x = self._embed(ids, offset=past, check=check, table=cache.table)
        mask = None if t_new == 1 else causal_mask(t_new, past + t_new, device=ids.device)
        if self.alibi is not None:  # bias (h, T_new, T_past + T_new)
            bias = self.alibi(t_new, past + t_new).to(x.dtype)
            mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
        for i, w in enumerate(cache.weights):
            qkv = F.linear(F.layer_norm(x, (d,), *w["norm1"]), *w["qkv"])  # [W_q; W_k; W_v]: one product
            qkv = qkv.view(b, t_new, 3, w["heads"], d // w["heads"]).permute(2, 0, 3, 1, 4)  # (3, B, h, T_new, d_head)
            if cache.rot is not None:  # turn q and k to positions past.., in place
                rotate_complex_(qkv[:2], cache.rot[past : past + t_new])
            k, v = cache.store(i, qkv[1:])  # all T_past + T_new keys and values
            a = F.scaled_dot_product_attention(qkv[0], k, v, attn_mask=mask)
            x = x + F.linear(merge_heads(a), *w["out"])
            x = x + feed_forward(F.layer_norm(x, (d,), *w["norm2"]), w)
        cache.advance(t_new)
        return self.norm(x)


def decoding_weights(layer: EncoderLayer) -> dict:
    """A pre-LN ``EncoderLayer``'s weights as ``(weight, bias)`` pairs (q, k, v stacked into
    one ``(3d, d)`` matrix), its head count and FFN activation: what a decoding step reads."""
    a, ff = layer.self_attn, layer.ff
    if not (layer.norm_first and isinstance(layer.norm1, nn.LayerNorm) and a.n_kv_heads == a.n_heads):
        raise ValueError("the decoding step is written for pre-LN LayerNorm blocks with one K/V head per query head")
    stack = lambda *ts: None if ts[0] is None else torch.cat(ts)
    pair = lambda m: None if m is None else (m.weight, m.bias)
    return dict(
        heads=a.n_heads,
        act=ff.activation,
        norm1=(*pair(layer.norm1), layer.norm1.eps),
        norm2=(*pair(layer.norm2), layer.norm2.eps),
        out=pair(a.out_proj),
        ff1=pair(ff.linear1),
        ff2=pair(ff.linear2),
        gate=pair(ff.gate),
        qkv=(
            stack(a.q_proj.weight, a.k_proj.weight, a.v_proj.weight),
            stack(a.q_proj.bias, a.k_proj.bias, a.v_proj.bias),
        ),
    )


def feed_forward(x: torch.Tensor, w: dict) -> torch.Tensor:
    """``FeedForward.forward`` in eval mode from ``decoding_weights``: ``(..., d) -> (..., d)``."""
    h = F.linear(x, *w["ff1"])
    if w["act"] == "swiglu":
        h = F.silu(h) * F.linear(x, *w["gate"])
    else:
        h = {"relu": F.relu, "gelu": F.gelu}[w["act"]](h)
    return F.linear(h, *w["ff2"])


# --------------------------------------------------------------------------- the LSTM baseline


class LSTMLM(_LM):
    """Recurrent baseline: embedding -> ``n_layers`` LSTM (``hidden_size``) -> projection to d -> head.

    ``hidden(ids, state=None) -> (h (B, T, d), state)``; training carries ``state`` across
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
        self.vocab_size, self.d_model = vocab_size, d_model
        self.hidden_size = hidden_size or d_model
        self.tok = nn.Embedding(vocab_size, d_model)
        nn.init.uniform_(self.tok.weight, -0.1, 0.1)
        self.drop = nn.Dropout(dropout)
        self.rnn = nn.LSTM(
            d_model, self.hidden_size, n_layers, batch_first=True, dropout=dropout if n_layers > 1 else 0.0
        )
        self.proj = nn.Linear(self.hidden_size, d_model) if self.hidden_size != d_model else nn.Identity()
        self._make_head(head, d_model, vocab_size, ranks, cutoffs, div_value)

    def hidden(self, ids: torch.Tensor, state=None):
        if ids.dim() != 2:
            raise ValueError(f"ids must have shape (B, T), got {tuple(ids.shape)}")
        out, state = self.rnn(self.drop(self.embed_tokens(ids)), state)
        return self.drop(self.proj(out)), state

    def _hidden_for_loss(self, ids, state):
        h, self._last_state = self.hidden(ids, state)
        return h

    def _state_after(self):
        return self._last_state


# --------------------------------------------------------------------------- evaluation


@torch.no_grad()
def evaluate(
    model: _LM,
    ids: torch.Tensor,
    seq_len: int = 128,
    batch_size: int = 16,
    max_tokens: int | None = None,
    bf16: bool = False,
    stride: int | None = None,
) -> dict:
    """Perplexity of ``model`` on a flat ``(N,)`` split: ``exp(sum of NLL / number of targets)``.

    The split is cut into ``batch_size`` contiguous streams; every target is scored exactly
    once. The LSTM reads the streams in windows of ``seq_len`` and carries its state, so
    every prediction sees all the text before it. A Transformer sees only its window:
    with ``stride=None`` the windows do not overlap (a word early in a window has little
    context); with ``stride < seq_len`` the window slides by ``stride`` and only its last
    ``stride`` targets are scored, so every prediction after the first window has at least
    ``seq_len - stride`` words of context (at ``seq_len / stride`` times the cost).
    Returns ``{"nll_sum", "tokens", "ppl"}``.
    """
    from transformer_nb.wikitext import batchify, iter_batches

    was_training = model.training
    model.eval()
    data = ids if max_tokens is None else ids[:max_tokens]
    batch_size = max(1, min(batch_size, (data.numel() - 1) // 2))
    streams = batchify(data, batch_size)
    total, n, state = 0.0, 0, None

    def score(h, y):
        return model.head.nll(h.reshape(-1, h.shape[-1]), y.reshape(-1)).double().sum().item()

    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        if isinstance(model, LSTMLM) or stride is None or stride >= seq_len:
            for x, y in iter_batches(streams, seq_len):
                if isinstance(model, LSTMLM):
                    h, state = model.hidden(x, state)
                else:
                    h = model.hidden(x)
                total += score(h, y)
                n += y.numel()
        else:
            if stride < 1:
                raise ValueError(f"stride must be a positive int, got {stride}")
            last = streams.shape[1] - 1  # targets are streams[:, 1 .. last]
            done = 0  # targets 0 .. done-1 (shifted) are scored
            while done < last:
                end = min(done + (seq_len if done == 0 else stride), last)
                start = max(0, end - seq_len)
                h = model.hidden(streams[:, start:end])
                y = streams[:, start + 1 : end + 1]
                k = done - start  # window positions already scored
                total += score(h[:, k:], y[:, k:])
                n += y[:, k:].numel()
                done = end
    model.train(was_training)
    return {"nll_sum": total, "tokens": n, "ppl": math.exp(total / n)}


def flops_per_token(model: _LM, x: torch.Tensor, y: torch.Tensor, bf16: bool = False) -> dict:
    """Model FLOPs of one training step (forward + backward), per target token, counted by
    ``torch.utils.flop_counter`` (matmuls and attention). ``body`` is everything up to the
    hidden states, ``head`` the output layer (total - body)."""
    from torch.utils.flop_counter import FlopCounterMode

    was_training = model.training
    model.train()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        with FlopCounterMode(display=False) as fc:
            model.nll(x, y).backward()
        total = fc.get_total_flops()
        with FlopCounterMode(display=False) as fc:
            h = model.hidden(x)
            (h[0] if isinstance(h, tuple) else h).float().sum().backward()
        body = fc.get_total_flops()
    model.zero_grad(set_to_none=True)
    model.train(was_training)
    n = y.numel()
    return {"total": total / n, "body": body / n, "head": (total - body) / n, "head_share": (total - body) / total}


def time_steps(model: _LM, train_ids: torch.Tensor, cfg: TrainConfig, steps: int = 8, warmup: int = 2) -> float:
    """Training throughput in tokens/s: the median time of ``steps`` optimiser steps (after ``warmup``)."""
    import statistics

    from transformer_nb.wikitext import random_windows

    gen = torch.Generator().manual_seed(cfg.seed)
    opts = make_optimizers(model, replace(cfg, lr=1e-4))
    model.train()
    times = []
    for i in range(steps + warmup):
        x, y = random_windows(train_ids, cfg.batch_size, cfg.seq_len, generator=gen)
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=cfg.bf16):
            loss = model.nll(x, y)
        for o in opts:
            o.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        for o in opts:
            o.step()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return cfg.batch_size * cfg.seq_len / statistics.median(times)


# --------------------------------------------------------------------------- training


@dataclass
class TrainConfig:
    """How ``train_lm`` trains. Give ``steps`` (reproducible) or ``budget_s`` (wall clock)."""

    steps: int | None = None
    budget_s: float | None = None
    batch_size: int = 32
    seq_len: int = 128
    lr: float = 2e-3
    weight_decay: float = 0.1
    warmup: float = 0.05  # fraction of the run spent warming up linearly
    min_lr_frac: float = 0.0  # cosine decays to lr * min_lr_frac
    betas: tuple = (0.9, 0.99)
    optimizer: str = "adamw"  # "muon": Muon for the hidden weight matrices (see make_optimizers)
    adamw_lr: float | None = None  # with "muon": AdamW's peak lr (embeddings, output layer, norms); None: lr
    clip: float = 1.0
    bf16: bool = False
    contiguous: bool = False  # consecutive windows with carried state (LSTM) vs random windows
    eval_every: int | None = None  # steps between validation points (None: ~20 per run)
    eval_tokens: int = 20_000  # validation tokens per point (the final evaluation uses all)
    eval_stride: int | None = None  # Transformer evaluation: sliding windows (see ``evaluate``)
    seed: int = 0

    def __post_init__(self):
        if (self.steps is None) == (self.budget_s is None):
            raise ValueError("give exactly one of steps= or budget_s=")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.adamw_lr is not None and self.optimizer != "muon":
            raise ValueError("adamw_lr sets the AdamW half of optimizer='muon'; with AdamW alone use lr")


def lr_factor(progress: float, warmup: float, min_lr_frac: float = 0.0) -> float:
    """Linear warm-up over ``warmup`` of the run, then cosine decay to ``min_lr_frac``; progress in [0, 1]."""
    if progress < warmup:
        return max(progress / warmup, 1e-3)
    q = min(1.0, (progress - warmup) / max(1e-9, 1.0 - warmup))
    return min_lr_frac + (1.0 - min_lr_frac) * 0.5 * (1.0 + math.cos(math.pi * q))


def _param_groups(model, weight_decay):
    """Weight decay on matrices of the blocks/head only; not on embeddings, norms, biases."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        is_embedding = name.startswith(("tok.", "pos."))
        (decay if p.dim() >= 2 and not is_embedding else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def make_adamw(params, **kw) -> torch.optim.AdamW:
    """AdamW with the fused kernel when this torch build has one (measured: 8 ms vs 52 ms per
    step for 13M parameters on one CPU core), else the default implementation."""
    try:
        return torch.optim.AdamW(params, fused=True, **kw)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.AdamW(params, **kw)


def make_optimizers(model: nn.Module, cfg: TrainConfig) -> list:
    """``[AdamW]`` over all parameters, or with ``cfg.optimizer == "muon"`` ``[Muon, AdamW]``.

    ``torch.optim.Muon`` (Jordan et al., 2024) replaces each update of a weight matrix by the nearest
    orthogonal matrix to its momentum (5 Newton-Schulz steps). It is meant for the *hidden* matrices:
    the 2-D weights inside the blocks (or the LSTM and its projection). Embeddings, the output layer,
    norms and biases stay with AdamW. ``adjust_lr_fn="match_rms_adamw"`` scales Muon's update to
    AdamW's size, so both share the weight decay and the schedule. Muon's peak learning rate is
    ``cfg.lr``; AdamW's is ``cfg.adamw_lr`` (``cfg.lr`` when None).
    """
    if cfg.optimizer == "adamw":
        return [make_adamw(_param_groups(model, cfg.weight_decay), lr=cfg.lr, betas=cfg.betas)]
    hidden = [p for n, p in model.named_parameters() if p.dim() == 2 and n.startswith(("layers.", "rnn.", "proj."))]
    if not hidden:
        raise ValueError("Muon needs 2-D weights in layers.*, rnn.* or proj.*; this model has none")
    ids = {id(p) for p in hidden}
    rest = [
        dict(g, params=[p for p in g["params"] if id(p) not in ids]) for g in _param_groups(model, cfg.weight_decay)
    ]
    return [
        torch.optim.Muon(hidden, lr=cfg.lr, weight_decay=cfg.weight_decay, adjust_lr_fn="match_rms_adamw"),
        make_adamw(rest, lr=cfg.lr if cfg.adamw_lr is None else cfg.adamw_lr, betas=cfg.betas),
    ]


class WindowSampler:
    """Start positions of training windows, shuffled once per epoch, this rank's share.

    The contract of ``torch.utils.data.DistributedSampler(range(n), num_replicas=world, rank=rank,
    shuffle=True, seed=seed, drop_last=True)`` (the same permutation, ``seed + epoch``, every rank
    ``rank, rank + world, ...`` of it), kept as one tensor instead of a Python list of ``n`` ints.
    Call ``set_epoch(e)`` before each pass, as with the library's sampler.
    """

    def __init__(self, n: int, seed: int = 0, rank: int = 0, world: int = 1):
        self.n, self.seed, self.rank, self.world, self.epoch = n, seed, rank, world, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def starts(self) -> torch.Tensor:
        """``(n // world,)`` int64: this rank's window starts for the current epoch."""
        perm = torch.randperm(self.n, generator=torch.Generator().manual_seed(self.seed + self.epoch))
        return perm[: self.n - self.n % self.world][self.rank :: self.world]


def window_batches(ids: torch.Tensor, batch_size: int, seq_len: int, seed: int = 0, device=None):
    """Forever: ``(x, y, None)`` with ``x, y: (batch_size, seq_len)`` on ``device``, y = x shifted by one.

    Windows start anywhere in the flat ``(N,)`` stream; every start is drawn once per epoch
    (``WindowSampler``). Under ``torch.distributed`` each rank reads its own windows: together the
    ranks read what one process would read with ``world * batch_size`` windows a step.
    """
    rank, world = rank_and_world()
    sampler = WindowSampler(ids.numel() - seq_len, seed, rank, world)
    ids, offsets = ids.to(device), torch.arange(seq_len + 1, device=device)
    for epoch in itertools.count():
        sampler.set_epoch(epoch)
        starts = sampler.starts().to(device)
        for i in range(0, starts.numel() - batch_size + 1, batch_size):
            w = ids[starts[i : i + batch_size, None] + offsets]  # (B, T + 1)
            yield w[:, :-1], w[:, 1:], None


def stream_batches(ids: torch.Tensor, batch_size: int, seq_len: int, device=None):
    """Forever: consecutive ``(x, y, fresh)`` windows of ``batch_size`` contiguous streams (``batchify``).

    ``fresh`` is True where the streams start over (the carried state must be dropped). Under
    ``torch.distributed`` rank ``r`` reads streams ``r * batch_size ..`` of ``world * batch_size``.
    """
    rank, world = rank_and_world()
    streams = batchify(ids, batch_size * world)[rank * batch_size : (rank + 1) * batch_size].to(device)
    while True:
        for pos in range(0, streams.shape[1] - seq_len, seq_len):  # only full windows; then start over
            yield streams[:, pos : pos + seq_len], streams[:, pos + 1 : pos + 1 + seq_len], pos == 0


def train_lm(
    model: _LM,
    train_ids: torch.Tensor,
    cfg: TrainConfig,
    valid_ids: torch.Tensor | None = None,
    live: bool = True,
    title: str = "training",
    disable_bar: bool = False,
    clock=time.perf_counter,
) -> dict:
    """Train ``model`` on the flat ``(N,)`` stream ``train_ids`` with ``train.train``; return the history.

    Validation points (on the first ``cfg.eval_tokens`` of ``valid_ids``) come every
    ``cfg.eval_every`` steps (default: 20 per run; with a budget, every twentieth of it) and are
    timed apart from training. ``history``: lists ``step``, ``tokens``, ``seconds``, ``train_ppl``
    (over the steps since the previous point) and ``val_ppl`` at the points, ``loss`` per step;
    ``train_seconds``, ``eval_seconds``, ``steps``, ``tokens_seen``, ``tokens_per_s``. ``clock``
    measures training time (``time.process_time`` counts CPU seconds).
    """
    torch.manual_seed(cfg.seed)
    device = next(model.parameters()).device
    opts = make_optimizers(model, cfg)
    progress = Progress()
    schedule = lambda _: lr_factor(progress.value, cfg.warmup, cfg.min_lr_frac)
    scheds = [torch.optim.lr_scheduler.LambdaLR(o, schedule) for o in opts]
    if cfg.contiguous:
        batches = stream_batches(train_ids, cfg.batch_size, cfg.seq_len, device)
    else:
        batches = window_batches(train_ids, cfg.batch_size, cfg.seq_len, cfg.seed, device)
    carried = [None]  # the LSTM's state, carried across consecutive windows

    def loss_fn(m, batch):
        x, y, fresh = batch
        if not cfg.contiguous or fresh:
            carried[0] = None
        loss, state = m(x, y, carried[0])
        carried[0] = None if state is None else tuple(s.detach() for s in state)
        return loss

    def val(m, hist):
        ev = evaluate(m, valid_ids, cfg.seq_len, max_tokens=cfg.eval_tokens, bf16=cfg.bf16, stride=cfg.eval_stride)
        return {"val_loss": ev["nll_sum"] / ev["tokens"]}

    every = cfg.eval_every or max(1, (cfg.steps or 10**9) // 20)
    h = train(
        model,
        loss_fn,
        batches,
        opts,
        scheds,
        steps=cfg.steps,
        budget_s=cfg.budget_s,
        clip=cfg.clip or None,
        bf16=cfg.bf16,
        log_every=min(every, 50),
        evaluate=val if valid_ids is not None else None,
        eval_every=every if cfg.steps is not None else None,
        eval_every_s=cfg.budget_s / 20 if cfg.budget_s is not None else None,
        progress=progress,
        live=live,
        bar=not disable_bar,
        title=title,
        clock=clock,
    )
    per_step = cfg.batch_size * cfg.seq_len * rank_and_world()[1]
    points = h["eval_step"] if valid_ids is not None else []
    bounds = [0] + points
    h.update(
        step=points,
        tokens=[s * per_step for s in points],
        seconds=h["eval_train_seconds"],
        train_ppl=[_mean_exp(h["loss"][a:b]) for a, b in zip(bounds, bounds[1:])],
        val_ppl=[math.exp(v) for v in h.get("val_loss", [])],
        tokens_seen=h["steps"] * per_step,
        tokens_per_s=h["steps"] * per_step / max(h["train_seconds"], 1e-9),
    )
    model.train()
    return h


def _mean_exp(losses: list) -> float:
    return math.exp(sum(losses) / len(losses)) if losses else float("nan")


# --------------------------------------------------------------------------- the recipes

#: The full-data recipe (notebook 10 and ``python -m transformer_nb.bench lm``); every choice
#: here was measured against its alternatives (see notebook 10, section "Spending the budget").
RECIPE_MODEL = dict(
    d_model=128,
    n_heads=4,
    d_ff=512,
    n_layers=2,
    positions="rope",
    max_len=1024,
    head="adaptive_tied",
    cutoffs=(2000, 10000),
    div_value=4.0,
    dropout=0.0,
)
RECIPE_TRAIN = dict(
    batch_size=8,
    seq_len=128,
    lr=3e-3,
    weight_decay=0.1,
    warmup=0.05,
    bf16=True,
    eval_stride=32,
    optimizer="muon",
    adamw_lr=9e-3,
)
#: The LSTM baseline: the same embedding width and output head (tied adaptive: 154.4 against
#: 169.4 untied at 360 s), the same optimiser and schedule; consecutive windows with the state
#: carried over (its natural way to read a corpus); fp32, lr 3e-3 (better than 2e-3 at 150 s); AdamW's
#: part at 9e-3 like the Transformer's (182.7 against 195.2 with 3e-3 at 150 s; 186.6 with 3e-2).
LSTM_MODEL = dict(
    d_model=128, hidden_size=256, n_layers=2, head="adaptive_tied", cutoffs=(2000, 10000), div_value=4.0, dropout=0.0
)
#: Optimiser steps of the notebook's full profile (~340 s on 2 idle cores, Muon included).
FULL_STEPS = 4600
#: The LSTM's steps in the full profile (about the Transformer's seconds: Muon costs the LSTM more).
LSTM_FULL_STEPS = 3800
LSTM_TRAIN = dict(
    batch_size=16,
    seq_len=64,
    lr=3e-3,
    weight_decay=0.1,
    warmup=0.05,
    bf16=False,
    contiguous=True,
    optimizer="muon",
    adamw_lr=9e-3,
)


def build_model(kind: str, vocab_size: int, ranks: torch.Tensor | None = None, seed: int = 0, **overrides):
    """A fresh, seeded recipe model: ``kind`` is ``"transformer"`` or ``"lstm"``."""
    if kind not in ("transformer", "lstm"):
        raise ValueError(f"kind must be 'transformer' or 'lstm', got {kind!r}")
    torch.manual_seed(seed)
    cfg = {**(RECIPE_MODEL if kind == "transformer" else LSTM_MODEL), **overrides}
    cls = TransformerLM if kind == "transformer" else LSTMLM
    return cls(vocab_size, ranks=ranks, **cfg)


def recipe_config(kind: str = "transformer", **overrides) -> TrainConfig:
    """The recipe's ``TrainConfig``; pass ``steps=`` or ``budget_s=`` (and any override)."""
    if kind not in ("transformer", "lstm"):
        raise ValueError(f"kind must be 'transformer' or 'lstm', got {kind!r}")
    return TrainConfig(**{**(RECIPE_TRAIN if kind == "transformer" else LSTM_TRAIN), **overrides})


def cache_config(kind: str, steps: int, vocab_size: int, seed: int = 0, eval_tokens: int | None = None) -> dict:
    """What a cached model was trained with; a cache saved under another config is retrained."""
    model = RECIPE_MODEL if kind == "transformer" else LSTM_MODEL
    return {
        "kind": kind,
        "model": model,
        "train": recipe_config(kind, steps=steps, seed=seed).__dict__,
        "vocab_size": vocab_size,
        "eval_tokens": eval_tokens,
    }


def cache_name(config: dict) -> str:
    """``wikitext2_<kind>_<8 hex digits of the config>``: one cache file per configuration."""
    digest = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:8]
    return f"wikitext2_{config['kind']}_{digest}"


def load_or_train(
    kind: str,
    data,
    steps: int,
    seed: int = 0,
    retrain: bool = False,
    live: bool = True,
    eval_tokens: int | None = 20_000,
    eval_every: int | None = None,
):
    """Build the recipe model and load its trained weights from the cache, or train and save it.

    ``data`` is a ``wikitext.WikiText2``. Training runs ``steps`` optimiser steps of
    ``recipe_config(kind)`` with validation points on the first ``eval_tokens`` of the
    validation split. Uses ``cache.load_or_train`` (``torch.load(weights_only=True)``; a
    corrupt or mismatched file is reported and the model retrained). Returns
    ``(model, history, trained_now)``; the history is stored with the weights.
    """
    from transformer_nb import cache

    vocab_size = len(data.vocab)
    model = build_model(kind, vocab_size, frequency_ranks(data.train, vocab_size), seed=seed)
    config = cache_config(kind, steps, vocab_size, seed, eval_tokens)
    tcfg = recipe_config(kind, steps=steps, seed=seed, eval_tokens=eval_tokens or 20_000, eval_every=eval_every)

    def train_fn(m):
        return train_lm(m, data.train, tcfg, valid_ids=data.valid, live=live, title=f"{kind} on WikiText-2")

    hist, trained = cache.load_or_train(cache_name(config), model, config, train_fn, retrain)
    model.eval()
    return model, hist, trained


def load_cached_recipe(model: nn.Module, vocab_size: int, steps: int | None = None, eval_tokens: int = 20_000):
    """Load notebook 10's cached full-profile Transformer into ``model``: ``(ok, message)``."""
    from transformer_nb import cache

    config = cache_config("transformer", steps or FULL_STEPS, vocab_size, 0, eval_tokens)
    ok, msg, _ = cache.load(cache_name(config), model, config)
    return ok, msg


# --------------------------------------------------------------------------- generation


def top_k_filter(logits: torch.Tensor, k: int | None) -> torch.Tensor:
    """Keep the ``k`` largest logits of each row, set the rest to ``-inf``. ``logits: (..., V)``."""
    if k is None or k <= 0 or k >= logits.shape[-1]:
        return logits
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth, float("-inf"))


def sample_next(
    logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Pick the next token from ``logits (B, V)``: greedy when ``temperature == 0``, else sample
    from ``softmax(top_k_filter(logits) / temperature)``. Returns ``(B,)`` int64."""
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0 (0 = greedy), got {temperature}")
    if temperature == 0:
        return logits.argmax(dim=-1)
    probs = torch.softmax(top_k_filter(logits.float(), top_k) / temperature, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def _pick(head: OutputHead, h: torch.Tensor, temperature, top_k, gen) -> torch.Tensor:
    if temperature == 0:
        return head.greedy(h)
    scores, order = head.next_token_scores(h)
    nxt = sample_next(scores, temperature, top_k, gen)
    return nxt if order is None else order[nxt]


@contextmanager
def no_onednn():
    """Switch PyTorch's oneDNN (mkldnn) kernels off inside the block (restored on exit).

    Generation works on one token at a time, and on such tiny tensors oneDNN's per-call set-up
    costs more than the arithmetic: a 512-wide GELU took 7.3 us through oneDNN and 1.4 us
    through PyTorch's own kernel on the 2 CPU cores this was written on. (The library's
    ``torch.backends.mkldnn.flags(enabled=False)`` would also reset oneDNN's TF32 and fp32-precision
    settings to its defaults, with a warning about Intel GPUs; this touches only ``enabled``.)"""
    before = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = False
    try:
        yield
    finally:
        torch.backends.mkldnn.enabled = before


@torch.inference_mode()
@no_onednn()
def generate(
    model: TransformerLM | LSTMLM,
    prompt: torch.Tensor,
    n_new: int,
    temperature: float = 0.0,
    top_k: int | None = None,
    seed: int | None = 0,
    use_cache: bool = True,
) -> torch.Tensor:
    """Extend ``prompt`` (``(T0,)`` ids) by ``n_new`` tokens; returns ``(T0 + n_new,)``.

    Without a cache every step re-runs the model on the whole sequence (the last
    ``max_len`` tokens if it grew longer). With a cache (Transformer) the prompt is
    processed once and each step feeds one token. The LSTM always carries its state.
    Sampling uses a ``torch.Generator`` seeded with ``seed``, so a seed fixes the text.
    Runs with oneDNN off (``no_onednn``), with or without the cache.
    """
    if prompt.dim() != 1 or prompt.numel() == 0:
        raise ValueError(f"prompt must be a non-empty 1-D tensor of ids, got shape {tuple(prompt.shape)}")
    was_training = model.training
    model.eval()
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    out = torch.empty(prompt.numel() + n_new, dtype=torch.long)
    out[: prompt.numel()] = prompt
    n = prompt.numel()
    if isinstance(model, LSTMLM):
        h, state = model.hidden(prompt[None])
        for _ in range(n_new):
            out[n] = _pick(model.head, h[:, -1], temperature, top_k, gen)
            h, state = model.hidden(out[n : n + 1][None], state)
            n += 1
    elif use_cache:
        if prompt.numel() + n_new > model.max_len:
            raise ValueError(
                f"prompt ({prompt.numel()}) + n_new ({n_new}) exceeds max_len={model.max_len}: "
                f"the KV cache cannot slide its positions; generate fewer tokens or use_cache=False"
            )
        cache = model.new_cache()
        h = model.cached_hidden(prompt[None], cache)
        for _ in range(n_new):
            out[n] = _pick(model.head, h[:, -1], temperature, top_k, gen)
            h = model.cached_hidden(out[n : n + 1][None], cache, check=False)
            n += 1
    else:
        for _ in range(n_new):
            h = model.hidden(out[max(0, n - model.max_len) : n][None])
            out[n] = _pick(model.head, h[:, -1], temperature, top_k, gen)
            n += 1
    model.train(was_training)
    return out


# --------------------------------------------------------------------------- Exercise 8.9


def sample_corpus(train_ids: torch.Tensor, itos: list[str], n_tokens: int = 50_000, unk: str = "<unk>"):
    """The first ``n_tokens`` of the training stream, re-indexed with its own vocabulary.

    Returns ``(ids (n_tokens,), itos_sample)``; ``itos_sample`` lists the sample's word
    types in order of first appearance (plus ``unk`` if absent), so a word outside the
    sample encodes to ``unk``.
    """
    if train_ids.dim() != 1 or train_ids.numel() < n_tokens:
        raise ValueError(f"need a 1-D stream of at least {n_tokens} ids, got shape {tuple(train_ids.shape)}")
    part = train_ids[:n_tokens]
    old = list(dict.fromkeys(part.tolist()))
    words = [itos[i] for i in old]
    if unk not in words:
        words.append(unk)
    remap = {o: n for n, o in enumerate(old)}
    return torch.tensor([remap[i] for i in part.tolist()], dtype=torch.long), words


def train_epochs(
    model: _LM,
    ids: torch.Tensor,
    epochs: int = 5,
    batch_size: int = 16,
    seq_len: int = 256,
    lr: float = 3e-4,
    seed: int = 0,
    live: bool = True,
    title: str = "training",
) -> dict:
    """Exercise 8.9's recipe: AdamW at a constant ``lr`` for ``epochs`` passes over ``ids``.

    ``ids`` is cut into non-overlapping windows of ``seq_len + 1`` tokens (inputs and the
    targets shifted by one), shuffled each epoch with a seeded generator; the LSTM starts
    every window from a zero state, like the Transformer. Returns per-epoch
    ``train_ppl`` (mean over the epoch's batches), ``seconds`` (training time per epoch)
    and the total ``train_seconds``.
    """
    from transformer_nb.plotting import LiveLoss

    n = (ids.numel() - 1) // seq_len
    if n < 1:
        raise ValueError(f"{ids.numel()} tokens do not fill one window of seq_len={seq_len}")
    windows = ids[: n * seq_len + 1].unfold(0, seq_len + 1, seq_len)  # (n, seq_len + 1), overlap 1
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    steps_per_epoch = (n + batch_size - 1) // batch_size
    bar = LiveLoss(
        total=epochs * steps_per_epoch, title=title, ylabel="train perplexity", logy=True, plot=None if live else False
    )
    hist = {"train_ppl": [], "seconds": []}
    model.train()
    for _ in range(epochs):
        t0, tot, cnt = time.perf_counter(), 0.0, 0
        for idx in torch.randperm(n, generator=gen).split(batch_size):
            w = windows[idx]
            loss = model.nll(w[:, :-1], w[:, 1:])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            tot += loss.item() * w[:, 1:].numel()
            cnt += w[:, 1:].numel()
            bar.update(1, train_ppl=math.exp(loss.item()))
        hist["seconds"].append(time.perf_counter() - t0)
        hist["train_ppl"].append(math.exp(tot / cnt))
    bar.close()
    hist["train_seconds"] = sum(hist["seconds"])
    return hist


def lstm_matching(target_params: int, vocab_size: int, d_model: int, n_layers: int = 2, **kw) -> LSTMLM:
    """An ``LSTMLM`` whose hidden size makes its parameter count closest to ``target_params``."""
    base = LSTMLM(vocab_size, d_model, d_model, n_layers, **kw).num_parameters()

    def count(h):  # an LSTM layer: 4 gates x (input + hidden + 2 biases) x hidden
        rnn = sum(4 * h * ((d_model if i == 0 else h) + h + 2) for i in range(n_layers))
        return rnn + (h * d_model + d_model if h != d_model else 0)

    hidden = min(range(4, 8 * d_model + 1), key=lambda h: abs(base - count(d_model) + count(h) - target_params))
    model = LSTMLM(vocab_size, d_model, hidden, n_layers, **kw)
    return model


def time_generation(model: TransformerLM, prompt: torch.Tensor, lengths, repeats: int = 1) -> dict:
    """Seconds to generate ``n`` greedy tokens for each ``n`` in ``lengths``, with and without the
    KV cache (best of ``repeats``). Returns ``{"lengths", "cache", "no_cache", "identical"}``."""
    out = {"lengths": list(lengths), "cache": [], "no_cache": [], "identical": True}
    for n in out["lengths"]:
        seqs = {}
        for use_cache in (True, False):
            best = float("inf")
            for _ in range(repeats):
                t0 = time.perf_counter()
                seqs[use_cache] = generate(model, prompt, n, use_cache=use_cache)
                best = min(best, time.perf_counter() - t0)
            out["cache" if use_cache else "no_cache"].append(best)
        out["identical"] &= bool(torch.equal(seqs[True], seqs[False]))
    return out
