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
# # 03 · Multi-head attention, MQA/GQA and the KV cache
#
# One attention function gives each token one weighted average of the others. Multi-head
# attention runs $h$ of them side by side, each in its own $d_k = d_{\text{model}}/h$-dimensional
# projection, and mixes their outputs with one more matrix:
#
# $$\text{MultiHead}(X_q, X_{kv}) = \text{Concat}(\text{head}_1,\dots,\text{head}_h)\,W^O,\qquad
# \text{head}_i = \text{Attention}(X_q W_i^Q,\; X_{kv} W_i^K,\; X_{kv} W_i^V).$$
#
# This notebook
# 1. computes the heads with **one reshape** and proves it equal to a per-head loop;
# 2. proves the package's `MultiHeadAttention` equal to PyTorch's `nn.MultiheadAttention` (self- and
#    cross-attention, padding and causal masks; mind the mask polarity);
# 3. checks the $4\,d_{\text{model}}^2$ parameter count against `numel()` and shows that $h$ does not change it;
# 4. works **Exercise 8.6** (per-head heatmaps for "The cat sat on the comfortable mat") and describes the
#    heads from *measured* numbers, with a widget to explore more sentences, heads and layers;
# 5. generalises to **MQA/GQA** and recomputes the KV-cache table from the module's own tensor shapes.
#
# **Serves:** 000 §8.3 (8.3.1–8.3.5), Exercise 8.6; 002 "Multi-Head Attention", "KV Cache",
# "Grouped Query Attention"; 004 §6. Errors found in the texts are listed at the end.
#
# **Runtime on 2 CPU cores:** quick ~30 s, full ~50 s, measured while the cores were shared with other jobs (the CPU time is about 12 s and 20 s, so expect less on an idle machine).

# %%
# %matplotlib inline
from transformer_nb import setup
env = setup()          # seeds everything, prints profile / device / torch version

# %%
import itertools
import math

import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb import check_close, check_equal, check_raises, check_true, pick, show_source
from transformer_nb.masks import causal_mask, key_padding, padding_mask
from transformer_nb.multihead import (MultiHeadAttention, copy_from_torch, copy_to_torch, head_stats,
                                      kv_cache_bytes, merge_heads, mha_param_count, record_attention,
                                      split_heads, to_torch, to_torch_attn_mask, uniform_distance)
from transformer_nb.plotting import heatmaps
from transformer_nb.widgets.multihead import HeadsWidget

device = env.device

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · h heads with one reshape
#
# Each head $i$ has its own $W_i^Q, W_i^K, W_i^V \in \mathbb{R}^{d_{\text{model}}\times d_k}$ (000 §8.3.2).
# Stack the $h$ matrices $W_i^Q$ side by side and you get one $d_{\text{model}}\times d_{\text{model}}$ matrix
# $W^Q$: one `nn.Linear` computes all $h$ query projections at once, and head $i$'s queries are
# **columns $i\,d_k \dots (i+1)\,d_k-1$** of the result. (In `nn.Linear`'s `weight`, which is stored
# transposed, they are the corresponding *rows*.)
#
# First the slow, obvious way: a Python loop, one head at a time, with explicit slices of the weights
# (this is 004 §6.2's "pedagogical loop").

# %%
d_model, h = 32, 4
d_k = d_model // h
B, T = 2, 7
mha = MultiHeadAttention(d_model, h).to(device)
x = torch.randn(B, T, d_model, device=device)


def head_by_head(mha, x):
    """Loop over heads: slice head i's rows out of each projection, attend, concatenate, project."""
    outs, weights = [], []
    for i in range(mha.n_heads):
        rows = slice(i * mha.d_head, (i + 1) * mha.d_head)
        q_i = x @ mha.q_proj.weight[rows].T + mha.q_proj.bias[rows]            # (B, T, d_k)
        k_i = x @ mha.k_proj.weight[rows].T + mha.k_proj.bias[rows]
        v_i = x @ mha.v_proj.weight[rows].T + mha.v_proj.bias[rows]
        w_i = torch.softmax(q_i @ k_i.transpose(-2, -1) / math.sqrt(mha.d_head), dim=-1)  # (B, T, T)
        outs.append(w_i @ v_i)                                                # (B, T, d_k)
        weights.append(w_i)
    concat = torch.cat(outs, dim=-1)                                          # (B, T, h·d_k)
    return mha.out_proj(concat), torch.stack(weights, dim=1)                  # (B, T, d), (B, h, T, T)


y_loop, w_loop = head_by_head(mha, x)
print("output", tuple(y_loop.shape), "| weights", tuple(w_loop.shape))

# %% [markdown]
# Now all heads at once. Project with the full matrices, then **reshape** the feature axis
# $d_{\text{model}} = h \cdot d_k$ into $(h, d_k)$ and move the head axis next to the batch axis:
# `(B, T, d_model) -> (B, T, h, d_k) -> (B, h, T, d_k)`. From then on the head axis is just another batch
# axis: one batched matmul computes all $h$ score matrices. Merging is the inverse:
# `(B, h, T, d_k) -> (B, T, h, d_k) -> (B, T, d_model)`, which *is* the concatenation.

# %%
def all_heads_at_once(mha, x):
    b, t, _ = x.shape
    hh, dk = mha.n_heads, mha.d_head

    def split(y):                                      # (B, T, h·d_k) -> (B, h, T, d_k)
        return y.reshape(b, t, hh, dk).transpose(1, 2)

    q, k, v = split(mha.q_proj(x)), split(mha.k_proj(x)), split(mha.v_proj(x))
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(dk), dim=-1)     # (B, h, T, T) in one matmul
    concat = (w @ v).transpose(1, 2).reshape(b, t, hh * dk)                 # merge = concatenate heads
    return mha.out_proj(concat), w


y_batched, w_batched = all_heads_at_once(mha, x)

# %% tags=["nbval-check-output"]
check_close("one reshape == per-head loop (outputs)", y_batched, y_loop, atol=1e-5)
check_close("one reshape == per-head loop (weights)", w_batched, w_loop, atol=1e-6)
with record_attention(mha):                    # the package module, keeping its weights
    y_pkg = mha(x)
check_close("package MultiHeadAttention == from scratch (outputs)", y_pkg, y_loop, atol=1e-5)
check_close("package MultiHeadAttention == from scratch (weights)", mha.last_weights, w_loop, atol=1e-6)

# %% [markdown]
# The picture below is the reshape: one token's projected query vector is cut into $h$ consecutive
# blocks of $d_k$ features, and block $i$ goes to head $i$. No number moves or changes; only the
# indexing does.

# %%
with torch.no_grad():
    q_full = mha.q_proj(x)[0].cpu()                     # (T, d_model) for the first sequence
    q_heads = split_heads(mha.q_proj(x), h)[0].cpu()    # (h, T, d_k)
