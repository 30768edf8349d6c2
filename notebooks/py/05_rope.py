# %% [markdown] slideshow={"slide_type": "slide"}
# # 05 · Rotary position embeddings (RoPE)
#
# [![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-nb/transformer-nb/blob/main/notebooks/05_rope.ipynb)
#
# RoPE gives attention the *relative* position of two tokens without adding anything to their embeddings. Just
# before the scores are taken, it **rotates** every query and key by an angle proportional to its position;
# since rotations compose, the score of query $m$ against key $n$ then depends on the offset $n-m$ alone. It has no
# parameters and is what LLaMA, Mistral and most recent language models use. This notebook builds the rotation
# from its definition, checks the relative-position identity, compares the two pair layouts found in real code,
# and looks at how scores behave with distance.
#
# **Serves:** 000 §8.4.4 (and the RoPE row of Table 8.1), Exercise 8.10; 002 "Rotary Position Embeddings";
# 003 "Rotary Position Embedding"; 004 §4.2.
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

from transformer_nb import check_close, check_equal, check_true, pick, show_source
from transformer_nb.core import rope as rope_code
from transformer_nb.core.block import EncoderLayer
from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.multihead import MultiHeadAttention
from transformer_nb.core.positional import sinusoidal_encoding
from transformer_nb.core.rope import RoPE, apply_rope, rope_frequencies
from transformer_nb.params import numel
from transformer_nb.plotting import heatmap, plot_curves
from transformer_nb.reference import half_permutation, rope_matrix
from transformer_nb.widgets.rope import RotatePair

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · Turn each pair by an angle proportional to the position
#
# Split a $d$-dimensional query or key into $d/2$ pairs $(x_{2i}, x_{2i+1})$, $i = 0,\dots,d/2-1$. At position $m$,
# pair $i$ is turned by the angle $m\,\theta_i$, with $\theta_i = 10000^{-2i/d}$ (000 §8.4.4; RoFormer, Su et al.
# 2021):
#
# $$\begin{pmatrix}x_{2i}\\ x_{2i+1}\end{pmatrix} \mapsto
# \begin{pmatrix}\cos m\theta_i & -\sin m\theta_i\\ \sin m\theta_i & \cos m\theta_i\end{pmatrix}
# \begin{pmatrix}x_{2i}\\ x_{2i+1}\end{pmatrix}.$$
#
# For the whole vector this is one $d\times d$ matrix $R^m_\Theta$, block-diagonal with these $d/2$ blocks. The
# frequencies are the sinusoidal encoding's (notebook 04): pair 0 turns one radian per position, the last pair
# thousands of times more slowly. Below, the package's `rope_matrix` against the definition, block by block, and
# the package's `apply_rope` (which rotates a whole sequence, row $m$ at position $m$) against $R^m_\Theta x_m$.

# %%
def rotation(angle):
    """The 2×2 rotation by ``angle`` radians."""
    c, s = math.cos(angle), math.sin(angle)
    return torch.tensor([[c, -s], [s, c]], dtype=torch.float64)


T, d = 32, 8                                               # Exercise 8.10's per-head size
theta = rope_frequencies(d)                                # (d/2,) θ_i
R5 = rope_matrix(5, d)
x = torch.randn(T, d, generator=torch.Generator().manual_seed(0), dtype=torch.float64)

