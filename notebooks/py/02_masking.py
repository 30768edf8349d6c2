# %% [markdown] slideshow={"slide_type": "slide"}
# # 02 · Masking: causal, padding and cross-attention masks
#
# [![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-nb/transformer-nb/blob/main/notebooks/02_masking.ipynb)
#
# Attention lets every query read every key. Often it must not. A language model learns to predict each
# token from the ones before it, but in training all positions run at once, so without a rule each
# position could simply read the token it is asked to predict. And a batch of sentences of unequal
# lengths is padded to a rectangle, so without a rule real tokens would attend to padding. A **mask**
# is that rule: for every query, which keys it may read. This notebook builds the masks a Transformer
# needs, checks them against PyTorch's, and trains a tiny model without the causal mask to show what
# goes wrong.
#
# **Serves:** 000 §8.2.4 (Masking for Autoregressive Models), §8.6.4 (The Causal Mask) · 001 §19.6.2,
# §19.7.1–19.7.3 · 004 §5.5 (Causal Masking).
#
# **Runtime on 2 CPU cores:** quick ~10 s, full ~15 s.

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
import math

import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F
from matplotlib.colors import ListedColormap
from torch.nn.attention.bias import causal_lower_right

from transformer_nb import check_close, check_equal, check_true, pick, show_source
from transformer_nb.core.attention import scaled_dot_product_attention
from transformer_nb.core.masks import (
    causal_mask,
    key_padding,
    padding_mask,
    padding_mask_from_ids,
    self_attention_mask,
)
from transformer_nb.interop import additive
from transformer_nb.plotting import heatmap, heatmaps, plot_curves
from transformer_nb.train import train
from transformer_nb.widgets.masks import MaskExplorer

MASK_CMAP = ListedColormap(["#d9d9d9", "#2b8cbe"])  # grey = blocked, blue = may attend


def gap(a, b):
    """The largest elementwise difference |a - b|."""
    return (a - b).abs().max()


# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · The causal mask
#
# A language model factorises $p(x_1,\dots,x_T) = \prod_t p(x_t \mid x_1,\dots,x_{t-1})$. In training, all
# $T$ positions are computed in one pass, so the query at position $i$ could read positions $i+1,\dots,T$:
# the very tokens it is asked to predict. The causal mask forbids it. 000 §8.2.4 writes it as a matrix
# added to the scores,
#
# $$M_{ij} = \begin{cases}0 & j \le i\\ -\infty & j > i\end{cases}\qquad
# \operatorname{Attention}(Q,K,V) = \operatorname{softmax}\!\Big(\frac{QK^\top}{\sqrt{d_k}} + M\Big)V,$$
#
# and 000 §8.6.4 as a lower-triangular matrix of **booleans**, True where query $i$ may see key $j$. They
# are two spellings of one rule. Every mask in this companion is **bool, True = may attend**, the
# convention of `F.scaled_dot_product_attention`; `additive(mask)` converts one to the $0/-\infty$ form.
# The package's `additive` (its `causal_mask` is yours to write in the first exercise below; once your
# answer passes, the worked solution shows the package's):

# %%
show_source(additive)

# %%
T = 6
torch.manual_seed(0)
q1, k1, v1 = torch.randn(3, 1, T, 8).unbind(0)  # (1, T, 8) each
out_bool, w_bool = scaled_dot_product_attention(q1, k1, v1, mask=causal_mask(T))
out_add, w_add = scaled_dot_product_attention(q1, k1, v1, mask=additive(causal_mask(T)))

fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
axes[0].imshow(causal_mask(T).numpy(), cmap=MASK_CMAP, vmin=0, vmax=1)
for i, row in enumerate(additive(causal_mask(T)).tolist()):
    for j, value in enumerate(row):
        axes[0].text(j, i, "0" if value == 0 else "−∞", ha="center", va="center", color="w" if value == 0 else "k")
axes[0].set_title("causal_mask(6), blue = True = may attend,\nwith additive(causal_mask(6)) written in it", fontsize=10)
heatmap(w_bool[0], ax=axes[1], annotate=True, vmin=0, vmax=1, title="weights softmax(QKᵀ/√d + M)")
for ax in axes:
    ax.set_xlabel("key j")
    ax.set_ylabel("query i")
    ax.set_xticks(range(T), range(1, T + 1))
    ax.set_yticks(range(T), range(1, T + 1))
fig.suptitle("The causal mask, two forms, one result: zero weight on every future key", fontsize=11)
fig.tight_layout()
plt.show()

