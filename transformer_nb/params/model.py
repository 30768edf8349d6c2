"""The second route to every count: ``numel`` of a real model (000 §8.3.5; 001 §19.8.4).

``build_transformer(config)`` builds the package's one ``Transformer`` (``transformer.py``), the
model that notebooks train, from the ``TransformerConfig``. Built on ``torch.device("meta")`` it
has every parameter's shape but no storage, so GPT-3 (175 billion parameters, 700 GB in fp32)
is counted in seconds with no memory.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext

import torch
import torch.nn as nn

from transformer_nb.core.config import TransformerConfig
from transformer_nb.params.formulas import CATEGORIES

HEADS = ("head", "mlm_head")  # the output layers of the package's models


_INIT_FUNCTIONS = ("uniform_", "normal_", "kaiming_uniform_", "ones_", "zeros_", "xavier_uniform_", "trunc_normal_")


@contextmanager
def _no_init():
    """Make ``torch.nn.init``'s fill functions no-ops (a meta tensor holds no values to fill).

    The same trick as Hugging Face's ``no_init_weights``: it skips the (pointless) random
    initialisation, which on the meta device costs seconds on first use and nothing else.
    """
    saved = {name: getattr(nn.init, name) for name in _INIT_FUNCTIONS}
    try:
        for name in _INIT_FUNCTIONS:
            setattr(nn.init, name, lambda tensor, *args, **kwargs: tensor)
        yield
    finally:
        for name, fn in saved.items():
            setattr(nn.init, name, fn)


def build_transformer(cfg: TransformerConfig, device="meta"):
    """``Transformer(cfg)`` built directly on ``device``.

    ``device="meta"`` (default): every parameter has its shape and dtype but no storage and no
    values, so any size can be counted; initialisation is skipped there. On a real device
    the parameters are allocated and initialised as usual.
    """
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"build_transformer needs a TransformerConfig, got {type(cfg).__name__}")
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"device must name a torch device such as 'meta', 'cpu' or 'cuda', got {device!r}") from err
    from transformer_nb.core.transformer import Transformer  # the whole model, loaded by the functions that build it

    with torch.device(device), _no_init() if device.type == "meta" else nullcontext():
        return Transformer(cfg)


# --------------------------------------------------------------------------- counting a real model


def numel(model: nn.Module) -> int:
    """Number of parameters; a tied (shared) tensor is counted once, as ``model.parameters()`` yields it once."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"numel needs an nn.Module, got {type(model).__name__}")
    return sum(p.numel() for p in model.parameters())


def numel_breakdown(model: nn.Module) -> dict:
    """``numel`` of a model built from the package's modules, split into ``CATEGORIES`` by each tensor's module.

    positions = learned position tables (``LearnedPositionalEmbedding``, T5's table); embeddings =
    the other ``nn.Embedding`` tables (tokens, segments); attention = inside ``MultiHeadAttention``;
    ffn = inside ``FeedForward``; norms = LayerNorm/RMSNorm; head = an *untied* output projection
    (a module named ``head`` or ``mlm_head``) and its bias; other = the rest
    (BERT's pooler, a classifier). A tied tensor is counted once, where it first appears (the
    embedding). Also returns ``"total"`` and ``"cross-attention"``, the part of ``"attention"``
    in modules named ``cross_attn`` (the decoder's).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"numel_breakdown needs an nn.Module, got {type(model).__name__}")
    from transformer_nb.core.block import FeedForward
    from transformer_nb.core.multihead import MultiHeadAttention
    from transformer_nb.core.positional import LearnedPositionalEmbedding
    from transformer_nb.core.transformer import RelativeBiasTable

    out, seen = dict.fromkeys(CATEGORIES, 0), set()

    def add(cat: str, module: nn.Module) -> int:
        n = 0
        for p in module.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                n += p.numel()
        out[cat] += n
        return n

    mods = [(name.rsplit(".", 1)[-1], m) for name, m in model.named_modules()]  # (the last part of its name, m)
    # in this order: position tables hold nn.Embedding tables too, and a tied output weight counts as an embedding
    kinds = [("positions", (LearnedPositionalEmbedding, RelativeBiasTable)), ("embeddings", nn.Embedding)]
    kinds += [("attention", MultiHeadAttention), ("ffn", FeedForward), ("norms", (nn.LayerNorm, nn.RMSNorm))]
    for cat, types in kinds:
        for _, m in mods:
            if isinstance(m, types):
                add(cat, m)
    cross = sum(p.numel() for leaf, m in mods if leaf == "cross_attn" for p in m.parameters())  # never shared
    for leaf, m in mods:
        if leaf in HEADS:
            add("head", m)
    add("other", model)
    out["total"] = sum(out[c] for c in CATEGORIES)
    out["cross-attention"] = cross
    return out
