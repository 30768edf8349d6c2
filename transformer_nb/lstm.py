"""The LSTM baseline of the WikiText-2 notebooks (000 Exercise 8.9; 001 §19.13-19.14): a companion
module, not the Transformer the chapter teaches, so no core module imports it.

``LSTMLM``: embedding -> ``nn.LSTM`` -> projection to ``d`` -> an ``OutputHead``. It speaks the
contract of the ``Transformer`` (``transformer.py``), from their shared ``LanguageModel``:
``forward(ids, targets=None, state=None) -> (logits, loss)``; ``hidden(ids, state) -> (h, state)``.
Its ``state`` is ``init_state()``, a one-element list holding the LSTM's ``(h, c)``, which every
call updates in place (detached: training carries it across consecutive windows, truncated
back-propagation through time). With ``state=None`` a call starts fresh and returns a new one.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from transformer_nb.core.checks import as_int, check_cutoffs, check_ids
from transformer_nb.core.output_head import OutputHead
from transformer_nb.core.transformer import LanguageModel


class LSTMLM(LanguageModel):
    """Recurrent baseline: embedding -> ``n_layers`` LSTM (``hidden_size``) -> projection to d -> head.

    ``hidden(ids, state=None) -> (h (B, T, d), state)``; ``state[0]`` is ``(h_n, c_n)``, each
    ``(n_layers, B, hidden_size)`` (see the module doc).
    """

    def __init__(self, vocab_size: int, d_model=256, hidden_size=None, n_layers=2, dropout=0.0, head="adaptive",
                 ranks: torch.Tensor | None = None, cutoffs=(2000, 10000), div_value=4.0):  # fmt: skip
        super().__init__()
        self.vocab_size, self.d_model = vocab_size, d_model
        if head in ("adaptive", "adaptive_tied"):
            check_cutoffs(cutoffs, div_value, d_model, vocab_size)
        self.head = OutputHead(head, d_model, vocab_size, ranks, cutoffs, div_value)
        self.tok = None if self.head.embeds else nn.Embedding(vocab_size, d_model)  # tied: the head's table
        self.hidden_size = d_model if hidden_size is None else as_int("hidden_size", hidden_size, 1)
        if self.tok is not None:
            nn.init.uniform_(self.tok.weight, -0.1, 0.1)
        self.drop = nn.Dropout(dropout)
        self.rnn = nn.LSTM(d_model, self.hidden_size, n_layers, batch_first=True, dropout=dropout * (n_layers > 1))
        self.proj = nn.Linear(self.hidden_size, d_model) if self.hidden_size != d_model else nn.Identity()

    recurrent = True

    def init_state(self) -> list:
        """A fresh state: ``[None]``, which the next call fills with the LSTM's ``(h, c)``."""
        return [None]

    def hidden(self, ids: torch.Tensor, state: list | None = None):
        """``(B, T) -> ((B, T, d), state)``; ``state``: ``init_state()`` (updated in place) or None (a new one)."""
        check_ids(ids, "ids", self.vocab_size, device=next(self.parameters()).device)
        if state is not None and (not isinstance(state, list) or len(state) != 1):
            raise ValueError(f"state must be init_state(): a one-element list, got {type(state).__name__}")
        state = [None] if state is None else state
        out, hc = self.rnn(self.drop(self.embed_tokens(ids)), state[0])
        state[0] = tuple(s.detach() for s in hc)
        return self.drop(self.proj(out)), state
