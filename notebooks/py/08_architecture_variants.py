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
# The Transformer block of notebook 06 can be wired three ways. **Encoder-only** (BERT): a stack of blocks
# whose self-attention sees the whole sequence. **Decoder-only** (GPT): the *same* blocks, with a causal
# mask. **Encoder–decoder** (the original Transformer, T5): a bidirectional encoder, and a decoder whose
# blocks add a third sublayer, cross-attention, that reads the encoder's output. Everything else (the
# embeddings, the FFN, the norms, the residuals) is shared.
#
# This notebook
# 1. builds all three from the package's two blocks (`block.EncoderLayer`, `block.DecoderLayer`) and
#    **records from the running models** which attention sublayers exist and which mask each one uses;
# 2. shows who can see whom: bidirectional vs causal, measured by changing one token at a time (and finds a
#    decoder-only example in one text that leaks the future);
# 3. traces a full encoder–decoder forward pass with forward hooks and checks 004's walkthrough, step by step;
# 4. draws cross-attention maps (target length × source length) for a padded batch;
# 5. pushes padding masks through every stack and checks that real positions do not notice the padding;
# 6. proves the stacks equal to PyTorch's `nn.TransformerEncoder`, `nn.TransformerDecoder` and
#    `nn.Transformer` with copied weights;
# 7. regenerates the texts' comparison tables from code (masks, cross-attention, training objective) and
#    recounts the parameters of the three variants at the same width.
#
# **Serves:** 000 §8.6 (8.6.1–8.6.5, Table 8.2); 001 §19.7–19.8 (19.7.1–19.7.5, 19.8.1–19.8.4) and §19.11
# (19.11.2–19.11.3); 003 "The Three Transformer Families", "Decoder Block and Encoder-Decoder Interaction",
# "PyTorch and TensorFlow"; 004 §12, §13 (13.1–13.3), §14. Exercises at the end: the masks of each
# variant, the next-token shift, masked mean pooling. Errors found in the texts are listed at the end.
#
# **Runtime on 2 CPU cores:** quick ~17 s, full ~25 s, measured while the cores were shared with other jobs (about
# 9 s and 12 s of CPU time). Nothing is trained; the two profiles differ only in how many random batches the
# invariance checks run.

# %%
# %matplotlib inline
from transformer_nb import setup
env = setup(threads=1)  # seeds everything, prints profile / device / torch version; the models here are tiny,
                        # and one thread runs them faster than two (no hand-offs between threads)

# %%
import math

import matplotlib.pyplot as plt
import torch
import torch.nn as nn

from transformer_nb import check_close, check_equal, check_raises, check_true, pick, show_source
from transformer_nb.block import DecoderLayer, EncoderLayer
from transformer_nb.masks import additive, causal_mask, padding_mask
from transformer_nb.models import (IGNORE, PARAM_GROUPS, Decoder, DecoderOnly, Encoder, EncoderDecoder,
                                   EncoderOnly, capture_masks, decoder_from_torch, decoder_to_torch,
                                   describe_objective, encoder_from_torch, encoder_to_torch, lm_batch, lm_loss,
                                   mlm_batch, parameter_breakdown, span_corruption, to_nn_transformer,
                                   torch_masks, trace)
from transformer_nb.multihead import kv_cache_bytes, record_attention
from transformer_nb.widgets.models import VariantWidget

device = env.device
TRIALS = pick(quick=5, full=50)        # random batches per invariance check


