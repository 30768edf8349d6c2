"""The one configuration (000 §8.5–8.6; 001 §19.7–19.8; 004 §12–14): ``TransformerConfig``.

Frozen, and validated once, when it is made (``validate``): every ``TransformerConfig`` that exists is
possible, so the blocks, the stacks and the model built from one trust it. Every default is stated
here and nowhere else; ``cfg.with_(d_model=...)`` is a changed (and again validated) copy.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from transformer_nb.core.multihead import check_heads
from transformer_nb.core.utils import as_int, as_real, check_dropout

ARCHS = ("encoder", "decoder", "encoder-decoder")
POSITIONS = ("sinusoidal", "learned", "rope", "alibi", "t5-bias", "none")
ACTIVATIONS = ("relu", "gelu", "swiglu")
NORMS = ("layer", "rms")
T5_BUCKETS = 32  # T5's relative-position bias: one learned scalar per (bucket, head), shared by a stack's layers
FLAGS = ("norm_first", "share_embeddings", "scale_embeddings", "tie_output", "lm_head", "output_bias", "adaptive")
FLAGS += ("embed_norm", "pooler")  # the True/False fields (``bias`` is checked with the heads)


@dataclass(frozen=True)
class TransformerConfig:
    """Everything that decides a Transformer: its shape, its parts and its parameter count.

    - ``arch``: ``"encoder"`` (BERT), ``"decoder"`` (GPT, LLaMA) or ``"encoder-decoder"`` (the original).
    - ``n_layers`` blocks (encoder-decoder: per side, unless ``n_dec_layers`` is given).
    - ``d_ff`` defaults to ``4·d_model``. ``n_kv_heads`` < ``n_heads`` is GQA (1 = MQA).
    - ``activation``: the FFN's (``ACTIVATIONS``); ``norm``: ``"layer"`` (LayerNorm) or ``"rms"``
      (RMSNorm), with ``eps``; ``norm_first``: Pre-LN (True) or Post-LN.
    - ``vocab`` (source, or the only one); ``tgt_vocab`` for an encoder-decoder with two vocabularies.
    - ``share_embeddings``: encoder-decoder source and target use one table (needs one vocabulary).
    - ``scale_embeddings``: token embeddings are multiplied by ``sqrt(d_model)`` (the original Transformer);
      ``pad_id``: the padding token, whose row of the model's token tables starts at zero and gets no
      gradient (``nn.Embedding``'s ``padding_idx``).
    - ``tie_output``: the output layer reuses the (target) embedding matrix; ``lm_head=False``
      means the model has no output layer at all (e.g. ``BertModel``); ``output_bias``: it adds a bias.
    - ``adaptive``: the output layer is an adaptive softmax (Grave et al. 2017) with ``cutoffs`` and
      ``div_value``; tied, it is also the input embedding ("adaptive input", Baevski & Auli 2019).
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
    eps: float = 1e-5
    bias: bool = True
    positions: str = "sinusoidal"
    max_len: int = 512
    dropout: float = 0.0
    norm_first: bool = True
    final_norm: bool | None = None
    share_embeddings: bool = True
    scale_embeddings: bool = False
    pad_id: int | None = None
    tie_output: bool = True
    lm_head: bool = True
    output_bias: bool = False
    adaptive: bool = False
    cutoffs: tuple = (2000, 10000)
    div_value: float = 4.0
    token_types: int = 0
    embed_norm: bool = False
    pooler: bool = False
    published: float | None = None
    source: str = ""

    def __post_init__(self):
        if isinstance(self.cutoffs, list):  # a list would make the (frozen, hashable) configuration unhashable
            object.__setattr__(self, "cutoffs", tuple(self.cutoffs))
        validate(self)

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

    @property
    def head(self) -> str:
        """The ``OutputHead`` kind: ``"full"``, ``"tied"``, ``"adaptive"`` or ``"adaptive_tied"``."""
        return ("adaptive" if self.adaptive else "full" if not self.tie_output else "tied") + (
            "_tied" if self.adaptive and self.tie_output else ""
        )

    def with_(self, **changes) -> TransformerConfig:
        """A copy with some fields changed (validated)."""
        return replace(self, **changes)


def check_config(cfg) -> TransformerConfig:
    """``cfg`` must be a ``TransformerConfig`` (which is valid: it was validated when it was made); return it."""
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"expected a TransformerConfig (e.g. PRESETS['gpt2-small']), got {type(cfg).__name__}")
    return cfg


