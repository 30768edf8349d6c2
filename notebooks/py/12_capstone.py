# %% [markdown] slideshow={"slide_type": "slide"}
# # 12 · Capstone: build your own Transformer language model
#
# [![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-nb/transformer-nb/blob/main/notebooks/12_capstone.ipynb)
#
# Notebooks 01–11 took the Transformer apart and checked every piece; the package did the assembling. Here you
# do it. From your own code (scaled dot-product attention, the causal mask, multi-head attention, a Pre-LN
# block, a decoder-only language model) you build **Exercise 8.9's model** (4 blocks, $d_{\text{model}} = 128$,
# 4 heads, $d_{ff} = 512$, learned positions up to 256), check each piece against the package's own module given
# the same weights, train it on WikiText-2 in under three minutes on a laptop CPU, and make it write.
#
# **Serves:** 000 §8.2 (Eq. 8.1, §8.2.4 the causal mask), §8.3 (§8.3.5 the parameter count), §8.5 (§8.5.4, §8.5.5
# the Pre-LN block), §8.6.2 (decoder-only), Exercises 8.5, 8.6 (multi-head attention, as a module), 8.8 (Pre-LN
# blocks, stacked) and 8.9 (its model, trained on WikiText-2); 001 §19.11.3 (weight tying); 002 (the causal LM
# objective).
#
# **Runtime on 2 CPU cores:** quick ~20 s, full ~3 min cold, of which about 2.5 min train the model (the training
# cell prints how long); a re-run loads the trained model from the cache.

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
import torch.nn.functional as F

from transformer_nb import check_equal, check_true, pick, wikitext
from transformer_nb.cache import load_or_train
from transformer_nb.core.generation import generate as package_generate
from transformer_nb.exercises.attention import attention_ex
from transformer_nb.exercises.capstone import block_ex, mha_ex
from transformer_nb.exercises.capstone_lm import generate_ex, lm_ex, package_logits, params_ex
from transformer_nb.exercises.capstone_train import (
    CAPSTONE_MODEL,
    CAPSTONE_RUN,
    attention_maps,
    build,
    sizes,
    to_package,
    training_check,
    training_run,
)
from transformer_nb.exercises.masks import causal_ex
from transformer_nb.perplexity import unigram_perplexity
from transformer_nb.plotting import heatmaps

SIZES = sizes(CAPSTONE_MODEL)               # d_model, n_heads, d_ff, n_layers, max_len
VALID_WORDS = pick(**{p: run["eval_tokens"] for p, run in CAPSTONE_RUN.items()})  # what the loss check reads

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The plan
#
# | step | you write | the checker compares it with |
# |---|---|---|
# | 1 | `attention(q, k, v, mask=None)`: Exercise 8.5, as in notebook 01 | a reference, on masked and unmasked cases |
# | 2 | `my_causal_mask(T)`, as in notebook 02 | a reference |
# | 3 | `MultiHeadAttention(d_model, n_heads)` | the package's `multihead.MultiHeadAttention`, same weights |
# | 4 | `Block(d_model, n_heads, d_ff)`, Pre-LN | the package's `block.EncoderLayer(cfg)`, `cfg.norm_first=True`, same weights |
# | 5 | `LanguageModel(...)`, decoder-only | causality; the package's `Transformer`, same weights; its first loss |
# | 6 | `count_parameters(...)`, 000's count made exact | `numel` of the package's model |
# | 7 | `generate(model, prompt, n_new, max_len)`, greedy | a reference, on a small model |
# | 8 | (training, with the package's loop) | the validation loss must fall below a threshold |
#
# **How the steps work.** Each step's cell holds a stub and its check. Replace `raise NotImplementedError` with your
# code and run the cell: the checker runs your code on several cases and, when something is off, names the
# symptom. `mha_ex.hint()` (and so on for every step) gives a hint, more specific each time you ask;
# `mha_ex.solution()` shows a solution: call it only on purpose. Until a step passes, the cells after it use a
# hidden reference in its place and say so, so the notebook always runs to the end; once your steps 1–5 pass,
# it trains **your** model.
#
# ## The data, and the bar to clear
#
# WikiText-2 as notebook 10 loads it: 2.1 M training words, a vocabulary of 33,278 words. The baseline to beat
# is the **unigram** model, which predicts every word with its training frequency and ignores the context.

