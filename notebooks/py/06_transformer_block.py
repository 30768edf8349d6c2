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
# # 06 · The Transformer block: norms, feed-forward, Pre-LN and Post-LN, depth
#
# [![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-nb/transformer-nb/blob/main/notebooks/06_transformer_block.ipynb)
#
# Attention alone mixes information between positions, but a deep stack of it would neither compute much per
# token nor train well. The Transformer block adds what is missing: a position-wise **feed-forward network**
# (the per-token computation), **residual connections** (each sublayer adds to a stream instead of replacing it)
# and **normalisation** (keeps that stream's scale under control). A block maps $(B, T, d_{\text{model}})$ to the
# same shape, so blocks stack; where the norm sits decides the variant:
#
# $$\text{Pre-LN:}\quad x \leftarrow x + \text{Sublayer}(\text{LN}(x)) \qquad\qquad
#   \text{Post-LN:}\quad x \leftarrow \text{LN}(x + \text{Sublayer}(x))$$
#
# This notebook builds the pieces, proves the blocks equal to PyTorch's, and measures what the placement of the
# norm does to a deep stack, at initialisation and in training.
#
# **Serves:** 000 §8.5 (8.5.1–8.5.6), Exercise 8.8; 001 §19.3–19.6; 002 "The Transformer Block", "Pre-Norm vs
# Post-Norm"; 003 (trace a token through a block); 004 §7–9, §11.
#
# **Runtime on 2 CPU cores:** quick ~10 s, full ~80 s (most of it the toy training of section
# 7).

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
import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb import check_close, check_equal, check_raises, check_true, pick, show_source
from transformer_nb.core.block import DecoderLayer, EncoderLayer, FeedForward, make_norm
from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.masks import causal_mask, key_padding, padding_mask
from transformer_nb.core.multihead import MultiHeadAttention
from transformer_nb.experiments import layer_grad_norms, markov_batches, stream_stats, train_toy_lm
from transformer_nb.interop import copy_from_torch, to_torch
from transformer_nb.params import numel, swiglu_hidden_size
from transformer_nb.probes import trace_shapes
from transformer_nb.reference import layer_norm
from transformer_nb.widgets.block import DepthWidget

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · LayerNorm from scratch
#
# For one token's feature vector $x \in \mathbb{R}^d$ (000 §8.5.3, 001 §19.3.2, 004 §8.2):
#
# $$\text{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta,\qquad
#   \mu = \frac1d\sum_{j=1}^d x_j,\quad \sigma^2 = \frac1d\sum_{j=1}^d (x_j-\mu)^2 .$$
#
# Three details decide whether a hand-written version matches PyTorch: the statistics are over the **last axis**
# (the features of each token, never the batch or the sequence), the variance is the **biased** one (divide by
# $d$; `torch.var` divides by $d-1$ unless told otherwise), and $\varepsilon$ sits **inside** the square root.
# The package's version, written out:

# %%
show_source(layer_norm)

# %% tags=["nbval-check-output"]
d = 16
x = 3.0 + 2.0 * torch.randn(2, 5, d, dtype=torch.float64)  # (B, T, d), far from mean 0 / variance 1
ln = nn.LayerNorm(d, dtype=torch.float64)
with torch.no_grad():  # random γ, β so that both are really used
    ln.weight.copy_(1 + 0.3 * torch.randn(d))
    ln.bias.copy_(0.3 * torch.randn(d))
check_close("layer_norm == nn.LayerNorm (random γ, β)", layer_norm(x, ln.weight, ln.bias, ln.eps), ln(x), atol=1e-12)
check_close("layer_norm == F.layer_norm", layer_norm(x, eps=1e-5), F.layer_norm(x, (d,), eps=1e-5), atol=1e-12)
z = layer_norm(x)  # γ = 1, β = 0
check_close("every token: mean 0", z.mean(-1), torch.zeros(2, 5), atol=1e-12)
check_close("every token: (biased) variance 1", z.var(-1, unbiased=False), torch.ones(2, 5), atol=1e-4)
unbiased = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + 1e-5)
check_true("torch.var's default (unbiased) variance does NOT reproduce nn.LayerNorm",
           not torch.allclose(unbiased, F.layer_norm(x, (d,)), atol=1e-6))

# %% [markdown]
# What LayerNorm buys: each token's output no longer depends on the token's **scale or offset**, and each token is
# normalised on its own, so the result does not depend on the batch or on the other tokens (004 §8.2: unlike
# batch normalisation, it works for a batch of one). Both are exact properties:

# %% tags=["nbval-check-output"]
a, b = 7.5, -4.0
check_close("LN(a·x + b) == LN(x) for a > 0 (up to the tiny ε)", layer_norm(a * x + b, eps=1e-12),
            layer_norm(x, eps=1e-12), atol=1e-9)
check_close("tokens 2-3 of sequence 0 normalised alone == inside the batch", layer_norm(x[0:1, 2:4]),
            layer_norm(x)[0:1, 2:4], atol=1e-12)
