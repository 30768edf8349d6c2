# %% [markdown] slideshow={"slide_type": "slide"}
# # 04 · Positional encodings: sinusoidal, learned, ALiBi
#
# [![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-nb/transformer-nb/blob/main/notebooks/04_positional_encodings.ipynb)
#
# Attention treats its input as a *set*: shuffle the words and every output is shuffled the same way, nothing
# more. "Dog bites man" and "man bites dog" then give each word exactly the same vector. A Transformer has to be
# *told* where each token stands. This notebook proves the problem, then solves it three ways: add a sinusoidal
# fingerprint of the position, learn one vector per position, or penalise attention by distance (ALiBi), and
# measures what each one can and cannot do. (Rotary embeddings, a fourth way, are notebook 05.)
#
# **Serves:** 000 §8.4 (8.4.1–8.4.3, 8.4.5, 8.4.6), Exercises 8.3 and 8.7; 001 §19.2; 002 "Positional
# Encoding"; 003 "Positional Encoding"; 004 §4.2.
#
# **Runtime on 2 CPU cores:** quick ~5 s, full ~10 s.

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

env = setup()  # seeds everything, picks the device, prints both

# %%
import math

import matplotlib.pyplot as plt
import torch
import torch.nn as nn

from transformer_nb import check_close, check_equal, check_raises, check_true, pick, show_source
from transformer_nb.core.block import EncoderLayer
from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.multihead import MultiHeadAttention, merge_heads, split_heads
from transformer_nb.core.positional import (
    ALiBi,
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    alibi_bias,
    alibi_slopes,
    sinusoid_frequencies,
    sinusoidal_encoding,
)
from transformer_nb.core.rope import RoPE, apply_rope
from transformer_nb.params import numel
from transformer_nb.plotting import heatmap, heatmaps
from transformer_nb.widgets.positional import AlibiExplorer, SinusoidFingerprint

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · Attention without positions cannot see word order
#
# Let $P$ be a $T\times T$ permutation matrix and $X$ the $T\times d$ input. Permuting the rows of $X$ permutes
# the rows of $Q, K, V$; the scores become $P\,S\,P^\top$; a row-wise softmax commutes with that; and
# $P\,A\,P^\top\,P V = P\,(AV)$. So
#
# $$\mathrm{Attn}(PX) = P\,\mathrm{Attn}(X)\qquad\text{(permutation-equivariant)}.$$
#
# The feed-forward network and the norms act on each row separately, so a whole block inherits the property.
# The output is *permuted*, not unchanged: only an order-free summary, such as the mean over positions, is
# invariant. Checked on the package's `MultiHeadAttention` and `EncoderLayer`:

# %% tags=["nbval-check-output"]
torch.manual_seed(0)
d_model, n_heads, T = 32, 4, 9
mha = MultiHeadAttention(d_model, n_heads).eval()
block = EncoderLayer(TransformerConfig(d_model=d_model, n_heads=n_heads, d_ff=64)).eval()
x = torch.randn(2, T, d_model)
perm = torch.randperm(T)

with torch.no_grad():
    for name, f in (("MultiHeadAttention", mha), ("EncoderLayer", block)):
        out, out_perm = f(x), f(x[:, perm])
        check_close(f"{name}: max |f(PX) - P f(X)|", (out_perm - out[:, perm]).abs().max(), 0.0, atol=1e-5)
        check_true(f"{name}: f(PX) differs from f(X) (equivariant, not invariant)", (out_perm - out).abs().max() > 1e-2)
        check_close(f"{name}: mean over positions is invariant", (out_perm.mean(1) - out.mean(1)).abs().max(), 0.0,
                    atol=1e-5)

# %% [markdown]
# The consequence is exact: two sentences made of the same words give every word **the same vector**, wherever
# it stands, until positions are added.

# %% tags=["nbval-check-output"]
vocab = {w: i for i, w in enumerate(["the", "dog", "bites", "man"])}
emb = nn.Embedding(len(vocab), d_model)
ids_a, ids_b = (torch.tensor([[vocab[w] for w in sentence.split()]])
                for sentence in ("the dog bites the man", "the man bites the dog"))
add_positions = SinusoidalPositionalEncoding(d_model, max_len=64)

