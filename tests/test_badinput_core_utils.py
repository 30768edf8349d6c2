"""The core's shared predicates give the right answer on input that only looks right (``Gives``)."""

import torch
from badinput import Gives, parametrize

from transformer_nb.core import utils

CASES = {
    "is_int_tensor_says_a_bool_tensor_is_not_one": Gives(
        "transformer_nb.core.checks.is_int_tensor", lambda: utils.is_int_tensor(torch.ones(2, dtype=torch.bool)), False
    ),
    "is_int_tensor_says_a_list_of_ints_is_not_one": Gives(
        "transformer_nb.core.checks.is_int_tensor", lambda: utils.is_int_tensor([1, 2]), False
    ),
}


@parametrize(CASES)
def test_core_predicates_answer_hostile_input_correctly(name):
    CASES[name].check()


def test_is_int_tensor_accepts_every_integer_dtype_and_refuses_the_rest():
    for dtype in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64):
        assert utils.is_int_tensor(torch.zeros(2, dtype=dtype))
    for dtype in (torch.bool, torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64):
        assert not utils.is_int_tensor(torch.zeros(2, dtype=dtype))
