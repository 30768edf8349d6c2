# %% [markdown] slideshow={"slide_type": "slide"}
# # 04 · Positional encodings: sinusoidal, learned, ALiBi
#
# Attention treats its input as a *set*: shuffle the tokens and the outputs are shuffled the same
# way, nothing more. This notebook proves that exactly, then restores word order three ways and
# checks every claim the texts make about them:
#
# 1. **Permutation equivariance**, proved numerically, and broken once positions (or a causal mask) are added.
# 2. **Sinusoidal encodings**: the table, its fingerprints, the cosine-similarity structure
#    (Exercise 8.7) and the offset rotation (Exercise 8.3, a guided derivation).
# 3. **Learned positions** and their hard length limit.
# 4. **ALiBi**: slopes for 4, 6, 8, 12, 16 heads against Press et al. (2022), the bias inside the
#    package's attention.
# 5. **The comparison table** of 000 §8.4.6, regenerated from code where code can say it.
# 6. **Exercises** (auto-checked): 8.3, 8.7 and the ALiBi slopes.
#
# **Serves:** 000 §8.4 (8.4.1, 8.4.2, 8.4.3, 8.4.5, 8.4.6), Exercises 8.3 and 8.7; 001 §19.2;
# 002 "Positional Encoding"; 003 "Positional Encoding"; 004 §4.2. RoPE (000 §8.4.4, Ex. 8.10) is
# notebook 05.
#
# **Runtime on 2 CPU cores:** quick ~20 s, full ~25 s, kernel start included (nothing here trains).

# %%
# %matplotlib inline
import math
from fractions import Fraction

import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb import check_close, check_equal, check_raises, check_true, pick, setup, show_source
from transformer_nb.block import EncoderLayer
from transformer_nb.multihead import MultiHeadAttention, merge_heads, split_heads
from transformer_nb.plotting import heatmap, heatmaps, plot_curves
from transformer_nb.positional import (ALiBi, LearnedPositionalEmbedding, SinusoidalPositionalEncoding,
                                       alibi_bias, alibi_slopes, sinusoid_frequencies, sinusoidal_encoding)
from transformer_nb.rope import RoPE, apply_rope
from transformer_nb.widgets.positional import AlibiExplorer, SinusoidFingerprint

env = setup()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · Attention without positions cannot see word order
#
# Let $P$ be a $T\times T$ permutation matrix and $X$ the $T\times d$ input. Self-attention computes
# $Q = XW^Q$, $K = XW^K$, $V = XW^V$ and $\mathrm{softmax}(QK^\top/\sqrt{d_k})V$. Permuting the rows of
# $X$ permutes the rows of $Q, K, V$; the score matrix becomes $P\,S\,P^\top$; a row-wise softmax
# commutes with that; and $P\,A\,P^\top\,P V = P\,(AV)$. So
#
# $$\mathrm{Attn}(PX) = P\,\mathrm{Attn}(X)\qquad\text{(permutation-equivariant)}.$$
#
# The feed-forward network and the norms act on each row separately, so a whole block inherits the
# property. We check it for the package's `MultiHeadAttention` and `EncoderLayer` on a random
# permutation.

# %% tags=["nbval-check-output"]
d_model, n_heads, T = 32, 4, 9
mha = MultiHeadAttention(d_model, n_heads).eval()
block = EncoderLayer(d_model, n_heads, d_ff=64).eval()
x = torch.randn(2, T, d_model)
perm = torch.randperm(T)

with torch.no_grad():
    for name, f in (("MultiHeadAttention", mha), ("EncoderLayer", block)):
        out, out_perm = f(x), f(x[:, perm])
        check_close(f"{name}: max |f(PX) - P f(X)|", (out_perm - out[:, perm]).abs().max(), 0.0, atol=1e-5)
        check_true(f"{name}: f(PX) differs from f(X) (equivariant, not invariant)",
                   (out_perm - out).abs().max() > 1e-2)
        check_close(f"{name}: mean over positions is invariant", (out_perm.mean(1) - out.mean(1)).abs().max(),
                    0.0, atol=1e-5)

# %% [markdown]
# **001 §19.2.1 says** self-attention is "permutation-*invariant* … multi-head attention produces the
# same output regardless of the order". **That is imprecise:** the output is *permuted* along with
# the input (equivariant), as the second line of each check shows; only an order-free summary such
# as the mean over positions is invariant. 000, 002, 003 and 004 say "equivariant", which is right.
#
# The consequence the texts draw ("dog bites man" = "man bites dog") is exact. Two sentences made of
# the same words give *bit-for-bit* the same vector for each word, wherever it stands, until
# positions are added:

# %% tags=["nbval-check-output"]
vocab = {w: i for i, w in enumerate(["the", "dog", "bites", "man"])}
emb = nn.Embedding(len(vocab), d_model)
a = torch.tensor([[vocab[w] for w in "the dog bites the man".split()]])
b = torch.tensor([[vocab[w] for w in "the man bites the dog".split()]])
pos = SinusoidalPositionalEncoding(d_model, max_len=64)

with torch.no_grad():
    out_a, out_b = block(emb(a)), block(emb(b))
    check_close("no positions: 'dog' in A vs 'dog' in B", (out_a[0, 1] - out_b[0, 4]).abs().max(), 0.0, atol=1e-5)
    check_close("no positions: 'man' in A vs 'man' in B", (out_a[0, 4] - out_b[0, 1]).abs().max(), 0.0, atol=1e-5)
    pa, pb = block(pos(emb(a))), block(pos(emb(b)))
    check_true("with sinusoidal positions, 'dog' in A differs from 'dog' in B", (pa[0, 1] - pb[0, 4]).abs().max() > 1e-2)
    check_true("with positions, attention is no longer equivariant",
               (block(pos(x))[:, perm] - block(pos(x[:, perm]))).abs().max() > 1e-2)

