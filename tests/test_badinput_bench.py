"""Bad input to the benchmarks (``python -m transformer_nb.bench ...``): a usage error naming the option before
anything is trained or timed."""

import argparse

from badinput import Case, parametrize

from transformer_nb import bench
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
    "reversal_main_refuses_evaluating_every_0_steps": Case(
        B + "reversal.main",
        lambda: reversal.main(["--eval-every", "0"]),
        SystemExit,
        "--eval-every must be a positive finite number",
    ),
    "reversal_main_refuses_a_missing_device": Case(
        B + "reversal.main", lambda: reversal.main(["--device", "mps"]), SystemExit, "MPS is not available"
    ),
}


@parametrize(CASES)
def test_benchmarks_refuse_bad_input_by_name(name):
    CASES[name].check()
