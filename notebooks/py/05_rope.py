# %% [markdown] slideshow={"slide_type": "slide"}
# # 05 · Rotary position embeddings (RoPE): the identity, checked
#
# RoPE adds nothing to the token embeddings. Just before the scores are taken, it *rotates* every
# query and key by an angle proportional to its position, so the score of query $m$ against key $n$
# depends on the offset $n-m$ alone. This notebook builds that from scratch and checks the claims:
#
# 1. **RoPE from scratch**, pair by pair, equal to the package, to the complex-number form and to
#    the block-diagonal matrix $R^m_\Theta$.
# 2. **The identity** $\langle R_m q, R_n k\rangle = q^\top R_{n-m}k$: thousands of random vectors and
#    positions, Exercise 8.10's setup exactly, and the same test failing for sinusoids added to $q, k$.
# 3. **Norm preservation and the group property** $R_m^\top R_n = R_{n-m}$.
# 4. **Two pairings** (interleaved vs split halves): one rotation up to a permutation.
# 5. **Scores against distance**: RoFormer's long-range decay, and what RoPE does past the training
#    length.
# 6. **RoPE inside the package's attention**, so that later notebooks can use it (KV-cache included).
# 7. **Exercises** (auto-checked): 8.10 and the pair-by-pair identity.
#
# **Serves:** 000 §8.4.4 (and the RoPE row of Table 8.1), Exercise 8.10; 002 "Rotary Position
# Embeddings"; 003 "Rotary Position Embedding"; 004 §4.2 (Strategy 3).
#
# **Runtime on 2 CPU cores:** quick ~15 s, full ~25 s, kernel start included (nothing here trains).

# %%
# %matplotlib inline
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from transformer_nb import check_close, check_equal, check_raises, check_true, pick, setup, show_source
from transformer_nb.block import EncoderLayer
from transformer_nb.multihead import MultiHeadAttention, merge_heads, split_heads
from transformer_nb.plotting import heatmap, plot_curves
from transformer_nb.positional import sinusoidal_encoding
from transformer_nb.rope import RoPE, apply_rope, half_permutation, rope_frequencies, rope_matrix, rotate_pairs
from transformer_nb.widgets.rope import RotatePair

env = setup()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · RoPE from scratch, one pair at a time
#
# Split a $d$-dimensional vector into $d/2$ pairs $(x_{2i}, x_{2i+1})$, $i = 0,\dots,d/2-1$. At
# position $m$, pair $i$ is turned by the angle $m\,\theta_i$, with $\theta_i = 10000^{-2i/d}$
# (000 §8.4.4; RoFormer, Su et al. 2021):
#
# $$\begin{pmatrix}x_{2i}\\ x_{2i+1}\end{pmatrix} \mapsto
# \begin{pmatrix}\cos m\theta_i & -\sin m\theta_i\\ \sin m\theta_i & \cos m\theta_i\end{pmatrix}
# \begin{pmatrix}x_{2i}\\ x_{2i+1}\end{pmatrix}.$$
#
# Stacked for all pairs this is the block-diagonal matrix $R^m_{\Theta}$ with $d/2$ blocks. Pair 0
# turns one radian per position; the last pair is thousands of times slower. Below: a loop over
# positions and pairs with an explicit $2\times2$ matrix, nothing vectorised.