def show_table(headers, rows):
    """Print rows as an aligned plain-text table."""
    cells = [[str(c) for c in r] for r in [headers, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    line = lambda r: " | ".join(c.ljust(w) for c, w in zip(r, widths))
    print(line(cells[0]))
    print("-+-".join("-" * w for w in widths))
    for r in cells[1:]:
        print(line(r))


# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · One set of blocks, three wirings
#
# The package has exactly two blocks (notebook 06): `EncoderLayer` (self-attention + FFN) and `DecoderLayer`
# (self-attention + **cross-attention** + FFN; its self-attention is always causal). A stack of either is a
# few lines in `transformer_nb/models.py`. The only switch the variants need is `causal` on the encoder stack:

# %%
show_source(Encoder)

# %% [markdown]
# With it, a GPT-style model is an embedding, an `Encoder(..., causal=True)` and an LM head. It contains no
# `DecoderLayer` at all: "decoder" in "decoder-only" names the causal mask, not the three-sublayer block
# (001 §19.11.3 and 004 §13.2 say the same: no encoder, no cross-attention).

# %%
show_source(DecoderOnly)

# %% [markdown]
# Now build the three at the same size and run each on a padded toy batch. `capture_masks` registers a hook on
# every `MultiHeadAttention`, records the mask it was *called with* (plus the causal triangle when
# `is_causal=True`), and names it from what it blocks: "causal" if every later key is blocked, "padding" if some
# key is blocked for another reason. Nothing in the table below is typed by hand.

# %%
V, PAD, BOS, EOS, MASK, CLS = 30, 0, 1, 2, 3, 4        # toy vocabulary: 5 specials, text 5..24, sentinels 25..29
TEXT = range(5, 25)
SENTINEL = 25
D, HEADS, LAYERS, FF = 32, 4, 2, 64

torch.manual_seed(0)
models = {
    "encoder-only": EncoderOnly(V, D, HEADS, LAYERS, FF, pad_id=PAD, n_classes=2),
    "decoder-only": DecoderOnly(V, D, HEADS, LAYERS, FF, pad_id=PAD),
    "encoder-decoder": EncoderDecoder(V, V, D, HEADS, LAYERS, LAYERS, FF, pad_id=PAD),
}
for m in models.values():
    m.eval()

g = torch.Generator().manual_seed(1)
src_keep = padding_mask([6, 4], 6)                     # a padded source / input batch: lengths 6 and 4
tgt_keep = padding_mask([5, 3], 5)                     # a padded target batch: lengths 5 and 3
src = torch.randint(5, 25, (2, 6), generator=g).masked_fill(~src_keep, PAD)
tgt = torch.randint(5, 25, (2, 5), generator=g).masked_fill(~tgt_keep, PAD)
inputs = {"encoder-only": (src, src_keep), "decoder-only": (src, src_keep),
          "encoder-decoder": (src, tgt, src_keep, tgt_keep)}

records = {name: capture_masks(m, *inputs[name]) for name, m in models.items()}


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
    for r in recs:
        if ".layers.0." in r["name"]:                  # one layer per stack is enough: every layer is alike
            rows.append([name, blocks, r["name"], r["kind"], f"{r['q_shape'][1]}×{r['k_shape'][1]}", r["label"]])
show_table(["variant", "blocks", "attention sublayer (layer 0)", "kind", "T_q×T_k", "mask used"], rows)

# %% [markdown]
# Three facts to check, each of which could fail if a variant were wired differently: every layer of a stack uses
# the same mask as its layer 0; encoder-only and decoder-only are built from the *same* block class and differ
# only in the causal part of the mask; and cross-attention exists only in the encoder–decoder, where its queries
# come from the target (length 5) and its keys from the source (length 6).

# %% tags=["nbval-check-output"]
def labels(name):
    return [(r["name"], r["kind"], r["label"]) for r in records[name]]


def sublayer_slot(name):
    """'decoder.layers.1.cross_attn' -> ('decoder', 'cross_attn'): the same sublayer in every layer."""
    stack, rest = name.split(".layers.")
    return stack, rest.split(".", 1)[1]


check_true("every layer of a stack uses the same masks as its layer 0",
           all(len({(r["label"], r["mask"].shape) for r in records[n] if sublayer_slot(r["name"]) == slot}) == 1
               for n in records for slot in {sublayer_slot(r["name"]) for r in records[n]}))
check_equal("blocks of encoder-only", block_types(models["encoder-only"]), {"EncoderLayer": LAYERS})
check_equal("blocks of decoder-only", block_types(models["decoder-only"]), {"EncoderLayer": LAYERS})
check_equal("blocks of encoder-decoder", block_types(models["encoder-decoder"]),
            {"EncoderLayer": LAYERS, "DecoderLayer": LAYERS})
check_equal("encoder-only masks", sorted({r[2] for r in labels("encoder-only")}), ["padding"])
check_equal("decoder-only masks", sorted({r[2] for r in labels("decoder-only")}), ["causal + padding"])
check_equal("encoder-decoder (stack, kind) -> mask",
            sorted({(r[0].split(".")[0], r[1], r[2]) for r in labels("encoder-decoder")}),
            [("decoder", "cross", "padding"), ("decoder", "self", "causal + padding"), ("encoder", "self", "padding")])
check_equal("cross-attention (T_q, T_k)", [(r["q_shape"][1], r["k_shape"][1]) for r in records["encoder-decoder"]
                                           if r["kind"] == "cross"], [(5, 6)] * LAYERS)
check_equal("cross-attention sublayers in encoder-only / decoder-only",
            [sum(r["kind"] == "cross" for r in records[n]) for n in ("encoder-only", "decoder-only")], [0, 0])

# %% [markdown]
# Here are those recorded masks for the second sequence of the batch (4 real source tokens, 3 real target tokens).
# Blue = may attend, grey = blocked; rows are queries, columns keys.

# %%
from matplotlib.colors import ListedColormap

cmap = ListedColormap(["#d9d9d9", "#2b8cbe"])
panels = [("encoder-only", records["encoder-only"][0]), ("decoder-only", records["decoder-only"][0]),
          *[("encoder-decoder", r) for r in records["encoder-decoder"] if ".layers.0." in r["name"]]]
fig, axes = plt.subplots(1, len(panels), figsize=(3.1 * len(panels), 3.4))
for ax, (variant, r) in zip(axes, panels):
    mask = r["mask"][1]
    ax.imshow(mask.int().numpy(), cmap=cmap, vmin=0, vmax=1)
    on_target = variant == "encoder-decoder" and r["name"].startswith("decoder")
    q_keep = tgt_keep[1] if on_target else src_keep[1]
    k_keep = src_keep[1] if (r["kind"] == "cross" or not on_target) else tgt_keep[1]
    ax.set_xticks(range(mask.shape[1]), ["pad" if not k else j for j, k in enumerate(k_keep.tolist())], fontsize=8)
    ax.set_yticks(range(mask.shape[0]), ["pad" if not k else i for i, k in enumerate(q_keep.tolist())], fontsize=8)
    ax.set_title(f"{variant}\n{r['name'].replace('.layers.0', '')}\n{r['label']}", fontsize=9)
    ax.set_xlabel("key")
axes[0].set_ylabel("query")
fig.suptitle("The masks the three variants used, recorded by hooks (second sequence of the batch)", y=1.02)
fig.tight_layout()
plt.show()

# %% [markdown]
# Note the padded *query* rows: they still attend to the real keys (their outputs are never used by a loss), so
# no row is ever fully blocked. Only padded *keys* (columns) are blocked.
#
# 000 §8.6.4 prints the causal mask for $T = 5$ (lost in extraction); its rule is $M_{ij} = 1$ iff $j \le i$.
# 001 §19.7.2 writes the same mask in additive form, $0$ on and below the diagonal and $-\infty$ above, which
# is what PyTorch's `nn.Transformer.generate_square_subsequent_mask` returns:

# %% tags=["nbval-check-output"]
print(causal_mask(5).int())
i, j = torch.arange(5)[:, None], torch.arange(5)[None, :]
check_equal("000 §8.6.4: M_ij = 1 iff j <= i", causal_mask(5), j <= i)
check_equal("001 §19.7.2: 0 where i >= j, -inf where i < j = generate_square_subsequent_mask(5)",
            additive(causal_mask(5)), nn.Transformer.generate_square_subsequent_mask(5))
check_equal("the mask has no parameters: numel of encoder-only minus decoder-only",
            sum(p.numel() for p in models["encoder-only"].encoder.parameters())
            - sum(p.numel() for p in models["decoder-only"].blocks.parameters()), 0)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · Who can see whom: bidirectional vs causal, measured
#
# A mask is a claim about dependence: output $i$ may depend on input $j$ only where the mask (through all layers)
# lets information flow. We can measure that dependence directly: change token $j$, and see which outputs change.
# `influence[i, j]` is True when output $i$ moved.
#
# The third panel runs the decoder-only example of 003 ("PyTorch and TensorFlow"):
# `decoder = nn.TransformerDecoder(decoder_layer, ...)`, `out = decoder(x, memory=x, tgt_mask=mask)`.
# An `nn.TransformerDecoderLayer` has a cross-attention sublayer, and here it attends to `memory=x` — the full,
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
    changed[:, j] = 5 + (changed[:, j] - 5 + 7) % 20          # a different text token
    return changed


def new_vector(x, j):
    changed = x.clone()           # a random direction: adding a constant to all features would vanish in LayerNorm
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
    "encoder-only (ours)": influence(models["encoder-only"], ids, new_token),
    "decoder-only (ours)": influence(models["decoder-only"], ids, new_token),
    "003: TransformerDecoder(x, memory=x,\ntgt_mask=causal)": influence(
        lambda x: text_003(x, memory=x, tgt_mask=causal_t), x_emb, new_vector),
    "fix: TransformerEncoder(x,\nmask=causal)": influence(
        lambda x: fixed(x, mask=causal_t, is_causal=True), x_emb, new_vector),
}
fig, axes = plt.subplots(1, 4, figsize=(13, 3.6))
for ax, (title, m) in zip(axes, maps.items()):
    ax.imshow(m.int().numpy(), cmap=ListedColormap(["white", "#d7301f"]), vmin=0, vmax=1)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("changed input position j")
    ax.set_xticks(range(T))
    ax.set_yticks(range(T))
axes[0].set_ylabel("output position i")
fig.suptitle("Red: output i changes when input j changes", y=1.02)
fig.tight_layout()
plt.show()

# %% [markdown]
# The encoder-only model is bidirectional: every output depends on every input, which is why it cannot generate
# left to right (000 §8.6.1). Our decoder-only model is exactly lower-triangular: the output at position $i$ depends on
# tokens $0..i$ and nothing later, the autoregressive factorisation of 000 §8.6.2 and 004 §13.2.
#
# **003's decoder-only example is wrong: it leaks the future.** Its `tgt_mask` makes the *self*-attention causal,
# but the cross-attention reads `memory=x` with no mask, so position 0 sees the last token. The red upper triangle
# in the third panel proves it. A GPT-style stack in PyTorch is `nn.TransformerEncoder` with the causal mask
# (fourth panel), which is what our `DecoderOnly` is shown equal to in section 6.

# %% tags=["nbval-check-output"]
lower = torch.ones(T, T, dtype=torch.bool).tril()
check_equal("encoder-only: every output depends on every input", maps["encoder-only (ours)"],
            torch.ones(T, T, dtype=torch.bool))
check_equal("decoder-only: output i depends exactly on inputs 0..i", maps["decoder-only (ours)"], lower)
leak = maps["003: TransformerDecoder(x, memory=x,\ntgt_mask=causal)"]
check_true("003's snippet: some output depends on a LATER input (leak)", leak.triu(1).any())
check_equal("003's snippet: number of (i, j > i) pairs that leak, of 21", int(leak.triu(1).sum()), T * (T - 1) // 2)
check_equal("the fix (TransformerEncoder + causal mask) is lower-triangular",
            maps["fix: TransformerEncoder(x,\nmask=causal)"], lower)

# %% [markdown]
# **000 §8.6.4 says** that at inference "the mask is automatically satisfied because future tokens have not yet
# been generated", so applying it "makes no difference to the output". That holds for the single new query of
# KV-cached decoding (its keys are all in the past) and for a one-layer model. It is **false when the prefix is
# re-run in one pass without the mask**, as a plain generation loop (004 §13.2, steps 1–4) does: the earlier prefix
# positions then attend to later prefix tokens, their layer-1 outputs change, and from layer 2 on the last position
# reads those changed keys and values. A model trained with the mask must be run with it.

# %% tags=["nbval-check-output"]
def next_token_logits(model, ids, causal):
    """Logits for the token after ``ids``, with the causal mask on or off in every layer."""
    model.blocks.causal = causal
    try:
        with torch.no_grad():
            return model(ids)[:, -1]
    finally:
        model.blocks.causal = True


torch.manual_seed(0)
for n_layers in (1, 2):
    lm = DecoderOnly(V, D, HEADS, n_layers, FF, pad_id=PAD).eval()
    same = torch.allclose(next_token_logits(lm, ids, True), next_token_logits(lm, ids, False), atol=1e-5)
    print(f"{n_layers} layer(s): next-token logits identical with and without the mask: {same}")
    check_equal(f"{n_layers} layer(s): dropping the mask at inference leaves the next-token logits unchanged",
                same, n_layers == 1)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · A full encoder–decoder forward pass, traced (004 §14, 001 §19.8)
#
# 004 §14 translates "The cat sat" with $B = 1$, $T_{enc} = 3$, embed_dim $= 768$, 12 heads of $64$. It leaves
# the number of layers $N$ open; the shapes do not depend on it, so we use $N = 2$ to stay fast (the tests use
# other depths). Vocabularies are toy-sized: source ids up to 193 as in the text, 1000 target tokens.
# `trace` puts a forward hook on every submodule and records the shapes of all tensor arguments, of the output,
# and, for attention, of the weights $(B, h, T_q, T_k)$.

# %%
torch.manual_seed(0)
d768 = EncoderDecoder(src_vocab=200, tgt_vocab=1000, d_model=768, n_heads=12, n_enc_layers=2, n_dec_layers=2,
                      d_ff=3072, pad_id=0).eval()
src_ids = torch.tensor([[2, 47, 193]])                 # "The cat sat", step 1
bos = torch.tensor([[BOS]])                            # step 5: the decoder starts with [BOS]
steps = trace(d768, src_ids, bos)
by_name = {r["name"]: r for r in steps}

SHOW = ["src_embed.tok", "src_embed", "encoder.layers.0.norm1", "encoder.layers.0.self_attn", "encoder.layers.0.ff",
        "encoder.layers.0", "encoder.layers.1", "encoder", "tgt_embed", "decoder.layers.0.self_attn",
        "decoder.layers.0.cross_attn", "decoder.layers.0.ff", "decoder.layers.0", "decoder", "generator"]
show_table(["module (in execution order)", "inputs", "output", "attention weights"],
           [[r["name"], ", ".join(str(s) for _, s in r["inputs"] if len(s) > 1 and _ != "mask"),
             r["out"], r.get("weights", "")] for r in steps if r["name"] in SHOW])

# %% [markdown]
# Each of 004's steps, checked against the recorded shapes. (Step 2 reads "Shape: 1 × 31 × 3 × 768" and step 7
# "1 × 1 × 7681 × 1 × vocab_sz" in the text: extraction dropped the arrows. They are $1\times3 \to 1\times3\times768$
# and $1\times1\times768 \to 1\times1\times|V|$, as the trace shows.)

# %% tags=["nbval-check-output"]
enc_layers = [r for r in steps if r["name"].startswith("encoder.layers.") and r["name"].count(".") == 2]
dec_layers = [r for r in steps if r["name"].startswith("decoder.layers.") and r["name"].count(".") == 2]
check_equal("step 1, token ids", by_name["src_embed.tok"]["inputs"][0][1], (1, 3))
check_equal("step 2, embedding lookup", by_name["src_embed.tok"]["out"], (1, 3, 768))
check_equal("step 3, + positions (unchanged)", by_name["src_embed.pos"]["out"], (1, 3, 768))
check_equal("step 4, every encoder layer in -> out",
            {(r["inputs"][0][1], r["out"]) for r in enc_layers}, {((1, 3, 768), (1, 3, 768))})
check_equal("step 4, encoder self-attention weights: 12 heads of 3×3",
            by_name["encoder.layers.0.self_attn"]["weights"], (1, 12, 3, 3))
check_equal("step 4, encoder output (the memory)", by_name["encoder"]["out"], (1, 3, 768))
check_equal("step 5, [BOS] -> embedding", (by_name["tgt_embed"]["inputs"][0][1], by_name["tgt_embed"]["out"]),
            ((1, 1), (1, 1, 768)))
check_equal("step 6.1, masked self-attention: 1×1 per head", by_name["decoder.layers.0.self_attn"]["weights"],
            (1, 12, 1, 1))
check_equal("step 6.2, cross-attention: Q from the decoder, K/V from the encoder",
            [s for _, s in by_name["decoder.layers.0.cross_attn"]["inputs"][:3]],
            [(1, 1, 768), (1, 3, 768), (1, 3, 768)])
check_equal("step 6.2, cross-attention weights (B, h, T_dec, T_enc)", by_name["decoder.layers.0.cross_attn"]["weights"],
            (1, 12, 1, 3))
check_equal("step 6.3, every decoder layer in -> out",
            {(r["inputs"][0][1], r["out"]) for r in dec_layers}, {((1, 1, 768), (1, 1, 768))})
check_equal("step 7, LM head (001 §19.8.1: logits (batch, tgt_len, tgt_vocab))", by_name["generator"]["out"],
            (1, 1, 1000))
check_equal("heads × head_dim = embed_dim", d768.encoder.layers[0].self_attn.n_heads
            * d768.encoder.layers[0].self_attn.d_head, 768)

# %% [markdown]
# 004's step 6.2 gives the cross-attention weights as "1 × 1 × 3"; that is one head's matrix. The module holds all
# 12 at once: $(B, h, T_{dec}, T_{enc}) = (1, 12, 1, 3)$, exactly as step 4's "12 heads, each with its own 3 × 3
# weights" for the encoder.
#
# **Step 8, the loop.** Append the chosen token and decode again. The encoder is *not* run again: its output is
# computed once and every decoding step reads it (004: "the encoder runs once"; 001 §19.7.3: the cross-attention
# keys and values "need to be computed only once"). Three checks: the decoder now has 2 queries per cross-attention
# map; decoding from the cached memory gives exactly what a full forward pass gives; and the logits for position 0
# did not change when a second target token arrived (the causal mask at work during decoding).

# %% tags=["nbval-check-output"]
with torch.no_grad():
    memory = d768.encode(src_ids)                                  # once
    step1 = d768.decode(bos, memory)                               # (1, 1, 1000)
    die = step1[:, -1].argmax(-1, keepdim=True)                    # greedy choice: "Die"
    tgt2 = torch.cat([bos, die], dim=1)                            # [BOS, "Die"]
    step2 = d768.decode(tgt2, memory)
    full2 = d768(src_ids, tgt2)
    k_once, v_once = d768.decoder.layers[0].cross_attn.kv_heads(memory)     # what a cross-attention cache holds
steps2 = {r["name"]: r for r in trace(d768, src_ids, tgt2)}
check_equal("step 8, decoder input", tuple(tgt2.shape), (1, 2))
check_equal("step 8, logits", tuple(step2.shape), (1, 2, 1000))
check_equal("step 8, cross-attention weights", steps2["decoder.layers.0.cross_attn"]["weights"], (1, 12, 2, 3))
check_close("decode(tgt, cached memory) = forward(src, tgt): max |difference|", (step2 - full2).abs().max(), 0.0,
            atol=1e-5)
check_close("logits at position 0 unchanged by the new token", (step2[:, 0] - step1[:, 0]).abs().max(), 0.0,
            atol=1e-5)
check_equal("cross-attention K and V per layer, from the memory alone: (B, h, T_enc, d_head)",
            (tuple(k_once.shape), tuple(v_once.shape)), ((1, 12, 3, 64), (1, 12, 3, 64)))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · Cross-attention maps: target length × source length
#
# Every cross-attention map has one row per target position and one column per source position (001 §19.7.3:
# shape `(tgt_len, src_len)`). In a padded batch the columns of padded source tokens must receive **exactly zero**
# weight, or the translation of a short sentence would depend on how long its batch-mates are. Here: a batch of
# two, source lengths 7 and 4 (padded to 7), target lengths 5 and 3 (padded to 5), the small encoder–decoder of
# section 1, all heads averaged. (The model is untrained, so the maps show no alignment yet; notebook 09 trains
# one on sequence reversal and shows the anti-diagonal it learns.)

# %%
model = models["encoder-decoder"]
sk = padding_mask([7, 4], 7)
tk = padding_mask([5, 3], 5)
gb = torch.Generator().manual_seed(5)
xs = torch.randint(5, 25, (2, 7), generator=gb).masked_fill(~sk, PAD)
ys = torch.randint(5, 25, (2, 5), generator=gb).masked_fill(~tk, PAD)
with torch.no_grad(), record_attention(model):
    model(xs, ys, sk, tk)
    cross_w = torch.stack([layer.cross_attn.last_weights for layer in model.decoder.layers])   # (L, B, h, T, S)

fig, axes = plt.subplots(2, LAYERS, figsize=(4.2 * LAYERS, 6.6))
for b in range(2):
    for layer in range(LAYERS):
        ax = axes[b, layer]
        im = ax.imshow(cross_w[layer, b].mean(0).numpy(), cmap="viridis", vmin=0)
        ax.set_xticks(range(7), [f"x{j}" if sk[b, j] else "pad" for j in range(7)], fontsize=8)
        ax.set_yticks(range(5), [f"y{i}" if tk[b, i] else "pad" for i in range(5)], fontsize=8)
        ax.set_title(f"sequence {b} (S = {int(sk[b].sum())}, T = {int(tk[b].sum())}), layer {layer}", fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.035, pad=0.03)
    axes[b, 0].set_ylabel("target position (query)")
for ax in axes[1]:
    ax.set_xlabel("source position (key)")
fig.suptitle("Cross-attention weights (mean of heads): rows = target, columns = source", y=1.0)
fig.tight_layout()
plt.show()

# %% tags=["nbval-check-output"]
check_equal("cross-attention weights (layers, B, h, T_tgt, S_src)", tuple(cross_w.shape), (LAYERS, 2, HEADS, 5, 7))
check_true("padded source columns get exactly zero weight (every layer, head, query)",
           torch.equal(cross_w[:, 1, :, :, 4:], torch.zeros(LAYERS, HEADS, 5, 3)))
check_close("each query's weights over the real source tokens sum to 1", cross_w.sum(-1),
            torch.ones(LAYERS, 2, HEADS, 5), atol=1e-6)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5 · Padding through the whole stack
#
# Zero weight on padded keys in one sublayer is not the end of the story: the outputs at real positions must not
# change *at all* when the padding changes, through every layer, norm and residual. The test: take a batch, then
# make the padding longer and fill it with random junk tokens instead of PAD, and compare the outputs at the real
# positions. For the encoder–decoder both the source and the target padding change. We run it `TRIALS` times on
# random batches, with the masks and without them (004 §13's code passes no padding masks anywhere).

# %%
def junk_padded(ids, keep, extra, gen):
    """The same real tokens, ``extra`` more padded positions, and junk (not PAD) in all padded positions."""
    b, t = ids.shape
    new_keep = torch.cat([keep, torch.zeros(b, extra, dtype=torch.bool)], dim=1)
    junk = torch.randint(5, 25, (b, t + extra), generator=gen)
    new_ids = torch.where(new_keep, torch.cat([ids, junk[:, t:]], dim=1), junk)
    return new_ids, new_keep


def padding_drift(variant, use_masks, trials, seed=0):
    """Largest change at real positions when padding content and length change, over ``trials`` batches,
    relative to the largest output there (float32 rounding alone gives about 1e-7)."""
    gen = torch.Generator().manual_seed(seed)
    m = models[variant]
    worst = 0.0
    for _ in range(trials):
        lengths = torch.randint(2, 8, (3,), generator=gen).tolist()
        keep = padding_mask(lengths, 8)
        ids = torch.randint(5, 25, (3, 8), generator=gen).masked_fill(~keep, PAD)
        ids2, keep2 = junk_padded(ids, keep, int(torch.randint(1, 5, (1,), generator=gen)), gen)
        mk = (lambda k: k) if use_masks else (lambda k: None)
        with torch.no_grad():
            if variant == "encoder-decoder":
                t_len = torch.randint(2, 6, (3,), generator=gen).tolist()
                tkeep = padding_mask(t_len, 6)
                tids = torch.randint(5, 25, (3, 6), generator=gen).masked_fill(~tkeep, PAD)
                tids2, tkeep2 = junk_padded(tids, tkeep, 2, gen)
                a = m(ids, tids, mk(keep), mk(tkeep))[tkeep]
                b = m(ids2, tids2, mk(keep2), mk(tkeep2))[tkeep2]
            else:
                a, b = m(ids, mk(keep))[keep], m(ids2, mk(keep2))[keep2]
        worst = max(worst, float((a - b).abs().max() / a.abs().max()))
    return worst


drift = {(v, masked): padding_drift(v, masked, TRIALS) for v in models for masked in (True, False)}
fig, ax = plt.subplots(figsize=(7, 3.4))
xs_ = range(len(models))
ax.bar([x - 0.2 for x in xs_], [max(drift[(v, True)], 1e-9) for v in models], 0.4, label="with padding masks")
ax.bar([x + 0.2 for x in xs_], [drift[(v, False)] for v in models], 0.4, label="without (004 §13's code)")
ax.set_yscale("log")
ax.set_xticks(list(xs_), list(models))
ax.set_ylabel("max |change| / max |output|\nat real positions")
ax.axhline(1e-5, color="k", lw=0.8, ls="--")
ax.text(2.45, 1.3e-5, "tolerance 1e-5", fontsize=8, ha="right")
ax.set_ylim(1e-9, 10)
ax.set_title(f"Longer, junk-filled padding: how much do real outputs move? ({TRIALS} random batches)")
ax.legend(fontsize=8)
plt.show()

# %% tags=["nbval-check-output"]
for v in models:
    check_close(f"{v}: relative change at real positions, with masks", drift[(v, True)], 0.0, atol=1e-5)
check_true("encoder-only without masks: the junk padding leaks into real positions", drift[("encoder-only", False)] > 1e-3)
check_true("encoder-decoder without masks: the junk padding leaks into real positions",
           drift[("encoder-decoder", False)] > 1e-3)

# %% [markdown]
# The decoder-only bar is the interesting one: *without* any padding mask it is still unaffected, because with
# right padding every padded position lies in the future of every real position, and the causal mask already
# hides it. That is why GPT-style training can get away with right padding and no key-padding mask. It does not
# hold for **left** padding (used to batch prompts for generation): the pads are then in the past of every real
# token, and worse, the real tokens' positions shift, so even with a padding mask the outputs change unless the
# position indices are shifted too.

# %% tags=["nbval-check-output"]
lm = models["decoder-only"]
real = torch.randint(5, 25, (1, 5), generator=torch.Generator().manual_seed(6))
left = torch.cat([torch.full((1, 2), PAD), real], dim=1)
left_keep = torch.cat([torch.zeros(1, 2, dtype=torch.bool), torch.ones(1, 5, dtype=torch.bool)], dim=1)
with torch.no_grad():
    moved = (lm(real) - lm(left, left_keep)[:, 2:]).abs().max()
check_close("decoder-only, right padding, no mask at all", drift[("decoder-only", False)], 0.0, atol=1e-5)
check_true("decoder-only, LEFT padding with the padding mask: real outputs still change (positions shifted)",
           moved > 1e-3)

# %% [markdown]
# And the causal check of 000 §8.6.2 in its plainest form, on the decoder-only model and on the decoder of the
# encoder–decoder: change the token at position $j$; every logit before $j$ stays the same (to float tolerance),
# and the logits at $j$ do change.

# %% tags=["nbval-check-output"]
gen = torch.Generator().manual_seed(7)
ok_before, ok_at = True, True
for _ in range(TRIALS):
    seq = torch.randint(5, 25, (2, 8), generator=gen)
    srcq = torch.randint(5, 25, (2, 6), generator=gen)
    for j in range(1, 8):
        changed = new_token(seq, j)
        with torch.no_grad():
            for f in (lambda s: models["decoder-only"](s), lambda s: models["encoder-decoder"](srcq, s)):
                a, b = f(seq), f(changed)
                ok_before &= torch.allclose(a[:, :j], b[:, :j], atol=1e-5)
                ok_at &= not torch.allclose(a[:, j], b[:, j], atol=1e-4)
check_true("changing token j leaves every earlier logit unchanged (both decoders, all j)", ok_before)
check_true("changing token j changes the logits at position j", ok_at)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6 · Equal to PyTorch's `nn.Transformer` building blocks
#
# PyTorch ships the same designs: `nn.TransformerEncoder` (a stack of `nn.TransformerEncoderLayer`),
# `nn.TransformerDecoder` (of `nn.TransformerDecoderLayer`, with cross-attention) and `nn.Transformer` (both,
# 003's first example). Notebook 06 proved each *layer* equal to PyTorch's; the stacks add a final LayerNorm in the
# Pre-LN design (001 §19.6.4: "necessary with pre-norm"). `encoder_to_torch` builds the PyTorch stack with our
# weights:

# %%
show_source(encoder_to_torch)

# %% [markdown]
# Two traps when comparing. PyTorch's masks have the **opposite polarity** (bool True = *blocked*), so our keep
# masks go in as `~keep` (`torch_masks` does this). And the LayerNorms of a fresh model have $\gamma = 1$,
# $\beta = 0$, which would hide a norm that was not copied; so every weight is perturbed first. Both norm
# placements, padding and causal masks, and weights copied both ways:

# %%
def perturb_(module, seed):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=gen))
    return module


