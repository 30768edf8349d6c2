"""The output layer of a language model: hidden states -> a distribution over the vocabulary
(000 §8.6.2; 001 §19.11.3 weight tying; Grave et al. 2017; Baevski & Auli 2019).

``OutputHead(kind, d_model, vocab_size, ranks=None, bias=True)`` with ``kind``:

- ``"full"``: a ``Linear(d, V)`` (with bias) and a softmax over all ``V`` words;
- ``"tied"``: the same ``Linear``, whose weight is the token embedding ``E`` that the head owns
  (``embed`` looks words up in it): the logits are ``h @ E^T + b`` (Press & Wolf 2017);
- ``"adaptive"``: ``nn.AdaptiveLogSoftmaxWithLoss``. Words sorted by frequency are split by
  ``cutoffs`` into a head of frequent words (full width) and tail clusters whose words go
  through a narrower projection (``d / div_value^i``). It needs ``ranks = frequency_ranks(...)``;
  the head keeps that order in buffers, so every public method speaks vocabulary ids;
- ``"adaptive_tied"``: the adaptive softmax whose weights are also the input embedding
  ("adaptive input"): a frequent word's embedding is its row of the head matrix, a rarer word's
  its row of the cluster matrix ``(n_i, d/4^i)`` mapped back to ``d`` by the cluster projection.

Shapes: hidden ``h: (N, d)``; targets ``y: (N,)``; log-probabilities ``(N, V)``.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.core import checks

HEADS = ("full", "tied", "adaptive", "adaptive_tied")


@checks.boundary(checks._frequency_ranks)
def frequency_ranks(train_ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """``(V,)`` int64: ``rank[id]`` = position of ``id`` when words are sorted by training count
    (0 = most frequent; ties keep id order)."""
    counts = torch.bincount(train_ids.reshape(-1).cpu(), minlength=vocab_size)
    order = torch.argsort(counts, descending=True, stable=True)  # rank -> id
    ranks = torch.empty_like(order)
    ranks[order] = torch.arange(vocab_size)
    return ranks


class OutputHead(nn.Module):
    """Hidden states ``(N, d)`` -> per-token NLL, log-probabilities, or the greedy word (see the module doc)."""

    @checks.boundary(checks._output_head_init)
    def __init__(
        self,
        kind: str,
        d_model: int,
        vocab_size: int,
        ranks: torch.Tensor | None = None,
        cutoffs=(2000, 10000),
        div_value: float = 4.0,
        bias: bool = True,
    ):
        super().__init__()
        self.kind, self.d_model, self.vocab_size = kind, d_model, vocab_size
        self._table = None  # the (V, d) embeddings while ``lookup_table()`` is active
        if kind == "full":
            self.proj = nn.Linear(d_model, vocab_size, bias=bias)
        elif kind == "tied":  # one matrix, two uses: the Linear's weight is the embedding's (built on meta: no draw)
            self.tok = nn.Embedding(vocab_size, d_model)
            self.proj = nn.Linear(d_model, vocab_size, bias=bias, device="meta")
            self.proj.weight = self.tok.weight
            self.proj.bias = nn.Parameter(torch.zeros(vocab_size)) if bias else None
        else:
            self.register_buffer("ranks", ranks.clone().long())
            self.register_buffer("order", torch.argsort(self.ranks))  # rank -> word id
            self.asm = nn.AdaptiveLogSoftmaxWithLoss(d_model, vocab_size, list(cutoffs), div_value=div_value)

    @property
    def adaptive(self) -> bool:
        return self.kind in ("adaptive", "adaptive_tied")

    @property
    def embeds(self) -> bool:
        """Whether this head also provides the input embeddings (``embed``)."""
        return self.kind in ("tied", "adaptive_tied")

    # ----- input side ---------------------------------------------------------------------
    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """Tied heads only: ids ``(...)`` -> embeddings ``(..., d)`` read from the output weights."""
        if self.kind == "tied":
            return self.tok(ids)
        if self._table is not None:
            return F.embedding(ids, self._table)
        return self._embed_rows(ids)

    def _embed_rows(self, ids: torch.Tensor) -> torch.Tensor:
        asm = self.asm
        r = self.ranks[ids.reshape(-1)]
        bounds = [0] + list(asm.cutoffs)  # [0, 2000, 10000, V]
        out = F.embedding(r.clamp(max=bounds[1] - 1), asm.head.weight)  # frequent words: head rows
        for i, (lo, hi) in enumerate(zip(bounds[1:-1], bounds[2:])):
            idx = ((r >= lo) & (r < hi)).nonzero().squeeze(1)
            if idx.numel():
                low = F.embedding(r[idx] - lo, asm.tail[i][1].weight)  # (n, d / div^(i+1))
                # Under CUDA autocast the product is bfloat16 while the embedding lookup stays float32, and
                # index_copy wants one dtype (CPU autocast promotes it; CUDA's does not): cast explicitly.
                out = out.index_copy(0, idx, (low @ asm.tail[i][0].weight).to(out.dtype))
        # The softmax weights start small (uniform in +-1/sqrt(d)); scaled by sqrt(d) the embeddings
        # have roughly unit size, as an nn.Embedding's would (as in Vaswani et al. §3.4).
        return out.view(*ids.shape, self.d_model) * self.d_model**0.5

    @torch.no_grad()
    def embedding_table(self) -> torch.Tensor:
        """``adaptive_tied``: the ``(V, d)`` embeddings of every word, ``embed(arange(V))``, built a
        cluster at a time (in rank order the clusters are consecutive blocks of rows)."""
        asm, scale = self.asm, self.d_model**0.5
        blocks = [asm.head.weight[: asm.cutoffs[0]] * scale]
        blocks += [rows.weight @ (proj.weight * scale) for proj, rows in asm.tail]
        return F.embedding(self.ranks, torch.cat(blocks))  # row ``rank[id]`` for every id (a fast row gather)

    @contextmanager
    def lookup_table(self):
        """Within the block, ``embed`` reads one ``(V, d)`` table computed on entry (``adaptive_tied``;
        a no-op for the other kinds). For generation, where the weights stay fixed: a token's
        embedding becomes one lookup instead of a pass over the clusters. ``generate`` opens one;
        open it around several generations (timing, a widget) to build the table once."""
        if self.kind != "adaptive_tied" or self._table is not None:  # nothing to do, or already inside one
            yield
            return
        self._table = self.embedding_table()
        try:
            yield
        finally:
            self._table = None

    # ----- output side --------------------------------------------------------------------
    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """``(N, d) -> (N, V)`` logits (full and tied heads)."""
        return self.proj(h)

    def nll(self, h: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Per-token negative log-likelihood: ``h (N, d)``, ``y (N,)`` -> ``(N,)`` float32."""
        if self.adaptive:
            with torch.autocast(h.device.type, enabled=False):  # the adaptive head runs in its weights' dtype
                return -self.asm(h.to(self.asm.head.weight.dtype), self.ranks[y]).output.float()
        return F.cross_entropy(self.logits(h).float(), y, reduction="none")

    def log_probs(self, h: torch.Tensor) -> torch.Tensor:
        """``(N, d) -> (N, V)`` float32 log-probabilities in vocabulary-id order."""
        scores, order = self.next_token_scores(h)
        return scores if order is None else scores.index_select(1, self.ranks)

    def next_token_scores(self, h: torch.Tensor):
        """For sampling: ``(log_probs (N, V), order)`` where column ``j`` is word ``order[j]``
        (``order`` is None for id order). The adaptive head answers in frequency-rank order,
        which saves reordering 33k numbers at every generated token."""
        if self.adaptive:
            with torch.autocast(h.device.type, enabled=False):
                return self.asm.log_prob(h.to(self.asm.head.weight.dtype)).float(), self.order
        return F.log_softmax(self.logits(h).float(), dim=-1), None

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
            h = h.to(self.asm.head.weight.dtype)
            z = F.linear(h, asm.head.weight, asm.head.bias).float()  # (N, shortlist + clusters) logits
            best, rank = z[:, :s].max(dim=1)
            may_win = (z[:, s:] > best[:, None]).any(dim=0).tolist()  # per cluster, for any row
            for i in range(asm.n_clusters):
                if not may_win[i]:
                    continue  # no word of cluster i can win
                c = z[:, s + i]
                v, j = (F.log_softmax(asm.tail[i](h).float(), dim=1) + c[:, None]).max(dim=1)
                win = v > best  # ties: the lower rank, as argmax
                best, rank = torch.where(win, v, best), torch.where(win, j + asm.cutoffs[i], rank)
        return self.order[rank]