# %% [markdown]
# Since $\exp(-\infty)$ is exactly `0.0` in floating point, the future keys get weight **exactly** zero,
# not nearly zero, and the two forms of the mask give bit-identical weights. PyTorch agrees, with either
# form or with `is_causal=True`, and its `nn.Transformer.generate_square_subsequent_mask` is the additive
# form.

# %% tags=["nbval-check-output"]
same = [torch.equal(additive(causal_mask(n)), nn.Transformer.generate_square_subsequent_mask(n)) for n in range(1, 33)]
check_true("additive(causal_mask(T)) == nn.Transformer.generate_square_subsequent_mask(T), T = 1..32", all(same))
check_equal("exp(-inf) in float32", torch.exp(torch.tensor(-math.inf)).item(), 0.0)
check_equal("weights above the diagonal that are not exactly 0.0", int((w_bool[0].triu(1) != 0).sum()), 0)
check_true("bool mask and additive mask give bit-identical weights", torch.equal(w_bool, w_add))
check_close("each row still sums to 1", w_bool.sum(-1), torch.ones(1, T), atol=1e-6)
for name, kw in (("attn_mask=bool", {"attn_mask": causal_mask(T)}), ("is_causal=True", {"is_causal": True})):
    sdpa = F.scaled_dot_product_attention(q1, k1, v1, **kw)
    check_close(f"package vs F.scaled_dot_product_attention({name})", gap(out_bool, sdpa), 0.0, atol=1e-6)

# %% [markdown]
# ### Two traps in PyTorch's masks
#
# **Polarity.** PyTorch's APIs do not agree on what a bool `True` means:
#
# | where | bool `True` means |
# |---|---|
# | this package, `F.scaled_dot_product_attention(attn_mask=)` | **may attend** |
# | `nn.MultiheadAttention(attn_mask=)`, `nn.Transformer*(src_mask=, tgt_mask=)` | **blocked** |
# | `nn.MultiheadAttention(key_padding_mask=)` | **padding, blocked** |
#
# So a package mask goes to `nn.MultiheadAttention` inverted (`~mask`) or as `additive(mask)`; passed
# unchanged, it is read upside down and every query sees only its **future**.
#
# **Alignment.** When a model generates with a cache of keys and values (notebook 10), the $T_q$ new queries
# are the last of $T_k$ positions, so the triangle must be aligned to the **bottom right**, as
# `causal_mask(T_q, T_k)` and PyTorch's `causal_lower_right` do. `is_causal=True` aligns it to the **top
# left**: a different mask when $T_q < T_k$.

# %% tags=["nbval-check-output"]
d = 8
mha = nn.MultiheadAttention(d, num_heads=1, batch_first=True).eval()
x = torch.randn(2, T, d)
with torch.no_grad():
    right, w_right = mha(x, x, x, attn_mask=~causal_mask(T))
    additive_out = mha(x, x, x, attn_mask=additive(causal_mask(T)))[0]
    w_wrong = mha(x, x, x, attn_mask=causal_mask(T))[1]  # the package's mask, unchanged
check_close("nn.MultiheadAttention: attn_mask=additive(mask) vs attn_mask=~mask", gap(additive_out, right), 0.0)
check_equal("attn_mask=~mask: weights on future keys", int((w_right[0].triu(1) != 0).sum()), 0)
check_true("attn_mask=mask, unchanged: query 1 ignores itself and reads only its future",
           bool(w_wrong[0, 0, 0] == 0) and bool(w_wrong[0, 0, 1:].sum() > 0.99))
check_equal("causal_mask(2, 5)", causal_mask(2, 5).int(), torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]))
q2, k5, v5 = torch.randn(1, 2, 8), torch.randn(1, 5, 8), torch.randn(1, 5, 8)
bottom_right = F.scaled_dot_product_attention(q2, k5, v5, attn_mask=causal_mask(2, 5))
lower_right = F.scaled_dot_product_attention(q2, k5, v5, attn_mask=causal_lower_right(2, 5))
check_close("causal_mask(2, 5) vs torch's causal_lower_right(2, 5)", gap(bottom_right, lower_right), 0.0)
top_left = F.scaled_dot_product_attention(q2, k5, v5, is_causal=True)
check_true("is_causal=True is top-left aligned: it differs when T_q < T_k", gap(top_left, bottom_right) > 1e-3)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · Padding masks: a batch of unequal lengths
#
# A batch is a rectangle, sentences are not: shorter ones are filled up with a pad token, and attention
# must ignore those positions as **keys** (001 §19.6.2). The padding mask holds one bool per token, True at
# real tokens; `padding_mask(lengths)` builds it from the lengths, `padding_mask_from_ids(ids, PAD)` from
# the pad id.