fig = plt.figure(figsize=(11, 3.3), layout="constrained")
grid = fig.add_gridspec(1, 2, width_ratios=[1.15, 1])
ax = fig.add_subplot(grid[0])
vlim = float(q_full.abs().max())
ax.imshow(q_full, cmap="RdBu_r", vmin=-vlim, vmax=vlim, aspect="auto")
for i in range(1, h):
    ax.axvline(i * d_k - 0.5, color="k", lw=2)
for i in range(h):
    ax.text(i * d_k + d_k / 2 - 0.5, -0.8, f"head {i + 1}", ha="center", fontsize=9)
ax.set(xlabel="feature (d_model = 32)", ylabel="token", title="$Q = XW^Q$: (T, d_model)\n")
sub = grid[1].subgridspec(1, h, wspace=0.08)
for i in range(h):
    a = fig.add_subplot(sub[i])
    a.imshow(q_heads[i], cmap="RdBu_r", vmin=-vlim, vmax=vlim, aspect="auto")
    a.set(title=f"head {i + 1}", xlabel="d_k = 8", xticks=[], yticks=[])
fig.suptitle("split_heads: (T, h·d_k) -> (h, T, d_k); the same numbers, regrouped", fontsize=10)
plt.show()

# %% [markdown]
# The package does exactly this with `split_heads` and `merge_heads`, and its `forward` hands the
# `(B, h, T, d_k)` tensors to `F.scaled_dot_product_attention` (taught in notebook 01), which treats
# the head axis as a batch axis:

# %%
show_source(split_heads)
show_source(merge_heads)
show_source(MultiHeadAttention.forward)

# %% tags=["nbval-check-output"]
xs = torch.randn(3, 5, 24)
check_equal("split_heads shape", split_heads(xs, 6).shape, (3, 6, 5, 4))
check_true("head i holds features i·d_k ... (i+1)·d_k - 1, unchanged",
           all(torch.equal(split_heads(xs, 6)[:, i], xs[..., 4 * i: 4 * i + 4]) for i in range(6)))
check_true("merge_heads(split_heads(x)) == x exactly", torch.equal(merge_heads(split_heads(xs, 6)), xs))

# %% [markdown]
# **"All heads run entirely in parallel, with no communication between heads"** (004 §6.2). We can test
# that literally: change head 2's query weights only, and see which slots of the concatenation (the input
# of $W^O$) change. Only head 2's $d_k$ slots may move; $W^O$ is the first place where heads mix.

# %%
def concat_of_heads(m, x):
    """The concatenated head outputs (B, T, h·d_k): the multi-head output before W^O."""
    with torch.no_grad():
        q, k, v = split_heads(m.q_proj(x), m.n_heads), *m.kv_heads(x)
        return merge_heads(F.scaled_dot_product_attention(q, k, v))


mha2 = MultiHeadAttention(d_model, h).to(device)
mha2.load_state_dict(mha.state_dict())
with torch.no_grad():
    mha2.q_proj.weight[1 * d_k: 2 * d_k] += torch.randn(d_k, d_model, device=device)   # head 2 only
changed = (concat_of_heads(mha2, x) - concat_of_heads(mha, x)).abs().amax(dim=(0, 1)) > 1e-6  # per slot

# %% tags=["nbval-check-output"]
check_equal("concatenation slots that changed, per head",
            [int(c) for c in changed.view(h, d_k).any(dim=1)], [0, 1, 0, 0])
check_true("the final outputs (after W^O) of every token changed",
           ((mha2(x) - mha(x)).abs().amax(-1) > 1e-6).all())

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · The same function as `nn.MultiheadAttention`
#
# PyTorch keeps $W^Q, W^K, W^V$ in one packed `in_proj_weight` of shape $(3d_{\text{model}}, d_{\text{model}})$,
# rows $[W^Q; W^K; W^V]$, and $W^O$ in `out_proj`. Copying weights across is three slices:

# %%
show_source(copy_to_torch)

# %% [markdown]
# **Mask polarity is the trap.** The three conventions in play:
#
# | | bool `True` means | shape |
# |---|---|---|
# | ours (and `F.scaled_dot_product_attention`) `mask` | **may attend** | broadcastable to $(B, h, T_q, T_k)$ |
# | `nn.MultiheadAttention(attn_mask=...)` | **may NOT attend** | $(T_q, T_k)$ or $(B\cdot h, T_q, T_k)$ |
# | `nn.MultiheadAttention(key_padding_mask=...)` | **is padding: ignore** | $(B, T_k)$ |
#
# So our padding mask `keep` (True at real tokens) becomes `key_padding_mask=~keep`, and our causal mask
# (True on and below the diagonal) becomes `attn_mask=~causal`. Float masks are additive in all three.
# `to_torch_attn_mask` does the flip for general masks. Below, every case is checked for the per-head
# weights (atol $10^{-6}$), the outputs ($10^{-5}$) and the gradients with respect to the inputs ($10^{-4}$), for
# `n_seeds` random draws of weights and inputs (1 in the quick profile, 5 in the full one).

