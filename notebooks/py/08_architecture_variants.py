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
# # 08 · Encoder-only, decoder-only, encoder–decoder
#
# [![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-nb/transformer-nb/blob/main/notebooks/08_architecture_variants.ipynb)
#
# BERT classifies, GPT writes, T5 translates: three kinds of task, yet one set of parts. The block of notebook 06
# can be wired three ways, and the wirings differ only in **who may attend to whom**. **Encoder-only** (BERT): a
# stack of blocks whose self-attention sees the whole sequence. **Decoder-only** (GPT): the *same* blocks with a
# causal mask, so each position sees only its past and the model can generate left to right. **Encoder–decoder**
# (the original Transformer, T5): a bidirectional encoder reads the source; a decoder generates the target and,
# in a third sublayer, **cross-attention**, reads the encoder's output. This notebook builds all three from the
# package's blocks, records from the running models which masks they use, and proves them equal to PyTorch's.
#
# **Serves:** 000 §8.6 (8.6.1–8.6.5, Table 8.2); 001 §19.7–19.8, §19.11 (19.11.2–19.11.3); 003 "The Three
# Transformer Families", "Decoder Block and Encoder-Decoder Interaction", "PyTorch and TensorFlow"; 004 §12–14.
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
import matplotlib.pyplot as plt
import torch
import torch.nn as nn
from matplotlib.colors import ListedColormap

from transformer_nb import check_close, check_equal, check_raises, check_true, pick, show_source
from transformer_nb.core.block import DecoderLayer, EncoderLayer
from transformer_nb.core.masks import causal_mask, padding_mask
from transformer_nb.core.stack import Decoder, Encoder
from transformer_nb.core.transformer import Transformer, TransformerConfig
from transformer_nb.interop import to_torch, torch_masks
from transformer_nb.objectives import describe_objective, lm_batch, lm_loss, mlm_batch, span_corruption
from transformer_nb.params import numel
from transformer_nb.probes import capture_masks, record_attention, trace_shapes
from transformer_nb.widgets.models import VariantWidget

TRIALS = pick(quick=5, full=50)  # random batches per invariance check


def show_table(headers, rows):
    """Print rows as an aligned plain-text table."""
    cells = [[str(c) for c in r] for r in [headers, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for i, r in enumerate(cells):
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)))
        if i == 0:
            print("-+-".join("-" * w for w in widths))


# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · One set of blocks, three wirings
#
# The package has two blocks (notebook 06): `EncoderLayer` (self-attention + FFN) and `DecoderLayer`
# (causal self-attention + cross-attention + FFN). The three variants put an embedding in front and a head behind:
#
# | model | stack(s) | head |
# |---|---|---|
# | `Transformer` (BERT: `arch="encoder"`) | `EncoderLayer` × N, bidirectional | masked-LM logits at every position (and BERT's pooler on position 0, which a classifier reads) |
# | `Transformer` (GPT: `arch="decoder"`) | `EncoderLayer` × N, **causal** | next-token logits |
# | `Transformer` (original, T5: `arch="encoder-decoder"`) | `EncoderLayer` × N over the source; `DecoderLayer` × N over the target | next-token logits of the target |
#
# A GPT contains no `DecoderLayer` at all: "decoder" in "decoder-only" names the causal mask, not the three-sublayer
# block (001 §19.11.3, 004 §13.2). We build the three at the same small size and run each on a padded toy batch.
# `probes.capture_masks` puts a hook on every attention sublayer, records the mask it was *called with* (plus the
# causal triangle when `is_causal=True`) and names it from what it blocks. Nothing below is typed by hand.
#
# All three are the package's one `Transformer`, the model notebooks 09, 10 and 12 train: a frozen
# `TransformerConfig` names the variant (`arch`), and the class builds its parts from it. Its stack of
# `EncoderLayer`s is `blocks` (the encoder, or the GPT's causal stack); only the encoder–decoder adds a `decoder`.
# Its `forward` returns `(logits, loss)`, as nanoGPT's does; `keep` marks the real tokens of a padded batch, and an
# encoder–decoder also reads the target `tgt` (with its `tgt_keep`):

# %%
show_source(Transformer.__init__)
show_source(Transformer.forward)

# %%
V, PAD, BOS, EOS, MASK, CLS = 30, 0, 1, 2, 3, 4  # toy vocabulary: 5 specials, text 5..24, sentinels 25..29
SENTINEL = 25
D, HEADS, LAYERS, FF = 32, 4, 2, 64

torch.manual_seed(0)
small = TransformerConfig(vocab=V, d_model=D, n_heads=HEADS, n_layers=LAYERS, d_ff=FF)  # arch="decoder"
models = {
    "encoder-only": Transformer(small.with_(arch="encoder", pooler=True)),  # BERT, with its [CLS] pooler
    "decoder-only": Transformer(small),
    "encoder-decoder": Transformer(small.with_(arch="encoder-decoder")),
}
for m in models.values():
    m.eval()

