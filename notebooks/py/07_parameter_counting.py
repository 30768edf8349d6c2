# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # 07 · Counting parameters, memory and compute
#
# [![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-nb/transformer-nb/blob/main/notebooks/07_parameter_counting.ipynb)
#
# Before you train or serve a Transformer you need to know how big it is: how many parameters, where they sit,
# and how much memory the weights, the optimizer and the caches take. The answers follow from the shapes of a
# handful of weight matrices. This notebook writes each count as a formula (`transformer_nb.params`) and checks
# it against `numel()` of a real model assembled from the package's blocks on PyTorch's **meta device**, where
# tensors have shapes but no storage: GPT-3's 175 billion parameters are counted in a second, with no memory.
#
# **Serves:** 000 §8.3.5, §8.5.4, Exercise 8.2, Exercise 8.4; 001 §19.8.3–19.8.4, §19.13.5; 002 "Parameter Count
# per Block", "KV Cache"; 003 (model sizes, the quadratic bottleneck); 004 §5.7.
#
# **Runtime on 2 CPU cores:** quick ~5 s, full ~10 s (nothing here trains).

# %%
# Setup. In Colab only: install the companion (Colab's torch is kept) and WikiText-2.
import os
import subprocess
import sys
from importlib.util import find_spec

if find_spec("google") and find_spec("google.colab"):  # only Colab has google.colab
    import torch

    source = os.environ.get("TNB_INSTALL_FROM", "git+https://github.com/transformer-nb/transformer-nb@v0.1.0")
    pin = f"torch=={torch.__version__}"  # so that pip keeps Colab's torch
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", source, pin], check=True)
    from transformer_nb.wikitext import find_data_dir

    find_data_dir()  # downloads WikiText-2 once (13 MB), checking its sha256

# %matplotlib inline
from transformer_nb import setup

env = setup(threads=1)  # seeds everything, picks the device, prints both

# %%
import time

import matplotlib.pyplot as plt
import psutil
import torch
import torch.nn as nn

from transformer_nb import check_close, check_equal, check_raises, check_true, show_source
from transformer_nb.core.block import FeedForward, make_norm
from transformer_nb.core.config import ACTIVATIONS
from transformer_nb.core.multihead import MultiHeadAttention
from transformer_nb.core.positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from transformer_nb.params import (
    CATEGORIES,
    PRESETS,
    TransformerConfig,
    attention_params,
    block_rule,
    build_transformer,
    bytes_human,
    embedding_params,
    ffn_params,
    kv_cache_bytes,
    norm_params,
    numel,
    numel_breakdown,
    param_breakdown,
    position_params,
)
from transformer_nb.widgets.params import ParamCalculator

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · One formula per module, checked against `numel()`
#
# Every parameter of a Transformer sits in one of a few kinds of module. A `nn.Linear(d_in, d_out)` holds a
# $d_{\text{out}}\times d_{\text{in}}$ weight and (optionally) a $d_{\text{out}}$ bias; everything follows from that:
#
# | module | weights | biases / other |
# |---|---|---|
# | multi-head attention, $h$ heads, $g$ K/V heads | $2d^2 + 2d\cdot g\,\tfrac{d}{h}$ ($= 4d^2$ when $g = h$) | $2d + 2g\tfrac{d}{h}$ |
# | FFN, ReLU/GELU | $2\,d\,d_{ff}$ | $d_{ff} + d$ |
# | FFN, SwiGLU | $3\,d\,d_{ff}$ | $2d_{ff} + d$ |
# | LayerNorm / RMSNorm | $\gamma$: $d$ | $\beta$: $d$ / none |
# | token embedding | $\lvert V\rvert\, d$ | |
# | output projection | $\lvert V\rvert\, d$, or **0 when tied** to the embedding | optional $\lvert V\rvert$ bias |
# | positions | learned: $T_{\max}\, d$; sinusoidal, RoPE, ALiBi: 0 | |
#
# The number of heads does not appear when $g = h$: the heads split $d$, they do not multiply it. The formulas
# live in `transformer_nb.params`; for example the feed-forward one:

# %%
show_source(ffn_params)

# %% [markdown]
# `numel` counts what a module really holds (each shared tensor once). Building the modules on the meta device
# makes even LLaMA-2-70B's attention free to count:

# %% tags=["nbval-check-output"]
ok = []
for d, h, g, bias in [(512, 8, 8, True), (512, 8, 8, False), (768, 12, 4, True), (8192, 64, 8, False),
                      (1024, 16, 1, True)]:
    with torch.device("meta"):
        cfg = TransformerConfig(d_model=d, n_heads=h, n_kv_heads=g, bias=bias)
        ok.append(numel(MultiHeadAttention(d, h, g, bias=bias)) == attention_params(cfg))