xb = torch.randn(3, 7, D, generator=torch.Generator().manual_seed(8))        # already-embedded inputs
yb = torch.randn(3, 5, D, generator=torch.Generator().manual_seed(9))
skb, tkb = padding_mask([7, 4, 2], 7), padding_mask([5, 3, 1], 5)
kw = torch_masks(skb, tkb)
errors = {}
with torch.no_grad():
    for norm_first in (True, False):
        tag = "Pre-LN" if norm_first else "Post-LN"
        torch.manual_seed(0)
        enc = perturb_(Encoder(D, HEADS, FF, 2, 0.0, norm_first), 1).eval()
        gpt = perturb_(Encoder(D, HEADS, FF, 2, 0.0, norm_first, causal=True), 2).eval()
        dec = perturb_(Decoder(D, HEADS, FF, 2, 0.0, norm_first), 3).eval()
        t_enc, t_gpt, t_dec = encoder_to_torch(enc).eval(), encoder_to_torch(gpt).eval(), decoder_to_torch(dec).eval()
        errors[f"{tag} encoder vs nn.TransformerEncoder (padding)"] = (
            enc(xb, skb) - t_enc(xb, src_key_padding_mask=kw["src_key_padding_mask"])).abs().max()
        errors[f"{tag} decoder-only stack vs nn.TransformerEncoder (causal + padding)"] = (
            gpt(xb, skb) - t_gpt(xb, mask=~causal_mask(7), src_key_padding_mask=~skb, is_causal=True)).abs().max()
        memory = enc(xb, skb)
        errors[f"{tag} decoder vs nn.TransformerDecoder (causal + padding + source padding)"] = (
            dec(yb, memory, tkb, skb) - t_dec(yb, memory, tgt_mask=kw["tgt_mask"], tgt_is_causal=True,
                                              tgt_key_padding_mask=kw["tgt_key_padding_mask"],
                                              memory_key_padding_mask=kw["memory_key_padding_mask"])).abs().max()
        # the other direction: PyTorch's random weights into fresh package stacks
        t_enc2 = perturb_(encoder_to_torch(Encoder(D, HEADS, FF, 2, 0.0, norm_first)), 4).eval()
        t_dec2 = perturb_(decoder_to_torch(Decoder(D, HEADS, FF, 2, 0.0, norm_first)), 5).eval()
        enc2 = encoder_from_torch(Encoder(D, HEADS, FF, 2, 0.0, norm_first), t_enc2).eval()
        dec2 = decoder_from_torch(Decoder(D, HEADS, FF, 2, 0.0, norm_first), t_dec2).eval()
        m_t = t_enc2(xb, src_key_padding_mask=~skb)
        errors[f"{tag} copied from torch: encoder + decoder"] = max(
            (enc2(xb, skb) - m_t).abs().max(),
            (dec2(yb, m_t, tkb, skb) - t_dec2(yb, m_t, tgt_mask=kw["tgt_mask"], tgt_is_causal=True,
                                              tgt_key_padding_mask=~tkb, memory_key_padding_mask=~skb)).abs().max())
    whole = perturb_(EncoderDecoder(V, V, D, HEADS, 2, 3, FF, pad_id=PAD, norm_first=True), 6).eval()
    t_whole = to_nn_transformer(whole).eval()
    xw, yw = whole.src_embed(xs), whole.tgt_embed(ys)
    errors["Pre-LN encoder-decoder stacks vs nn.Transformer"] = (
        whole.decoder(yw, whole.encoder(xw, sk), tk, sk) - t_whole(xw, yw, **torch_masks(sk, tk))).abs().max()