g = torch.Generator().manual_seed(1)
src_keep = padding_mask([6, 4], 6)  # a padded source / input batch: lengths 6 and 4
tgt_keep = padding_mask([5, 3], 5)  # a padded target batch: lengths 5 and 3
src = torch.randint(5, 25, (2, 6), generator=g).masked_fill(~src_keep, PAD)
tgt = torch.randint(5, 25, (2, 5), generator=g).masked_fill(~tgt_keep, PAD)
inputs = {"encoder-only": {}, "decoder-only": {}, "encoder-decoder": {"tgt": tgt, "tgt_keep": tgt_keep}}
records = {name: capture_masks(m, src, keep=src_keep, **inputs[name]) for name, m in models.items()}  # no targets


def block_types(model):
    """Block class -> count, from the module tree."""
    counts = {}
    for mod in model.modules():
        if isinstance(mod, (EncoderLayer, DecoderLayer)):
            counts[type(mod).__name__] = counts.get(type(mod).__name__, 0) + 1
    return counts


rows = []
for name, recs in records.items():
    blocks = ", ".join(f"{n}×{c}" for n, c in block_types(models[name]).items())
    rows += [[name, blocks, r["name"], r["kind"], f"{r['q_shape'][1]}×{r['k_shape'][1]}"]
             for r in recs if ".layers.0." in r["name"]]  # one layer per stack: every layer is alike
show_table(["variant", "blocks", "attention sublayer (layer 0)", "kind", "T_q×T_k"], rows)

# %% [markdown]
# And the masks those sublayers used, for the second sequence of the batch (4 real source tokens, 3 real target
# tokens). Blue = may attend, grey = blocked; rows are queries, columns keys. Compare the panels: what does each
# variant block, and why?

# %%
cmap = ListedColormap(["#d9d9d9", "#2b8cbe"])
panels = [("encoder-only", records["encoder-only"][0]), ("decoder-only", records["decoder-only"][0]),
          *[("encoder-decoder", r) for r in records["encoder-decoder"] if ".layers.0." in r["name"]]]
fig, axes = plt.subplots(1, len(panels), figsize=(3.1 * len(panels), 3.5), layout="constrained")
for ax, (variant, r) in zip(axes, panels):
    mask = r["mask"][1]
    on_target = variant == "encoder-decoder" and r["name"].startswith("decoder")
    q_keep = tgt_keep[1] if on_target else src_keep[1]
    k_keep = src_keep[1] if (r["kind"] == "cross" or not on_target) else tgt_keep[1]
    ax.imshow(mask.int().numpy(), cmap=cmap, vmin=0, vmax=1)
    ax.set_xticks(range(mask.shape[1]), ["pad" if not k else j for j, k in enumerate(k_keep.tolist())], fontsize=8)
    ax.set_yticks(range(mask.shape[0]), ["pad" if not k else i for i, k in enumerate(q_keep.tolist())], fontsize=8)
    ax.set_title(f"{variant}\n{r['name'].replace('.layers.0', '')}", fontsize=9)
    ax.set_xlabel("key position")
axes[0].set_ylabel("query position")
plt.show()

# %% [markdown]
# Three facts, each of which would fail if a variant were wired differently: encoder-only and decoder-only are
# built from the *same* block class and differ only in the triangle; every layer of a stack uses the same mask as
# its layer 0; cross-attention exists only in the encoder–decoder, where its queries come from the target (length
# 5) and its keys from the source (length 6). Padded *query* rows still attend to the real keys (their outputs are
# never used by a loss), so no row is ever fully blocked; only padded *keys* (columns) are.

# %% tags=["nbval-check-output"]
def sublayer_slot(name):
    """'decoder.layers.1.cross_attn' -> ('decoder', 'cross_attn'): the same sublayer in every layer."""
    stack, rest = name.split(".layers.")
    return stack, rest.split(".", 1)[1]


check_equal("blocks: encoder-only / decoder-only / encoder-decoder", [block_types(m) for m in models.values()],
            [{"EncoderLayer": LAYERS}, {"EncoderLayer": LAYERS}, {"EncoderLayer": LAYERS, "DecoderLayer": LAYERS}])
check_true("every layer of a stack uses the same masks as its layer 0",
           all(len({(r["label"], r["mask"].shape) for r in records[n] if sublayer_slot(r["name"]) == slot}) == 1
               for n in records for slot in {sublayer_slot(r["name"]) for r in records[n]}))
check_true("encoder-only and decoder-only masks differ exactly by the causal triangle",
           torch.equal(records["encoder-only"][0]["mask"] & causal_mask(6), records["decoder-only"][0]["mask"]))
check_equal("cross-attention (T_q, T_k)", [(r["q_shape"][1], r["k_shape"][1]) for r in records["encoder-decoder"]
                                           if r["kind"] == "cross"], [(5, 6)] * LAYERS)
check_equal("cross-attention sublayers in encoder-only / decoder-only",
            [sum(r["kind"] == "cross" for r in records[n]) for n in ("encoder-only", "decoder-only")], [0, 0])
check_equal("the mask has no parameters: encoder-only stack minus decoder-only stack",
            numel(models["encoder-only"].blocks) - numel(models["decoder-only"].blocks), 0)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · Who can see whom, measured
#
# A mask is a claim about dependence: output $i$ may depend on input $j$ only where the masks of all layers let
# information flow. We can measure that dependence directly: change token $j$, and see which outputs change.
# `influence[i, j]` is True (red in the figure) when output $i$ moved.
#
# The third panel runs the decoder-only example of 003 ("PyTorch and TensorFlow"):
# `decoder = nn.TransformerDecoder(decoder_layer, ...)`, `out = decoder(x, memory=x, tgt_mask=mask)`.
# An `nn.TransformerDecoderLayer` has a cross-attention sublayer, and here it attends to `memory=x`: the full,
# unmasked input.