# %%
def compare_with_torch(t_q, t_k, cross, lengths=None, causal=False, float_mask=False, seed=0):
    """Run ours and nn.MultiheadAttention with copied weights; return (ours, theirs) outputs, weights, grads."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    ours = MultiHeadAttention(d_model, h)
    theirs = to_torch(ours)
    q = torch.randn(B, t_q, d_model, generator=g).requires_grad_()
    kv = torch.randn(B, t_k, d_model, generator=g).requires_grad_() if cross else q
    our_mask, torch_kw = None, {}
    if lengths is not None:
        keep = padding_mask(lengths, t_k)                     # (B, T_k), True = real token
        our_mask = key_padding(keep, t_q)                     # (B, 1, T_q, T_k), True = may attend
        torch_kw["key_padding_mask"] = ~keep                  # torch: True = padding, ignore
    if causal:
        c = causal_mask(t_q, t_k)                             # (T_q, T_k), True = may attend
        our_mask = c if our_mask is None else our_mask & c
        torch_kw["attn_mask"] = to_torch_attn_mask(c, h)      # torch: True = may NOT attend
    if float_mask:                                            # an additive bias, e.g. a relative-position bias
        our_mask = -0.3 * (torch.arange(t_q)[:, None] - torch.arange(t_k)[None, :]).abs().float()
        torch_kw["attn_mask"] = to_torch_attn_mask(our_mask, h)   # additive in both: unchanged
    with record_attention(ours):
        y_ours = ours(q, kv, kv, mask=our_mask)
    y_theirs, w_theirs = theirs(q, kv, kv, average_attn_weights=False, **torch_kw)
    grads = []
    for y in (y_ours, y_theirs):
        inputs = (q, kv) if cross else (q,)
        grads.append(torch.cat([gr.flatten() for gr in torch.autograd.grad(y.square().sum(), inputs)]))
    return (y_ours, y_theirs), (ours.last_weights, w_theirs), tuple(grads)


CASES = {
    "self-attention":                    dict(t_q=7, t_k=7, cross=False),
    "self-attention + key padding":      dict(t_q=7, t_k=7, cross=False, lengths=[7, 4]),
    "causal self-attention":             dict(t_q=7, t_k=7, cross=False, causal=True),
    "causal + key padding":              dict(t_q=7, t_k=7, cross=False, lengths=[5, 7], causal=True),
    "cross-attention (T_q=4, T_k=9)":    dict(t_q=4, t_k=9, cross=True),
    "cross-attention + source padding":  dict(t_q=4, t_k=9, cross=True, lengths=[9, 6]),
    "self-attention + float bias mask":  dict(t_q=7, t_k=7, cross=False, float_mask=True),
}

# %%
n_seeds = pick(quick=1, full=5)          # random weights and inputs per case

# %% tags=["nbval-check-output"]
for name, case in CASES.items():
    ok = []
    for seed in range(n_seeds):
        (yo, yt), (wo, wt), (go, gt) = compare_with_torch(**case, seed=seed)
        ok.append(torch.allclose(yo, yt, atol=1e-5) and torch.allclose(wo, wt, atol=1e-6)
                  and torch.allclose(go, gt, atol=1e-4))
    check_true(f"{name}: outputs, per-head weights and input gradients equal", all(ok))

# %% [markdown]
# The weights really went where we think: the padded keys got exactly zero weight, and the causal case is
# lower-triangular. And the copy works in both directions.

# %% tags=["nbval-check-output"]
_, (w_pad, _), _ = compare_with_torch(**CASES["self-attention + key padding"])
check_true("padded keys (sequence 2, positions 4..6) get weight exactly 0", (w_pad[1, :, :, 4:] == 0).all())
_, (w_causal, _), _ = compare_with_torch(**CASES["causal self-attention"])
check_true("causal weights are exactly 0 above the diagonal", (w_causal.triu(diagonal=1) == 0).all())
theirs = nn.MultiheadAttention(d_model, h, batch_first=True)
ours = copy_from_torch(MultiHeadAttention(d_model, h), theirs)
check_close("copy_from_torch: ours == torch", ours(x.cpu()), theirs(x.cpu(), x.cpu(), x.cpu())[0], atol=1e-5)
check_equal("same number of parameters", sum(p.numel() for p in ours.parameters()),
            sum(p.numel() for p in theirs.parameters()))

# %% [markdown]
# **Where we differ on purpose.** A query whose keys are *all* masked (a fully padded sequence, as in a
# batch that carries an empty example) has nothing to attend to. `nn.MultiheadAttention` returns NaN there,
# and NaN spreads through everything after it. Our module follows this project's rule instead: zero
# attention weights, so the head output is zero and the layer returns just the output bias.

# %% tags=["nbval-check-output"]
m0 = MultiHeadAttention(d_model, h)
keep0 = padding_mask([7, 0], 7)                                 # the second sequence is all padding
xx = torch.randn(2, 7, d_model)
y_theirs0 = to_torch(m0)(xx, xx, xx, key_padding_mask=~keep0)[0]
y_ours0 = m0(xx, mask=key_padding(keep0, 7))
check_true("nn.MultiheadAttention: NaN for the fully padded sequence", torch.isnan(y_theirs0[1]).all())
check_true("ours: finite, and equal to the output bias there",
           torch.equal(y_ours0[1], m0.out_proj.bias.detach().expand(7, -1)))
check_close("ours == torch on the real sequence", y_ours0[0], y_theirs0[0], atol=1e-5)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · Parameters: $4\,d_{\text{model}}^2$, whatever $h$ is
#
# 000 §8.3.5: each head has three $d_{\text{model}} \times d_k$ matrices, so the $h$ heads hold
# $3 h\, d_{\text{model}} d_k = 3 d_{\text{model}}^2$ weights, plus $d_{\text{model}}^2$ for $W^O$:
# **$4 d_{\text{model}}^2$**. $h$ cancels. With biases (the original Transformer and `nn.MultiheadAttention`
# have them) add $4 d_{\text{model}}$. `mha_param_count` is that formula (with the MQA/GQA generalisation
# of section 5); below it is checked against `numel()` of real modules for every width and head count,
# with and without biases, built on the `meta` device so that even $d_{\text{model}} = 8192$ costs no memory.

# %%
show_source(mha_param_count)

# %%
widths = [64, 128, 256, 512, 768, 1024, 4096, 8192]
heads_tried = [1, 2, 4, 8, 12, 16, 32, 64]


def numel(module):
    return sum(p.numel() for p in module.parameters())


rows = []
with torch.device("meta"):
    for d in widths:
        for hh in heads_tried:
            if d % hh == 0:
                for bias in (True, False):
                    rows.append((d, hh, bias, numel(MultiHeadAttention(d, hh, bias=bias))))

# %% tags=["nbval-check-output"]
check_true(f"numel == 4·d² + 4·d (with biases) for all {sum(r[2] for r in rows)} (width, heads) pairs",
           all(n == 4 * d * d + 4 * d for d, hh, bias, n in rows if bias))
check_true("numel == 4·d² (no biases) for every pair", all(n == 4 * d * d for d, hh, bias, n in rows if not bias))
check_true("mha_param_count == numel for every row", all(mha_param_count(d, hh, bias=b) == n for d, hh, b, n in rows))
check_true("for each width, every head count gives the same numel",
           all(len({n for d2, hh, b2, n in rows if d2 == d and b2 == b}) == 1 for d in widths for b in (True, False)))
with torch.device("meta"):
    check_equal("nn.MultiheadAttention(512, 8) numel (bias=True)", numel(nn.MultiheadAttention(512, 8)),
                4 * 512 ** 2 + 4 * 512)

# %%
fig, ax = plt.subplots(figsize=(6.2, 3.6))
markers = dict(zip(heads_tried, "os^vDPX*"))
for hh in heads_tried:
    pts = [(d, n) for d, h2, b, n in rows if h2 == hh and b]
    ax.plot(*zip(*pts), marker=markers[hh], ls="none", ms=11 - heads_tried.index(hh), label=f"h = {hh}",
            alpha=0.8)
dd = torch.linspace(64, 8192, 200)
ax.plot(dd, 4 * dd ** 2 + 4 * dd, "k-", lw=1, label="4·d² + 4·d")
ax.set(xscale="log", yscale="log", xlabel="d_model", ylabel="parameters (numel)",
       title="One attention layer: every head count lands on the same curve")
ax.legend(ncol=3, fontsize=8)
ax.grid(alpha=0.3)
plt.show()

# %% [markdown]
# **The numbers in 000 §8.3.2 and §8.3.5, recomputed.** Base model: $d_{\text{model}} = 512$, $h = 8$ gives
# $d_k = d_v = 64$ (002's example $768/12 = 64$ too). $4 \cdot 512^2 = 1{,}048{,}576$ ("approximately
# 1 million"), and the large model's $4\cdot 1024^2 = 4{,}194{,}304 \approx 4.2$ million (its symbols were lost in
# extraction). These counts are the *weights only*; with the original's biases the layer has $1{,}050{,}624$
# and $4{,}198{,}400$ parameters. §8.3.5's "exactly the same as single-head attention with $d_k = d_{\text{model}}$"
# holds exactly.
#
# 000 §8.3.2 and 002 also say the *compute* stays "comparable" to one full-width head. It is in fact
# **identical**: the projections cost the same, and $h$ score matrices of $T\times T$ built from $d_k$-dimensional
# vectors cost $h \cdot T^2 d_k = T^2 d_{\text{model}}$ multiply-adds. PyTorch's `FlopCounterMode` counts the
# matmuls (we run the reference attention path so that every matmul is visible to the counter). The 000 §8.3.3
# code example's shapes ($d_{\text{model}} = 16$, $h = 4$, one sequence of 6 tokens) are recomputed too.

# %% tags=["nbval-check-output"]
check_equal("d_k for the base model (512 / 8)", 512 // 8, 64)
check_equal("d_k for d_model = 768, h = 12", 768 // 12, 64)
check_equal("4·512² (base model, weights)", mha_param_count(512, 8, bias=False), 1_048_576)
check_equal("4·1024² (big model, weights)", mha_param_count(1024, 16, bias=False), 4_194_304)
check_equal("with biases, base", mha_param_count(512, 8), 1_050_624)
check_equal("with biases, big", mha_param_count(1024, 16), 4_198_400)
check_equal("one head of width d_model has the same count", mha_param_count(512, 1), mha_param_count(512, 8))

from torch.utils.flop_counter import FlopCounterMode


def attention_flops(n_heads, t=128, d=512):
    m = MultiHeadAttention(d, n_heads)
    m.keep_weights = True                   # the reference path: plain matmuls the counter can see
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        m(torch.zeros(1, t, d))
    return counter.get_total_flops()


flops = {hh: attention_flops(hh) for hh in (1, 8, 64)}
check_equal("FLOPs, h = 1 / 8 / 64 (T = 128, d_model = 512)", list(flops.values()), [flops[1]] * 3)
check_equal("FLOPs = 2·(4·T·d² + 2·T²·d)", flops[1], 2 * (4 * 128 * 512 ** 2 + 2 * 128 ** 2 * 512))

m16 = MultiHeadAttention(16, 4)
with record_attention(m16):
    out16 = m16(torch.randn(1, 6, 16))
check_equal("000 §8.3.3 example: output shape", out16.shape, (1, 6, 16))
check_equal("000 §8.3.3 example: head attention shape", m16.last_weights.shape, (1, 4, 6, 6))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · What do the heads do? Exercise 8.6
#
# > *Implement multi-head attention with $h = 4$ and $d_{\text{model}} = 32$, apply it to "The cat sat on the
# > comfortable mat" with random embeddings from a lookup table, show one heatmap per head in a 2×2 grid, and say
# > which heads look local (near-diagonal) and which global (broad).*
#
# The vocabulary is the text's seven words (so "The" and "the" are different entries). Embeddings are a
# seeded `nn.Embedding`, the attention is the package module we just proved equal to PyTorch's, untrained.

# %%
torch.manual_seed(86)
words = "The cat sat on the comfortable mat".split()
vocab = {w: i for i, w in enumerate(words)}                 # 7 entries
embed = nn.Embedding(len(vocab), d_model)                  # N(0, 1) rows, seeded
attn86 = MultiHeadAttention(d_model, h)
ids = torch.tensor([[vocab[w] for w in words]])            # (1, 7)
with torch.no_grad(), record_attention(attn86):
    out86 = attn86(embed(ids))
W86 = attn86.last_weights[0]                                # (h, T, T) = (4, 7, 7)

# %% tags=["nbval-check-output"]
check_equal("token ids", ids.tolist(), [[0, 1, 2, 3, 4, 5, 6]])
check_equal("output shape", out86.shape, (1, 7, 32))
check_equal("weights per head", W86.shape, (4, 7, 7))
check_close("every row of every head sums to 1", W86.sum(-1), torch.ones(4, 7), atol=1e-6)

# %%
fig = heatmaps(W86, titles=[f"head {i + 1}" for i in range(h)], xlabels=words, ylabels=words, ncols=2,
               size=3.4, vmin=0, vmax=float(W86.max()))
fig.colorbar(fig.axes[0].images[0], ax=fig.axes, fraction=0.03, pad=0.03, label="attention weight")
fig.suptitle("Exercise 8.6: 4 heads, d_model = 32, random embeddings, no training\n"
             "(rows: the query word; columns: the key word it attends to)", fontsize=10, y=1.06)
plt.show()

# %% [markdown]
# Eyeballing these invites stories ("head 3 links *the* to *cat*"). Let us **measure** instead. For a head
# with weights $w_{ij}$ over $T$ tokens:
#
# * **mean attention distance** $\;\bar d = \frac1T\sum_i \sum_j w_{ij}\,|i-j|$: 0 if every token attends to
#   itself, about 1 for a previous/next-token head, and $(T^2-1)/(3T) = 16/7 \approx 2.29$ for uniform attention
#   over $T = 7$ tokens;
# * **entropy** $\;H = \frac1T\sum_i -\sum_j w_{ij}\ln w_{ij}$: 0 if each query looks at one key, $\ln T = \ln 7
#   \approx 1.95$ if it spreads evenly (fully global).
#
# A **local** head has a small distance *and* a low entropy. "Small" needs a yardstick: this model has no
# position information, so a head can only prefer nearby words by accident of their content. Shuffle the
# words and the attention pattern shuffles with them (permutation equivariance, proved in notebook 04 and
# checked once below); recomputing $\bar d$ for all $7! = 5040$ word orders gives the distance each head would
# show *by chance*. We call a head local only if its distance is below the 5th percentile of that null, and
# global if its entropy is above 90% of $\ln T$.

# %%
perms = torch.tensor(list(itertools.permutations(range(7))))            # all 5040 word orders, (P, 7)


def reordered(w, perms):
    """(h, T, T) -> (P, h, T, T): the attention of each reordered sentence, w[:, π][:, :, π] for every π."""
    rows = w[:, perms].transpose(0, 1)                                  # (P, h, T, T): rows reordered
    cols = perms[:, None, None, :].expand(-1, w.shape[0], w.shape[1], -1)
    return rows.gather(-1, cols)                                        # columns reordered the same way


def measure(w):
    """Distance, entropy, and the fraction of word orders that give a smaller distance (per head)."""
    stats = head_stats(w.double())
    null = head_stats(reordered(w.double(), perms))["distance"]         # (P, h)
    stats["null"] = null
    stats["pct"] = (null <= stats["distance"] + 1e-12).double().mean(0)
    return stats


def describe(dist, ent, pct_, t=7):
    """The rule: local = low entropy AND a distance below the 5th percentile of chance."""
    if pct_ < 0.05 and ent < 0.9 * math.log(t):
        return "LOCAL"
    kind = "global" if ent > 0.9 * math.log(t) else "focused, not local"
    return kind + (" (leans local: distance below 95% of word orders)" if pct_ < 0.05 else "")


stats86 = measure(W86)
null_d, pct = stats86["null"], stats86["pct"]
H_ratio = stats86["entropy"] / math.log(7)


for i in range(h):
    print(f"head {i + 1}: distance {stats86['distance'][i]:.2f} (uniform 2.29; "
          f"{100 * pct[i]:.0f}% of word orders give a smaller one), entropy {stats86['entropy'][i]:.2f} "
          f"= {100 * H_ratio[i]:.0f}% of ln 7  ->  {describe(stats86['distance'][i], stats86['entropy'][i], pct[i])}")

# %% [markdown]
# The permutation trick relies on equivariance. One check: feed the shuffled sentence through the module
# and compare with the reindexed matrix.

# %% tags=["nbval-check-output"]
perm = torch.tensor([3, 0, 6, 1, 5, 2, 4])
with torch.no_grad(), record_attention(attn86):
    attn86(embed(ids[:, perm]))
check_close("weights of the shuffled sentence == reindexed weights", attn86.last_weights[0],
            W86[:, perm][:, :, perm], atol=1e-6)
check_close("uniform distance for T = 7 is (T² - 1)/(3T) = 16/7", uniform_distance(7), 16 / 7, atol=1e-12)
check_true("the identity order (first permutation) reproduces the observed distances",
           torch.allclose(null_d[0], stats86["distance"], atol=1e-12))

# %% [markdown]
# For calibration, the same two statistics for heads whose behaviour we *know*: a previous-token head, a
# self head, a soft local head ($w_{ij}\propto e^{-|i-j|}$), a uniform head, and the Exercise 8.6 heads with
# their query projection scaled by 8 (sharper scores, as a trained model may learn; the widget's "W_Q scale").

# %%
t7 = torch.arange(7.0)
gap7 = (t7[:, None] - t7[None, :]).abs()
prev_head = torch.zeros(7, 7).index_put_((torch.arange(7), (torch.arange(7) - 1).clamp_min(0)), torch.tensor(1.0))
reference_heads = {
    "previous token": prev_head,
    "itself": torch.eye(7),
    "soft local e^-|i-j|": torch.softmax(-gap7, -1),
    "uniform": torch.full((7, 7), 1 / 7),
}
ref_stats = {k: head_stats(v.double()[None]) for k, v in reference_heads.items()}
sharp = MultiHeadAttention(d_model, h)
sharp.load_state_dict(attn86.state_dict())
with torch.no_grad():
    sharp.q_proj.weight.mul_(8)
    sharp.q_proj.bias.mul_(8)
with torch.no_grad(), record_attention(sharp):
    sharp(embed(ids))
W_sharp = sharp.last_weights[0]
stats_sharp = measure(W_sharp)
pct_sharp = stats_sharp["pct"]
for i in range(h):
    print(f"sharpened head {i + 1}: distance {stats_sharp['distance'][i]:.2f} "
          f"({100 * pct_sharp[i]:.0f}% of orders smaller), entropy {stats_sharp['entropy'][i]:.2f}  ->  "
          f"{describe(stats_sharp['distance'][i], stats_sharp['entropy'][i], pct_sharp[i])}")

# %%
fig, ax = plt.subplots(figsize=(6.8, 5.0), layout="constrained")
lo, hi = null_d.quantile(0.05, dim=0).min(), null_d.quantile(0.95, dim=0).max()
ax.axvspan(float(lo), float(hi), color="0.9", label="Exercise 8.6 heads: 5–95% of distances by chance")
ax.axhline(math.log(7), color="0.5", ls=":", lw=1)
ax.text(0.05, math.log(7) + 0.03, "ln 7: uniform", fontsize=8, color="0.4")
ax.axhline(0.9 * math.log(7), color="0.5", ls="--", lw=1)
ax.text(0.05, 0.9 * math.log(7) - 0.1, "90% of ln 7", fontsize=8, color="0.4")
ax.scatter(stats86["distance"], stats86["entropy"], s=70, c="C0", label="Exercise 8.6 heads", zorder=3)
ax.scatter(stats_sharp["distance"], stats_sharp["entropy"], s=70, c="C1", marker="s",
           label="same heads, W_Q × 8", zorder=3)
for i in range(h):
    offset = (5, 4) if i % 2 == 0 else (-4, -13)          # alternate, so that neighbouring labels do not collide
    ax.annotate(f"{i + 1}", (stats86["distance"][i], stats86["entropy"][i]), xytext=offset,
                textcoords="offset points", fontsize=8, color="C0")
    ax.annotate(f"{i + 1}", (stats_sharp["distance"][i], stats_sharp["entropy"][i]), xytext=offset,
                textcoords="offset points", fontsize=8, color="C1")
for name, s in ref_stats.items():
    ax.scatter(s["distance"], s["entropy"], marker="x", c="k", zorder=3)
    ax.annotate(name, (float(s["distance"][0]), float(s["entropy"][0])),
                xytext=(-40, 8) if name == "uniform" else (6, -10), textcoords="offset points", fontsize=8)
ax.set(xlabel="mean attention distance (tokens)", ylabel="mean entropy (nats)", xlim=(-0.1, 3.4),
       ylim=(-0.15, 2.15), title="Local heads live bottom-left; these random heads do not")
ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
plt.show()

# %% [markdown]
# **Answer to Exercise 8.6, from the measurements above.** All four random heads are **global**: their
# entropies are above 90% of $\ln 7$ (near-uniform weights: over 90% of the 196 weights lie within 0.1 of
# $1/7 \approx 0.14$; the few bright cells of the heatmaps are the exceptions), and their mean distances lie within 10% of the uniform value
# $16/7 \approx 2.29$. **None is local** by the rule. Some heads *lean* local (a distance smaller than for 95% of
# the word orders; see the printout), but by less than 0.2 tokens and with near-uniform entropy: a property of
# how these particular word vectors happen to be ordered, not of position. With no position information an
# untrained head cannot prefer neighbours as such; whatever structure a heatmap shows comes from word content and
# moves with the words when they are reordered. Sharpening the scores (W_Q × 8) makes the heads
# *focused* (entropy drops), still not local. Local heads (004 §15.1's "positional heads", 000 §8.3.4's "attends
# to the immediately preceding token") need position information and training: compare the calibration points
# bottom-left. Ask this question again of a trained model with positions in notebooks 09 and 10.

# %% tags=["nbval-check-output"]
check_true("every Exercise 8.6 head is global (entropy > 90% of ln 7)", (H_ratio > 0.9).all())
check_true("no Exercise 8.6 head is LOCAL by the rule (low entropy and distance below 5% of chance)",
           not any(describe(*v).startswith("LOCAL") for v in zip(stats86["distance"], stats86["entropy"], pct)))
check_true("every head's distance is within 10% of the uniform 16/7",
           ((stats86["distance"] - 16 / 7).abs() < 0.1 * 16 / 7).all())
check_true("over 90% of the 196 weights lie within 0.1 of 1/7", ((W86 - 1 / 7).abs() < 0.1).double().mean() > 0.9)
leaning = pct < 0.05
check_true("the heads that lean local do so by less than 0.2 tokens (distance > 16/7 - 0.2)",
           bool(leaning.any()) and bool((stats86["distance"][leaning] > 16 / 7 - 0.2).all()))
check_true("sharpening lowers every head's entropy", (stats_sharp["entropy"] < stats86["entropy"]).all())
check_true("calibration: previous-token and soft-local heads have low entropy and a distance below chance",
           all(float(ref_stats[k]["distance"][0]) < float(lo) and float(ref_stats[k]["entropy"][0]) < 0.9 * math.log(7)
               for k in ("previous token", "soft local e^-|i-j|")))

# %% [markdown]
# ### Two claims from 004 §6, tested
#
# **"Because they project into orthogonal subspaces of the embedding, heads don't interfere with each other"
# (004 §6.1). The text is wrong about orthogonality.** Nothing in the architecture makes the heads' subspaces
# orthogonal: each head's $W_i^Q$ reads a $d_k$-dimensional subspace of the input (the row space of its slice),
# and the principal angles between two heads' subspaces are far from 90°, both at initialisation and in
# general (training adds no orthogonality constraint). The heads are separate because they have separate
# parameters and write to separate slots of the concatenation (checked in section 1), not because of
# orthogonal subspaces.
#
# **"Multi-head attention ... is linear in V. Stacking multiple attention layers with nothing in between
# collapses to a single linear transformation" (004 §6.2). Half right.** For *fixed* weights $w_{ij}$ the output
# is linear in the values. But the weights are a softmax of the input itself, so the layer is not linear in its
# input, and a stack of attention layers does not collapse to one linear map. (The feed-forward network is still
# needed: attention only mixes tokens; it has no per-token nonlinearity. Notebook 06.)

# %%
def largest_cosines(m):
    """Largest cosine of the principal angles between the input subspaces read by each pair of heads' W_i^Q."""
    w = m.q_proj.weight.detach().double().view(m.n_heads, m.d_head, m.d_model)   # head i's rows of W^Q
    bases = torch.linalg.qr(w.transpose(1, 2))[0]            # (h, d_model, d_k): orthonormal basis per head
    i, j = torch.tensor(list(itertools.combinations(range(m.n_heads), 2))).T
    return torch.linalg.svdvals(bases[i].transpose(1, 2) @ bases[j]).amax(-1)    # one value per pair


