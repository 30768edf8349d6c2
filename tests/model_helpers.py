"""The small models the model tests share: the three variants of the one ``Transformer`` at the tests' sizes
(``d_model`` 32 unless given, ``d_model / 8`` heads, ``d_ff = 2·d_model``; bind a test file's vocabulary with
``functools.partial(model_helpers.decoder_only, V)``), and a small language model with any output layer."""

import torch

from transformer_nb import lm_recipe
from transformer_nb.core.output_head import frequency_ranks
from transformer_nb.core.transformer import Transformer


def lm(head: str = "adaptive", vocab: int = 300, cutoffs=(40, 150), **fields) -> Transformer:
    """A small decoder-only LM in eval mode with the output layer ``head`` (``output_head.HEADS``), its word
    ranks from a seeded random text of ``10·vocab`` words; ``fields``: any other ``TransformerConfig`` field."""
    torch.manual_seed(0)
    ranks = frequency_ranks(torch.randint(0, vocab, (10 * vocab,), generator=torch.Generator().manual_seed(1)), vocab)
    sizes = {"d_model": 32, "n_heads": 4, "d_ff": 64, "n_layers": 2, "max_len": 32, **fields}
    return Transformer(vocab=vocab, ranks=ranks, cutoffs=cutoffs, **lm_recipe.HEAD_FIELDS[head], **sizes).eval()


def decoder_only(vocab: int, n_layers: int = 1, d_model: int = 32, **fields) -> Transformer:
    """A decoder-only ``Transformer`` (``fields``: any other ``TransformerConfig`` field)."""
    return Transformer(
        vocab=vocab, d_model=d_model, n_heads=d_model // 8, n_layers=n_layers, d_ff=2 * d_model, **fields
    )


def encoder_only(vocab: int, n_layers: int = 1, **fields) -> Transformer:
    """The same ``Transformer``, ``arch="encoder"`` (BERT-style, bidirectional)."""
    return decoder_only(vocab, n_layers, arch="encoder", **fields)


def encoder_decoder(
    vocab: int, n_layers: int = 1, n_dec_layers: int | None = None, d_model: int = 32, **fields
) -> Transformer:
    """The original's encoder-decoder: two token tables scaled by sqrt(d_model), a zero PAD row (id 0), a full
    output layer with a bias, unless ``fields`` say otherwise (a tied output layer gets no PAD row)."""
    fields = {"share_embeddings": False, "scale_embeddings": True, "tie_output": False, "output_bias": True, **fields}
    if not fields["tie_output"]:
        fields.setdefault("pad_id", 0)
    return decoder_only(vocab, n_layers, d_model, arch="encoder-decoder", n_dec_layers=n_dec_layers, **fields)