# %% [markdown]
# **One exception the texts leave out.** 000 §8.4.1 says that learning positions without an encoding
# is "mathematically impossible … no amount of training data" can do it. That holds for attention
# *without a mask* (an encoder). A **causal mask is itself positional**: query $t$ sees exactly
# $t+1$ keys. Feed a distinct first token followed by one token repeated 8 times: without a mask the
# 8 repeats get bit-identical outputs; with the causal mask each repeat gets a different output (its
# share of attention on the first token is $1/(1 + t\,c)$ for some constant $c$), so position can be
# read off. Decoder-only language models trained with *no* positional encoding do learn position
# this way (Haviv et al., 2022, "Transformer Language Models without Positional Encodings Still Learn
# Positional Information"). Positions are still added in practice; they just are not the only source.

# %% tags=["nbval-check-output"]
with torch.no_grad():
    first, repeated = torch.randn(1, 1, d_model), torch.randn(1, 1, d_model)
    seq = torch.cat([first, repeated.expand(1, T - 1, d_model)], dim=1)      # (1, 9, d): A B B B B B B B B
    rep_free, rep_causal = mha(seq)[0, 1:], mha(seq, is_causal=True)[0, 1:]  # outputs of the 8 repeats
    check_close("no mask: max difference between the outputs of the 8 repeated tokens",
                (rep_free - rep_free[0]).abs().max(), 0.0, atol=1e-5)
    check_true("causal mask: all 8 repeats get different outputs (closest pair > 1e-3 apart)",
               torch.pdist(rep_causal).min() > 1e-3)
    check_true("causal mask: f(PX) ≠ P f(X), no longer permutation-equivariant",
               (mha(x[:, perm], is_causal=True) - mha(x, is_causal=True)[:, perm]).abs().max() > 1e-2)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · Sinusoidal encodings
#
# For position $pos$ and pair index $i = 0,\dots,d_{model}/2-1$ (001 §19.2.2, 000 Eq. in §8.4.2):
#
# $$PE(pos, 2i) = \sin(pos\,\omega_i),\qquad PE(pos, 2i+1) = \cos(pos\,\omega_i),\qquad
# \omega_i = 10000^{-2i/d_{model}}.$$
#
# First from scratch, straight from the formula, one number at a time; then the package's vectorised
# version must agree.

# %%
def pe_from_scratch(n_positions, d_model):
    rows = []
    for p in range(n_positions):
        row = []
        for i in range(d_model // 2):
            angle = p / 10000 ** (2 * i / d_model)
            row += [math.sin(angle), math.cos(angle)]
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float64)


# %% tags=["nbval-check-output"]
T7, D7 = 256, 128                      # Exercise 8.7's sizes
pe = sinusoidal_encoding(T7, D7)
check_equal("shape", pe.shape, (T7, D7))
check_close("max |package - from scratch|", (pe.double() - pe_from_scratch(T7, D7)).abs().max(), 0.0, atol=1e-6)

# %%
show_source(sinusoidal_encoding)

# %% [markdown]
# **Exercise 8.7, visualisation 1: the table.** Each *column* below is one position's fingerprint
# (we draw the table transposed, positions along the x-axis). The sin dimensions $2i$ and the cos
# dimensions $2i+1$ are drawn in separate panels, because interleaved they would show as stripes.
# The low pairs (fast) flip sign every few positions; the high pairs (slow) barely move over 256
# positions: sin stays near 0 (white) and cos near 1 (red).

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 3.6), sharey=True)
for ax, (name, cols) in zip(axes, (("sin: PE(pos, 2i)", pe[:, 0::2]), ("cos: PE(pos, 2i+1)", pe[:, 1::2]))):
    heatmap(cols.T, ax=ax, cmap="RdBu_r", vmin=-1, vmax=1, xlabel="position pos",
            ylabel="pair i (frequency ω_i, fast → slow)" if ax is axes[0] else None,
            title=name, colorbar=ax is axes[1])
fig.suptitle(f"sinusoidal PE, T={T7}, d_model={D7}: each column is one position's fingerprint", y=1.0)
fig.tight_layout()
plt.show()

# %% [markdown]
# Drag the sliders: **position** moves the black line (whose column is the fingerprint on the right),
# **pair i** picks one sin/cos pair and shows how fast it turns. Low $i$: wavelength $2\pi$, a
# "second hand"; high $i$: a wavelength of thousands of positions, an "hour hand".

# %%
SinusoidFingerprint().show()

# %% [markdown]
# ### The texts' numbers for sinusoids, recomputed
#
# * 000 §8.4.2 prints the norm of PE(0) and PE(127) for $T=128$, $d_{model}=64$ (no value given).
#   Each pair contributes $\sin^2+\cos^2 = 1$, so **every** position has norm $\sqrt{d_{model}/2}$,
#   $\sqrt{32} = 5.657$.
# * 000: dimension 0 has frequency 1 (period $2\pi$); dimension $d_{model}-2$ has frequency
#   $10000^{-(d_{model}-2)/d_{model}}$.
# * 001: values bounded in $[-1, 1]$; every position gets a unique pattern.

