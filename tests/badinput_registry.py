# ruff: noqa: E501  (a table: one callable and its test per line)
"""Where the census (``tests/test_badinput_census.py``) finds the bad-input case of callables that have no
``CASES`` entry in a ``tests/test_badinput_<area>.py``."""

#: Covered by another test: qualified name -> the test (file::function[parameters]) that feeds it bad input,
#: with "via NAME" where the test reaches it through NAME (a class through the function that builds it).
ELSEWHERE = {
    "transformer_nb.reversal.training.run": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.checks.check_close": "tests/test_checks_bad_input.py::test_bad_arguments_are_named[<lambda>-TypeError-actual is complex0]",
    "transformer_nb.checks.check_equal": "tests/test_checks_bad_input.py::test_an_object_with_a_strange_eq_is_refused",
    "transformer_nb.checks.check_raises": "tests/test_checks_bad_input.py::test_bad_arguments_are_named[<lambda>-TypeError-fn must be callable]",
    "transformer_nb.checks.check_true": "tests/test_checks_bad_input.py::test_bad_arguments_are_named[<lambda>-TypeError-condition must be True/False0]",
    "transformer_nb.companion.exercise_map": "tests/test_companion_bad_input.py::test_bad_arguments_are_named[<lambda>-TypeError-index must be the list]",
    "transformer_nb.companion.info": "tests/test_companion_bad_input.py::test_bad_arguments_are_named[<lambda>-TypeError-path must be a path]",
    "transformer_nb.companion.notebook_index": "tests/test_companion_bad_input.py::test_bad_arguments_are_named[<lambda>-TypeError-folder must be a path]",
    "transformer_nb.params.formulas.ffn_params": "tests/test_params_bad_input.py::test_formula_argument_errors[ffn_params]",
    "transformer_nb.params.formulas.norm_params": "tests/test_params_bad_input.py::test_formula_argument_errors[norm_params]",
    "transformer_nb.params.formulas.param_breakdown": "tests/test_params_bad_input.py::test_wrong_model_types_and_devices",
    "transformer_nb.params.formulas.position_params": "tests/test_params_bad_input.py::test_formula_argument_errors[position_params]",
    "transformer_nb.params.memory.bytes_human": "tests/test_params_bad_input.py::test_bytes_human_refuses_what_is_not_a_byte_count[5]",
    "transformer_nb.params.model.build_transformer": "tests/test_params_bad_input.py::test_wrong_model_types_and_devices",
    "transformer_nb.params.model.numel": "tests/test_params_bad_input.py::test_wrong_model_types_and_devices",
    "transformer_nb.params.model.numel_breakdown": "tests/test_params_bad_input.py::test_wrong_model_types_and_devices",
    "transformer_nb.reversal.data.Batch": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.data.collate": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.data.heldout_set": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.data.make_pairs": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.data.parse_tokens": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.data.random_batch": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.data.reverse_padded": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.data.sequence_codes": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.data.shift_for_teacher_forcing": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.decoding.anti_diagonal_share": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.decoding.attention_maps": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.decoding.evaluate": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.decoding.failure_table": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.decoding.forced_match": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.decoding.greedy_decode": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.decoding.length_sweep": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.decoding.model_device": "tests/test_reversal_devices.py::test_model_device_of_a_model_without_parameters",
    "transformer_nb.reversal.decoding.score": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.recipes.Recipe": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument[kwargs1-lr]",
    "transformer_nb.reversal.recipes.check_model": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument[kwargs1-ValueError-make it from rv.MODEL] via build_model",
    "transformer_nb.reversal.recipes.build_model": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.recipes.paper_lr": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.recipes.warmup_factor": "tests/test_reversal_recipes_and_schedule.py::test_lambda_lr_reproduces_the_text_formula",
    "transformer_nb.reversal.training.loss_fn": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.reversal.training.train": "tests/test_reversal_bad_input.py::test_bad_input_is_refused_naming_the_argument",
    "transformer_nb.source.show_source": "tests/test_source_names_the_real_file.py::test_objects_without_source_are_refused[3]",
    "transformer_nb.train.train": "tests/test_train_loop.py::test_bad_arguments_name_themselves",
    "transformer_nb.core.checks.as_device": "tests/test_profile_argument_helpers.py::test_as_device",
    "transformer_nb.core.checks.as_real": "tests/test_profile_argument_helpers.py::test_as_real",
    "transformer_nb.core.checks.check_memory": "tests/test_profile_argument_helpers.py::test_check_memory",
    "transformer_nb.env.env_flag": "tests/test_profile_env_switches_and_paths.py::test_a_switch_that_is_neither_is_an_error_naming_the_variable_and_the_choices[2]",
    "transformer_nb.env.get_device": "tests/test_profile_setup_validates_environment.py::test_prefer_is_checked_too",
    "transformer_nb.core.checks.memory_of": "tests/test_profile_argument_helpers.py::test_memory_of_checks_its_device",
    "transformer_nb.env.pick": "tests/test_profile_argument_helpers.py::test_pick_needs_both_profiles",
    "transformer_nb.env.seed_everything": "tests/test_profile_setup_validates_environment.py::test_seed_everything_checks_its_seed",
    "transformer_nb.env.setup": "tests/test_profile_setup_validates_environment.py::test_cuda_without_cuda_says_so",
    "transformer_nb.widgets.lm.GenerateWidget": "tests/test_lm_widget.py::test_widget_needs_a_transformer",
    "transformer_nb.wikitext.WikiText2": "tests/test_wikitext_bad_input.py::test_load_refuses_a_non_bool_check_and_a_bad_split_name via load_wikitext2",
    "transformer_nb.wikitext.batchify": "tests/test_wikitext_bad_input.py::test_bad_input_is_refused_by_name",
    "transformer_nb.wikitext.get_batch": "tests/test_wikitext_bad_input.py::test_bad_input_is_refused_by_name",
    "transformer_nb.wikitext.iter_batches": "tests/test_wikitext_bad_input.py::test_bad_input_is_refused_by_name",
    "transformer_nb.wikitext.load_wikitext2": "tests/test_wikitext_bad_input.py::test_load_refuses_a_non_bool_check_and_a_bad_split_name",
    "transformer_nb.wikitext.random_windows": "tests/test_wikitext_bad_input.py::test_bad_input_is_refused_by_name",
    "transformer_nb.wikitext_files.find_data_dir": "tests/test_wikitext_bad_input.py::test_bad_input_is_refused_by_name",
}