# %%
def influence(fn, x, perturb):
    """(T, T) bool: [i, j] is True if changing input position j changes output position i."""
    with torch.no_grad():
        base = fn(x)
        t = base.shape[1]
        out = torch.zeros(t, t, dtype=torch.bool)
        for j in range(t):
            out[:, j] = (fn(perturb(x, j)) - base).abs().amax(dim=-1)[0] > 1e-5
    return out


def new_token(ids, j):
    changed = ids.clone()
    changed[:, j] = 5 + (changed[:, j] - 5 + 7) % 20  # a different text token
    return changed


def new_vector(x, j):
    changed = x.clone()  # a random direction: adding a constant to all features would vanish in LayerNorm
    changed[:, j] += torch.randn(x.shape[-1], generator=torch.Generator().manual_seed(100 + j))
    return changed


T = 7
ids = torch.randint(5, 25, (1, T), generator=torch.Generator().manual_seed(3))
x_emb = torch.randn(1, T, D, generator=torch.Generator().manual_seed(4))
torch.manual_seed(0)
text_003 = nn.TransformerDecoder(nn.TransformerDecoderLayer(D, HEADS, FF, 0.0, batch_first=True, norm_first=True),
                                 num_layers=2).eval()
fixed = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, HEADS, FF, 0.0, batch_first=True, norm_first=True),
                              num_layers=2, enable_nested_tensor=False).eval()
causal_t = nn.Transformer.generate_square_subsequent_mask(T)
maps = {
    "encoder-only (ours)": influence(lambda x: models["encoder-only"](x)[0], ids, new_token),
    "decoder-only (ours)": influence(lambda x: models["decoder-only"](x)[0], ids, new_token),
    "003: TransformerDecoder(x, memory=x,\ntgt_mask=causal)": influence(
        lambda x: text_003(x, memory=x, tgt_mask=causal_t), x_emb, new_vector),
    "fix: TransformerEncoder(x,\nmask=causal)": influence(
        lambda x: fixed(x, mask=causal_t, is_causal=True), x_emb, new_vector),
}
fig, axes = plt.subplots(1, 4, figsize=(13, 3.7), layout="constrained")
for ax, (title, m) in zip(axes, maps.items()):
    ax.imshow(m.int().numpy(), cmap=ListedColormap(["white", "#d7301f"]), vmin=0, vmax=1)
    ax.set_title(title, fontsize=9)
    ax.set(xlabel="changed input position j", xticks=range(T), yticks=range(T))
axes[0].set_ylabel("output position i")
plt.show()

# %% [markdown]
# The encoder-only model is bidirectional: every output depends on every input, which is why it cannot generate
# left to right (000 §8.6.1). Our decoder-only model is exactly lower-triangular: the output at position $i$
# depends on tokens $0..i$ and nothing later, the autoregressive factorisation of 000 §8.6.2 and 004 §13.2.
# **003's snippet leaks the future**: its `tgt_mask` makes the *self*-attention causal, but the cross-attention
# reads `memory=x` with no mask, so position 0 sees the last token (red upper triangle, third panel; ledger
# `003-decoder-only`). A GPT-style stack in PyTorch is `nn.TransformerEncoder` with the causal mask (fourth panel).
# Run it with the mask at inference too: dropping it changes the outputs of a model of two or more layers
# (notebook 02; ledger `000-8.6.4-nodiff`).

# %% tags=["nbval-check-output"]
lower = torch.ones(T, T, dtype=torch.bool).tril()
check_equal("encoder-only: every output depends on every input", maps["encoder-only (ours)"],
            torch.ones(T, T, dtype=torch.bool))
