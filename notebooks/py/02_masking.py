# %% [markdown] slideshow={"slide_type": "slide"}
# # 02 · Masking: causal, padding and cross-attention masks
#
# A mask decides, for every query, which keys it may look at. This notebook builds every mask a
# Transformer needs from scratch, proves each equal to PyTorch's, and then shows by experiment
# *why* the causal mask matters:
#
# 1. **The causal mask** as a boolean matrix and as an additive $0/-\infty$ matrix (identical
#    attention), equal to `nn.Transformer.generate_square_subsequent_mask`; the polarity traps of
#    the PyTorch APIs; queries that are the *last* $T_q$ of $T_k$ positions (decoding with a cache).
# 2. **Padding masks** for a batch of unequal lengths (from lengths and from a pad id), padding
#    combined with causal, and **cross-attention** padding ($T_\text{tgt}\times S$). Which sublayer
#    of an encoder, a decoder and an encoder–decoder uses which mask.
# 3. **Fully masked rows**: where they come from, why naive code turns them into NaN that spreads
#    to every position, and why the package gives zeros.
# 4. **The experiment**: a tiny model trained *without* the causal mask reaches a training loss
#    below what any honest predictor can reach — it copies the answer from the future — and then
#    fails at generation; the masked model trains to the honest floor and generates correctly.
# 5. **The texts' claims**, checked one by one (two are wrong, one is imprecise).
# 6. **A widget** (lengths, padding side, causal) and **three auto-checked exercises**.
#
# **Serves:** 000 §8.2.4 (Masking for Autoregressive Models) and §8.6.4 (The Causal Mask), the
# mask table of §8.6.5; 001 §19.6.2 (No Masking in the Encoder), §19.7.1–19.7.3 (Causal Masking,
# cross-attention), §19.9.1; 004 §5.5 (Causal Masking) and the masking row of §13.
#
# **Runtime on 2 CPU cores:** quick ~30 s, full ~40 s, measured on two busy shared cores (two tiny
# models train: quick 250 steps, full 1000).

# %%
# %matplotlib inline
import math

import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F
from matplotlib.colors import ListedColormap
from torch.nn.attention.bias import causal_lower_right

from transformer_nb import check_close, check_equal, check_raises, check_true, pick, setup, show_source
from transformer_nb.attention import scaled_dot_product_attention
from transformer_nb.masks import (additive, causal_mask, combine, cross_attention_mask, key_padding,
                                  padding_mask, padding_mask_from_ids, self_attention_mask)
from transformer_nb.plotting import LiveLoss, heatmap, heatmaps, plot_curves
from transformer_nb.widgets.masks import MaskExplorer

env = setup(threads=1)   # every model here is tiny: one thread is fastest
MASK_CMAP = ListedColormap(["#d9d9d9", "#2b8cbe"])   # grey = blocked, blue = may attend

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · The causal mask, as booleans and as $-\infty$
#
# A language model factorises $p(x_1,\dots,x_T) = \prod_t p(x_t \mid x_1,\dots,x_{t-1})$. In
# training, all $T$ positions are computed in one pass (teacher forcing), so self-attention at
# position $i$ could read positions $i+1,\dots,T$ — the very tokens it is asked to predict. The
# causal mask forbids that. 000 §8.2.4 defines it as a matrix $M\in\mathbb{R}^{T\times T}$ added to
# the scores,
#
# $$M_{ij} = \begin{cases}0 & j \le i\\ -\infty & j > i\end{cases}\qquad
# \operatorname{Attention}(Q,K,V) = \operatorname{softmax}\!\Big(\frac{QK^\top}{\sqrt{d_k}} + M\Big)V,$$
#
# and 000 §8.6.4 as the lower-triangular **binary** matrix with a 1 where $j\le i$ (query $i$ may see
# key $j$). They are two spellings of one rule. In code, compare two index grids: the row index is the
# query $i$, the column index the key $j$.

# %%
T = 6
i = torch.arange(T)[:, None]          # (T, 1): query index, one per row
j = torch.arange(T)[None, :]          # (1, T): key index, one per column
allowed = j <= i                      # (T, T) bool: True = query i may attend to key j
additive_form = torch.zeros(T, T).masked_fill(~allowed, -math.inf)
print(allowed.int())
print(additive_form)

# %% [markdown]
# The package's versions (every mask in the package is **bool, True = may attend**, the convention
# of `F.scaled_dot_product_attention`; `additive` converts to the $0/-\infty$ form):

# %%
show_source(causal_mask)
show_source(additive)

# %% tags=["nbval-check-output"]
check_true("from-scratch j <= i  ==  causal_mask(6)", torch.equal(allowed, causal_mask(6)))
same_as_torch = all(torch.equal(additive(causal_mask(n)), nn.Transformer.generate_square_subsequent_mask(n))
                    for n in range(1, 33))
check_true("additive(causal_mask(T)) == nn.Transformer.generate_square_subsequent_mask(T), T = 1..32",
           same_as_torch)
check_equal("causal_mask(T) is torch.tril of ones (lower-triangular), T = 1..32",
            all(torch.equal(causal_mask(n), torch.ones(n, n, dtype=torch.bool).tril()) for n in range(1, 33)), True)

