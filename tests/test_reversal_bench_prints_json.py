"""`python -m transformer_nb.bench reversal` ends with one JSON line holding the agreed keys."""

import json

import pytest
import torch

from transformer_nb.bench import __main__ as bench


def test_bench_reversal_last_line_is_json(capsys):
    # a tiny run: 20 improved steps, 1 epoch of the text recipe, 100 held-out sequences
    assert (
        bench.main(
            [
                "reversal",
                "--max-steps",
                "20",
                "--eval-every",
                "10",
                "--text-epochs",
                "1",
                "--n-eval",
                "100",
                "--threads",
                "1",
                "--throughput-steps",
                "3",
            ]
        )
        == 0
    )
    last = capsys.readouterr().out.strip().splitlines()[-1]
    result = json.loads(last)
    for key in (
        "bench",
        "exact_match",
        "train_seconds",
        "steps",
        "text_recipe_exact_match",
        "text_recipe_seconds",
        "threads",
        "device",
        "tokens_per_s",
        "flops_per_step",
    ):
        assert key in result
    assert result["bench"] == "reversal" and result["steps"] == 20 and result["threads"] == 1
    assert result["text_recipe_steps"] == 32 and 0.0 <= result["exact_match"] <= 1.0
    assert result["device"] == "cpu" and result["throughput_steps"] == 3 and "mfu" not in result  # MFU: GPUs only
    assert (
        result["tokens_per_s"] > 0 and result["flops_per_step"] > 1e8
    )  # a step of a 0.24M-parameter model on ~2k tokens


def test_bench_reversal_refuses_a_missing_device():

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(SystemExit, match="no CUDA device"):
        bench.main(["reversal", "--device", "cuda"])