# %%
data = wikitext.load_wikitext2()
V = len(data.vocab)
valid = data.valid[:VALID_WORDS]  # the validation words the curve and the check use
UNIGRAM = unigram_perplexity(data.train, valid, V)
print(f"{data.train.numel():,} training words, vocabulary {V:,}; unigram perplexity on the first {valid.numel():,} "
      f"validation words: {UNIGRAM:.0f}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Step 1 · Scaled dot-product attention (Exercise 8.5)
#
# $\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\big(QK^\top/\sqrt{d_k} + M\big)V$ (000 Eq. 8.1).
# `q: (..., T_q, d_k)`, `k: (..., T_k, d_k)`, `v: (..., T_k, d_v)`, an optional boolean `mask` broadcastable to
# `(..., T_q, T_k)` that is True where a query **may** attend. Return `(output, weights)`. Paste your solution from
# notebook 01 if you have one; step 3 will call it on four-dimensional tensors `(B, h, T, d_k)`.

# %% tags=["exercise"]
def attention(q, k, v, mask=None):
    raise NotImplementedError  # your code here


result = attention_ex.check(attention)

# %%
attention = attention_ex.use(attention)

# %% [markdown]
# ## Step 2 · The causal mask
#
# `my_causal_mask(T)`: a `(T, T)` bool tensor, True where query $i$ may attend to key $j$, that is, where $j$ is not
# in $i$'s future (000 §8.2.4).

# %% tags=["exercise"]
def my_causal_mask(T):
    raise NotImplementedError  # your code here


result = causal_ex.check(my_causal_mask)

# %%
my_causal_mask = causal_ex.use(my_causal_mask)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Step 3 · Multi-head attention (000 §8.3; Exercise 8.6 as a module)
#
# `MultiHeadAttention(d_model, n_heads)` is an `nn.Module` with four `nn.Linear(d_model, d_model)` layers (with
# their biases) named `q_proj`, `k_proj`, `v_proj` and `out_proj`: the checker copies the package's weights into
# yours by these names. `forward(x, mask=None)` maps `x: (B, T, d_model)` to `(B, T, d_model)`: project, give
# each of the `n_heads` heads its own `d_model / n_heads` features of every token, attend in every head at once
# with **your `attention`**, join the heads and project with `out_proj`. Keep the attention weights of the last
# call, `(B, n_heads, T, T)`, in `self.weights` (detached): section 10 draws them.

# %% tags=["exercise"]
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        raise NotImplementedError  # your code here

    def forward(self, x, mask=None):
        raise NotImplementedError  # your code here


result = mha_ex.check(MultiHeadAttention)

# %%
MultiHeadAttention = mha_ex.use(MultiHeadAttention)

# %% [markdown]
# ## Step 4 · A Pre-LN block (000 §8.5.5; Exercise 8.8's block)
#
# `Block(d_model, n_heads, d_ff)`: self-attention, then a position-wise feed-forward network
# $\mathrm{FFN}(x) = W_2\,\mathrm{ReLU}(W_1 x + b_1) + b_2$ (000 §8.5.4), each as a **Pre-LN** sublayer with a
# residual connection. Names: `norm1` and `norm2` (`nn.LayerNorm(d_model)`), `attn` (your `MultiHeadAttention`),
# `ff1` (`nn.Linear(d_model, d_ff)`) and `ff2` (`nn.Linear(d_ff, d_model)`). `forward(x, mask=None)` passes the mask
# on to the attention and returns `(B, T, d_model)`.

# %% tags=["exercise"]
class Block(nn.Module):
    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        raise NotImplementedError  # your code here

    def forward(self, x, mask=None):
        raise NotImplementedError  # your code here


result = block_ex.check(Block)

# %%
Block = block_ex.use(Block)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Step 5 · The language model (000 §8.6.2)
#
# `LanguageModel(vocab_size, d_model, n_heads, d_ff, n_layers, max_len)` turns word ids `(B, T)` into **logits**
# `(B, T, vocab_size)`: at every position, a score for every word of the vocabulary as the next word. Its parts:
#
# * `tok`: an `nn.Embedding(vocab_size, d_model)` for the words; `pos`: an `nn.Embedding(max_len, d_model)` for the
#   positions $0 \dots T-1$, added to the word embeddings (learned positions, 000 §8.4.3);
# * `blocks`: an `nn.ModuleList` of `n_layers` of your `Block`s, all given one causal mask from your
#   `my_causal_mask`;
# * `norm`: a final `nn.LayerNorm(d_model)` (a Pre-LN stack ends with one);
# * the output layer is **tied** to the word embeddings (001 §19.11.3): the score of word $w$ is the dot product
#   of the hidden state with row $w$ of `tok.weight`, plus `bias`, an `nn.Parameter` of `vocab_size` numbers.
#
# The checker tests three things in turn: **causality** (changing a word never changes the output at an earlier
# position), **equality** with the package's `Transformer` given the same weights, and your
# **initialisation**: before any training, the loss should be close to $\ln V$, the loss of a uniform guess, and
# the position embeddings should not drown the word embeddings (start both small, on the same scale).

# %% tags=["exercise"]
class LanguageModel(nn.Module):
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len):
        super().__init__()
        raise NotImplementedError  # your code here

    def forward(self, ids):
        raise NotImplementedError  # your code here