# %% tags=["nbval-check-output"]
pe128 = sinusoidal_encoding(128, 64)
check_equal("000's example: PE shape", pe128.shape, (128, 64))
check_close("‖PE(0)‖", pe128[0].norm(), math.sqrt(32), atol=1e-5)
check_close("‖PE(127)‖", pe128[127].norm(), math.sqrt(32), atol=1e-5)
check_close("max over all rows of |‖PE(p)‖ - sqrt(d/2)|", (pe128.norm(dim=1) - math.sqrt(32)).abs().max(), 0.0, atol=1e-5)
w = sinusoid_frequencies(512)
check_close("ω_0 (dimension 0)", w[0], 1.0, atol=1e-12)
check_close("ω_255 (dimension d-2 = 510), d_model=512", w[-1], 10000 ** (-510 / 512), atol=1e-15)
check_true("all values in [-1, 1]", pe.abs().max() <= 1.0)
P = sinusoidal_encoding(2048, 128).double()
dist = torch.cdist(P, P) + torch.diag(torch.full((2048,), float("inf"), dtype=torch.float64))
check_true("2048 positions, d_model=128: all fingerprints distinct (closest two > 1 apart)", dist.min() > 1.0)

# %% [markdown]
# **002 says** the wavelengths run "from $2\pi$ (for $i=0$) to $10000\cdot2\pi$ (for
# $i=d_{model}/2-1$)" (the original paper says the same). **The last wavelength is
# $2\pi\cdot10000^{(d_{model}-2)/d_{model}}$, not $10000\cdot2\pi$:** the geometric progression stops
# one step short of 10000. For $d_{model}=512$ that is $60{,}611$ instead of $62{,}832$ (3.5% less);
# for $d_{model}=64$ it is $47{,}117$ (25% less). Only as $d_{model}\to\infty$ is the text exact.

# %% tags=["nbval-check-output"]
for d in (512, 64):
    longest = 2 * math.pi / sinusoid_frequencies(d)[-1]
    check_close(f"d_model={d}: longest wavelength", longest, 2 * math.pi * 10000 ** ((d - 2) / d), atol=1e-6, rtol=1e-12)
    check_true(f"d_model={d}: it is NOT 10000·2π (gap > 3%)", abs(longest / (2 * math.pi * 10000) - 1) > 0.03)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · Similarity depends on the offset only (Exercise 8.7)
#
# **Visualisation 2:** cosine similarity between PE(0) and PE(k), $k = 0,\dots,128$, and the whole
# $256\times256$ similarity matrix.

# %%
unit = pe.double() / pe.double().norm(dim=-1, keepdim=True)
sim = unit @ unit.T                                     # (256, 256) cosine similarities
ks = torch.arange(129)
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
plot_curves({"cos(PE(0), PE(k))": (ks, sim[0, :129])}, xlabel="offset k", ylabel="cosine similarity",
            title="similarity to position 0", ax=axes[0])
heatmap(sim, ax=axes[1], cmap="viridis", xlabel="position j", ylabel="position i",
        title="cos(PE(i), PE(j)): constant along diagonals")
fig.tight_layout()
plt.show()

# %% [markdown]
# The texts say the similarity "depends **primarily** on $|i-j|$". It depends on it **exactly**:
# $PE(i)\cdot PE(j) = \sum_k [\sin i\omega_k \sin j\omega_k + \cos i\omega_k\cos j\omega_k]
# = \sum_k \cos((i-j)\omega_k)$, and every norm is $\sqrt{d/2}$, so
#
# $$\cos\big(PE(i), PE(j)\big) = \frac{2}{d_{model}}\sum_{k=0}^{d_{model}/2-1}\cos\big((i-j)\,\omega_k\big).$$
#
# Quantitatively: every one of the $256^2$ pairwise similarities equals the similarity of PE(0) and
# PE($|i-j|$) up to float32 rounding (the exercise's offset *average* is checked in §7). The
# hint of Exercise 8.7 says the similarity "should decrease roughly monotonically for small
# distances": it decreases strictly up to offset 11, then wobbles on a downward trend.

# %% tags=["nbval-check-output"]
i, j = torch.meshgrid(torch.arange(T7), torch.arange(T7), indexing="ij")
by_offset = sim[0][(i - j).abs()]                       # sim(0, |i-j|) for every pair
check_close("max over all pairs |sim(i,j) - sim(0,|i-j|)|", (sim - by_offset).abs().max(), 0.0, atol=1e-6)
closed = (2 / D7) * torch.cos(ks[:, None].double() * sinusoid_frequencies(D7)).sum(-1)
check_close("max |sim(0,k) - (2/d)·Σ cos(k·ω_i)|, k ≤ 128", (sim[0, :129] - closed).abs().max(), 0.0, atol=1e-6)
rises = ((closed[1:] - closed[:-1]) > 0).nonzero().flatten()
check_equal("first offset k where sim(0, k+1) > sim(0, k)", int(rises[0]), 11)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · A shift by k is a rotation (Exercise 8.3, a guided derivation)
#
# 000 §8.4.2, 001 and 002 claim: for a fixed offset $k$ there is a **fixed** $2\times2$ matrix that maps
# the pair $[PE(pos,2i), PE(pos,2i+1)]$ to $[PE(pos+k,2i), PE(pos+k,2i+1)]$ for *every* $pos$, and it
# is a rotation. We verify each step numerically before you write the matrix yourself (§7).
#
# **Step 1: the angle-addition formulas**, with $a = pos\cdot\omega$ and $b = k\cdot\omega$:
# $\sin(a+b) = \sin a\cos b + \cos a\sin b$, $\cos(a+b) = \cos a\cos b - \sin a\sin b$.
# Both right-hand sides are *linear* in $(\sin a, \cos a)$ with coefficients that involve $b$ only.