with torch.no_grad():
    out_a, out_b = block(emb(ids_a)), block(emb(ids_b))
    check_close("no positions: 'dog' in A vs 'dog' in B", (out_a[0, 1] - out_b[0, 4]).abs().max(), 0.0, atol=1e-5)
    check_close("no positions: 'man' in A vs 'man' in B", (out_a[0, 4] - out_b[0, 1]).abs().max(), 0.0, atol=1e-5)
    pos_a, pos_b = block(add_positions(emb(ids_a))), block(add_positions(emb(ids_b)))
    check_true("with sinusoidal positions added, 'dog' in A differs from 'dog' in B",
               (pos_a[0, 1] - pos_b[0, 4]).abs().max() > 1e-2)

# %% [markdown]
# **A causal mask is itself positional.** Under a causal mask query $t$ sees exactly $t+1$ keys, so the outputs can
# depend on position even with no encoding at all. Feed a distinct first token followed by one token repeated 8
# times: without a mask the 8 repeats get identical outputs; with the causal mask each repeat gets a different
# one. Decoder-only language models trained without positional encodings do learn positions this way (Haviv et
# al., 2022); encoders, which have no mask, cannot (ledger: `000-8.4.1-impossible`).

# %% tags=["nbval-check-output"]
with torch.no_grad():
    first, repeated = torch.randn(1, 1, d_model), torch.randn(1, 1, d_model)
    seq = torch.cat([first, repeated.expand(1, T - 1, d_model)], dim=1)      # (1, 9, d): A B B B B B B B B
    rep_free, rep_causal = mha(seq)[0, 1:], mha(seq, is_causal=True)[0, 1:]  # outputs of the 8 repeats
    check_close("no mask: max difference between the 8 repeats' outputs", (rep_free - rep_free[0]).abs().max(), 0.0,
                atol=1e-5)
    check_true("causal mask: all 8 repeats get different outputs (closest pair > 1e-3 apart)",
               torch.pdist(rep_causal).min() > 1e-3)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · Sinusoidal encodings
#
# The original Transformer adds to each token embedding a fixed vector that depends on the position only. For
# position $pos$ and pair $i = 0,\dots,d_{model}/2-1$ (000 §8.4.2, 001 §19.2.2):
#
# $$PE(pos, 2i) = \sin(pos\,\omega_i),\qquad PE(pos, 2i+1) = \cos(pos\,\omega_i),\qquad
# \omega_i = 10000^{-2i/d_{model}}.$$
#
# Each pair is a point on the unit circle that turns by $\omega_i$ radians per position: pair 0 quickly (a second
# hand), the last pair thousands of times more slowly (an hour hand). First the table from scratch, one number at
# a time; the package's vectorised version must agree:

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


pe = sinusoidal_encoding(128, 64)                               # (T, d_model) = (128, 64)

# %% tags=["nbval-check-output"]
check_equal("shape (T, d_model)", pe.shape, (128, 64))
check_close("max |package - from scratch|", (pe.double() - pe_from_scratch(128, 64)).abs().max(), 0.0, atol=1e-6)
check_close("every position has norm sqrt(d_model/2): max |‖PE(p)‖ - sqrt(32)|", (pe.norm(dim=1) - math.sqrt(32)).abs().max(),
            0.0, atol=1e-5)
far = sinusoidal_encoding(2048, 128).double()
gaps = torch.cdist(far, far) + torch.diag(torch.full((2048,), float("inf"), dtype=torch.float64))
check_true("2048 positions, d_model = 128: all fingerprints distinct (the closest two > 1 apart)", gaps.min() > 1.0)

# %%
show_source(sinusoidal_encoding)

# %% [markdown]
# The table, drawn with positions along the x-axis so that each **column** is one position's fingerprint. The sin
# dimensions $2i$ and the cos dimensions $2i+1$ are in separate panels (interleaved they would show as stripes).
# The fast pairs (top) flip sign every few positions; the slow pairs (bottom) barely move over 128 positions: sin
# stays near 0 (white) and cos near 1 (red).

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 3.6), sharey=True)
for ax, (name, cols) in zip(axes, (("sin: PE(pos, 2i)", pe[:, 0::2]), ("cos: PE(pos, 2i+1)", pe[:, 1::2]))):
    heatmap(cols.T, ax=ax, cmap="RdBu_r", vmin=-1, vmax=1, xlabel="position pos",
            ylabel="pair i (frequency ω_i, fast → slow)" if ax is axes[0] else None, title=name,
            colorbar=ax is axes[1])
