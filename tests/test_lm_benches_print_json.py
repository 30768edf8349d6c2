"""`python -m transformer_nb.bench lm` and `... kvcache` end with one JSON line holding the agreed keys
(tiny budgets here; the real runs are quoted in the issue notes)."""

import json

from wikitext_data import DATA, needs_data

from transformer_nb.bench import __main__ as bench

DATA = str(DATA) if DATA is not None else None


@needs_data
def test_bench_lm_last_line_is_json(capsys):
    assert bench.main(["lm", "--budget", "2", "--eval-tokens", "3000", "--threads", "1", "--data", DATA]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    for key in (
        "bench",
        "budget_s",
        "val_ppl",
        "lstm_val_ppl",
        "tokens_per_s",
        "lstm_tokens_per_s",
        "params",
        "mfu",
        "matmul_peak_gflops",
        "threads",
    ):
        assert key in result, key
    assert result["bench"] == "lm" and result["budget_s"] == 2 and result["threads"] == 1
    assert result["eval_tokens"] == 3000
    assert 0 < result["mfu"] < 1 and result["matmul_peak_gflops"] > 0
    assert 1 < result["val_ppl"] < 1e6 and result["val_ppl"] <= result["val_ppl_no_overlap"] * 1.5


@needs_data
def test_bench_kvcache_last_line_is_json(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))  # no trained model there: random init
    assert bench.main(["kvcache", "--new-tokens", "24", "--repeats", "1", "--threads", "1", "--data", DATA]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["bench"] == "kvcache" and result["new_tokens"] == 24
    assert result["identical"] is True and result["speedup"] > 0
    assert result["weights"] == "random-init"