# %% tags=["nbval-check-output"]
for name, err in errors.items():
    check_close(name + ": max |difference|", err, 0.0, atol=2e-5)

# %% [markdown]
# Where the designs do *not* match, the package says so instead of returning a different function: `nn.Transformer`
# always puts a LayerNorm after each stack, even with `norm_first=False`, while a Post-LN stack (the original
# paper's) has none. 003's shapes for its `nn.Transformer` example (`d_model=512`, 6 + 6 layers) hold. And the
# norm placement is part of the function: 004 §12 draws its decoder layer Pre-LN (LayerNorm, then the sublayer,
# then the residual) but its code is Post-LN (`x = self.layer_norm_1(x + self.attn(x, x, x))`); with the same
# weights the two give different outputs.

# %% tags=["nbval-check-output"]
check_raises(ValueError, "final LayerNorm", to_nn_transformer, EncoderDecoder(V, V, D, HEADS, 1, 1, FF, norm_first=False))
torch.manual_seed(0)
nn_tf = nn.Transformer(d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                       dropout=0.1, batch_first=True).eval()
with torch.no_grad():
    out_003 = nn_tf(torch.randn(2, 10, 512), torch.randn(2, 7, 512))
check_equal("003: transformer(src (2, 10, 512), tgt (2, 7, 512)).shape", tuple(out_003.shape), (2, 7, 512))
del nn_tf
pre = perturb_(DecoderLayer(D, HEADS, FF, 0.0, norm_first=True), 11).eval()
post = DecoderLayer(D, HEADS, FF, 0.0, norm_first=False).eval()
post.load_state_dict(pre.state_dict())                             # the very same weights
with torch.no_grad():
    placement_gap = (pre(yb, xb) - post(yb, xb)).abs().max()