fig.suptitle("sinusoidal PE, T = 128, d_model = 64: each column is one position's fingerprint", y=1.0)
fig.tight_layout()
plt.show()

# %% [markdown]
# Drag the sliders: **position** moves the black line (its column is the fingerprint on the right), **pair i**
# picks one sin/cos pair and shows how fast it turns.

# %%
SinusoidFingerprint().show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · A shift by $k$ is a fixed rotation
#
# Why sines *and* cosines? Because then moving every position by the same offset $k$ is one **linear** map,
# whatever the position (000 §8.4.2, 001, 002): a model can learn "look 3 tokens back" once and use it everywhere.
# The key is the angle-addition formulas, with $a = pos\cdot\omega$ and $b = k\cdot\omega$:
#
# $$\sin(a+b) = \sin a\cos b + \cos a\sin b,\qquad \cos(a+b) = \cos a\cos b - \sin a\sin b.$$
#
# Both right-hand sides are *linear* in $(\sin a, \cos a)$, with coefficients that involve $b$ only. Exercise 8.3
# asks you to turn that into the matrix. First the two formulas, numerically, for 1000 random angles:

# %% tags=["nbval-check-output"]
g = torch.Generator().manual_seed(1)
a_, b_ = (torch.rand(1000, generator=g, dtype=torch.float64) * 100 for _ in range(2))
check_close("max |sin(a+b) - (sin a cos b + cos a sin b)|",
            (torch.sin(a_ + b_) - (torch.sin(a_) * torch.cos(b_) + torch.cos(a_) * torch.sin(b_))).abs().max(), 0.0,
            atol=1e-12)
check_close("max |cos(a+b) - (cos a cos b - sin a sin b)|",
            (torch.cos(a_ + b_) - (torch.cos(a_) * torch.cos(b_) - torch.sin(a_) * torch.sin(b_))).abs().max(), 0.0,
            atol=1e-12)

# %% [markdown]
# Geometrically: each pair $(\sin pos\,\omega, \cos pos\,\omega)$ walks around the unit circle, one step of angle
# $\omega$ per position. A shift by $k$ is the same turn of $k\omega$ wherever you start: the arrows below (shift
# $k = 5$) all span the same angle.

# %%
fig, axes = plt.subplots(1, 2, figsize=(9, 4.2))
for ax, pair_i in zip(axes, (3, 1)):
    om = float(sinusoid_frequencies(16)[pair_i])
    ps = torch.arange(0, 60, dtype=torch.float64)
    ax.plot(torch.sin(ps * om), torch.cos(ps * om), ".", color="0.6", ms=4)
    for p0, color in zip((0, 9, 23, 33), ("tab:blue", "tab:orange", "tab:green", "tab:red")):
        ang = torch.tensor([p0, p0 + 5], dtype=torch.float64) * om
        (s0, c0), (s1, c1) = torch.stack([torch.sin(ang), torch.cos(ang)], -1).tolist()
        ax.annotate("", xy=(s1, c1), xytext=(s0, c0), arrowprops=dict(arrowstyle="->", color=color, lw=1.8))
        ax.text(s0 * 1.15, c0 * 1.15, f"{p0}", color=color, ha="center", va="center", fontsize=8)
    ax.set(aspect="equal", xlim=(-1.3, 1.3), ylim=(-1.3, 1.3), xlabel="PE(pos, 2i) = sin", ylabel="PE(pos, 2i+1) = cos",
           title=f"pair i = {pair_i} of d_model = 16\nω = {om:.3g}, pos → pos + 5")
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · Learned positions and their hard limit
#
# A learned table has one trained row per position: $T_{max}\cdot d_{model}$ parameters (000 §8.4.3). BERT has
# $512\times768$, GPT-2 $1024\times768$. A position past the table has no row at all. `nn.Embedding` would answer
# with an opaque `IndexError`; the package's module says what went wrong, also when a KV-cache `offset` pushes the
# positions past the end. The sinusoidal *module* keeps a finite buffer too, but the *formula* gives any position:
# rebuilding the table longer needs no training.

