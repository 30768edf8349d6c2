"""``EncoderOnly``: notebook 08's BERT-style model, an ``Embedder`` (token embedding × sqrt(d) + sinusoids),
a bidirectional ``Encoder``, a masked-LM head and an optional ``[CLS]`` classifier (000 §8.6.1; 004 §13.1).

Companion code: the core's encoder-only model is ``Transformer(TransformerConfig(arch="encoder", ...))``
(``transformer.py``), built from the same blocks; this class adds BERT's classifier for notebook 08.
"""

import torch
import torch.nn as nn

from transformer_nb.models import Embedder
from transformer_nb.stack import Encoder, check_keep
from transformer_nb.transformer import TransformerConfig


class EncoderOnly(nn.Module):
    """BERT-style: ``Embedder`` -> bidirectional ``Encoder`` -> a masked-LM head (and an optional classifier).

    - ``encode(ids (B, T), keep (B, T) | None) -> hidden (B, T, d)``
    - ``forward(ids, keep=None) -> MLM logits (B, T, vocab)``: a prediction at every position
      (the loss uses only the masked ones, see ``mlm_batch``)
    - ``classify(ids, keep=None) -> (B, n_classes)`` from the hidden state at position 0 (the
      ``[CLS]`` token the caller puts first; 000 §8.6.1, 004 §13.1)
    ``tie_weights``: the MLM head shares the embedding matrix (no bias), as in BERT.
    """

    def __init__(
        self,
        vocab: int,
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 2,
        d_ff: int = 256,
        dropout: float = 0.0,
        max_len: int = 256,
        norm_first: bool = True,
        pad_id: int | None = 0,
        activation: str = TransformerConfig.activation,
        n_classes: int | None = None,
        tie_weights: bool = True,
    ):
        super().__init__()
        self.embed = Embedder(vocab, d_model, max_len, dropout, pad_id)
        self.encoder = Encoder(d_model, n_heads, d_ff, n_layers, dropout, norm_first, activation, causal=False)
        self.mlm_head = nn.Linear(d_model, vocab, bias=False)
        if tie_weights:
            self.mlm_head.weight = self.embed.tok.weight
        self.classifier = nn.Linear(d_model, n_classes) if n_classes else None

    def encode(self, ids, keep=None):
        if isinstance(ids, torch.Tensor) and ids.dim() == 2:
            check_keep(keep, ids.shape[0], ids.shape[1], "keep")
        return self.encoder(self.embed(ids), keep)

    def forward(self, ids, keep=None):
        return self.mlm_head(self.encode(ids, keep))

    def classify(self, ids, keep=None):
        if self.classifier is None:
            raise ValueError("this EncoderOnly has no classifier: build it with n_classes=<number of classes>")
        return self.classifier(self.encode(ids, keep)[:, 0])