# 000 §8.6.4 prints the mask for T = 5 (lost in extraction): a lower-triangular 0/1 matrix
M5 = causal_mask(5).int()
check_equal("000 §8.6.4, T = 5: ones in each row (query i sees keys 1..i)", M5.sum(1), torch.tensor([1, 2, 3, 4, 5]))
check_equal("000 §8.6.4, T = 5: total ones = T(T+1)/2", int(M5.sum()), 5 * 6 // 2)
# 004 §5.5's 4x4 table: token 1 sees only itself; token 3 sees tokens 1, 2, 3 but not 4
M4 = causal_mask(4)
check_equal("004 §5.5: token 1 attends to (1-based)", (torch.nonzero(M4[0]).flatten() + 1).tolist(), [1])
check_equal("004 §5.5: token 3 attends to (1-based)", (torch.nonzero(M4[2]).flatten() + 1).tolist(), [1, 2, 3])

# %% [markdown]
# Now apply it. Random scores for $T = 6$; the mask blocks the upper triangle, and the softmax of each
# row spreads over the keys that are left:

# %%
torch.manual_seed(0)
q1, k1, v1 = torch.randn(3, 1, T, 8).unbind(0)        # (1, T, 8) each
out_bool, w_bool = scaled_dot_product_attention(q1, k1, v1, mask=causal_mask(T))
out_add, w_add = scaled_dot_product_attention(q1, k1, v1, mask=additive(causal_mask(T)))

fig, axes = plt.subplots(1, 3, figsize=(12.5, 3.8))
axes[0].imshow(allowed.numpy(), cmap=MASK_CMAP, vmin=0, vmax=1)
axes[0].set_title("bool mask: True (blue) = may attend")
axes[1].imshow(allowed.numpy(), cmap=MASK_CMAP, vmin=0, vmax=1)
for a in range(T):
    for b in range(T):
        axes[1].text(b, a, "0" if allowed[a, b] else "−∞", ha="center", va="center", fontsize=9,
                     color="w" if allowed[a, b] else "k")
axes[1].set_title("additive mask M, added to the scores")
heatmap(w_bool[0], ax=axes[2], annotate=True, vmin=0, vmax=1, title="weights softmax(QKᵀ/√d + M)")
for ax in axes:
    ax.set_xlabel("key j")
    ax.set_ylabel("query i")
    ax.set_xticks(range(T), range(1, T + 1))
    ax.set_yticks(range(T), range(1, T + 1))
fig.suptitle("The causal mask, two forms, one result: zero weight on every future key", fontsize=11)
fig.tight_layout()
plt.show()

# %% [markdown]
# **"Since $\exp(-\infty) = 0$, the softmax assigns exactly zero weight to all future positions"**
# (000 §8.2.4; "after softmax, $-\infty$ becomes exactly 0", 004 §5.5). True, and *exactly*, not
# approximately: $\exp(-\infty)$ is `0.0` in floating point, so the future keys contribute
# $0\cdot v_j = 0$ and the two forms of the mask give bit-identical weights. PyTorch's fused kernel
# agrees, with either form or with `is_causal=True`.

# %% tags=["nbval-check-output"]
check_equal("exp(-inf) in float32", torch.exp(torch.tensor(-math.inf)).item(), 0.0)
check_equal("weights above the diagonal that are not exactly 0.0", int((w_bool[0].triu(1) != 0).sum()), 0)
check_true("bool mask and additive mask give bit-identical weights", torch.equal(w_bool, w_add))
check_close("each row still sums to 1", w_bool.sum(-1), torch.ones(1, T), atol=1e-6)
for name, kw in (("attn_mask=bool", dict(attn_mask=causal_mask(T))),
                 ("attn_mask=additive", dict(attn_mask=additive(causal_mask(T)))),
                 ("is_causal=True", dict(is_causal=True))):
    check_close(f"package == F.scaled_dot_product_attention({name})",
                (out_bool - F.scaled_dot_product_attention(q1, k1, v1, **kw)).abs().max(), 0.0, atol=1e-6)

# %% [markdown]
# ### Polarity: the PyTorch APIs do not agree on what `True` means
#
# | where | bool `True` means | float mask |
# |---|---|---|
# | this package, `F.scaled_dot_product_attention(attn_mask=)` | **may attend** | added to the scores |
# | `nn.MultiheadAttention(attn_mask=)`, `nn.Transformer*(src_mask=, tgt_mask=)` | **blocked** | added |
# | `nn.MultiheadAttention(key_padding_mask=)` | **padding, blocked** | added |
# | `nn.Transformer.generate_square_subsequent_mask(T)` | — (returns the float $0/-\infty$ form) | |
#
# So to hand a package mask to `nn.MultiheadAttention`, invert it (`~mask`) or pass `additive(mask)`.
# Below, a one-head `nn.MultiheadAttention` (its projections are the $W^Q, W^K, W^V, W^O$ of
# notebook 01) is checked against the package's attention with the same weights.

# %%
d = 8
mha = nn.MultiheadAttention(d, num_heads=1, batch_first=True).eval()


def one_head(x_q, x_kv, mask):
    """The same computation as `mha` with one head, through the package's attention. mask: True = may attend."""
    w_q, w_k, w_v = mha.in_proj_weight.chunk(3)
    b_q, b_k, b_v = mha.in_proj_bias.chunk(3)
    out, _ = scaled_dot_product_attention(x_q @ w_q.T + b_q, x_kv @ w_k.T + b_k, x_kv @ w_v.T + b_v, mask)
    return mha.out_proj(out)


x = torch.randn(2, T, d)

# %% tags=["nbval-check-output"]
with torch.no_grad():
    ours = one_head(x, x, causal_mask(T))
    for name, kw in (("attn_mask=~causal (bool, True = blocked)", dict(attn_mask=~causal_mask(T))),
                     ("attn_mask=additive(causal)", dict(attn_mask=additive(causal_mask(T)))),
                     ("attn_mask=generate_square_subsequent_mask(T)",
                      dict(attn_mask=nn.Transformer.generate_square_subsequent_mask(T)))):
        check_close(f"nn.MultiheadAttention({name}) == package", (mha(x, x, x, **kw)[0] - ours).abs().max(),
                    0.0, atol=1e-5)

# %% [markdown]
# And the mistake the table warns about: pass the package's mask to `nn.MultiheadAttention`
# *unchanged*. It is read upside down — every query sees only its **future** — and the last query,
# which has no future, sees nothing at all (in torch 2.13 that row comes out NaN; section 3 explains).

# %%
with torch.no_grad():
    wrong = mha(x, x, x, attn_mask=causal_mask(T), need_weights=True)
print("rows of the output that are NaN (0-based):", torch.nonzero(torch.isnan(wrong[0][0]).any(-1)).flatten().tolist())
print("query 0 attends to keys:", torch.nonzero(wrong[1][0, 0].nan_to_num() > 0).flatten().tolist(), "(its future)")

# %% [markdown]
# ### When the queries are the last $T_q$ of $T_k$ positions
#
# When a model generates with a cache of keys and values (notebook 10), the new query is position
# $T_k$ and must see **all** $T_k$ keys, the earlier queries the keys up to their own position: the
# triangle is aligned to the **bottom-right**. `causal_mask(T_q, T_k)` does that, and equals
# PyTorch's `causal_lower_right`. Beware: `F.scaled_dot_product_attention(..., is_causal=True)`
# aligns the triangle to the **top-left**, which for $T_q < T_k$ is a different mask (its single
# query would see only the first key). $T_k < T_q$ is refused: some query would have no key at all.

# %% tags=["nbval-check-output"]
check_equal("causal_mask(2, 5)", causal_mask(2, 5).int(), torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]))
q2, k5, v5 = torch.randn(1, 2, 8), torch.randn(1, 5, 8), torch.randn(1, 5, 8)
ours_br = scaled_dot_product_attention(q2, k5, v5, causal_mask(2, 5))[0]
check_close("causal_mask(2, 5) == torch's causal_lower_right(2, 5)",
            (ours_br - F.scaled_dot_product_attention(q2, k5, v5, attn_mask=causal_lower_right(2, 5))).abs().max(),
            0.0, atol=1e-6)
