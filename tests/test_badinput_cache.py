"""Bad input to the cache: the digests it keys trained models by (``fingerprint``), its files and its runs."""

import torch.nn as nn
from badinput import Case, parametrize

from transformer_nb import cache, fingerprint

F = "transformer_nb.fingerprint."
C = "transformer_nb.cache."

CASES = {
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
    "cache_name_refuses_a_config_that_is_not_a_dict": Case(
        C + "cache_name", lambda: cache.cache_name("m", [1]), TypeError, "config must be a dict"
    ),
    "cache_path_refuses_a_path": Case(C + "cache_path", lambda: cache.cache_path("../up"), ValueError, "name must be"),
    "code_digests_refuses_a_model_that_is_not_a_module": Case(
        C + "code_digests", lambda: cache.code_digests("model"), TypeError, "model must be a torch.nn.Module"
    ),
    "load_refuses_a_config_that_is_not_a_dict": Case(
        C + "load", lambda: cache.load("m", nn.Linear(1, 1), "d=3"), TypeError, "config must be a dict"
    ),
    "load_or_train_refuses_a_model_that_is_not_a_module": Case(
        C + "load_or_train", lambda: cache.load_or_train("m", "model", {}, print), TypeError, "model must be"
    ),
    "load_or_train_refuses_a_train_fn_that_returns_a_list": Case(
        C + "load_or_train",
        lambda: cache.load_or_train("m", nn.Linear(1, 1), {}, lambda m: [1, 2]),
        TypeError,
        "train_fn must return a dict",
    ),
    "read_refuses_a_path": Case(C + "read", lambda: cache.read("../m", {}), ValueError, "name must be"),
    "save_refuses_a_config_that_is_not_a_dict": Case(
        C + "save", lambda: cache.save("m", nn.Linear(1, 1), [1]), TypeError, "config must be a dict"
    ),
}


@parametrize(CASES)
def test_cache_digests_refuse_bad_input(name):
    CASES[name].check()
