# %% [markdown] slideshow={"slide_type": "slide"}
# # 01 · Scaled dot-product attention and the 1/√d_k derivation
#
# What this notebook covers:
#
# 1. **Q, K and V are projections** of the same input (self-attention) or of two inputs
#    (cross-attention), and attention is a *soft dictionary lookup*.
# 2. **Attention from scratch**, step by step on the texts' worked examples — which we recompute,
#    and where the numbers are wrong we say so and give the correct values.
# 3. **Our version equals the package's and PyTorch's** `F.scaled_dot_product_attention`
#    (masks, batches, heads), and **fully masked rows give zeros, not NaN**.
# 4. **Why divide by √d_k**: Var(q·k) = d_k, derived step by step (Exercise 8.1) and confirmed
#    for d_k = 4 … 1024; what goes wrong without the scale (softmax saturation: max weight,
#    entropy, gradient), and a widget to show it live.
# 5. **Exercises** with auto-checkers: Exercise 8.5 (implement attention, with a causal mask) and
#    two checkable steps of Exercise 8.1.
#
# **Serves:** 000 §8.2.1–8.2.5, Exercises 8.1 and 8.5 · 002 "Attention as a Differentiable
# Dictionary" (soft lookup, why scale by √d_k) · 004 §5.1–5.3 (incl. §5.2's 3-token worked example)
# and the §5.7 table.
#
# **Runtime on 2 CPU cores:** quick profile ≈ 18 s, full profile ≈ 30 s (kernel start included). Everything here is
# small and runs on the CPU.

# %%
%matplotlib inline
from transformer_nb import setup
env = setup()          # seeds everything, prints profile / device / torch version

# %%
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from transformer_nb import check_close, check_equal, check_raises, check_true, pick, show_source
from transformer_nb.plotting import heatmap, plot_curves

torch.set_printoptions(precision=3, sci_mode=False)
N_SAMPLES = pick(quick=20_000, full=200_000)   # Monte-Carlo samples per d_k in the variance study
N_QUERIES = pick(quick=1_000, full=4_000)        # queries per d_k in the saturation study
D_KS = [4, 8, 16, 32, 64, 128, 256, 512, 1024]

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · Queries, keys and values are projections
#
# Self-attention starts from **one** input $X \in \mathbb{R}^{T \times d_{\text{model}}}$ (one row per
# token) and three learned matrices (000 §8.2.1, 004 §5.1, 002):
#
# $$Q = XW^Q,\quad K = XW^K,\quad V = XW^V,\qquad W^Q, W^K \in \mathbb{R}^{d_{\text{model}}\times d_k},\;
# W^V \in \mathbb{R}^{d_{\text{model}}\times d_v}.$$
#
# A common wrong picture is that Q, K and V are three different inputs. In self-attention every
# token plays all three roles: it *asks* (its query $q_i$), it *advertises* (its key $k_j$) and it
# *offers content* (its value $v_j$). In **cross-attention** the queries come from one sequence
# (the decoder) and the keys and values from another (the encoder output). The score matrix
# $QK^\top$ then has one row per *query* and one column per *key*, so it need not be square.

# %%
T, S, d_model, d_k, d_v = 5, 7, 16, 8, 6
W_q = torch.randn(d_model, d_k) / math.sqrt(d_model)
W_k = torch.randn(d_model, d_k) / math.sqrt(d_model)
W_v = torch.randn(d_model, d_v) / math.sqrt(d_model)

X = torch.randn(T, d_model)                 # one sequence: self-attention
Q, K, V = X @ W_q, X @ W_k, X @ W_v

X_dec, X_enc = torch.randn(T, d_model), torch.randn(S, d_model)   # two sequences: cross-attention
Q_x, K_x, V_x = X_dec @ W_q, X_enc @ W_k, X_enc @ W_v

# %% tags=["nbval-check-output"]
check_equal("self-attention: Q, K, V shapes", [tuple(Q.shape), tuple(K.shape), tuple(V.shape)],
            [(T, d_k), (T, d_k), (T, d_v)])
check_equal("self-attention: scores Q Kᵀ are (T, T)", tuple((Q @ K.T).shape), (T, T))
check_equal("cross-attention: Q from the decoder, K and V from the encoder",
            [tuple(Q_x.shape), tuple(K_x.shape), tuple(V_x.shape)], [(T, d_k), (S, d_k), (S, d_v)])
check_equal("cross-attention: scores are (T_q, T_k) = (decoder length, encoder length)",
            tuple((Q_x @ K_x.T).shape), (T, S))
check_equal("output (T_q, d_v): its width is d_v, not d_k",
            tuple((torch.softmax(Q_x @ K_x.T / math.sqrt(d_k), -1) @ V_x).shape), (T, d_v))

# %% [markdown]
# ### Attention is a soft dictionary (002, 004 §2.2)
#
# A Python `dict` returns the value whose key *equals* the query. Attention returns a **weighted
# mix of all values**, with weights $\operatorname{softmax}(q\cdot k_j)$. To see that the hard lookup
# is a limit of the soft one, take four one-hot keys, a query that points at key 2 with strength
# $c$, and watch the output slide from the average of all values ($c = 0$) to exactly $v_2$
# ($c \to \infty$).

# %%
keys = torch.eye(4)                                   # key j = e_j
values = torch.tensor([[10.0], [20.0], [30.0], [40.0]])
strengths = torch.linspace(0, 12, 49)
lookups = torch.stack([torch.softmax(c * keys[1] @ keys.T, -1) @ values for c in strengths])

ax = plot_curves({"output of the soft lookup": (strengths, lookups[:, 0])},
                 xlabel="query strength c  (q = c · e₂)", ylabel="attention output",
                 title="A soft dictionary becomes a hard one as the query sharpens")
ax.axhline(20, color="C2", ls="--", lw=1, label="v₂ = 20 (hard lookup)")
ax.axhline(25, color="C3", ls=":", lw=1, label="mean of the values = 25")
ax.legend()
plt.show()

# %% tags=["nbval-check-output"]
check_close("c = 0: the output is the plain average of the values", lookups[0, 0], 25.0, atol=1e-5)
check_close("c = 30: the output is (almost exactly) v₂, a hard lookup",
            torch.softmax(30 * keys[1] @ keys.T, -1) @ values, [20.0], atol=1e-6)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · Attention from scratch, on 004 §5.2's worked example