top_left = F.scaled_dot_product_attention(q2, k5, v5, is_causal=True)
check_true("is_causal=True is top-left aligned: it differs when T_q < T_k", (top_left - ours_br).abs().max() > 1e-3)
check_raises(ValueError, "T_q <= T_k", causal_mask, 5, 3)
check_raises(TypeError, "must be an int", causal_mask, 4.0)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · Padding masks: a batch of unequal lengths
#
# A batch is a rectangle, sentences are not. Shorter sequences are filled up with a pad token, and
# attention must ignore those positions as **keys**: "the attention mechanism should ignore the
# padding positions ... by setting the attention scores for padding positions to $-\infty$"
# (001 §19.6.2). The padding mask is one bool per token, True at real tokens; it can be built from
# the lengths or from the pad id.

# %%
PAD = 0
vocab = ["<pad>", "the", "cat", "sat", "on", "a", "mat", "dogs", "bark", "loudly", "birds", "sing"]
sentences = [["the", "cat", "sat", "on", "a", "mat"], ["dogs", "bark"], ["birds", "sing", "loudly"],
             ["the", "dogs", "sat"]]
lengths = [len(s) for s in sentences]
T = max(lengths)
ids = torch.tensor([[vocab.index(w) for w in s] + [PAD] * (T - len(s)) for s in sentences])   # (B, T)
keep_scratch = torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]                      # (B, T)
print("lengths:", lengths)
print(ids)
print(keep_scratch.int())

# %%
show_source(padding_mask)
show_source(padding_mask_from_ids)

# %% tags=["nbval-check-output"]
keep = padding_mask(lengths)
check_equal("padding mask from lengths: shape (B, T)", keep.shape, (4, 6))
check_true("from scratch == padding_mask(lengths)", torch.equal(keep_scratch, keep))
check_true("padding_mask(lengths) == padding_mask_from_ids(ids, PAD)", torch.equal(keep, padding_mask_from_ids(ids, PAD)))
check_equal("real tokens per row", keep.sum(1), torch.tensor(lengths))
check_raises(ValueError, "exceeds max_len", padding_mask, [3, 7], max_len=5)
check_raises(ValueError, ">= 0", padding_mask, [3, -1])
check_raises(ValueError, "integer", padding_mask, [2.5, 3.0])

# %% [markdown]
# One bool per token is not yet an attention mask: attention needs one bool per (query, key) pair.
# The padding applies to the **key** axis — every query ignores padded keys — so the $(B, T)$ mask
# becomes $(B, 1, T_q, T_k)$ by broadcasting along the query axis (the 1 broadcasts over heads). For
# a decoder, AND it with the causal mask. `combine` is that AND with a check that both masks are bool.

# %%
show_source(key_padding)
show_source(self_attention_mask)

# %%
enc_masks = self_attention_mask(keep)                  # (B, 1, T, T): padding only (encoder)
dec_masks = self_attention_mask(keep, causal=True)     # (B, 1, T, T): padding AND causal (decoder)
fig = heatmaps([*enc_masks[:, 0].float(), *dec_masks[:, 0].float()],
               titles=[f"encoder, length {n}" for n in lengths] + [f"decoder, length {n}" for n in lengths],
               ncols=4, size=2.8, cmap=MASK_CMAP, vmin=0, vmax=1)
for ax, b in zip(fig.axes, [*range(4), *range(4)]):
    words = [vocab[t] for t in ids[b].tolist()]
    ax.set_xticks(range(T), words, rotation=70, fontsize=7)
    ax.set_yticks(range(T), words, fontsize=7)
fig.suptitle("Self-attention masks of a padded batch (rows = queries, columns = keys; blue = may attend)", y=1.02)
plt.show()

# %% [markdown]
# Exact checks. The decisive property of a correct padding mask is **padding invariance**: the
# outputs at the real positions of a padded sequence equal the outputs of the same sequence run
# alone, without padding — for the bidirectional (encoder) and for the causal (decoder) mask. Without
# the padding mask they differ. Then the same masks through `nn.MultiheadAttention`'s
# `key_padding_mask` (opposite polarity: True = padding) and through `F.scaled_dot_product_attention`.

# %% tags=["nbval-check-output"]
torch.manual_seed(1)
emb = torch.randn(len(vocab), d)
x = emb[ids]                                                         # (B, T, d)
with torch.no_grad():
    for causal in (False, True):
        kind = "decoder (causal)" if causal else "encoder"
        batch_out = one_head(x, x, self_attention_mask(keep, causal=causal)[:, 0])
        alone = [one_head(x[b:b + 1, :n], x[b:b + 1, :n], causal_mask(n) if causal else None)[0]
                 for b, n in enumerate(lengths)]
        worst = max((batch_out[b, :n] - alone[b]).abs().max() for b, n in enumerate(lengths))
        check_close(f"{kind}: max |padded batch - each sequence alone| at real positions", worst, 0.0, atol=1e-5)
    no_pad_mask = one_head(x, x, None)
    check_true("without the padding mask, the short sequences' outputs change",
               (no_pad_mask[1, :2] - one_head(x[1:2, :2], x[1:2, :2], None)[0]).abs().max() > 1e-2)
    ref = one_head(x, x, key_padding(keep, T)[:, 0])
    check_close("nn.MultiheadAttention(key_padding_mask=~keep) == package",
                (mha(x, x, x, key_padding_mask=~keep)[0] - ref).abs().max(), 0.0, atol=1e-5)
    both = mha(x, x, x, key_padding_mask=~keep, attn_mask=~causal_mask(T))[0]
    check_close("nn.MultiheadAttention(key_padding_mask=~keep, attn_mask=~causal) == package, padding AND causal",
                (both - one_head(x, x, self_attention_mask(keep, causal=True)[:, 0])).abs().max(), 0.0, atol=1e-5)
    q4, k4, v4 = torch.randn(3, 4, 2, T, 8).unbind(0)               # (B, h=2, T, 8): the mask broadcasts over heads
    m4 = combine(key_padding(keep, T), causal_mask(T))
    check_close("package == F.scaled_dot_product_attention with the (B, 1, T, T) mask, 2 heads",
                (scaled_dot_product_attention(q4, k4, v4, m4)[0]
                 - F.scaled_dot_product_attention(q4, k4, v4, attn_mask=m4)).abs().max(), 0.0, atol=1e-6)
check_raises(TypeError, "bool", combine, keep, additive(causal_mask(T)))
check_raises(ValueError, "do not broadcast", combine, keep, causal_mask(5))