check_true("attention_params == numel(MultiHeadAttention): MHA, GQA, MQA, with and without biases", all(ok))
check_equal("heads do not change the count: d = 512 with h = 1, 2, 4, 8, 16",
            len({attention_params(TransformerConfig(d_model=512, n_heads=h)) for h in (1, 2, 4, 8, 16)}), 1)
cfgs = [TransformerConfig(d_model=d, d_ff=f, activation=a, bias=b)
        for d, f in ((64, 256), (96, 100)) for a in ACTIVATIONS for b in (True, False)]
check_true(f"ffn_params == numel(FeedForward) for {len(cfgs)} settings",
           all(numel(FeedForward(cfg)) == ffn_params(cfg) for cfg in cfgs))
layer_norm, rms_norm = TransformerConfig(d_model=768), TransformerConfig(d_model=768, norm="rms")
check_equal("norms: LayerNorm 2d, RMSNorm d (d = 768)", (numel(make_norm(layer_norm)), numel(make_norm(rms_norm))),
            (norm_params(layer_norm), norm_params(rms_norm)))
check_equal("embedding table: |V|·d", numel(nn.Embedding(1000, 64)), embedding_params(1000, 64))
check_equal("learned positions: T_max·d", numel(LearnedPositionalEmbedding(512, 64)),
            position_params(TransformerConfig(d_model=64, max_len=512, positions="learned")))
check_equal("sinusoidal positions: 0 parameters (a buffer)", numel(SinusoidalPositionalEncoding(64, 512)),
            position_params(TransformerConfig(d_model=64, max_len=512, positions="sinusoidal")))

# %% [markdown]
# **Tying.** Weight tying (001 §19.8.3) makes the output projection *use the same tensor* as the embedding:
# `head.weight = embedding.weight`. `parameters()` yields a shared tensor once, so `numel` counts it once, which is
# exactly the saving:

# %% tags=["nbval-check-output"]
emb, head = nn.Embedding(32000, 512), nn.Linear(512, 32000, bias=False)
pair = nn.ModuleDict({"emb": emb, "head": head})
untied = numel(pair)
head.weight = emb.weight
check_equal("untied: embedding + output projection = 2·|V|·d", untied, 2 * embedding_params(32000, 512))
check_equal("tied: one |V|·d matrix", numel(pair), embedding_params(32000, 512))
check_true("the head really uses the embedding tensor", head.weight is emb.weight)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · The meta device: GPT-3 without the 700 GB
#
# `build_transformer(config)` builds the package's one `Transformer` (the model notebooks 08, 10 and 12 use) from
# the blocks (`EncoderLayer`, `DecoderLayer`, embeddings, norms, a tied or untied head) inside
# `with torch.device("meta")`. Parameters get shapes, not storage,
# and the random initialisation is skipped, since there is nothing to fill:

# %%
show_source(build_transformer)

# %%
proc = psutil.Process()
rss_before = proc.memory_info().rss
t0 = time.perf_counter()
gpt3 = build_transformer(PRESETS["gpt3"])
seconds = time.perf_counter() - t0
rss_after = proc.memory_info().rss
n_gpt3 = numel(gpt3)
print(f"GPT-3 built on the meta device in {seconds:.2f} s; {n_gpt3:,} parameters; "
      f"in fp32 the weights alone would need {bytes_human(4 * n_gpt3)}")

# %% tags=["nbval-check-output"]
check_equal("GPT-3: numel of the meta model == the formula", n_gpt3, param_breakdown(PRESETS["gpt3"])["total"])
check_true("every parameter is a meta tensor (no storage)", all(p.is_meta for p in gpt3.parameters()))
check_true("the process grew by less than 200 MiB (fp32 weights: about 700 GB)", rss_after - rss_before < 200 * 2**20)

# %% [markdown]
# Shapes still flow through a meta model, so a whole forward pass can be traced without computing anything:
# GPT-2 small on a full context of 1024 tokens returns logits of the right shape, instantly.

# %% tags=["nbval-check-output"]
gpt2 = build_transformer(PRESETS["gpt2-small"])
logits, _ = gpt2(torch.zeros(1, 1024, dtype=torch.long, device="meta"))  # (logits, loss): no targets, no loss
check_equal("GPT-2 small on meta: logits shape", logits.shape, (1, 1024, 50257))
check_true("... and they are meta tensors too", logits.is_meta)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · The named models: formula, `numel`, and what was published
#
# Each entry of `PRESETS` is a `TransformerConfig` with the published architecture; `param_breakdown` applies the
# formulas and `numel_breakdown` counts the meta model's tensors by the module that owns them. They must agree in
# every category. The last columns give the count the authors reported and how far ours is from it (the appendix
# explains each gap: rounding, and conventions such as shared vocabularies).

# %%
NAMED = [key for key in PRESETS if key != "exercise-8.2"]   # Exercise 8.2's model is yours to count (section 6)
rows, t0 = [], time.perf_counter()
for key in NAMED:
    cfg = PRESETS[key]
    rows.append((key, cfg, param_breakdown(cfg), numel_breakdown(build_transformer(cfg))))