check_equal("nn.LayerNorm(512): γ and β, 2·d parameters", numel(nn.LayerNorm(512)), 2 * 512)
check_equal("PyTorch's default ε", nn.LayerNorm(8).eps, 1e-5)

# %% [markdown]
# $\varepsilon$ differs between implementations ($10^{-6}$ in the original code, T5 and LLaMA-1; $10^{-5}$ in PyTorch
# and GPT-2; $10^{-12}$ in BERT). It matters for exact equality: a block built with one $\varepsilon$ is **not** equal to
# a library block built with another, which is why `copy_from_torch` refuses a mismatch (section 4).
#
# The figure shows what LayerNorm does to three tokens: whatever their mean and spread, they come out centred
# with unit spread.

# %%
scale, shift = torch.tensor([[0.5], [3.0], [8.0]]), torch.tensor([[4.0], [-6.0], [0.0]])
tok = torch.randn(3, 64, dtype=torch.float64) * scale + shift
fig, axes = plt.subplots(1, 2, figsize=(10, 3.2), sharey=True, layout="constrained")
for i in range(3):
    axes[0].hist(tok[i].numpy(), bins=20, alpha=0.6, label=f"token {i + 1}: mean {tok[i].mean():.1f}, "
                                                             f"std {tok[i].std(unbiased=False):.1f}")
    axes[1].hist(layer_norm(tok)[i].numpy(), bins=20, alpha=0.6, label=f"token {i + 1}")
axes[0].set(title="64 features of three tokens, before", xlabel="feature value", ylabel="count")
axes[1].set(title="after layer_norm (γ = 1, β = 0): mean 0, variance 1 each", xlabel="feature value")
axes[0].legend(fontsize=8)
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · RMSNorm
#
# RMSNorm (001 §19.3.5, 004 §16; LLaMA, Mistral) drops the centring and the shift $\beta$:
#
# $$\text{RMSNorm}(x) = \gamma \odot \frac{x}{\sqrt{\frac1d\sum_j x_j^2 + \varepsilon}} .$$
#
# It has $d$ parameters instead of $2d$ and one reduction instead of two. You will write it in **Exercise A**; here
# we use PyTorch's `nn.RMSNorm` and check one relation: on a token whose features already have mean 0, RMSNorm
# and LayerNorm (with $\beta = 0$) agree.
#
# The package's blocks take their norm, like every other setting, from one configuration, `TransformerConfig`: a
# frozen dataclass of every setting of the model (`d_model`, `n_heads`, `d_ff`, `activation`, `norm`, `eps`,
# `norm_first`, `dropout`, ...) with its default, checked once, when it is made. `make_norm(cfg)` reads `cfg.norm` and
# `cfg.eps`; an impossible setting fails where the configuration is made, by name.

# %% tags=["nbval-check-output"]
rms = nn.RMSNorm(d, eps=1e-6, dtype=torch.float64)
centred = x - x.mean(-1, keepdim=True)
check_close("on mean-0 tokens: nn.RMSNorm == nn.LayerNorm (γ = 1, β = 0, same ε)", rms(centred),
            F.layer_norm(centred, (d,), eps=1e-6), atol=1e-12)
check_true("on tokens with a mean (our x): they differ", not torch.allclose(rms(x), F.layer_norm(x, (d,), eps=1e-6)))
check_close("nn.RMSNorm: every token's output has root-mean-square 1", rms(x).pow(2).mean(-1), torch.ones(2, 5),
            atol=1e-4)
check_equal("nn.RMSNorm(512): γ only, d parameters", numel(nn.RMSNorm(512)), 512)
cfg = TransformerConfig(d_model=512, norm="rms", eps=1e-6)
check_equal("make_norm(cfg) with cfg.norm = 'rms': d parameters", numel(make_norm(cfg)), 512)
_ = check_raises(ValueError, "norm must be one of", TransformerConfig, norm="batch")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · The feed-forward sublayer: ReLU, GELU, SwiGLU
#
# $$\text{FFN}(x) = W_2\,\phi(W_1 x + b_1) + b_2,\qquad W_1: d_{\text{model}}\to d_{ff},\; W_2: d_{ff}\to d_{\text{model}}$$
#
# applied to every position separately (000 §8.5.4, 001 §19.4, 004 §7). The original used $\phi = $ ReLU; BERT and
# GPT use GELU, $x\,\Phi(x)$ (001 §19.4.3 quotes its tanh approximation, `F.gelu(approximate="tanh")`).
# SwiGLU (LLaMA, PaLM) replaces the single activated branch by a *gate*:
# $W_2\big(\text{SiLU}(W_1x) \odot W_3x\big)$, with $\text{SiLU}(z) = z\,\sigma(z)$.

# %%
z = torch.linspace(-4, 4, 401, dtype=torch.float64)
fig, ax = plt.subplots(figsize=(5.5, 3.2), layout="constrained")
for y, label in ((F.relu(z), "ReLU"), (F.gelu(z), "GELU = x·Φ(x)"), (F.silu(z), "SiLU/Swish = x·σ(x)")):
    ax.plot(z, y, label=label)