# %% tags=["nbval-check-output"]
g = torch.Generator().manual_seed(1)
A, B = torch.rand(1000, generator=g, dtype=torch.float64) * 100, torch.rand(1000, generator=g, dtype=torch.float64) * 100
check_close("max |sin(a+b) - (sin a cos b + cos a sin b)|",
            (torch.sin(A + B) - (torch.sin(A) * torch.cos(B) + torch.cos(A) * torch.sin(B))).abs().max(), 0.0, atol=1e-12)
check_close("max |cos(a+b) - (cos a cos b - sin a sin b)|",
            (torch.cos(A + B) - (torch.cos(A) * torch.cos(B) - torch.sin(A) * torch.sin(B))).abs().max(), 0.0, atol=1e-12)

# %% [markdown]
# **Step 2: let the data find the matrix.** Without writing any formula, fit the $2\times2$ matrix $M$
# with least squares so that $M\,[PE(pos,2i), PE(pos,2i+1)]^\top \approx [PE(pos+k,2i), PE(pos+k,2i+1)]^\top$
# over positions $0..99$. If the claim holds, the fit is *exact* (residual 0).
#
# **Step 3: the same $M$ from a different window** ($pos = 1000..1099$): independent of $pos$.
#
# **Step 4: $M$ is a rotation:** $M^\top M = I$ and $\det M = +1$.
#
# **Step 5: offsets compose:** $M(k_1)\,M(k_2) = M(k_1+k_2)$; and one block per pair, stacked
# block-diagonally, moves the *whole* vector PE(pos) to PE(pos+k).

# %% tags=["nbval-check-output"]
D3, pair, k = 16, 3, 5
table = sinusoidal_encoding(1200, D3).double()   # float32 table read back in float64
exact = lambda ps: torch.stack([torch.sin(ps * sinusoid_frequencies(D3)[pair]), torch.cos(ps * sinusoid_frequencies(D3)[pair])], -1)


def fit_offset_matrix(start, k, n=100):
    ps = torch.arange(start, start + n, dtype=torch.float64)
    X, Y = exact(ps), exact(ps + k)                       # (n, 2) rows: [sin, cos]
    Mt = torch.linalg.lstsq(X, Y).solution                # solves X @ Mᵀ = Y
    return Mt.T, (X @ Mt - Y).abs().max()


M_fit, resid = fit_offset_matrix(0, k)
M_far, resid_far = fit_offset_matrix(1000, k)
check_close("step 2: residual of the linear fit (positions 0..99)", resid, 0.0, atol=1e-12)
check_close("step 3: max |M(pos 0..99) - M(pos 1000..1099)|", (M_fit - M_far).abs().max(), 0.0, atol=1e-12)
check_close("step 4: max |MᵀM - I|", (M_fit.T @ M_fit - torch.eye(2, dtype=torch.float64)).abs().max(), 0.0, atol=1e-12)
check_close("step 4: det M", torch.linalg.det(M_fit), 1.0, atol=1e-12)
check_close("step 5: max |M(2)·M(3) - M(5)|", (fit_offset_matrix(0, 2)[0] @ fit_offset_matrix(0, 3)[0] - M_fit).abs().max(),
            0.0, atol=1e-12)
