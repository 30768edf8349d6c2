"""`python -m transformer_nb.bench reversal|lm|kvcache` end with one JSON line holding the agreed keys
(tiny sizes here; the real runs are quoted in the issue notes)."""

import functools
import json

from wikitext_data import DATA, needs_data

from transformer_nb.bench import __main__ as bench
from transformer_nb.bench import lm as bench_lm

DATA = str(DATA) if DATA is not None else None


def _last_json(capsys, *argv) -> dict:
    assert bench.main([*argv, "--threads", "1"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["bench"] == argv[0] and result["threads"] == 1 and "torch" in result
    return result


def test_bench_reversal_last_line_is_json(capsys):
    # a tiny run: 20 improved steps, 1 epoch of the text recipe, 100 held-out sequences, 3 throughput steps
    argv = "--max-steps 20 --eval-every 10 --text-epochs 1 --n-eval 100 --throughput-steps 3".split()  # noqa: SIM905
    r = _last_json(capsys, "reversal", *argv)
    assert r["steps"] == 20 and r["text_recipe_steps"] == 32 and 0.0 <= r["exact_match"] <= 1.0
    assert r["device"] == "cpu" and r["throughput_steps"] == 3 and "mfu" not in r  # MFU: GPUs only
    assert r["train_seconds"] > 0 and r["text_recipe_seconds"] > 0
    assert r["tokens_per_s"] > 0 and r["flops_per_step"] > 1e8  # a step of a 0.24M-parameter model on ~2k tokens


@needs_data
def test_bench_lm_last_line_is_json(capsys, monkeypatch):
    monkeypatch.setattr(bench_lm, "matmul_peak_gflops", functools.partial(bench_lm.matmul_peak_gflops, seconds=0.2))
    r = _last_json(capsys, "lm", "--budget", "0.5", "--eval-tokens", "1000", "--data", DATA)
    assert r["budget_s"] == 0.5 and r["eval_tokens"] == 1000 and r["params"] > 0
    assert r["tokens_per_s"] > 0 and r["lstm_tokens_per_s"] > 0 and r["lstm_val_ppl"] > 1
    assert 0 < r["mfu"] < 1 and r["matmul_peak_gflops"] > 0
    assert 1 < r["val_ppl"] < 1e6 and r["val_ppl"] <= r["val_ppl_no_overlap"] * 1.5


@needs_data
def test_bench_kvcache_last_line_is_json(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))  # no trained model there: random init
    r = _last_json(capsys, "kvcache", "--new-tokens", "24", "--repeats", "1", "--data", DATA)
    assert r["new_tokens"] == 24 and r["identical"] is True and r["speedup"] > 0 and r["weights"] == "random-init"
    assert r["identical_prompt_256"] is True and r["speedup_prompt_256"] > 0