print(f"{len(rows)} models built on meta and counted in {time.perf_counter() - t0:.2f} s\n")
print(f"{'model':20s} {'formula':>17s} {'numel (meta)':>17s} {'published':>10s} {'diff':>7s}")
for _, cfg, formula, counted in rows:
    diff = 100 * (formula["total"] - cfg.published) / cfg.published
    pub = f"{cfg.published / 1e9:.3g}B" if cfg.published >= 1e9 else f"{cfg.published / 1e6:.0f}M"
    print(f"{cfg.name:20s} {formula['total']:>17,d} {counted['total']:>17,d} {pub:>10s} {diff:>+6.1f}%")

# %% tags=["nbval-check-output"]
check_true("formula == numel in every category, for every named model", all(f == c for _, _, f, c in rows))
check_true("every formula total within 7% of the published count",
           all(abs(f["total"] / cfg.published - 1) < 0.07 for _, cfg, f, _ in rows))
for _, cfg, formula, counted in rows:
    check_equal(f"{cfg.name:18s} numel (meta) == formula", counted["total"], formula["total"])

# %% [markdown]
# Where the parameters go. In small models the embedding table is a large share; at GPT-3's width it is a
# rounding error and the blocks dominate. GQA (LLaMA-2-70B, Mistral) shrinks attention's share.

# %%
fig, ax = plt.subplots(figsize=(10, 4.8), layout="constrained")
colors = {"embeddings": "C0", "positions": "C9", "attention": "C1", "ffn": "C2", "norms": "C4", "head": "C3",
          "other": "C7"}
names = [cfg.name for _, cfg, _, _ in rows]
left = [0.0] * len(rows)
for cat in CATEGORIES:
    share = [100 * f[cat] / f["total"] for _, _, f, _ in rows]
    ax.barh(names, share, left=left, color=colors[cat], label=cat)
    left = [a + b for a, b in zip(left, share)]
for i, (_, _, f, _) in enumerate(rows):
    total = f["total"]
    ax.text(101, i, f"{total / 1e9:.3g}B" if total >= 1e9 else f"{total / 1e6:.3g}M", va="center", fontsize=8)
ax.invert_yaxis()
ax.set(xlim=(0, 110), xlabel="share of the parameters (%)", title="Where the parameters go (total at the right)")
ax.legend(ncol=7, fontsize=8, loc="lower center", bbox_to_anchor=(0.5, -0.22))
plt.show()

# %% tags=["nbval-check-output"]
share = {key: {cat: f[cat] / f["total"] for cat in CATEGORIES} for key, _, f, _ in rows}
check_true("GPT-2 small: the embeddings are more than 30% of the model", share["gpt2-small"]["embeddings"] > 0.3)
check_true("GPT-3: the embeddings are less than 0.5%", share["gpt3"]["embeddings"] < 0.005)
check_true("LLaMA-2: GQA's 70B spends a smaller share on attention than 7B",
           share["llama2-70b"]["attention"] < share["llama2-7b"]["attention"])

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · The $12d^2$ rule of thumb (002)
#
# With $d_{ff} = 4d$ and full multi-head attention, a block holds $4d^2$ (attention: $W^Q, W^K, W^V, W^O$) $+ 8d^2$
# (FFN: $W_1, W_2$) $= 12d^2$ weights, plus $O(d)$ biases and norm parameters. So $L$ blocks hold about $12Ld^2$,
# `block_rule(d) · L`. The formulas say exactly how much the rule leaves out:

# %% tags=["nbval-check-output"]
for d in (768, 12288):
    one_block = TransformerConfig(d_model=d, n_heads=12, n_layers=1, vocab=1, max_len=1)
    block = param_breakdown(one_block)
    exact = block["attention"] + block["ffn"] + block["norms"] - norm_params(one_block)     # minus the final norm
    check_equal(f"d = {d}: one block, exact = 12d² + 13d (biases 4d + 5d, two LayerNorms 4d)", exact,
                block_rule(d) + 13 * d)

# %% [markdown]
# How good is the rule for whole models? It ignores the embeddings (large for small models), assumes $d_{ff} = 4d$
# (SwiGLU models use $\approx 2.7d$ with three matrices: about the same $8d^2$) and full multi-head K/V (GQA removes
# part of $2d^2$), and it is meaningless for encoder–decoders (cross-attention adds $4d^2$ to each decoder block):

# %%
rule_rows = [(cfg.name, cfg.n_layers * block_rule(cfg.d_model) / f["total"]) for _, cfg, f, _ in rows
             if cfg.arch != "encoder-decoder"]
fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
ax.barh([r[0] for r in rule_rows], [r[1] for r in rule_rows], color="C2")
ax.axvline(1.0, color="k", lw=1)
for i, (_, r) in enumerate(rule_rows):
    ax.text(r + 0.01, i, f"{r:.3f}", va="center", fontsize=8)