# %% [markdown]
# Padded *queries* (the grey-labelled rows in the figure) still attend to the real keys: their rows
# are not empty, and their outputs are simply never used — the loss skips pad targets
# (`F.cross_entropy(..., ignore_index=PAD)`). Masking them as well is possible, but creates rows with
# nothing to attend to; section 3 is about those.
#
# ### Cross-attention: target length × source length
#
# In an encoder–decoder, the decoder's queries attend to the encoder's outputs: the score matrix is
# $T_\text{tgt}\times S$ ("the attention matrix has shape (tgt_len, src_len)", 001 §19.7.3). The
# source is fully observed, so there is **no causal mask** here (000 §8.2.4), but the source padding
# must still be blocked — the same key-padding mask as the encoder's, broadcast over $T_\text{tgt}$
# queries (001's code passes it as `memory_key_padding_mask`; 000 §8.2.4 does not mention it).

# %%
src_lengths, tgt_lengths = [4, 6, 2], [3, 5, 4]
S, T_tgt = max(src_lengths), max(tgt_lengths)
src_keep, tgt_keep = padding_mask(src_lengths), padding_mask(tgt_lengths)
masks_ed = {"encoder self-attention\n(source padding)": self_attention_mask(src_keep),
            "decoder self-attention\n(causal AND target padding)": self_attention_mask(tgt_keep, causal=True),
            "decoder cross-attention\n(source padding, T_tgt × S)": cross_attention_mask(src_keep, T_tgt)}
fig, axes = plt.subplots(3, 3, figsize=(9, 8.6))
for r, (name, m) in enumerate(masks_ed.items()):
    for b in range(3):
        ax = axes[r, b]
        ax.imshow(m[b, 0].numpy(), cmap=MASK_CMAP, vmin=0, vmax=1)
        ax.set_xticks(range(m.shape[-1]))
        ax.set_yticks(range(m.shape[-2]))
        ax.set_title(f"pair {b + 1}: src {src_lengths[b]}, tgt {tgt_lengths[b]}", fontsize=9)
        if b == 0:
            ax.set_ylabel(name, fontsize=9)
axes[2, 1].set_xlabel("key position (source)")
axes[1, 1].set_xlabel("key position (target)")
fig.suptitle("The three attention sublayers of an encoder–decoder and their masks (blue = may attend)")
fig.tight_layout()
plt.show()

# %% tags=["nbval-check-output"]
cross = cross_attention_mask(src_keep, T_tgt)
check_equal("cross-attention mask shape (B, 1, T_tgt, S)", cross.shape, (3, 1, 5, 6))
check_true("every decoder query sees exactly the real source tokens", torch.equal(cross[:, 0].sum(-1),
           torch.tensor(src_lengths)[:, None].expand(3, T_tgt)))
torch.manual_seed(2)
dec_x, enc_x = torch.randn(3, T_tgt, d), torch.randn(3, S, d)
with torch.no_grad():
    check_close("cross-attention: nn.MultiheadAttention(key_padding_mask=~src_keep) == package",
                (mha(dec_x, enc_x, enc_x, key_padding_mask=~src_keep)[0] - one_head(dec_x, enc_x, cross[:, 0]))
                .abs().max(), 0.0, atol=1e-5)
    alone = one_head(dec_x[2:3], enc_x[2:3, :2], None)
    check_close("source padding invariance: pair 3 with its 2 real source tokens alone",
                (one_head(dec_x, enc_x, cross[:, 0])[2] - alone[0]).abs().max(), 0.0, atol=1e-5)
check_raises(ValueError, "T_q", cross_attention_mask, src_keep, -1)

# %% [markdown]
# **Which sublayer uses which mask** (000 §8.2.4 and Table 8.2, 001 §19.6.2 and §19.7, 004 §13) —
# the texts agree, and the figure above draws it:
#
# | model | sublayer | mask |
# |---|---|---|
# | encoder-only (BERT) | self-attention | padding only ("no masking in the encoder", 001 §19.6.2) |
# | decoder-only (GPT) | self-attention | causal (AND padding when batches are padded) |
# | encoder–decoder (T5, the original) | encoder self-attention | source padding |
# | | decoder self-attention | causal AND target padding |
# | | decoder cross-attention | source padding, **not** causal |
#
# The causal mask is the same $(T, T)$ tensor for every layer and every head (000 §8.6.4: "created
# once ... reused across all layers and all attention heads"): it broadcasts to $(B, h, T, T)$, as in
# the 2-head check above.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · Fully masked rows: zeros, never NaN
#
# A query row is *fully masked* when none of its keys may be attended to. That is not exotic; it
# happens in ordinary batches:
#
# - a **length-0 sequence** (an empty source in a batch): every key is padding;
# - **left padding + causal** (how batched generation pads prompts): a leading pad query has only
#   pad keys in its past;
# - masks that block padded **queries** as well as keys (`keep_q & keep_k`, a common variant).
#
# Notebook 01 showed the naive softmax of an all-$(-\infty)$ row is $0/0$ = NaN. What makes it
# dangerous is that the NaN **spreads**: in the next layer every query gives the padded position weight
# exactly 0, but $0 \cdot \text{NaN} = \text{NaN}$, so every output of the batch element becomes NaN,
# and with it the loss. Below: a left-padded batch with a causal mask through two layers of naive
# attention, of "safe-looking" attention with $-10^9$ instead of $-\infty$, and of the package.

# %%
def naive_attention(q, k, v, mask, fill=-math.inf):
    """Attention with a bool mask and a plain softmax: no special case for empty rows."""
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~mask, fill)
    w = torch.softmax(scores, dim=-1)
    return w @ v, w


left_ids = torch.tensor([[PAD, PAD, 1, 2, 3], [4, 5, 6, 7, 8]])     # sequence 0 is left-padded
left_keep = padding_mask_from_ids(left_ids, PAD)
left_mask = self_attention_mask(left_keep, causal=True)[:, 0]       # (2, 5, 5)
h0 = emb[left_ids]
runs = {}
for name, attn in (("naive, -inf", naive_attention),
                   ("naive, -1e9", lambda q, k, v, m: naive_attention(q, k, v, m, fill=-1e9)),
                   ("package", scaled_dot_product_attention)):
    h1, w1 = attn(h0, h0, h0, left_mask)
    h2, w2 = attn(h1, h1, h1, left_mask)
    runs[name] = dict(w1=w1, h1=h1, h2=h2)

fig, axes = plt.subplots(1, 3, figsize=(12, 3.9))
names = ["pad", "pad", "t1", "t2", "t3"]
for ax, (name, r) in zip(axes, runs.items()):
    w = r["w1"][0]
    ax.imshow(w.nan_to_num(nan=-1.0).numpy(), cmap="viridis", vmin=0, vmax=1)   # NaN drawn as "below 0"
    for a in range(5):
        for b in range(5):
            val = w[a, b].item()
            ax.text(b, a, "NaN" if math.isnan(val) else f"{val:.2f}", ha="center", va="center", fontsize=8,
                    color="C3" if math.isnan(val) else ("k" if val > 0.5 else "w"),
                    fontweight="bold" if math.isnan(val) else "normal")
    ax.set_xticks(range(5), names)
    ax.set_yticks(range(5), names)
    ax.set_title(f"{name}: layer-1 weights", fontsize=10)
    ax.set_xlabel("key")