cos_86 = largest_cosines(attn86)
cos_base = largest_cosines(MultiHeadAttention(512, 8))
print(f"Exercise 8.6 heads: largest cosine per pair {cos_86.min():.2f}–{cos_86.max():.2f} "
      f"(orthogonal would be 0)")
print(f"base model (512, 8 heads): {cos_base.min():.2f}–{cos_base.max():.2f}")

# %% tags=["nbval-check-output"]
check_true("no pair of heads reads orthogonal subspaces: every largest cosine in (0.6, 0.9), d_model=32, h=4",
           ((cos_86 > 0.6) & (cos_86 < 0.9)).all())
check_true("same for d_model=512, h=8 (all 28 pairs)", ((cos_base > 0.6) & (cos_base < 0.9)).all())

lin = MultiHeadAttention(d_model, h, bias=False)       # no biases: a linear map would satisfy f(2x) = 2 f(x)
xa, xb = torch.randn(1, 7, d_model), torch.randn(1, 7, d_model)
with torch.no_grad():
    f = lambda z: lin(z)
    check_true("not homogeneous: f(2x) != 2 f(x)", (f(2 * xa) - 2 * f(xa)).abs().max() > 1e-2)
    check_true("not additive: f(x + y) != f(x) + f(y)", (f(xa + xb) - f(xa) - f(xb)).abs().max() > 1e-2)
    two = lambda z: f(f(z))
    check_true("two stacked layers are not linear either", (two(2 * xa) - 2 * two(xa)).abs().max() > 1e-2)
    # the true part: with the queries and keys fixed, the output is linear in the value input
    check_close("linear in the values (queries/keys fixed): f(x, x, 2v) == 2 f(x, x, v)",
                lin(xa, xa, 2 * xb), 2 * lin(xa, xa, xb), atol=1e-5)

