"""The one configuration (000 §8.5–8.6; 001 §19.7–19.8; 004 §12–14): ``TransformerConfig``.

Frozen, and validated once, when it is made (``validate``): every ``TransformerConfig`` that exists is
possible, so the blocks, the stacks and the model built from one trust it. Every default is stated
here and nowhere else; ``cfg.with_(d_model=...)`` is a changed (and again validated) copy.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from transformer_nb.core.checks import validate

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