# %% tags=["nbval-check-output"]
check_close("θ_i = 10000^(-2i/d), d = 8", theta, torch.tensor([10000 ** (-2 * i / 8) for i in range(4)], dtype=torch.float64), atol=1e-15)
check_true("R_5: block i is the rotation by 5·θ_i, for every pair i",
           all(torch.allclose(R5[2 * i: 2 * i + 2, 2 * i: 2 * i + 2], rotation(5 * float(theta[i])), atol=1e-15)
               for i in range(d // 2)))
check_equal("R_5: entries outside the 2×2 blocks that are not 0",
            int((R5 * (1 - torch.block_diag(*[torch.ones(2, 2, dtype=torch.float64)] * (d // 2))) != 0).sum()), 0)
check_close("apply_rope(x)[m] == R_m x_m for all 32 positions",
            (apply_rope(x) - torch.stack([rope_matrix(m, d) @ x[m] for m in range(T)])).abs().max(), 0.0, atol=1e-12)
check_close("the RoPE module (float32 tables) == apply_rope (float64)",
            (RoPE(d, max_len=T).rotate(x.float()).double() - apply_rope(x)).abs().max(), 0.0, atol=1e-5)

# %% [markdown]
# Four clocks at different speeds: where the unit vector $(1, 0)$ of each pair ends up at positions $0..31$ for
# $d = 8$ ($\theta = 1, 0.1, 0.01, 0.001$). The fast pair turns 31 radians, almost five full turns; the slowest
# turns 0.031 radians and barely moves.

# %%
fig, axes = plt.subplots(1, 4, figsize=(12, 3.3), sharey=True, layout="constrained")
unit_x = torch.zeros(T, d, dtype=torch.float64)
unit_x[:, 0::2] = 1.0                                      # (1, 0) in every pair, at every position
turned = apply_rope(unit_x)
circle = torch.linspace(0, 2 * math.pi, 200)
for i, ax in enumerate(axes):
    ax.plot(torch.cos(circle), torch.sin(circle), color="0.85")
    dots = ax.scatter(turned[:, 2 * i], turned[:, 2 * i + 1], c=range(T), cmap="viridis", s=18)
    ax.set(aspect="equal", xlim=(-1.2, 1.2), ylim=(-1.2, 1.2), xticks=[-1, 0, 1], yticks=[-1, 0, 1],
           xlabel="first coordinate", title=f"pair {i} = (x[{2 * i}], x[{2 * i + 1}])\nθ = {float(theta[i]):g}")
axes[0].set_ylabel("second coordinate")
fig.colorbar(dots, ax=axes, fraction=0.02, label="position m")
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · The score depends on $n - m$ only
#
# Rotations compose by adding angles, and the transpose of a rotation turns back: $R_m^\top R_n = R_{n-m}$. Hence
#
# $$\langle R_m q, R_n k\rangle = q^\top R_m^\top R_n\, k = q^\top R_{n-m}\, k,$$
#
# which depends on the positions only through $n-m$ (000 §8.4.4, 002, 003). One pair, to play with: drag
# **shift both by s**: both arrows turn together and the score does not change; then move $m$ or $n$ alone. On the
# right, the score of this pair for every pair of positions: constant along each diagonal.

# %%
RotatePair().show()

# %% [markdown]
# Now the identity on many random $q, k$, sizes $d$ and positions, shifting both positions by a random $s$: in
# float64 the scores must agree to rounding, and with the `RoPE` module's float32 tables to about $10^{-4}$ of
# their size. The rotation keeps lengths, and the group properties behind the identity are checked too
# (3000 random draws in the full profile, 300 in the quick one).

# %% tags=["nbval-check-output"]
n_trials = pick(quick=300, full=3000)
g = torch.Generator().manual_seed(1)
worst64 = worst_formula = worst32 = 0.0
ropes32 = {dd: RoPE(dd, max_len=4096) for dd in (8, 64, 128)}
for trial in range(n_trials):
    dd = (8, 64, 128)[trial % 3]
    q, k = torch.randn(2, 1, dd, generator=g, dtype=torch.float64)
    m, n, s = (int(v) for v in torch.randint(0, 2000, (3,), generator=g))
    score = (apply_rope(q, [m]) @ apply_rope(k, [n]).T).item()
    worst64 = max(worst64, abs(score - (apply_rope(q, [m + s]) @ apply_rope(k, [n + s]).T).item()))
    worst_formula = max(worst_formula, abs(score - (q[0] @ rope_matrix(n - m, dd) @ k[0]).item()))
    r32 = ropes32[dd]
    s32 = r32.rotate(q.float(), m) @ r32.rotate(k.float(), n).T - r32.rotate(q.float(), m + s) @ r32.rotate(k.float(), n + s).T
    worst32 = max(worst32, abs(s32.item()) / (q.norm() * k.norm()).item())
check_close("float64: max |<R_m q, R_n k> - <R_(m+s) q, R_(n+s) k>|", worst64, 0.0, atol=1e-9)
check_close("float64: max |<R_m q, R_n k> - qᵀ R_(n-m) k|", worst_formula, 0.0, atol=1e-9)
check_close("float32 RoPE module: max relative difference under a shift", worst32, 0.0, atol=1e-4)
R_m, R_n, eye = rope_matrix(977, 64), rope_matrix(31, 64), torch.eye(64, dtype=torch.float64)
check_close("R_mᵀ R_m = I (lengths kept)", (R_m.T @ R_m - eye).abs().max(), 0.0, atol=1e-12)
check_close("det R_m = 1", torch.linalg.det(R_m), 1.0, atol=1e-12)
check_close("R_mᵀ R_n = R_(n-m)", (R_m.T @ R_n - rope_matrix(31 - 977, 64)).abs().max(), 0.0, atol=1e-10)

# %% [markdown]
# **Absolute sinusoids added to $q$ and $k$ do not have this property.** 000 §8.4.4 contrasts RoPE with encodings
# "added to the input and therefore … entangled". The same test on $(q + PE_m)\cdot(k + PE_n)$ fails: $PE_m\cdot PE_n$
# alone is relative (notebook 04), but the cross terms $q\cdot PE_n$ and $PE_m\cdot k$ depend on the absolute
# positions. The score maps show it: constant diagonals for RoPE, a tilted pattern for the sum.

# %%
dd, Tm = 64, 64
g = torch.Generator().manual_seed(5)
q, k = torch.randn(2, dd, generator=g, dtype=torch.float64)
rope_map = apply_rope(q.expand(Tm, dd)) @ apply_rope(k.expand(Tm, dd)).T          # S[m, n]
pe = sinusoidal_encoding(Tm, dd).double()
sin_map = (q + pe) @ (k + pe).T
fig, axes = plt.subplots(1, 2, figsize=(10, 4))
heatmap(rope_map, ax=axes[0], cmap="RdBu_r", xlabel="key position n", ylabel="query position m",
        title="RoPE: ⟨R_m q, R_n k⟩")
heatmap(sin_map, ax=axes[1], cmap="RdBu_r", xlabel="key position n", ylabel="query position m",
        title="sinusoids added: (q + PE_m)·(k + PE_n)")
fig.tight_layout()
plt.show()


# %% tags=["nbval-check-output"]
def diagonal_spread(S):
    """Largest deviation from the diagonal's first entry, over all diagonals n - m = const."""
    return max((S.diagonal(o) - S.diagonal(o)[0]).abs().max().item() for o in range(-S.shape[0] + 1, S.shape[0]))


check_close("RoPE: spread along the diagonals", diagonal_spread(rope_map), 0.0, atol=1e-9)
check_true("sinusoids added to q, k: spread along the diagonals > 1", diagonal_spread(sin_map) > 1.0)
check_true("RoPE depends on n - m, not |n - m|: S(m, m+7) ≠ S(m+7, m)", abs(rope_map[0, 7] - rope_map[7, 0]) > 1e-3)

# %% [markdown]
# The last line matters: unlike ALiBi's penalty $-m|i-j|$, a RoPE score tells "7 to the left" from "7 to the right".
# 002 writes the score as a function of $m-n$, 000 of $n-m$; one determines the other, but neither means $|n-m|$.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · Two pair layouts in real code
#
# Implementations disagree on *which* dimensions form a pair:
#
# * **interleaved**: pairs $(2i, 2i+1)$, as in the definition above: RoFormer, the original LLaMA code, GPT-J;
# * **rotate-half**: pair $i$ with $i + d/2$: GPT-NeoX and Hugging Face's LLaMA.
#
# Both use the same frequencies and both are valid RoPE: each satisfies the relative-position identity. But they are
# **not the same function of the same vector**: they rotate different coordinates together. They are the same
# rotation written in a different order of the coordinates: with the permutation $P$ that lists the even dimensions
# first, then the odd ones, $\mathrm{half}(Px) = P\,\mathrm{interleaved}(x)$. A model trained with one layout
# therefore runs in the other only after its $W^Q$ and $W^K$ rows are permuted head by head (what conversion scripts
# between the two LLaMA formats do). Exercise 8.10 states the interleaved pairing, so its checker counts the
# rotate-half layout as a mistake *for that exercise*.

# %%
fig, axes = plt.subplots(1, 2, figsize=(8.6, 3.8))
for ax, pairing in zip(axes, ("interleaved", "half")):
    heatmap(rope_matrix(3, 8, pairing=pairing), ax=ax, cmap="RdBu_r", vmin=-1, vmax=1,
            title=f"R_3, pairing = '{pairing}'", xlabel="input dim", ylabel="output dim")
fig.tight_layout()
plt.show()

# %% tags=["nbval-check-output"]
perm = half_permutation(8)
X = torch.randn(3, 20, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
Y = torch.randn(3, 20, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
check_equal("P (interleaved → half)", perm, torch.tensor([0, 2, 4, 6, 1, 3, 5, 7]))
check_close("half(P x) == P interleaved(x)",
            (apply_rope(X[..., perm], pairing="half") - apply_rope(X)[..., perm]).abs().max(), 0.0, atol=1e-12)
check_true("on the same vector the two layouts differ", (apply_rope(X, pairing="half") - apply_rope(X)).abs().max() > 0.1)
for pairing in ("interleaved", "half"):
    s0 = apply_rope(X, pairing=pairing) @ apply_rope(Y, pairing=pairing).transpose(-2, -1)
    s7 = apply_rope(X, torch.arange(7, 27), pairing=pairing) @ apply_rope(Y, torch.arange(7, 27), pairing=pairing).transpose(-2, -1)
    check_close(f"{pairing}: every score unchanged when all positions shift by 7", (s0 - s7).abs().max(), 0.0, atol=1e-10)

torch.manual_seed(3)
mha_i, mha_h = MultiHeadAttention(32, 4).eval(), MultiHeadAttention(32, 4).eval()
mha_h.load_state_dict(mha_i.state_dict())
rows = torch.cat([hd * 8 + half_permutation(8) for hd in range(4)])            # permute inside each head of 8
with torch.no_grad():
    for proj in ("q_proj", "k_proj"):
        getattr(mha_h, proj).weight.copy_(getattr(mha_i, proj).weight[rows])
        getattr(mha_h, proj).bias.copy_(getattr(mha_i, proj).bias[rows])
    xx = torch.randn(2, 12, 32)
    out_i = mha_i(xx, is_causal=True, rope=RoPE(8, pairing="interleaved"))
    out_h = mha_h(xx, is_causal=True, rope=RoPE(8, pairing="half"))
    out_h_unconverted = mha_i(xx, is_causal=True, rope=RoPE(8, pairing="half"))
check_close("interleaved model == its W^Q, W^K rows permuted + rotate-half", (out_i - out_h).abs().max(), 0.0, atol=1e-5)
check_true("without converting the weights, rotate-half gives another output", (out_i - out_h_unconverted).abs().max() > 1e-3)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · Scores against distance, and what lies past the training length
#
# RoFormer (§3.4.3) argues a **long-term decay**: summing the score over pairs by parts gives
# $|q^\top R_{\Delta} k| \le \big(\max_i |h_{i+1} - h_i|\big)\sum_{j=1}^{d/2} |S_j|$ with
# $S_j = \sum_{i<j} e^{i\Delta\theta_i}$, and the average $\frac{2}{d}\sum_j |S_j|$ falls as the distance $\Delta$
# grows. Three curves for $d = 128$ (a LLaMA head): RoFormer's relative bound; the score of $q = k = \mathbf 1$,
# $2\sum_i \cos(\Delta\theta_i)$, divided by $d$; and the mean $|q^\top R_\Delta k|$ over independent random $q, k$,
# relative to its value at $\Delta = 0$. The decay is real for *aligned* $q, k$, and not monotone (it wiggles); for
# unrelated random vectors there is nothing to decay: a rotated random direction is just another random direction.

# %%
dd = 128
theta128 = rope_frequencies(dd)
delta = torch.arange(0, 2049, dtype=torch.float64)
bound = torch.cumsum(torch.exp(1j * delta[:, None] * theta128), dim=-1).abs().mean(-1)      # (2/d)·Σ_j |S_j|
ones_score = 2 * torch.cos(delta[:, None] * theta128).sum(-1)
g = torch.Generator().manual_seed(4)
qr, kr = torch.randn(2, pick(quick=500, full=4000), 1, dd, generator=g, dtype=torch.float64)
probe = torch.tensor([0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048])
random_mean = torch.stack([(qr[:, 0] * apply_rope(kr, [int(p)])[:, 0]).sum(-1).abs().mean() for p in probe])
wavelength = 2 * math.pi / theta128

fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
plot_curves({"RoFormer bound (2/d)·Σ|S_j|, relative": (delta, bound / bound[0]),
             "q = k = ones: score / d": (delta, ones_score / dd),
             "random q, k: mean |score|, relative": (probe, random_mean / random_mean[0])},
            xlabel="relative distance Δ = n - m", ylabel="relative size", ax=axes[0],
            title=f"RoPE scores against distance, d = {dd}")
axes[0].set_xscale("symlog", linthresh=16)
axes[1].semilogy(range(dd // 2), wavelength, "o-", ms=3)
for length, c in ((512, "tab:green"), (2048, "tab:red")):
    axes[1].axhline(length, color=c, ls="--", label=f"training length {length}")
axes[1].set(xlabel="pair i", ylabel="wavelength 2π/θ_i (positions)", title="pairs above a line never complete a turn in training")
axes[1].legend()
fig.tight_layout()
plt.show()

# %% tags=["nbval-check-output"]
check_close("q = k = ones at Δ = 0: score = d", ones_score[0], float(dd), atol=1e-9)
check_close("RoFormer bound at Δ = 0: (2/d)·Σ j = (d/2 + 1)/2", bound[0], (dd / 2 + 1) / 2, atol=1e-9)
win = lambda v, a, b: v[a:b].abs().mean()
check_true("ones score: mean |score| falls from Δ<16 to 16..127 to 128..1023 to 1024..2048",
           win(ones_score, 0, 16) > win(ones_score, 16, 128) > win(ones_score, 128, 1024) > win(ones_score, 1024, 2049))
check_true("the ones score is NOT monotone in Δ (it wiggles)", (ones_score[1:] > ones_score[:-1]).any())
check_true("random q, k: mean |score| stays within 15% of its Δ = 0 value at every probed Δ",
           ((random_mean / random_mean[0] - 1).abs() < 0.15).all())
check_equal("d = 128: pairs that never complete a turn within 2048 positions", int((wavelength > 2048).sum()), 23)

# %% [markdown]
# **Extrapolation is not automatic.** For $d = 128$ and a training length of 2048, 23 of the 64 pairs never complete
# a turn during training, so at positions beyond 2048 they take angles, and cross-talk with the content, that
# training never produced. Rotary models' perplexity rises past the training length much like sinusoidal ones
# (Press et al., 2022, Fig. 1); long-context models rescale the positions or the base and fine-tune. What RoPE does
# guarantee is the relative form of each score, §2. (The texts that credit RoPE with extrapolation are in the
# ledger: `000-8.4.4-extrapolation`.) The package's `RoPE` refuses positions past its `max_len` rather than
# running there silently.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5 · RoPE inside attention
#
# `MultiHeadAttention.forward(..., rope=RoPE(d_head))` rotates the per-head queries and keys, shape
# $(B, h, T, d_{head})$, after the projections and before the scores; `EncoderLayer(cfg)(x, is_causal=True,
# rope=...)` passes it on (the decoder-only block of notebook 06). `RoPE` has no parameters: its cosine and sine
# tables are buffers. Since only offsets matter, shifting every position by the same amount changes nothing, and
# grouped-query attention takes RoPE the same way.
#
# The module, as attention calls it, reads each pair as a complex number and multiplies it by
# $\cos m\theta_i + i \sin m\theta_i$, from a table made once. Exercise 8.10 below has you compute RoPE scores
# yourself; once your answer passes, its worked solution shows the module's source.

# %% tags=["nbval-check-output"]
torch.manual_seed(6)
layer = EncoderLayer(TransformerConfig(d_model=32, n_heads=4, d_ff=64)).eval()
x6 = torch.randn(2, 10, 32)
with torch.no_grad():
    y = layer(x6, is_causal=True, rope=RoPE(8))
    y_shift = layer(x6, is_causal=True, rope=RoPE(8, max_len=256).at(q_offset=100, k_offset=100))
    y_gqa = MultiHeadAttention(32, 4, n_kv_heads=2)(x6, is_causal=True, rope=RoPE(8))
check_equal("RoPE(8) parameters", numel(RoPE(8)), 0)
check_equal("EncoderLayer(x, is_causal=True, rope=RoPE(d_head)) shape", y.shape, (2, 10, 32))
check_close("all positions shifted by 100: same output (nothing absolute left)", (y - y_shift).abs().max(), 0.0, atol=1e-4)
check_equal("GQA (2 K/V heads) with RoPE: shape", y_gqa.shape, (2, 10, 32))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6 · Exercises
#
# Replace each `raise NotImplementedError` with your code and run the cell. The checker compares with a hidden
# reference on several cases and names the mistake it recognises; `ex.hint()` gives a hint (more specific each
# time), `ex.solution()` a worked solution, only after you have tried.
#
# ### Exercise 8.10: RoPE in a two-head attention
#
# Write `rope_scores(x, w_q, w_k, n_heads)` from scratch (no package calls): `x` is $(T, d_{model})$, `w_q`,
# `w_k` are $(d_{model}, d_{model})$ with $q = x\,w_q$, $k = x\,w_k$. Split into `n_heads` heads of
# $d_k = d_{model}/n_{heads}$, rotate pair $(2i, 2i+1)$ of the vector at position $m$ by $m\,\theta_i$ with
# $\theta_i = 10000^{-2i/d_k}$, and return the scaled scores
# $S[h, m, n] = \langle R_m q^h_m, R_n k^h_n\rangle/\sqrt{d_k}$, shape $(h, T, T)$. The checker's first case is
# the exercise's: $T = 32$, $d_{model} = 16$, two heads.

# %%
import math

import torch

from transformer_nb import check_close
from transformer_nb.exercises.rope import relative_score_ex, rope_scores_ex


# %% tags=["exercise"]
def rope_scores(x, w_q, w_k, n_heads):
    raise NotImplementedError  # your code here


rope_scores_ex.check(rope_scores)

# %% tags=["solution"] cellView="form" jupyter={"source_hidden": true, "outputs_hidden": true}
# The package's own version, once your answer to Exercise 8.10 passes (or after rope_scores_ex.solution())
if rope_scores_ex.unlocked():
    show_source(rope_code._turn)
    show_source(RoPE.forward)
    show_source(RoPE._turns)

# %% [markdown]
# The exercise's verification, with your function once it passes: one token repeated over 32 positions, the
# pairs $(5, 12)$ and $(10, 17)$, both offset 7. The check prints only the tolerance; the values and their
# difference follow.

# %%
scores_of = rope_scores_ex.use(rope_scores)
g = torch.Generator().manual_seed(11)
token = torch.randn(1, 16, generator=g, dtype=torch.float64).expand(32, 16)
wq, wk = torch.randn(2, 16, 16, generator=g, dtype=torch.float64) / 4
S = scores_of(token, wq, wk, 2)
for h in range(2):
    check_close(f"head {h}: |S(5,12) - S(10,17)|", (S[h, 5, 12] - S[h, 10, 17]).abs(), 0.0, atol=1e-10)
if scores_of is rope_scores:
    for h in range(2):
        print(f"head {h}: S(5,12) = {S[h, 5, 12].item():+.12f}   S(10,17) = {S[h, 10, 17].item():+.12f}   "
              f"|difference| = {abs(S[h, 5, 12] - S[h, 10, 17]).item():.1e}")

# %% tags=["solution"] cellView="form" jupyter={"source_hidden": true, "outputs_hidden": true}
# Solution · Exercise 8.10 — it runs once your answer passes, or after rope_scores_ex.solution()
# The same scores with the package (apply_rope rotates each head's (T, d_k) rows at positions 0..T-1), and the
# detail the exercise leaves implicit: the identity is about POSITIONS. S(5, 12) = S(10, 17) only if the content is
# the same too, which is why the verification repeats one token; with 32 different tokens the scores differ.
if rope_scores_ex.unlocked():
    def package_rope_scores(x, w_q, w_k, n_heads):
        q, k = (apply_rope((x @ w).view(x.shape[0], n_heads, -1).transpose(0, 1)) for w in (w_q, w_k))
        return q @ k.transpose(-2, -1) / math.sqrt(x.shape[1] // n_heads)


    many = torch.randn(32, 16, generator=torch.Generator().manual_seed(12), dtype=torch.float64)
    check_close("the package's scores == yours (or the reference)", package_rope_scores(token, wq, wk, 2), S, atol=1e-12)
    S_many = package_rope_scores(many, wq, wk, 2)
    check_true("32 different tokens: S(5,12) ≠ S(10,17) in both heads", ((S_many[:, 5, 12] - S_many[:, 10, 17]).abs() > 1e-3).all())
    check_close("one repeated token: every diagonal n - m = const is constant",
                max((S.diagonal(o, dim1=1, dim2=2) - S.diagonal(o, dim1=1, dim2=2)[:, :1]).abs().max() for o in range(-31, 32)),
                0.0, atol=1e-10)

# %% [markdown]
# ### The identity, pair by pair
#
# Expand $q^\top R_\Delta k$ for one pair $(q_1, q_2)$, $(k_1, k_2)$ and sum over the pairs. Write
# `relative_score(q, k, delta)` for vectors `q`, `k` of shape $(d,)$: the score of any query/key positions
# with $n - m = \Delta$, **without** building a matrix or calling `apply_rope` ($\theta_i = 10000^{-2i/d}$).
# Check on paper first: at $\Delta = 0$ it must be $q\cdot k$.

# %% tags=["exercise"]
def relative_score(q, k, delta):
    raise NotImplementedError  # your code here


relative_score_ex.check(relative_score)

# %% [markdown]
# **Next:** notebook 06 assembles the Transformer block; `EncoderLayer(cfg)(x, is_causal=True,
# rope=RoPE(d_head))` is the decoder-only block with rotary positions.

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Appendix · The texts, checked
#
# Every claim of the five texts that belongs to this notebook, with its verdict from the claims ledger
# (`transformer_nb.claims`; notebook 13 lists them all); the checks run below. Among them: 002 numbers its
# frequencies $\theta_j = 10000^{-2j/d}$ from $j = 1$, which shifts every frequency by one step (imprecise: still
# a valid rotary encoding, but not RoFormer's); and the texts' claims that RoPE extrapolates (wrong for 000, see §4).

# %% tags=["nbval-check-output"]
from transformer_nb.claims import report

report(notebook="05")