#
# $$\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)V
# \qquad\text{(000 Eq. 8.1; } M = 0 \text{ without a mask)}$$
#
# Four steps: scores $QK^\top$, scale by $1/\sqrt{d_k}$, softmax over each **row** (each query's
# weights over the keys sum to 1), then weights times $V$. 004 §5.2 traces them for the three
# tokens *the, cat, sat* with head_dim $d_k = 4$ (it gives no $V$, so step 4 waits for the next example):

# %%
tokens = ["the", "cat", "sat"]
Q3 = torch.tensor([[1., 0, 1, 0],
                   [0., 1, 0, 1],
                   [1., 1, 0, 0]])
K3 = torch.tensor([[1., 0, 0, 1],
                   [0., 1, 1, 0],
                   [1., 1, 0, 0]])
scores3 = Q3 @ K3.T                          # step 1: (3, 3), entry (i, j) = q_i · k_j
scaled3 = scores3 / math.sqrt(4)             # step 2: 1/sqrt(d_k) = 1/2
weights3 = torch.softmax(scaled3, dim=-1)    # step 3: softmax over the keys (last axis)
print("Q Kᵀ =\n", scores3, "\nweights =\n", weights3)

# %% [markdown]
# **The text's numbers are wrong here.** 004 §5.2 prints
# $QK^\top = \begin{bmatrix}1&1&2\\1&1&0\\1&2&2\end{bmatrix}$, but with the $Q$ and $K$ it gives,
# **the correct product is** $\begin{bmatrix}1&1&1\\1&1&1\\1&1&2\end{bmatrix}$ — three entries
# differ. For example $q_1\cdot k_3 = [1,0,1,0]\cdot[1,1,0,0] = 1$, not 2, and
# $q_2 \cdot k_3 = [0,1,0,1]\cdot[1,1,0,0] = 1$, not 0.
#
# Its weights $\begin{bmatrix}0.27&0.27&0.46\\0.33&0.33&0.33\\0.21&0.39&0.39\end{bmatrix}$ match
# **neither** matrix. From the correct scores the weights are
# $\begin{bmatrix}1/3&1/3&1/3\\1/3&1/3&1/3\\0.27&0.27&0.45\end{bmatrix}$; even the softmax of the
# text's own scaled matrix would be $\begin{bmatrix}0.27&0.27&0.45\\0.38&0.38&0.23\\0.23&0.38&0.38\end{bmatrix}$
# (0.45, not 0.46; row 2 is not uniform; row 3 starts with 0.23, not 0.21). So the reading
# "*the* attends most strongly to *sat* (0.46)" is wrong: with the given Q and K, *the* attends
# evenly to all three tokens, and it is *sat* that attends most to itself (0.45). The next cell
# proves the correct values.

# %% tags=["nbval-check-output"]
text_scores = torch.tensor([[1., 1, 2], [1, 1, 0], [1, 2, 2]])
text_weights = torch.tensor([[0.27, 0.27, 0.46], [0.33, 0.33, 0.33], [0.21, 0.39, 0.39]])
check_equal("004 §5.2: Q Kᵀ (correct values)", scores3, torch.tensor([[1., 1, 1], [1, 1, 1], [1, 1, 2]]))
check_equal("entries where the text's Q Kᵀ is wrong", int((scores3 != text_scores).sum()), 3)
e = math.exp(0.5)
check_close("004 §5.2: weights (correct values)", weights3,
            [[round(x, 6) for x in row] for row in [[1 / 3] * 3, [1 / 3] * 3, [1 / (2 + e), 1 / (2 + e), e / (2 + e)]]],
            atol=1e-6)
check_true("the text's weights differ from the correct ones by more than rounding (> 0.05)",
           (text_weights - weights3).abs().max() > 0.05)
check_close("softmax of the text's OWN scaled row 1 [0.5, 0.5, 1.0]: the third weight is 0.45",
            torch.softmax(text_scores[0] / 2, -1)[2], round(e / (2 + e), 6), atol=1e-6)
check_true("softmax of the text's OWN row 2 is not uniform (text: 0.33 each)",
           (torch.softmax(text_scores[1] / 2, -1) - 1 / 3).abs().max() > 0.04)

# %% [markdown]
# The same four steps as one function. It is deliberately naive (a fully masked row will expose
# it in section 4):