# %%
def rope_by_hand(x, base=10000.0):
    """x: (T, d) float64, row m is the vector at position m. Returns the rotated rows."""
    t, d = x.shape
    out = torch.empty_like(x)
    for m in range(t):
        for i in range(d // 2):
            angle = m * base ** (-2 * i / d)
            rot = torch.tensor([[math.cos(angle), -math.sin(angle)],
                                [math.sin(angle), math.cos(angle)]], dtype=torch.float64)
            out[m, 2 * i: 2 * i + 2] = rot @ x[m, 2 * i: 2 * i + 2]
    return out


# %% [markdown]
# Three independent ways to compute the same thing must agree with the package's `apply_rope`:
# the loop above; the matrix $R^m_\Theta$ (`rope_matrix`) applied to each row; and the complex-number
# form used by the original LLaMA code, where pair $(a, b)$ is the complex number $a + ib$ and a
# rotation is a multiplication by $e^{im\theta_i}$.

# %% tags=["nbval-check-output"]
g = torch.Generator().manual_seed(0)
T, d = 32, 8                                           # Exercise 8.10's per-head size
x = torch.randn(T, d, generator=g, dtype=torch.float64)
ref = apply_rope(x)
check_equal("shape", ref.shape, (T, d))
check_close("max |apply_rope - loop by hand|", (ref - rope_by_hand(x)).abs().max(), 0.0, atol=1e-12)
by_matrix = torch.stack([rope_matrix(m, d) @ x[m] for m in range(T)])
check_close("max |apply_rope - R_m x_m (matrix)|", (ref - by_matrix).abs().max(), 0.0, atol=1e-12)
as_complex = torch.view_as_complex(x.reshape(T, d // 2, 2).contiguous())
turn = torch.polar(torch.ones(T, d // 2, dtype=torch.float64), torch.arange(T)[:, None] * rope_frequencies(d))
check_close("max |apply_rope - complex form|", (ref - torch.view_as_real(as_complex * turn).reshape(T, d)).abs().max(),
            0.0, atol=1e-12)
R5 = rope_matrix(5, d)
off_blocks = R5 * (1 - torch.block_diag(*[torch.ones(2, 2, dtype=torch.float64)] * (d // 2)))
check_equal("R_5 is block-diagonal: entries outside the d/2 2×2 blocks that are not 0", int((off_blocks != 0).sum()), 0)

# %%
show_source(rotate_pairs)

# %% [markdown]
# Four clocks at different speeds: where the unit vector $(1, 0)$ of each pair ends up at
# positions $0..31$ for $d = 8$ ($\theta = 1, 0.1, 0.01, 0.001$). The fast pair turns 31 radians,
# almost five full turns; the slowest turns 0.031 radians and barely moves.

# %%
fig, axes = plt.subplots(1, 4, figsize=(12, 3.3))
e = torch.zeros(T, d, dtype=torch.float64)
e[:, 0::2] = 1.0
turned = apply_rope(e)
for i, ax in enumerate(axes):
    pts = turned[:, 2 * i: 2 * i + 2]
    ax.plot(torch.cos(torch.linspace(0, 2 * math.pi, 200)), torch.sin(torch.linspace(0, 2 * math.pi, 200)), color="0.85")
    sc = ax.scatter(pts[:, 0], pts[:, 1], c=range(T), cmap="viridis", s=18)
    ax.set_aspect("equal")
    ax.set_xlim(-1.2, 1.2)
    ax.set_ylim(-1.2, 1.2)
    ax.set_title(f"pair {i} = (x[{2 * i}], x[{2 * i + 1}])\nθ = {float(rope_frequencies(d)[i]):g}")
    ax.set_xlabel("first coordinate")
axes[0].set_ylabel("second coordinate")
fig.colorbar(sc, ax=axes, fraction=0.02, label="position m")
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · The identity: the score depends on $n - m$ only
#
# Rotations compose by adding angles, and the transpose of a rotation turns back:
# $R_m^\top R_n = R_{n-m}$. Hence
#
# $$\langle R_m q, R_n k\rangle = q^\top R_m^\top R_n\, k = q^\top R_{n-m}\, k,$$
#
# which depends on the positions only through $n-m$ (000 §8.4.4, 002, 003). We test it on many random
# $q, k$, sizes $d$ and position pairs, shifting both positions by a random $s$: in float64 the scores
# must agree to rounding, and in float32 (the `RoPE` module's tables) to about $10^{-4}$ of their size.
# (3000 random draws in the full profile, 300 in the quick one.)

# %% tags=["nbval-check-output"]
n_trials = pick(quick=300, full=3000)
g = torch.Generator().manual_seed(1)
worst64, worst_formula, worst32 = 0.0, 0.0, 0.0
ropes32 = {dd: RoPE(dd, max_len=4096) for dd in (8, 64, 128)}
for trial in range(n_trials):
    dd = (8, 64, 128)[trial % 3]
    q, k = torch.randn(2, 1, dd, generator=g, dtype=torch.float64)
    m, n, s = (int(v) for v in torch.randint(0, 2000, (3,), generator=g))
    score = (apply_rope(q, [m]) @ apply_rope(k, [n]).T).item()
    shifted = (apply_rope(q, [m + s]) @ apply_rope(k, [n + s]).T).item()
    formula = (q[0] @ rope_matrix(n - m, dd) @ k[0]).item()
    worst64 = max(worst64, abs(score - shifted))
    worst_formula = max(worst_formula, abs(score - formula))
    rope32 = ropes32[dd]
    q32, k32 = rope32.rotate(q.float(), m), rope32.rotate(k.float(), n)
    q32s, k32s = rope32.rotate(q.float(), m + s), rope32.rotate(k.float(), n + s)
    worst32 = max(worst32, abs((q32 @ k32.T - q32s @ k32s.T).item()) / (q.norm() * k.norm()).item())
check_close("float64: max |<R_m q, R_n k> - <R_(m+s) q, R_(n+s) k>|", worst64, 0.0, atol=1e-9)
check_close("float64: max |<R_m q, R_n k> - qᵀ R_(n-m) k|", worst_formula, 0.0, atol=1e-9)
check_close("float32 RoPE module: max relative difference", worst32, 0.0, atol=1e-4)

# %% [markdown]
# ### Exercise 8.10's setup, exactly
#
# Two-head attention with $d_{model} = 16$ ($d_k = 8$ per head), 32 positions, $\theta_i = 10000^{-2i/d_k}$,
# and the scores of the position pairs $(m, n) = (5, 12)$ and $(10, 17)$, both offset 7. One detail
# the exercise leaves implicit: the identity is about *positions*. The two scores are equal only if the
# query *content* at 5 and 10 is the same, and the key content at 12 and 17 too. So we feed one token
# repeated 32 times; with 32 different tokens the scores differ, and rightly so. Here the package does
# the work (`MultiHeadAttention`'s projections, `RoPE(8)`); in §7 you write it yourself.

# %%
torch.manual_seed(810)
mha2 = MultiHeadAttention(16, 2).eval()
rope8 = RoPE(8, max_len=32)


def head_scores(x):
    """x: (1, 32, 16) -> RoPE scores (2, 32, 32) of the two heads, scaled by 1/sqrt(d_k)."""
    with torch.no_grad():
        q, k = rope8(split_heads(mha2.q_proj(x), 2), split_heads(mha2.k_proj(x), 2))
    return (q @ k.transpose(-2, -1))[0] / math.sqrt(8)


same_token = torch.randn(1, 1, 16).expand(1, 32, 16)
many_tokens = torch.randn(1, 32, 16)
S_same, S_many = head_scores(same_token), head_scores(many_tokens)

# %% tags=["nbval-check-output"]
check_equal("score tensor (heads, m, n)", S_same.shape, (2, 32, 32))
for h in range(2):
    check_close(f"head {h}, one repeated token: |S(5,12) - S(10,17)|", (S_same[h, 5, 12] - S_same[h, 10, 17]).abs(), 0.0, atol=1e-5)
    check_true(f"head {h}, 32 different tokens: S(5,12) ≠ S(10,17) (content differs)",
               (S_many[h, 5, 12] - S_many[h, 10, 17]).abs() > 1e-3)
diags = torch.stack([(S_same.diagonal(o, dim1=1, dim2=2) - S_same.diagonal(o, dim1=1, dim2=2)[:, :1]).abs().max()
                     for o in range(-31, 32)])
check_close("one repeated token: max deviation along every diagonal n - m = const", diags.max(), 0.0, atol=1e-5)

# %% [markdown]
# The values themselves (float32, so the last digits vary by machine; that is why this cell is not
# compared by the tests):

# %%
for h in range(2):
    a, b = S_same[h, 5, 12].item(), S_same[h, 10, 17].item()
    print(f"head {h}: S(5,12) = {a:+.7f}   S(10,17) = {b:+.7f}   |difference| = {abs(a - b):.1e}")

# %% [markdown]
# **Drag the sliders.** One 2-D pair of a query and a key, rotated by their positions. Move $m$ and $n$
# by the same amount: both arrows turn together, the angle between them stays, and so does the score.
# On the right, the score of this pair for every $(m, n)$: constant along each diagonal.

# %%
RotatePair().show()

# %% [markdown]
# ### Absolute sinusoids added to $q$ and $k$ do *not* have this property
#
# 000 §8.4.4 contrasts RoPE with sinusoidal encodings, "added to the input and therefore … entangled".
# The same shift test on $(q + PE_m)\cdot(k + PE_n)$ fails: $PE_m\cdot PE_n$ alone is relative
# (notebook 04 §3), but the cross terms $q\cdot PE_n$ and $PE_m\cdot k$ depend on the absolute
# positions. The score maps make it visible: stripes along the diagonals for RoPE, a tilted pattern
# for the sum.

# %%
dd, Tm = 64, 64
g = torch.Generator().manual_seed(5)
q, k = torch.randn(2, dd, generator=g, dtype=torch.float64)
pos = torch.arange(Tm)
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
check_close("sinusoids alone, PE_m·PE_n: spread along the diagonals", diagonal_spread(pe @ pe.T), 0.0, atol=1e-5)
check_true("RoPE depends on n - m, not |n - m|: S(m, m+7) ≠ S(m+7, m)", abs(rope_map[0, 7] - rope_map[7, 0]) > 1e-3)

# %% [markdown]
# The last line matters for reading the texts: 002 writes the score as $g(q, k, m-n)$, 000 and the
# hint of Exercise 8.10 as a function of $n-m$. Both are right (one determines the other), but neither
# means $|n-m|$: unlike ALiBi's penalty, a RoPE score tells "7 to the left" from "7 to the right".

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · Norm preservation and the group property
#
# Each $R_m$ is orthogonal with determinant $+1$, so it keeps lengths; $R_0 = I$; angles add,
# $R_m R_n = R_{m+n}$; and $R_m^\top R_n = R_{n-m}$ (000 §8.4.4: "by the rotation group property").

# %% tags=["nbval-check-output"]
dd = 64
eye = torch.eye(dd, dtype=torch.float64)
xs = torch.randn(500, dd, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
rot = apply_rope(xs[:, None, :].expand(500, 1, dd).contiguous(), [1234])[:, 0]
check_close("max | ‖R_1234 x‖ - ‖x‖ | over 500 vectors", (rot.norm(dim=-1) - xs.norm(dim=-1)).abs().max(), 0.0, atol=1e-10)
check_close("max |R_0 - I|", (rope_matrix(0, dd) - eye).abs().max(), 0.0, atol=0)
worst_orth = worst_det = worst_group = worst_add = 0.0
for m, n in ((5, 12), (10, 17), (0, 300), (977, 31), (4000, 4096)):
    Rm, Rn = rope_matrix(m, dd), rope_matrix(n, dd)
    worst_orth = max(worst_orth, (Rm.T @ Rm - eye).abs().max().item())
    worst_det = max(worst_det, abs(torch.linalg.det(Rm).item() - 1))
    worst_group = max(worst_group, (Rm.T @ Rn - rope_matrix(n - m, dd)).abs().max().item())
    worst_add = max(worst_add, (Rm @ Rn - rope_matrix(m + n, dd)).abs().max().item())
check_close("max |R_mᵀ R_m - I|", worst_orth, 0.0, atol=1e-12)
check_close("max |det R_m - 1|", worst_det, 0.0, atol=1e-12)
check_close("max |R_mᵀ R_n - R_(n-m)|", worst_group, 0.0, atol=1e-10)
check_close("max |R_m R_n - R_(m+n)|", worst_add, 0.0, atol=1e-10)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · Two pairings, one rotation
#
# Implementations disagree on *which* dimensions form a pair. RoFormer, the original LLaMA code and
# GPT-J pair neighbours $(2i, 2i+1)$ ("interleaved"); GPT-NeoX and Hugging Face's LLaMA pair $i$ with
# $i + d/2$ ("rotate_half"). Both use the same frequencies, so they are the same rotation written in a
# different order of the coordinates: with the permutation $P$ that lists the even dimensions first,
# then the odd ones, $\mathrm{half}(Px) = P\,\mathrm{interleaved}(x)$.

# %%
d8 = 8
fig, axes = plt.subplots(1, 2, figsize=(8.6, 3.8))
for ax, pairing in zip(axes, ("interleaved", "half")):
    heatmap(rope_matrix(3, d8, pairing=pairing), ax=ax, cmap="RdBu_r", vmin=-1, vmax=1,
            title=f"R_3, pairing='{pairing}'", xlabel="input dim", ylabel="output dim")
fig.tight_layout()
plt.show()

# %% tags=["nbval-check-output"]
perm = half_permutation(d8)
check_equal("P (interleaved → half)", perm, torch.tensor([0, 2, 4, 6, 1, 3, 5, 7]))
X = torch.randn(3, 20, d8, dtype=torch.float64)
check_close("max |half(P x) - P interleaved(x)|",
            (apply_rope(X[..., perm], pairing="half") - apply_rope(X, pairing="interleaved")[..., perm]).abs().max(), 0.0, atol=1e-12)
Pm = torch.eye(d8, dtype=torch.float64)[perm]
check_close("as matrices: R_half = P R_interleaved Pᵀ",
            (rope_matrix(3, d8, pairing="half") - Pm @ rope_matrix(3, d8) @ Pm.T).abs().max(), 0.0, atol=1e-12)
check_true("without the permutation the two differ", (apply_rope(X, pairing="half") - apply_rope(X)).abs().max() > 0.1)

# %% [markdown]
# So a checkpoint trained with one layout runs in the other once the rows of $W^Q$ and $W^K$ are
# permuted head by head (this is what conversion scripts between the two LLaMA formats do). Scores are
# dot products, and a dot product does not care how both vectors' coordinates are ordered. The
# package's attention proves it: permuting the query/key projections and switching the pairing leaves
# the output unchanged.

# %% tags=["nbval-check-output"]
torch.manual_seed(3)
D4, H4 = 32, 4
mha_i = MultiHeadAttention(D4, H4).eval()
mha_h = MultiHeadAttention(D4, H4).eval()
mha_h.load_state_dict(mha_i.state_dict())
rows = torch.cat([h * (D4 // H4) + half_permutation(D4 // H4) for h in range(H4)])   # permute inside each head
with torch.no_grad():
    for proj in ("q_proj", "k_proj"):
        getattr(mha_h, proj).weight.copy_(getattr(mha_i, proj).weight[rows])
        getattr(mha_h, proj).bias.copy_(getattr(mha_i, proj).bias[rows])
    xx = torch.randn(2, 12, D4)
    out_i = mha_i(xx, is_causal=True, rope=RoPE(D4 // H4, pairing="interleaved"))
    out_h = mha_h(xx, is_causal=True, rope=RoPE(D4 // H4, pairing="half"))
check_close("interleaved model vs permuted 'half' model: max |output difference|", (out_i - out_h).abs().max(), 0.0, atol=1e-5)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5 · Scores against distance, and what lies past the training length
#
# RoFormer (§3.4.3) argues a **long-term decay**: writing the score as a sum over pairs and summing by
# parts, $|q^\top R_{\Delta} k| \le \big(\max_i |h_{i+1} - h_i|\big)\sum_{j=1}^{d/2} |S_j|$ with
# $S_j = \sum_{i<j} e^{i\Delta\theta_i}$, and the average $\frac{2}{d}\sum_j |S_j|$ falls as the distance
# $\Delta$ grows. Three curves for $d = 128$ (a LLaMA head):
#
# * RoFormer's relative upper bound $\frac{2}{d}\sum_j |S_j|$;
# * the score of $q = k = \mathbf 1$ (all ones), $2\sum_i \cos(\Delta\theta_i)$, divided by $d$;
# * the mean $|q^\top R_\Delta k|$ over independent random $q, k$, divided by its value at $\Delta = 0$.
#
# The decay is real for *aligned* $q, k$ and not monotone (it wiggles); for unrelated random vectors
# there is nothing to decay: the rotation of a random direction is just another random direction.

# %%
dd = 128
theta = rope_frequencies(dd)
delta = torch.arange(0, 2049, dtype=torch.float64)
partial = torch.cumsum(torch.exp(1j * delta[:, None] * theta), dim=-1)       # S_j, j = 1..d/2
bound = partial.abs().mean(-1)
ones_score = 2 * torch.cos(delta[:, None] * theta).sum(-1)
g = torch.Generator().manual_seed(4)
n_pairs = pick(quick=500, full=4000)
qr, kr = torch.randn(2, n_pairs, 1, dd, generator=g, dtype=torch.float64)
probe = torch.tensor([0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048])
random_mean = torch.stack([(qr[:, 0] * apply_rope(kr, [int(p)])[:, 0]).sum(-1).abs().mean() for p in probe])

fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
plot_curves({"RoFormer bound (2/d)·Σ|S_j|  / 32.5": (delta, bound / bound[0]),
             "q = k = ones: score / d": (delta, ones_score / dd),
             "random q, k: mean |score|, relative": (probe, random_mean / random_mean[0])},
            xlabel="relative distance Δ = n - m", ylabel="relative size", ax=axes[0],
            title=f"RoPE scores against distance, d = {dd}", logx=False)
axes[0].set_xscale("symlog", linthresh=16)
wavelength = 2 * math.pi / theta
axes[1].semilogy(range(dd // 2), wavelength, "o-", ms=3)
for L, c in ((512, "tab:green"), (2048, "tab:red")):
    axes[1].axhline(L, color=c, ls="--", label=f"training length {L}")
axes[1].set_xlabel("pair i")
axes[1].set_ylabel("wavelength 2π/θ_i (positions)")
axes[1].set_title("pairs above a line never complete one turn in training")
axes[1].legend()
fig.tight_layout()
plt.show()

# %% tags=["nbval-check-output"]
check_close("q = k = ones at Δ = 0: score = d", ones_score[0], float(dd), atol=1e-9)
check_close("RoFormer bound at Δ = 0: (2/d)·Σ j = (d/2 + 1)/2", bound[0], (dd / 2 + 1) / 2, atol=1e-9)
win = lambda v, a, b: v[a:b].abs().mean()
check_true("ones score: mean |score| falls from Δ<16 to 16..127 to 128..1023 to 1024..2048",
           win(ones_score, 0, 16) > win(ones_score, 16, 128) > win(ones_score, 128, 1024) > win(ones_score, 1024, 2049))
check_true("ones score is NOT monotone in Δ (it wiggles)", (ones_score[1:] > ones_score[:-1]).any())
check_true("random q, k: mean |score| stays within 15% of its Δ = 0 value at every probed Δ",
           ((random_mean / random_mean[0] - 1).abs() < 0.15).all())
for L in (512, 2048):
    check_equal(f"d=128, base 10000: pairs that do not complete a turn within L = {L}", int((wavelength > L).sum()),
                sum(1 for i in range(dd // 2) if 2 * math.pi * 10000 ** (2 * i / dd) > L))

# %% [markdown]
# **On extrapolation.** 000 (§8.4.4 and Table 8.1: "Good"), 003 and 004 credit RoPE with length
# extrapolation. The right panel shows why that is not automatic: for $d = 128$ and a training length
# of 2048, 23 of the 64 pairs never complete a turn during training, so at positions beyond 2048 those
# pairs take angles, and their cross-talk with the content, that training never produced. Press et
# al. (2022, Fig. 1) measured rotary embeddings degrading past the training length much like
# sinusoids; long-context RoPE models get there by rescaling the positions or the base (e.g. position
# interpolation) and fine-tuning. What RoPE *does* guarantee is the relative form of each score, §2;
# the package's `RoPE` refuses positions past its `max_len` instead of silently running there.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6 · RoPE inside the package's attention
#
# `MultiHeadAttention.forward(..., rope=...)` calls `rope(q, k)` on the per-head tensors
# $(B, h, T, d_{head})$ after the projections and before the scores. `RoPE(d_head)` is that callable.
# It has no parameters: its cosine and sine tables are buffers.

# %%
show_source(RoPE)

# %% tags=["nbval-check-output"]
torch.manual_seed(6)
D6, H6, T6 = 32, 4, 10
dh = D6 // H6
mha = MultiHeadAttention(D6, H6).eval()
rope = RoPE(dh, max_len=64)
x6 = torch.randn(2, T6, D6)
with torch.no_grad():
    out = mha(x6, is_causal=True, rope=rope)
    q, k, v = (split_heads(p(x6), H6) for p in (mha.q_proj, mha.k_proj, mha.v_proj))
    q, k = apply_rope(q), apply_rope(k)                 # positions 0..T-1, the from-scratch reference
    by_hand = mha.out_proj(merge_heads(F.scaled_dot_product_attention(q, k, v, is_causal=True)))
check_close("MHA(rope=RoPE) vs rotate-then-attend by hand", (out - by_hand).abs().max(), 0.0, atol=1e-5)
check_equal("RoPE parameters", sum(p.numel() for p in rope.parameters()), 0)

layer = EncoderLayer(D6, H6, d_ff=64).eval()
with torch.no_grad():
    y = layer(x6, is_causal=True, rope=RoPE(dh))
    y_shift = layer(x6, is_causal=True, rope=RoPE(dh).at(q_offset=100, k_offset=100))
check_equal("EncoderLayer(...)(x, is_causal=True, rope=RoPE(d_head)) shape", y.shape, (2, T6, D6))
check_close("all positions shifted by 100: same output (nothing absolute left)", (y - y_shift).abs().max(), 0.0, atol=1e-4)

with torch.no_grad():   # a KV-cache step: the newest query at position T-1 against keys 0..T-1
    last = mha(x6[:, -1:], x6, x6, is_causal=True, rope=rope.at(q_offset=T6 - 1, k_offset=0))
check_close("KV-cache step vs last row of the full causal pass", (last[:, 0] - out[:, -1]).abs().max(), 0.0, atol=1e-5)
gqa = MultiHeadAttention(D6, H6, n_kv_heads=2).eval()
check_equal("GQA (2 K/V heads) with RoPE: shape", gqa(x6, is_causal=True, rope=rope).shape, (2, T6, D6))

# %% [markdown]
# Bad input gets a clear error, never a silent wrong rotation:

# %% tags=["nbval-check-output"]
msgs = [
    check_raises(ValueError, "even", RoPE, 7),
    check_raises(ValueError, "max_len=64", rope.rotate, torch.zeros(1, 65, dh)),
    check_raises(ValueError, "max_len=64", rope, torch.zeros(1, 1, dh), torch.zeros(1, 1, dh), q_offset=64),
    check_raises(ValueError, "pairing", RoPE, 8, pairing="rotate_half"),
    check_raises(ValueError, "expects x of shape", rope.rotate, torch.zeros(1, 4, dh + 2)),
    check_raises(ValueError, "positions must have shape", apply_rope, torch.zeros(4, 8), [0, 1, 2]),
]

# %% [markdown] slideshow={"slide_type": "slide"}
# ### The texts' RoPE formulas, checked
#
# * 000 §8.4.4: pairs $(2i, 2i+1)$, $\theta_i = 10000^{-2i/d}$, $i$ from 0, block-diagonal $R^m_\Theta$
#   with $d/2$ blocks, $(R^m)^\top R^n = R^{n-m}$, no parameters: all confirmed above.
# * 002 writes the rotation for pairs $(x_1, x_2), \dots, (x_{d-1}, x_d)$ with $\theta_1, \dots, \theta_{d/2}$
#   and $\theta_j = 10000^{-2j/d}$. **With $j$ counted from 1 that is off by one:** it gives
#   $\theta_1 = 10000^{-2/d}$ instead of 1 and ends at $10000^{-1}$. RoFormer writes
#   $\theta_i = 10000^{-2(i-1)/d}$ for $i = 1, \dots, d/2$, the same set as 000's $10000^{-2i/d}$ for
#   $i = 0, \dots, d/2-1$. The shifted set is still *a* valid rotary encoding: every angle is scaled by
#   $c = 10000^{-2/d}$, which is standard RoPE at positions $c\cdot m$ (the identity holds for any
#   frequencies). But it is not the one RoFormer, LLaMA or the other texts use, and weights trained with one do
#   not fit the other.
# * 002: $f(q,m)^\top f(k,n) = g(q, k, m-n)$; 003: the score "depends only on the relative position";
#   004: rotation "by an angle proportional to their absolute position": all confirmed.

# %% tags=["nbval-check-output"]
d_ = 8
roformer = torch.tensor([10000 ** (-2 * (i - 1) / d_) for i in range(1, d_ // 2 + 1)], dtype=torch.float64)
text_002 = torch.tensor([10000 ** (-2 * j / d_) for j in range(1, d_ // 2 + 1)], dtype=torch.float64)
check_close("000's θ_i (i from 0) = RoFormer's θ_i (i from 1)", (rope_frequencies(d_) - roformer).abs().max(), 0.0, atol=1e-15)
check_close("RoFormer: θ_1", roformer[0], 1.0, atol=1e-15)
check_close("002 read literally (j from 1): θ_1", text_002[0], 10000 ** (-2 / d_), atol=1e-15)
check_true("002's set differs from RoFormer's", not torch.allclose(text_002, roformer))
c = 10000 ** (-2 / d_)                                   # 002's θ_j = c·θ_(j-1): every angle scaled by c
q8, k8 = torch.randn(2, 1, d_, dtype=torch.float64)
by_002 = lambda v, m: rotate_pairs(v, torch.cos(m * text_002)[None], torch.sin(m * text_002)[None])
check_close("002's frequencies = standard RoPE at positions c·m",
            (by_002(q8, 5) - apply_rope(q8, [5 * c])).abs().max(), 0.0, atol=1e-12)
check_close("002's variant still satisfies the identity: |S(5,12) - S(10,17)|",
            (by_002(q8, 5) @ by_002(k8, 12).T - by_002(q8, 10) @ by_002(k8, 17).T).abs().max(), 0.0, atol=1e-12)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7 · Exercises
#
# Replace each `raise NotImplementedError` with your code and re-run the cell. The checker compares
# with a hidden reference on several cases and names the mistake it recognises.
# `ex.show_solution()` reveals a solution, on purpose only.
#
# ### Exercise 8.10: RoPE in a two-head attention
#
# Write `rope_scores(x, w_q, w_k, n_heads)` from scratch (no package calls): `x` is $(T, d_{model})$,
# `w_q`, `w_k` are $(d_{model}, d_{model})$ with $q = x\,w_q$, $k = x\,w_k$. Split into `n_heads` heads of
# $d_k = d_{model}/n_{heads}$, rotate pair $(2i, 2i+1)$ of the vector at position $m$ by $m\,\theta_i$ with
# $\theta_i = 10000^{-2i/d_k}$, and return the scaled scores
# $S[h, m, n] = \langle R_m q^h_m, R_n k^h_n\rangle/\sqrt{d_k}$, shape $(h, T, T)$. The checker's first case
# is the exercise's: $T = 32$, $d_{model} = 16$, two heads.

# %%
from transformer_nb.exercises.rope import relative_score_ex, rope_scores_ex


def rope_scores(x, w_q, w_k, n_heads):
    raise NotImplementedError


result = rope_scores_ex.check(rope_scores)

# %% [markdown]
# Once it passes, this cell runs the exercise's verification with *your* function: one token repeated
# over 32 positions, the pairs $(5, 12)$ and $(10, 17)$. The check prints only the tolerance; the next
# cell prints the values.

# %% tags=["nbval-check-output"]
g = torch.Generator().manual_seed(11)
tok = torch.randn(1, 16, generator=g, dtype=torch.float64).expand(32, 16)
wq, wk = torch.randn(2, 16, 16, generator=g, dtype=torch.float64) / 4
fn = rope_scores if rope_scores_ex.check(rope_scores, quiet=True) else rope_scores_ex.reference
S = fn(tok, wq, wk, 2)
for h in range(2):
    check_close(f"head {h}: |S(5,12) - S(10,17)|", (S[h, 5, 12] - S[h, 10, 17]).abs(), 0.0, atol=1e-10)

# %%
print("computed with", "your rope_scores" if fn is rope_scores else "the hidden reference (yours does not pass yet)")
for h in range(2):
    print(f"head {h}: S(5,12) = {S[h, 5, 12].item():+.12f}   S(10,17) = {S[h, 10, 17].item():+.12f}   "
          f"|difference| = {abs(S[h, 5, 12] - S[h, 10, 17]).item():.1e}")

# %% [markdown]
# A typical mistake, caught: computing the frequencies from $d_{model}$ instead of the head size.

# %% tags=["nbval-check-output"]
def rope_scores_dmodel_freqs(x, w_q, w_k, n_heads):
    t, d_model = x.shape
    d_k = d_model // n_heads
    q = (x @ w_q).view(t, n_heads, d_k).transpose(0, 1)
    k = (x @ w_k).view(t, n_heads, d_k).transpose(0, 1)
    ang = torch.arange(t, dtype=x.dtype)[:, None] * 10000.0 ** (-torch.arange(0, d_k, 2, dtype=x.dtype) / d_model)
    c, s = torch.cos(ang), torch.sin(ang)
    rot = lambda v: torch.stack((v[..., 0::2] * c - v[..., 1::2] * s, v[..., 0::2] * s + v[..., 1::2] * c), -1).flatten(-2)
    return rot(q) @ rot(k).transpose(-2, -1) / math.sqrt(d_k)


result = rope_scores_ex.check(rope_scores_dmodel_freqs)
assert not result.passed and "frequencies use d_model" in result.message

# %% [markdown]
# ### The identity, pair by pair
#
# Expand $q^\top R_\Delta k$ for one pair $(q_1, q_2)$, $(k_1, k_2)$ and sum over the pairs. Write
# `relative_score(q, k, delta)` for vectors `q`, `k` of shape $(d,)$: the score of any query/key
# positions with $n - m = \Delta$, **without** building a matrix or calling `apply_rope`
# ($\theta_i = 10000^{-2i/d}$). Check on paper first: at $\Delta = 0$ it must be $q\cdot k$.

# %%
def relative_score(q, k, delta):
    raise NotImplementedError


result = relative_score_ex.check(relative_score)

# %% [markdown]
# The checker knows the sign slip (which gives the score of offset $m - n$):

# %% tags=["nbval-check-output"]
def relative_score_flipped(q, k, delta):
    d = q.shape[-1]
    a = delta * 10000.0 ** (-torch.arange(0, d, 2, dtype=q.dtype) / d)
    q1, q2, k1, k2 = q[0::2], q[1::2], k[0::2], k[1::2]
    return ((q1 * k1 + q2 * k2) * torch.cos(a) - (q2 * k1 - q1 * k2) * torch.sin(a)).sum()


result = relative_score_ex.check(relative_score_flipped)
assert not result.passed and "wrong sign" in result.message

# %% [markdown]
# To see a reference solution on purpose: `rope_scores_ex.show_solution()`,
# `relative_score_ex.show_solution()`.
#
# **Next:** notebook 06 assembles the Transformer block; `EncoderLayer(...)(x, is_causal=True,
# rope=RoPE(d_head))` is the decoder-only block with rotary positions.
