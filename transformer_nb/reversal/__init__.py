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

# ruff: noqa: F403 (the package re-exports its modules' public names: rv.train, rv.IMPROVED, ...)
from transformer_nb.reversal.data import *
from transformer_nb.reversal.decoding import *
from transformer_nb.reversal.recipes import *
from transformer_nb.reversal.training import *
