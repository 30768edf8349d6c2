"""Parameter counts from formulas (000 §8.3.5, §8.5.4, Ex 8.2; 001 §19.8.4; 002; 004 §5.7).

Each formula is written from the shapes of a module's weight matrices, and
``param_breakdown(config)`` adds them up for a whole ``TransformerConfig`` (``config.py``). The second route,
``numel`` of a real model, is in ``params/model.py``; each checks the other.
"""

from transformer_nb.core.checks import check_config
from transformer_nb.core.config import T5_BUCKETS, TransformerConfig
from transformer_nb.core.utils import as_int

CATEGORIES = ("embeddings", "positions", "attention", "ffn", "norms", "head", "other")
# a breakdown also reports "cross-attention": the part of "attention" in the decoder's cross-attention


# --------------------------------------------------------------------------- per-module formulas


def attention_params(cfg: TransformerConfig) -> int:
    """Parameters of one ``MultiHeadAttention`` of ``cfg`` (``d_model``, ``n_heads``, ``n_kv_heads``, ``bias``).

    W_Q and W_O are ``d_model × d_model``; W_K and W_V are ``d_model × (n_kv_heads·d_head)``.
    With ``n_kv_heads == n_heads`` this is ``4·d_model² (+ 4·d_model)``, whatever ``n_heads`` is.
    """
    d = check_config(cfg).d_model
    d_kv = cfg.kv_heads * (d // cfg.n_heads)
    return 2 * d * d + 2 * d * d_kv + ((2 * d + 2 * d_kv) if cfg.bias else 0)


def swiglu_hidden_size(d_model: int, multiple_of: int = 256, ffn_dim_multiplier: float | None = None) -> int:
    """LLaMA's SwiGLU hidden width: ``2/3 · 4·d_model`` (times an optional multiplier), rounded up to ``multiple_of``.

    SwiGLU has three ``d × d_ff`` matrices instead of two; taking ``d_ff ≈ 2/3 · 4d`` keeps
    its ``3·d·d_ff ≈ 8·d²`` weights equal to a ReLU FFN's ``2·d·4d``. LLaMA-7B: 4096 -> 11008.
    """
    as_int("d_model", d_model, 1)
    as_int("multiple_of", multiple_of, 1)
    hidden = int(2 * 4 * d_model / 3)
    if ffn_dim_multiplier is not None:
        if not 0 < ffn_dim_multiplier < float("inf"):
            raise ValueError(f"ffn_dim_multiplier must be positive and finite, got {ffn_dim_multiplier!r}")
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


def ffn_params(cfg: TransformerConfig) -> int:
    """``FeedForward(cfg)``: ``2·d·d_ff (+ d_ff + d)`` for relu/gelu, ``3·d·d_ff (+ 2·d_ff + d)`` for swiglu."""
    d, d_ff = check_config(cfg).d_model, cfg.ff
    n_in = 2 if cfg.activation == "swiglu" else 1  # matrices that read x: W1 (and the gate W3)
    return (n_in + 1) * d * d_ff + ((n_in * d_ff + d) if cfg.bias else 0)


def norm_params(cfg: TransformerConfig) -> int:
    """``make_norm(cfg)``: LayerNorm has γ and β, ``2d``; RMSNorm γ only, ``d``."""
    return (2 if check_config(cfg).norm == "layer" else 1) * cfg.d_model


def embedding_params(vocab: int, d_model: int) -> int:
    """A token embedding table: one ``d``-vector per token, ``|V|·d``."""
    return as_int("vocab", vocab, 1) * as_int("d_model", d_model, 1)


def position_params(cfg: TransformerConfig) -> int:
    """Parameters of one stack's position information.

    Learned positions: ``max_len·d``; T5's relative bias: ``32 buckets · n_heads``; sinusoidal,
    RoPE, ALiBi and none: 0 (nothing is trained).
    """
    kind = check_config(cfg).positions
    return cfg.max_len * cfg.d_model if kind == "learned" else T5_BUCKETS * cfg.n_heads if kind == "t5-bias" else 0


def encoder_layer_params(cfg: TransformerConfig) -> int:
    """One ``EncoderLayer(cfg)`` (also the decoder-only block): attention + FFN + 2 norms."""
    return attention_params(cfg) + ffn_params(cfg) + 2 * norm_params(cfg)


def block_rule(d_model: int) -> int:
    """002's rule of thumb: ``12·d²`` per block (4d² attention + 8d² FFN with d_ff = 4d; no biases, no norms)."""
    as_int("d_model", d_model, 1)
    return 12 * d_model * d_model


# --------------------------------------------------------------------------- whole models


def param_breakdown(cfg: TransformerConfig) -> dict:
    """The formula count of ``build_transformer(cfg)``, split into ``CATEGORIES``, plus ``"total"``.

    ``"cross-attention"`` is the part of ``"attention"`` in the decoder's cross-attention (0 without a decoder).
    """
    check_config(cfg)
    if cfg.adaptive:
        raise ValueError("the formulas count linear output layers; count an adaptive softmax with numel")
    d, out = cfg.d_model, dict.fromkeys(CATEGORIES, 0)
    enc_dec = cfg.arch == "encoder-decoder"
    # token embeddings: one table, or two for an encoder-decoder that does not share
    out["embeddings"] = embedding_params(cfg.vocab, d)
    if enc_dec and not cfg.share_embeddings:
        out["embeddings"] += embedding_params(cfg.target_vocab, d)
    out["embeddings"] += cfg.token_types * d
    out["positions"] = position_params(cfg) * (2 if enc_dec else 1)
    n_self = cfg.n_layers + (cfg.dec_layers if enc_dec else 0)  # blocks with a self-attention and an FFN
    out["attention"] = cfg.n_layers * attention_params(cfg)
    cross = cfg.dec_layers * attention_params(cfg.with_(n_kv_heads=None)) if enc_dec else 0
    out["attention"] += 2 * cross  # each decoder block: self- and cross-attention (DecoderLayer has no GQA)
    out["ffn"] = n_self * ffn_params(cfg)
    n_norms = 2 * cfg.n_layers + (3 * cfg.dec_layers if enc_dec else 0)
    n_norms += (2 if enc_dec else 1) * cfg.has_final_norm + cfg.embed_norm
    out["norms"] = n_norms * norm_params(cfg)
    if cfg.lm_head:
        out["head"] = (0 if cfg.tie_output else embedding_params(cfg.target_vocab, d)) + (
            cfg.target_vocab if cfg.output_bias else 0
        )
    out["other"] = (d * d + d) if cfg.pooler else 0
    out["total"] = sum(out[c] for c in CATEGORIES)
    out["cross-attention"] = cross
    return out