ax.set(title="activations", xlabel="z", ylim=(-1, 4))
ax.legend()
ax.grid(alpha=0.3)
plt.show()

# %% [markdown]
# The package's `FeedForward(cfg)` has all three (`cfg.activation` picks one, `cfg.d_ff` is the hidden width).
# Counting its weights from their shapes:
# $2\,d\,d_{ff} + d_{ff} + d$ for ReLU/GELU, and one more $d\times d_{ff}$ matrix (and bias) for SwiGLU's gate.
# Every variant keeps the shape, and acts on each position alone:

# %% tags=["nbval-check-output"]
d_model, d_ff = 512, 2048
cfg = TransformerConfig(d_model=d_model, d_ff=d_ff)
for act in ("relu", "gelu"):
    check_equal(f"FeedForward, d 512, d_ff 2048, {act}: numel = 2·d·d_ff + d_ff + d",
                numel(FeedForward(cfg.with_(activation=act))),
                2 * d_model * d_ff + d_ff + d_model)
check_equal("FeedForward, d 512, d_ff 2048, swiglu: numel = 3·d·d_ff + 2·d_ff + d",
            numel(FeedForward(cfg.with_(activation="swiglu"))), 3 * d_model * d_ff + 2 * d_ff + d_model)
xx = torch.randn(2, 5, d_model)
check_equal("every variant keeps (B, T, d_model)",
            [tuple(FeedForward(cfg.with_(d_ff=64, activation=a))(xx).shape) for a in ("relu", "gelu", "swiglu")],
            [(2, 5, 512)] * 3)
ffn = FeedForward(cfg.with_(d_ff=64, activation="gelu"))
check_close("position-wise: FFN(token 3 alone) == FFN(sequence)[token 3]", ffn(xx[:, 3:4]), ffn(xx)[:, 3:4], atol=1e-6)
_ = check_raises(ValueError, "activation must be one of", TransformerConfig, activation="tanh")
_ = check_raises(ValueError, "d_ff (the FFN hidden width) must be a positive integer", TransformerConfig, d_ff=0)

# %% [markdown]
# **The 2/3·4d convention.** SwiGLU has three matrices instead of two, so at the same $d_{ff}$ it has 1.5× the weights.
# LLaMA keeps the *count* of the ReLU FFN with $d_{ff} = 4d$ by shrinking the hidden width to $\tfrac23\cdot 4d$:
# $3\cdot d\cdot\tfrac{8d}{3} = 8d^2 = 2\cdot d\cdot 4d$. It then rounds up to a multiple of 256 (LLaMA-2-70B scales
# by 1.3 and rounds to a multiple of 4096). `swiglu_hidden_size` implements that rule; the published widths come out:

# %% tags=["nbval-check-output"]
check_equal("LLaMA-7B / LLaMA-2-7B: d 4096 -> SwiGLU width", swiglu_hidden_size(4096), 11008)
check_equal("LLaMA-2-70B: d 8192, ×1.3, multiple of 4096", swiglu_hidden_size(8192, 4096, 1.3), 28672)
check_close("LLaMA-7B SwiGLU weights / (8·d²)", 3 * 4096 * 11008 / (8 * 4096**2), 1.0078125, atol=1e-12)

# %% [markdown]
# **Why the FFN at all?** For *fixed* attention weights, attention's output is a weighted average of the value
# vectors: linear in $V$, with no nonlinearity applied to each token. The FFN supplies that per-token nonlinearity.
# But the weights are a softmax of scores that depend on the input, so an attention layer is **not** a linear
# function of its input, and a stack of them is not one linear map (000 §8.5.4 and 004 §7.1 blur the two). Both
# facts, checked:

# %% tags=["nbval-check-output"]
mha = MultiHeadAttention(64, 4)
x1, x2 = torch.randn(1, 6, 64), torch.randn(1, 6, 64)
with torch.no_grad():
    check_true("MHA(2x) != 2·MHA(x)", not torch.allclose(mha(2 * x1), 2 * mha(x1), atol=1e-4))
    check_true("MHA(x1 + x2) != MHA(x1) + MHA(x2)", not torch.allclose(mha(x1 + x2), mha(x1) + mha(x2), atol=1e-4))
    q, k, v1, v2 = (torch.randn(1, 6, 8) for _ in range(4))
    check_close("with q and k fixed, attention IS linear in V", F.scaled_dot_product_attention(q, k, v1 + v2),
                F.scaled_dot_product_attention(q, k, v1) + F.scaled_dot_product_attention(q, k, v2), atol=1e-5)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · Pre-LN and Post-LN blocks, proved equal to PyTorch's