# %% [markdown]
# ### Widget: heads, layers, sentences
#
# A small random model: 2 layers of `x ← x + MultiHeadAttention(x)` with $d_{\text{model}} = 32$ and the
# embeddings seeded per word. Type a sentence (press Enter) or pick one; choose the number of heads and the
# layer; reorder the words (the patterns travel with the words: no positions); raise "W_Q scale" to sharpen
# the heads. Each title gives the head's measured distance and entropy; the headline gives the uniform values.
# Try "the the the the the the the": identical tokens, so every head is exactly uniform.

# %%
HeadsWidget().show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5 · MQA and GQA: fewer key/value heads
#
# During generation a model keeps every past token's keys and values (the **KV cache**, 002). Their size grows
# with the number of key/value heads. **Multi-query attention** (MQA) keeps one K/V head shared by all $h$
# query heads; **grouped-query attention** (GQA) keeps $g$ K/V heads, each shared by a group of $h/g$
# neighbouring query heads; $g = h$ is ordinary MHA. In the package this is `n_kv_heads = g`: $W^K$ and $W^V$
# shrink to $d_{\text{model}} \times g\,d_k$, and query head $i$ uses K/V head $\lfloor i/(h/g)\rfloor$.
#
# From scratch: GQA is MHA whose K/V projections are **tied within each group**. Build an MHA whose $W^K, W^V$
# repeat each GQA head's slice $h/g$ times; both must compute the same function.

