"""Counting parameters and memory (000 §8.3.5, §8.5.4, Ex 8.2, Ex 8.4; 001 §19.8.4; 002; 003; 004 §5.7).

Two independent routes to every count, so each checks the other:

1. **Formulas** (``attention_params``, ``ffn_params``, ``norm_params``, ... and
   ``param_breakdown(config)``), written from the shapes of the weight matrices;
2. **numel** of a real model, ``build_transformer(config)``, assembled from the package's
   blocks. Built on ``torch.device("meta")`` it has every parameter's shape but no storage,
   so GPT-3 (175 billion parameters, 700 GB in fp32) is counted in seconds with no memory.

``PRESETS`` holds the named models (the original base/big Transformer, Exercise 8.2, BERT,
GPT-2, GPT-3, LLaMA-2, Mistral) with the counts their authors published.

Memory: ``attention_matrix_bytes`` (004's table, Ex 8.4), ``attention_flops`` (Ex 8.4) and
``kv_cache_bytes`` (002's formula, from ``multihead``).
"""

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace

import torch
import torch.nn as nn

from transformer_nb.block import ACTIVATIONS, NORMS, DecoderLayer, EncoderLayer, FeedForward, make_norm
from transformer_nb.multihead import MultiHeadAttention, kv_cache_bytes  # noqa: F401  (re-exported)
from transformer_nb.positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding

ARCHS = ("encoder", "decoder", "encoder-decoder")
POSITIONS = ("sinusoidal", "learned", "rope", "alibi", "t5-bias", "none")
T5_BUCKETS = 32  # T5's relative-position bias: one learned scalar per (bucket, head), shared by a stack's layers
CATEGORIES = ("embeddings", "positions", "attention", "ffn", "norms", "head", "other")


def _pos_int(name: str, value, allow_zero: bool = False) -> None:
    ok = isinstance(value, int) and not isinstance(value, bool) and (value >= 0 if allow_zero else value > 0)
    if not ok:
        raise ValueError(f"{name} must be a {'non-negative' if allow_zero else 'positive'} integer, got {value!r}")


# --------------------------------------------------------------------------- per-module formulas