check_equal("decoder-only: output i depends exactly on inputs 0..i", maps["decoder-only (ours)"], lower)
leak = maps["003: TransformerDecoder(x, memory=x,\ntgt_mask=causal)"]
check_equal("003's snippet: (i, j > i) pairs where a later input changes an earlier output, of 21",
            int(leak.triu(1).sum()), T * (T - 1) // 2)
check_equal("the fix (TransformerEncoder + causal mask) is lower-triangular",
            maps["fix: TransformerEncoder(x,\nmask=causal)"], lower)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · An encoder–decoder forward pass, traced
#
# 004 §14 translates "The cat sat" with $B = 1$, $T_{enc} = 3$, $d_{\text{model}} = 768$, 12 heads of 64. Its number
# of layers is open; the shapes do not depend on it, so we use 2 to stay fast. `probes.trace_shapes` records every
# submodule's inputs and output, and for attention the weights $(B, h, T_q, T_k)$: the decoder's first step reads
# `[BOS]` and the three source tokens.

# %%
torch.manual_seed(0)
d768 = Transformer(arch="encoder-decoder", vocab=200, tgt_vocab=1000, d_model=768, n_heads=12, n_layers=2, d_ff=3072,
                   share_embeddings=False, tie_output=False).eval()  # two vocabularies: two tables, and an output layer
src_ids = torch.tensor([[2, 47, 193]])  # "The cat sat"
bos = torch.tensor([[BOS]])  # the decoder starts with [BOS]
steps = trace_shapes(d768, src_ids, tgt=bos)
by_name = {r["name"]: r for r in steps}
SHOW = ["tok", "blocks.layers.0.self_attn", "blocks.layers.0.ff", "blocks.norm", "tgt_tok",
        "decoder.layers.0.self_attn", "decoder.layers.0.cross_attn", "decoder.layers.0.ff", "decoder", "head.proj"]
show_table(["module (in execution order)", "tensor inputs", "output", "attention weights"],
           [[r["name"], ", ".join(str(s) for n, s in r["inputs"] if n != "mask"), r["out"], r.get("weights", "")]
            for r in steps if r["name"] in SHOW])

# %% tags=["nbval-check-output"]
check_equal("source ids -> embeddings", (by_name["tok"]["in"], by_name["tok"]["out"]), ((1, 3), (1, 3, 768)))
check_equal("encoder self-attention weights: 12 heads of 3×3", by_name["blocks.layers.0.self_attn"]["weights"],
            (1, 12, 3, 3))
check_equal("encoder output (the memory, after its final norm)", by_name["blocks.norm"]["out"], (1, 3, 768))
check_equal("decoder masked self-attention on [BOS]: 1×1 per head", by_name["decoder.layers.0.self_attn"]["weights"],
            (1, 12, 1, 1))
check_equal("cross-attention: Q from the decoder, K and V from the encoder",
            [s for _, s in by_name["decoder.layers.0.cross_attn"]["inputs"][:3]],
            [(1, 1, 768), (1, 3, 768), (1, 3, 768)])
check_equal("cross-attention weights (B, h, T_dec, T_enc)", by_name["decoder.layers.0.cross_attn"]["weights"],
            (1, 12, 1, 3))
check_equal("logits (B, T_dec, target vocabulary)", tuple(d768(src_ids, tgt=bos)[0].shape), (1, 1, 1000))

# %% [markdown]
# **Generating.** Append the chosen token and decode again. The encoder is *not* run again: its output is computed
# once and every decoding step reads it (001 §19.7.3: the cross-attention keys and values "need to be computed only
# once"). Decoding from that stored memory gives exactly what a full forward pass gives, and the logits at
# position 0 do not change when a second target token arrives (the causal mask at work).

# %% tags=["nbval-check-output"]
with torch.no_grad():
    memory = d768.encode(src_ids)  # once
    step1 = d768.decode(bos, memory)  # (1, 1, 1000)
    tgt2 = torch.cat([bos, step1[:, -1].argmax(-1, keepdim=True)], dim=1)  # [BOS, greedy choice]
    step2 = d768.decode(tgt2, memory)
    full2 = d768(src_ids, tgt=tgt2)[0]
check_equal("second step: logits", tuple(step2.shape), (1, 2, 1000))
check_close("decode(tgt, stored memory) = forward(src, tgt): max |difference|", (step2 - full2).abs().max(), 0.0,
            atol=1e-5)
check_close("logits at position 0 unchanged by the new token", (step2[:, 0] - step1[:, 0]).abs().max(), 0.0,
            atol=1e-5)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · Cross-attention maps and padding
#
# Every cross-attention map has one row per target position and one column per source position (001 §19.7.3). In
# a padded batch the columns of padded source tokens must receive **exactly zero** weight, or the translation of a
# short sentence would depend on how long its batch-mates are. A batch of two, source lengths 7 and 4 (padded to
# 7), target lengths 5 and 3 (padded to 5), the small encoder–decoder of section 1. (The widget of section 7 draws
# these maps; notebook 09 trains a model and shows the alignment it learns.)

# %%
model = models["encoder-decoder"]
sk, tk = padding_mask([7, 4], 7), padding_mask([5, 3], 5)
gb = torch.Generator().manual_seed(5)
xs = torch.randint(5, 25, (2, 7), generator=gb).masked_fill(~sk, PAD)
ys = torch.randint(5, 25, (2, 5), generator=gb).masked_fill(~tk, PAD)
with torch.no_grad(), record_attention(model):
    model(xs, keep=sk, tgt=ys, tgt_keep=tk)
    cross_w = torch.stack([layer.cross_attn.last_weights for layer in model.decoder.layers])  # (L, B, h, T, S)


# %% tags=["nbval-check-output"]
check_equal("cross-attention weights (layers, B, h, T_tgt, S_src)", tuple(cross_w.shape), (LAYERS, 2, HEADS, 5, 7))
check_true("padded source columns get exactly zero weight (every layer, head, query)",
           torch.equal(cross_w[:, 1, :, :, 4:], torch.zeros(LAYERS, HEADS, 5, 3)))
check_close("each query's weights over the real source tokens sum to 1", cross_w.sum(-1),
            torch.ones(LAYERS, 2, HEADS, 5), atol=1e-6)

# %% [markdown]
# Zero weight in one sublayer is not the whole story: the outputs at real positions must not change *at all* when
# the padding changes, through every layer, norm and residual. The test: make the padding longer and fill it with
# random junk tokens instead of PAD, and compare the outputs at the real positions, `TRIALS` random batches, with
# the padding masks and without them (004 §13's code passes no padding masks anywhere).

# %%
def junk_padded(ids, keep, extra, gen):
    """The same real tokens, ``extra`` more padded positions, and junk (not PAD) in all padded positions."""
    b, t = ids.shape
    new_keep = torch.cat([keep, torch.zeros(b, extra, dtype=torch.bool)], dim=1)
    junk = torch.randint(5, 25, (b, t + extra), generator=gen)
    return torch.where(new_keep, torch.cat([ids, junk[:, t:]], dim=1), junk), new_keep


def padding_drift(variant, use_masks, trials, seed=0):
    """Largest change at real positions when padding content and length change, relative to the largest output."""
    gen, m, worst = torch.Generator().manual_seed(seed), models[variant], 0.0
    mk = (lambda k: k) if use_masks else (lambda k: None)
    for _ in range(trials):
        keep = padding_mask(torch.randint(2, 8, (3,), generator=gen).tolist(), 8)
        ids = torch.randint(5, 25, (3, 8), generator=gen).masked_fill(~keep, PAD)
        ids2, keep2 = junk_padded(ids, keep, int(torch.randint(1, 5, (1,), generator=gen)), gen)
        with torch.no_grad():
            if variant == "encoder-decoder":
                tkeep = padding_mask(torch.randint(2, 6, (3,), generator=gen).tolist(), 6)
                tids = torch.randint(5, 25, (3, 6), generator=gen).masked_fill(~tkeep, PAD)
                tids2, tkeep2 = junk_padded(tids, tkeep, 2, gen)
                a = m(ids, keep=mk(keep), tgt=tids, tgt_keep=mk(tkeep))[0][tkeep]
                b = m(ids2, keep=mk(keep2), tgt=tids2, tgt_keep=mk(tkeep2))[0][tkeep2]
            else:  # the Transformer returns (logits, loss)
                a, b = m(ids, keep=mk(keep))[0][keep], m(ids2, keep=mk(keep2))[0][keep2]
        worst = max(worst, float((a - b).abs().max() / a.abs().max()))
    return worst


drift = {(v, masked): padding_drift(v, masked, TRIALS) for v in models for masked in (True, False)}
fig, ax = plt.subplots(figsize=(7, 3.4), layout="constrained")
xs_ = range(len(models))
ax.bar([x - 0.2 for x in xs_], [max(drift[v, True], 1e-9) for v in models], 0.4, label="with padding masks")
ax.bar([x + 0.2 for x in xs_], [max(drift[v, False], 1e-9) for v in models], 0.4, label="without (004 §13's code)")
ax.axhline(1e-5, color="k", lw=0.8, ls="--")
ax.text(2.45, 1.3e-5, "tolerance 1e-5", fontsize=8, ha="right")
ax.set(yscale="log", ylim=(1e-9, 10), xticks=list(xs_), xticklabels=list(models),
       ylabel="max |change| / max |output|\nat real positions",
       title=f"Longer, junk-filled padding: how much do real outputs move? ({TRIALS} random batches)")
ax.legend(fontsize=8)
plt.show()

# %% tags=["nbval-check-output"]
for v in models:
    check_close(f"{v}: relative change at real positions, with masks", drift[v, True], 0.0, atol=1e-5)
check_true("encoder-only without masks: the junk padding leaks into real positions", drift["encoder-only", False] > 1e-3)
check_true("encoder-decoder without masks: the junk padding leaks into real positions",
           drift["encoder-decoder", False] > 1e-3)
check_close("decoder-only, right padding, no mask at all", drift["decoder-only", False], 0.0, atol=1e-5)

# %% [markdown]
# The decoder-only model is unaffected even *without* a padding mask: with right padding every padded position lies
# in the future of every real position, and the causal mask already hides it. That is why GPT-style training can
# get away with right padding and no key-padding mask. It does not hold for **left** padding (used to batch
# prompts for generation): the real tokens' positions shift, so even with a padding mask the outputs change unless
# the position indices are shifted too.

# %% tags=["nbval-check-output"]
real = torch.randint(5, 25, (1, 5), generator=torch.Generator().manual_seed(6))
left = torch.cat([torch.full((1, 2), PAD), real], dim=1)
left_keep = torch.cat([torch.zeros(1, 2, dtype=torch.bool), torch.ones(1, 5, dtype=torch.bool)], dim=1)
with torch.no_grad():
    moved = (models["decoder-only"](real)[0] - models["decoder-only"](left, keep=left_keep)[0][:, 2:]).abs().max()
check_true("decoder-only, LEFT padding with the padding mask: real outputs still change (positions shifted)",
           moved > 1e-3)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5 · Equal to PyTorch's `nn.Transformer` modules
#
# PyTorch ships the same designs: `nn.TransformerEncoder` (a stack of `nn.TransformerEncoderLayer`),
# `nn.TransformerDecoder` (of `nn.TransformerDecoderLayer`, with cross-attention) and `nn.Transformer` (both).
# Notebook 06 proved each *layer* equal to PyTorch's; the stacks add a final LayerNorm in the Pre-LN design
# (001 §19.6.4). `interop.to_torch` builds the PyTorch module with our weights (`copy_from_torch` copies the other
# way; the tests check both directions), and `interop.torch_masks` turns our keep masks into PyTorch's, whose bool
# masks mean the opposite (True = *blocked*). A fresh LayerNorm has $\gamma = 1$, $\beta = 0$, which would hide a norm that was not copied,
# so every weight is perturbed first. Both norm placements, padding and causal masks:

# %%
def perturb_(module, seed):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=gen))
    return module