axes[0].set_ylabel("query")
fig.suptitle("Left padding + causal: the two pad queries have no visible key", fontsize=11)
fig.tight_layout()
plt.show()

# %% tags=["nbval-check-output"]
empty_rows = ~left_mask.any(-1)
check_equal("fully masked rows (sequence 0, 0-based)", torch.nonzero(empty_rows[0]).flatten().tolist(), [0, 1])
r = runs["naive, -inf"]
check_true("naive, layer 1: exactly the 2 empty rows are NaN",
           torch.equal(torch.isnan(r["h1"][0]).any(-1), empty_rows[0]))
check_true("naive, layer 2: the NaN has spread to EVERY position of sequence 0", torch.isnan(r["h2"][0]).all())
check_true("naive, layer 2: sequence 1 (no padding) is untouched", torch.isfinite(r["h2"][1]).all())
r = runs["naive, -1e9"]
check_close("-1e9 instead of -inf: no NaN, but an empty row becomes uniform over ALL keys (pads included)",
            r["w1"][0, 0], torch.full((5,), 0.2, dtype=torch.float64), atol=1e-6)
r = runs["package"]
check_equal("package: weights of the empty rows", r["w1"][0, :2], torch.zeros(2, 5))
check_equal("package: outputs of the empty rows", r["h1"][0, :2], torch.zeros(2, d))
check_true("package: no NaN anywhere after two layers", torch.isfinite(r["h2"]).all())
check_close("package: real queries are unaffected by the pads (= the 3 real tokens alone)",
            (r["h1"][0, 2:] - scaled_dot_product_attention(h0[0:1, 2:], h0[0:1, 2:], h0[0:1, 2:],
                                                           causal_mask(3))[0][0]).abs().max(), 0.0, atol=1e-6)
# a length-0 sequence in a batch: all keys are padding
zero_keep = padding_mask([0, 3], max_len=3)
qz = torch.randn(2, 3, 8, requires_grad=True)
out_z, w_z = scaled_dot_product_attention(qz, qz, qz, self_attention_mask(zero_keep)[:, 0])
out_z.sum().backward()
check_equal("length-0 sequence: weights", w_z[0], torch.zeros(3, 3))
check_true("length-0 sequence: gradients are finite", torch.isfinite(qz.grad).all())

# %% [markdown]
# What do PyTorch's own modules do with such rows? It depends on the entry point and the version,
# which is why the package pins the behaviour down and tests it. In torch 2.13
# `F.scaled_dot_product_attention` returns zeros, `nn.MultiheadAttention` returns NaN:

# %%
with torch.no_grad():
    sdpa_rows = F.scaled_dot_product_attention(h0, h0, h0, attn_mask=left_mask)[0, :2]
    mha_rows = mha(h0, h0, h0, key_padding_mask=~left_keep, attn_mask=~causal_mask(5))[0][0, :2]
