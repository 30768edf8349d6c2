"""The second route to every count: ``numel`` of a real model (000 §8.3.5; 001 §19.8.4).

``build_transformer(config)`` assembles the model a ``TransformerConfig`` describes from the
package's stacks (``stack.Encoder`` / ``stack.Decoder``) with embeddings in front and a head
behind. Built on ``torch.device("meta")`` it has every parameter's shape but no storage, so
GPT-3 (175 billion parameters, 700 GB in fp32) is counted in seconds with no memory.

It is a model for counting and tracing, covering the published architectures (GQA, RoPE,
ALiBi, RMSNorm, BERT's extras); the models that train are in ``models.py``.
"""

from contextlib import contextmanager, nullcontext

import torch
import torch.nn as nn

from transformer_nb.block import FeedForward, make_norm
from transformer_nb.multihead import MultiHeadAttention
from transformer_nb.params.formulas import CATEGORIES, T5_BUCKETS, TransformerConfig, validate
from transformer_nb.positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding, alibi_bias
from transformer_nb.rope import RoPE
from transformer_nb.stack import Decoder, Encoder, check_ids
from transformer_nb.utils import as_int

HEADS = ("lm_head", "mlm_head", "generator")  # the output projections of this module's and models.py's models


class RelativeBiasTable(nn.Module):
    """T5's relative-position bias table: ``(32 buckets, n_heads)`` learned scalars (counted only)."""

    def __init__(self, n_heads: int):
        super().__init__()
        n_heads = as_int("n_heads", n_heads, 1)
        self.table = nn.Embedding(T5_BUCKETS, n_heads)


class Transformer(nn.Module):
    """A whole model from ``TransformerConfig``, assembled from the package's stacks.

    - ``encoder``/``decoder`` arch: ``forward(ids (B, T)) -> (B, T, vocab)`` logits (or the final
      hidden states ``(B, T, d)`` when ``lm_head=False``); the decoder arch is causal.
    - ``encoder-decoder``: ``forward(src (B, S), tgt (B, T)) -> (B, T, tgt_vocab)``.
    ``self.encoder`` is the first stack (the decoder-only model's causal stack, too), ``self.decoder``
    the encoder-decoder's second one.
    """

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg = validate(cfg)
        d, enc_dec = cfg.d_model, cfg.arch == "encoder-decoder"
        self.tok_emb = nn.Embedding(cfg.vocab, d)
        self.tgt_emb = nn.Embedding(cfg.target_vocab, d) if enc_dec and not cfg.share_embeddings else None
        self.token_type = nn.Embedding(cfg.token_types, d) if cfg.token_types else None
        self.pos = self._positions()
        self.tgt_pos = self._positions() if enc_dec else None
        self.embed_norm = make_norm(cfg.norm, d) if cfg.embed_norm else None
        self.rope = RoPE(d // cfg.n_heads, max_len=cfg.max_len) if cfg.positions == "rope" else None
        common = dict(
            norm_first=cfg.norm_first,
            activation=cfg.activation,
            norm=cfg.norm,
            bias=cfg.bias,
            final_norm=cfg.has_final_norm,
        )
        causal = cfg.arch == "decoder"
        self.encoder = Encoder(d, cfg.n_heads, cfg.ff, cfg.n_layers, causal=causal, n_kv_heads=cfg.n_kv_heads, **common)
        self.decoder = Decoder(d, cfg.n_heads, cfg.ff, cfg.dec_layers, **common) if enc_dec else None
        self.pooler = nn.Linear(d, d) if cfg.pooler else None
        self.lm_head = None
        if cfg.lm_head:
            self.lm_head = nn.Linear(d, cfg.target_vocab, bias=cfg.output_bias)
            if cfg.tie_output:  # one tensor, counted once
                self.lm_head.weight = (self.tgt_emb if self.tgt_emb is not None else self.tok_emb).weight

    def _positions(self):
        cfg = self.cfg
        if cfg.positions == "learned":
            return LearnedPositionalEmbedding(cfg.max_len, cfg.d_model)
        if cfg.positions == "t5-bias":  # counted, not implemented: forward refuses this model
            return RelativeBiasTable(cfg.n_heads)
        if cfg.positions == "sinusoidal":
            return SinusoidalPositionalEncoding(cfg.d_model, cfg.max_len)
        return None

    def _embed(self, ids, table, pos, name: str):
        check_ids(ids, name, table.num_embeddings, device=table.weight.device)
        x = table(ids)
        if pos is not None:
            x = pos(x)
        if self.token_type is not None:
            x = x + self.token_type.weight[0]
        return self.embed_norm(x) if self.embed_norm is not None else x

    def _head(self, x):
        return self.lm_head(x) if self.lm_head is not None else x

    def forward(self, ids, tgt=None):
        cfg = self.cfg
        if cfg.positions == "t5-bias":
            raise NotImplementedError(
                "T5's bucketed relative-position bias is counted here, not implemented; "
                "this model can be built and counted but not run"
            )
        if cfg.arch != "encoder-decoder" and tgt is not None:
            raise ValueError(f"arch={cfg.arch!r} takes one sequence of ids; tgt is for an encoder-decoder")
        if cfg.arch == "encoder-decoder" and tgt is None:
            raise ValueError("an encoder-decoder needs forward(src, tgt)")
        x = self._embed(ids, self.tok_emb, self.pos, "token ids")
        alibi = alibi_bias(ids.shape[1], cfg.n_heads, device=ids.device) if cfg.positions == "alibi" else None
        x = self.encoder(x, mask=alibi, rope=self.rope)
        if self.decoder is None:
            return self._head(x)
        table = self.tgt_emb if self.tgt_emb is not None else self.tok_emb
        return self._head(self.decoder(self._embed(tgt, table, self.tgt_pos, "target token ids"), x))


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


def build_transformer(cfg: TransformerConfig, device="meta") -> Transformer:
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
    (a module named ``lm_head``, ``mlm_head`` or ``generator``) and its bias; other = the rest
    (BERT's pooler, a classifier). A tied tensor is counted once, where it first appears (the
    embedding). Also returns ``"total"`` and ``"cross-attention"``, the part of ``"attention"``
    in modules named ``cross_attn`` (the decoder's).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"numel_breakdown needs an nn.Module, got {type(model).__name__}")
    out, seen = dict.fromkeys(CATEGORIES, 0), set()

    def add(cat: str, module: nn.Module) -> int:
        n = 0
        for p in module.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                n += p.numel()
        out[cat] += n
        return n

    mods = list(model.named_modules())
    leaf = lambda name: name.rsplit(".", 1)[-1]
    cross = 0
    for _, m in mods:  # first: position tables hold nn.Embedding tables too
        if isinstance(m, (LearnedPositionalEmbedding, RelativeBiasTable)):
            add("positions", m)
    for _, m in mods:  # second: token tables, so that a tied output weight counts here
        if isinstance(m, nn.Embedding):
            add("embeddings", m)
    for name, m in mods:
        if isinstance(m, MultiHeadAttention):
            n = add("attention", m)
            cross += n if leaf(name) == "cross_attn" else 0
        elif isinstance(m, FeedForward):
            add("ffn", m)
        elif isinstance(m, (nn.LayerNorm, nn.RMSNorm)):
            add("norms", m)
    for name, m in mods:
        if leaf(name) in HEADS:
            add("head", m)
    add("other", model)
    out["total"] = sum(out[c] for c in CATEGORIES)
    out["cross-attention"] = cross
    return out
