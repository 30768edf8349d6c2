"""Bad input to ``lm_ddp`` (data-parallel training): a usage error or a TypeError naming the argument."""

import torch
from badinput import Case, parametrize

from transformer_nb import lm_ddp

CASES = {
    "lm_ddp_main_refuses_a_negative_timeout": Case(
        "transformer_nb.lm_ddp.main",
        lambda: lm_ddp.main(["--timeout", "-1"]),
        SystemExit,
        "--timeout must be a positive finite number",
    ),
    "lm_ddp_wrap_refuses_a_model_that_is_not_a_module": Case(
        "transformer_nb.lm_ddp.wrap",
        lambda: lm_ddp.wrap(3, torch.device("cpu")),
        TypeError,
        "model must be an nn.Module, got int",
    ),
}


@parametrize(CASES)
def test_lm_entry_points_refuse_bad_input_by_name(name):
    CASES[name].check()