print(f"torch {torch.__version__}: F.scaled_dot_product_attention, empty rows all zero: {bool((sdpa_rows == 0).all())}")
print(f"torch {torch.__version__}: nn.MultiheadAttention, empty rows NaN: {bool(torch.isnan(mha_rows).all())}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · Why the mask matters: an experiment
#
# 000 §8.2.4: without the causal mask, "this information leakage would produce a model that performs
# perfectly on training data but cannot generate text at inference time". 004 §5.5: "the model would
# just copy the future token rather than learning to predict it". Let us watch it happen.
#
# **The task** is built so that the best possible loss is known exactly. Each sequence is two
# interleaved random walks on $\{0,\dots,15\}$ (mod 16):
#
# $$x_0, x_1 \sim \text{uniform},\qquad x_t = x_{t-2} + s_t \bmod 16,\quad s_t \in\{1, 2\}\ \text{each with probability } \tfrac12 .$$
#
# An honest predictor of $x_t$ from $x_{<t}$ can do no better than "$x_{t-2}+1$ or $x_{t-2}+2$, fifty-fifty":
# its cross-entropy is at least $\ln 2 \approx 0.693$ nats per token (we score $t\ge 2$). To get there
# it must look **two positions back**: the current token $x_{t-1}$ says nothing about $x_t$. A model that
# can see $x_t$ itself can get a loss near 0.
#
# **The model**, built here from what notebooks 01–02 taught: token embeddings plus a learned embedding
# of each position (`nn.Embedding`; notebook 04 is about positions), one or more single-head attention
# layers with a residual connection (`scaled_dot_product_attention` from the package, optionally with
# `causal_mask`), and a linear read-out to 16 logits. Nothing else.

# %%
V, T_SEQ = 16, 16


def sample_walks(n, generator=None):
    """(n, T_SEQ) sequences: x_t = x_{t-2} + s_t mod V, s_t in {1, 2}; x_0, x_1 uniform."""
    x = torch.randint(V, (n, T_SEQ), generator=generator)
    step = torch.randint(1, 3, (n, T_SEQ), generator=generator)
    for t in range(2, T_SEQ):
        x[:, t] = (x[:, t - 2] + step[:, t]) % V
    return x


def follows_rule(x):
    """(n, T-2) bool: does x_t - x_{t-2} mod V lie in {1, 2}?"""
    diff = (x[:, 2:] - x[:, :-2]) % V
    return (diff == 1) | (diff == 2)


class TinyLM(nn.Module):
    """ids (B, T) -> logits (B, T, V). Embeddings + n_layers x [single-head attention + residual] + read-out.

    ``causal`` switches the causal mask on or off (it can be changed after training).
    ``weights`` keeps each layer's attention weights (B, T, T) from the last forward pass.
    """

    def __init__(self, causal, n_layers=1, d=32):
        super().__init__()
        self.causal = causal
        self.tok, self.pos = nn.Embedding(V, d), nn.Embedding(T_SEQ, d)
        self.qkv = nn.ModuleList(nn.Linear(d, 3 * d) for _ in range(n_layers))
        self.out = nn.ModuleList(nn.Linear(d, d) for _ in range(n_layers))
        self.head = nn.Linear(d, V)

    def forward(self, ids):
        n = ids.shape[1]
        h = self.tok(ids) + self.pos(torch.arange(n))
        mask = causal_mask(n) if self.causal else None
        self.weights = []
        for qkv, out in zip(self.qkv, self.out):
            q, k, v = qkv(h).chunk(3, dim=-1)
            a, w = scaled_dot_product_attention(q, k, v, mask)
            self.weights.append(w)
            h = h + out(a)
        return self.head(h)


def lm_loss(model, x):
    """Mean cross-entropy of predicting x_t (t >= 2) from positions t-1 of the input x_0..x_{T-2}."""
    logits = model(x[:, :-1])[:, 1:]                      # position t-1 predicts x_t, for t = 2..T-1
    return F.cross_entropy(logits.reshape(-1, V), x[:, 2:].reshape(-1))


x_eval = sample_walks(2000, torch.Generator().manual_seed(123))   # held out: never trained on
print("two sequences:\n", x_eval[:2])

# %% tags=["nbval-check-output"]
check_true("every eval sequence follows the rule", follows_rule(x_eval).all())
# the honest optimum: probability 1/2 on x_{t-2}+1 and on x_{t-2}+2
oracle = torch.full((2000, T_SEQ - 2, V), -math.inf)
oracle.scatter_(2, ((x_eval[:, :-2, None] + torch.tensor([1, 2])) % V), 0.0)
oracle_loss = F.cross_entropy(oracle.reshape(-1, V), x_eval[:, 2:].reshape(-1))
check_close("loss of the best honest predictor = ln 2", oracle_loss, math.log(2), atol=1e-6)
check_close("a predictor that sees x_t itself: loss 0", F.cross_entropy(
    torch.full((2000 * (T_SEQ - 2), V), -math.inf).scatter_(1, x_eval[:, 2:].reshape(-1, 1), 0.0),
    x_eval[:, 2:].reshape(-1)), 0.0, atol=1e-6)

# %% [markdown]
# ### (a) Without the mask, position $t$ depends on the future — measured
#
# Before any training: take a model, change the token at position $t$, and measure how much the logits
# at the **earlier** positions $0..t-1$ move. With the causal mask the answer must be exactly 0 — not
# small, zero — for every $t$; without it, every earlier position moves.

# %%
def future_leak(model, x, t):
    """max |Δ logits| at positions < t when token t of x (1, T) is replaced."""
    x2 = x.clone()
    x2[0, t] = (x2[0, t] + 7) % V
    with torch.no_grad():
        return (model(x)[0, :t] - model(x2)[0, :t]).abs().max().item()


def leak_profile(model, x):
    return [future_leak(model, x, t) for t in range(1, x.shape[1])]


torch.manual_seed(0)
fresh = {"with causal mask": TinyLM(causal=True), "without mask": TinyLM(causal=False)}
fresh["without mask"].load_state_dict(fresh["with causal mask"].state_dict())      # the same weights
probe = x_eval[:1, :-1]
leak_before = {name: leak_profile(m, probe) for name, m in fresh.items()}

fig, ax = plt.subplots(figsize=(7, 3.2))
ts = range(1, probe.shape[1])
ax.bar([t - 0.2 for t in ts], leak_before["with causal mask"], width=0.4, label="with causal mask (all exactly 0)")
ax.bar([t + 0.2 for t in ts], leak_before["without mask"], width=0.4, label="without mask")
ax.set_xlabel("position t whose token is changed")
ax.set_ylabel("max |Δ logits| at positions < t")
ax.set_title("Untrained model: does the past's output depend on token t?")
ax.legend()
plt.show()

# %% tags=["nbval-check-output"]
check_equal("with the causal mask: max |Δ logits| at positions < t, over all t", max(leak_before["with causal mask"]), 0.0)
check_true("without the mask: every earlier position moves, for every t", min(leak_before["without mask"]) > 1e-4)
probe5 = probe.clone()
probe5[0, 5] = (probe5[0, 5] + 7) % V                              # change token 5 only
with torch.no_grad():
    moved = (fresh["with causal mask"](probe)[0, 5] - fresh["with causal mask"](probe5)[0, 5]).abs().max()
check_true("with the mask, the output AT position 5 does depend on token 5 (a position sees itself)", moved > 1e-4)

# %% [markdown]
# ### (b) Train one model with the mask and one without
#
# Same initial weights, same batches (fresh random sequences at every step, so nothing can be memorised),
# Adam. The dashed line is the honest floor $\ln 2$.

# %%
steps = pick(quick=250, full=1000)
torch.manual_seed(1)
models = {"with causal mask": TinyLM(causal=True), "without mask": TinyLM(causal=False)}
models["without mask"].load_state_dict(models["with causal mask"].state_dict())
opts = {name: torch.optim.Adam(m.parameters(), lr=1e-2) for name, m in models.items()}
live = LiveLoss(total=steps, title="tiny LM on the random walks", ylabel="training loss (nats)")
for step in range(steps):
    batch = sample_walks(64)
    losses = {}
    for name, m in models.items():
        loss = lm_loss(m, batch)
        opts[name].zero_grad()
        loss.backward()
        opts[name].step()
        losses[name] = loss.item()
    live.update(**losses)
live.close()

# %%
with torch.no_grad():
    eval_loss = {name: lm_loss(m, x_eval).item() for name, m in models.items()}
ax = plot_curves({name: live.series(name) for name in models}, xlabel="step", ylabel="training loss (nats)",
                 title="Without the mask the loss falls far below what is possible honestly", logy=True)
ax.axhline(math.log(2), color="k", ls="--", lw=1, label="honest floor ln 2")
ax.axhline(math.log(2) / (T_SEQ - 2), color="C1", ls=":", lw=1, label="cheater's floor ln 2 / 14")
ax.legend()
plt.show()
for name, value in eval_loss.items():
    print(f"{name:>17}: held-out loss {value:.3f} nats   (honest floor ln 2 = {math.log(2):.3f})")
assert math.log(2) - 0.02 < eval_loss["with causal mask"] < pick(quick=0.85, full=0.78), eval_loss
assert eval_loss["without mask"] < pick(quick=0.4, full=0.15), eval_loss

# %% [markdown]
# The unmasked model's loss is **below $\ln 2$**, which no predictor that sees only the past can reach on
# these sequences: the number itself proves it is reading the answer. (Its remaining loss is mostly
# at the last position: the input stops at $x_{T-2}$, so there the future is not available and even the
# cheater must guess — $\ln 2 / 14 \approx 0.05$ nats averaged over the 14 scored positions.)

# %% tags=["nbval-check-output"]
check_true("without the mask: held-out loss < ln 2, impossible for an honest predictor",
           eval_loss["without mask"] < math.log(2))
check_true("with the mask: held-out loss >= ln 2 (up to sampling noise)", eval_loss["with causal mask"] > math.log(2) - 0.02)

# %% [markdown]
# ### (c) Where each model looks
#
# The attention weights on one held-out sequence. The honest model looks one position **back** from the
# query (at $x_{t-2}$, the token the rule needs, since query $t-1$ predicts $x_t$). The unmasked model
# looks one position **forward** — at the very token it is asked to predict — and copies it. Only its last
# query (bottom row), which has no future token in the input, looks back like the honest model: the one
# position where it had to learn to predict.

# %%
with torch.no_grad():
    for m in models.values():
        m(x_eval[:200, :-1])
attn = {name: m.weights[0] for name, m in models.items()}       # (200, 15, 15) each
labels = [str(t) for t in x_eval[0, :-1].tolist()]
fig = heatmaps([attn[name][0] for name in models], titles=[f"{name}" for name in models], ncols=2, size=4.2,
               vmin=0, vmax=1)
for ax in fig.axes:
    ax.set_xticks(range(len(labels)), labels, fontsize=7)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.set_xlabel("key (token)")
fig.axes[0].set_ylabel("query (token)")
fig.suptitle("Attention of the trained models: one step back (honest) vs one step forward (copying)", y=1.02)
plt.show()

# %% tags=["nbval-check-output"]
def typical_offset(w):
    """The most common (argmax key - query) over the queries 1..T-3 of a batch of weights (B, T, T)."""
    offset = w.argmax(-1) - torch.arange(w.shape[-1])
    return int(offset[:, 1:-1].flatten().mode().values)


check_equal("with the mask: each query looks at offset", typical_offset(attn["with causal mask"]), -1)
check_equal("without the mask: each query looks at offset", typical_offset(attn["without mask"]), +1)

# %% [markdown]
# ### (d) Generation: the cheater cannot generate
#
# Give each model the first two tokens of 500 held-out sequences and let it continue greedily, one token
# at a time, up to 16 tokens. When generating, the future does not exist yet: the token the unmasked model
# learned to copy is simply not there. We count how many generated tokens obey the rule
# ($x_t - x_{t-2} \in \{1, 2\}$); a random guess obeys it 2 times in 16.

# %%
def generate(model, prompt, length):
    x = prompt
    with torch.no_grad():
        while x.shape[1] < length:
            x = torch.cat([x, model(x)[:, -1].argmax(-1, keepdim=True)], dim=1)
    return x


generated = {name: generate(m, x_eval[:500, :2], T_SEQ) for name, m in models.items()}
legal = {name: follows_rule(g).float().mean().item() for name, g in generated.items()}
for name, g in generated.items():
    marks = "".join("·" if ok else "✗" for ok in follows_rule(g[:1])[0].tolist())
    print(f"{name:>17}: {g[0].tolist()}\n{'':>19}rule kept: {marks[:40]}  ({100 * legal[name]:.1f}% of 7000 tokens)")
assert legal["with causal mask"] > pick(quick=0.95, full=0.99), legal
assert legal["without mask"] < 0.3, legal

# %% tags=["nbval-check-output"]
check_true("with the mask, generated tokens keep the rule more than 95% of the time", legal["with causal mask"] > 0.95)
check_true("without the mask, fewer than 30% do (random guessing: 12.5%)", legal["without mask"] < 0.3)

# %% [markdown]
# ### (e) After training: the dependence on the future, measured again
#
# Same measurement as (a), on the trained models. The masked model is still exactly blind to the
# future; the unmasked one now depends on it massively — mostly on the single next token.

# %% tags=["nbval-check-output"]
leak_after = {name: leak_profile(m, probe) for name, m in models.items()}
check_equal("trained, with mask: max |Δ logits| at positions < t", max(leak_after["with causal mask"]), 0.0)
check_true("trained, without mask: changing token t moves the earlier logits by more than 1, every t >= 2",
           min(leak_after["without mask"][1:]) > 1.0)          # (the output at position 0 is never scored)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5 · The texts' claims about masking, checked
#
# **000 §8.6.4 says:** "During inference, the mask is automatically satisfied because future tokens have
# not yet been generated — but applying it explicitly during inference (as some implementations do)
# makes no difference to the output." **That is wrong for a model with more than one layer.** When the
# whole prefix is recomputed at each step (no key/value cache), position $i < t$ in layer 1 would see
# positions $i+1..t$ of the prefix without the mask; layer 2's last query then reads those changed
# values. The output at the last position is unchanged only for a single layer, or with a key/value
# cache (each cached key/value was computed when its position was the last one). The next cell proves
# it: for our trained 1-layer model the last logits are identical with and without the mask; for a
# 2-layer model of the same kind they are not.

# %% tags=["nbval-check-output"]
def last_logits(model, x, causal):
    model.causal = causal
    with torch.no_grad():
        out = model(x)[:, -1]
    model.causal = True
    return out


prefixes = x_eval[:50, :9]
one_layer = models["with causal mask"]
check_close("1 layer (trained): last-position logits, mask vs no mask at inference",
            (last_logits(one_layer, prefixes, True) - last_logits(one_layer, prefixes, False)).abs().max(), 0.0,
            atol=1e-5)
torch.manual_seed(3)
two_layers = TinyLM(causal=True, n_layers=2)
check_true("2 layers: the last-position logits CHANGE when the mask is dropped at inference",
           (last_logits(two_layers, prefixes, True) - last_logits(two_layers, prefixes, False)).abs().max() > 1e-2)

# %% [markdown]
# **004 §5.5 says** "all positions in the upper triangle of the $T\times T$ attention **weight** matrix are
# set to $-\infty$". **Imprecise:** it is the *scores* (before the softmax) that get $-\infty$, and only
# *strictly* above the diagonal (the table under that sentence is right: the diagonal is ✓). Masking the
# weights after the softmax is a real bug, not a matter of wording: setting them to $-\infty$ gives
# nonsense, and setting them to 0 leaves rows that no longer sum to 1 — the masked probability mass is
# simply lost.

# %% tags=["nbval-check-output"]
scores = q1 @ k1.transpose(-2, -1) / math.sqrt(8)              # the scores of section 1
after = torch.softmax(scores, -1) * causal_mask(6)                  # mask applied to the weights
check_true("masking the weights after softmax: rows no longer sum to 1",
           not torch.allclose(after.sum(-1), torch.ones(1, 6), atol=1e-3))
check_close("...only the last row (which masks nothing) still sums to 1", after.sum(-1)[0, -1], 1.0, atol=1e-6)
check_close("masking the scores: every row sums to 1", w_bool.sum(-1), torch.ones(1, 6), atol=1e-6)

# %% [markdown]
# **004 §14 (summary) says** "The only fundamental difference between an encoder and a decoder is the causal
# mask." **Not for the encoder–decoder's decoder**, which also has a third sublayer, cross-attention (as
# 004 §12 itself, 000 §8.6.3 and 001 §19.7.1 say). It holds for the decoder-only family, whose blocks are
# encoder blocks with a causal mask. PyTorch's layers show the difference:

# %% tags=["nbval-check-output"]
enc_layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, batch_first=True)
dec_layer = nn.TransformerDecoderLayer(d_model=8, nhead=2, batch_first=True)
attn_modules = lambda layer: sorted(n for n, mod in layer.named_children() if isinstance(mod, nn.MultiheadAttention))
check_equal("nn.TransformerEncoderLayer attention sublayers", attn_modules(enc_layer), ["self_attn"])
check_equal("nn.TransformerDecoderLayer attention sublayers", attn_modules(dec_layer), ["multihead_attn", "self_attn"])

