"""Bad input to the capstone's machinery (``exercises.capstone``, ``capstone_lm``, ``capstone_train``): a
TypeError/ValueError naming the argument, instead of an AttributeError from inside or a result that passes."""

from types import SimpleNamespace

import torch
import torch.nn as nn
from badinput import Case, parametrize

from transformer_nb.exercises import capstone, capstone_lm, capstone_train
from transformer_nb.exercises.solutions import capstone as sol

C, LM, TR = "transformer_nb.exercises.capstone.", "transformer_nb.exercises.capstone_lm.", "transformer_nb.exercises."
TR += "capstone_train."
IDS = torch.zeros(1, 4, dtype=torch.long)
DATA = SimpleNamespace(train=torch.arange(100) % 10, valid=torch.arange(50) % 10, vocab=[str(i) for i in range(10)])

CASES = {
    "load_package_weights_refuses_a_package_that_is_not_a_module": Case(
        C + "load_package_weights",
        lambda: capstone.load_package_weights(nn.Linear(2, 2), "mha", "attention"),
        TypeError,
        "package must be an nn.Module",
    ),
    "module_runner_refuses_a_package_that_is_not_a_class": Case(
        C + "module_runner", lambda: capstone.module_runner("attention", None), TypeError, "package a class"
    ),
    "randomise_refuses_a_str_seed": Case(
        C + "randomise_", lambda: capstone.randomise_(nn.Linear(2, 2), "0"), TypeError, "seed must be an int"
    ),
    "slip_refuses_a_base_that_is_not_a_class": Case(
        C + "slip", lambda: capstone.slip(nn.Linear(2, 2), "hint", scaled=False), TypeError, "base must be"
    ),
    "student_names_refuses_a_module_for_its_state_dict": Case(
        C + "student_names", lambda: capstone.student_names(nn.Linear(2, 2)), TypeError, "state_dict must be"
    ),
    "causality_problem_refuses_rows_that_do_not_match_the_probes": Case(
        LM + "causality_problem",
        lambda: capstone_lm.causality_problem(torch.zeros(2, 4, dtype=torch.bool), [1]),
        ValueError,
        "changed has 2 rows but there are 1 probes",
    ),
    "future_changes_refuses_float_ids": Case(
        LM + "future_changes",
        lambda: capstone_lm.future_changes(nn.Linear(4, 4), torch.zeros(1, 4), [1]),
        TypeError,
        "ids must be an integer tensor of word ids",
    ),
    "package_lm_refuses_an_empty_vocabulary": Case(
        LM + "package_lm", lambda: capstone_lm.package_lm(0, 16, 2, 32, 1, 8), ValueError, "vocab_size must be >= 1"
    ),
    "package_logits_refuses_a_model_that_is_not_the_package_lm": Case(
        LM + "package_logits",
        lambda: capstone_lm.package_logits(nn.Linear(4, 4), IDS),
        TypeError,
        "model must be the package's Transformer",
    ),
    "positions_swamp_words_refuses_a_state_dict_for_a_model": Case(
        LM + "positions_swamp_words",
        lambda: capstone_lm.positions_swamp_words({}),
        TypeError,
        "model must be an nn.Module, got dict",
    ),
    "attention_maps_refuses_a_batch_for_one_sequence": Case(
        TR + "attention_maps", lambda: capstone_train.attention_maps(nn.Linear(4, 4), IDS), TypeError, "ids must be"
    ),
    "build_refuses_an_empty_vocabulary": Case(
        TR + "build", lambda: capstone_train.build(sol.LanguageModel, 0), ValueError, "vocab_size must be >= 1"
    ),
    "cache_entry_refuses_an_unknown_owner": Case(
        TR + "cache_entry", lambda: capstone_train.cache_entry("teacher"), ValueError, "who must be one of"
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
    "train_model_refuses_a_run_without_steps": Case(
        TR + "train_model", lambda: capstone_train.train_model(nn.Linear(2, 2), DATA, {}), ValueError, "run must be"
    ),
    "validation_loss_refuses_a_model_that_is_not_a_module": Case(
        TR + "validation_loss", lambda: capstone_train.validation_loss(None, IDS[0]), TypeError, "model must be"
    ),
}


@parametrize(CASES)
def test_capstone_refuses_bad_input_by_name(name):
    CASES[name].check()
