"""The toy reversal task (001 §19.9–19.10; 000 §8.6.3; 004 §13.3): an encoder–decoder learns to
reverse short sequences of symbols.

- ``data.py``: token ids, ``Batch``, the text's ``make_pairs`` and the vectorised ``random_batch``,
  the held-out set, the teacher-forcing shift;
- ``recipes.py``: ``MODEL`` (a ``TransformerConfig``) / ``build_model``, the warm-up schedule, ``Recipe`` with
  ``TEXT_RECIPE`` (the text as written), ``IMPROVED``, ``LADDER`` and ``ABLATIONS``;
- ``decoding.py``: batched ``greedy_decode``, ``evaluate`` (exact match, per-token accuracy, first
  wrong position), ``forced_match`` (the same exact match from one teacher-forced pass),
  ``failure_table``, ``length_sweep``, ``attention_maps``;
- ``training.py``: ``train`` (the package's one training loop with the task's loss, optimizer,
  batches and evaluation) and ``run``: one run for the trained-model cache (``cache.load_or_train``).

Everything is importable from here: ``from transformer_nb import reversal as rv``; ``rv.train(...)``.

Devices: a model is built on the CPU (the same weights everywhere) and moved to ``device``
(default ``env.get_device()``); data is drawn on the CPU and moved to ``device`` (default the
CPU); every function that takes a model computes on the model's device, moves its other inputs
there, and returns its tensors there.
"""

from transformer_nb.reversal.data import (
    BOS,
    EOS,
    FIRST_SYMBOL,
    MAX_LEN,
    MIN_LEN,
    N_SYMBOLS,
    PAD,
    VOCAB_SIZE,
    Batch,
    collate,
    heldout_set,
    make_pairs,
    parse_tokens,
    random_batch,
    reverse_padded,
    sequence_codes,
    shift_for_teacher_forcing,
)
from transformer_nb.reversal.decoding import (
    SWEEP_LENGTHS,
    anti_diagonal_share,
    attention_maps,
    evaluate,
    failure_table,
    forced_match,
    greedy_decode,
    length_sweep,
    model_device,
    score,
)
from transformer_nb.reversal.recipes import (
    ABLATIONS,
    IMPROVED,
    INITS,
    LADDER,
    MODEL,
    TEXT_MODEL,
    TEXT_RECIPE,
    Recipe,
    build_model,
    check_model,
    paper_lr,
    warmup_factor,
)
from transformer_nb.reversal.training import (
    EVAL_EVERY,
    N_EVAL,
    TARGET,
    WORKERS,
    batches,
    loss_fn,
    make_optimizer,
    run,
    train,
)

__all__ = [
    "ABLATIONS",
    "BOS",
    "EOS",
    "EVAL_EVERY",
    "FIRST_SYMBOL",
    "IMPROVED",
    "INITS",
    "LADDER",
    "MAX_LEN",
    "MIN_LEN",
    "MODEL",
    "N_EVAL",
    "N_SYMBOLS",
    "PAD",
    "SWEEP_LENGTHS",
    "TARGET",
    "TEXT_MODEL",
    "TEXT_RECIPE",
    "VOCAB_SIZE",
    "WORKERS",
    "Batch",
    "Recipe",
    "anti_diagonal_share",
    "attention_maps",
    "batches",
    "build_model",
    "check_model",
    "collate",
    "evaluate",
    "failure_table",
    "forced_match",
    "greedy_decode",
    "heldout_set",
    "length_sweep",
    "loss_fn",
    "make_optimizer",
    "make_pairs",
    "model_device",
    "paper_lr",
    "parse_tokens",
    "random_batch",
    "reverse_padded",
    "run",
    "score",
    "sequence_codes",
    "shift_for_teacher_forcing",
    "train",
    "warmup_factor",
]