# %% [markdown]
# The other statements hold, each checked above:
#
# | text | claim | verdict |
# |---|---|---|
# | 000 §8.2.4 | $M_{ij} = 0$ for $j \le i$, $-\infty$ for $j > i$; $\exp(-\infty) = 0$ gives exactly zero weight | ✓ exactly 0.0 (§1) |
# | 000 §8.2.4 | without the mask: "performs perfectly on training data but cannot generate" | ✓ loss below $\ln 2$, rule kept in < 30 % of generated tokens (§4) |
# | 000 §8.2.4 | encoder: no causal mask; encoder–decoder: causal in decoder self-attention, not in cross-attention | ✓ (§2 table); cross-attention still needs the **source padding** mask, which 000 omits |
# | 000 §8.6.4 | lower-triangular binary $T\times T$ matrix; for $T=5$ rows have 1..5 ones | ✓ 15 ones (§1) |
# | 000 §8.6.4 | one mask for all layers and heads, no parameters | ✓ broadcasts $(T,T)\to(B,h,T,T)$ (§2) |
# | 000 §8.6.4 | "makes no difference" at inference | ✗ only for 1 layer or with a KV cache (§5) |
# | 001 §19.6.2 | the only masking in the encoder is padding; $-\infty$ scores drive padded weights to zero | ✓ padding invariance (§2) |
# | 001 §19.7.2 | "upper-triangular matrix of $-\infty$", $M_{ij} = 0$ if $i \ge j$ | ✓ strictly upper; equals `generate_square_subsequent_mask` (§1) |
# | 001 §19.7.3 | cross-attention matrix is (tgt_len, src_len) | ✓ (§2) |
# | 004 §5.5 | token 1 sees itself; token 3 sees 1, 2, 3 but not 4 | ✓ (§1) |
# | 004 §5.5 | $-\infty$ in the upper triangle of the *weight* matrix | ≈ scores, strictly upper (§5) |
# | 004 §5.5 | without the mask "the model would just copy the future token" | ✓ attention offset +1 (§4c) |
# | 004 §14 | only difference encoder/decoder = causal mask | ✗ for the encoder–decoder's decoder (§5) |
#
# A note on indexing, since the texts seem to disagree: 001 §19.7.1 ("the prediction for position $t$ should
# only depend on positions $1,\dots,t-1$") counts the position of the *predicted* token; 000 §8.2.4 ("position
# $i$ can attend to positions $1,\dots,i$") and 004 §13.2 ("positions $0,\dots,t$") count the *input* position,
# whose output predicts the next token. Both are right; check (a) showed the output at input position $t$
# does depend on token $t$ itself.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6 · Widget: masks and weights of a padded batch
#
# Three sequences; set their lengths, pad them on the right or on the left, switch the causal mask on
# and off. Top: the combined mask of each sequence; bottom: the attention weights it produces. Things to
# try live:
#
# - **pad left + causal**: the leading pad queries have no visible key (red boxes) — and get zero weights;
# - **bidirectional**: every real query sees every real token, padded keys stay grey;
# - **length 0**: a whole sequence of empty rows.