result = lm_ex.check(LanguageModel)

# %%
LanguageModel = lm_ex.use(LanguageModel)

# %% [markdown]
# The same three properties at full size, on real text: the model for WikiText-2 (untrained), fed the first 48
# validation words.

# %% tags=["nbval-check-output"]
probe = build(LanguageModel, V, env.device)
ids = data.valid[:48][None].to(env.device)
changed = ids.clone()
changed[0, 30] = (ids[0, 30] + 1) % V
with torch.no_grad():
    logits, logits_changed = probe(ids), probe(changed)
    same_as_package = torch.allclose(package_logits(to_package(probe, V), ids), logits, atol=1e-4)
    first_loss = F.cross_entropy(logits[0, :-1], ids[0, 1:]).item()
check_equal("logits: one score per vocabulary word, at every position", tuple(logits.shape), (1, 48, V))
check_true("changing word 30 leaves the outputs at positions 0-29 bit for bit unchanged",
           torch.equal(logits[0, :30], logits_changed[0, :30]))
check_true("... and changes the output at position 30", (logits[0, 30] - logits_changed[0, 30]).abs().max() > 1e-6)
check_true("the package's Transformer holding these weights gives the same logits (to 1e-4)", same_as_package)
check_true("before training the loss is within 0.5 of ln V (a uniform guess)", abs(first_loss - math.log(V)) < 0.5)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Step 6 · Count the parameters (000 §8.3.5, §8.5.4)
#
# The chapter counts $4d^2$ weights per attention layer (§8.3.5) and $2\,d\,d_{ff}$ per feed-forward network
# (§8.5.4). Make that count exact for **this** model: `count_parameters(vocab_size, d_model, n_heads, d_ff,
# n_layers, max_len)` returns the number of trainable numbers in `LanguageModel(vocab_size, d_model, n_heads, d_ff,
# n_layers, max_len)`, every one of them. The checker compares it with `numel` of the package's model on several
# sizes.

# %% tags=["exercise"]
def count_parameters(vocab_size, d_model, n_heads, d_ff, n_layers, max_len):
    raise NotImplementedError  # your code here


result = params_ex.check(count_parameters)

# %%
count_parameters = params_ex.use(count_parameters)

# %% tags=["nbval-check-output"]
check_true("count_parameters gives the number of numbers in the model above (its numel)",
           count_parameters(V, *SIZES) == sum(p.numel() for p in probe.parameters()))