# %%
show_source(LearnedPositionalEmbedding)

# %% tags=["nbval-check-output"]
for name, t_max, d in (("BERT-base", 512, 768), ("GPT-2 small", 1024, 768)):
    check_equal(f"{name}: learned position parameters = T_max·d_model", numel(LearnedPositionalEmbedding(t_max, d)),
                t_max * d)
lpe = LearnedPositionalEmbedding(512, 64)
check_equal("T = 512 fits", lpe(torch.zeros(1, 512, 64)).shape, (1, 512, 64))
check_raises(ValueError, "max_len=512", lpe, torch.zeros(1, 513, 64))
check_raises(ValueError, "max_len=512", lpe, torch.zeros(1, 500, 64), offset=13)
check_raises(ValueError, "max_len=512", SinusoidalPositionalEncoding(64, max_len=512), torch.zeros(1, 513, 64))
check_equal("the sinusoidal formula itself: 10,000 positions", sinusoidal_encoding(10_000, 64).shape, (10_000, 64))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5 · ALiBi: a linear penalty on distance
#
# ALiBi (Press et al., 2022) adds no position vector anywhere. Head $h$ adds $-m_h\,|i-j|$ to the score of query
# $i$ and key $j$ (000 §8.4.5, 002):
#
# $$\mathrm{softmax}\Big(\frac{q_i^\top k_j}{\sqrt{d_k}} - m_h\,|i-j|\Big).$$
#
# **The slopes** (the paper and its released code): for $n$ heads with $n$ a power of 2, the geometric sequence
# that *starts* at $2^{-8/n}$ with *ratio* $2^{-8/n}$, so head $h$ gets $m_h = 2^{-8h/n}$; 8 heads:
# $\tfrac12, \tfrac14, \dots, \tfrac1{256}$. For other $n$, take the $n_0$ slopes of the largest power of 2
# $n_0 \le n$, then append the 1st, 3rd, 5th, … slopes of $2n_0$ heads until there are $n$. Steep heads look at
# the last few tokens; flat heads see far. Four of the 8 heads' bias matrices:

# %%
bias8 = alibi_bias(16, 8)
fig = heatmaps([bias8[hd] for hd in (0, 1, 3, 7)], titles=[f"head {hd + 1}: m = 1/{round(1 / float(alibi_slopes(8)[hd]))}" for hd in (0, 1, 3, 7)],
               ncols=4, size=2.8, cmap="magma", vmin=float(bias8.min()), vmax=0.0)
for ax in fig.axes[:4]:
    ax.set(xticks=range(0, 16, 5), yticks=range(0, 16, 5), xlabel="key j")
fig.axes[0].set_ylabel("query i")
fig.suptitle(f"ALiBi bias -m·|i-j|, T = 16, one colour scale from {float(bias8.min()):g} (black) to 0", y=1.04)
plt.show()

# %% [markdown]
# `alibi_bias(T, h)` is an additive float mask of shape $(h, T, T)$, so it goes straight into attention as
# `mask=`; `is_causal=True` blocks the future on top. Three checks: the package's attention with the bias equals
# the formula computed by hand; with equal content scores the weights fall strictly with distance (002: "closer
# tokens receive higher attention scores"); and the paper's code adds $m\cdot j$ (key index only) instead of
# $-m(i-j)$, which under a causal mask differs by a constant per row, so softmax gives the same weights.

# %%
def alibi_attention_by_hand(m, x, bias):
    """Causal multi-head attention with an additive ALiBi bias, written out: (B, T, d) -> (B, T, d)."""
    t, heads = x.shape[1], m.n_heads
    q, k, v = (split_heads(proj(x), heads) for proj in (m.q_proj, m.k_proj, m.v_proj))
    scores = q @ k.transpose(-2, -1) / math.sqrt(m.d_head) + bias
    scores = scores.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
    return m.out_proj(merge_heads(scores.softmax(-1) @ v))


mha8 = MultiHeadAttention(32, 8).eval()
x10 = torch.randn(2, 10, 32)
keep_past = torch.ones(10, 10, dtype=torch.bool).tril()
w_alibi = alibi_bias(10, 8).double().masked_fill(~keep_past, float("-inf")).softmax(-1)   # equal content scores
key_index = (alibi_slopes(8)[:, None, None] * torch.arange(10, dtype=torch.float64)).expand(8, 10, 10)

