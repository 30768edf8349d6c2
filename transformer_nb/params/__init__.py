"""Counting parameters and memory (000 §8.3.5, §8.5.4, Ex 8.2; 001 §19.8.4; 002; 003; 004 §5.7).

Two independent routes to every count, so each checks the other:

1. **Formulas** (``formulas.py``: ``attention_params``, ``ffn_params``, ``norm_params``, ... and
   ``param_breakdown(config)`` for a whole ``TransformerConfig``), written from the shapes of the
   weight matrices;
2. **numel** of a real model (``model.py``: ``build_transformer(config)``, ``numel``,
   ``numel_breakdown``): the package's one ``Transformer``; on ``torch.device("meta")`` it
   has every parameter's shape but no storage, so GPT-3 is counted in seconds with no memory.

``presets.py`` holds the named models with their published counts; ``memory.py`` the size of a KV cache.
Everything is importable from ``transformer_nb.params``.
"""

from transformer_nb.params.formulas import *  # noqa: F403  (CATEGORIES, the per-module formulas, param_breakdown)
from transformer_nb.params.memory import bytes_human as bytes_human
from transformer_nb.params.memory import kv_cache_bytes as kv_cache_bytes
from transformer_nb.params.model import build_transformer as build_transformer
from transformer_nb.params.model import numel as numel
from transformer_nb.params.model import numel_breakdown as numel_breakdown
from transformer_nb.params.presets import PRESETS as PRESETS