# %%
PAD = 0
vocab = ["<pad>", "the", "cat", "sat", "on", "a", "mat", "dogs", "bark", "loudly", "birds", "sing"]
sentences = [["the", "cat", "sat", "on", "a", "mat"], ["dogs", "bark"], ["birds", "sing", "loudly"],
             ["the", "dogs", "sat"]]
lengths = [len(s) for s in sentences]
T = max(lengths)
ids = torch.tensor([[vocab.index(w) for w in s] + [PAD] * (T - len(s)) for s in sentences])  # (B, T)
keep = padding_mask(lengths)  # (B, T) bool, True at real tokens
print(ids, keep.int(), sep="\n")

# %% tags=["nbval-check-output"]
check_equal("padding mask: shape (B, T)", keep.shape, (4, 6))
from_ids = padding_mask_from_ids(ids, PAD)
check_true("padding_mask(lengths) == padding_mask_from_ids(ids, PAD)", torch.equal(keep, from_ids))
check_equal("real tokens per row", keep.sum(1), torch.tensor(lengths))

# %% [markdown]
# One bool per token is not yet an attention mask, which needs one bool per (query, key) pair. Padding
# concerns the **key** axis (every query ignores padded keys), so the $(B, T)$ mask becomes
# $(B, 1, T_q, T_k)$ by broadcasting along the query axis; the 1 broadcasts over the heads. A decoder also
# ANDs in the causal mask. `self_attention_mask(keep, causal=...)` builds both:

# %%
enc_masks = self_attention_mask(keep)  # (B, 1, T, T): padding only (an encoder)
dec_masks = self_attention_mask(keep, causal=True)  # (B, 1, T, T): padding AND causal (a decoder)
fig = heatmaps([*enc_masks[:, 0].float(), *dec_masks[:, 0].float()],
               titles=[f"encoder, length {n}" for n in lengths] + [f"decoder, length {n}" for n in lengths],
               ncols=4, size=2.8, cmap=MASK_CMAP, vmin=0, vmax=1)
for ax, b in zip(fig.axes, [*range(4), *range(4)]):
    words = [vocab[t] for t in ids[b].tolist()]
    ax.set_xticks(range(T), words, rotation=70, fontsize=7)
    ax.set_yticks(range(T), words, fontsize=7)
fig.suptitle("Self-attention masks of a padded batch (rows = queries, columns = keys; blue = may attend)", y=1.02)
fig.tight_layout()
plt.show()

# %% [markdown]
# The decisive property of a correct padding mask is **padding invariance**: at the real positions, a padded
# sequence gives the same outputs as the same sequence run alone, without padding, for the encoder's mask
# and for the decoder's. Without the mask it does not. `nn.MultiheadAttention` gets the same mask through
# `key_padding_mask`, with the opposite polarity (True = padding).

# %% tags=["nbval-check-output"]
torch.manual_seed(1)
x = nn.Embedding(len(vocab), d)(ids).detach()  # (B, T, d)
for causal in (False, True):
    batch_out = F.scaled_dot_product_attention(x, x, x, attn_mask=self_attention_mask(keep, causal=causal)[:, 0])
    worst = max(gap(batch_out[b, :n], F.scaled_dot_product_attention(*[x[b, :n]] * 3, is_causal=causal))
                for b, n in enumerate(lengths))
    check_close(f"{'decoder' if causal else 'encoder'}: max |padded batch - each sequence alone|", worst, 0.0)
unmasked = F.scaled_dot_product_attention(x, x, x)
check_true("without the padding mask, the short sequences' outputs change",
           gap(unmasked[1, :2], F.scaled_dot_product_attention(*[x[1, :2]] * 3)) > 1e-2)
with torch.no_grad():
    short = mha(x, x, x, key_padding_mask=~keep)[0][1, :2]  # "dogs bark", padded to 6
    alone = mha(*[x[1:2, :2]] * 3)[0][0]
check_close("nn.MultiheadAttention(key_padding_mask=~keep): the same invariance", gap(short, alone), 0.0, atol=1e-5)

# %% [markdown]
# Padded *queries* (the rows of the pad tokens above) still attend to the real keys; their outputs are never
# used, because the loss skips pad targets (`F.cross_entropy(..., ignore_index=PAD)`).
#
# ### Cross-attention: target length × source length
#
# In an encoder–decoder, the decoder's queries attend to the encoder's outputs: the score matrix is
# $T_\text{tgt}\times S$ (001 §19.7.3). The source is fully known, so there is **no causal mask** here
# (000 §8.2.4), but the source padding must still be blocked. Cross-attention's mask is simply the source's
# padding mask: `key_padding(src_keep, T_tgt)` broadcasts it over the $T_\text{tgt}$ queries.