#
# The package's block, `EncoderLayer(cfg)` (`cfg.norm_first` picks Pre-LN or Post-LN), is the two equations of the
# introduction, once for the attention sublayer and once for the FFN. (You will write the Pre-LN one yourself in
# Exercise C.) `nn.TransformerEncoderLayer` computes the same function when it is built with `batch_first=True`
# (our tensors are $(B, T, d)$), `dropout=0` (or both modules in `eval()`), the same activation and the same
# LayerNorm $\varepsilon$, and `norm_first=True` for Pre-LN / `False` for Post-LN. Its attention weights are packed in
# one `in_proj_weight` $[W_Q; W_K; W_V]$; `interop.copy_from_torch` unpacks them into our separate projections.
# Two traps when comparing: PyTorch's bool masks mean the opposite of ours (True = *blocked*), and padded
# positions hold junk in both, so only real positions are compared. The package's block
# is what you build in Exercise 8.8 below; once your answer passes, its worked solution shows its source.

# %%
def torch_vs_ours(norm_first, activation, seed, padded=False, causal=False, d=32, h=4, d_ff=64, t=7):
    """Build nn.TransformerEncoderLayer, copy its weights into our EncoderLayer, run both on the same input."""
    torch.manual_seed(seed)
    theirs = nn.TransformerEncoderLayer(d, h, d_ff, dropout=0.0, activation=activation, batch_first=True,
                                        norm_first=norm_first)
    cfg = TransformerConfig(d_model=d, n_heads=h, d_ff=d_ff, norm_first=norm_first, activation=activation)
    ours = copy_from_torch(EncoderLayer(cfg), theirs)
    xt = torch.randn(2, t, d)
    our_mask, kw = None, {}
    keep = padding_mask([t, 4], t)
    if padded:
        our_mask = key_padding(keep, t)  # ours: True = may attend
        kw["src_key_padding_mask"] = ~keep  # torch: True = padding
    if causal:
        our_mask = causal_mask(t) if our_mask is None else our_mask & causal_mask(t)
        kw["src_mask"], kw["is_causal"] = ~causal_mask(t), True  # torch: bool True = may NOT attend
    real = keep[..., None] if padded else torch.ones(2, t, 1, dtype=torch.bool)  # compare real tokens
    with torch.no_grad():
        return float(((ours(xt, mask=our_mask, is_causal=causal) - theirs(xt, **kw)) * real).abs().max())


worst = {}
for norm_first in (True, False):
    for act in ("relu", "gelu"):
        for padded, causal in ((False, False), (True, False), (False, True), (True, True)):
            errs = [torch_vs_ours(norm_first, act, s, padded, causal) for s in range(pick(quick=1, full=4))]
            worst["Pre-LN" if norm_first else "Post-LN", act, padded, causal] = max(errs)

# %% tags=["nbval-check-output"]
for (kind, act, padded, causal), err in worst.items():
    masks = "+".join(n for n, on in (("padding", padded), ("causal", causal)) if on) or "no mask"
    check_close(f"{kind:7s} {act:4s} {masks:14s}: ours == nn.TransformerEncoderLayer (max |diff|)", err, 0.0,
                atol=1e-5)

# %% [markdown]
# The same holds the other way round (`to_torch` builds a PyTorch layer from ours), and for the decoder block
# against `nn.TransformerDecoderLayer` (its `multihead_attn` is our `cross_attn`; our decoder always applies the
# causal mask, so PyTorch gets `tgt_mask` and `tgt_is_causal=True`). Mismatched settings are refused, not silently
# compared:

# %% tags=["nbval-check-output"]
small = TransformerConfig(d_model=32, n_heads=4, d_ff=64)
for norm_first in (True, False):
    ours = EncoderLayer(small.with_(norm_first=norm_first, activation="gelu"))
    xe, mem = torch.randn(2, 7, 32), torch.randn(2, 5, 32)
    check_close(f"to_torch(EncoderLayer), norm_first={norm_first}", to_torch(ours)(xe), ours(xe), atol=1e-5)
    dec = DecoderLayer(small.with_(norm_first=norm_first))
    check_close(f"to_torch(DecoderLayer), norm_first={norm_first}",
                to_torch(dec)(xe, mem, tgt_mask=nn.Transformer.generate_square_subsequent_mask(7), tgt_is_causal=True),
                dec(xe, mem), atol=1e-5)
relu = small.with_(activation="relu")  # nn.TransformerEncoderLayer's default activation
_ = check_raises(ValueError, "eps differs", copy_from_torch, EncoderLayer(relu.with_(norm_first=False)),
                 nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, layer_norm_eps=1e-6))
_ = check_raises(ValueError, "norm placement differs", copy_from_torch, EncoderLayer(relu),
                 nn.TransformerEncoderLayer(32, 4, 64, batch_first=True))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5 · Tracing a token through a block, and the residual stream
#
# 003's first learning objective is to "trace one token through a transformer encoder block ... and state the
# dimensionality at each step". `probes.trace_shapes` **records** the shapes with forward hooks on every submodule
# while a real Pre-LN block runs: "The cat sat" as $B = 1$, $T = 3$, $d_{\text{model}} = 768$, 12 heads of 64
# (the sizes of 004 §14).

