"""Bad input to the cache: the digests it keys trained models by (``fingerprint``), and its training runs."""

import torch.nn as nn
from badinput import Case, parametrize

from transformer_nb import cache, fingerprint

F = "transformer_nb.fingerprint."
C = "transformer_nb.cache."

CASES = {
    "file_digest_names_a_missing_file": Case(
        F + "file_digest", lambda: fingerprint.file_digest("/nonexistent-module.py"), FileNotFoundError, "nonexistent"
    ),
    "source_digest_refuses_a_number": Case(
        F + "source_digest", lambda: fingerprint.source_digest(3), TypeError, "src must be Python source text"
    ),
    "in_workers_refuses_zero_workers": Case(
        C + "in_workers", lambda: cache.in_workers(print, [(1,)], 0), ValueError, "workers must be >= 1"
    ),
    "load_or_train_many_refuses_zero_workers": Case(
        C + "load_or_train_many", lambda: cache.load_or_train_many(print, {}, 0), ValueError, "workers must be >= 1"
    ),
    "train_and_save_refuses_a_train_fn_that_is_not_callable": Case(
        C + "train_and_save",
        lambda: cache.train_and_save("m", nn.Linear(1, 1), {}, "train"),
        TypeError,
        "train_fn must be callable",
    ),
    "run_args_refuses_an_unknown_keyword": Case(
        C + "run_args", lambda: cache.run_args({"sed": 1}, {"seed": 0}), TypeError, "unexpected keyword arguments"
    ),
}


@parametrize(CASES)
def test_cache_digests_refuse_bad_input(name):
    CASES[name].check()