check_true("004 §12: Pre-LN (the diagram) and Post-LN (the code) with equal weights differ", placement_gap > 1e-2)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7 · The comparison tables, regenerated from code
#
# The texts summarise the variants in tables: 000's Table 8.2, 001 §19.11.3, 004 §13, and 003's list of the three
# families. Their **mask** and **cross-attention** columns we already recorded from the running models (section
# 1). The **objective** column we take from what each model's training step actually feeds its loss on a toy
# batch:
#
# * encoder-only: BERT's masked LM (`mlm_batch`: hide ~15 % of the real tokens, 80 % of them as `[MASK]`; the loss
#   is taken only there);
# * decoder-only: next-token prediction (`lm_batch`: inputs `ids[:, :-1]`, targets `ids[:, 1:]`);
# * encoder–decoder: T5's span corruption (`span_corruption`: drop spans from the source, mark each with a
#   sentinel; the decoder predicts the dropped spans, teacher-forced).
#
# `describe_objective` then *measures* what the loss sees: the fraction of positions with a loss term, whether each
# target is the next input token, whether the inputs at the loss positions are `[MASK]`, whether a separate source
# conditions the prediction, whether the targets are exactly the text missing from the source.

# %%
show_source(lm_batch)


# %%
def training_loss(variant, model, ids, keep, gen):
    """The loss of one training step of the variant's own objective on a toy batch, and what that loss saw."""
    if variant == "encoder-only":
        inputs, targets = mlm_batch(ids, keep, mask_id=MASK, vocab=V, generator=gen, protect=1)
        loss = lm_loss(model(inputs, keep), targets)
        facts = describe_objective(inputs, targets, mask_id=MASK)
    elif variant == "decoder-only":
        inputs, targets, in_keep = lm_batch(ids, keep)
        loss = lm_loss(model(inputs, in_keep), targets)
        facts = describe_objective(inputs, targets, mask_id=MASK)
    else:
        body, body_keep = ids[:, 1:], keep[:, 1:]                 # no [CLS] for T5
        src_c, src_c_keep, tgt, tgt_keep = span_corruption(body, body_keep, SENTINEL, PAD, EOS, generator=gen)
        tgt = torch.cat([torch.full((tgt.shape[0], 1), BOS), tgt], dim=1)
        tgt_keep = torch.cat([torch.ones(tgt.shape[0], 1, dtype=torch.bool), tgt_keep], dim=1)
        tgt_in, tgt_out, tgt_in_keep = lm_batch(tgt, tgt_keep)
        loss = lm_loss(model(src_c, tgt_in, src_c_keep, tgt_in_keep), tgt_out)
        facts = describe_objective(tgt_in, tgt_out, source=src_c, original=body, mask_id=MASK,
                                   special=[PAD, BOS, EOS, CLS, *range(SENTINEL, V)])
    return loss, facts