# %%
torch.manual_seed(0)
block = EncoderLayer(TransformerConfig(d_model=768, n_heads=12, d_ff=3072, norm_first=True, activation="gelu"))
x_cat = torch.randn(1, 3, 768)  # "The cat sat": B = 1, T = 3, d_model = 768
trace = trace_shapes(block, x_cat)
print(f"{'module (in call order)':28s} {'input':>16s}  {'output':>16s}  {'attention weights':>17s}")
for r in trace:
    print(f"{r['name']:28s} {r['in']!s:>16s}  {r['out']!s:>16s}  {r.get('weights', '')!s:>17s}")

# %% tags=["nbval-check-output"]
by_name = {r["name"]: r for r in trace}
check_equal("modules in call order", [r["name"] for r in trace],
            ["norm1", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj", "self_attn",
             "norm2", "ff.linear1", "ff.linear2", "ff", "EncoderLayer"])
check_equal("every norm, the attention and the FFN map (1, 3, 768) -> (1, 3, 768)",
            {by_name[n]["in"] + by_name[n]["out"] for n in ("norm1", "self_attn", "norm2", "ff", "EncoderLayer")},
            {(1, 3, 768, 1, 3, 768)})
check_equal("Q, K, V each (1, 3, 768) = 12 heads × 64", [by_name[f"self_attn.{p}_proj"]["out"] for p in "qkv"],
            [(1, 3, 768)] * 3)
check_equal("the FFN expands to d_ff = 3072 and back", (by_name["ff.linear1"]["out"], by_name["ff.linear2"]["out"]),
            ((1, 3, 3072), (1, 3, 768)))
check_equal("attention weights: (B, h, T, T) = 12 heads of 3×3", by_name["self_attn"]["weights"], (1, 12, 3, 3))

# %% [markdown]
# **The residual stream.** Read Pre-LN as 001 §19.5.2 and 004 §9.1 do: the input $x_0$ flows through every block
# unchanged, and each sublayer only *adds* to it, $x_L = x_0 + \sum_{\ell} \text{update}_\ell$. That is an identity we
# can check exactly: record every sublayer's output (its "write" to the stream) while three Pre-LN blocks run, and
# sum them.

# %%
torch.manual_seed(1)
layers = [EncoderLayer(TransformerConfig(d_model=32, n_heads=2, d_ff=96)) for _ in range(3)]
writes = []
hooks = [m.register_forward_hook(lambda mod, inp, out: writes.append(out))
         for layer in layers for m in (layer.self_attn, layer.ff)]
x0 = torch.randn(2, 10, 32)
with torch.no_grad():
    xl = x0
    for layer in layers:
        xl = layer(xl)
for hk in hooks:
    hk.remove()

# %% tags=["nbval-check-output"]
check_equal("writes recorded: 3 blocks × (attention + FFN)", len(writes), 6)
check_close("Pre-LN: output == input + sum of the 6 sublayer writes", xl, x0 + sum(writes), atol=1e-5)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6 · Depth at initialisation: what the norms and the residuals do
#
# Why do deep stacks need residual connections, and why do most models now put the norm first? The texts (000
# §8.5.2–8.5.3, 001 §19.3.4 and §19.5.1, 004 §8.3 and §9.2) give four reasons: without residuals, gradients in deep
# stacks vanish or explode; in Post-LN the gradient at initialisation is large near the output, which is why it
# needs a learning-rate warm-up; in Pre-LN the gradient is well-behaved at any depth; and Pre-LN trains without
# the warm-up that Post-LN needs. You can see each of them happen (or not): this section looks at a fresh stack,
# section 7 trains one.
#
# For each depth $L \in \{6, 24, 48\}$, each placement and with/without residuals: a freshly Xavier-initialised
# stack ($d_{\text{model}} = 64$, 4 heads, $d_{ff} = 256$; a final LayerNorm for Pre-LN, as GPT-2 has), a random batch
# $x \sim \mathcal N(0,1)$ of shape $(8, 16, 64)$, a linear read-out, a cross-entropy loss on random targets, one
# backward pass. For every layer: the norm of the gradient of **all its parameters** (what an optimizer step scales
# with), averaged over seeds.

# %%
show_source(layer_grad_norms)

# %%
t0 = time.perf_counter()
seeds = tuple(range(pick(quick=2, full=5)))
DEPTHS = (6, 24, 48)
VARIANTS = [(nf, res) for nf in (True, False) for res in (True, False)]
grads = {(L, nf, res): layer_grad_norms(L, nf, res, seeds=seeds)["param"] for L in DEPTHS for nf, res in VARIANTS}
streams = {(nf, res): stream_stats(48, nf, res, seed=0) for nf, res in VARIANTS}
print(f"{len(grads)} stacks × {len(seeds)} seeds in {time.perf_counter() - t0:.1f} s")


def label(nf, res):
    return f"{'Pre-LN' if nf else 'Post-LN'}{'' if res else ', no residual'}"