xb = torch.randn(3, 7, D, generator=torch.Generator().manual_seed(8))  # already-embedded inputs
yb = torch.randn(3, 5, D, generator=torch.Generator().manual_seed(9))
skb, tkb = padding_mask([7, 4, 2], 7), padding_mask([5, 3, 1], 5)
kw = torch_masks(skb, tkb)
dec_kw = {k: kw[k] for k in ("tgt_mask", "tgt_is_causal", "tgt_key_padding_mask", "memory_key_padding_mask")}
errors = {}
with torch.no_grad():
    for norm_first in (True, False):
        tag = "Pre-LN" if norm_first else "Post-LN"
        torch.manual_seed(0)
        stacks = small.with_(norm_first=norm_first)  # the sizes of section 1: 2 layers of d = 32, 4 heads
        enc = perturb_(Encoder(stacks), 1).eval()
        gpt = perturb_(Encoder(stacks, causal=True), 2).eval()
        dec = perturb_(Decoder(stacks), 3).eval()
        memory = enc(xb, skb)
        errors[f"{tag} encoder vs nn.TransformerEncoder (padding)"] = (
            memory - to_torch(enc)(xb, src_key_padding_mask=kw["src_key_padding_mask"])).abs().max()
        errors[f"{tag} decoder-only stack vs nn.TransformerEncoder (causal + padding)"] = (
            gpt(xb, skb) - to_torch(gpt)(xb, mask=~causal_mask(7), src_key_padding_mask=~skb, is_causal=True)
        ).abs().max()
        errors[f"{tag} decoder vs nn.TransformerDecoder (causal + padding + source padding)"] = (
            dec(yb, memory, tkb, skb) - to_torch(dec)(yb, memory, **dec_kw)).abs().max()
    whole = perturb_(Transformer(small.with_(arch="encoder-decoder", n_dec_layers=3)), 6).eval()  # Pre-LN
    memory = whole.blocks(xb, skb)  # the stacks on the embedded inputs above
    errors["Pre-LN encoder-decoder stacks vs nn.Transformer"] = (
        whole.decoder(yb, memory, tkb, skb) - to_torch(whole)(xb, yb, **torch_masks(skb, tkb))).abs().max()