# %% tags=["nbval-check-output"]
with torch.no_grad():
    check_close("max |MHA(mask=alibi_bias, causal) - by hand|",
                (mha8(x10, mask=alibi_bias(10, 8), is_causal=True) - alibi_attention_by_hand(mha8, x10, alibi_bias(10, 8)))
                .abs().max(), 0.0, atol=1e-5)
last_row = w_alibi[:, -1, :]                                     # the last query over keys 0..9, every head
check_true("equal content: the weights rise strictly toward the query, in every head", (last_row[:, 1:] > last_row[:, :-1]).all())
check_close("softmax(m·j) == softmax(-m·(i-j)) under a causal mask",
            (key_index.masked_fill(~keep_past, float("-inf")).softmax(-1) - w_alibi).abs().max(), 0.0, atol=1e-12)
check_equal("parameters of ALiBi(8)", numel(ALiBi(8)), 0)

# %% [markdown]
# Change the number of heads: the slopes (left) and how one query spreads its attention over the earlier tokens
# when the content scores are all equal (right).

# %%
AlibiExplorer().show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6 · The comparison table, from code
#
# 000 §8.4.6 compares the schemes in its Table 8.1. Three of its columns can be *measured*:
#
# * **parameters**: `numel` of each module ($d_{model} = 512$, $T_{max} = 512$, 8 heads of 64);
# * **absolute or relative**: the *shift test*. Put a query with content $a$ at position $i$ and a key with content
#   $b$ at $j$, compute the score, then move both by $s$. A relative scheme gives the same score for every $i, j, s$;
# * **runs past the training length** (here 512 → 1024): whether a longer input works or raises.
#
# Sinusoids fail the shift test: the content and the position are added before $W^Q$ and $W^K$ and mix there, so
# the score depends on where the two tokens stand, not only on how far apart. RoPE (notebook 05) is included for
# comparison.