STYLE = {(True, True): ("C0", "-"), (False, True): ("C3", "-"), (True, False): ("C0", ":"), (False, False): ("C3", ":")}
fig, axes = plt.subplots(1, 3, figsize=(13, 3.6), sharey=True, layout="constrained")
for ax, L in zip(axes, DEPTHS):
    for nf, res in VARIANTS:
        c, ls = STYLE[nf, res]
        ax.semilogy(range(1, L + 1), grads[L, nf, res], color=c, ls=ls, marker="o", ms=2.5, label=label(nf, res))
    ax.set(title=f"{L} blocks", xlabel="layer (1 = next to the input)")
    ax.grid(alpha=0.3, which="both")
axes[0].set_ylabel("‖∂loss/∂θ‖ of the layer")
axes[0].legend(fontsize=8)
fig.suptitle(f"Per-layer gradient norms at initialisation (mean of {len(seeds)} seeds)", fontsize=11)
plt.show()

# %% [markdown]
# What the figure shows, and the checks below assert:
#
# * **Post-LN (red, solid): the gradient grows towards the output.** The last layer's gradient is larger than the
#   first layer's at 24 and 48 blocks, and it does not shrink as the stack gets deeper. At initialisation the
#   layers next to the output get the largest gradients, so a large learning rate moves them most: the reason
#   Xiong et al. (2020) give for the warm-up, and what you see here.
# * **Pre-LN (blue, solid): the opposite.** The gradient shrinks towards the output, and the whole profile scales
#   down with depth, roughly like $1/\sqrt{L}$ (Xiong et al.'s bound): the last layer's gradient at $L = 48$ is a
#   fraction of its value at $L = 6$ ($\sqrt{6/48} \approx 0.35$). "Well-behaved" means *bounded and smooth*, not
#   *independent of depth*.
# * **No residuals (dotted): no vanishing gradient at initialisation.** With a LayerNorm in every block, even at 48
#   blocks the gradients of all layers stay within a small factor of each other (a vanishing gradient would shrink
#   by orders of magnitude from the output to the input). What goes wrong instead is shown next.

# %% tags=["nbval-check-output"]
ratio = {k: float(v[-1] / v[0]) for k, v in grads.items()}  # last layer / first layer
last = {k: float(v[-1]) for k, v in grads.items()}
for L in (24, 48):
    check_true(f"Post-LN, {L} blocks: last layer's gradient > 1.5 × first layer's", ratio[L, False, True] > 1.5)
    check_true(f"Pre-LN,  {L} blocks: last layer's gradient < 0.6 × first layer's", ratio[L, True, True] < 0.6)
check_true("Post-LN: the last layer's gradient does not shrink with depth (48 vs 6 blocks: ratio > 0.8)",
           last[48, False, True] / last[6, False, True] > 0.8)
check_true("Pre-LN: the last layer's gradient shrinks with depth (48 vs 6 blocks: ratio in [0.2, 0.6])",
           0.2 < last[48, True, True] / last[6, True, True] < 0.6)
for nf in (True, False):
    g = grads[48, nf, False]
    check_true(f"{label(nf, False)}, 48 blocks: no vanishing, first layer's gradient > 0.1 × last layer's",
               float(g[0] / g[-1]) > 0.1)
    check_true(f"{label(nf, False)}, 48 blocks: all 48 layers' gradients within a factor of 100",
               float(g.max() / g.min()) < 100)

# %% [markdown]
# **So what do residual connections buy, if not gradient flow at initialisation?** Look at the residual stream
# itself: its size (RMS) after every block and its **token diversity**, $\lVert x - \bar x\rVert / \lVert x\rVert$ with
# $\bar x$ the mean over positions (1 = the positions share nothing, 0 = every position holds the same vector).

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 3.5), layout="constrained")
for nf, res in VARIANTS:
    c, ls = STYLE[nf, res]
    axes[0].semilogy(streams[nf, res]["diversity"].clamp_min(1e-9), color=c, ls=ls, label=label(nf, res))
    axes[1].plot(streams[nf, res]["rms"], color=c, ls=ls, label=label(nf, res))
axes[0].set(title="token diversity after each block (48 blocks)", xlabel="after block", ylabel="‖x - mean_T x‖ / ‖x‖")
axes[1].set(title="size of the stream (RMS) after each block", xlabel="after block", ylabel="RMS")
for ax in axes:
    ax.grid(alpha=0.3, which="both")
axes[0].legend(fontsize=8)
plt.show()

# %% [markdown]
# Without residuals the positions **collapse** within a few blocks: at initialisation the attention weights are
# nearly uniform, so attention returns nearly the same average for every position, and no skip connection carries
# the original tokens forward. The network then sees one vector per sequence: its gradients are healthy but it
# cannot tell the tokens apart (the "rank collapse" of Dong et al., 2021). With
# residuals, Pre-LN keeps the input in the stream (the stream grows, diversity decays slowly); **Post-LN loses
# diversity geometrically**: each block renormalises $x + \text{Attn}(x)$, and the common part that attention adds
# shrinks the token-specific part every time.

# %% tags=["nbval-check-output"]
div48 = {k: float(v["diversity"][-1]) for k, v in streams.items()}
check_true("no residual: positions collapse within 6 blocks (diversity < 1e-4)",
           all(float(streams[nf, False]["diversity"][6]) < 1e-4 for nf in (True, False)))