# %%
MaskExplorer().show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7 · Exercises
#
# Each checker runs your function against a reference on several cases and, when they differ, names the
# typical mistake. `ex.show_solution()` reveals a reference solution — only on purpose.
#
# ### Exercise 1: the causal mask
# Write `my_causal_mask(T)` returning a $(T, T)$ **bool** tensor, True where query $i$ may attend to key $j$.

# %%
from transformer_nb.exercises.masks import causal_ex, combined_ex, padding_ex


def my_causal_mask(T):
    """(T, T) bool, True where query i may attend to key j."""
    raise NotImplementedError


causal_ex.check(my_causal_mask)

# %% [markdown]
# The checker at work on three typical mistakes: an off-by-one diagonal, the transposed triangle, and
# the `torch.tril(torch.ones(T, T))` of 000's hint used as it is — a float mask, which
# `F.scaled_dot_product_attention` would *add* to the scores.

# %% tags=["nbval-check-output"]
def off_by_one(T):
    return torch.ones(T, T, dtype=torch.bool).tril(diagonal=-1)


def upper(T):
    return torch.ones(T, T, dtype=torch.bool).triu()


def float_tril(T):
    return torch.tril(torch.ones(T, T))


for wrong in (off_by_one, upper, float_tril):
    assert not causal_ex.check(wrong).passed

# %% [markdown]
# ### Exercise 2: a padding mask from lengths
# Write `my_padding_mask(lengths, max_len)` returning a $(B, \text{max\_len})$ bool tensor, True at the real
# tokens of right-padded sequences.

# %%
def my_padding_mask(lengths, max_len):
    """(B, max_len) bool, True at the first lengths[b] positions of row b."""
    raise NotImplementedError


padding_ex.check(my_padding_mask)

# %% tags=["nbval-check-output"]
def inverted(lengths, max_len):                 # nn.MultiheadAttention's key_padding_mask polarity
    return torch.arange(max_len)[None, :] >= torch.tensor(lengths)[:, None]


assert not padding_ex.check(inverted).passed

# %% [markdown]
# ### Exercise 3: padding + causal for a decoder batch
# Write `my_decoder_mask(keep)`: `keep` is $(B, T)$ bool (True at real tokens); return the $(B, 1, T, T)$ bool
# self-attention mask of a decoder: a query may attend to a key iff the key is a real token **and** not in the
# query's future. Padded queries keep attending to the real keys before them.

# %%
def my_decoder_mask(keep):
    """keep (B, T) bool -> (B, 1, T, T) bool, True = may attend."""
    raise NotImplementedError


combined_ex.check(my_decoder_mask)

# %% tags=["nbval-check-output"]
def padding_on_queries(keep):
    T = keep.shape[-1]
    return keep[:, None, :, None] & torch.ones(T, T, dtype=torch.bool).tril()


def or_instead_of_and(keep):
    T = keep.shape[-1]
    return keep[:, None, None, :] | torch.ones(T, T, dtype=torch.bool).tril()


for wrong in (padding_on_queries, or_instead_of_and):
    assert not combined_ex.check(wrong).passed

# %% [markdown]
# To see a reference solution: `causal_ex.show_solution()`, `padding_ex.show_solution()`,
# `combined_ex.show_solution()`.