# %%
def gqa_as_tied_mha(gqa):
    """An MHA (n_kv_heads = n_heads) computing the same function as ``gqa`` by repeating its K/V slices."""
    mha_t = MultiHeadAttention(gqa.d_model, gqa.n_heads)
    group, dk = gqa.n_heads // gqa.n_kv_heads, gqa.d_head
    with torch.no_grad():
        mha_t.q_proj.load_state_dict(gqa.q_proj.state_dict())
        mha_t.out_proj.load_state_dict(gqa.out_proj.state_dict())
        for name in ("k_proj", "v_proj"):
            src, dst = getattr(gqa, name), getattr(mha_t, name)
            dst.weight.copy_(src.weight.view(gqa.n_kv_heads, dk, -1).repeat_interleave(group, 0).reshape(-1, gqa.d_model))
            dst.bias.copy_(src.bias.view(gqa.n_kv_heads, dk).repeat_interleave(group, 0).reshape(-1))
    return mha_t


xg = torch.randn(2, 9, 64)
cmask = causal_mask(9)

# %% tags=["nbval-check-output"]
for g in (8, 4, 2, 1):
    gqa = MultiHeadAttention(64, 8, n_kv_heads=g)
    label = "MHA" if g == 8 else ("MQA" if g == 1 else f"GQA, {g} groups")
    check_close(f"{label}: n_kv_heads={g} == tied MHA (causal)", gqa(xg, mask=cmask),
                gqa_as_tied_mha(gqa)(xg, mask=cmask), atol=1e-5)
    check_equal(f"{label}: K/V weight shape", tuple(gqa.k_proj.weight.shape), (g * 8, 64))