check_true("Pre-LN with residuals keeps the positions apart after 48 blocks (diversity > 0.1)", div48[True, True] > 0.1)
check_true("Post-LN with residuals: diversity < 1e-3 after 48 blocks", div48[False, True] < 1e-3)
check_true("Pre-LN's stream grows with depth (RMS after 48 blocks > 3 × input)",
           float(streams[True, True]["rms"][-1]) > 3 * float(streams[True, True]["rms"][0]))
check_close("Post-LN's stream stays normalised (RMS after the last block)", streams[False, True]["rms"][-1], 1.0,
            atol=1e-3)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7 · Does Post-LN need warm-up? A toy test
#
# A 12-block causal model ($d_{\text{model}} = 64$) learns a random first-order Markov chain over 32 tokens; the best
# possible loss is the chain's entropy, and a model that ignores the context can reach only the **unigram** entropy
# (the token frequencies). Adam with the original paper's $\beta = (0.9, 0.98)$ and peak learning rate $10^{-3}$;
# three runs on the same batches: Pre-LN without warm-up, Post-LN without warm-up, Post-LN with a 100-step linear
# warm-up. The full profile trains each for 700 steps; the quick profile runs the first two for 60 steps.

# %%
steps = pick(quick=60, full=700)
data = markov_batches(steps, batch=16, seq_len=16, vocab=32, seed=0)
counts = torch.bincount(data[1].flatten(), minlength=32).double()
p_uni = counts / counts.sum()
unigram = float(-(p_uni * p_uni.clamp_min(1e-12).log()).sum())
runs = {"Pre-LN, no warm-up": (True, 0), "Post-LN, no warm-up": (False, 0)}
if steps >= 700:
    runs["Post-LN, 100-step warm-up"] = (False, 100)
t0 = time.perf_counter()
curves = {name: train_toy_lm(12, nf, 1e-3, warm, steps, data=data, device=env.device)
          for name, (nf, warm) in runs.items()}
print(f"{len(runs)} runs × {steps} steps in {time.perf_counter() - t0:.1f} s")


def smooth(v, k=25):
    """The mean of the last k values at every step (fewer at the start)."""
    return [sum(v[max(0, i - k + 1) : i + 1]) / len(v[max(0, i - k + 1) : i + 1]) for i in range(len(v))]


fig, ax = plt.subplots(figsize=(7.5, 3.6), layout="constrained")
for (name, v), c in zip(curves.items(), ("C0", "C3", "C1")):
    ax.plot(smooth(v), color=c, label=name)
ax.axhline(data[2], color="k", ls="--", lw=1, label=f"chain entropy {data[2]:.2f} (best possible)")
ax.axhline(unigram, color="0.5", ls=":", lw=1, label=f"unigram entropy {unigram:.2f} (ignores the context)")
ax.set(xlabel="step", ylabel="training loss (25-step mean)", title="12 blocks, Adam, peak lr 1e-3")
ax.legend(fontsize=8)
ax.grid(alpha=0.3)
plt.show()

# %%
window = pick(quick=10, full=50)
final = {name: sum(v[-window:]) / window for name, v in curves.items()}
print(f"mean loss of the last {window} steps:", {k: round(v, 3) for k, v in final.items()})
print(f"unigram entropy: {unigram:.3f}")
assert final["Pre-LN, no warm-up"] < final["Post-LN, no warm-up"] - 0.3, "Pre-LN should be well ahead"
assert abs(final["Post-LN, no warm-up"] - unigram) < 0.1, "Post-LN without warm-up should sit at the unigram loss"
if "Post-LN, 100-step warm-up" in final:
    gap = final["Post-LN, 100-step warm-up"] - unigram
    print(f"Post-LN with warm-up ends {abs(gap):.3f} {'above' if gap > 0 else 'below'} the unigram loss")
    assert final["Post-LN, 100-step warm-up"] > final["Pre-LN, no warm-up"] + 0.3, "Pre-LN should stay well ahead"

# %% [markdown]
# **What this shows** (the stored full-profile run; the quick profile has only the first two runs, for 60 steps).
# Pre-LN learns at once without any warm-up, as the texts say. Post-LN without warm-up sits
# on a plateau at the **unigram** loss for the whole run: it predicts token frequencies and ignores the context.
# **The second half, that a warm-up is what Post-LN needs, does not appear here:** with a 100-step warm-up to the
# same peak, Post-LN ends the 700 steps on the same plateau (the cell above prints how close it ends to the
# unigram loss). This toy cannot tell whether a longer warm-up, a smaller peak rate or a longer run would free it;
# Xiong et al. report that Post-LN depends on the warm-up and on its length, on real
# tasks trained far longer than this notebook can afford. A measurement consistent with the plateau: 12
# Post-LN blocks at initialisation keep only a small part of the differences between positions that 12 Pre-LN
# blocks keep (section 6), so the read-out sees little of the context to begin with:

# %% tags=["nbval-check-output"]
div12 = {nf: float(stream_stats(12, nf, True, seed=0)["diversity"][-1]) for nf in (True, False)}
check_true("at initialisation, 12 Post-LN blocks keep < 1/4 of the token diversity of 12 Pre-LN blocks",
           div12[False] < 0.25 * div12[True])

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8 · Widget: depth, norm placement, residuals
#
# Pick the number of blocks, Pre-LN or Post-LN, and switch the residual connections off: the left panel shows the
# per-layer gradient norms at initialisation, the right one the token diversity and the size of the residual
# stream after every block (one seed; the curves of section 6 average several).

# %%
DepthWidget().show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9 · Exercises
#
# Each checker compares your function with a hidden reference and names the mistake it recognises;
# `ex.hint()` gives a hint (more specific each time), `ex.solution()` a worked solution, only after you have tried.
#
# ### Exercise A: RMSNorm from scratch
#
# Write `my_rms_norm(x, weight, eps)`: `x` has shape `(..., d)`, `weight` (γ) shape `(d,)`; the same as
# `nn.RMSNorm(d, eps)` with that weight.

# %%
import torch
import torch.nn as nn

from transformer_nb import check_equal, check_true
from transformer_nb.exercises.block import encoder_stack_ex, rms_norm_ex, swiglu_ex


# %% tags=["exercise"]
def my_rms_norm(x, weight, eps):
    raise NotImplementedError  # your code here


rms_norm_ex.check(my_rms_norm)

# %% [markdown]
# ### Exercise B: the SwiGLU feed-forward
#
# Write `my_swiglu(x, w_gate, w_up, w_down)` with the weights stored like `nn.Linear.weight` (`w_gate`, `w_up`:
# `(d_ff, d)`, `w_down`: `(d, d_ff)`, no biases), the feed-forward of LLaMA and PaLM described in §3.

# %% tags=["exercise"]
def my_swiglu(x, w_gate, w_up, w_down):
    raise NotImplementedError  # your code here


swiglu_ex.check(my_swiglu)

# %% [markdown]
# ### Exercise C (Exercise 8.8): a stack of four Pre-LN encoder blocks
#
# Build a Transformer encoder block in the Pre-LN configuration (LayerNorm → multi-head attention → residual;
# LayerNorm → FFN → residual) with $d_{\text{model}} = 64$, $h = 4$, $d_{ff} = 256$, and stack four of them.
# Write the block as a class `PreLNBlock(nn.Module)` (your multi-head attention from notebook 03 inside it, or
# `nn.MultiheadAttention` with `batch_first=True`), and `build_encoder_stack(d_model, n_heads, d_ff, n_blocks)`
# returning the stack as an `nn.Module` whose forward takes `x` of shape `(B, T, d_model)`. No final LayerNorm.
# The checker *measures* your module: output shape, a gradient on every parameter, the parameter count, and
# whether it behaves like Pre-LN.

# %% tags=["exercise"]
class PreLNBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        raise NotImplementedError  # your layers here

    def forward(self, x):
        raise NotImplementedError  # your code here


def build_encoder_stack(d_model, n_heads, d_ff, n_blocks):
    raise NotImplementedError  # your code here


encoder_stack_ex.check(build_encoder_stack)

# %% tags=["solution"] cellView="form" jupyter={"source_hidden": true, "outputs_hidden": true}
# The package's own version, once your answer to Exercise 8.8 passes (or after encoder_stack_ex.solution())
if encoder_stack_ex.unlocked():
    show_source(EncoderLayer.forward)

# %% [markdown]
# Exercise 8.8's two verifications, on your stack once it passes: a random input of shape `(2, 12, 64)` keeps
# its shape, and `.backward()` on the output's sum reaches every parameter.

# %%
build = encoder_stack_ex.use(build_encoder_stack)
torch.manual_seed(0)
stack88 = build(64, 4, 256, 4)
x88 = torch.randn(2, 12, 64)
out88 = stack88(x88)
check_equal("(1) output shape == input shape", tuple(out88.shape), tuple(x88.shape))
out88.sum().backward()
check_true("(2) every parameter has a gradient", all(p.grad is not None for p in stack88.parameters()))
check_true("... and none of them is all zeros", all(p.grad.abs().sum() > 0 for p in stack88.parameters()))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Appendix · The texts, checked
#
# What the five texts say on this notebook's topics, statement by statement, and what checking each one found
# (notebook 13 lists them all; `transformer_nb.claims` holds them). The cell below prints them and runs their
# checks. Several rest on what you measured above: a stack of attention layers is not one linear map, as 000 and 004
# say it is (wrong: it is linear in V only with the weights held fixed, section 3); without
# residuals the gradients do not vanish at initialisation, the positions collapse instead (section 6); Xiong et
# al.'s gradients hold as they state them, less so as 001 words them (section 6). That Post-LN needs a warm-up
# is what the literature reports; the toy of section 7 shows Post-LN's plateau, not its rescue by a warm-up.

# %% tags=["nbval-check-output"]
from transformer_nb.claims import report

report(notebook="06")
