"""Bad input to the capstone's machinery (``exercises.capstone``, ``capstone_lm``, ``capstone_train``): a
TypeError/ValueError naming the argument, instead of an AttributeError from inside or a result that passes."""

from types import SimpleNamespace

import torch
import torch.nn as nn
from badinput import Case, parametrize

from transformer_nb.exercises import capstone_lm, capstone_train
from transformer_nb.exercises.solutions import capstone as sol

C, LM, TR = "transformer_nb.exercises.capstone.", "transformer_nb.exercises.capstone_lm.", "transformer_nb.exercises."
TR += "capstone_train."
IDS = torch.zeros(1, 4, dtype=torch.long)
DATA = SimpleNamespace(train=torch.arange(100) % 10, valid=torch.arange(50) % 10, vocab=[str(i) for i in range(10)])

CASES = {
    "package_logits_refuses_a_model_that_is_not_the_package_lm": Case(
        LM + "package_logits",
        lambda: capstone_lm.package_logits(nn.Linear(4, 4), IDS),
        TypeError,
        "model must be the package's Transformer",
    ),
    "attention_maps_refuses_a_batch_for_one_sequence": Case(
        TR + "attention_maps", lambda: capstone_train.attention_maps(nn.Linear(4, 4), IDS), TypeError, "ids must be"
    ),
    "build_refuses_an_empty_vocabulary": Case(
        TR + "build", lambda: capstone_train.build(sol.LanguageModel, 0), ValueError, "vocab_size must be >= 1"
    ),
    "training_run_refuses_an_unknown_owner": Case(
        TR + "training_run", lambda: capstone_train.training_run(sol.LanguageModel, DATA, "teacher"), ValueError, "who"
    ),
    "training_run_refuses_data_without_splits": Case(
        TR + "training_run",
        lambda: capstone_train.training_run(sol.LanguageModel, [1, 2, 3], "reference", live=False),
        TypeError,
        "data must be load_wikitext2()'s WikiText2",
    ),
    "load_trained_refuses_an_unknown_profile": Case(
        TR + "load_trained", lambda: capstone_train.load_trained(profile_name="medium"), ValueError, "profile_name"
    ),
    "to_package_refuses_an_empty_vocabulary": Case(
        TR + "to_package", lambda: capstone_train.to_package(nn.Linear(2, 2), 0), ValueError, "vocab_size must be"
    ),
}


@parametrize(CASES)
def test_capstone_refuses_bad_input_by_name(name):
    CASES[name].check()
