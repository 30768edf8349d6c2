"""Parameter counts from formulas (000 §8.3.5, §8.5.4, Ex 8.2; 001 §19.8.4; 002; 004 §5.7).

Each formula is written from the shapes of a module's weight matrices, and
``param_breakdown(config)`` adds them up for a whole ``TransformerConfig``. The second route,
``numel`` of a real model, is in ``params/model.py``; each checks the other.
"""

from dataclasses import dataclass, replace

from transformer_nb.block import ACTIVATIONS, NORMS
from transformer_nb.multihead import mha_param_count as attention_params  # the one copy (notebook 03 teaches it)
from transformer_nb.utils import as_int

ARCHS = ("encoder", "decoder", "encoder-decoder")
POSITIONS = ("sinusoidal", "learned", "rope", "alibi", "t5-bias", "none")
T5_BUCKETS = 32  # T5's relative-position bias: one learned scalar per (bucket, head), shared by a stack's layers
CATEGORIES = ("embeddings", "positions", "attention", "ffn", "norms", "head", "other")
# a breakdown also reports "cross-attention": the part of "attention" in the decoder's cross-attention


# --------------------------------------------------------------------------- per-module formulas


def ffn_params(d_model: int, d_ff: int, activation: str = "relu", bias: bool = True) -> int:
    """``FeedForward``: ``2·d·d_ff (+ d_ff + d)`` for relu/gelu, ``3·d·d_ff (+ 2·d_ff + d)`` for swiglu."""
    as_int("d_model", d_model, 1)
    as_int("d_ff", d_ff, 1)
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    n_in = 2 if activation == "swiglu" else 1  # matrices that read x: W1 (and the gate W3)
    return (n_in + 1) * d_model * d_ff + ((n_in * d_ff + d_model) if bias else 0)


def norm_params(d_model: int, kind: str = "layer") -> int:
    """LayerNorm: γ and β, ``2d``; RMSNorm: γ only, ``d``."""
    as_int("d_model", d_model, 1)
    if kind not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {kind!r}")
    return 2 * d_model if kind == "layer" else d_model


def embedding_params(vocab: int, d_model: int) -> int:
    """A token embedding table: one ``d``-vector per token, ``|V|·d``."""
    as_int("vocab", vocab, 1)
    as_int("d_model", d_model, 1)
    return vocab * d_model


def position_params(kind: str, d_model: int, max_len: int = 0, n_heads: int = 1) -> int:
    """Parameters of one stack's position information.

    Learned positions: ``max_len·d``; T5's relative bias: ``32 buckets · n_heads``; sinusoidal,
    RoPE, ALiBi and none: 0 (nothing is trained).
    """
    if kind not in POSITIONS:
        raise ValueError(f"positions must be one of {POSITIONS}, got {kind!r}")
    as_int("d_model", d_model, 1)
    if kind == "t5-bias":
        as_int("n_heads", n_heads, 1)
        return T5_BUCKETS * n_heads
    if kind != "learned":
        return 0
    as_int("max_len", max_len, 1)
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
    as_int("d_model", d_model, 1)
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
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"expected a TransformerConfig (e.g. PRESETS['gpt2-small']), got {type(cfg).__name__}")
    if cfg.arch not in ARCHS:
        raise ValueError(f"arch must be one of {ARCHS}, got {cfg.arch!r}")
    for name in ("d_model", "n_heads", "n_layers", "vocab"):
        as_int(name, getattr(cfg, name), 1)
    if cfg.d_ff is not None and (isinstance(cfg.d_ff, bool) or not isinstance(cfg.d_ff, int) or cfg.d_ff <= 0):
        raise ValueError(f"d_ff (the FFN hidden width) must be a positive integer, got {cfg.d_ff!r}")
    if cfg.d_model % cfg.n_heads:
        raise ValueError(
            f"n_heads={cfg.n_heads} must divide d_model={cfg.d_model} (each head gets d_model / n_heads dimensions)"
        )
    as_int("n_kv_heads", cfg.kv_heads, 1)
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
        as_int("max_len", cfg.max_len, 1)
    if cfg.positions == "rope" and (cfg.d_model // cfg.n_heads) % 2:
        raise ValueError(
            f"RoPE rotates pairs, so d_head = d_model / n_heads must be even, got {cfg.d_model // cfg.n_heads}"
        )
    if cfg.arch != "encoder-decoder":
        if cfg.n_dec_layers is not None or cfg.tgt_vocab is not None:
            raise ValueError(f"n_dec_layers and tgt_vocab belong to an encoder-decoder; arch={cfg.arch!r}")
    else:
        as_int("n_dec_layers", cfg.dec_layers, 1)
        as_int("tgt_vocab", cfg.target_vocab, 1)
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
    as_int("token_types", cfg.token_types, 0)
    return cfg


def param_breakdown(cfg: TransformerConfig) -> dict:
    """The formula count of ``build_transformer(cfg)``, split into ``CATEGORIES``, plus ``"total"``.

    ``"cross-attention"`` is the part of ``"attention"`` in the decoder's cross-attention (0 without a decoder).
    """
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
    cross = cfg.dec_layers * attention_params(d, cfg.n_heads, None, cfg.bias) if enc_dec else 0
    out["attention"] += 2 * cross  # each decoder block: self- and cross-attention (DecoderLayer has no GQA)
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
    out["cross-attention"] = cross
    return out


def param_count(cfg: TransformerConfig) -> int:
    """The formula total of ``param_breakdown(cfg)``."""
    return param_breakdown(cfg)["total"]