# %%
def attention_from_scratch(q, k, v, mask=None):
    """q: (..., T_q, d_k), k: (..., T_k, d_k), v: (..., T_k, d_v).
    mask: bool (True = may attend) or additive float, broadcastable to (..., T_q, T_k).
    Returns output (..., T_q, d_v) and weights (..., T_q, T_k)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf) if mask.dtype == torch.bool else scores + mask
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · 000 §8.2.5's walkthrough, reconstructed
#
# 000 §8.2.5 works an example with $T = 4$ positions and $d_k = d_v = 3$, but its $Q$, $K$, $V$ and
# score matrices were lost in extraction. What survives:
#
# - $q_1\cdot k_1 = 1 + 0 + 1 = 1$ and $q_1 \cdot k_3 = 1 + 0 + 1 = 2$;
# - the first row of scores, $[1, 0, 2, 1]$, scaled by $1/\sqrt 3$ to $[0.577, 0, 1.155, 0.577]$;
# - exponentials summing to $7.734$, and weights $[0.230, 0.129, 0.410, 0.230]$ that sum to 1;
# - the output is $0.230\,v_1 + 0.129\,v_2 + 0.410\,v_3 + 0.230\,v_4$, of shape $4 \times 3$.
#
# **Reconstruction.** $q_1 = [1, 0, 1]$ and $k_3 = [1, 0, 1]$ give the term pattern "$1 + 0 + 1$" and
# $q_1\cdot k_3 = 2$. For $q_1 \cdot k_1 = 1$, $k_1$ must share exactly one of the two non-zero
# components with $q_1$: we take $k_1 = [1, 0, 0]$, $k_2 = [0, 1, 0]$ (score 0), $k_4 = [0, 0, 1]$
# (score 1). Only row 1 of the scores survives, so rows 2–4 of $Q$ and all of $V$ below are **our
# choice**; everything the text states is reproduced by it.
#
# **What is inconsistent in the text:**
#
# - "**$q_1\cdot k_1 = 1 + 0 + 1 = 1$**" is arithmetically false ($1 + 0 + 1 = 2$). The score row
#   $[1, 0, 2, 1]$ needs $q_1 \cdot k_1 = 1$, so the term-by-term sum must be $1 + 0 + 0$ (in our
#   reconstruction $1\cdot1 + 0\cdot0 + 1\cdot0$).
# - "**summing to 7.734**": the four exponentials $e^{0.577} \approx 1.781$, $e^{0} = 1$,
#   $e^{1.155} \approx 3.173$, $e^{0.577} \approx 1.781$ sum to **7.736** (7.7357 exactly; 7.7356 from
#   the 3-decimal exponents). The weights are right to 3 decimals either way.
# - The printed weights "sum to 1" only before rounding: $0.230 + 0.129 + 0.410 + 0.230 = 0.999$.

# %%
Q4 = torch.tensor([[1., 0, 1],     # q_1: the only row the text pins down
                   [0., 1, 0],
                   [1., 1, 0],
                   [0., 0, 1]])
K4 = torch.tensor([[1., 0, 0],
                   [0., 1, 0],
                   [1., 0, 1],
                   [0., 0, 1]])
V4 = torch.tensor([[1., 0, 0],
                   [0., 1, 0],
                   [0., 0, 1],
                   [1., 1, 1]])
out4, w4 = attention_from_scratch(Q4, K4, V4)
print("scores Q Kᵀ =\n", Q4 @ K4.T, "\nscaled =\n", Q4 @ K4.T / math.sqrt(3), "\nweights =\n", w4,
      "\noutput =\n", out4)

# %% tags=["nbval-check-output"]
s4 = Q4 @ K4.T
check_equal("q₁·k₁ = 1·1 + 0·0 + 1·0", [(Q4[0] * K4[0]).tolist(), int(s4[0, 0])], [[1.0, 0.0, 0.0], 1])
check_equal("q₁·k₃ = 1·1 + 0·0 + 1·1", [(Q4[0] * K4[2]).tolist(), int(s4[0, 2])], [[1.0, 0.0, 1.0], 2])
check_equal("the text's '1 + 0 + 1' sums to 2, not 1", 1 + 0 + 1, 2)
check_equal("scores, row 1", s4[0], torch.tensor([1., 0, 2, 1]))
check_close("scaled row 1 (text: [0.577, 0, 1.155, 0.577])", s4[0] / math.sqrt(3),
            [0.577, 0, 1.155, 0.577], atol=5e-4)
exps = torch.exp(s4[0].double() / math.sqrt(3))
check_close("e^0.577 and e^1.155", exps[[0, 2]], [1.781, 3.173], atol=5e-4)
check_close("sum of the exponentials (text: 7.734)", exps.sum(), 7.736, atol=5e-4)
check_true("the text's 7.734 is off by more than rounding", abs(exps.sum() - 7.734) > 1e-3)
check_close("weights, row 1 (text: [0.230, 0.129, 0.410, 0.230])", w4[0],
            [0.230, 0.129, 0.410, 0.230], atol=5e-4)
check_close("the rounded weights sum to 0.999", sum([0.230, 0.129, 0.410, 0.230]), 0.999, atol=1e-9)
check_close("output row 1 = 0.230 v₁ + 0.129 v₂ + 0.410 v₃ + 0.230 v₄ (with our V)", out4[0],
            [0.460, 0.359, 0.640], atol=1e-3)
check_equal("shapes: weights (T, T), output (T, d_v)", [tuple(w4.shape), tuple(out4.shape)], [(4, 4), (4, 3)])

# %% [markdown]
# The text's code listing right after the walkthrough runs one batch of 4 positions with
# $d_k = 8$ and claims output shape `[1, 4, 8]` and a `[4, 4]` weight matrix. Checked:

# %% tags=["nbval-check-output"]
o, w = attention_from_scratch(torch.randn(1, 4, 8), torch.randn(1, 4, 8), torch.randn(1, 4, 8))
check_equal("000 §8.2.5 listing: output shape", tuple(o.shape), (1, 4, 8))
check_equal("000 §8.2.5 listing: weights[0] shape", tuple(w[0].shape), (4, 4))

# %%
fig, axes = plt.subplots(1, 4, figsize=(15, 3.4))
pos = ["1", "2", "3", "4"]
panels = [(w4, pos, "000 §8.2.5, reconstructed"), (text_weights, tokens, "004 §5.2 as printed"),
          (weights3, tokens, "004 §5.2, correct"), (torch.softmax(text_scores / 2, -1), tokens,
                                                    "softmax of 004's printed scores")]
for ax, (m, labels, title) in zip(axes, panels):
    heatmap(m, xlabels=labels, ylabels=labels, title=title, ax=ax, annotate=True, vmin=0, vmax=0.6,
            colorbar=False, xlabel="key", ylabel="query")
fig.suptitle("Attention weights of the worked examples: the printed 004 weights match neither computation", y=1.03)
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · Our attention = the package's = PyTorch's
#
# Now the same computation three ways: `attention_from_scratch` above, the package's reference
# `transformer_nb.attention.scaled_dot_product_attention` (which also returns the weights), and
# PyTorch's fused `F.scaled_dot_product_attention`. Cases: no mask, a boolean mask, an additive
# float mask (a finite bias plus −∞), causal, a batch of 4-D multi-head tensors, $T_q \ne T_k$ and
# $d_v \ne d_k$.

# %%
from transformer_nb.attention import scaled_dot_product_attention
from transformer_nb.masks import additive, causal_mask, key_padding, padding_mask


def case_tensors(shape_q, shape_k, d_v, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(*shape_q, generator=g), torch.randn(*shape_k, generator=g)
    return q, k, torch.randn(*shape_k[:-1], d_v, generator=g)


keep = torch.rand(6, 9) > 0.3
keep[:, 0] = True                                   # every query can see at least key 0
bias = -torch.arange(9.0).abs() * 0.5               # a finite additive bias (ALiBi-like)
float_mask = bias.expand(6, 9).masked_fill(~keep, -math.inf)
cases = {
    "no mask, batched, T_q=6 ≠ T_k=9, d_v=5 ≠ d_k=8": (case_tensors((2, 6, 8), (2, 9, 8), 5, 0), None),
    "bool mask (6, 9)": (case_tensors((2, 6, 8), (2, 9, 8), 5, 1), keep),
    "additive float mask: bias + -inf": (case_tensors((2, 6, 8), (2, 9, 8), 5, 2), float_mask),
    "causal (7, 7) bool": (case_tensors((3, 7, 16), (3, 7, 16), 16, 3), causal_mask(7)),
    "4-D multi-head (B=2, h=4) + key padding (B, 1, T_q, T_k)":
        (case_tensors((2, 4, 5, 8), (2, 4, 5, 8), 8, 4), key_padding(padding_mask([5, 3]), 5)),
    "4-D, causal + padding, d_v=3": (case_tensors((2, 4, 5, 8), (2, 4, 5, 8), 3, 5),
                                     key_padding(padding_mask([5, 3]), 5) & causal_mask(5)),
}

# %% tags=["nbval-check-output"]
for name, ((q, k, v), mask) in cases.items():
    ours, w_ours = attention_from_scratch(q, k, v, mask)
    pkg, w_pkg = scaled_dot_product_attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    ok = (torch.allclose(ours, pkg, atol=1e-6) and torch.allclose(w_ours, w_pkg, atol=1e-6)
          and torch.allclose(pkg, ref, atol=1e-5))
    check_true(f"{name}: ours = package = F.sdpa, output {tuple(ref.shape)}", ok)

(q, k, v), _ = cases["causal (7, 7) bool"]
check_true("is_causal=True in F.sdpa = our causal bool mask",
           torch.allclose(F.scaled_dot_product_attention(q, k, v, is_causal=True),
                          scaled_dot_product_attention(q, k, v, causal_mask(7))[0], atol=1e-5))
check_true("a bool mask and its additive 0/-inf form give the same weights",
           torch.equal(scaled_dot_product_attention(q, k, v, causal_mask(7))[1],
                       scaled_dot_product_attention(q, k, v, additive(causal_mask(7)))[1]))

# %% [markdown]
# ### Fully masked rows: zeros, not NaN
#
# A query that may attend to **no** key (say, a padding query whose keys are all padding) has a row
# of scores that is all −∞. Its softmax is $0/0$ = NaN, and one NaN spreads through every later
# layer and into the loss. (Filling with a large finite number such as $-10^6$ instead, as d2l.ai's
# `masked_softmax` does, avoids the NaN but silently gives that row *uniform* weights over keys it
# was told to ignore.) The package gives
# such a row **zero weights and a zero output**, as `F.scaled_dot_product_attention` does since
# PyTorch 2.5 — and without NaN in the gradient either.

# %%
(q, k, v), _ = cases["bool mask (6, 9)"]
q = q.clone().requires_grad_()
dead = keep.clone()
dead[2] = False                                     # query 2 may attend to nothing
naive_out, naive_w = attention_from_scratch(q, k, v, dead)
pkg_out, pkg_w = scaled_dot_product_attention(q, k, v, dead)
print("naive weights, row 2:", naive_w[0, 2].detach())
print("package weights, row 2:", pkg_w[0, 2].detach())

# %% tags=["nbval-check-output"]
check_true("naive softmax: the fully masked row is NaN", torch.isnan(naive_w[:, 2]).all())
check_equal("package: the fully masked row has zero weights", pkg_w[:, 2], torch.zeros(2, 9))
check_equal("package: ... and a zero output", pkg_out[:, 2], torch.zeros(2, 5))
check_true("package: every other row is unchanged and sums to 1",
           torch.allclose(pkg_w[:, [0, 1, 3, 4, 5]].sum(-1), torch.ones(2, 5)))
check_true("F.sdpa (PyTorch ≥ 2.5) also gives a zero output for that row",
           torch.equal(F.scaled_dot_product_attention(q, k, v, attn_mask=dead)[:, 2], torch.zeros(2, 5)))
pkg_out.sum().backward()
check_true("no NaN in the gradient either (bool mask)", torch.isfinite(q.grad).all())
q.grad = None
scaled_dot_product_attention(q, k, v, additive(dead))[0].sum().backward()
check_true("no NaN in the gradient either (additive -inf mask)", torch.isfinite(q.grad).all())

# %% [markdown]
# The package does this by spotting rows that are entirely −∞ *before* the softmax (it runs the
# softmax on zeros there, so even the backward pass stays finite) and zeroing them after. Its
# source, including the input checks we test next:

# %%
show_source(scaled_dot_product_attention)

# %% [markdown]
# Bad input gets a clear error instead of a silent wrong answer — a few of the checks above:

# %% tags=["nbval-check-output"]
q, k, v = torch.randn(2, 4, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 3)
check_raises(ValueError, "d_k", scaled_dot_product_attention, q, torch.randn(2, 5, 6), v)
check_raises(ValueError, "same length", scaled_dot_product_attention, q, k, torch.randn(2, 6, 3))
check_raises(ValueError, "does not broadcast", scaled_dot_product_attention, q, k, v, torch.ones(4, 4, dtype=torch.bool))
check_raises(ValueError, "multiplicative", scaled_dot_product_attention, q, k, v, torch.ones(4, 5).tril())
check_raises(TypeError, "bool", scaled_dot_product_attention, q, k, v, torch.ones(4, 5, dtype=torch.long))

# %% [markdown]
# **From here on we use the library:** `F.scaled_dot_product_attention` in models (it dispatches to
# fused kernels such as FlashAttention on a GPU) and the package's reference when we want to *look
# at* the weights.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5 · Why divide by √d_k? (Exercise 8.1, guided)
#
# **Assumption** (000 §8.2.3, 002, 004 §5.3): the components $q_i$ and $k_i$ are independent, with
# mean 0 and variance 1. We derive the mean and variance of $q\cdot k = \sum_{i=1}^{d_k} q_i k_i$ in
# four steps and check each one numerically.
#
# **Step 1 — the mean of one term.** $q_i$ and $k_i$ are independent, so
# $\mathbb{E}[q_i k_i] = \mathbb{E}[q_i]\,\mathbb{E}[k_i] = 0$.
#
# **Step 2 — the variance of one term.** For independent $X, Y$:
# $\operatorname{Var}(XY) = \mathbb{E}[X^2]\mathbb{E}[Y^2] - \mathbb{E}[X]^2\mathbb{E}[Y]^2$, and with
# $\mathbb{E}[X^2] = \operatorname{Var}X + (\mathbb{E}X)^2$ this expands to
#
# $$\operatorname{Var}(XY) = \operatorname{Var}(X)\operatorname{Var}(Y) + \operatorname{Var}(X)\,\mathbb{E}[Y]^2
# + \operatorname{Var}(Y)\,\mathbb{E}[X]^2,$$
#
# the expansion 000 §8.2.3 writes out (its symbols were lost in extraction). With zero means and unit
# variances, $\operatorname{Var}(q_i k_i) = 1$. Note that nothing here needs Gaussians: we check with
# Gaussian, uniform and ±1 (Rademacher) components, and with non-zero means for the general formula.

# %%
n = N_SAMPLES
draws = {
    "gaussian": lambda: torch.randn(n, dtype=torch.float64),
    "uniform": lambda: (torch.rand(n, dtype=torch.float64) - 0.5) * math.sqrt(12),   # mean 0, var 1
    "rademacher ±1": lambda: torch.randint(0, 2, (n,), dtype=torch.float64) * 2 - 1,
}
term_stats = {}
for name, draw in draws.items():
    prod = draw() * draw()
    term_stats[name] = (prod.mean(), prod.var(), prod.std() / math.sqrt(n))
    print(f"{name:14s} E[q_i k_i] = {prod.mean():+.4f}   Var(q_i k_i) = {prod.var():.4f}")

mq, sq, mk, sk = 0.5, 2.0, -1.0, 0.5                 # means and standard deviations
prod = (mq + sq * torch.randn(n, dtype=torch.float64)) * (mk + sk * torch.randn(n, dtype=torch.float64))
general = sq**2 * sk**2 + sq**2 * mk**2 + sk**2 * mq**2
print(f"non-zero means: Var(q_i k_i) = {prod.var():.4f}, the formula gives {general}")

# %% tags=["nbval-check-output"]
for name, (mean, var, se) in term_stats.items():
    check_true(f"step 1, {name}: E[q_i k_i] = 0 within 5 standard errors", abs(mean) < 5 * se)
    # the variance of a sample variance of a zero-mean product x: (E[x^4] - Var(x)^2) / n, E[x^4] <= 9 here
    check_true(f"step 2, {name}: Var(q_i k_i) = 1 within 5 standard errors",
               abs(var - 1) < 5 * math.sqrt(8 / n))
check_close("step 2, the general expansion: Var(q)Var(k) + Var(q)E[k]² + Var(k)E[q]²", general, 1.0 + 4.0 + 0.0625)
c = prod - prod.mean()
se_var = ((c ** 4).mean() - c.var() ** 2).sqrt() / math.sqrt(n)      # standard error of a sample variance
check_true("step 2, the general expansion matches the simulation within 5 standard errors",
           abs(prod.var() - general) < 5 * se_var)

# %% [markdown]
# **Step 3 — the variance of the sum.** The $d_k$ terms $q_i k_i$ are independent, so their variances
# add: $\operatorname{Var}(q\cdot k) = \sum_i \operatorname{Var}(q_i k_i) = d_k$, and
# $\mathbb{E}[q\cdot k] = 0$. The standard deviation is $\sqrt{d_k}$.
#
# **Step 4 — the scaled score.** $\operatorname{Var}(c X) = c^2\operatorname{Var}(X)$, so
# $\operatorname{Var}\!\left(q\cdot k/\sqrt{d_k}\right) = d_k / d_k = 1$ for **every** $d_k$.
#
# We check both for $d_k = 4, 8, \dots, 1024$ by sampling pairs $(q, k)$. The tolerance is five
# standard errors of each estimate: for a sample variance of $N$ draws that is
# $5\,d_k\sqrt{(2 + 6/d_k)/N}$, because $q\cdot k$ has excess kurtosis $6/d_k$.

# %%
def score_samples(d, n, chunk=10_000):
    """n samples of q·k with q, k ~ N(0, I_d), generated in chunks to bound memory."""
    out = []
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        out.append((torch.randn(m, d) * torch.randn(m, d)).sum(-1).double())
    return torch.cat(out)


var_study = {}
for d in D_KS:
    s = score_samples(d, N_SAMPLES)
    var_study[d] = {"mean": s.mean().item(), "var": s.var().item(), "scaled_var": (s / math.sqrt(d)).var().item(),
                    "samples": s[:20_000]}
for d, r in var_study.items():
    print(f"d_k={d:5d}  mean {r['mean']:+7.3f}   Var(q·k) {r['var']:9.2f}   Var(q·k/√d_k) {r['scaled_var']:.4f}")

# %% tags=["nbval-check-output"]
for d, r in var_study.items():
    tol = 5 * math.sqrt((2 + 6 / d) / N_SAMPLES)          # relative: profile-dependent, so not printed
    ok = (abs(r["var"] / d - 1) < tol and abs(r["scaled_var"] - 1) < tol
          and abs(r["mean"]) < 5 * math.sqrt(d / N_SAMPLES))
    check_true(f"d_k={d:4d}: mean ≈ 0, Var(q·k) ≈ {d}, Var(q·k/√d_k) ≈ 1 (each within 5 s.e.)", ok)

# %%
fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
ds = torch.tensor(D_KS, dtype=torch.float64)
a1.loglog(D_KS, [var_study[d]["var"] for d in D_KS], "o", label="empirical Var(q·k)")
a1.loglog(D_KS, D_KS, "k--", lw=1, label="theory: d_k")
a1.loglog(D_KS, [var_study[d]["scaled_var"] for d in D_KS], "s", label="empirical Var(q·k / √d_k)")
a1.axhline(1, color="C1", ls=":", lw=1, label="theory: 1")
a1.set_xscale("log", base=2)
a1.set_xlabel("d_k")
a1.set_ylabel("variance")
a1.set_title("Var(q·k) grows like d_k; scaling brings it back to 1")
a1.legend(fontsize=8)
a1.grid(alpha=0.3, which="both")
bins = torch.linspace(-60, 60, 121).numpy()
for d, c in [(16, "C0"), (64, "C1"), (1024, "C3")]:
    a2.hist(var_study[d]["samples"].numpy(), bins=bins, density=True, histtype="step", color=c,
            lw=1.5, label=f"q·k, d_k={d} (std {math.sqrt(d):.0f})")
a2.hist((var_study[1024]["samples"] / 32).numpy(), bins=torch.linspace(-6, 6, 61).numpy(), density=True,
        color="0.5", alpha=0.6, label="q·k/√d_k, d_k=1024 (std 1)")
a2.axvspan(-3, 3, color="C2", alpha=0.12, label="[-3, +3]")
a2.set_ylim(0, 0.45)
a2.set_xlabel("score")
a2.set_title("Unscaled scores spread out; scaled ones do not")
a2.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# ### The numbers 000 §8.2.3, 004 §5.3 and §5.7, and 002 quote
#
# | text | claim | verdict |
# |---|---|---|
# | 000 §8.2.3 | $d_k = 64$: std 8, dot products "routinely" in $[-24, +24]$ | ✓ ($\pm 3\sigma$: about 99.7% of them) |
# | 000 §8.2.3 | $d_k = 512$: std ≈ 22.6, span $[-68, +68]$ | ✓ ($\sqrt{512} = 22.63$, $3\sigma = 67.9$) |
# | 000 §8.2.2 | a 512-token sequence has 262,144 scores | ✓ ($512^2$) |
# | 000 §8.2.3 | one input at 24, the rest near 0 → nearly all mass on it | ✓ (weight $1/(1 + 511e^{-24}) \approx 1 - 2\times10^{-8}$ even among 512 keys) |
# | 000 §8.2.3 | after scaling, inputs "stay in $[-3, +3]$" | **only about 99.7% do.** In one $512\times512$ score matrix ($d_k = 64$) several **hundred** of the 262,144 scaled scores fall outside (708 expected for exact Gaussians; a bit more in practice, since $q\cdot k$ has heavier tails), and the largest is near ±5 |
# | 004 §5.3 | head_dim 64 → std 8; head_dim 768 → std **27** | 64 ✓; **768 gives $\sqrt{768} = 27.7$** (≈ 28, not 27) |
# | 004 §5.7 | $512^2$ = 262K (~0.5 MB fp16), $4096^2$ = 16.8M (~32 MB), 128K² = 16.4B (~31 GB) | ✓ if "MB/GB" are MiB/GiB and "128K" is 128,000. **With 128K = 131,072** (as "4K" = 4,096 in the row above) it is **17.2B entries, 32 GiB** |
# | 002 | $q\cdot k$ has mean 0 and variance $d_k$; $d_{\text{model}} = 768$, $h = 12$ → $d_k = 64$ | ✓ |
# | 002 | causal attention as $\operatorname{softmax}\big((QK^\top + M)/\sqrt{d_k}\big)$ | ✓ the same as 000's $QK^\top/\sqrt{d_k} + M$, because $M \in \{0, -\infty\}$ is unchanged by the division (it would not be for a finite bias such as ALiBi) |

# %% tags=["nbval-check-output"]
check_close("000: d_k = 64 → std 8", math.sqrt(64), 8.0, atol=0)
check_close("000: d_k = 512 → std ≈ 22.6", math.sqrt(512), 22.6, atol=0.05)
check_close("000: d_k = 512 → 3 std ≈ 68", 3 * math.sqrt(512), 68.0, atol=0.5)
frac64 = (var_study[64]["samples"].abs() <= 24).double().mean().item()
check_true("000: at d_k = 64, between 99.4% and 99.9% of q·k lie in [-24, +24]", 0.994 < frac64 < 0.999)
check_equal("000: scores of a 512-token sequence", 512 ** 2, 262_144)
p24 = torch.softmax(torch.cat([torch.tensor([24.0]), torch.zeros(511)]).double(), -1)[0].item()
check_true("000: one score 24 among 511 zeros gets weight 1 - 511·e^-24 ≈ 1 - 1.9e-8", abs(p24 - (1 - 511 * math.exp(-24))) < 1e-12)
g = torch.Generator().manual_seed(0)
S512 = torch.randn(512, 64, generator=g) @ torch.randn(512, 64, generator=g).T / 8    # scaled, d_k = 64
outside = int((S512.abs() > 3).sum())
expected_outside = 262_144 * math.erfc(3 / math.sqrt(2))
check_close("expected scaled scores outside [-3, +3] in a 512×512 matrix (Gaussian)", expected_outside, 707.7, atol=0.05)
check_true("000: 'stay in [-3, +3]' is false: hundreds of the 262,144 fall outside (400 < count < 1200)",
           400 < outside < 1200)
check_true("... and the largest |scaled score| in that matrix lies between 4 and 6.5", 4 < S512.abs().max() < 6.5)
check_close("004: head_dim 768 → std is 27.7, not 27", math.sqrt(768), 27.7, atol=0.05)
check_equal("004 §5.7: 512² entries", 512 ** 2, 262_144)
check_close("004 §5.7: 512² fp16 in MiB (~0.5 MB)", 512 ** 2 * 2 / 2 ** 20, 0.5, atol=0)
check_close("004 §5.7: 4096² entries in millions (16.8M)", 4096 ** 2 / 1e6, 16.8, atol=0.05)
check_close("004 §5.7: 4096² fp16 in MiB (~32 MB)", 4096 ** 2 * 2 / 2 ** 20, 32.0, atol=0)
check_close("004 §5.7: 128,000² in billions (16.4B)", 128_000 ** 2 / 1e9, 16.4, atol=0.05)
check_close("004 §5.7: 128,000² fp16 in GiB (~31 GB)", 128_000 ** 2 * 2 / 2 ** 30, 30.5, atol=0.05)
check_close("004 §5.7: with 128K = 131,072: entries in billions", 131_072 ** 2 / 1e9, 17.2, atol=0.05)
check_close("004 §5.7: with 128K = 131,072: fp16 GiB", 131_072 ** 2 * 2 / 2 ** 30, 32.0, atol=0)
check_equal("002: d_model = 768, h = 12 → d_k", 768 // 12, 64)
(q, k, v), _ = cases["causal (7, 7) bool"]
M = additive(causal_mask(7))
check_true("002's (QKᵀ + M)/√d_k gives the same weights as 000's QKᵀ/√d_k + M",
           torch.equal(torch.softmax((q @ k.mT + M) / 4, -1), torch.softmax(q @ k.mT / 4 + M, -1)))

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Step 5 — why variance $d_k$ saturates the softmax
#
# The softmax only cares about **differences** between scores: $p_j / p_l = e^{z_j - z_l}$. If the
# scores have standard deviation $\sigma$, the gap between the largest and the second largest grows
# in proportion to $\sigma$, so the weight ratio between the top two keys grows like
# $e^{c\,\sigma}$ (for 10 Gaussian scores the mean gap is $0.54\,\sigma$). Unscaled,
# $\sigma = \sqrt{d_k}$: at $d_k = 1024$ the mean gap is $0.54 \cdot 32 \approx 17$, a weight ratio of
# $e^{17} \approx 2\times10^{7}$, and the weights are one-hot. The softmax's Jacobian,
# $\partial p/\partial z = \operatorname{diag}(p) - pp^\top$, then vanishes: a one-hot $p$ gives
# $\operatorname{diag}(p) - pp^\top = 0$, so no gradient reaches the scores and the model cannot learn
# to look elsewhere. Scaled, $\sigma = 1$ for every $d_k$, and the weights stay soft.
#
# Why $\sqrt{d_k}$ and not $d_k$? Dividing by $d_k$ overshoots: the variance becomes $d_k/d_k^2 = 1/d_k$,
# so for large $d_k$ every score is squeezed towards 0 and the weights go **uniform** — the query can no
# longer prefer any key. $\sqrt{d_k}$ is the one power that keeps the variance at 1 for every $d_k$.
#
# We measure three things for one query against **10 keys** (as in the widget below), over many
# random queries: the **max weight**, the **entropy** of the weights (uniform over 10 keys:
# $\ln 10 = 2.30$ nats; one-hot: 0), and the **Frobenius norm of the softmax Jacobian** (the size
# of the gradient that reaches the scores) — for the unscaled scores, the scaled ones, and, as a
# control, scores over-scaled by $1/d_k$.

# %%
from transformer_nb.widgets.attention import softmax_stats

n_keys = 10
sat = {True: {}, False: {}}
over = {}                                                       # control: q·k / d_k (too much scaling)
gaps = {}
for d in D_KS:
    q = torch.randn(N_QUERIES, 1, d)
    keys_ = torch.randn(N_QUERIES, n_keys, d)
    raw = (q * keys_).sum(-1)                                   # (N_QUERIES, n_keys)
    top2 = raw.topk(2, dim=-1).values
    gaps[d] = (top2[:, 0] - top2[:, 1]).mean().item()
    for scaled in (True, False):
        st = softmax_stats(raw / math.sqrt(d) if scaled else raw)
        sat[scaled][d] = {name: st[name].mean().item() for name in ("max_weight", "entropy", "jacobian_norm")}
    st = softmax_stats(raw / d)
    over[d] = {name: st[name].mean().item() for name in ("max_weight", "entropy", "jacobian_norm")}

# %% [markdown]
# The Jacobian norm uses the closed form $\|\operatorname{diag}(p) - pp^\top\|_F^2 =
# \sum p_j^2 - 2\sum p_j^3 + (\sum p_j^2)^2$. Check it against autograd once before trusting it:

# %% tags=["nbval-check-output"]
z = torch.randn(n_keys, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * 3
jac = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, -1), z)
check_true("closed-form Jacobian norm = autograd's (to 1e-12)",
           abs(softmax_stats(z)["jacobian_norm"] - jac.norm()) < 1e-12)
p = torch.softmax(z, -1)
check_true("and the Jacobian is diag(p) - p pᵀ", torch.allclose(jac, torch.diag(p) - torch.outer(p, p)))

# %%
fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
labels = {True: "scaled: q·k/√d_k", False: "unscaled: q·k"}
for ax, (key, ylabel, logy) in zip(axes, [("max_weight", "mean max weight", False),
                                          ("entropy", "mean entropy (nats)", False),
                                          ("jacobian_norm", "mean ‖∂p/∂z‖ (Frobenius, log)", True)]):
    plot_curves({labels[s]: (D_KS, [sat[s][d][key] for d in D_KS]) for s in (True, False)},
                xlabel="d_k", ylabel=ylabel, ax=ax, marker="o", logy=logy)
    ax.plot(D_KS, [over[d][key] for d in D_KS], "s--", color="0.5", ms=4, label="over-scaled: q·k/d_k")
    ax.set_xscale("log", base=2)
    ax.legend(fontsize=8)
axes[0].axhline(1 / n_keys, color="k", ls=":", lw=1)
axes[1].axhline(math.log(n_keys), color="k", ls=":", lw=1)
axes[0].set_title("weight on the top key")
axes[1].set_title("entropy (dotted: uniform, ln 10)")
axes[2].set_title("gradient reaching the scores")
fig.suptitle("Softmax over 10 keys: unscaled scores collapse onto one key, over-scaled ones go uniform", y=1.02)
fig.tight_layout()
plt.show()

# %% tags=["nbval-check-output"]
U, Sc = sat[False], sat[True]
check_true("unscaled: the max weight grows with d_k (4 → 64 → 1024)",
           U[4]["max_weight"] < U[64]["max_weight"] < U[1024]["max_weight"])
check_true("unscaled, d_k = 1024: max weight > 0.9 (nearly one-hot)", U[1024]["max_weight"] > 0.9)
check_true("unscaled, d_k = 1024: entropy < 0.1 · ln 10", U[1024]["entropy"] < 0.1 * math.log(n_keys))
check_true("scaled: max weight < 0.4 at every d_k (stays soft)", max(Sc[d]["max_weight"] for d in D_KS) < 0.4)
check_true("scaled: entropy > 0.8 · ln 10 at every d_k", min(Sc[d]["entropy"] for d in D_KS) > 0.8 * math.log(n_keys))
check_true("scaled: max weight varies by < 0.06 across d_k = 16 … 1024",
           max(Sc[d]["max_weight"] for d in D_KS[2:]) - min(Sc[d]["max_weight"] for d in D_KS[2:]) < 0.06)
check_true("d_k = 1024: the unscaled gradient is < 1/4 of the scaled one",
           U[1024]["jacobian_norm"] < 0.25 * Sc[1024]["jacobian_norm"])
check_true("the top-2 score gap grows like √d_k: gap(1024)/gap(64) ≈ 4 (within 15%)",
           abs(gaps[1024] / gaps[64] / 4 - 1) < 0.15)
check_true("unscaled, d_k = 1024: mean top-2 gap ≈ 0.54 · √1024 ≈ 17 (within 10%)",
           abs(gaps[1024] / (0.5374 * 32) - 1) < 0.10)
check_true("over-scaled by 1/d_k, d_k = 1024: entropy > 0.99 · ln 10 (the weights are uniform)",
           over[1024]["entropy"] > 0.99 * math.log(n_keys))
check_true("over-scaled: max weight < 0.11 at d_k = 1024 (uniform is 0.1)", over[1024]["max_weight"] < 0.11)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6 · Widget: drive the scale live
#
# One query against a handful of keys, every component drawn from N(0, 1). Left: the scores the
# softmax sees (red bars lie outside $[-3, +3]$). Right: the weights, with their entropy. Move
# **d_k** with the scores *unscaled* and watch the weights collapse onto one key; flip to *scaled*
# and they stay soft at any $d_k$. **sample** draws new vectors; **keys** changes how many keys the
# query competes over. (The drawing needs a live kernel; a stored notebook shows the first state.)

# %%
from transformer_nb.widgets.attention import ScalingWidget

ScalingWidget(d_k=64, scaled=True, n_keys=10).show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7 · Exercises
#
# Each exercise gives a stub. Replace `raise NotImplementedError` with your code and run the
# check cell: it runs your function on several cases against a hidden reference and, when they
# differ, tells you *which* typical mistake you made. `ex.show_solution()` reveals a solution —
# call it only on purpose.
#
# ### Exercise 8.1, step 2 in general (theory, auto-checked)
#
# Extend step 2: the components of $q$ are i.i.d. with mean `mean_q` and variance `var_q`, those of
# $k$ with mean `mean_k` and variance `var_k`, all independent. Return $\operatorname{Var}(q\cdot k)$
# for dimension `d_k`. (Then explain in one paragraph, in your own words, why variance $d_k$
# saturates the softmax and variance 1 does not — step 5 above is the numeric evidence.)

# %%
from transformer_nb.exercises.attention import attention_ex, causal_ex, empirical_ex, variance_ex


def dot_product_variance(d_k, var_q, var_k, mean_q=0.0, mean_k=0.0):
    raise NotImplementedError


# %%
result = variance_ex.check(dot_product_variance)

# %% [markdown]
# What the checker says to a typical wrong answer — here one that forgets the sum over the $d_k$
# components:

# %% tags=["nbval-check-output"]
def one_term_only(d_k, var_q, var_k, mean_q=0.0, mean_k=0.0):
    return var_q * var_k + var_q * mean_k ** 2 + var_k * mean_q ** 2


r = variance_ex.check(one_term_only)
assert not r.passed and "variances of independent terms add" in r.message

# %% [markdown]
# ### Exercise 8.1, numerically (auto-checked)
#
# `q` and `k` hold $N$ sampled vectors, shape `(N, d_k)`. Return the sample variance of the $N$
# dot products $q_n\cdot k_n$ — divided by $\sqrt{d_k}$ first when `scaled` is true. This is the
# tool the figure in section 5 was made with.

# %%
def score_variance(q, k, scaled):
    raise NotImplementedError


# %%
result = empirical_ex.check(score_variance)

# %% tags=["nbval-check-output"]
def all_pairs(q, k, scaled):          # a typical slip: every pair q_n · k_m instead of q_n · k_n
    s = q @ k.T
    return (s / math.sqrt(q.shape[-1]) if scaled else s).var()


r = empirical_ex.check(all_pairs)
assert not r.passed and "row-wise" in r.message

# %% [markdown]
# ### Exercise 8.5 — implement attention (programming, auto-checked)
#
# Implement scaled dot-product attention from scratch (no `nn.MultiheadAttention`, no
# `F.scaled_dot_product_attention`). `q: (batch, T_q, d_k)`, `k: (batch, T_k, d_k)`,
# `v: (batch, T_k, d_v)`, and an optional boolean `mask: (T_q, T_k)`, True where a query *may*
# attend. Return `(output, weights)` with shapes `(batch, T_q, d_v)` and `(batch, T_q, T_k)`.
# A query whose keys are **all** masked must get zero weights and a zero output, not NaN.

# %%
def attention(q, k, v, mask=None):
    raise NotImplementedError


# %%
result = attention_ex.check(attention)

# %% [markdown]
# The tests Exercise 8.5 asks for (batch = 2, seq_len = 8, $d_k = d_v = 16$: every row of the weights
# sums to 1; with a causal mask the weights above the diagonal are exactly zero). They run once
# your function passes the checker:

# %%
if result:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 8, 16, generator=g) for _ in range(3))
    out, weights = attention(q, k, v)
    assert torch.allclose(weights.sum(-1), torch.ones_like(weights.sum(-1)))
    out, weights = attention(q, k, v, torch.tril(torch.ones(8, 8, dtype=torch.bool)))
    assert (weights.triu(diagonal=1) == 0).all()
    print("Exercise 8.5's tests pass.")
else:
    print("Make the checker pass first.")

# %% [markdown]
# The checker catching a typical mistake — a softmax over the wrong axis:

# %% tags=["nbval-check-output"]
def softmax_over_queries(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    weights = torch.softmax(scores, dim=1)          # dim=1 is the query axis here
    return weights @ v, weights


r = attention_ex.check(softmax_over_queries)
assert not r.passed and "wrong axis" in r.message

# %% [markdown]
# ### Exercise 8.5, the causal half (auto-checked)
#
# Write `causal_attention(q, k, v)` for `q, k: (batch, T, d_k)`, `v: (batch, T, d_v)`: build the
# causal mask yourself (query $i$ may attend to keys $0 \dots i$, itself included) and return
# `(output, weights)`.

# %%
def causal_attention(q, k, v):
    raise NotImplementedError


# %%
result = causal_ex.check(causal_attention)

# %% tags=["nbval-check-output"]
def off_by_one(q, k, v):                  # hides the diagonal: a token cannot see itself
    t = q.shape[-2]
    allowed = torch.ones(t, t, dtype=torch.bool).tril(diagonal=-1)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~allowed, -math.inf)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


r = causal_ex.check(off_by_one)
assert not r.passed and "off by one" in r.message

# %% [markdown]
# To see a reference solution on purpose: `attention_ex.show_solution()` (likewise `causal_ex`,
# `variance_ex`, `empirical_ex`).