gen = torch.Generator().manual_seed(10)
lengths = [24, 20, 17, 24, 12, 22, 24, 19]
keep_b = padding_mask(lengths, 24)
ids_b = torch.randint(5, 25, (8, 24), generator=gen).masked_fill(~keep_b, PAD)
ids_b[:, 0] = CLS                                                  # BERT's [CLS] first
facts = {}
for v, m in models.items():
    loss, facts[v] = training_loss(v, m, ids_b, keep_b, gen)
    loss.backward()                                                # a real training step would now call opt.step()
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
unused = {"encoder-only": len(list(models["encoder-only"].classifier.parameters())), "decoder-only": 0,
          "encoder-decoder": 0}                                    # the [CLS] classifier is not part of the MLM loss
check_equal("parameters without a gradient after backward (only the unused classifier)",
            {v: len(list(m.parameters())) - facts[v]["params with a gradient"] for v, m in models.items()}, unused)

# %% [markdown]
# 001 §19.11.3 writes the causal-LM objective as $\mathcal{L} = -\sum_{t} \log P(x_t \mid x_1, \dots, x_{t-1})$.
# Teacher forcing computes all $T - 1$ terms in **one** forward pass. That this equals the factorisation is exactly
# the causal property: the one-pass loss equals the sum of $T - 1$ separate runs, each on a prefix $x_{1..t-1}$
# predicting $x_t$.

# %% tags=["nbval-check-output"]
lm = models["decoder-only"]
seq = ids_b[:1, 1:13]                                               # 12 real tokens
with torch.no_grad():
    x_in, y_out, _ = lm_batch(seq)
    one_pass = lm_loss(lm(x_in), y_out) * y_out.numel()            # mean -> sum over the 11 terms
    per_prefix = sum(-torch.log_softmax(lm(seq[:, :t])[0, -1], -1)[seq[0, t]] for t in range(1, seq.shape[1]))
check_close("sum of -log P(x_t | x_<t): one teacher-forced pass minus 11 prefix runs", one_pass - per_prefix, 0.0,
            atol=1e-3)

# %% [markdown]
# Now the tables themselves. Each text's claims about masks and cross-attention are written down below as data (the
# transcription is the only hand-typed part) and compared with what the models did. The columns the code cannot
# compute, example models and typical tasks, are carried over from the texts, which agree with each other.

# %%
recorded = {}
for v, recs in records.items():
    causal_stacks = sorted({r["name"].split(".")[0] for r in recs if r["kind"] == "self" and "causal" in r["label"]})
    bidir_stacks = sorted({r["name"].split(".")[0] for r in recs if r["kind"] == "self" and "causal" not in r["label"]})
    recorded[v] = {"causal self-attention in": causal_stacks, "bidirectional self-attention in": bidir_stacks,
                   "cross-attention": any(r["kind"] == "cross" for r in recs)}

texts = {   # (causal mask?, cross-attention?) as each text states them
    "000 Table 8.2": {"encoder-only": ("no", False), "decoder-only": ("yes", False),
                      "encoder-decoder": ("decoder only", True)},
    "004 §13 table": {"encoder-only": ("no", False), "decoder-only": ("yes", False),
                      "encoder-decoder": ("decoder only", True)},
    "003 three families": {"encoder-only": ("no", False), "decoder-only": ("yes", False),
                           "encoder-decoder": ("decoder only", True)},
}
stack_of = {"encoder-only": "encoder", "decoder-only": "blocks", "encoder-decoder": "decoder"}