# %% tags=["nbval-check-output"]
for name, err in errors.items():
    check_close(name + ": max |difference|", err, 0.0, atol=2e-5)
post_ln = Transformer(small.with_(arch="encoder-decoder", norm_first=False))
_ = check_raises(ValueError, "final LayerNorm", to_torch, post_ln)

# %% [markdown]
# Where the designs do *not* match, the package says so instead of returning a different function (the last
# check): `nn.Transformer` always ends each stack with a LayerNorm, even with `norm_first=False`, while a Post-LN
# stack (the original paper's) has none.
#
# ## 6 · Three training objectives
#
# The wiring decides what a variant can be trained to do (000 Table 8.2, 001 §19.11.3, 004 §13):
#
# * **encoder-only**: BERT's masked LM (`objectives.mlm_batch`): hide ~15% of the real tokens (80% of those
#   become `[MASK]`) and predict them; the loss is taken only there;
# * **decoder-only**: next-token prediction (`objectives.lm_batch`): each position predicts the token after it;
#   you will write this shift yourself in Exercise B;
# * **encoder–decoder**: T5's span corruption (`objectives.span_corruption`): drop spans from the source, mark each
#   with a sentinel; the decoder predicts the dropped spans.
#
# `describe_objective` *measures* what a loss sees: the fraction of positions with a loss term, whether each target
# is the next input token, whether the inputs there are `[MASK]`, whether a separate source conditions the
# prediction, whether the targets are exactly the text missing from the source. One training step of each model on
# its own objective:

# %%
def training_loss(variant, model, ids, keep, gen):
    """The loss of one training step of the variant's own objective on a toy batch, and what that loss saw."""
    if variant == "encoder-only":
        inputs, targets = mlm_batch(ids, keep, mask_id=MASK, vocab=V, generator=gen, protect=1)
        return lm_loss(model(inputs, keep=keep)[0], targets), describe_objective(inputs, targets, mask_id=MASK)
    if variant == "decoder-only":
        inputs, targets, in_keep = lm_batch(ids, keep)
        return lm_loss(model(inputs, keep=in_keep)[0], targets), describe_objective(inputs, targets, mask_id=MASK)
    body, body_keep = ids[:, 1:], keep[:, 1:]  # no [CLS] for T5
    src_c, src_c_keep, tgt, tgt_keep = span_corruption(body, body_keep, SENTINEL, PAD, EOS, generator=gen)
    tgt = torch.cat([torch.full((tgt.shape[0], 1), BOS), tgt], dim=1)
    tgt_keep = torch.cat([torch.ones(tgt.shape[0], 1, dtype=torch.bool), tgt_keep], dim=1)
    tgt_in, tgt_out, tgt_in_keep = lm_batch(tgt, tgt_keep)
    facts = describe_objective(tgt_in, tgt_out, source=src_c, original=body, mask_id=MASK,
                               special=[PAD, BOS, EOS, CLS, *range(SENTINEL, V)])
    return lm_loss(model(src_c, keep=src_c_keep, tgt=tgt_in, tgt_keep=tgt_in_keep)[0], tgt_out), facts


