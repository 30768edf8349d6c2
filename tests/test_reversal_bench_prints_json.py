"""`python -m transformer_nb.bench reversal` ends with one JSON line holding the agreed keys."""

import json

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
    ):
        assert key in result
    assert result["bench"] == "reversal" and result["steps"] == 20 and result["threads"] == 1
    assert result["text_recipe_steps"] == 32 and 0.0 <= result["exact_match"] <= 1.0