# %% tags=["nbval-check-output"]
src_lengths, T_tgt = [4, 6, 2], 5  # three source sentences; the targets are padded to 5 tokens
cross = key_padding(padding_mask(src_lengths), T_tgt)  # (B, 1, T_tgt, S)
check_equal("cross-attention mask shape (B, 1, T_tgt, S)", cross.shape, (3, 1, 5, 6))
check_true("every decoder query sees exactly the real source tokens",
           torch.equal(cross[:, 0].sum(-1), torch.tensor(src_lengths)[:, None].expand(3, T_tgt)))
dec_x, enc_x = torch.randn(3, T_tgt, d), torch.randn(3, 6, d)
pair3 = F.scaled_dot_product_attention(dec_x, enc_x, enc_x, attn_mask=cross[:, 0])[2]
alone = F.scaled_dot_product_attention(dec_x[2], enc_x[2, :2], enc_x[2, :2])
check_close("source padding invariance: pair 3 vs its 2 real source tokens alone", gap(pair3, alone), 0.0)

# %% [markdown]
# **Which sublayer uses which mask** (000 §8.2.4 and Table 8.2, 001 §19.6.2 and §19.7):
#
# | model | sublayer | mask |
# |---|---|---|
# | encoder-only (BERT) | self-attention | padding only |
# | decoder-only (GPT) | self-attention | causal (AND padding when batches are padded) |
# | encoder–decoder (T5, the original) | encoder self-attention | source padding |
# | | decoder self-attention | causal AND target padding |
# | | decoder cross-attention | source padding, **not** causal |
#
# The causal mask is one $(T, T)$ tensor for every layer and every head (000 §8.6.4): it broadcasts to
# $(B, h, T, T)$.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · Queries with no key: zeros, never NaN
#
# A query row is *fully masked* when none of its keys may be read. That happens in ordinary batches: a
# length-0 sequence (all keys are padding), or **left padding with a causal mask** (how batched generation
# pads prompts), where a leading pad query has only pad keys in its past. Notebook 01 showed that the plain
# softmax of such a row is NaN. Worse, the NaN **spreads**: the next layer gives the padded position weight 0,
# but $0 \cdot \text{NaN} = \text{NaN}$, so every output of that sequence becomes NaN, and the loss with it.
# Below, a left-padded batch through two layers of plain attention (with $-\infty$, and with $-10^9$ instead),
# and of the package's. The widget after it draws such rows.

# %%
def plain_attention(q, k, v, mask, fill=-math.inf):
    """Attention with a bool mask and a plain softmax: no special case for a row with no key."""
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~mask, fill)
    w = torch.softmax(scores, dim=-1)
    return w @ v, w


left_ids = torch.tensor([[PAD, PAD, 1, 2, 3], [4, 5, 6, 7, 8]])  # sequence 0 is left-padded
left_mask = self_attention_mask(padding_mask_from_ids(left_ids, PAD), causal=True)[:, 0]  # (2, 5, 5)
h0 = torch.randn(len(vocab), d)[left_ids]
runs = {}
for name, attend in (("plain, -inf", plain_attention),
                     ("plain, -1e9", lambda q, k, v, m: plain_attention(q, k, v, m, fill=-1e9)),
                     ("package", scaled_dot_product_attention)):
    h1, w1 = attend(h0, h0, h0, left_mask)
    h2, _ = attend(h1, h1, h1, left_mask)
    runs[name] = dict(w1=w1, h1=h1, h2=h2)

# %% tags=["nbval-check-output"]
empty_rows = ~left_mask.any(-1)
check_equal("fully masked rows (sequence 0, 0-based)", torch.nonzero(empty_rows[0]).flatten().tolist(), [0, 1])
r = runs["plain, -inf"]
check_true("plain, layer 1: exactly the 2 empty rows are NaN", torch.equal(r["h1"][0].isnan().any(-1), empty_rows[0]))
check_true("plain, layer 2: the NaN has spread to EVERY position of sequence 0", r["h2"][0].isnan().all())
check_true("plain, layer 2: sequence 1 (no padding) is untouched", torch.isfinite(r["h2"][1]).all())
check_close("-1e9 instead of -inf: no NaN, but an empty row becomes uniform over ALL keys, pads included",
            runs["plain, -1e9"]["w1"][0, 0], [0.2] * 5, atol=1e-6)