def _check_eps(eps) -> None:
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < float("inf"):
        raise ValueError(f"eps must be a positive finite number (it keeps the denominator away from 0), got {eps!r}")


def check_cutoffs(cutoffs, div_value, d_model: int, vocab: int) -> None:
    """An adaptive softmax's ``cutoffs`` (increasing word ranks in ``(0, vocab)``: the head's words, then each tail
    cluster's) and ``div_value`` (> 0; cluster ``i`` projects ``d_model`` to ``d_model // div_value**i`` >= 1)."""
    if not isinstance(cutoffs, (tuple, list)) or not cutoffs:
        raise ValueError(f"cutoffs must be a non-empty tuple of word ranks such as (2000, 10000), got {cutoffs!r}")
    cuts = [as_int("a cutoff", c, 1) for c in cutoffs]
    if cuts != sorted(set(cuts)) or cuts[-1] >= vocab:
        raise ValueError(f"cutoffs must increase strictly and stay below the vocabulary ({vocab}), got {cutoffs!r}")
    if d_model // as_real("div_value", div_value, positive=True) ** len(cuts) < 1:
        raise ValueError(
            f"the last tail cluster would project d_model={d_model} to d_model // div_value**{len(cuts)} = 0 "
            f"dimensions; use a smaller div_value or fewer cutoffs"
        )


def validate(cfg: TransformerConfig) -> TransformerConfig:
    """Raise ``ValueError`` naming the field for any impossible configuration; return ``cfg``.

    ``TransformerConfig`` calls it when it is made, so a configuration is validated once."""
    check_config(cfg)
    for name in ("name", "source"):
        if not isinstance(getattr(cfg, name), str):
            raise TypeError(f"{name} must be a string, got {getattr(cfg, name)!r}")
    for name in FLAGS + ("final_norm",) * (cfg.final_norm is not None):
        if not isinstance(getattr(cfg, name), bool):
            raise TypeError(f"{name} must be True or False, got {getattr(cfg, name)!r}")
    if cfg.published is not None:
        as_real("published (the authors' parameter count)", cfg.published, positive=True)
    if cfg.arch not in ARCHS:
        raise ValueError(f"arch must be one of {ARCHS}, got {cfg.arch!r}")
    check_heads(cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.bias)
    for name in ("n_layers", "vocab", "max_len"):
        as_int(name, getattr(cfg, name), 1)
    if cfg.d_ff is not None and (isinstance(cfg.d_ff, bool) or not isinstance(cfg.d_ff, int) or cfg.d_ff <= 0):
        raise ValueError(
            f"d_ff (the FFN hidden width) must be a positive integer, got {cfg.d_ff!r}; "
            f"the usual choice is 4·d_model = {4 * cfg.d_model}"
        )
    if cfg.activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {cfg.activation!r}")
    if cfg.norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {cfg.norm!r}")
    _check_eps(cfg.eps)
    if cfg.positions not in POSITIONS:
        raise ValueError(f"positions must be one of {POSITIONS}, got {cfg.positions!r}")
    if cfg.positions == "rope" and (cfg.d_model // cfg.n_heads) % 2:
        raise ValueError(
            f"RoPE rotates pairs, so d_head = d_model / n_heads must be even, got {cfg.d_model // cfg.n_heads}"
        )
    check_dropout(cfg.dropout)
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
    if cfg.adaptive:
        check_cutoffs(cfg.cutoffs, cfg.div_value, cfg.d_model, cfg.target_vocab)
    if cfg.scale_embeddings and cfg.adaptive and cfg.tie_output:
        raise ValueError("scale_embeddings: a tied adaptive head's embeddings are already scaled by sqrt(d_model)")
    if cfg.tie_output and not cfg.lm_head:
        raise ValueError("tie_output=True needs an output projection to tie, but lm_head=False")
    for name in ("output_bias", "adaptive"):
        if getattr(cfg, name) and not cfg.lm_head:
            raise ValueError(f"{name}=True needs an output projection, but lm_head=False")
    as_int("token_types", cfg.token_types, 0)
    if cfg.pad_id is not None:
        n = min(cfg.vocab, cfg.target_vocab)
        if as_int("pad_id", cfg.pad_id, 0) >= n:
            raise ValueError(f"pad_id must be an id of the vocabulary, in [0, {n}), got {cfg.pad_id}")
        if cfg.tie_output and cfg.lm_head:
            raise ValueError(
                "pad_id needs the model's own token tables, but tie_output=True makes the output layer's "
                "weights the table (the padding row would be a word's output row); set tie_output=False"
            )
    return cfg