def causal_from_code(v):
    stacks = recorded[v]["causal self-attention in"]
    if not stacks:
        return "no"
    return "decoder only" if recorded[v]["bidirectional self-attention in"] else "yes"


EXAMPLES = {"encoder-only": "BERT, RoBERTa, DeBERTa", "decoder-only": "GPT-2/3, LLaMA, Mistral",
            "encoder-decoder": "original Transformer, T5, BART"}
TASKS = {"encoder-only": "classification, NER, extractive QA", "decoder-only": "generation, general purpose",
         "encoder-decoder": "translation, summarisation"}
show_table(["variant", "causal mask (code)", "cross-attention (code)", "objective (code)", "examples (texts)",
            "typical tasks (texts)"],
           [[v, causal_from_code(v), "yes" if recorded[v]["cross-attention"] else "no",
             facts[v]["name"].split(":")[0], EXAMPLES[v], TASKS[v]] for v in models])

# %% tags=["nbval-check-output"]
for text, claims in texts.items():
    check_equal(f"{text} agrees with the recorded masks and sublayers",
                {v: (causal_from_code(v), recorded[v]["cross-attention"]) for v in models}, claims)
check_equal("000 Table 8.2 / 001 §19.11.3 pre-training column",
            [facts[v]["name"].split(":")[0] for v in models], ["masked LM", "causal LM", "span corruption (T5)"])

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8 · Parameters of the three variants at the same width
#
# With the original sizes ($d_{\text{model}} = 512$, $h = 8$, $d_{ff} = 2048$, 6 layers per stack, a 37 000-token
# vocabulary, 001 §19.8.4), built on the meta device so no memory is used. Weight tying is on for the two LM heads
# (BERT and GPT-2 tie theirs) and for the encoder–decoder's output layer; it shares the $|V| \times d$ embedding
# matrix with the output projection (001 §19.8.3). Notebook 07 recounts 001 §19.8.4's whole table (≈ 63M).

# %%
VOCAB, DM, NH, DFF, NL = 37_000, 512, 8, 2048, 6
with torch.device("meta"):
    big = {
        "encoder-only": EncoderOnly(VOCAB, DM, NH, NL, DFF, max_len=512),
        "decoder-only": DecoderOnly(VOCAB, DM, NH, NL, DFF, max_len=512),
        "encoder-decoder": EncoderDecoder(VOCAB, VOCAB, DM, NH, NL, NL, DFF, max_len=512, tie_weights=True,
                                          share_embeddings=True),
        "encoder-decoder, untied": EncoderDecoder(VOCAB, VOCAB, DM, NH, NL, NL, DFF, max_len=512,
                                                  share_embeddings=True),
    }
counts = {k: parameter_breakdown(m) for k, m in big.items()}
show_table(["model", *PARAM_GROUPS, "total"], [[k, *[f"{c[g]:,}" for g in PARAM_GROUPS], f"{c['total']:,}"]
                                                for k, c in counts.items()])

fig, ax = plt.subplots(figsize=(8, 3.6))
left = [0] * len(counts)
for group in PARAM_GROUPS:
    vals = [c[group] / 1e6 for c in counts.values()]
    ax.barh(list(counts), vals, left=left, label=group)
    left = [a + b for a, b in zip(left, vals)]
ax.invert_yaxis()
ax.set_xlabel("parameters (millions)")
ax.set_title("Same width, three wirings: where the parameters are (d = 512, 6 layers per stack, |V| = 37 000)")
ax.legend(fontsize=8, ncol=len(PARAM_GROUPS), loc="upper center", bbox_to_anchor=(0.45, -0.2))
fig.tight_layout()
plt.show()

# %% [markdown]
# What the counts say, each checked below: the causal mask costs nothing (encoder-only = decoder-only, to the
# parameter); an encoder–decoder layer costs one cross-attention ($4d^2 + 4d$) and one LayerNorm ($2d$) more than an
# encoder layer; tying saves exactly $|V| \cdot d$ (the output bias stays); and with the paper's Post-LN layout
# (no final norms) and three-way sharing the encoder–decoder is notebook 07's 63,082,496 plus our output bias.

# %% tags=["nbval-check-output"]
c = counts
check_equal("encoder-only - decoder-only (the causal mask is free)", c["encoder-only"]["total"] - c["decoder-only"]["total"], 0)
check_equal("cross-attention in the encoder-decoder = 6 · (4d² + 4d)", c["encoder-decoder"]["cross-attention"],
            NL * (4 * DM * DM + 4 * DM))
check_equal("untied - tied output layer = |V|·d", c["encoder-decoder, untied"]["total"] - c["encoder-decoder"]["total"],
            VOCAB * DM)
with torch.device("meta"):
    paper = EncoderDecoder(VOCAB, VOCAB, DM, NH, NL, NL, DFF, max_len=512, norm_first=False, tie_weights=True,
                           share_embeddings=True)
check_equal("Post-LN, three-way shared: notebook 07's count + the |V| output bias",
            parameter_breakdown(paper)["total"], 63_082_496 + VOCAB)
check_equal("encoder-decoder - encoder-only = the 6-layer decoder stack + its final norm + the output bias",
            c["encoder-decoder"]["total"] - c["encoder-only"]["total"],
            sum(p.numel() for p in big["encoder-decoder"].decoder.parameters()) + VOCAB)

# %% [markdown]
# **004 §13.2 on the KV cache of a decoder-only model:** "$2 \cdot L \cdot H \cdot d_k \cdot T$ values — for
# LLaMA-3 70B at 4K context in fp16, that is roughly 5 GB". LLaMA-3 70B has $L = 80$ layers, 64 query heads of
# $d_k = 128$ and 8 key/value heads. With $H = 64$ the formula gives $5.37 \times 10^9$ *values*, i.e. **10.7 GB**
# in fp16 (2 bytes each); "5 GB" is the value count read as bytes. With the model's real 8 K/V heads (GQA, which the
# next sentence of 004 introduces) the cache is **1.34 GB**, and the 64/8 = 8× saving the text states is right.