r = runs["package"]
check_equal("package: weights of the empty rows", r["w1"][0, :2], torch.zeros(2, 5))
check_equal("package: outputs of the empty rows", r["h1"][0, :2], torch.zeros(2, d))
check_true("package: no NaN anywhere after two layers", torch.isfinite(r["h2"]).all())
alone = scaled_dot_product_attention(h0[0:1, 2:], h0[0:1, 2:], h0[0:1, 2:], causal_mask(3))[0][0]
check_close("package: the real queries are unaffected by the pads", gap(r["h1"][0, 2:], alone), 0.0, atol=1e-6)

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Explore: the masks and weights of a padded batch
#
# Three sequences: set their lengths, pad them on the right or on the left, switch the causal mask on and
# off. Top: each sequence's combined mask; bottom: the attention weights it produces. Try **pad left +
# causal** (the leading pad queries have no visible key, marked in red, and get zero weights), **not
# causal** (every real query sees every real token, padded keys stay grey), and a **length 0**.

# %%
MaskExplorer().show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · What goes wrong without the causal mask: an experiment
#
# 000 §8.2.4 warns that without the causal mask a model "performs perfectly on training data but cannot
# generate text"; 004 §5.5 that it "would just copy the future token". Let us watch it happen.
#
# **The task** is built so that the best possible loss is known exactly: two interleaved random walks on
# $\{0,\dots,15\}$, $x_0, x_1$ uniform, then $x_t = x_{t-2} + s_t \bmod 16$ with $s_t \in\{1, 2\}$ equally
# likely. Seeing only the past, no predictor beats "$x_{t-2}+1$ or $x_{t-2}+2$, fifty-fifty": a loss of
# $\ln 2 \approx 0.693$ nats per token (scored for $t\ge 2$). A model that sees $x_t$ itself can get near 0.
#
# **The model** uses only what notebooks 01–02 taught: token embeddings plus a learned embedding per position
# (notebook 04 is about positions), single-head attention layers with a residual connection, optionally
# with `causal_mask`, and a linear read-out to 16 logits.

# %%
V, T_SEQ = 16, 16


def sample_walks(n, generator=None):
    """(n, T_SEQ) sequences: x_t = x_{t-2} + s_t mod V, s_t in {1, 2}; x_0, x_1 uniform."""
    x, step = torch.randint(V, (n, T_SEQ), generator=generator), torch.randint(1, 3, (n, T_SEQ), generator=generator)
    for t in range(2, T_SEQ):
        x[:, t] = (x[:, t - 2] + step[:, t]) % V
    return x


def follows_rule(x):
    """(n, T-2) bool: does x_t - x_{t-2} mod V lie in {1, 2}?"""
    diff = (x[:, 2:] - x[:, :-2]) % V
    return (diff == 1) | (diff == 2)


class TinyLM(nn.Module):
    """ids (B, T) -> logits (B, T, V): embeddings, n_layers × [single-head attention + residual], read-out.
    ``causal`` turns the causal mask on or off; ``weights`` keeps each layer's attention weights (B, T, T)."""

    def __init__(self, causal, n_layers=1, d=32):
        super().__init__()
        self.causal = causal
        self.tok, self.pos = nn.Embedding(V, d), nn.Embedding(T_SEQ, d)
        self.qkv = nn.ModuleList(nn.Linear(d, 3 * d) for _ in range(n_layers))
        self.out = nn.ModuleList(nn.Linear(d, d) for _ in range(n_layers))
        self.head = nn.Linear(d, V)

    def forward(self, ids):
        h = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        mask = causal_mask(ids.shape[1]) if self.causal else None
        self.weights = []
        for qkv, out in zip(self.qkv, self.out):
            a, w = scaled_dot_product_attention(*qkv(h).chunk(3, dim=-1), mask)
            self.weights.append(w)
            h = h + out(a)
        return self.head(h)


def lm_loss(model, x):
    """Mean cross-entropy of predicting x_t (t >= 2) at position t-1 of the input x_0..x_{T-2}."""
    return F.cross_entropy(model(x[:, :-1])[:, 1:].reshape(-1, V), x[:, 2:].reshape(-1))


x_eval = sample_walks(2000, torch.Generator().manual_seed(123))  # held out: never trained on
# the best honest predictor puts ½ on x_{t-2}+1 and ½ on x_{t-2}+2
oracle = torch.full((2000, T_SEQ - 2, V), -math.inf).scatter(2, (x_eval[:, :-2, None] + torch.tensor([1, 2])) % V, 0.0)