blocks = torch.block_diag(*[torch.linalg.lstsq(
    torch.stack([table[:100, 2 * q], table[:100, 2 * q + 1]], -1),
    torch.stack([table[k:100 + k, 2 * q], table[k:100 + k, 2 * q + 1]], -1)).solution.T for q in range(D3 // 2)])
check_close("step 5: max over pos |blockdiag(M_i) PE(pos) - PE(pos+k)| (float32 table)",
            (table[:1000] @ blocks.T - table[k:1000 + k]).abs().max(), 0.0, atol=1e-5)

# %% [markdown]
# Geometrically: each pair $(\sin pos\,\omega, \cos pos\,\omega)$ walks around the unit circle, one
# step of angle $\omega$ per position. A shift by $k$ is the same turn of $k\omega$ wherever you start.
# The arrows below (pair $i=3$ of $d_{model}=16$, $k=5$) all span the same angle.

# %%
fig, axes = plt.subplots(1, 2, figsize=(9, 4.2))
for ax, q in zip(axes, (3, 1)):
    om = float(sinusoid_frequencies(D3)[q])
    ps = torch.arange(0, 60, dtype=torch.float64)
    pts = torch.stack([torch.sin(ps * om), torch.cos(ps * om)], -1)
    ax.plot(pts[:, 0], pts[:, 1], ".", color="0.6", ms=4)
    for p0, color in zip((0, 9, 23, 33), ("tab:blue", "tab:orange", "tab:green", "tab:red")):
        ang = torch.tensor([p0, p0 + k], dtype=torch.float64) * om
        (s0, c0), (s1, c1) = torch.stack([torch.sin(ang), torch.cos(ang)], -1).tolist()
        ax.annotate("", xy=(s1, c1), xytext=(s0, c0), arrowprops=dict(arrowstyle="->", color=color, lw=1.8))
        ax.text(s0 * 1.15, c0 * 1.15, f"{p0}", color=color, ha="center", va="center", fontsize=8)
    ax.set_aspect("equal")
    ax.set_xlim(-1.3, 1.3)
    ax.set_ylim(-1.3, 1.3)
    ax.set_xlabel("PE(pos, 2i) = sin")
    ax.set_ylabel("PE(pos, 2i+1) = cos")
    ax.set_title(f"pair i={q}: ω={om:.3g}, pos → pos+{k}")
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5 · Learned positions and their hard limit
#
# A learned table has one trained row per position: $T_{max}\cdot d_{model}$ parameters (000
# §8.4.3, Table 8.1). BERT: $512\times768$; GPT-2: $1024\times768$. A position past the table has no
# row at all. `nn.Embedding` would answer with an opaque `IndexError`; the package's module says what
# went wrong, also when a KV-cache `offset` pushes the positions past the end.

# %%
show_source(LearnedPositionalEmbedding)

# %% tags=["nbval-check-output"]
for name, t_max, d in (("BERT-base", 512, 768), ("GPT-2 small", 1024, 768)):
    n = sum(p.numel() for p in LearnedPositionalEmbedding(t_max, d).parameters())
    check_equal(f"{name}: learned position parameters = T_max·d_model", n, t_max * d)
lpe = LearnedPositionalEmbedding(512, 64)
check_equal("T = 512 fits", lpe(torch.zeros(1, 512, 64)).shape, (1, 512, 64))
check_raises(ValueError, "max_len=512", lpe, torch.zeros(1, 513, 64))
check_raises(ValueError, "max_len=512", lpe, torch.zeros(1, 500, 64), offset=13)
msg = check_raises(IndexError, "index out of range", nn.Embedding(512, 64), torch.tensor([512]))

# %% [markdown]
# The sinusoidal *module* keeps a finite buffer too and refuses to run past it, but that limit is an
# implementation detail: the *formula* gives any position, so rebuilding the table longer needs no
# training. That is the difference between "limited" and "no" extrapolation in Table 8.1.

# %% tags=["nbval-check-output"]
spe = SinusoidalPositionalEncoding(64, max_len=512)
check_raises(ValueError, "max_len=512", spe, torch.zeros(1, 513, 64))
check_equal("the formula itself: 10,000 positions", sinusoidal_encoding(10_000, 64).shape, (10_000, 64))
check_equal("parameters of SinusoidalPositionalEncoding", sum(p.numel() for p in spe.parameters()), 0)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6 · ALiBi: a linear penalty on distance
#
# ALiBi (Press et al., 2022) adds no position vector anywhere. Head $h$ adds $-m_h\,|i-j|$ to the score
# of query $i$ and key $j$ (000 §8.4.5, 002):
#
# $$\mathrm{softmax}\Big(\frac{q_i^\top k_j}{\sqrt{d_k}} - m_h\,|i-j|\Big).$$
#
# **The slopes, from the paper and its released code:** for $n$ heads with $n$ a power of 2, the
# geometric sequence that *starts* at $2^{-8/n}$ with *ratio* $2^{-8/n}$, so head $h$ gets
# $m_h = 2^{-8h/n}$; 8 heads: $\tfrac12, \tfrac14, \dots, \tfrac1{256}$. For other $n$, take the $n_0$
# slopes of the largest power of 2 $n_0 \le n$, then append the 1st, 3rd, 5th, … slopes of $2n_0$ heads
# until there are $n$.

# %%
show_source(alibi_slopes)


# %% tags=["nbval-check-output"]
def expected_log2_slopes(n):
    """The definition, in exact fractions: log2 of each head's slope."""
    n0 = 2 ** (n.bit_length() - 1)
    base = [Fraction(-8 * h, n0) for h in range(1, n0 + 1)]
    extra = [Fraction(-8 * h, 2 * n0) for h in range(1, 2 * n0 + 1, 2)][: n - n0]
    return base + extra


for n in (4, 6, 8, 12, 16):
    got = [Fraction(x).limit_denominator(64) for x in torch.log2(alibi_slopes(n)).tolist()]
    check_equal(f"n={n:2d}: log2 slopes", " ".join(str(f) for f in got), " ".join(str(f) for f in expected_log2_slopes(n)))

# %% [markdown]
# **Every statement 000 §8.4.5 makes about the slopes, checked** (the text's "head 2 uses $2^{-2/h}$"
# lost a symbol in extraction; from "geometric sequence" it must be $2^{-2\cdot8/h}$):
#
# | statement (000 §8.4.5) | powers of 2 (4, 8, 16) | 6 and 12 heads |
# |---|---|---|
# | head 1 uses $2^{-8/h}$ | true | false (head 1 uses $2^{-8/n_0}$) |
# | head 2 uses $2^{-16/h}$ | true | false |
# | "up to head $h$ which uses slope $2^{-1}=0.5$" | **false**: head $h$ uses $2^{-8} = 1/256$ | false |
# | the slopes form a fixed geometric sequence | true | false (two interleaved sequences) |
# | zero additional parameters | true | true |
#
# **The text says the last head's slope is $2^{-1} = 0.5$. The correct value is $2^{-8} = 0.00390625$
# for every power-of-2 head count**; 0.5 is the *first* head's slope when $h = 8$. The sequence runs
# from the steepest slope to the flattest, not the other way round. The next cell proves each row.

# %% tags=["nbval-check-output"]
for n in (4, 8, 16, 6, 12):
    s = alibi_slopes(n)
    power = n & (n - 1) == 0
    ratios = s[1:] / s[:-1]
    check_equal(f"n={n:2d}: head 1 = 2^(-8/n)", bool(torch.isclose(s[0], torch.tensor(2 ** (-8 / n), dtype=torch.float64))), power)
    check_equal(f"n={n:2d}: head 2 = 2^(-16/n)", bool(torch.isclose(s[1], torch.tensor(2 ** (-16 / n), dtype=torch.float64))), power)
    check_equal(f"n={n:2d}: last head = 0.5 (the text's claim)", bool(torch.isclose(s[-1], torch.tensor(0.5, dtype=torch.float64))), False)
    check_equal(f"n={n:2d}: geometric (constant ratio)", bool(torch.allclose(ratios, ratios[0].expand_as(ratios))), power)
    check_equal(f"n={n:2d}: parameters of ALiBi(n)", sum(p.numel() for p in ALiBi(n).parameters()), 0)
check_close("8 heads: last head's slope", alibi_slopes(8)[-1], 2 ** -8, atol=1e-15)

# %% [markdown]
# The bias matrices for 4 of the 8 heads of an 8-head model, and the slopes for 8, 12 and 16 heads.
# With 12 heads the four extra slopes fall *between* the 8-head ones (orange).

# %%
bias8 = alibi_bias(16, 8)
fig = heatmaps([bias8[h] for h in (0, 1, 3, 7)], titles=[f"head {h + 1}: m = 1/{int(round(1 / float(alibi_slopes(8)[h])))}"
                                                        for h in (0, 1, 3, 7)], ncols=4, size=2.8, cmap="magma",
               vmin=float(bias8.min()), vmax=0.0)
for ax in fig.axes[:4]:
    ax.set_xticks(range(0, 16, 5))
    ax.set_yticks(range(0, 16, 5))
    ax.set_xlabel("key j")
fig.axes[0].set_ylabel("query i")
fig.suptitle(f"ALiBi bias -m·|i-j| (rows: query i, columns: key j), T=16, one colour scale from {float(bias8.min()):g} (black) to 0",
             y=1.04)
plt.show()

# %%
fig, ax = plt.subplots(figsize=(7, 3.4))
for n, marker in ((8, "o"), (12, "s"), (16, "^")):
    s = alibi_slopes(n)
    n0 = 2 ** (n.bit_length() - 1)
    ax.scatter(torch.log2(s[:n0]), [n] * n0, marker=marker, color="tab:blue")
    ax.scatter(torch.log2(s[n0:]), [n] * (n - n0), marker=marker, color="tab:orange")
ax.set_yticks([8, 12, 16])
ax.set_xlabel("log2(slope)")
ax.set_ylabel("number of heads")
ax.set_title("ALiBi slopes: geometric base (blue), interpolated extras (orange)")
ax.grid(alpha=0.3)
plt.show()

# %% [markdown]
# **ALiBi inside attention.** `alibi_bias(T, h)` is an additive float mask of shape $(h, T, T)$, so
# it goes straight into the package's attention as `mask=`; with `is_causal=True` the future is
# blocked on top. We recompute the same output by hand from the formula. Two more facts: with equal
# content scores the weights fall strictly with distance (the recency bias, 002: "closer tokens
# receive higher attention scores"); and the paper's implementation adds $m\cdot j$ (key index only)
# instead of $-m(i-j)$. Under a causal mask the two differ by a constant per row, which softmax
# ignores.

# %% tags=["nbval-check-output"]
Ta, ha = 10, 8
mha8 = MultiHeadAttention(32, ha).eval()
xa = torch.randn(2, Ta, 32)
bias = alibi_bias(Ta, ha)
with torch.no_grad():
    out = mha8(xa, mask=bias, is_causal=True)
    q, k, v = (split_heads(p(xa), ha) for p in (mha8.q_proj, mha8.k_proj, mha8.v_proj))
    scores = q @ k.transpose(-2, -1) / math.sqrt(32 // ha) + bias
    scores = scores.masked_fill(~torch.ones(Ta, Ta, dtype=torch.bool).tril(), float("-inf"))
    by_hand = mha8.out_proj(merge_heads(scores.softmax(-1) @ v))
check_close("max |MHA(mask=alibi_bias, causal) - formula by hand|", (out - by_hand).abs().max(), 0.0, atol=1e-5)

causal = torch.ones(Ta, Ta, dtype=torch.bool).tril()
w_alibi = (alibi_bias(Ta, ha).double().masked_fill(~causal, float("-inf"))).softmax(-1)
last = w_alibi[:, -1, :]                                  # the last query over keys 0..T-1
check_true("equal content: weights rise strictly toward the query (every head)", (last[:, 1:] > last[:, :-1]).all())
fairseq = (alibi_slopes(ha)[:, None, None] * torch.arange(Ta, dtype=torch.float64)).expand(ha, Ta, Ta)
check_close("softmax(m·j) = softmax(-m·(i-j)) under a causal mask",
            (fairseq.masked_fill(~causal, float("-inf")).softmax(-1) - w_alibi).abs().max(), 0.0, atol=1e-12)

# %% [markdown]
# Change the number of heads: the slopes (left) and how one query spreads its attention over the
# earlier tokens when the content scores are all equal (right). Steep heads look at the last few
# tokens; flat heads see almost uniformly.

# %%
AlibiExplorer().show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7 · Table 8.1, regenerated from code
#
# 000 §8.4.6 compares the four schemes. Three of its columns can be *measured*:
#
# * **Parameters:** `numel` of each module ($d_{model}=512$, $T_{max}=512$, 8 heads of 64).
# * **Absolute or relative:** the *shift test*. Put a query with content $a$ at position $i$ and a key
#   with content $b$ at $j$, compute the score, then move both by $s$. A relative scheme gives the same
#   score for every $i, j, s$.
# * **Runs past the training length** (here 512 → 1024): whether a longer input works or raises. For
#   sinusoids and RoPE the table is simply recomputed longer (no training involved); a learned table
#   has nothing to recompute from.
#
# Whether the model is any *good* at those new lengths ("Limited/Good/Strong") needs training and
# long-text evaluation, which code this small cannot settle; see the note after the table.

# %%
D, H, L = 512, 8, 512
dh = D // H
g = torch.Generator().manual_seed(7)
Wq, Wk = (torch.randn(D, dh, generator=g, dtype=torch.float64) / math.sqrt(D) for _ in range(2))
ca, cb = torch.randn(D, generator=g, dtype=torch.float64), torch.randn(D, generator=g, dtype=torch.float64)
learned = LearnedPositionalEmbedding(L, D)
sin_table = sinusoidal_encoding(2 * L, D).double()


def score(method, i, j):
    """Score of content a at position i (query) against content b at position j (key), head 0."""
    if method == "sinusoidal":
        return (ca + sin_table[i]) @ Wq @ ((cb + sin_table[j]) @ Wk)
    if method == "learned":
        w = learned.emb.weight.detach().double()
        return (ca + w[i]) @ Wq @ ((cb + w[j]) @ Wk)
    q, k = (ca @ Wq)[None], (cb @ Wk)[None]
    if method == "RoPE":
        return (apply_rope(q, [i]) @ apply_rope(k, [j]).T)[0, 0]
    return q[0] @ k[0] - alibi_slopes(H)[0] * abs(i - j)          # ALiBi, head 1


def is_relative(method, trials=pick(quick=50, full=200)):
    gen = torch.Generator().manual_seed(3)
    worst = 0.0
    for _ in range(trials):
        i, j, s = (int(v) for v in torch.randint(0, L // 2, (3,), generator=gen))
        worst = max(worst, abs(float(score(method, i + s, j + s) - score(method, i, j))))
    return worst < 1e-9


def runs_beyond(method, t=2 * L):
    try:
        if method == "sinusoidal":
            sinusoidal_encoding(t, D)                   # the formula: rebuild the table longer
        elif method == "learned":
            learned(torch.zeros(1, t, D))
        elif method == "RoPE":
            RoPE(dh, max_len=t)(torch.zeros(1, H, t, dh), torch.zeros(1, H, t, dh))
        else:
            alibi_bias(t, H)
        return "runs"
    except ValueError:
        return "raises"


modules = {"sinusoidal": SinusoidalPositionalEncoding(D, max_len=L), "learned": learned,
           "RoPE": RoPE(dh, max_len=L), "ALiBi": ALiBi(H)}
measured = {m: (sum(p.numel() for p in mod.parameters()), "relative" if is_relative(m) else "absolute", runs_beyond(m))
            for m, mod in modules.items()}

# %% tags=["nbval-check-output"]
text_table = {  # 000 Table 8.1: absolute/relative, extrapolation, parameters
    "sinusoidal": ("absolute", "Limited", 0), "learned": ("absolute", "No", L * D),
    "RoPE": ("relative", "Good", 0), "ALiBi": ("relative", "Strong", 0)}
print(f"{'scheme':11s} {'params (numel)':>15s}  {'shift test':10s} {'T=1024 after L=512':19s} | text: rel./extrap./params")
for m, (n_params, rel, runs) in measured.items():
    t_rel, t_ext, t_par = text_table[m]
    print(f"{m:11s} {n_params:>15,d}  {rel:10s} {runs:19s} | {t_rel}, {t_ext}, {t_par:,d}")
    check_equal(f"{m}: parameters match Table 8.1", n_params, t_par)
    check_equal(f"{m}: absolute/relative matches Table 8.1", rel, t_rel)
    check_equal(f"{m}: T=1024 after L=512 (text: extrapolation '{t_ext}')", runs, "raises" if t_ext == "No" else "runs")

# %% [markdown]
# **What the code confirms:** the parameter column ($T_{max}\cdot d_{model} = 262{,}144$ for learned,
# 0 otherwise), the absolute/relative column (sinusoids fail the shift test because the content and
# position terms mix inside $W^Q, W^K$, even though $PE(i)\cdot PE(j)$ alone is relative, §3), and
# "No" extrapolation for learned positions (a hard error).
#
# **What it cannot confirm, and one place the texts overstate:** the quality words. 000 (Table 8.1,
# §8.4.4), 003 and 004 say RoPE "supports length extrapolation" / "generalizes better to longer
# sequences". The ALiBi paper (Press et al., 2022, Fig. 1) measured the opposite for rotary
# embeddings: like sinusoids, their perplexity degrades soon after the training length, and only ALiBi
# stayed flat. Long-context RoPE models extend their window with extra techniques (e.g. position
# interpolation) rather than extrapolating for free. Notebook 05 shows the mechanism: the slowest RoPE
# pairs never complete a turn within the training length, so longer inputs present angles the model
# has never seen. The "1024 → 6144" figure of 000 §8.4.5 comes from the paper's experiments and is not
# re-measured here; the paper's abstract reports a 1.3B model trained on 1024 tokens matching, at
# 2048, a sinusoidal model trained on 2048.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8 · Exercises
#
# Each exercise gives a stub: replace `raise NotImplementedError` with your code and re-run the cell
# below it. The checker compares with a hidden reference on several cases and names the mistake it
# recognises. `ex.show_solution()` reveals a solution, on purpose only.
#
# ### Exercise 8.3: write the offset matrix
#
# §4 found the matrix numerically. Now write it: `offset_matrix(k, omega)` returns the $2\times2$
# tensor $M$ with $M\,[\sin(pos\,\omega), \cos(pos\,\omega)]^\top = [\sin((pos+k)\omega), \cos((pos+k)\omega)]^\top$
# for every $pos$ (use the formulas of step 1 with $a = pos\,\omega$, $b = k\,\omega$).

# %%
from transformer_nb.exercises.positional import alibi_slopes_ex, offset_matrix_ex, offset_similarity_ex


def offset_matrix(k, omega):
    raise NotImplementedError


result = offset_matrix_ex.check(offset_matrix)

# %% [markdown]
# Once it passes, the cell below also confirms that your closed form equals the matrix fitted from
# data in §4. The checker recognises typical slips, for example the rotation the wrong way round:

# %%
if offset_matrix_ex.check(offset_matrix, quiet=True):
    check_close("your M(5, ω_3) vs the fitted matrix", (torch.as_tensor(offset_matrix(k, float(sinusoid_frequencies(D3)[pair]))).double() - M_fit).abs().max(), 0.0, atol=1e-9)
else:
    print("(the comparison with the fitted matrix runs once your offset_matrix passes)")


# %% tags=["nbval-check-output"]
def offset_matrix_backwards(k, omega):          # a typical mistake: maps PE(pos) to PE(pos - k)
    c, s = math.cos(k * omega), math.sin(k * omega)
    return torch.tensor([[c, -s], [s, c]], dtype=torch.float64)


result = offset_matrix_ex.check(offset_matrix_backwards)
assert not result.passed and "BACK by k" in result.message

# %% [markdown]
# ### Exercise 8.7: average similarity per offset
#
# Write `offset_average_similarity(pe)`: for a table `pe` of shape $(T, d)$ return a tensor of shape
# $(T,)$ whose entry $k$ is the mean cosine similarity over **all** $T-k$ pairs $(i, i+k)$. It must
# work for any table, not just sinusoids (the checker also feeds it random tables). Once it passes,
# the next cell draws visualisation 3 of the exercise with your function.

# %%
def offset_average_similarity(pe):
    raise NotImplementedError


result = offset_similarity_ex.check(offset_average_similarity)

# %%
ok = offset_similarity_ex.check(offset_average_similarity, quiet=True)
avg_fn = offset_average_similarity if ok else offset_similarity_ex.reference   # the reference stays hidden
print("bar chart drawn with", "your function" if ok else "the reference (your function does not pass yet)")
avg = avg_fn(pe.double())
fig, ax = plt.subplots(figsize=(9, 3.2))
ax.bar(range(65), avg[:65], color="tab:blue")
ax.set_xlabel("offset |i - j|")
ax.set_ylabel("mean cosine similarity")
ax.set_title(f"Exercise 8.7 (3): average similarity per offset, T={T7}, d_model={D7}")
ax.grid(alpha=0.3, axis="y")
plt.show()

# %% [markdown]
# The exercise's quantitative question: how far is any single pair from the average of its offset?

# %% tags=["nbval-check-output"]
avg_ref = offset_similarity_ex.reference(pe.double())
check_close("max over all pairs |sim(i, j) - average at |i-j||", (sim - avg_ref[(i - j).abs()]).abs().max(), 0.0, atol=1e-6)

# %% [markdown]
# A typical mistake, caught: dividing the sum at offset $k$ by $T$ instead of the $T-k$ pairs.

# %% tags=["nbval-check-output"]
def offset_average_divided_by_T(pe):
    unit = pe / pe.norm(dim=-1, keepdim=True)
    s = unit @ unit.T
    return torch.stack([s.diagonal(k).sum() / pe.shape[0] for k in range(pe.shape[0])])


result = offset_similarity_ex.check(offset_average_divided_by_T)
assert not result.passed and "divide the sum by T - k" in result.message

# %% [markdown]
# ### ALiBi slopes
#
# Write `my_alibi_slopes(n_heads)` from the definition in §6 (not by calling the package), returning a
# float64 tensor of shape `(n_heads,)`. The checker tries 8, 4, 16, 1, 12 and 6 heads.

# %%
def my_alibi_slopes(n_heads):
    raise NotImplementedError


result = alibi_slopes_ex.check(my_alibi_slopes)

# %% [markdown]
# The mistake 000 §8.4.5 invites, slopes that end at 0.5, is caught:

# %% tags=["nbval-check-output"]
def slopes_as_the_text_says(n_heads):
    return torch.tensor([2.0 ** (-8 * (n_heads - h + 1) / n_heads) for h in range(1, n_heads + 1)], dtype=torch.float64)


result = alibi_slopes_ex.check(slopes_as_the_text_says)
assert not result.passed and "run backwards" in result.message

# %% [markdown]
# To see a reference solution on purpose: `offset_matrix_ex.show_solution()`,
# `offset_similarity_ex.show_solution()`, `alibi_slopes_ex.show_solution()`.
#
# **Next:** notebook 05 turns the rotation of §4 into a position encoding of its own: RoPE rotates
# queries and keys, so that the score depends on the offset alone.
