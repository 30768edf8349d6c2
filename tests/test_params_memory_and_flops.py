"""Memory and FLOP formulas: attention matrices, Exercise 8.4, 004's table, 002's 12d² rule, the KV cache."""

import torch
from torch.utils.flop_counter import FlopCounterMode

from transformer_nb.core.multihead import MultiHeadAttention
from transformer_nb.params import (
    PRESETS,
    attention_flops,
    attention_matrix_bytes,
    block_rule,
    bytes_human,
    kv_cache_bytes,
    param_breakdown,
)


def test_exercise_8_4_memory():
    assert attention_matrix_bytes(4096, 32, 2) == 2**30
    t = torch.empty(1, 32, 4096, 4096, dtype=torch.float16, device="meta")
    assert t.numel() * t.element_size() == attention_matrix_bytes(4096, 32, 2)
    assert bytes_human(2**30) == "1.07 GB" and bytes_human(2**30, binary=True) == "1 GiB"


def test_004_table():
    assert attention_matrix_bytes(512) == 2**19  # 0.5 MiB
    assert attention_matrix_bytes(4096) == 32 * 2**20  # 32 MiB
    assert attention_matrix_bytes(128_000, bytes_per_value=1) == 16_384_000_000  # the text's "16.4B" entries
    assert attention_matrix_bytes(131_072) == 32 * 2**30  # a real 128K context: 32 GiB


def test_flops_match_torch_flop_counter():
    for t, d, h in ((64, 32, 4), (300, 96, 6), (4096, 4096, 32)):
        with torch.device("meta"):
            m, x = MultiHeadAttention(d, h), torch.empty(2, t, d)
        with FlopCounterMode(display=False) as fc:
            m(x)
        assert fc.get_total_flops() == 2 * attention_flops(t, d, h)["total"]


def test_crossovers():
    d, h = 4096, 32
    first = lambda cond: next(t for t in range(1, 1 << 15) if cond(t))
    f = lambda t: attention_flops(t, d, h)
    assert first(lambda t: t * t > d * t) == d + 1
    assert first(lambda t: f(t)["scores"] + f(t)["weighted_sum"] > f(t)["projections"]) == 2 * d + 1
    assert first(lambda t: h * t * t > t * d) == d // h + 1


def test_12d2_rule_and_gpt3():
    assert 96 * block_rule(12288) == 173_946_175_488
    assert abs(96 * block_rule(12288) / param_breakdown(PRESETS["gpt3"])["total"] - 1) < 0.01


def test_kv_cache_llama2_70b():
    assert kv_cache_bytes(80, 64, 128, 4096) == 10_737_418_240  # MHA as in 002, not "40 GB"
    assert kv_cache_bytes(80, 8, 128, 4096) == 1_342_177_280  # the real GQA model