gen = torch.Generator().manual_seed(10)
keep_b = padding_mask([24, 20, 17, 24, 12, 22, 24, 19], 24)
ids_b = torch.randint(5, 25, (8, 24), generator=gen).masked_fill(~keep_b, PAD)
ids_b[:, 0] = CLS  # BERT's [CLS] first
facts = {}
for v, m in models.items():
    loss, facts[v] = training_loss(v, m, ids_b, keep_b, gen)
    loss.backward()  # a real training step would now call opt.step()
    facts[v]["loss is finite"] = bool(torch.isfinite(loss))
    facts[v]["params with a gradient"] = sum(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=True)
show_table(["variant", "positions with a loss", "target = next input", "inputs there = [MASK]", "source",
            "targets = text dropped from source", "objective (named from these facts)"],
           [[v, f"{f['loss_fraction']:.0%}", f["next_token"], f"{f['hidden_by_mask']:.0%}", f["has_source"],
             f["targets_are_dropped_spans"], f["name"]] for v, f in facts.items()])

# %% [markdown]
# (The percentages depend on the random masking and are not checked; the names and the booleans are.)

# %% tags=["nbval-check-output"]
check_equal("objective names, from the batches", {v: f["name"].split(":")[0] for v, f in facts.items()},
            {"encoder-only": "masked LM", "decoder-only": "causal LM", "encoder-decoder": "span corruption (T5)"})
check_true("the masked LM takes a loss at a minority of positions only", 0 < facts["encoder-only"]["loss_fraction"] < 0.5)
check_true("every loss is finite", all(f["loss is finite"] for f in facts.values()))
unused = {"encoder-only": len(list(models["encoder-only"].pooler.parameters())), "decoder-only": 0,
          "encoder-decoder": 0}  # the [CLS] pooler is not part of the MLM loss
check_equal("parameter tensors without a gradient after backward (only the unused pooler's weight and bias)",
            {v: len(list(m.parameters())) - facts[v]["params with a gradient"] for v, m in models.items()}, unused)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7 · Widget: the masks of every sublayer, live
#
# Pick a variant, the number of real tokens and of padding positions in the input (the source, for the
# encoder–decoder) and in the target, a layer and a head. Top row: the mask each attention sublayer of that layer
# was called with, recorded by the same hooks as in section 1. Bottom row: its attention weights. Things to try:
# switch encoder-only ↔ decoder-only (same block, one triangle); add target padding and watch the decoder's
# self-attention mask lose its last columns; shorten the source and see the cross-attention columns go to zero.

# %%
VariantWidget().show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8 · Exercises
#
# Each checker compares your function with a hidden reference and names the mistake it recognises;
# `ex.hint()` gives a hint (more specific each time), `ex.solution()` a worked solution, only after you have tried.
#
# ### Exercise A: which sublayers does each variant need, and which masks?
#
# Write `variant_masks(variant, src_keep, tgt_keep)`. `variant` is `"encoder-only"`, `"decoder-only"` or
# `"encoder-decoder"`; `src_keep` is the `(B, S)` padding mask of the input (encoder-only) or source, `tgt_keep`
# the `(B, T)` mask of the sequence a decoder-only model reads, or of the encoder–decoder's target. Return a dict
# with keys `"encoder_self"`, `"decoder_self"`, `"cross"`: each the bool mask `(B, 1, T_q, T_k)` (True = may
# attend) that sublayer uses, or `None` if the variant has no such sublayer.

# %%
import torch

from transformer_nb import check_close, check_true
from transformer_nb.exercises.models import variant_masks_ex
from transformer_nb.exercises.objectives import lm_shift_ex, mean_pool_ex


# %% tags=["exercise"]
def variant_masks(variant, src_keep, tgt_keep):
    raise NotImplementedError  # your code here


variant_masks_ex.check(variant_masks)

# %% [markdown]
# ### Exercise B: the next-token shift
#
# Write `lm_shift(ids, keep)` for a right-padded batch `ids: (B, T)` with `keep: (B, T)`: return
# `(inputs, targets)`, both `(B, T-1)`, such that the target at position $t$ is the token the model must predict
# after reading tokens $0..t$. Targets at padded positions must be `-100` (ignored by `F.cross_entropy`).

# %% tags=["exercise"]
def lm_shift(ids, keep):
    raise NotImplementedError  # your code here


lm_shift_ex.check(lm_shift)

# %% [markdown]
# ### Exercise C: a sentence vector from an encoder-only model
#
# 004 §13.1 notes that mean pooling over the token representations often works as well as the `[CLS]` vector.
# Write `mean_pool(hidden, keep)`: `hidden: (B, T, d)` from an encoder, `keep: (B, T)`; return `(B, d)`, the mean
# of each sequence's hidden states over its **real** tokens (so that it, too, does not depend on the padding).

# %% tags=["exercise"]
def mean_pool(hidden, keep):
    raise NotImplementedError  # your code here


mean_pool_ex.check(mean_pool)