#: Callables that take no argument: nothing to feed them, so no bad input. Name -> what it does instead.
NO_ARGUMENTS = {
    "transformer_nb.cache.cache_dir": "reads TNB_CACHE_DIR, whose bad values the environment tests cover",
    "transformer_nb.lm_compute.cpu_profile": "a context manager with no argument: it only starts the CPU profiler",
    "transformer_nb.wikitext_files.beside_checkout": "../shared/data from the checkout the package lies in",
    "transformer_nb.exercises.all_exercises": "lists the exercises the package defines",
    "transformer_nb.core.generation.no_onednn": "a context manager with no options",
    "transformer_nb.widgets.warmup.SoftmaxTemperature": "a widget over fixed scores; its controls start at set values",
    "transformer_nb.train.Progress": "a counter built empty; the trainer feeds it, never a user",
    "transformer_nb.train.rank_and_world": "reads torch.distributed's state",
    "transformer_nb.core.checks.available_devices": "lists the devices torch reports",
    "transformer_nb.env.profile": "reads TNB_PROFILE, whose bad values the environment tests cover",
    "transformer_nb.wikitext_files.data_url": "reads TNB_DATA_URL, a mirror's address",
    "transformer_nb.wikitext_files.user_cache_dir": "reads XDG_CACHE_HOME, a path",
}

#: Helpers that only the package calls, after its public function checked their input: name -> that function.
TRUSTS_CALLER = {
    "transformer_nb.core.generation.sample_next": "generate checks temperature, top_k and the model's logits come from it",
    "transformer_nb.core.generation.top_k_filter": "generate checks top_k; sample_next calls it on the model's logits",
}

#: Files being rewritten on other branches; their callables get their cases with the rewrite.
PENDING_FILES = (
    "transformer_nb/core/attention.py",
    "transformer_nb/bench/",
    "transformer_nb/core/block.py",
    "transformer_nb/exercises/capstone.py",
    "transformer_nb/exercises/capstone_lm.py",
    "transformer_nb/exercises/capstone_train.py",
    "transformer_nb/exercises/lm_train.py",
    "transformer_nb/exercises/models.py",
    "transformer_nb/core/generation.py",
    "transformer_nb/interop.py",
    "transformer_nb/lecture.py",
    "transformer_nb/lm_compute.py",
    "transformer_nb/lm_ddp.py",
    "transformer_nb/lm_recipe.py",
    "transformer_nb/lm_training.py",
    "transformer_nb/core/masks.py",
    "transformer_nb/core/multihead.py",
    "transformer_nb/objectives.py",
    "transformer_nb/core/output_head.py",
    "transformer_nb/params/",
    "transformer_nb/perplexity.py",
    "transformer_nb/core/positional.py",
    "transformer_nb/probes.py",
    "transformer_nb/core/rope.py",
    "transformer_nb/small_corpus.py",
    "transformer_nb/core/stack.py",
    "transformer_nb/widgets/lm.py",
    "transformer_nb/widgets/models.py",
    "transformer_nb/widgets/params.py",
)

#: Public callables in PENDING_FILES with no case yet: name -> the file being rewritten. Their cases come with
#: the rewrite. Empty since the merge of the one Transformer: every callable has its case.
PENDING = {}

#: The exercises' reference solutions: answer keys written as a student would write them, with no argument
#: checks (that is the lesson they show). A student never calls them; the checker calls them on its own cases,
#: and ``Exercise.use`` hands one to the notebook's cells with the notebook's own arguments.
ANSWER_KEYS = "transformer_nb.exercises.solutions."
