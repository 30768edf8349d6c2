"""The analytic parameter formulas equal numel() of real modules and of every named model built on the meta device."""

import time

import psutil
import pytest
import torch
import torch.nn as nn

from transformer_nb.params import (
    PRESETS,
    block_rule,
    build_transformer,
    bytes_human,
    numel,
    numel_breakdown,
    param_breakdown,
)

# the published checkpoints' exact counts (Hugging Face numel of BertModel, GPT2Model, T5Model, LlamaModel+head, ...)
KNOWN = {
    "transformer-base": 63_082_496,
    "transformer-big": 214_245_376,
    "exercise-8.2": 35_270_656,
    "t5-base": 222_903_552,
    "bert-base": 109_482_240,
    "bert-large": 335_141_888,
    "gpt2-small": 124_439_808,
    "gpt2-medium": 354_823_168,
    "gpt2-large": 774_030_080,
    "gpt2-xl": 1_557_611_200,
    "gpt3": 174_604_259_328,
    "llama2-7b": 6_738_415_616,
    "llama2-70b": 68_976_648_192,
    "mistral-7b": 7_241_732_096,
}


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_named_model_formula_equals_meta_numel(name):
    cfg = PRESETS[name]
    model = build_transformer(cfg)
    assert all(p.is_meta for p in model.parameters())
    assert param_breakdown(cfg) == numel_breakdown(model)  # category by category
    assert numel(model) == param_breakdown(cfg)["total"] == KNOWN[name]


def test_memory_formulas_002():
    assert 96 * block_rule(12288) == 173_946_175_488  # 002's 12·d² rule for GPT-3, within 1% of the exact count
    assert bytes_human(2**30) == "1.07 GB" and bytes_human(2**30, binary=True) == "1 GiB"


def test_meta_counting_is_fast_and_uses_no_memory():
    build_transformer(PRESETS["gpt2-small"])  # warm up (first meta op imports torch._refs)
    rss = psutil.Process().memory_info().rss
    t0 = time.perf_counter()
    model = build_transformer(PRESETS["gpt3"])
    seconds = time.perf_counter() - t0
    assert numel(model) == KNOWN["gpt3"]
    assert seconds < 30, f"building GPT-3 on meta took {seconds:.1f} s"
    assert psutil.Process().memory_info().rss - rss < 300 * 2**20


def test_a_meta_model_gives_shapes_and_leaves_the_init_functions_as_they_were():
    before = nn.init.normal_
    logits, _ = build_transformer(PRESETS["gpt2-small"])(torch.zeros(1, 1024, dtype=torch.long, device="meta"))
    assert logits.shape == (1, 1024, 50257) and logits.is_meta
    assert nn.init.normal_ is before
    w = torch.zeros(1000)
    nn.init.normal_(w)
    assert w.std() > 0.5
