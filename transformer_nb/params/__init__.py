"""Counting parameters and memory (000 §8.3.5, §8.5.4, Ex 8.2, Ex 8.4; 001 §19.8.4; 002; 003; 004 §5.7).

Two independent routes to every count, so each checks the other:

1. **Formulas** (``formulas.py``: ``attention_params``, ``ffn_params``, ``norm_params``, ... and
   ``param_breakdown(config)`` for a whole ``TransformerConfig``), written from the shapes of the
   weight matrices;
2. **numel** of a real model (``model.py``: ``build_transformer(config)``, ``numel``,
   ``numel_breakdown``): the package's one ``Transformer``; on ``torch.device("meta")`` it
   has every parameter's shape but no storage, so GPT-3 is counted in seconds with no memory.

``presets.py`` holds the named models with their published counts; ``memory.py`` the memory and
FLOPs of attention and the size of a KV cache. Everything is importable from ``transformer_nb.params``.
"""

from transformer_nb.params.formulas import (
    CATEGORIES,
    T5_BUCKETS,
    TransformerConfig,
    attention_params,
    block_rule,
    decoder_layer_params,
    embedding_params,
    encoder_layer_params,
    ffn_params,
    norm_params,
    param_breakdown,
    param_count,
    position_params,
    swiglu_hidden_size,
)
from transformer_nb.params.memory import attention_flops, attention_matrix_bytes, bytes_human, kv_cache_bytes
from transformer_nb.params.model import build_transformer, numel, numel_breakdown
from transformer_nb.params.presets import PRESETS, preset

__all__ = [
    "CATEGORIES",
    "PRESETS",
    "T5_BUCKETS",
    "TransformerConfig",
    "attention_flops",
    "attention_matrix_bytes",
    "attention_params",
    "block_rule",
    "build_transformer",
    "bytes_human",
    "decoder_layer_params",
    "embedding_params",
    "encoder_layer_params",
    "ffn_params",
    "kv_cache_bytes",
    "norm_params",
    "numel",
    "numel_breakdown",
    "param_breakdown",
    "param_count",
    "position_params",
    "preset",
    "swiglu_hidden_size",
]