# %% tags=["nbval-check-output"]
check_true("every held-out sequence follows the rule", follows_rule(x_eval).all())
oracle_loss = F.cross_entropy(oracle.reshape(-1, V), x_eval[:, 2:].reshape(-1))
check_close("loss of the best honest predictor = ln 2", oracle_loss, math.log(2), atol=1e-6)

# %% [markdown]
# ### (a) Without the mask, the past depends on the future
#
# Two models with the same initial weights, one with the mask and one without. Change the token at position
# $t$ and measure how much the logits at the **earlier** positions $0..t-1$ move. With the causal mask they
# must not move at all, for every $t$: not a little, zero.

# %%
def leak(model, x):
    """For each t >= 1: max |Δ logits| at positions < t when token t of x (1, T) is replaced."""
    out = []
    for t in range(1, x.shape[1]):
        x2 = x.clone()
        x2[0, t] = (x2[0, t] + 7) % V
        with torch.no_grad():
            out.append(gap(model(x)[0, :t], model(x2)[0, :t]).item())
    return out


torch.manual_seed(1)
models = {"with causal mask": TinyLM(causal=True), "without mask": TinyLM(causal=False)}
models["without mask"].load_state_dict(models["with causal mask"].state_dict())  # the same weights
probe = x_eval[:1, :-1]

# %% tags=["nbval-check-output"]
leak_before = {name: leak(m, probe) for name, m in models.items()}
check_equal("with the causal mask: max |Δ logits| at positions < t, all t", max(leak_before["with causal mask"]), 0.0)
check_true("without the mask: every earlier position moves, for every t", min(leak_before["without mask"]) > 1e-4)

# %% [markdown]
# ### (b) Train both
#
# The same batches for both (fresh random sequences at every step, so nothing can be memorised), Adam, the
# package's one training loop (`transformer_nb.train.train`).

# %%
steps = pick(quick=250, full=1000)
losses = {}
for name, m in models.items():
    g = torch.Generator().manual_seed(2)  # the same batches for both models
    batches = (sample_walks(64, g) for _ in range(steps))
    hist = train(m, lm_loss, batches, torch.optim.Adam(m.parameters(), lr=1e-2), steps=steps, title=name)
    losses[name] = hist["loss"]
with torch.no_grad():
    eval_loss = {name: lm_loss(m, x_eval).item() for name, m in models.items()}

ax = plot_curves({name: (range(1, steps + 1), losses[name]) for name in models}, xlabel="step", logy=True,
                 ylabel="training loss (nats)", title="Without the mask the loss falls below what is possible honestly")
ax.axhline(math.log(2), color="k", ls="--", lw=1, label="honest floor ln 2")
ax.legend()
plt.show()
print({name: f"held-out loss {value:.3f} nats" for name, value in eval_loss.items()})
assert math.log(2) - 0.02 < eval_loss["with causal mask"] < pick(quick=0.85, full=0.78), eval_loss
assert eval_loss["without mask"] < pick(quick=0.4, full=0.15), eval_loss

# %% [markdown]
# The unmasked model's held-out loss is **below $\ln 2$**, which no predictor that sees only the past can
# reach on these sequences: the number itself proves that it reads the answer.

# %% tags=["nbval-check-output"]
check_true("without the mask: held-out loss < ln 2, impossible honestly", eval_loss["without mask"] < math.log(2))
check_true("with the mask: held-out loss >= ln 2 (up to noise)", eval_loss["with causal mask"] > math.log(2) - 0.02)

# %% [markdown]
# ### (c) Where each model looks
#
# The attention weights on one held-out sequence. The honest model looks one position **back** from the query
# (at $x_{t-2}$, the token the rule needs, since query $t-1$ predicts $x_t$). The unmasked model looks one
# position **forward**, at the very token it must predict, and copies it (except at its last position, which
# has no future token in the input: there its attention spreads out).

# %%
with torch.no_grad():
    for m in models.values():
        m(x_eval[:200, :-1])  # keeps its attention weights in m.weights
attn = {name: m.weights[0] for name, m in models.items()}  # (200, 15, 15) each
fig = heatmaps([attn[name][0] for name in models], titles=list(models), ncols=2, size=4.2, vmin=0, vmax=1)
for ax in fig.axes[:2]:
    ax.set_xticks(range(0, T_SEQ - 1, 2))
    ax.set_yticks(range(0, T_SEQ - 1, 2))
    ax.set_xlabel("key position")