ax.invert_yaxis()
ax.set(xlim=(0, 1.15), xlabel="12·L·d² / exact count", title="The 12d² rule: good for wide models, poor for small ones")
plt.show()

# %% tags=["nbval-check-output"]
rule = dict(rule_rows)
check_true("within 1% for GPT-3", abs(rule["GPT-3 175B"] - 1) < 0.01)
check_true("more than 30% low for GPT-2 small (its embedding table)", rule["GPT-2 small"] < 0.7)
check_true("LLaMA-2-70B: GQA and SwiGLU's width make the rule miss by more than 5%", rule["LLaMA-2 70B"] < 0.95)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5 · Memory: weights, training state, KV cache
#
# Parameters become bytes in three ways:
#
# * **weights for inference**: 2 bytes each in fp16/bf16, 4 in fp32;
# * **training with Adam in mixed precision**: about **16 bytes** per parameter (fp16 weights and gradients,
#   2 + 2; an fp32 master copy and Adam's two moments, 4 + 4 + 4; Rajbhandari et al. 2020, "ZeRO"), before any
#   activations;
# * **the KV cache** of a decoder at inference: every layer keeps the keys and values of every previous token,
#   $2 \cdot L \cdot g \cdot d_k \cdot T$ numbers per sequence ($g$ K/V heads; notebook 03 derives it and checks
#   002's figure: `002-kv-40gb`).
#
# The table computes them for four decoders, each at its full context length (fp16 cache, one sequence):

