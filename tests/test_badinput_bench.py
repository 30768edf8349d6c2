"""Bad input to the benchmarks (``python -m transformer_nb.bench ...`` and their helpers): a usage error naming the
option, or a TypeError/ValueError naming the argument, before anything is trained or timed."""

import argparse

from badinput import Case, parametrize

from transformer_nb import bench
from transformer_nb import reversal as rv
from transformer_nb.bench import kvcache, lm, reversal

B = "transformer_nb.bench."

CASES = {
    "check_positive_flags_names_a_zero_option": Case(
        B + "check_positive_flags",
        lambda: bench.check_positive_flags(argparse.ArgumentParser(prog="x"), argparse.Namespace(n_eval=0), "n_eval"),
        SystemExit,
        "--n-eval must be a positive finite number, got 0",
    ),
    "kvcache_main_refuses_zero_repeats": Case(
        B + "kvcache.main", lambda: kvcache.main(["--repeats", "0"]), SystemExit, "--repeats: must be >= 1, got 0"
    ),
    "lm_main_refuses_a_negative_budget": Case(
        B + "lm.main", lambda: lm.main(["--budget", "-1"]), SystemExit, "--budget must be a positive finite number"
    ),
    "lm_run_refuses_a_model_that_is_not_a_language_model": Case(
        B + "lm.run", lambda: lm.run("x", 3, None, None, 1.0, 10), TypeError, "model must be a decoder-only"
    ),
    "reversal_main_refuses_evaluating_every_0_steps": Case(
        B + "reversal.main",
        lambda: reversal.main(["--eval-every", "0"]),
        SystemExit,
        "--eval-every must be a positive finite number",
    ),
    "peak_bf16_flops_refuses_a_0_by_0_matmul": Case(
        B + "reversal.peak_bf16_flops", lambda: reversal.peak_bf16_flops("cpu", n=0), ValueError, "n must be >= 1"
    ),
    "run_improved_refuses_evaluating_every_0_steps": Case(
        B + "reversal.run_improved",
        lambda: reversal.run_improved(rv.heldout_set(2), 0.9, 0, 0),
        ValueError,
        "eval_every must be >= 1",
    ),
    "run_text_refuses_evaluating_every_0_steps": Case(
        B + "reversal.run_text", lambda: reversal.run_text(rv.heldout_set(2), 0, 0), ValueError, "eval_every must be"
    ),
    "step_flops_refuses_a_recipe_name": Case(
        B + "reversal.step_flops",
        lambda: reversal.step_flops("improved", "cpu"),
        TypeError,
        "recipe must be a reversal Recipe",
    ),
    "sync_refuses_a_device_number": Case(
        B + "reversal.sync", lambda: reversal.sync(0), TypeError, "device must be a device name"
    ),
    "throughput_refuses_0_steps": Case(
        B + "reversal.throughput", lambda: reversal.throughput(rv.IMPROVED, 0, 0, "cpu"), ValueError, "steps must be"
    ),
}


@parametrize(CASES)
def test_benchmarks_refuse_bad_input_by_name(name):
    CASES[name].check()