fig.axes[0].set_ylabel("query position")
fig.suptitle("Attention of the trained models: one step back (honest) vs one step forward (copying)", y=1.02)
plt.show()

# %% tags=["nbval-check-output"]
def typical_offset(w):
    """The most common (argmax key - query) over the queries 1..T-3 of a batch of weights (B, T, T)."""
    return int((w.argmax(-1) - torch.arange(w.shape[-1]))[:, 1:-1].flatten().mode().values)


check_equal("with the mask: each query looks at offset", typical_offset(attn["with causal mask"]), -1)
check_equal("without the mask: each query looks at offset", typical_offset(attn["without mask"]), +1)

# %% [markdown]
# ### (d) The cheater cannot generate
#
# Give each model the first two tokens of 500 held-out sequences and let it continue greedily, one token at a
# time, up to 16 tokens. Now the future does not exist yet: the token the unmasked model learned to copy is
# not there. A random guess keeps the rule ($x_t - x_{t-2} \in \{1, 2\}$) 2 times in 16.

# %%
def generate(model, prompt, length):
    """Greedy continuation of prompt (B, T0) to (B, length)."""
    x = prompt
    with torch.no_grad():
        while x.shape[1] < length:
            x = torch.cat([x, model(x)[:, -1].argmax(-1, keepdim=True)], dim=1)
    return x


generated = {name: generate(m, x_eval[:500, :2], T_SEQ) for name, m in models.items()}
legal = {name: follows_rule(g).float().mean().item() for name, g in generated.items()}
for name, g in generated.items():
    marks = "".join("·" if ok else "✗" for ok in follows_rule(g[:1])[0].tolist())
    print(f"{name:>17}: {g[0].tolist()}\n{'':>19}rule kept: {marks}  ({100 * legal[name]:.1f}% of 7000 tokens)")
assert legal["with causal mask"] > pick(quick=0.95, full=0.99), legal

# %% tags=["nbval-check-output"]
check_true("with the mask, generated tokens keep the rule more than 95% of the time", legal["with causal mask"] > 0.95)
check_true("without the mask, fewer than 30% do (random guessing: 12.5%)", legal["without mask"] < 0.3)

# %% [markdown]
# ### (e) At inference, is the mask still needed?
#
# When a model generates, the future does not exist yet, so the mask may seem to have nothing left to do.
# That holds for the **new** query: it is the last position and may see everything. It holds with a key/value
# cache (notebook 10), where each cached key and value was computed when its position was the last one. But
# when the whole prefix is **recomputed** at each step, without the mask the earlier positions of layer 1 see
# later ones, and layer 2 reads those changed values. So the last position's output is unchanged for one
# layer only:

# %% tags=["nbval-check-output"]
def last_logits(model, x, causal):
    """The logits at the last position of x, with the causal mask on or off."""
    model.causal = causal
    with torch.no_grad():
        out = model(x)[:, -1]
    model.causal = True
    return out


prefixes = x_eval[:50, :9]
one_layer = models["with causal mask"]
check_close("1 layer (trained): last-position logits, mask vs no mask",
            gap(last_logits(one_layer, prefixes, True), last_logits(one_layer, prefixes, False)), 0.0, atol=1e-5)
torch.manual_seed(3)
two_layers = TinyLM(causal=True, n_layers=2)
check_true("2 layers: the last-position logits CHANGE when the mask is dropped",
           gap(last_logits(two_layers, prefixes, True), last_logits(two_layers, prefixes, False)) > 1e-2)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5 · Exercises
#
# Each checker runs your function against a hidden reference on several cases and prints `✓` or a nudge that
# names the mistake. `ex.hint()` gives a hint (more specific each time), `ex.solution()` a worked solution:
# only after you have tried. All masks here are **bool, True = may attend**.
#
# ### Exercise 1: the causal mask
# Write `my_causal_mask(T)` returning a $(T, T)$ **bool** tensor, True where query $i$ may attend to key $j$.

# %%
from transformer_nb.exercises.masks import causal_ex, combined_ex, padding_ex


# %% tags=["exercise"]
def my_causal_mask(T):
    raise NotImplementedError  # your code here


causal_ex.check(my_causal_mask)

# %% tags=["solution"] cellView="form" jupyter={"source_hidden": true, "outputs_hidden": true}
# The package's own version, once your answer to the causal-mask exercise passes (or after causal_ex.solution())
if causal_ex.unlocked():
    show_source(causal_mask)

