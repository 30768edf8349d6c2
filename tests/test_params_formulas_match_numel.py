"""The analytic parameter formulas equal numel() of real modules and of every named model built on the meta device."""

import time

import psutil
import pytest
import torch
import torch.nn as nn

from transformer_nb.core.block import EncoderLayer, FeedForward, make_norm
from transformer_nb.core.multihead import MultiHeadAttention
from transformer_nb.core.positional import LearnedPositionalEmbedding
from transformer_nb.params import (
    PRESETS,
    TransformerConfig,
    attention_params,
    block_rule,
    build_transformer,
    bytes_human,
    encoder_layer_params,
    ffn_params,
    kv_cache_bytes,
    norm_params,
    numel,
    numel_breakdown,
    param_breakdown,
    position_params,
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


def n(m):
    return sum(p.numel() for p in m.parameters())


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_named_model_formula_equals_meta_numel(name):
    cfg = PRESETS[name]
    model = build_transformer(cfg)
    assert all(p.is_meta for p in model.parameters())
    assert param_breakdown(cfg) == numel_breakdown(model)  # category by category
    assert numel(model) == param_breakdown(cfg)["total"] == KNOWN[name]


@pytest.mark.parametrize(
    "d,h,g,bias",
    [(512, 8, None, True), (512, 8, 8, False), (768, 12, 4, True), (4096, 32, 8, False), (1024, 16, 1, True)],
)
def test_attention_formula(d, h, g, bias):
    with torch.device("meta"):
        assert n(MultiHeadAttention(d, h, g, bias=bias)) == attention_params(
            TransformerConfig(d_model=d, n_heads=h, n_kv_heads=g, bias=bias)
        )
    counts = {attention_params(TransformerConfig(d_model=512, n_heads=h)) for h in (1, 2, 4, 8, 16, 32)}
    assert counts == {4 * 512**2 + 4 * 512}  # the number of heads does not change the count


def test_memory_formulas_002():
    assert 96 * block_rule(12288) == 173_946_175_488  # 002's 12·d² rule for GPT-3, within 1% of the exact count
    assert kv_cache_bytes(80, 64, 128, 4096) == 10_737_418_240  # LLaMA-2-70B with MHA as in 002, not "40 GB"
    assert kv_cache_bytes(80, 8, 128, 4096) == 1_342_177_280  # the real GQA model
    assert bytes_human(2**30) == "1.07 GB" and bytes_human(2**30, binary=True) == "1 GiB"


@pytest.mark.parametrize("act", ["relu", "gelu", "swiglu"])
@pytest.mark.parametrize("bias", [True, False])
def test_ffn_norm_layer_formulas(act, bias):
    cfg = TransformerConfig(d_model=48, n_heads=4, d_ff=80, activation=act, bias=bias)
    rms = cfg.with_(norm="rms", n_kv_heads=2)
    assert n(FeedForward(cfg)) == ffn_params(cfg)
    assert n(EncoderLayer(rms)) == encoder_layer_params(rms)
    assert n(make_norm(cfg)) == norm_params(cfg) and n(make_norm(rms)) == norm_params(rms)
    assert n(LearnedPositionalEmbedding(100, 48)) == position_params(cfg.with_(positions="learned", max_len=100))


def test_tying_is_counted_once_and_shares_the_tensor():
    cfg = TransformerConfig(arch="decoder", d_model=64, n_heads=4, n_layers=2, vocab=1000)
    tied, untied = build_transformer(cfg), build_transformer(cfg.with_(tie_output=False))
    assert tied.tok is None and tied.head.embeds  # one (V, d) table, the output layer's, embeds the tokens
    assert numel(untied) - numel(tied) == 1000 * 64
    ed = PRESETS["transformer-base"]
    sep = build_transformer(ed.with_(share_embeddings=False, tie_output=False))
    assert numel(sep) - numel(build_transformer(ed)) == 2 * 37000 * 512


def test_real_device_model_runs_and_matches_count():
    kw = dict(d_model=32, n_heads=4, n_kv_heads=2, n_layers=2, vocab=50, activation="swiglu", norm="rms")
    cfg = TransformerConfig(arch="decoder", bias=False, positions="rope", max_len=16, **kw)
    model = build_transformer(cfg, device="cpu")
    assert model(torch.randint(50, (2, 10)))[0].shape == (2, 10, 50)
    assert numel(model) == param_breakdown(cfg)["total"]
    kw = dict(d_model=32, n_heads=4, n_layers=1, vocab=40, tgt_vocab=30, share_embeddings=False, max_len=16)
    ed = TransformerConfig(arch="encoder-decoder", positions="learned", **kw)
    m = build_transformer(ed, device="cpu")
    assert m(torch.randint(40, (2, 7)), tgt=torch.randint(30, (2, 5)))[0].shape == (2, 5, 30)
    assert numel(m) == param_breakdown(ed)["total"]


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