# %% [markdown]
# With your functions once they pass: padding a batch further changes neither the loss targets that count nor
# the sentence vectors.

# %%
shift, pool = lm_shift_ex.use(lm_shift), mean_pool_ex.use(mean_pool)
g = torch.Generator().manual_seed(0)
ids = torch.randint(3, 50, (2, 5), generator=g)
keep = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
more_keep = torch.cat([keep, torch.zeros(2, 3, dtype=torch.bool)], 1)
_, targets = shift(ids, keep)
_, more_targets = shift(torch.cat([ids, torch.zeros(2, 3, dtype=torch.long)], 1), more_keep)
check_true("the same targets count, however much padding", torch.equal(more_targets[more_targets != -100],
                                                                        targets[targets != -100]))
hidden = torch.randn(2, 5, 4, generator=g, dtype=torch.float64)
longer = torch.cat([hidden, torch.randn(2, 3, 4, generator=g, dtype=torch.float64)], 1)
check_close("max |pool(padded further) - pool|", (pool(longer, more_keep) - pool(hidden, keep)).abs().max(), 0.0,
            atol=1e-12)

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Appendix · The texts, checked
#
# Every claim of the five texts that belongs to this notebook is an entry of the claims ledger
# (`transformer_nb.claims`, rendered in notebook 13) with its verdict; the cell below prints them and runs their
# checks. Claims checked elsewhere are cited there: "the mask makes no difference at inference" (`000-8.6.4-nodiff`,
# notebook 02) and 004 §13.2's "roughly 5 GB" KV cache (`004-13.2-kv5gb`, notebook 03).

# %% tags=["nbval-check-output"]
from transformer_nb.claims import report

report(notebook="08")

# %% [markdown]
# **The comparison tables, against the running models.** 000's Table 8.2, 004 §13 and 003's three families state,
# for each variant, whether its self-attention is causal and whether it has cross-attention. Those statements are
# transcribed below as data (the only hand-typed part) and compared with what `capture_masks` recorded in
# section 1, and the objective column with what the losses of section 6 saw (`000-8.6-table8.2`, `004-13-variants`).
# 004 §14's walkthrough shapes are section 3's (`004-14-walkthrough`; its steps 2 and 7 lost their arrows in
# extraction: "1 × 31 × 3 × 768" is $1{\times}3 \to 1{\times}3{\times}768$).

# %% tags=["nbval-check-output"]
def causal_from_code(v):
    selfs = [r for r in records[v] if r["kind"] == "self"]
    causal = {r["name"].split(".")[0] for r in selfs if "causal" in r["label"]}
    if not causal:
        return "no"
    return "decoder only" if len(causal) < len({r["name"].split(".")[0] for r in selfs}) else "yes"


STATED = {"encoder-only": ("no", False), "decoder-only": ("yes", False), "encoder-decoder": ("decoder only", True)}
from_code = {v: (causal_from_code(v), any(r["kind"] == "cross" for r in records[v])) for v in models}
for text in ("000 Table 8.2", "004 §13 table", "003 three families"):
    check_equal(f"{text}: (causal self-attention, cross-attention) agree with the recorded masks", from_code, STATED)
check_equal("000 Table 8.2 / 001 §19.11.3 pre-training column", [facts[v]["name"].split(":")[0] for v in models],
            ["masked LM", "causal LM", "span corruption (T5)"])

# %% [markdown]
# **004 §12 draws its decoder layer Pre-LN and codes it Post-LN** (`004-12-prepost`): the diagram normalises before
# each sublayer, the code `x = self.layer_norm_1(x + self.attn(x, x, x))` after. With the same weights the two are
# different functions:

# %% tags=["nbval-check-output"]
pre = perturb_(DecoderLayer(small), 11).eval()  # Pre-LN: small.norm_first is True
post = DecoderLayer(small.with_(norm_first=False)).eval()
post.load_state_dict(pre.state_dict())  # the very same weights
with torch.no_grad():
    check_true("Pre-LN (the diagram) and Post-LN (the code) with equal weights differ",
               (pre(yb, xb) - post(yb, xb)).abs().max() > 1e-2)

# %% [markdown]
# **001 §19.11.3 writes the causal-LM objective** as $\mathcal{L} = -\sum_{t} \log P(x_t \mid x_1, \dots, x_{t-1})$.
# Teacher forcing computes all $T - 1$ terms in **one** forward pass; that this equals the factorisation is exactly
# the causal property: the one-pass loss equals the sum of $T - 1$ separate runs, each on a prefix $x_{1..t-1}$
# predicting $x_t$.

# %% tags=["nbval-check-output"]
lm = models["decoder-only"]
seq = ids_b[:1, 1:13]  # 12 real tokens
with torch.no_grad():
    x_in, y_out, _ = lm_batch(seq)
    one_pass = lm(x_in, y_out)[1] * y_out.numel()  # the model's own loss: mean -> sum over the 11 terms
    per_prefix = sum(-torch.log_softmax(lm(seq[:, :t])[0][0, -1], -1)[seq[0, t]] for t in range(1, seq.shape[1]))
check_close("sum of -log P(x_t | x_<t): one teacher-forced pass minus 11 prefix runs", one_pass - per_prefix, 0.0,
            atol=1e-3)