def attention_params(d_model: int, n_heads: int, n_kv_heads: int | None = None, bias: bool = True) -> int:
    """``MultiHeadAttention``: W_Q, W_O are ``d×d``; W_K, W_V are ``d × (n_kv_heads·d/h)``; plus biases.

    With ``n_kv_heads = n_heads`` (plain MHA) this is ``4d² (+ 4d)`` whatever ``n_heads`` is.
    """
    _pos_int("d_model", d_model)
    _pos_int("n_heads", n_heads)
    n_kv = n_heads if n_kv_heads is None else n_kv_heads
    _pos_int("n_kv_heads", n_kv)
    if d_model % n_heads:
        raise ValueError(f"n_heads={n_heads} must divide d_model={d_model}")
    if n_heads % n_kv:
        raise ValueError(f"n_kv_heads={n_kv} must divide n_heads={n_heads}")
    d_kv = n_kv * (d_model // n_heads)
    return 2 * d_model * d_model + 2 * d_model * d_kv + ((2 * d_model + 2 * d_kv) if bias else 0)


def ffn_params(d_model: int, d_ff: int, activation: str = "relu", bias: bool = True) -> int:
    """``FeedForward``: ``2·d·d_ff (+ d_ff + d)`` for relu/gelu, ``3·d·d_ff (+ 2·d_ff + d)`` for swiglu."""
    _pos_int("d_model", d_model)
    _pos_int("d_ff", d_ff)
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    n_in = 2 if activation == "swiglu" else 1  # matrices that read x: W1 (and the gate W3)
    return (n_in + 1) * d_model * d_ff + ((n_in * d_ff + d_model) if bias else 0)


def norm_params(d_model: int, kind: str = "layer") -> int:
    """LayerNorm: γ and β, ``2d``; RMSNorm: γ only, ``d``."""
    _pos_int("d_model", d_model)
    if kind not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {kind!r}")
    return 2 * d_model if kind == "layer" else d_model


def embedding_params(vocab: int, d_model: int) -> int:
    """A token embedding table: one ``d``-vector per token, ``|V|·d``."""
    _pos_int("vocab", vocab)
    _pos_int("d_model", d_model)
    return vocab * d_model


def position_params(kind: str, d_model: int, max_len: int = 0, n_heads: int = 1) -> int:
    """Parameters of one stack's position information.

    Learned positions: ``max_len·d``; T5's relative bias: ``32 buckets · n_heads``; sinusoidal,
    RoPE, ALiBi and none: 0 (nothing is trained).
    """
    if kind not in POSITIONS:
        raise ValueError(f"positions must be one of {POSITIONS}, got {kind!r}")
    if kind == "t5-bias":
        _pos_int("n_heads", n_heads)
        return T5_BUCKETS * n_heads
    if kind != "learned":
        return 0
    _pos_int("max_len", max_len)
    return max_len * d_model


def encoder_layer_params(d_model, n_heads, d_ff, activation="relu", norm="layer", n_kv_heads=None, bias=True) -> int:
    """One ``EncoderLayer`` (also the decoder-only block): attention + FFN + 2 norms."""
    return (
        attention_params(d_model, n_heads, n_kv_heads, bias)
        + ffn_params(d_model, d_ff, activation, bias)
        + 2 * norm_params(d_model, norm)
    )


def decoder_layer_params(d_model, n_heads, d_ff, activation="relu", norm="layer", bias=True) -> int:
    """One ``DecoderLayer``: self-attention + cross-attention + FFN + 3 norms."""
    return (
        2 * attention_params(d_model, n_heads, None, bias)
        + ffn_params(d_model, d_ff, activation, bias)
        + 3 * norm_params(d_model, norm)
    )


def block_rule(d_model: int) -> int:
    """002's rule of thumb: ``12·d²`` per block (4d² attention + 8d² FFN with d_ff = 4d; no biases, no norms)."""
    _pos_int("d_model", d_model)
    return 12 * d_model * d_model


# --------------------------------------------------------------------------- whole models


@dataclass(frozen=True)
class TransformerConfig:
    """Everything that decides a Transformer's parameter count.

    - ``arch``: ``"encoder"`` (BERT), ``"decoder"`` (GPT, LLaMA) or ``"encoder-decoder"`` (the original).
    - ``n_layers`` blocks (encoder-decoder: per side, unless ``n_dec_layers`` is given).
    - ``d_ff`` defaults to ``4·d_model``. ``n_kv_heads`` < ``n_heads`` is GQA (1 = MQA).
    - ``vocab`` (source, or the only one); ``tgt_vocab`` for an encoder-decoder with two vocabularies.
    - ``share_embeddings``: encoder-decoder source and target use one table (needs one vocabulary).
    - ``tie_output``: the output projection reuses the (target) embedding matrix; ``lm_head=False``
      means the model has no output projection at all (e.g. ``BertModel``).
    - ``final_norm``: a norm after the last block (Pre-LN models have one; default: ``norm_first``).
    - BERT extras: ``token_types`` (segment embeddings), ``embed_norm`` (LayerNorm after the
      embeddings), ``pooler`` (a ``d×d`` dense layer on the first token).
    - ``published``: the count the authors reported (for comparison only), ``source``: where.
    """

    name: str = "custom"
    arch: str = "decoder"
    d_model: int = 512
    n_heads: int = 8
    n_layers: int = 6
    n_dec_layers: int | None = None
    d_ff: int | None = None
    n_kv_heads: int | None = None
    vocab: int = 32000
    tgt_vocab: int | None = None
    activation: str = "relu"
    norm: str = "layer"
    bias: bool = True
    positions: str = "sinusoidal"
    max_len: int = 512
    norm_first: bool = True
    final_norm: bool | None = None
    share_embeddings: bool = True
    tie_output: bool = True
    lm_head: bool = True
    output_bias: bool = False
    token_types: int = 0
    embed_norm: bool = False
    pooler: bool = False
    published: float | None = None
    source: str = ""

    @property
    def ff(self) -> int:
        return 4 * self.d_model if self.d_ff is None else self.d_ff

    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def dec_layers(self) -> int:
        return self.n_layers if self.n_dec_layers is None else self.n_dec_layers

    @property
    def has_final_norm(self) -> bool:
        return self.norm_first if self.final_norm is None else self.final_norm

    @property
    def target_vocab(self) -> int:
        return self.vocab if self.tgt_vocab is None else self.tgt_vocab

    def with_(self, **changes) -> "TransformerConfig":
        """A copy with some fields changed (validated)."""
        return validate(replace(self, **changes))


def validate(cfg: TransformerConfig) -> TransformerConfig:
    """Raise ``ValueError`` naming the field for any impossible configuration; return ``cfg``."""
    if cfg.arch not in ARCHS:
        raise ValueError(f"arch must be one of {ARCHS}, got {cfg.arch!r}")
    for name in ("d_model", "n_heads", "n_layers", "vocab"):
        _pos_int(name, getattr(cfg, name))
    if cfg.d_ff is not None and (isinstance(cfg.d_ff, bool) or not isinstance(cfg.d_ff, int) or cfg.d_ff <= 0):
        raise ValueError(f"d_ff (the FFN hidden width) must be a positive integer, got {cfg.d_ff!r}")
    if cfg.d_model % cfg.n_heads:
        raise ValueError(
            f"n_heads={cfg.n_heads} must divide d_model={cfg.d_model} (each head gets d_model / n_heads dimensions)"
        )
    _pos_int("n_kv_heads", cfg.kv_heads)
    if cfg.n_heads % cfg.kv_heads:
        raise ValueError(
            f"n_kv_heads={cfg.kv_heads} must divide n_heads={cfg.n_heads} "
            f"(each key/value head serves a whole group of query heads)"
        )
    if cfg.activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {cfg.activation!r}")
    if cfg.norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {cfg.norm!r}")
    if cfg.positions not in POSITIONS:
        raise ValueError(f"positions must be one of {POSITIONS}, got {cfg.positions!r}")
    if cfg.positions in ("learned", "sinusoidal"):
        _pos_int("max_len", cfg.max_len)
    if cfg.positions == "rope" and (cfg.d_model // cfg.n_heads) % 2:
        raise ValueError(
            f"RoPE rotates pairs, so d_head = d_model / n_heads must be even, got {cfg.d_model // cfg.n_heads}"
        )
    if cfg.arch != "encoder-decoder":
        if cfg.n_dec_layers is not None or cfg.tgt_vocab is not None:
            raise ValueError(f"n_dec_layers and tgt_vocab belong to an encoder-decoder; arch={cfg.arch!r}")
    else:
        _pos_int("n_dec_layers", cfg.dec_layers)
        _pos_int("tgt_vocab", cfg.target_vocab)
        if cfg.share_embeddings and cfg.target_vocab != cfg.vocab:
            raise ValueError(
                f"share_embeddings needs one vocabulary for source and target, but vocab={cfg.vocab} "
                f"and tgt_vocab={cfg.target_vocab}; set share_embeddings=False or use a joint "
                f"vocabulary (the original Transformer shared a 37k BPE vocabulary)"
            )
    if cfg.tie_output and not cfg.lm_head:
        raise ValueError("tie_output=True needs an output projection to tie, but lm_head=False")
    if cfg.output_bias and not cfg.lm_head:
        raise ValueError("output_bias=True needs an output projection, but lm_head=False")
    _pos_int("token_types", cfg.token_types, allow_zero=True)
    return cfg


def param_breakdown(cfg: TransformerConfig) -> dict:
    """The formula count of ``build_transformer(cfg)``, split into ``CATEGORIES`` plus ``"total"``."""
    validate(cfg)
    d, out = cfg.d_model, dict.fromkeys(CATEGORIES, 0)
    enc_dec = cfg.arch == "encoder-decoder"
    # token embeddings: one table, or two for an encoder-decoder that does not share
    out["embeddings"] = embedding_params(cfg.vocab, d)
    if enc_dec and not cfg.share_embeddings:
        out["embeddings"] += embedding_params(cfg.target_vocab, d)
    out["embeddings"] += cfg.token_types * d
    out["positions"] = position_params(cfg.positions, d, cfg.max_len, cfg.n_heads) * (2 if enc_dec else 1)
    n_self = cfg.n_layers + (cfg.dec_layers if enc_dec else 0)  # blocks with a self-attention and an FFN
    out["attention"] = cfg.n_layers * attention_params(d, cfg.n_heads, cfg.n_kv_heads, cfg.bias)
    if enc_dec:  # each decoder block: self-attention + cross-attention (DecoderLayer has no GQA)
        out["attention"] += 2 * cfg.dec_layers * attention_params(d, cfg.n_heads, None, cfg.bias)
    out["ffn"] = n_self * ffn_params(d, cfg.ff, cfg.activation, cfg.bias)
    n_norms = 2 * cfg.n_layers + (3 * cfg.dec_layers if enc_dec else 0)
    n_norms += (2 if enc_dec else 1) * cfg.has_final_norm + cfg.embed_norm
    out["norms"] = n_norms * norm_params(d, cfg.norm)
    if cfg.lm_head:
        out["head"] = (0 if cfg.tie_output else embedding_params(cfg.target_vocab, d)) + (
            cfg.target_vocab if cfg.output_bias else 0
        )
    out["other"] = (d * d + d) if cfg.pooler else 0
    out["total"] = sum(out[c] for c in CATEGORIES)
    return out


def param_count(cfg: TransformerConfig) -> int:
    """The formula total of ``param_breakdown(cfg)``."""
    return param_breakdown(cfg)["total"]


class RelativeBiasTable(nn.Module):
    """T5's relative-position bias table: ``(32 buckets, n_heads)`` learned scalars (counted only)."""

    def __init__(self, n_heads: int):
        super().__init__()
        self.table = nn.Embedding(T5_BUCKETS, n_heads)


class Transformer(nn.Module):
    """A whole model from ``TransformerConfig``, assembled from the package's blocks.

    - ``encoder``/``decoder`` arch: ``forward(ids (B, T)) -> (B, T, vocab)`` logits (or the final
      hidden states ``(B, T, d)`` when ``lm_head=False``); the decoder arch is causal.
    - ``encoder-decoder``: ``forward(src (B, S), tgt (B, T)) -> (B, T, tgt_vocab)``.
    It exists to be counted (``numel``) and traced; the training models live in ``models.py``.
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
        self.rope = None
        if cfg.positions == "rope":
            from transformer_nb.rope import RoPE

            self.rope = RoPE(d // cfg.n_heads, max_len=cfg.max_len)
        layer = dict(
            d_model=d,
            n_heads=cfg.n_heads,
            d_ff=cfg.ff,
            norm_first=cfg.norm_first,
            activation=cfg.activation,
            norm=cfg.norm,
            bias=cfg.bias,
        )
        self.layers = nn.ModuleList(EncoderLayer(**layer, n_kv_heads=cfg.n_kv_heads) for _ in range(cfg.n_layers))
        self.dec_layers = nn.ModuleList(DecoderLayer(**layer) for _ in range(cfg.dec_layers)) if enc_dec else None
        self.final_norm = make_norm(cfg.norm, d) if cfg.has_final_norm else None
        self.dec_final_norm = make_norm(cfg.norm, d) if enc_dec and cfg.has_final_norm else None
        self.pooler = nn.Linear(d, d) if cfg.pooler else None
        self.lm_head = None
        if cfg.lm_head:
            self.lm_head = nn.Linear(d, cfg.target_vocab, bias=cfg.output_bias)
            if cfg.tie_output:
                self.lm_head.weight = (self.tgt_emb or self.tok_emb).weight  # one tensor, counted once

    def _positions(self):
        cfg = self.cfg
        if cfg.positions == "learned":
            return LearnedPositionalEmbedding(cfg.max_len, cfg.d_model)
        if cfg.positions == "t5-bias":  # counted, not implemented: forward refuses this model
            return RelativeBiasTable(cfg.n_heads)
        if cfg.positions == "sinusoidal":
            return SinusoidalPositionalEncoding(cfg.d_model, cfg.max_len)
        return None

    def _embed(self, ids, table, pos):
        if ids.dim() != 2:
            raise ValueError(f"token ids must have shape (B, T), got {tuple(ids.shape)}")
        x = table(ids)
        if pos is not None:
            x = pos(x)
        if self.token_type is not None:
            x = x + self.token_type.weight[0]
        return self.embed_norm(x) if self.embed_norm is not None else x

    def _stack(self, x, layers, norm, **kw):
        for layer in layers:
            x = layer(x, **kw)
        return norm(x) if norm is not None else x

    def _head(self, x):
        return self.lm_head(x) if self.lm_head is not None else x

    def forward(self, ids, tgt=None):
        cfg = self.cfg
        if cfg.positions == "t5-bias":
            raise NotImplementedError(
                "T5's bucketed relative-position bias is counted here, not implemented; "
                "this model can be built and counted but not run"
            )
        causal = cfg.arch == "decoder"
        alibi = None
        if cfg.positions == "alibi":
            from transformer_nb.positional import alibi_bias

            alibi = alibi_bias(ids.shape[1], cfg.n_heads, device=ids.device)
        x = self._embed(ids, self.tok_emb, self.pos)
        x = self._stack(x, self.layers, self.final_norm, mask=alibi, is_causal=causal, rope=self.rope)
        if cfg.arch != "encoder-decoder":
            if tgt is not None:
                raise ValueError(f"arch={cfg.arch!r} takes one sequence of ids; tgt is for an encoder-decoder")
            return self._head(x)
        if tgt is None:
            raise ValueError("an encoder-decoder needs forward(src, tgt)")
        y = self._embed(tgt, self.tgt_emb or self.tok_emb, self.tgt_pos)
        for layer in self.dec_layers:
            y = layer(y, x)
        if self.dec_final_norm is not None:
            y = self.dec_final_norm(y)
        return self._head(y)


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
    device = torch.device(device)
    with torch.device(device), _no_init() if device.type == "meta" else nullcontext():
        return Transformer(cfg)


def numel(model: nn.Module) -> int:
    """Number of parameters; a tied (shared) tensor is counted once, as ``model.parameters()`` yields it once."""
    return sum(p.numel() for p in model.parameters())


def numel_breakdown(model: Transformer) -> dict:
    """``numel`` of a ``Transformer``, split into ``CATEGORIES`` by the module that owns each tensor.

    Attention = parameters inside ``MultiHeadAttention``; ffn = inside ``FeedForward``; norms =
    LayerNorm/RMSNorm; embeddings = token (and segment) tables; positions = learned position
    tables; head = an *untied* output projection and its bias; other = the pooler. A tied tensor
    is counted once, where it first appears (the embedding).
    """
    if not isinstance(model, Transformer):
        raise TypeError(f"numel_breakdown needs a params.Transformer, got {type(model).__name__}")
    out, seen = dict.fromkeys(CATEGORIES, 0), set()

    def add(cat, module):
        for p in module.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                out[cat] += p.numel()

    for name in ("tok_emb", "tgt_emb", "token_type"):
        if getattr(model, name) is not None:
            add("embeddings", getattr(model, name))
    for m in model.modules():
        if isinstance(m, (LearnedPositionalEmbedding, RelativeBiasTable)):
            add("positions", m)
        elif isinstance(m, MultiHeadAttention):
            add("attention", m)
        elif isinstance(m, FeedForward):
            add("ffn", m)
        elif isinstance(m, (nn.LayerNorm, nn.RMSNorm)):
            add("norms", m)
    if model.lm_head is not None:
        add("head", model.lm_head)
    if model.pooler is not None:
        add("other", model.pooler)
    left = [n for n, p in model.named_parameters() if id(p) not in seen]
    if left:
        raise AssertionError(f"uncategorised parameters: {left}")
    out["total"] = sum(out[c] for c in CATEGORIES)
    return out


# --------------------------------------------------------------------------- the named models


def _gpt2(name, d, layers, heads, published):
    return TransformerConfig(
        name=name,
        arch="decoder",
        d_model=d,
        n_heads=heads,
        n_layers=layers,
        vocab=50257,
        activation="gelu",
        positions="learned",
        max_len=1024,
        norm_first=True,
        published=published,
        source="Radford et al. 2019 (model names 124M/355M/774M/1.5B)",
    )


PRESETS = {
    "transformer-base": TransformerConfig(
        name="Transformer base",
        arch="encoder-decoder",
        d_model=512,
        n_heads=8,
        n_layers=6,
        d_ff=2048,
        vocab=37000,
        norm_first=False,
        positions="sinusoidal",
        max_len=512,
        published=65e6,
        source="Vaswani et al. 2017, Table 3 (shared 37k BPE vocabulary, tied embeddings)",
    ),
    "transformer-big": TransformerConfig(
        name="Transformer big",
        arch="encoder-decoder",
        d_model=1024,
        n_heads=16,
        n_layers=6,
        d_ff=4096,
        vocab=37000,
        norm_first=False,
        positions="sinusoidal",
        max_len=512,
        published=213e6,
        source="Vaswani et al. 2017, Table 3",
    ),
    "exercise-8.2": TransformerConfig(
        name="Exercise 8.2",
        arch="encoder",
        d_model=512,
        n_heads=8,
        n_layers=6,
        d_ff=2048,
        vocab=32000,
        bias=False,
        norm_first=False,
        positions="sinusoidal",
        max_len=512,
        tie_output=True,
        source="000 Exercise 8.2 (weights only, as its hint counts)",
    ),
    "t5-base": TransformerConfig(
        name="T5-base",
        arch="encoder-decoder",
        d_model=768,
        n_heads=12,
        n_layers=12,
        d_ff=3072,
        vocab=32128,
        norm="rms",
        bias=False,
        positions="t5-bias",
        norm_first=True,
        published=220e6,
        source="Raffel et al. 2020 (T5 v1.0; its LayerNorm has a scale only, i.e. RMSNorm)",
    ),
    "bert-base": TransformerConfig(
        name="BERT-base",
        arch="encoder",
        d_model=768,
        n_heads=12,
        n_layers=12,
        vocab=30522,
        activation="gelu",
        positions="learned",
        max_len=512,
        norm_first=False,
        token_types=2,
        embed_norm=True,
        pooler=True,
        lm_head=False,
        tie_output=False,
        published=110e6,
        source="Devlin et al. 2019",
    ),
    "bert-large": TransformerConfig(
        name="BERT-large",
        arch="encoder",
        d_model=1024,
        n_heads=16,
        n_layers=24,
        vocab=30522,
        activation="gelu",
        positions="learned",
        max_len=512,
        norm_first=False,
        token_types=2,
        embed_norm=True,
        pooler=True,
        lm_head=False,
        tie_output=False,
        published=340e6,
        source="Devlin et al. 2019",
    ),
    "gpt2-small": _gpt2("GPT-2 small", 768, 12, 12, 117e6),
    "gpt2-medium": _gpt2("GPT-2 medium", 1024, 24, 16, 345e6),
    "gpt2-large": _gpt2("GPT-2 large", 1280, 36, 20, 762e6),
    "gpt2-xl": _gpt2("GPT-2 XL", 1600, 48, 25, 1542e6),
    "gpt3": TransformerConfig(
        name="GPT-3 175B",
        arch="decoder",
        d_model=12288,
        n_heads=96,
        n_layers=96,
        vocab=50257,
        activation="gelu",
        positions="learned",
        max_len=2048,
        norm_first=True,
        published=175.0e9,
        source="Brown et al. 2020, Table 2.1",
    ),
    "llama2-7b": TransformerConfig(
        name="LLaMA-2 7B",
        arch="decoder",
        d_model=4096,
        n_heads=32,
        n_layers=32,
        d_ff=11008,
        vocab=32000,
        activation="swiglu",
        norm="rms",
        bias=False,
        positions="rope",
        max_len=4096,
        norm_first=True,
        tie_output=False,
        published=7e9,
        source="Touvron et al. 2023 (LLaMA 2)",
    ),
    "llama2-70b": TransformerConfig(
        name="LLaMA-2 70B",
        arch="decoder",
        d_model=8192,
        n_heads=64,
        n_kv_heads=8,
        n_layers=80,
        d_ff=28672,
        vocab=32000,
        activation="swiglu",
        norm="rms",
        bias=False,
        positions="rope",
        max_len=4096,
        norm_first=True,
        tie_output=False,
        published=70e9,
        source="Touvron et al. 2023 (LLaMA 2; GQA with 8 KV heads)",
    ),
    "mistral-7b": TransformerConfig(
        name="Mistral 7B",
        arch="decoder",
        d_model=4096,
        n_heads=32,
        n_kv_heads=8,
        n_layers=32,
        d_ff=14336,
        vocab=32000,
        activation="swiglu",
        norm="rms",
        bias=False,
        positions="rope",
        max_len=4096,
        norm_first=True,
        tie_output=False,
        published=7.3e9,
        source="Jiang et al. 2023 (Mistral 7B; GQA)",
    ),
}


def preset(name: str) -> TransformerConfig:
    """One of ``PRESETS`` by name (``KeyError`` lists the names)."""
    if name not in PRESETS:
        raise KeyError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return PRESETS[name]


# --------------------------------------------------------------------------- memory and compute


def attention_matrix_bytes(seq_len: int, n_heads: int = 1, bytes_per_value: int = 2, batch: int = 1) -> int:
    """Bytes of the attention weights of one layer: ``batch · n_heads · T² · bytes`` (fp16: 2 bytes)."""
    for name, v in (("seq_len", seq_len), ("n_heads", n_heads), ("bytes_per_value", bytes_per_value), ("batch", batch)):
        _pos_int(name, v)
    return batch * n_heads * seq_len * seq_len * bytes_per_value


def attention_flops(seq_len: int, d_model: int, n_heads: int) -> dict:
    """FLOPs of one multi-head self-attention layer on one sequence (a multiply-add = 2 FLOPs).

    - ``projections``: Q, K, V and output, ``4 · 2·T·d²`` (linear in T);
    - ``scores``: ``Q Kᵀ`` for every head, ``h · 2·T²·d_k = 2·T²·d`` (quadratic in T);
    - ``weighted_sum``: ``A V`` for every head, also ``2·T²·d``.
    The softmax and the scaling (O(h·T²)) are left out, as FLOP counters do.
    """
    _pos_int("seq_len", seq_len)
    _pos_int("d_model", d_model)
    _pos_int("n_heads", n_heads)
    if d_model % n_heads:
        raise ValueError(f"n_heads={n_heads} must divide d_model={d_model}")
    t, d = seq_len, d_model
    out = {"projections": 8 * t * d * d, "scores": 2 * t * t * d, "weighted_sum": 2 * t * t * d}
    out["total"] = sum(out.values())
    return out


def bytes_human(n: float, binary: bool = False) -> str:
    """``1073741824 -> '1.07 GB'`` (decimal, default) or ``'1 GiB'`` (``binary=True``)."""
    base, units = (
        (1024, ("B", "KiB", "MiB", "GiB", "TiB", "PiB")) if binary else (1000, ("B", "kB", "MB", "GB", "TB", "PB"))
    )
    i = 0
    while n >= base and i < len(units) - 1:
        n, i = n / base, i + 1
    return f"{n:.3g} {units[i]}"