mha8 = MultiHeadAttention(64, 8, n_kv_heads=8)
check_close("n_kv_heads = n_heads is plain MHA: equal to nn.MultiheadAttention", mha8(xg),
            to_torch(mha8)(xg, xg, xg)[0], atol=1e-5)

# %% [markdown]
# Parameters: $W^Q$ and $W^O$ keep $d_{\text{model}}^2$ each; $W^K$ and $W^V$ drop to $d_{\text{model}}\cdot g\,d_k$.
# For a LLaMA-2-70B-sized layer ($d_{\text{model}} = 8192$, 64 query heads, no biases), counted on the meta device:

# %%
gqa_rows = []
with torch.device("meta"):
    for g in (64, 8, 1):
        gqa_rows.append((g, numel(MultiHeadAttention(8192, 64, n_kv_heads=g, bias=False)),
                         mha_param_count(8192, 64, g, bias=False)))
for g, n, formula in gqa_rows:
    print(f"n_kv_heads = {g:>2}: {n:>11,} parameters ({n / gqa_rows[0][1]:.1%} of MHA)")

# %% tags=["nbval-check-output"]
check_true("numel == mha_param_count for MHA, GQA-8, MQA", all(n == f for g, n, f in gqa_rows))
check_equal("the three counts", [n for g, n, f in gqa_rows],
            [4 * 8192 ** 2, 2 * 8192 ** 2 + 2 * 8192 * 8 * 128, 2 * 8192 ** 2 + 2 * 8192 * 128])

# %% [markdown]
# ### The KV-cache table, recomputed from the module
#
# 002 gives the cache size as $2 \cdot L \cdot h \cdot d_k \cdot n$ numbers (MHA), $2 L d_k n$ (MQA) and $2 L g d_k n$
# (GQA) for one sequence of $n$ tokens; memory is that times the batch size and the bytes per number. Instead of
# trusting the formula we ask the module: `kv_heads` returns exactly the tensors a cache stores for one layer,
# and on the meta device with fp16 we read their shapes and element sizes for a 4096-token sequence without
# allocating anything.

# %%
show_source(MultiHeadAttention.kv_heads)


# %%
def kv_cache_from_module(d_model, n_heads, n_kv_heads, n_layers, seq_len, batch=1, dtype=torch.float16):
    """Bytes of the KV cache, read off the shapes of the K/V tensors one layer produces."""
    with torch.device("meta"):
        layer = MultiHeadAttention(d_model, n_heads, n_kv_heads, bias=False).to(dtype)
        k, v = layer.kv_heads(torch.empty(batch, seq_len, d_model, dtype=dtype))
    return n_layers * (k.numel() * k.element_size() + v.numel() * v.element_size()), tuple(k.shape)