# %% tags=["solution"] cellView="form" jupyter={"source_hidden": true, "outputs_hidden": true}
# Solution · Step 6, worked: the count part by part, against numel of each part of the model above; it runs once
# your count passes, or after params_ex.solution().
if params_ex.unlocked():
    d, h, d_ff, n_layers, max_len = SIZES
    parts = {
        "token embeddings V·d": (V * d, probe.tok.weight.numel()),
        "positions max_len·d": (max_len * d, probe.pos.weight.numel()),
        "one block: attention 4d² + 4d": (4 * d * d + 4 * d, sum(p.numel() for p in probe.blocks[0].attn.parameters())),
        "one block: FFN 2·d·d_ff + d_ff + d": (2 * d * d_ff + d_ff + d,
                                              sum(p.numel() for n, p in probe.blocks[0].named_parameters() if "ff" in n)),
        "one block: two LayerNorms 4d": (4 * d, sum(p.numel() for n, p in probe.blocks[0].named_parameters() if "norm" in n)),
        "final LayerNorm 2d": (2 * d, sum(p.numel() for p in probe.norm.parameters())),
        "output layer: tied, only its bias V": (V, probe.bias.numel()),
    }
    for name, (formula, counted) in parts.items():
        print(f"{name:38s} {formula:>11,} {counted:>11,}")
    print(f"{'total, with ' + str(n_layers) + ' blocks':38s} {count_parameters(V, *SIZES):>11,}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Step 7 · Greedy generation
#
# `generate(model, prompt, n_new, max_len)`: `prompt` is a 1-D tensor of word ids; return it followed by `n_new`
# words, each the model's most likely next word given the text so far (greedy decoding). The model takes a batch
# `(B, T)` and knows only `max_len` positions, so feed it at most the last `max_len` words.

# %% tags=["exercise"]
def generate(model, prompt, n_new, max_len):
    raise NotImplementedError  # your code here


result = generate_ex.check(generate)

# %%
generate = generate_ex.use(generate)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Step 8 · Train it
#
# The package's one training loop (`train.train`) trains the model: AdamW, a linear warm-up over the first 5 % of
# the steps, then a cosine decay (`torch.optim.lr_scheduler`), gradient clipping at 1, bf16 autocast, batches of
# 8 random windows of 64 words; the loss is `F.cross_entropy` of your logits against the next words. In the full
# profile that is 600 steps, under three minutes on 2 idle CPU cores (a step costs about 0.25 s there, nearly all of it
# in the output layer's 33,278 scores per word); the bar and the live figure show the progress.
# The validation loss is measured with the package's `perplexity.evaluate` on the package's `Transformer`
# holding your weights, which step 5 showed computes the same logits. A trained model is cached: a re-run loads it
# (and retrains if you changed your code).
#
# If your steps 1–5 do not all pass yet, this cell trains a **hidden reference model** instead, and says so.

# %%
mine = all(ex.last is not None and ex.last.passed for ex in (attention_ex, causal_ex, mha_ex, block_ex, lm_ex))
print("Training YOUR LanguageModel." if mine else
      "Steps 1-5 do not all pass yet: this trains the HIDDEN REFERENCE model instead of yours.")
name, model, config, train_fn = training_run(LanguageModel if mine else lm_ex.reference, data,
                                             "student" if mine else "reference", device=env.device)
hist, trained_now = load_or_train(name, model, config, train_fn)
model.eval()

# %%
fig, ax = plt.subplots(figsize=(7.5, 3.6))
ax.plot(range(1, len(hist["loss"]) + 1), hist["loss"], color="C0", alpha=0.35, lw=1, label="training loss (per step)")
ax.plot(hist["eval_step"], hist["val_loss"], "o-", color="C1", label="validation loss")
ax.axhline(math.log(V), color="0.5", ls=":", label=f"uniform guess: ln V = {math.log(V):.2f}")
ax.axhline(math.log(UNIGRAM), color="C3", ls="--", label=f"unigram model: ln {UNIGRAM:.0f} = {math.log(UNIGRAM):.2f}")
ax.set_xlabel("step")
ax.set_ylabel("loss (nats per word)")
ax.set_title(f"{'your' if mine else 'the reference'} model on WikiText-2")
ax.legend(fontsize=8)
plt.show()

# %%
final = hist["val_loss"][-1]  # the curve's last point: the package's evaluation of your weights on `valid`
where = f"{env.threads} CPU threads" if env.device.type == "cpu" else str(env.device)
print(f"{'trained now' if trained_now else 'loaded from the cache'}: {hist['steps']} steps in {hist['train_seconds']:.0f} s "
      f"of training on {where} (and {hist['eval_seconds']:.0f} s for the validation points)")
print(f"validation perplexity on the first {valid.numel():,} validation words: {math.exp(final):.0f} "
      f"(loss {final:.2f} nats); the unigram model's on the same words: {UNIGRAM:.0f}")
result = training_check(hist, V, baseline=UNIGRAM)

# %%
if not mine:  # the stored run: the reference model must clear both bars (your model gets the check above)
    assert result.passed, result.message
    bar = pick(quick=V / 10, full=0.7 * UNIGRAM)  # quick: it learned something; full: well below the unigram model
    assert math.exp(final) < bar, f"perplexity {math.exp(final):.0f}, not below {bar:.0f}"

# %% [markdown]
# **What to expect.** After the full profile's 600 steps (307,200 words seen, about a seventh of one pass over the
# training split) the model predicts the next word with a validation perplexity of about 580 on the first 10,000
# validation words: about 40 % below the unigram model's 974 on the same words, which knows word frequencies only.
# The stored run prints its own numbers above. Notebook 10's tuned recipe reaches 128 in about nine minutes of
# training on one core, mostly by spending less on the output layer (a tied adaptive softmax, so it reads fifteen
# times as many words); notebook 11 measures each choice.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9 · The model writes
#
# Your `generate` continues a prompt greedily. The package's `generation.generate` can do more with the same
# weights (sampling with a temperature and top-k, with a KV cache): below it samples from the package's
# `Transformer` holding them. Words the vocabulary does not know become `<unk>`.

# %%
prompt = data.vocab.encode("The history of machine learning")
whose = "the hidden reference's generate" if generate is generate_ex.reference else "your generate"
print(f"greedy ({whose}):\n ", data.vocab.decode(generate(model, prompt.to(env.device), 30, SIZES[-1])))
twin = to_package(model, V)
for seed in (1, 2):
    sampled = package_generate(twin, prompt, 30, temperature=0.8, top_k=40, seed=seed)
    print(f"sampled (temperature 0.8, top-k 40, seed {seed}):\n ", data.vocab.decode(sampled))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10 · Where the model looks
#
# The attention weights of every head in every block for one validation sentence (rows: the word that asks,
# columns: the words it reads; each row sums to 1). Trained heads specialise: some look at the previous word,
# some at the start of the sentence or at punctuation, some spread out.

# %%
sentence = data.valid[40:52]        # It is closely related to the American lobster , H. americanus .
words = data.vocab.decode(sentence).split()
maps = attention_maps(model, sentence)
n_layers, n_heads = maps.shape[:2]
heatmaps([maps[layer, head] for layer in range(n_layers) for head in range(n_heads)],
         titles=[f"block {layer + 1}, head {head + 1}" for layer in range(n_layers) for head in range(n_heads)],
         xlabels=words, ylabels=words, ncols=n_heads, size=2.6)
plt.show()

# %% tags=["nbval-check-output"]
check_equal("maps: (blocks, heads, T, T)", tuple(maps.shape), (SIZES[3], SIZES[1], 12, 12))
check_true("every row of every map sums to 1", torch.allclose(maps.sum(-1), torch.ones(maps.shape[:-1]), atol=1e-4))
check_true("nothing above the diagonal: no word reads a later one", bool((maps.triu(1) == 0).all()))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Appendix · The texts, checked
#
# The claims of the texts that this notebook builds on are checked where they belong, and recorded in the claims
# ledger (`transformer_nb.claims`):

# %%
from transformer_nb.claims import cite

for claim in ("000-8.2.4-mask", "000-8.3.5-4d2", "000-8.5.4-ffn", "000-8.5.5-code", "000-8.6.4-nodiff",
              "000-ex8.9-ppl"):
    print(cite(claim))