# %%
D, H, L = 512, 8, 512
g = torch.Generator().manual_seed(7)
Wq, Wk = (torch.randn(D, D // H, generator=g, dtype=torch.float64) / math.sqrt(D) for _ in range(2))
content_a, content_b = torch.randn(2, D, generator=g, dtype=torch.float64)
learned = LearnedPositionalEmbedding(L, D)
sin_table = sinusoidal_encoding(2 * L, D).double()


def score(method, i, j):
    """Score of content a at position i (query) against content b at position j (key), one head."""
    if method == "sinusoidal":
        return (content_a + sin_table[i]) @ Wq @ ((content_b + sin_table[j]) @ Wk)
    if method == "learned":
        table = learned.emb.weight.detach().double()
        return (content_a + table[i]) @ Wq @ ((content_b + table[j]) @ Wk)
    q, k = (content_a @ Wq)[None], (content_b @ Wk)[None]
    if method == "RoPE":
        return (apply_rope(q, [i]) @ apply_rope(k, [j]).T)[0, 0]
    return q[0] @ k[0] - alibi_slopes(H)[0] * abs(i - j)          # ALiBi, head 1


SHIFT_TRIALS = pick(quick=50, full=200)                        # random (i, j, s) per scheme


def is_relative(method):
    gen = torch.Generator().manual_seed(3)
    worst = 0.0
    for _ in range(SHIFT_TRIALS):
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
            RoPE(D // H, max_len=t)(torch.zeros(1, H, t, D // H), torch.zeros(1, H, t, D // H))
        else:
            alibi_bias(t, H)
        return "runs"
    except ValueError:
        return "raises"


modules = {"sinusoidal": SinusoidalPositionalEncoding(D, max_len=L), "learned": learned, "RoPE": RoPE(D // H, max_len=L),
           "ALiBi": ALiBi(H)}
measured = {m: (numel(mod), "relative" if is_relative(m) else "absolute", runs_beyond(m)) for m, mod in modules.items()}

# %% tags=["nbval-check-output"]
print(f"{'scheme':11s} {'parameters':>11s}  {'shift test':10s} {'T = 1024 after L = 512'}")
for m, (n_params, rel, runs) in measured.items():
    print(f"{m:11s} {n_params:>11,d}  {rel:10s} {runs}")
check_equal("parameters", [v[0] for v in measured.values()], [0, L * D, 0, 0])
check_equal("shift test", [v[1] for v in measured.values()], ["absolute", "absolute", "relative", "relative"])
check_equal("past the training length", [v[2] for v in measured.values()], ["runs", "raises", "runs", "runs"])

# %% [markdown]
# What code this small cannot settle is the *quality* at new lengths: "runs" only means no error. Whether a model
# stays good there needs training and long-text evaluation. Press et al. (2022, Fig. 1) measured it: sinusoidal
# and rotary models degrade soon after their training length, ALiBi stays flat (ledger:
# `000-8.4.4-extrapolation`, and the appendix for Table 8.1's words).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7 · Exercises
#
# Each exercise gives a stub: replace `raise NotImplementedError` with your code and run the cell. The checker
# compares with a hidden reference on several cases and names the mistake it recognises; `ex.hint()` gives a
# hint (more specific each time), `ex.solution()` a worked solution, only after you have tried.
#
# ### Exercise 8.3: the offset matrix
#
# For one frequency $\omega$, find the $2\times2$ matrix $M$ with
# $M\,[\sin(pos\,\omega), \cos(pos\,\omega)]^\top = [\sin((pos+k)\omega), \cos((pos+k)\omega)]^\top$ for every $pos$.
# Write `offset_matrix(k, omega)` returning it as a tensor. The checker also verifies what the exercise asks
# you to show: that your matrix is orthogonal with determinant $+1$.

# %%
import math

import matplotlib.pyplot as plt
import torch

from transformer_nb import check_close, check_true
from transformer_nb.core.positional import sinusoid_frequencies, sinusoidal_encoding
from transformer_nb.exercises.positional import alibi_slopes_ex, offset_matrix_ex, offset_similarity_ex


# %% tags=["exercise"]
def offset_matrix(k, omega):
    raise NotImplementedError  # your code here


offset_matrix_ex.check(offset_matrix)

# %% [markdown]
# Once it passes, your closed form meets the data: for pair $i = 3$ of $d_{\text{model}} = 16$ and $k = 5$, the
# matrix that least squares fits to the table's pairs (positions 0..99) must equal yours.

# %%
M_of = offset_matrix_ex.use(offset_matrix)
shift, table = 5, sinusoidal_encoding(200, 16).double()
pairs_now, pairs_later = table[:100, 6:8], table[shift:100 + shift, 6:8]      # pair i = 3: dimensions 6, 7
M_fitted = torch.linalg.lstsq(pairs_now, pairs_later).solution.T              # solves pairs_now @ Mᵀ = pairs_later
omega3 = float(sinusoid_frequencies(16)[3])
check_close("max |M(5, ω_3) - the fitted matrix|", (torch.as_tensor(M_of(shift, omega3)).double() - M_fitted).abs().max(),
            0.0, atol=1e-5)

# %% tags=["solution"] cellView="form" jupyter={"source_hidden": true, "outputs_hidden": true}
# Solution · Exercise 8.3 — it runs once your answer passes, or after offset_matrix_ex.solution()
# Without any formula: least squares finds the matrix M that maps each pair (sin pos·ω, cos pos·ω) to the pair k
# positions later. The fit is exact, the same from any window of positions (M does not depend on pos), orthogonal
# with det +1 (a rotation), offsets compose, and one block per pair moves the whole vector PE(pos) to PE(pos + k).
if offset_matrix_ex.unlocked():
    def fitted_offset_matrix(k, omega, start=0, n=100):
        ps = torch.arange(start, start + n, dtype=torch.float64)
        now = torch.stack([torch.sin(ps * omega), torch.cos(ps * omega)], -1)            # (n, 2): [sin, cos]
        later = torch.stack([torch.sin((ps + k) * omega), torch.cos((ps + k) * omega)], -1)
        mt = torch.linalg.lstsq(now, later).solution                                     # now @ Mᵀ = later
        return mt.T, (now @ mt - later).abs().max()


    om3 = float(sinusoid_frequencies(16)[3])
    fit0, resid0 = fitted_offset_matrix(5, om3)
    fit_far, _ = fitted_offset_matrix(5, om3, start=1000)
    print("M(5, ω_3) fitted from positions 0..99:\n", fit0.numpy().round(6))
    check_close("residual of the linear fit", resid0, 0.0, atol=1e-12)
    check_close("the same M from positions 1000..1099", (fit0 - fit_far).abs().max(), 0.0, atol=1e-12)
    check_close("MᵀM = I", (fit0.T @ fit0 - torch.eye(2, dtype=torch.float64)).abs().max(), 0.0, atol=1e-12)
    check_close("det M = +1", torch.linalg.det(fit0), 1.0, atol=1e-12)
    check_close("M(2)·M(3) = M(5)", (fitted_offset_matrix(2, om3)[0] @ fitted_offset_matrix(3, om3)[0] - fit0).abs().max(),
                0.0, atol=1e-12)
    pe16 = sinusoidal_encoding(1200, 16).double()
    blocks = torch.block_diag(*[fitted_offset_matrix(5, float(w))[0] for w in sinusoid_frequencies(16)])
    check_close("blockdiag(M_i) PE(pos) = PE(pos + 5) for pos < 1000 (float32 table)", (pe16[:1000] @ blocks.T - pe16[5:1005]).abs().max(),
                0.0, atol=1e-5)

# %% [markdown]
# ### Exercise 8.7: average similarity per offset
#
# Write `offset_average_similarity(pe)`: for a table `pe` of shape $(T, d)$ return a tensor of shape $(T,)$
# whose entry $k$ is the mean cosine similarity over **all** $T-k$ pairs $(i, i+k)$. It must work for any
# table, not just sinusoids (the checker also feeds it random tables).

# %% tags=["exercise"]
def offset_average_similarity(pe):
    raise NotImplementedError  # your code here


offset_similarity_ex.check(offset_average_similarity)

# %% [markdown]
# Exercise 8.7's third figure, with your function ($T = 256$, $d_{\text{model}} = 128$), and its question: how
# far is any single pair from the average of its offset?

# %%
average = offset_similarity_ex.use(offset_average_similarity)
if average is offset_average_similarity:
    pe256 = sinusoidal_encoding(256, 128).double()
    avg = average(pe256)
    fig, ax = plt.subplots(figsize=(9, 3.2))
    ax.bar(range(65), avg[:65], color="tab:blue")
    ax.set(xlabel="offset |i - j|", ylabel="mean cosine similarity", title="Exercise 8.7 (3), with your function")
    plt.show()
    unit = pe256 / pe256.norm(dim=-1, keepdim=True)
    i, j = torch.meshgrid(torch.arange(256), torch.arange(256), indexing="ij")
    print(f"max over all pairs |sim(i, j) - average at |i - j||: {((unit @ unit.T) - avg[(i - j).abs()]).abs().max():.1e}")
else:
    print("(the bar chart is drawn with your function once it passes)")

# %% tags=["solution"] cellView="form" jupyter={"source_hidden": true, "outputs_hidden": true}
# Solution · Exercise 8.7 — it runs once your answer passes, or after offset_similarity_ex.solution()
# Visualisations 1 and 2, and the exact answer: PE(i)·PE(j) = Σ_k cos((i - j)·ω_k) and every norm is sqrt(d/2), so
# cos(PE(i), PE(j)) = (2/d) Σ_k cos((i - j)·ω_k) depends on |i - j| EXACTLY (not just "primarily").
if offset_similarity_ex.unlocked():
    table87 = sinusoidal_encoding(256, 128).double()
    sim87 = (table87 / table87.norm(dim=-1, keepdim=True)) @ (table87 / table87.norm(dim=-1, keepdim=True)).T
    offsets = torch.arange(129)
    fig, axes = plt.subplots(1, 3, figsize=(15, 3.6))
    heatmap(table87.T, ax=axes[0], cmap="RdBu_r", vmin=-1, vmax=1, xlabel="position", ylabel="dimension",
            title="(1) the PE table, T = 256, d = 128")
    axes[1].plot(offsets, sim87[0, :129])
    axes[1].set(xlabel="offset k", ylabel="cosine similarity", title="(2) cos(PE(0), PE(k))")
    heatmap(sim87, ax=axes[2], xlabel="position j", ylabel="position i", title="cos(PE(i), PE(j)): constant along diagonals")
    fig.tight_layout()
    plt.show()
    rows, cols = torch.meshgrid(torch.arange(256), torch.arange(256), indexing="ij")
    check_close("max over all pairs |sim(i, j) - sim(0, |i - j|)|", (sim87 - sim87[0][(rows - cols).abs()]).abs().max(), 0.0,
                atol=1e-6)
    closed = (2 / 128) * torch.cos(offsets[:, None].double() * sinusoid_frequencies(128)).sum(-1)
    check_close("max |sim(0, k) - (2/d)·Σ cos(k·ω_i)|, k ≤ 128", (sim87[0, :129] - closed).abs().max(), 0.0, atol=1e-6)
    rises = ((closed[1:] - closed[:-1]) > 0).nonzero().flatten()
    check_equal("the hint's 'roughly monotonically': strictly falling up to offset", int(rises[0]), 11)

# %% [markdown]
# ### ALiBi slopes
#
# Write `my_alibi_slopes(n_heads)` from the definition in §5 (not by calling the package), returning a float64
# tensor of shape `(n_heads,)`. The checker tries 8, 4, 16, 1, 12 and 6 heads.

# %% tags=["exercise"]
def my_alibi_slopes(n_heads):
    raise NotImplementedError  # your code here


alibi_slopes_ex.check(my_alibi_slopes)

# %% tags=["solution"] cellView="form" jupyter={"source_hidden": true, "outputs_hidden": true}
# Solution · ALiBi slopes — it runs once your answer passes, or after alibi_slopes_ex.solution()
# The slopes for 8, 12 and 16 heads on a log2 scale: the n0 base slopes (blue) form the geometric sequence, and the
# extra slopes of 12 heads (orange) fall between the 8-head ones.
if alibi_slopes_ex.unlocked():
    slopes_of = alibi_slopes_ex.use(my_alibi_slopes)
    fig, ax = plt.subplots(figsize=(7, 3.4))
    for n, marker in ((8, "o"), (12, "s"), (16, "^")):
        s = slopes_of(n)
        n0 = 2 ** (n.bit_length() - 1)
        ax.scatter(torch.log2(s[:n0]), [n] * n0, marker=marker, color="tab:blue")
        ax.scatter(torch.log2(s[n0:]), [n] * (n - n0), marker=marker, color="tab:orange")
    ax.set(yticks=[8, 12, 16], xlabel="log2(slope)", ylabel="number of heads",
           title="ALiBi slopes: geometric base (blue), interpolated extras (orange)")
    ax.grid(alpha=0.3)
    plt.show()
    check_close("12 heads: the extras are the odd slopes of 16 heads", slopes_of(12)[8:], slopes_of(16)[0::2][:4], atol=1e-15)

# %% [markdown]
# **Next:** notebook 05 turns the rotation of Exercise 8.3 into a position encoding of its own: RoPE rotates
# queries and keys, so that the score depends on the offset alone.

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Appendix · The texts, checked
#
# Every claim of the five texts that belongs to this notebook, with its verdict from the claims ledger
# (`transformer_nb.claims`; notebook 13 lists them all); the checks run below. Among them: 001 §19.2.1 calls
# self-attention permutation-*invariant* (it is equivariant, §1); 000 §8.4.5 ends the ALiBi slopes at $2^{-1}$
# (the last head's slope is $2^{-8}$).

# %% tags=["nbval-check-output"]
from transformer_nb.claims import report

report(notebook="04")

# %% [markdown]
# **Table 8.1 against §6's measurements.** The text's columns "absolute/relative" and "parameters" agree with what
# the code measured; its extrapolation column says "No" for learned positions (the code refuses, confirmed) and
# "Limited / Good / Strong" for the others, which code cannot grade (`000-8.4.4-extrapolation`: RoPE's "Good" is
# wrong without modification).

# %% tags=["nbval-check-output"]
text_table = {"sinusoidal": ("absolute", "Limited", 0), "learned": ("absolute", "No", L * D),
              "RoPE": ("relative", "Good", 0), "ALiBi": ("relative", "Strong", 0)}
for method, (n_params, rel, runs) in measured.items():
    t_rel, t_ext, t_par = text_table[method]
    check_equal(f"{method}: Table 8.1's parameters and absolute/relative", (n_params, rel), (t_par, t_rel))
    check_equal(f"{method}: runs past L (Table 8.1: '{t_ext}')", runs, "raises" if t_ext == "No" else "runs")