# %%
MEMORY = ["gpt2-small", "gpt2-xl", "llama2-7b", "llama2-70b", "gpt3"]
memory = {}
for key in MEMORY:
    cfg = PRESETS[key]
    n_params = param_breakdown(cfg)["total"]
    memory[key] = {"params": n_params, "fp16": 2 * n_params, "fp32": 4 * n_params, "adam": 16 * n_params,
                   "kv": kv_cache_bytes(cfg.n_layers, cfg.kv_heads, cfg.d_model // cfg.n_heads, cfg.max_len)}
print(f"{'model':14s} {'weights fp16':>12s} {'fp32':>9s} {'Adam training':>13s} {'KV cache (T = context)':>24s}")
for key, m in memory.items():
    kv = f"{bytes_human(m['kv'])} (T = {PRESETS[key].max_len})"
    print(f"{PRESETS[key].name:14s} {bytes_human(m['fp16']):>12s} {bytes_human(m['fp32']):>9s} "
          f"{bytes_human(m['adam']):>13s} {kv:>24s}")

# %% [markdown]
# Two things to read off. Training needs 8× the memory of fp16 inference weights: GPT-3's 2.8 TB of training state
# is spread over many GPUs. And the cache, tiny per sequence next to the weights, is what limits serving: a server
# keeps one per concurrent sequence. GQA is what keeps LLaMA-2-70B's cache small: with 8 K/V heads instead of 64 it
# is 8× smaller, so 8× more sequences fit beside the weights.

# %% tags=["nbval-check-output"]
check_true("Adam training state = 8 × the fp16 weights, for every model",
           all(m["adam"] == 8 * m["fp16"] for m in memory.values()))
l70 = PRESETS["llama2-70b"]
full_mha = kv_cache_bytes(l70.n_layers, l70.n_heads, l70.d_model // l70.n_heads, l70.max_len)
check_equal("LLaMA-2-70B: a cache with 64 K/V heads / with its 8 (GQA)", full_mha // memory["llama2-70b"]["kv"], 8)
check_equal("LLaMA-2-70B: full-context sequences whose caches fill as much as the fp16 weights (GQA, MHA)",
            (memory["llama2-70b"]["fp16"] // memory["llama2-70b"]["kv"], memory["llama2-70b"]["fp16"] // full_mha),
            (102, 12))
check_true("LLaMA-2-7B (MHA, 32 layers of d = 4096) caches more per token than LLaMA-2-70B (GQA)",
           memory["llama2-7b"]["kv"] > memory["llama2-70b"]["kv"])

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6 · Widget: a parameter calculator
#
# Start from a named model or from scratch; change the width, depth, heads, K/V heads (GQA), FFN ratio and
# activation, vocabulary, tying and positions. The chart shows where the parameters go; the title checks the
# formula against `numel` of the same model built on the meta device, live. Impossible settings (heads that do
# not divide $d_{\text{model}}$, K/V heads that do not divide the heads) are explained instead of drawn.

# %%
ParamCalculator(preset="llama2-7b").show()

# %% [markdown]
# Bad configurations raise clear errors in the package, too: a `TransformerConfig` is checked once, when it is made,
# so an impossible one never reaches a formula or a model:

# %% tags=["nbval-check-output"]
_ = check_raises(ValueError, "must divide d_model", TransformerConfig, d_model=512, n_heads=7)
_ = check_raises(ValueError, "n_kv_heads=3 must divide n_heads=8", TransformerConfig, d_model=512, n_heads=8,
                 n_kv_heads=3)
_ = check_raises(ValueError, "share_embeddings needs one vocabulary", TransformerConfig, arch="encoder-decoder",
                 vocab=32000, tgt_vocab=30000)
_ = check_raises(ValueError, "d_ff (the FFN hidden width) must be a positive integer", TransformerConfig, d_ff=0)
_ = check_raises(ValueError, "tie_output=True needs an output projection", TransformerConfig, lm_head=False)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7 · Exercises
#
# Each checker compares your function with a hidden reference and names the mistake it recognises;
# `ex.hint()` gives a hint (more specific each time), `ex.solution()` a worked solution, only after you have
# tried. The solution cells after the exercises hold the worked verifications (the meta model, PyTorch's FLOP
# counter): open them after you have tried.
#
# ### Exercise 8.2: the parameter count, part by part
#
# Write `count_82(d_model, n_heads, d_ff, n_layers, vocab)` returning a dict with the keys `"embedding"`,
# `"attention_per_layer"`, `"ffn_per_layer"`, `"norm_per_layer"` and `"total"`, counted as Exercise 8.2's hint
# does: weight matrices and LayerNorm parameters (no linear biases), the output layer tied to the embedding, one
# stack of `n_layers` layers (one attention and one FFN each), sinusoidal positions. The checker tries the
# exercise's configuration ($d_{\text{model}} = 512$, $h = 8$, $d_{ff} = 2048$, $N = 6$, $|V| = 32000$) and two others.

# %%
from torch.utils.flop_counter import FlopCounterMode

from transformer_nb.core.block import EncoderLayer
from transformer_nb.exercises.complexity import (
    attention_flops_ex,
    attention_memory_ex,
    crossover_ex,
    interpretation_ex,
)
from transformer_nb.exercises.params import breakdown_ex


# %% tags=["exercise"]
def count_82(d_model, n_heads, d_ff, n_layers, vocab):
    raise NotImplementedError  # your code here


breakdown_ex.check(count_82)

# %% [markdown]
# Exercise 8.2 asks you to report the grand total. Once your function passes, the next cell prints it.

# %%
count = breakdown_ex.use(count_82)
if count is count_82:
    print(f"Exercise 8.2, grand total: {count(512, 8, 2048, 6, 32000)['total']:,} parameters")
else:
    print("(your total for Exercise 8.2 appears once count_82 passes)")

# %% tags=["solution"] cellView="form" jupyter={"source_hidden": true, "outputs_hidden": true}
# Solution · Exercise 8.2 — it runs once your answer passes, or after breakdown_ex.solution()
# The meta model confirms the count part by part, and the two choices the exercise leaves open.
if breakdown_ex.unlocked():
    ex82 = PRESETS["exercise-8.2"]
    b82 = numel_breakdown(build_transformer(ex82))
    check_equal("(a) embedding (shared with the output layer)", b82["embeddings"], 32000 * 512)
    check_equal("(b) attention per layer", b82["attention"] // 6, 4 * 512**2)
    check_equal("(c) FFN per layer", b82["ffn"] // 6, 2 * 512 * 2048)
    check_equal("(d) LayerNorm per layer", b82["norms"] // 6, 2 * 2 * 512)
    check_equal("no untied head, no learned positions", (b82["head"], b82["positions"]), (0, 0))
    check_equal("grand total (numel on meta) == the formulas", b82["total"], param_breakdown(ex82)["total"])
    print(f"grand total: {b82['total']:,}")
    check_equal("... with linear biases: + N·(4d + d_ff + d)", numel(build_transformer(ex82.with_(bias=True))),
                b82["total"] + 6 * (4 * 512 + 2048 + 512))
    print(f"read as the original encoder-decoder (6 + 6 layers, cross-attention in the decoder): "
          f"{numel(build_transformer(ex82.with_(arch='encoder-decoder'))):,}")

# %% [markdown]
# ### Exercise 8.4: memory of the attention matrices
#
# Write `attention_bytes(seq_len, n_heads, bytes_per_value)`: the bytes needed to store all $h$ attention-weight
# matrices of one layer for one sequence. Exercise 8.4 then asks for $T = 4096$, $h = 32$, fp16 in gigabytes.

# %% tags=["exercise"]
def attention_bytes(seq_len, n_heads, bytes_per_value):
    raise NotImplementedError  # your code here


attention_memory_ex.check(attention_bytes)

# %%
memory_fn = attention_memory_ex.use(attention_bytes)
if memory_fn is attention_bytes:
    n_bytes = memory_fn(4096, 32, 2)
    print(f"Exercise 8.4: {n_bytes / 1e9:.2f} GB = {n_bytes / 2**30:g} GiB per layer and sequence")
else:
    print("(your answer in GB appears once attention_bytes passes)")

# %% [markdown]
# ### Exercise 8.4: FLOPs of multi-head self-attention
#
# Write `attn_flops(seq_len, d_model, n_heads)` returning a dict with the FLOPs (a multiply-add counts 2, as in
# PyTorch's FLOP counter) of `"projections"` (Q, K, V and output), `"scores"` ($QK^\top$ for all heads) and
# `"weighted_sum"` ($AV$ for all heads), for one sequence of length `seq_len`. Which terms grow as $T^2 d$?

# %% tags=["exercise"]
def attn_flops(seq_len, d_model, n_heads):
    raise NotImplementedError  # your code here


attention_flops_ex.check(attn_flops)

# %% tags=["solution"] cellView="form" jupyter={"source_hidden": true, "outputs_hidden": true}
# Solution · Exercise 8.4, FLOPs and memory — it runs once your answer passes, or after attention_flops_ex.solution()
# A matrix product (m×k)(k×n) costs m·k·n multiply-adds = 2mkn FLOPs. Projections: four (T×d)(d×d) products,
# 8Td² (linear in T). Scores: h heads of (T×d_k)(d_k×T), 2T²d together; weighted sums: also 2T²d (quadratic in
# T). Time O(Td² + T²d); space of the attention matrices O(hT²). PyTorch's FLOP counter, run on the meta device
# (no arithmetic happens), agrees with the formula:
flops_fn = attention_flops_ex.use(attn_flops)
if attention_flops_ex.unlocked() and attention_memory_ex.unlocked():
    def measured_flops(t, d, h):
        with torch.device("meta"):
            m, x = MultiHeadAttention(d, h), torch.empty(1, t, d)
        with FlopCounterMode(display=False) as counter:
            m(x)
        return counter.get_total_flops()


    for t, d, h in ((4096, 4096, 32), (512, 768, 12), (100, 64, 4)):
        check_equal(f"T={t}, d={d}, h={h}: formula == FlopCounterMode", sum(flops_fn(t, d, h).values()),
                    measured_flops(t, d, h))
    check_equal("doubling T at fixed d multiplies the quadratic terms by exactly 4",
                flops_fn(8192, 4096, 32)["scores"] // flops_fn(4096, 4096, 32)["scores"], 4)
    weights_meta = torch.empty(1, 32, 4096, 4096, dtype=torch.float16, device="meta")
    n_bytes = weights_meta.numel() * weights_meta.element_size()
    check_equal("bytes of a (1, 32, 4096, 4096) fp16 tensor = 32·4096²·2 = 2^30", n_bytes, 2**30)
    print(f"{bytes_human(n_bytes)} = {bytes_human(n_bytes, binary=True)} per layer and sequence; a 32-layer model "
          f"keeping them all for the backward pass, batch 8: {bytes_human(32 * 8 * n_bytes, binary=True)}")

# %% [markdown]
# ### Exercise 8.4: the crossover
#
# Write `crossover_lengths(d_model, n_heads)` returning a dict with the smallest integer $T$ at which the
# quadratic side wins, three ways: `"text"`, the exercise's own inequality $T^2 > d_{\text{model}}T$; `"flops"`,
# the FLOPs of the scores and weighted sums against those of the four projections; `"memory"`, the $h$
# attention matrices ($hT^2$ numbers) against the $T\times d_{\text{model}}$ activations. Compare with the
# exercise's hint, "the crossover is at $T = d_{\text{model}}/h$": which of the three is that?

# %% tags=["exercise"]
def crossover_lengths(d_model, n_heads):
    raise NotImplementedError  # your code here


crossover_ex.check(crossover_lengths)

# %% tags=["solution"] cellView="form" jupyter={"source_hidden": true, "outputs_hidden": true}
# Solution · Exercise 8.4, the crossover — it runs once your answer passes, or after crossover_ex.solution()
# Attention sublayer alone: 4T²d (scores + weighted sums) > 8Td² (projections)  <=>  T > 2d.
# A whole layer adds the FFN's 2·2·T·d·d_ff linear FLOPs:  4T²d > 8Td² + 4Td·d_ff  <=>  T > 2d + d_ff,
# i.e. T > 6d for d_ff = 4d. The hint's T = d/h is the MEMORY crossover (h·T² > T·d), not one of compute.
# PyTorch's FLOP counter on a meta EncoderLayer: linear layers run as aten.addmm, the attention products as
# aten.bmm.
if crossover_ex.unlocked():
    def layer_flops(t, d, h, d_ff):
        with torch.device("meta"):
            layer, x = EncoderLayer(TransformerConfig(d_model=d, n_heads=h, d_ff=d_ff)), torch.empty(1, t, d)
        with FlopCounterMode(display=False) as counter:
            layer(x)
        ops = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
        return ops["aten.addmm"], ops["aten.bmm"]           # (linear, quadratic)


    d, h = 4096, 32
    cross = crossover_ex.use(crossover_lengths)(d, h)
    print(f"d = {d}, h = {h}: {cross}")
    check_equal("the hint's T = d/h is the memory crossover", cross["memory"], d // h + 1)
    check_equal("attention's FLOPs: quadratic > linear from T = 2d + 1", cross["flops"], 2 * d + 1)
    for d_small, h_small in ((64, 4), (128, 8)):
        t6 = 6 * d_small                                    # = 2d + d_ff with d_ff = 4d
        lin, quad = layer_flops(t6, d_small, h_small, 4 * d_small)
        check_equal(f"whole layer, d = {d_small}: quadratic == linear at T = 2d + d_ff = 6d", quad, lin)
        lin_b, quad_b = layer_flops(t6 - 8, d_small, h_small, 4 * d_small)
        lin_a, quad_a = layer_flops(t6 + 8, d_small, h_small, 4 * d_small)
        check_true(f"whole layer, d = {d_small}: linear wins at 6d - 8, quadratic at 6d + 8",
                   quad_b < lin_b and quad_a > lin_a)
    print(f"so for d = {d} the whole layer's crossover is T = 6d = {6 * d:,}; the attention sublayer's T = 2d = {2 * d:,}")

    Ts = [2**k for k in range(6, 18)]
    fig, ax = plt.subplots(figsize=(7.5, 3.8), layout="constrained")
    ax.loglog(Ts, [flops_fn(t, d, h)["projections"] for t in Ts], "o-", label="projections 8Td²")
    ax.loglog(Ts, [flops_fn(t, d, h)["scores"] + flops_fn(t, d, h)["weighted_sum"] for t in Ts], "s-",
              label="QKᵀ and AV 4T²d")
    ax.loglog(Ts, [flops_fn(t, d, h)["projections"] + 16 * t * d * d for t in Ts], "--", color="0.4",
              label="projections + FFN (d_ff = 4d) 24Td²")
    for x, name in ((d // h, "d/h"), (d, "d"), (2 * d, "2d"), (6 * d, "6d")):
        ax.axvline(x, color="0.8", lw=1)
        ax.text(x, 0.98, name, ha="center", va="top", fontsize=8, backgroundcolor="w", transform=ax.get_xaxis_transform())
    ax.set(xlabel="sequence length T", ylabel="FLOPs per layer", title="compute of one layer (d = 4096, h = 32)")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3, which="both")
    plt.show()

# %% [markdown]
# ### Exercise 8.4: the interpretation
#
# For each setting below, which term costs more FLOPs in one attention layer: the projections, or the
# quadratic attention products (scores and weighted sums)? Replace each `None` by `"projections"` or
# `"attention"`.

# %% tags=["exercise"]
my_interpretation = {
    "BERT-base: T=512, d=768, h=12": None,
    "GPT-3: T=2048, d=12288, h=96": None,
    "a small model with a long window: T=4096, d=512, h=8": None,
    "LLaMA-2-7B: T=4096, d=4096, h=32": None,
    "a 128K context: T=131072, d=4096, h=32": None,
}
interpretation_ex.check(my_interpretation)

# %% [markdown]
# **In your own words:** what do these answers say about where the compute of a Transformer goes at typical
# context lengths, and why do long-context models need something like FlashAttention?

# %% tags=["solution"] cellView="form" jupyter={"source_hidden": true, "outputs_hidden": true}
# Solution · Exercise 8.4, the interpretation — it runs once your answer passes, or after interpretation_ex.solution()
# Quadratic / linear FLOPs of one attention layer = 4T²d / 8Td² = T / (2d): only the ratio of context to width
# matters. At the context lengths of BERT, GPT-3 and LLaMA-2 (T <= 2d) the projections, and the FFN beside them,
# dominate the compute. (001 §19.13.5 compares the quadratic part with the FFN alone, 16Td², and gets n > 4d:
# right too.) At 128K tokens the attention products cost 16 times the projections, and the h·T² attention weights
# of one layer could not be stored: FlashAttention computes attention in tiles and never materialises the T×T
# matrices (notebook 10).
if interpretation_ex.unlocked() and attention_memory_ex.unlocked():
    SETTINGS = {"BERT-base": (512, 768, 12), "GPT-3": (2048, 12288, 96), "a small model with a long window": (4096, 512, 8),
                "LLaMA-2-7B": (4096, 4096, 32), "a 128K context": (131072, 4096, 32)}
    for setting, (t, d_, h_) in SETTINGS.items():
        f = flops_fn(t, d_, h_)
        ratio = (f["scores"] + f["weighted_sum"]) / f["projections"]
        print(f"{setting:33s} T={t:>6}, d={d_:>5}: attention/projections = T/(2d) = {ratio:6.3g}"
              f" -> {'attention' if ratio > 1 else 'projections'} dominates; attention weights of one layer in fp16: "
              f"{bytes_human(memory_fn(t, h_, 2), binary=True)}")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Appendix · The texts, checked
#
# Every claim of the five texts that belongs to this notebook is an entry of the claims ledger
# (`transformer_nb.claims`, rendered in notebook 13) with its verdict; the cell below prints them and runs their
# checks. Two entries would give away the answers of Exercises 8.2 and 8.4: the ledger withholds their verdicts
# here (their solution cells show them). Claims that other notebooks check are cited there: the KV cache of 002 and 004
# (`002-kv-40gb`, `004-13.2-kv5gb`, notebook 03) and 004 §5.7's attention-memory table (`004-5.7-rows`,
# `004-5.7-128k`, notebook 01).

# %% tags=["nbval-check-output"]
from transformer_nb.claims import report

report(notebook="07")

# %% [markdown]
# **Why the counts of section 3 differ from the published ones.**
#
# * **Original Transformer, base: 63.1M vs "65M"; big: 214.2M vs "213M"** (Vaswani et al. 2017, Table 3). The count
#   assumes what the paper states: one **shared 37k BPE vocabulary** for source and target, the **same matrix** for
#   both embeddings and the pre-softmax projection (three-way tying), sinusoidal positions (0 parameters), Post-LN
#   without final norms, biases everywhere. 001 §19.8.4's "≈ 63M" is this count (`001-19.8.4-table`). No single
#   vocabulary size reproduces both published numbers (base would need about 40.7k tokens, big about 35.8k), so
#   65M/213M are rounded or counted with details the paper does not give. Without the sharing (three separate
#   $|V|\times d$ tables) they would be far larger.
# * **T5-base: 222.9M vs "220M"**: rounding (T5 v1.0 ties its embeddings; its LayerNorm has no shift, so it is
#   RMSNorm; a 32-bucket relative bias per stack is its only position parameter).
# * **BERT: 109.5M vs "110M", 335.1M vs "340M"** (Devlin et al. 2019): `BertModel` (512 learned positions, 2
#   segment types and an embedding LayerNorm; Post-LN blocks; the pooler). The pre-training heads add about 0.6M
#   (base) / 1.1M (large) more; 340M is generous rounding.
# * **GPT-2: 124.4M / 354.8M / 774.0M / 1557.6M vs 117M / 345M / 762M / 1542M.** The four published sizes are the
#   GPT-2 paper's Table 2 (Radford et al. 2019); 002 and 003 give only "1.5B" (`002-gpt2`, `003-families`). Our
#   counts are the released checkpoints' (tied output layer, 1024 learned positions, final LayerNorm); the
#   paper's table is low by 1–6%. OpenAI's repository later renamed the two smaller checkpoints from
#   "117M"/"345M" to "124M"/"355M", the names used today.
# * **GPT-3: 174.6B vs "175B"** (Brown et al. 2020): rounding. Its alternating dense and banded-sparse attention
#   layers do not change the count. 002's $12 \times 12288^2 \times 96 \approx 174$B is the rule of section 4
#   (`002-12d2-gpt3`).
# * **LLaMA-2: 6.74B vs "7B", 68.98B vs "70B"; Mistral: 7.24B vs "7.3B"**: the model names are rounded sizes.
#   Untied input and output embeddings, RMSNorm, no biases, RoPE (0 parameters), SwiGLU (widths 11008, 28672,
#   14336; notebook 06), and GQA with 8 K/V heads for 70B and Mistral.

# %% tags=["nbval-check-output"]
base, big = PRESETS["transformer-base"], PRESETS["transformer-big"]
for cfg in (base, big):
    separate = param_breakdown(cfg.with_(share_embeddings=False, tie_output=False))["total"]
    check_equal(f"{cfg.name}: three separate |V|×d tables add 2·|V|·d", separate - param_breakdown(cfg)["total"],
                2 * embedding_params(37000, cfg.d_model))
non_emb = {c.name: param_breakdown(c)["total"] - param_breakdown(c)["embeddings"] for c in (base, big)}
implied = {c.name: (c.published - non_emb[c.name]) / c.d_model for c in (base, big)}
check_equal("vocabularies implied by 65M and 213M, rounded to 100", [round(v, -2) for v in implied.values()],
            [40700.0, 35800.0])
gpt2_rows = [(cfg, f["total"]) for key, cfg, f, _ in rows if key.startswith("gpt2")]
check_equal("GPT-2: the published sizes (the GPT-2 paper's Table 2)", [cfg.published / 1e6 for cfg, _ in gpt2_rows],
            [117.0, 345.0, 762.0, 1542.0])
check_true("... are 1-6.5% below the released checkpoints' counts", all(0.01 < n / cfg.published - 1 < 0.065
                                                                      for cfg, n in gpt2_rows))
gpt3_b = param_breakdown(PRESETS["gpt3"])
check_close("002's 12·12288²·96 / the exact GPT-3 count", 96 * block_rule(12288) / gpt3_b["total"], 0.996231,
            atol=1e-6)