MODELS = {  # name: (d_model, query heads, layers, K/V heads of the real model)
    "LLaMA-2-70B": (8192, 64, 80, 8),
    "Mistral-7B": (4096, 32, 32, 8),
}
table = []
for name, (d, hq, L, kv_real) in MODELS.items():
    for kind, g in (("MHA", hq), ("GQA", kv_real), ("MQA", 1)):
        nbytes, kshape = kv_cache_from_module(d, hq, g, L, 4096)
        table.append((name, kind, g, kshape, nbytes, kv_cache_bytes(L, g, d // hq, 4096, 1, 2)))
print(f"{'model':<12} {'kind':<4} {'kv heads':>8}  {'K per layer (B, g, n, d_k)':<28} {'bytes':>15} {'GB':>7}")
for name, kind, g, kshape, nbytes, formula in table:
    print(f"{name:<12} {kind:<4} {g:>8}  {str(kshape):<28} {nbytes:>15,} {nbytes / 1e9:>7.2f}")

# %% [markdown]
# **002 is wrong about LLaMA-2-70B's cache.** It says: with $L = 80$, $h = 64$, $d_k = 128$, $n = 4096$ in FP16
# the cache is "approximately 40 GB". **The correct value is $2\cdot80\cdot64\cdot128\cdot4096 = 5{,}368{,}709{,}120$
# numbers $\times$ 2 bytes $= 10{,}737{,}418{,}240$ bytes $\approx 10.7$ GB (10 GiB)** for one sequence, a quarter of
# the text's figure. Moreover LLaMA-2-70B does not use $h = 64$ K/V heads: as 002 itself says a few paragraphs
# later, it uses GQA with 8, so its real cache at 4096 tokens is **1.34 GB** per sequence (8× less). 40 GB is
# about what MHA would need for 4 such sequences, or GQA for 30. Two smaller slips: the formula counts cached
# *activations*, not "parameters", and it is per sequence (multiply by the batch). The GQA claim "reduces the KV
# cache by 8×" is right (64/8).

# %% tags=["nbval-check-output"]
check_true("module shapes == 002's formula 2·L·g·d_k·n·bytes, every row", all(nb == f for *_, nb, f in table))
llama = {kind: nb for name, kind, g, ks, nb, f in table if name == "LLaMA-2-70B"}
check_equal("LLaMA-2-70B, h = 64 as in 002, 4096 tokens, fp16: bytes", llama["MHA"], 10_737_418_240)
check_close("... in GB (002 says about 40)", llama["MHA"] / 1e9, 10.737418240, atol=1e-9)
check_equal("with its real 8 K/V heads (GQA): bytes", llama["GQA"], 1_342_177_280)
check_equal("GQA-8 saves exactly 8x", llama["MHA"] // llama["GQA"], 8)
check_equal("MQA saves exactly 64x", llama["MHA"] // llama["MQA"], 64)
check_true("40 GB is not within 20% of the MHA value", abs(40e9 - llama["MHA"]) > 0.2 * llama["MHA"])

# %%
seq = torch.tensor([2 ** k for k in range(9, 18)])        # 512 ... 131072 tokens
fig, ax = plt.subplots(figsize=(6.6, 3.8))
d, hq, L, kv_real = MODELS["LLaMA-2-70B"]
for kind, g, style in (("MHA, 64 K/V heads", 64, "o-"), ("GQA, 8 K/V heads (the real model)", 8, "s-"),
                       ("MQA, 1 K/V head", 1, "^-")):
    ax.plot(seq, [kv_cache_bytes(L, g, d // hq, int(n)) / 1e9 for n in seq], style, label=kind)
ax.axhline(80, color="0.5", ls="--", lw=1)
ax.text(600, 90, "80 GB: one large GPU", fontsize=8, color="0.4")
ax.plot([4096], [40], "rX", ms=10, label="002's claim (MHA, 4096 tokens): 40 GB")
ax.set(xscale="log", yscale="log", xlabel="sequence length n (tokens), batch 1, fp16", ylabel="KV cache (GB)",
       title="LLaMA-2-70B-sized KV cache: 2·L·g·d_k·n·2 bytes")
ax.set_xticks(seq[::2].tolist(), [f"{int(n):,}" for n in seq[::2]])
ax.legend(fontsize=8)
ax.grid(alpha=0.3, which="both")
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6 · Bad input gets a clear error
#
# Every error below is a `ValueError` (or `TypeError`) that says what was expected and what arrived, and each has
# a unit test in `tests/test_multihead_bad_input.py`.

# %% tags=["nbval-check-output"]
m = MultiHeadAttention(32, 4)
q5, k6 = torch.randn(2, 5, 32), torch.randn(2, 6, 32)
check_raises(ValueError, "must divide d_model", MultiHeadAttention, 30, 4)
check_raises(ValueError, "must divide n_heads", MultiHeadAttention, 32, 8, n_kv_heads=3)
check_raises(ValueError, "same length", m, q5, k6, torch.randn(2, 7, 32))
check_raises(ValueError, "d_model=32", m, torch.randn(2, 5, 24))
check_raises(ValueError, "batch sizes differ", m, q5, torch.randn(3, 6, 32))
check_raises(ValueError, "does not broadcast", m, q5, mask=torch.ones(3, 5, 5, dtype=torch.bool))
check_raises(ValueError, "key-padding mask", m, q5, k6, mask=torch.ones(2, 6, dtype=torch.bool))
check_raises(TypeError, "torch.Tensor", m, [[0.0] * 32])
_ = check_raises(ValueError, "no shared key/value heads", to_torch, MultiHeadAttention(32, 4, n_kv_heads=2))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7 · Exercises
#
# ### Exercise A (the measured half of Exercise 8.6): mean attention distance
#
# Write `mean_distance(w)`: `w` holds one attention matrix per head, shape `(h, T, T)` (rows are queries and sum
# to 1); return a tensor of shape `(h,)` with each head's mean attention distance
# $\frac1T\sum_i\sum_j w_{ij}|i-j|$, the statistic used in section 4.

# %%
from transformer_nb.exercises.multihead import attention_distance_ex, expand_kv_ex, kv_cache_ex


def mean_distance(w):
    raise NotImplementedError  # your code here


result = attention_distance_ex.check(mean_distance)

# %% [markdown]
# The checker recognises typical mistakes. Here is one: forgetting the absolute value, so that looking back and
# looking ahead cancel out.

# %% tags=["nbval-check-output"]
def signed_distance(w):
    t = w.shape[-1]
    offsets = torch.arange(t)[:, None] - torch.arange(t)[None, :]
    return (w * offsets).sum(-1).mean(-1)


res = attention_distance_ex.check(signed_distance)
check_true("the checker rejects the signed distance with the |i - j| hint", not res.passed and "|i - j|" in res.message)

# %% [markdown]
# ### Exercise B: share K/V heads (GQA)
#
# Write `expand_kv(kv, n_heads)`: `kv` has shape `(B, g, T, d_k)` with $g$ K/V heads; return `(B, n_heads, T, d_k)`
# in which query head $i$ sees K/V head $\lfloor i / (n_{\text{heads}}/g) \rfloor$ (groups of neighbouring query heads).

# %%
def expand_kv(kv, n_heads):
    raise NotImplementedError  # your code here


result = expand_kv_ex.check(expand_kv)

# %% [markdown]
# A classic bug: `Tensor.repeat` tiles whole copies, so query head $i$ gets K/V head $i \bmod g$.

# %% tags=["nbval-check-output"]
res = expand_kv_ex.check(lambda kv, n_heads: kv.repeat(1, n_heads // kv.shape[1], 1, 1))
check_true("the checker names the tiling bug", not res.passed and "mod" in res.message)

# %% [markdown]
# ### Exercise C: KV-cache size
#
# Write `cache_bytes(n_layers, n_heads, n_kv_heads, d_head, seq_len, batch, bytes_per_value)`: the memory in bytes
# that a KV cache takes. (Not every argument is needed.)

# %%
def cache_bytes(n_layers, n_heads, n_kv_heads, d_head, seq_len, batch, bytes_per_value):
    raise NotImplementedError  # your code here


result = kv_cache_ex.check(cache_bytes)

# %% [markdown]
# The checker catches, among others, counting the query heads instead of the K/V heads:

# %% tags=["nbval-check-output"]
res = kv_cache_ex.check(lambda L, hq, g, dh, n, b, nb: 2 * L * hq * dh * n * b * nb)
check_true("the checker names the query-heads mistake", not res.passed and "query heads" in res.message)

# %% [markdown]
# Solutions are revealed only on purpose: `attention_distance_ex.show_solution()`, `expand_kv_ex.show_solution()`,
# `kv_cache_ex.show_solution()`.
#
# ## Summary: where the texts are wrong or imprecise
#
# | text | claim | correct | shown in |
# |---|---|---|---|
# | 002, KV cache | LLaMA-2-70B ($L$=80, $h$=64, $d_k$=128, $n$=4096, FP16): "approximately 40 GB" | **10.7 GB** (10 GiB) per sequence with $h$=64; **1.34 GB** with the model's real 8 K/V heads | section 5 |
# | 002, KV cache | the cache "requires $2Lhd_kn$ parameters" | cached *values* (activations), per sequence; × batch × bytes for memory | section 5 |
# | 004 §6.1 | heads "project into orthogonal subspaces" | no orthogonality: largest principal-angle cosines between heads 0.6–0.9 | section 4 |
# | 004 §6.2 | attention is linear in V, so stacked attention layers collapse to one linear map | linear in V only for fixed weights; the layer and stacks are nonlinear | section 4 |
# | 000 §8.3.2, 002 | $h$ heads cost "comparable" compute to one full-width head | identical FLOPs | section 3 |
# | 000 §8.3.5 | $4d_{\text{model}}^2$ per layer | weights only; $+4d_{\text{model}}$ biases in the original and in `nn.MultiheadAttention` | section 3 |
#
# Not checkable in code, but worth knowing: 000 §8.3.4 credits Voita et al. (2019) with pruning 8 of 12 heads in
# BERT; the BERT head-pruning study is Michel et al. (2019, "Are Sixteen Heads Really Better than One?"), while
# Voita et al. pruned the encoder heads of a translation Transformer.