# %% [markdown]
# ### Exercise 2: a padding mask from lengths
# Write `my_padding_mask(lengths, max_len)` returning a $(B, \text{max\_len})$ bool tensor, True at the real
# tokens of right-padded sequences.

# %% tags=["exercise"]
def my_padding_mask(lengths, max_len):
    raise NotImplementedError  # your code here


padding_ex.check(my_padding_mask)

# %% [markdown]
# ### Exercise 3: padding + causal for a decoder batch
# Write `my_decoder_mask(keep)`: `keep` is $(B, T)$ bool (True at real tokens); return the $(B, 1, T, T)$ bool
# self-attention mask of a decoder: a query may attend to a key iff the key is a real token **and** not in the
# query's future. Padded queries keep attending to the real keys before them.

# %% tags=["exercise"]
def my_decoder_mask(keep):
    raise NotImplementedError  # your code here


combined_ex.check(my_decoder_mask)

# %% [markdown]
# Your three masks together, in PyTorch's fused attention: a batch of two sequences of lengths 5 and 3,
# padded to 6. With your masks (once all three pass; a hidden reference otherwise), no query attends to a
# padded key or to the future, and every real query's weights sum to 1.

# %%
causal_fn, padding_fn, decoder_fn = (
    causal_ex.use(my_causal_mask), padding_ex.use(my_padding_mask), combined_ex.use(my_decoder_mask))
keep = padding_fn([5, 3], 6)
mask = decoder_fn(keep)
g = torch.Generator().manual_seed(0)
q, k = torch.randn(2, 1, 6, 8, generator=g), torch.randn(2, 1, 6, 8, generator=g)
w = F.scaled_dot_product_attention(q, k, torch.eye(6).expand(2, 1, 6, 6), attn_mask=mask)  # v = I: output = weights
check_true("no weight on a padded key", bool((w[~keep[:, None, None, :].expand_as(w)] == 0).all()))
check_true("no weight on a future key", bool((w.triu(1) == 0).all()))
check_close("the real queries' weights sum to 1", w.sum(-1)[keep[:, None, :]], torch.ones(8), atol=1e-6)
check_true("the causal mask is the decoder mask of a batch without padding",
           torch.equal(decoder_fn(torch.ones(1, 6, dtype=torch.bool))[0, 0], causal_fn(6)))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Appendix · The texts, checked
#
# Every claim of the texts that belongs to this notebook, with its verdict from the claims ledger
# (`transformer_nb.claims`, rendered in notebook 13); the ledger runs its checks below. In short:
#
# - **000 §8.6.4 is wrong** that applying the mask at inference "makes no difference to the output"
#   (`000-8.6.4-nodiff`): true for one layer or for the new query of cached decoding, false when a model of
#   two or more layers recomputes the prefix; section 4 (e) shows both cases. This is the one home of that
#   refutation; other notebooks cite the id.
# - **004 §5.5 is imprecise** in saying that the upper triangle of the attention **weight** matrix is set to
#   $-\infty$ (`004-5.5-weights`): the **scores**, before the softmax, strictly above the diagonal. Masking the
#   weights after the softmax is a real bug, not wording: the rows then no longer sum to 1 (next cell).
# - Confirmed, each by a check in the main path: the definition of $M$ and exact zeros (000 §8.2.4, 004 §5.5:
#   section 1), the leak and copying without the mask (000 §8.2.4, 004 §5.5: section 4), which sublayer gets
#   which mask and the $(T_\text{tgt}, S)$ cross-attention shape (000 §8.2.4, 001 §19.7.3: section 2); 000
#   omits that cross-attention still needs the **source padding** mask.
# - On indexing, where the texts seem to disagree: 001 §19.7.1 ("the prediction for position $t$ should only
#   depend on positions $1,\dots,t-1$") counts the position of the *predicted* token; 000 §8.2.4 ("position $i$
#   can attend to positions $1,\dots,i$") counts the *input* position, whose output predicts the next token.
#   Both are right.

# %% tags=["nbval-check-output"]
from transformer_nb.claims import report

report(notebook="02")

# %% tags=["nbval-check-output"]
scores = q1 @ k1.transpose(-2, -1) / math.sqrt(8)  # the scores of section 1
after = torch.softmax(scores, -1) * causal_mask(6)  # the mask applied to the weights, after the softmax
check_true("masking the weights after the softmax: the rows no longer sum to 1",
           not torch.allclose(after.sum(-1), torch.ones(1, 6), atol=1e-3))
check_close("masking the scores (section 1): every row sums to 1", w_bool.sum(-1), torch.ones(1, 6), atol=1e-6)