# %% tags=["nbval-check-output"]
values_64 = 2 * 80 * 64 * 128 * 4096
check_equal("2·L·H·d_k·T with H = 64 (values)", values_64, 5_368_709_120)
check_equal("... in fp16 (bytes), kv_cache_bytes", kv_cache_bytes(80, 64, 128, 4096, 1, 2), 10_737_418_240)
check_equal("LLaMA-3 70B's real cache: 8 K/V heads, fp16 (bytes)", kv_cache_bytes(80, 8, 128, 4096, 1, 2), 1_342_177_280)
check_equal("GQA saving, 64 / 8", kv_cache_bytes(80, 64, 128, 4096) // kv_cache_bytes(80, 8, 128, 4096), 8)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9 · Widget: the masks of every sublayer, live
#
# Pick a variant, the number of real tokens and of padding positions in the input (the source, for the
# encoder–decoder) and in the target, a layer and a head. Top row: the mask each attention sublayer of that layer
# was called with, recorded by the same hooks as in section 1. Bottom row: its attention weights. Things to try:
# switch encoder-only ↔ decoder-only (same block, one triangle); add target padding and watch the decoder's
# self-attention mask lose its last columns; shorten the source and see the cross-attention columns go to zero.
# The title reports the largest weight any padded key receives.

# %%
VariantWidget().show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10 · Exercises
#
# ### Exercise A: which sublayers does each variant need, and which masks?
#
# Write `variant_masks(variant, src_keep, tgt_keep)`. `variant` is `"encoder-only"`, `"decoder-only"` or
# `"encoder-decoder"`; `src_keep` is the `(B, S)` padding mask of the input (encoder-only) or source, `tgt_keep`
# the `(B, T)` mask of the sequence a decoder-only model reads, or of the encoder–decoder's target. Return a dict
# with keys `"encoder_self"`, `"decoder_self"`, `"cross"`: each the bool mask `(B, 1, T_q, T_k)` (True = may
# attend) that sublayer uses, or `None` if the variant has no such sublayer. (Here "decoder_self" means the causal
# self-attention, whichever block class implements it.)

# %%
from transformer_nb.exercises.models import lm_shift_ex, mean_pool_ex, variant_masks_ex


def variant_masks(variant, src_keep, tgt_keep):
    raise NotImplementedError  # your code here


result = variant_masks_ex.check(variant_masks)

# %% [markdown]
# A classic mistake the checker recognises: making the cross-attention causal too (a lower triangle over the
# target × source grid), as if the source were being generated.

# %% tags=["nbval-check-output"]
def causal_cross(variant, src_keep, tgt_keep):
    s, t = src_keep.shape[1], tgt_keep.shape[1]
    pad = lambda keep, tq: keep[:, None, None, :].expand(-1, 1, tq, -1)
    tri = lambda tq, tk: torch.ones(tq, tk, dtype=torch.bool).tril()
    out = {"encoder_self": None, "decoder_self": None, "cross": None}
    if variant != "decoder-only":
        out["encoder_self"] = pad(src_keep, s)
    if variant != "encoder-only":
        out["decoder_self"] = pad(tgt_keep, t) & tri(t, t)
    if variant == "encoder-decoder":
        out["cross"] = pad(src_keep, t) & tri(t, s)                # wrong: the source is not generated
    return out


res = variant_masks_ex.check(causal_cross)
check_true("the checker rejects a causal cross-attention mask with a specific hint",
           not res.passed and "cross-attention mask is causal" in res.message)

# %% [markdown]
# ### Exercise B: the next-token shift
#
# Write `lm_shift(ids, keep)` for a right-padded batch `ids: (B, T)` with `keep: (B, T)`: return
# `(inputs, targets)`, both `(B, T-1)`, such that the target at position $t$ is the token the model must predict
# after reading tokens $0..t$. Targets at padded positions must be `-100` (ignored by `F.cross_entropy`).

# %%
def lm_shift(ids, keep):
    raise NotImplementedError  # your code here


result = lm_shift_ex.check(lm_shift)

# %% [markdown]
# The checker catches, among others, the "no shift" bug, which trains a model to copy its input (the causal mask
# lets position $t$ see token $t$, so it is an easy and useless task):

# %% tags=["nbval-check-output"]
res = lm_shift_ex.check(lambda ids, keep: (ids[:, :-1], ids[:, :-1].masked_fill(~keep[:, :-1], IGNORE)))
check_true("the checker names the copy bug", not res.passed and "only has to copy" in res.message)

# %% [markdown]
# ### Exercise C: a sentence vector from an encoder-only model
#
# 004 §13.1 notes that mean pooling over the token representations often works as well as the `[CLS]` vector.
# Write `mean_pool(hidden, keep)`: `hidden: (B, T, d)` from an encoder, `keep: (B, T)`; return `(B, d)`, the mean
# of each sequence's hidden states over its **real** tokens (so that it, too, does not depend on the padding).

# %%
def mean_pool(hidden, keep):
    raise NotImplementedError  # your code here


result = mean_pool_ex.check(mean_pool)

# %% [markdown]
# The most common slip: averaging over every position, padding included.

# %% tags=["nbval-check-output"]
res = mean_pool_ex.check(lambda hidden, keep: hidden.mean(1))
check_true("the checker names the padded-mean bug", not res.passed and "padded positions too" in res.message)

# %% [markdown]
# Solutions are revealed only on purpose: `variant_masks_ex.show_solution()`, `lm_shift_ex.show_solution()`,
# `mean_pool_ex.show_solution()`.
#
# ## Bad input gets a clear message
#
# Each of these is a unit test in `tests/test_models_bad_input.py`.

# %% tags=["nbval-check-output"]
small = EncoderDecoder(V, V, D, HEADS, 1, 1, FF, max_len=16).eval()
s3 = torch.tensor([[5, 6, 7, 0]])
check_raises(ValueError, "[0, 30)", small.encode, torch.tensor([[5, 31, 6]]))
check_raises(ValueError, "(B, T)", small.encode, torch.tensor([5, 6, 7]))
check_raises(ValueError, "d_model=32", small.decode, torch.tensor([[1, 5]]), torch.randn(1, 4, 16))
check_raises(ValueError, "src_keep", small.encode, s3, torch.ones(1, 3, dtype=torch.bool))
check_raises(TypeError, "bool mask", small.encode, s3, torch.tensor([[1, 1, 1, 0]]))
_ = check_raises(ValueError, "max_len=16", small.encode, torch.ones(1, 17, dtype=torch.long))

# %% [markdown]
# ## Summary: where the texts are wrong or imprecise
#
# | text | claim | correct | shown in |
# |---|---|---|---|
# | 003, "PyTorch and TensorFlow" | decoder-only (GPT-style): `nn.TransformerDecoder(...)(x, memory=x, tgt_mask=causal)` | leaks the future: the cross-attention reads the unmasked `x`, so every output depends on every input (21 of 21 future pairs). Use `nn.TransformerEncoder` with the causal mask | section 2 |
# | 000 §8.6.4 | at inference the causal mask "is automatically satisfied"; applying it "makes no difference" | only for the new query of KV-cached decoding or a 1-layer model; re-running the prefix without the mask changes the next-token logits of a 2-layer model | section 2 |
# | 004 §13.2 | KV cache of LLaMA-3 70B at 4K, fp16, by $2LHd_kT$: "roughly 5 GB" | **10.7 GB** with $H = 64$ (5.37·10⁹ values × 2 bytes); **1.34 GB** with the model's 8 K/V heads | section 8 |
# | 004 §14, step 6.2 | cross-attention weights "1 × 1 × 3" | per head; the tensor is $(B, h, T_{dec}, T_{enc}) = (1, 12, 1, 3)$ | section 3 |
# | 004 §14, steps 2 and 7 | "1 × 31 × 3 × 768", "1 × 1 × 7681 × 1 × vocab_sz" | extraction lost the arrows: $1{\times}3 \to 1{\times}3{\times}768$ and $1{\times}1{\times}768 \to 1{\times}1{\times}\lvert V\rvert$ | section 3 |
# | 004 §12–13 code | encoder, `CrossAttentionDecoderLayer` and `Seq2SeqTransformer` take no padding masks | with padded batches the real outputs then depend on the padding; the masks are needed in the encoder and in cross-attention (right-padded decoder-only models get away without) | section 5 |
# | 004 §12 | the diagram normalises before each sublayer (Pre-LN), the `DecoderLayer` code after (`layer_norm_1(x + attn(x))`, Post-LN) | two different functions (notebook 06); our stacks support both and match PyTorch in both | section 6 |
#
# Everything else checked here holds: the three variants differ only in masks and cross-attention (000 §8.6,
# 001 §19.11, 003, 004 §13); the causal mask of 000 §8.6.4 and 001 §19.7.2; every shape of 004 §14 and 001
# §19.7.3/19.8.1; 003's `nn.Transformer` shapes; the objectives of 000 Table 8.2 and 001 §19.11.3; weight tying
# saving $|V| \cdot d$ (001 §19.8.3).
