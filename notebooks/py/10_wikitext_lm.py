# %% [markdown] slideshow={"slide_type": "slide"}
# # 10 · A language model on WikiText-2
#
# [![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-nb/transformer-nb/blob/main/notebooks/10_wikitext_lm.ipynb)
#
# A decoder-only Transformer (000 §8.6.2) reads a text and predicts, at every position at once, the word that
# comes next; that one objective, applied to two million words of Wikipedia, teaches it a good deal of English.
# This notebook trains one on a laptop CPU: the objective and its score (perplexity), a baseline that knows only
# word frequencies, Exercise 8.9 as stated, one good recipe on the whole corpus, an honest comparison with an
# LSTM, sampling, and the KV cache that makes generation fast. How the recipe was found is the optional lab,
# notebook 11.
#
# **Serves:** 000 §8.6.2, Exercise 8.9; 001 §19.11.3, §19.13, §19.14.1; 002 (LM objective, KV cache); 004 §12, §13.2.
#
# **Runtime on 2 CPU cores:** quick ~25 s, full ~14 min.

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
from dataclasses import replace

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from transformer_nb import cache, check_close, check_equal, check_true, lm_recipe, pick, show_source, wikitext
from transformer_nb.bench.kvcache import time_generation
from transformer_nb.core import generation
from transformer_nb.core.multihead import MultiHeadAttention
from transformer_nb.core.transformer import Transformer
from transformer_nb.params import embedding_params, encoder_layer_params, norm_params, numel, position_params
from transformer_nb.perplexity import unigram_perplexity
from transformer_nb.plotting import plot_curves
from transformer_nb.small_corpus import exercise_8_9
from transformer_nb.widgets.lm import GenerateWidget

RETRAIN = False                                        # True: train every model again, ignoring the cache
EX89_EPOCHS, EX89_WORDS = pick(quick=1, full=5), pick(quick=10_000, full=50_000)  # Exercise 8.9: 5 epochs, 50,000 words
RUN = pick(**lm_recipe.NOTEBOOK_RUN)                   # the recipe's run (notebook 14 loads this model):
STEPS = RUN["steps"]                                   # optimiser steps: 100 in the quick profile, 4,600 in the full
LSTM_STEPS = pick(quick=30, full=lm_recipe.LSTM_FULL_STEPS)
WORKERS = pick(quick=1, full=2)                        # 2: train two models at once, each on one CPU thread
VAL_TOKENS = RUN["eval_tokens"]                        # validation words of each point of the training curves
VAL_EVERY = RUN["eval_every"]                          # steps between those points (None: 20 per run)
EVAL_TOKENS = pick(quick=4_000, full=None)             # words of the final scores (None: the whole split)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · The objective: predict the next word, scored by perplexity
#
# WikiText-2 (Merity et al., 2016) is Wikipedia text split into words, rare ones replaced by `<unk>`. A language
# model reads a window $x_1 \dots x_T$ and predicts, at every position $t$, the next word $x_{t+1}$: the **targets
# are the inputs shifted by one** (002's causal LM objective), and the causal mask keeps position $t$ from reading
# what it must predict. `batchify` cuts the stream into $B$ rows, `get_batch` takes a window and its shift.

# %%
data = wikitext.load_wikitext2()
vocab, V = data.vocab, len(data.vocab)
streams = wikitext.batchify(data.train, 4)
x, y = wikitext.get_batch(streams, 0, 8)
print(", ".join(f"{s}: {data.split(s).numel():,} words" for s in wikitext.SPLITS))
print("input :", vocab.decode(x[0]), "\ntarget:", vocab.decode(y[0]))

# %% tags=["nbval-check-output"]
check_equal("vocabulary size and training words", (V, data.train.numel()), (33_278, 2_088_628))
check_true("y[:, t] is the word after x[:, t]", torch.equal(x[:, 1:], y[:, :-1]))
check_equal("an unknown word", vocab.decode(vocab.encode("the transformerology of")), "the <unk> of")

# %% [markdown]
# The loss is the mean negative log-likelihood of the targets, $\mathcal{L} = -\frac1N\sum_t \log p(x_{t+1} \mid
# x_{\le t})$ in nats; its exponential is the **perplexity** $e^{\mathcal{L}}$. A model that spreads its probability
# evenly over $k$ words has perplexity exactly $k$: perplexity is "the number of words the model is still choosing
# between". Knowing nothing (uniform over the vocabulary) scores $V = 33{,}278$; lower is better.
#
# ## 2 · The baseline to beat: word frequencies
#
# The **unigram** model ignores the context and predicts every word with its frequency in the training text.
# Anything that reads the context must beat it.

# %%
UNIGRAM = {s: unigram_perplexity(data.train, data.split(s), V) for s in ("valid", "test")}
print(f"unigram perplexity: validation {UNIGRAM['valid']:.1f}, test {UNIGRAM['test']:.1f}")

# %% tags=["nbval-check-output"]
p_word = torch.bincount(data.train, minlength=V).double() / data.train.numel()   # the unigram model, by hand
check_close("unigram validation perplexity, by hand", math.exp(-p_word.log()[data.valid].mean()), UNIGRAM["valid"])

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · Exercise 8.9, as stated
#
# > Train a small Transformer language model on a toy corpus. Use 4 decoder blocks with $d_{\text{model}} =
# > 128$, $h = 4$, $d_{ff} = 512$, and learned position embeddings ($T_{\max} = 256$). Train on a 50,000-word
# > sample from WikiText-2 […] AdamW optimizer with learning rate $3\times10^{-4}$. Report training perplexity
# > after 5 epochs. Generate a sample 50-token continuation of the prompt "The history of machine learning"
# > using greedy decoding. Compare training time and final perplexity with an LSTM language model of
# > comparable parameter count trained on the same corpus. — 000, Exercise 8.9
#
# What the text leaves open, and our choice (`small_corpus.exercise_8_9`): the first 50,000 words of the training
# split with their own vocabulary; windows of 256 words, batches of 16, no dropout, an untied output layer; an LSTM
# of 2 layers whose hidden size brings its parameter count closest to the Transformer's. Section 8 asks *you* to
# write the evaluation, the training step, the greedy decoding and the verdict; here the package trains both, once.
# With `WORKERS = 2` they train at the same time, each in its own process on one core: the same hardware for both,
# so their seconds per epoch compare.

# %%
ex = exercise_8_9(data, EX89_WORDS, EX89_EPOCHS, retrain=RETRAIN, device=env.device, workers=WORKERS)
threads = 1 if WORKERS > 1 and env.device.type == "cpu" else env.threads  # each model's, side by side or alone
ex_ids, ex_vocab = ex["ids"], wikitext.Vocab(ex["vocab"])
ex_tf, ex_lstm, ex_hist, ex_final = ex["models"]["Transformer"], ex["models"]["LSTM"], ex["hist"], ex["ppl"]
c, V89 = ex_tf.cfg, len(ex_vocab)
formula = (embedding_params(V89, c.d_model) + position_params(c) + c.n_layers * encoder_layer_params(c) + norm_params(c)
           + embedding_params(V89, c.d_model) + V89)   # words, positions, the blocks, last norm, output + bias
print(f"sample: {ex_ids.numel():,} words, {V89:,} word types; parameters: Transformer {numel(ex_tf):,}, "
      f"LSTM (hidden size {ex_lstm.hidden_size}) {numel(ex_lstm):,}")
for name in ex_final:
    print(f"{name:12s} training perplexity {ex_final[name]:7.1f}, "
          f"{ex_hist[name]['train_seconds'] / EX89_EPOCHS:5.1f} s per epoch on {threads} CPU thread{'s' * (threads > 1)}")

# %% tags=["nbval-check-output"]
check_true("Transformer parameters = the formulas of notebook 07", numel(ex_tf) == formula)
check_true("both models learned something (perplexity below the sample's vocabulary)", max(ex_final.values()) < V89)

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 3.3), layout="constrained")
epochs = list(range(1, EX89_EPOCHS + 1))
plot_curves({n: (epochs, h["train_ppl"]) for n, h in ex_hist.items()}, "epoch", "training perplexity",
            "Exercise 8.9: perplexity during each epoch", ax=axes[0], logy=True, marker="o")
plot_curves({n: (epochs, h["seconds"]) for n, h in ex_hist.items()}, "epoch", "seconds",
            f"training time per epoch ({threads} CPU thread{'s' * (threads > 1)} each)", ax=axes[1], marker="o")
plt.show()

# %% [markdown]
# Five epochs of 50,000 words are about 60 optimiser steps at a small learning rate: both models are far from
# converged, so this compares early training with this recipe, not the architectures; and the text's hint speaks
# of a GPU, this is a CPU. The verdict is yours (section 8).
#
# ## 4 · One good recipe, on all of WikiText-2
#
# A recipe tuned for a few minutes of one CPU core (notebook 11 measures each choice): a **small, shallow** model (2
# blocks of width 128, RoPE); an **adaptive softmax whose weights are also the input embedding**, so the 33,278-way
# output layer costs a fraction of a full one; **Muon** for the blocks' matrices, AdamW for the rest; warm-up then
# cosine decay to zero at the last step. With `WORKERS = 2` the LSTM of section 5 trains at the same time on the
# other core (no live figure then: the curves are drawn in section 5); a re-run loads the cached weights.
#
# The model is the package's one `Transformer`, built from `TransformerConfig(arch="decoder", ...)`: token
# embeddings, the causal blocks of notebook 06, a final norm and the output layer. Its contract is nanoGPT's,
# `model(ids, targets)` returns `(logits, loss)`; `hidden` is the part up to the final norm, where the KV cache
# of section 7 enters:

# %%
show_source(Transformer.forward)
show_source(Transformer.hidden)

# %%
val = dict(data=data, eval_tokens=VAL_TOKENS, eval_every=VAL_EVERY)
runs = cache.load_or_train_many(lm_recipe.run, {"transformer": dict(kind="transformer", steps=STEPS, **val),
                                                "lstm": dict(kind="lstm", steps=LSTM_STEPS, **val)},
                                WORKERS, retrain=RETRAIN, live=True)
model, hist, trained_now = runs["transformer"]
print(model.cfg, lm_recipe.RECIPE_TRAIN, sep="\n")
print(f"{'trained now' if trained_now else 'loaded from the cache'}: {hist['steps']} steps, "
      f"{hist['tokens_seen']:,} words, {hist['train_seconds']:.0f} s of training, {hist['tokens_per_s']:,.0f} words/s")

# %% tags=["nbval-check-output"]
rm = model.cfg
blocks = rm.n_layers * encoder_layer_params(rm) + norm_params(rm)
check_equal("parameters = output layer (also the embedding) + blocks + last norm", numel(model),
            numel(model.head) + blocks)
check_true("the Transformer beats the unigram baseline on validation words", hist["val_ppl"][-1] < UNIGRAM["valid"])

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5 · Against an LSTM, at equal training time
#
# The LSTM is no straw man: the same embedding width, tied adaptive softmax, optimisers and schedule, and it reads
# the corpus as recurrent models like best (consecutive windows, state carried across). With `WORKERS = 2` it
# trained beside the Transformer, each on one core: the same hardware for both. The step counts take about the same
# seconds, but speeds vary: we compare the curves **at the same training seconds**. Each point of these curves reads
# the first validation words in consecutive windows: the LSTM carries its state across them, the Transformer starts
# every window afresh (the cheapest reading, and a pessimistic one for it); the final scores below read whole splits.

# %%
lstm, lstm_hist, _ = runs["lstm"]
t_eq = min(hist["train_seconds"], lstm_hist["train_seconds"])
at_t = {n: math.exp(np.interp(t_eq, h["seconds"], np.log(h["val_ppl"]))) for n, h in
        (("Transformer", hist), ("LSTM", lstm_hist))}
fig, ax = plt.subplots(figsize=(7, 3.6), layout="constrained")
plot_curves({"Transformer": (hist["seconds"], hist["val_ppl"]), "LSTM": (lstm_hist["seconds"], lstm_hist["val_ppl"])},
            "training seconds", f"validation perplexity (first {VAL_TOKENS:,} words)", ax=ax, logy=True)
ax.axhline(UNIGRAM["valid"], color="gray", ls=":", lw=1.2, label="unigram (validation)")
ax.legend(fontsize=8)
plt.show()
print(f"after {t_eq:.0f} s of training each: " + ", ".join(f"{n} {p:.1f}" for n, p in at_t.items()))

# %% [markdown]
# The final scores use whole splits. The LSTM carries its state from window to window; a Transformer sees only
# its window, so the recipe slides it by 32 words and scores only the newest ones (every prediction gets at least
# 96 words of context; the output layer runs for those 32 only). Non-overlapping windows leave a word early in a
# window with almost none.

# %%
tcfg = lm_recipe.recipe_config("transformer", env.device, steps=STEPS, eval_tokens=VAL_TOKENS, eval_every=VAL_EVERY)
lcfg = lm_recipe.recipe_config("lstm", env.device, steps=LSTM_STEPS, eval_tokens=VAL_TOKENS, eval_every=VAL_EVERY)
scored = {"Transformer": (model, tcfg), "Transformer, no overlap": (model, replace(tcfg, eval_stride=None)),
          "LSTM": (lstm, lcfg)}
final = lm_recipe.final_perplexities(scored, data, eval_tokens=EVAL_TOKENS, key={
    k: lm_recipe.cache_config(k, c, V) for k, c in (("transformer", tcfg), ("lstm", lcfg))})
print(f"{'':24s} {'valid':>8s} {'test':>8s}")
for name, r in {**final, "unigram": UNIGRAM}.items():
    print(f"{name:24s} {r['valid']:8.1f} {r['test']:8.1f}")
assert final["Transformer"]["valid"] < pick(quick=900, full=250), final
if env.profile == "full":  # a model trained for 100 steps barely uses its context, so only checked here
    assert final["Transformer"]["valid"] < final["Transformer, no overlap"]["valid"], final

# %% [markdown]
# Read these numbers as a statement about this recipe and this budget, not about the architectures: which model
# comes out ahead depends on the recipe. pytorch/examples' word-language models, each trained for 360 s on a
# 2-core CPU (a separate measurement, not a run of this notebook), show it: their Transformer reached a validation
# perplexity of 372.6 only with AdamW; with its default recipe (SGD) it reached 536.3, behind their LSTM's 398.5.
# That is Exercise 8.9's recipe dependence.
#
# ## 6 · Sampling: temperature and top-k
#
# At each step the model gives a distribution over the next word. **Greedy** decoding takes the most likely
# word; **temperature** $\tau$ samples from $\mathrm{softmax}(z/\tau)$ ($\tau < 1$ sharpens, $\tau > 1$
# flattens); **top-k** first keeps only the $k$ most likely words. A seeded `torch.Generator` draws the
# samples, so a seed fixes the text. `generation.generate` does it one word at a time, through the cache of section 7:

# %%
show_source(generation.generate)

# %% [markdown]
# Below, the next-word distribution after a prompt at three temperatures;
# then try it yourself in the widget, which also shows the attention the **last** input word pays to the words
# before it, in every layer and head (unknown words become `<unk>`).

# %%
prompt = vocab.encode("The history of machine learning").to(env.device)
with torch.no_grad():
    logp = model.log_probs(prompt[None])[0, -1]     # (V,) log-probabilities of the next word
top = logp.topk(12).indices
fig, ax = plt.subplots(figsize=(9, 3.2), layout="constrained")
for i, tau in enumerate((0.5, 1.0, 2.0)):
    p = torch.softmax(logp / tau, -1)
    ax.bar(np.arange(12) + 0.27 * (i - 1), p[top], width=0.27, label=f"τ = {tau}: these 12 hold {p[top].sum():.0%}")
ax.set_xticks(range(12), [vocab.itos[j] for j in top], rotation=30)
ax.set(ylabel="probability", title="the next word after “The history of machine learning”")
ax.legend(fontsize=8)
plt.show()
for label, kw in [("greedy", dict(temperature=0.0)), ("τ = 0.8", dict(temperature=0.8, seed=1)),
                  ("τ = 1.2", dict(temperature=1.2, seed=1)), ("top-k 40, τ = 0.9", dict(temperature=0.9, top_k=40))]:
    print(f"{label}: {vocab.decode(generation.generate(model, prompt, 30, **kw))}")

# %%
GenerateWidget(model, vocab).show()

# %% tags=["nbval-check-output"]
gen = lambda **kw: generation.generate(model, prompt, 30, **kw)
seven = gen(temperature=1.0, seed=7)
check_true("the same seed gives the same text", torch.equal(seven, gen(temperature=1.0, seed=7)))
check_true("another seed gives another text", not torch.equal(seven, gen(temperature=1.0, seed=8)))
check_true("top-k 1 is greedy", torch.equal(gen(temperature=1.0, top_k=1, seed=3), gen(temperature=0.0)))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7 · The KV cache
#
# Without a cache, generating word $t+1$ runs the model over all $t$ words again. But in a causal model nothing at
# position $i$ depends on later words, so the keys and values of words $1 \dots t$ never change. A **KV cache**
# (001 §19.14.1; 002) keeps them: the prompt is processed once, then each step feeds only the newest word, appends
# its key and value in every block to the cache and attends over all of them. It is one argument of the module:

# %%
show_source(MultiHeadAttention.forward)

# %% [markdown]
# `Transformer.hidden(ids, state)` hands each block its cache (`state = model.init_state()`); new words sit at
# positions `cache.length ...` (RoPE too); several at once need the causal mask aligned bottom-right. Checked: later
# words leave earlier ones untouched; three pieces through the cache give one full pass's hidden states; greedy
# decoding gives the same 100 words either way.

# %% tags=["nbval-check-output"]
ids = data.valid[:40].view(1, 40).to(env.device)
with torch.no_grad():
    h40, h30, state = model.hidden(ids)[0], model.hidden(ids[:, :30])[0], model.init_state()
    parts = [model.hidden(ids[:, a:b], state)[0] for a, b in ((0, 25), (25, 26), (26, 40))]
check_close("the first 30 words' hidden states, alone or followed by 10 more", h40[:, :30], h30, atol=1e-4)
check_close("three pieces through the cache vs one full pass", torch.cat(parts, 1), h40, atol=1e-4)
check_equal("words in each layer's cache", [s.length for s in state], [40] * len(model.blocks.layers))
check_true("100 greedy words identical with and without the cache",
           torch.equal(generation.generate(model, prompt, 100),
                       generation.generate(model, prompt, 100, use_cache=False)))

# %% [markdown]
# What it saves: without a cache, $n$ new words re-run every prefix, $O(n^2)$ word evaluations costing $O(n^2 d^2 + n^3 d)$
# FLOPs; with it each word is evaluated once, $O(n d^2 + n^2 d)$ FLOPs, since attention over the cache still grows with $n$
# (ledger entry `001-19.14.1-recompute`). The price is memory,
# $2 N_{\text{layers}} d$ numbers per word (notebook 03 measures it; ledger entry `002-kv-40gb`).
#
# The arithmetic saved does not depend on the machine: PyTorch's `FlopCounterMode` counts it, the same on every run.

# %% tags=["nbval-check-output"]
def generation_flops(n_words, use_cache):
    with FlopCounterMode(display=False) as counter:
        generation.generate(model, prompt, n_words, use_cache=use_cache)
    return counter.get_total_flops()


flops = {use_cache: generation_flops(64, use_cache) for use_cache in (True, False)}
check_true("64 greedy words: with the cache, under a fifth of the FLOPs", 5 * flops[True] < flops[False])

# %% [markdown]
# How much time that saves depends on the machine and on what else it is running: a one-word step does so little
# arithmetic that fixed per-call costs weigh as much, and a busy machine can stall either run. Timed here:

# %%
lengths = pick(quick=[16, 64, 256], full=[16, 64, 256, 512])  # the last: where the cache clearly pays on any machine
timing = time_generation(model, prompt, lengths, repeats=pick(quick=1, full=2))
fig, ax = plt.subplots(figsize=(6, 3.4), layout="constrained")
plot_curves({"without cache": (lengths, timing["no_cache"]), "with KV cache": (lengths, timing["cache"])},
            "new words (greedy)", "seconds", f"generation time ({env.threads} CPU threads)", ax=ax, marker="o")
plt.show()
for n, tc, tn in zip(lengths, timing["cache"], timing["no_cache"]):
    print(f"{n:4d} words: {tc:6.2f} s with the cache, {tn:6.2f} s without ({tn / tc:4.1f}x)")
print(f"FLOPs at 64 words: {flops[False] / flops[True]:.1f}x fewer with the cache")
check_true("the same words with and without the cache, at every length", timing["identical"])

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8 · Exercises
#
# Each checker runs your function against a hidden reference and names the mistake it recognises; `ex.hint()`
# gives a hint (more specific each time), `ex.solution()` a worked solution. The four parts of Exercise 8.9 that
# section 3 ran with the package are yours: the evaluation, the training step, greedy generation, the verdict.
# The checkers run them on a tiny model; the cells after them, on section 3's Transformer. They take any model
# with the package's contract: `model(ids)` returns `(logits, loss)`, next-word scores `(B, T, V)` and, without
# targets, no loss.

# %%
import copy

from transformer_nb.exercises.lm import kv_step_ex, top_k_ex
from transformer_nb.exercises.lm_train import evaluate_ex, greedy_lm_ex, train_step_ex, verdict_ex

windows89 = ex_ids[: (ex_ids.numel() - 1) // 256 * 256 + 1].to(env.device)
x89, y89 = windows89[:-1].view(-1, 256), windows89[1:].view(-1, 256)  # consecutive windows of 256 tokens

# %% [markdown]
# ### Exercise 8.9: the perplexity of a model
#
# Write `evaluate_perplexity(model, batches)`: `batches` is a list of `(x, y)` pairs of `(B, T)` id tensors (the
# targets `y` are the inputs shifted by one; batches may differ in size) and `model(x)` returns `(logits, None)`,
# the scores `(B, T, V)`. Return the perplexity over all targets of all batches, as a float.

# %% tags=["exercise"]
def evaluate_perplexity(model, batches):
    raise NotImplementedError  # your code here


evaluate_ex.check(evaluate_perplexity)

# %%
evaluate = evaluate_ex.use(evaluate_perplexity)
if evaluate is evaluate_perplexity:
    n89 = pick(quick=32, full=len(x89))                                 # windows evaluated: all of them in full
    batches89 = [(x89[i:i + 16], y89[i:i + 16]) for i in range(0, n89, 16)]
    print(f"your evaluation: training perplexity of the Exercise 8.9 Transformer over {n89} windows: "
          f"{evaluate(ex_tf, batches89):.1f}")
else:
    print("(your evaluation of the Exercise 8.9 Transformer appears once evaluate_perplexity passes)")

# %% [markdown]
# ### Exercise 8.9: one training step
#
# Write `train_step(model, optimizer, x, y)`: one step of causal language-model training on the batch
# (`y` is `x` shifted by one), returning the batch's loss as a Python float. The checker runs two steps with
# AdamW on fixed batches and compares the losses and the parameters reached with the reference's.

# %% tags=["exercise"]
def train_step(model, optimizer, x, y):
    raise NotImplementedError  # your code here


train_step_ex.check(train_step)

# %%
step = train_step_ex.use(train_step)
if step is train_step:
    model89 = copy.deepcopy(ex_tf)
    opt89 = torch.optim.AdamW(model89.parameters(), lr=3e-4)
    losses = [step(model89, opt89, x89[:16], y89[:16]) for _ in range(3)]
    print("three of your steps on one batch, loss:", ", ".join(f"{v:.3f}" for v in losses))
    check_true("the loss falls on a batch it keeps seeing", losses[-1] < losses[0])
else:
    print("(three steps with your train_step run once it passes)")

# %% [markdown]
# ### Exercise 8.9: greedy generation
#
# Write `greedy_continue(model, ids, n_new)`: `ids` is a `(B, T)` prompt; append `n_new` tokens, each the most
# likely next token given everything so far, and return `(B, T + n_new)`.

# %% tags=["exercise"]
def greedy_continue(model, ids, n_new):
    raise NotImplementedError  # your code here


greedy_lm_ex.check(greedy_continue)

# %%
generate89 = greedy_lm_ex.use(greedy_continue)
if generate89 is greedy_continue:
    prompt = torch.as_tensor(ex_vocab.encode("The history of machine learning")).view(1, -1).to(env.device)
    print(ex_vocab.decode(generate89(ex_tf, prompt, 50)[0].tolist()))
else:
    print("(50 words from the prompt appear once greedy_continue passes)")

# %% [markdown]
# ### Exercise 8.9: the verdict
#
# Compare the two models of section 3 from this run's numbers, `ex89_results`. Write `verdict(results)` returning
# a dict: `"lower_perplexity"` and `"faster_per_epoch"`, each `"Transformer"` or `"LSTM"`, and `"comparable_size"`,
# True if the parameter counts are within 25% of each other. (A dict written by hand is accepted too, but a
# function follows the numbers when the run changes.) The checker judges it against this run's numbers.

# %%
ex89_results = {
    name: {"perplexity": ex_final[name], "seconds_per_epoch": ex_hist[name]["train_seconds"] / EX89_EPOCHS,
           "parameters": sum(p.numel() for p in lm_model.parameters())}
    for name, lm_model in (("Transformer", ex_tf), ("LSTM", ex_lstm))
}

# %% tags=["exercise"]
def verdict(results):
    raise NotImplementedError  # your code here


verdict_ex.check(verdict, ex89_results)

# %% [markdown]
# ### The distribution top-k sampling draws from
#
# Write `top_k_distribution(logits, k, temperature)`: `logits` is `(B, V)`; return `(B, V)` probabilities that are
# $\mathrm{softmax}(z/\tau)$ over the $k$ largest logits of each row and exactly 0 elsewhere. Sampling is then
# `torch.multinomial(probs, 1, generator=g)`.

# %% tags=["exercise"]
def top_k_distribution(logits, k, temperature):
    raise NotImplementedError  # your code here


top_k_ex.check(top_k_distribution)

# %% [markdown]
# ### One decoding step with a KV cache
#
# Write `kv_cache_step(q, k_new, v_new, k_cache, v_cache)`: `q`, `k_new`, `v_new` are `(B, h, 1, d_head)` for the
# newest word, the caches `(B, h, T, d_head)`. Return `(out, k_all, v_all)`: the newest word's attention output
# `(B, h, 1, d_head)` over all $T+1$ words, and the grown caches `(B, h, T+1, d_head)`.

# %% tags=["exercise"]
def kv_cache_step(q, k_new, v_new, k_cache, v_cache):
    raise NotImplementedError  # your code here


kv_step_ex.check(kv_cache_step)

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Appendix · The texts, checked
#
# Every claim of the five texts that belongs to this notebook, with its verdict from the claims ledger
# (`transformer_nb.claims`; notebook 13 lists them all); their checks run below. Two of them need this notebook's
# model and are checked on it after the report: 001 §19.14.1's cached attention applies **no mask**, which is
# right token by token, as its docstring says; a prompt passed in one call (several words at once) needs the
# mask, or every prompt word sees the words after it (`001-19.14.1-nomask`, imprecise); and its "reducing the total to $O(n^2)$ in key-value memory":
# the cache grows **linearly**, $2 \cdot N_{\text{layers}} \cdot d$ numbers per word (`001-19.14.1-memory`).

# %% tags=["nbval-check-output"]
from transformer_nb.claims import report

report(notebook="10")

# %% tags=["nbval-check-output"]
with torch.no_grad():
    blk = model.blocks.layers[0]
    h0 = blk.norm1(model.embed_tokens(data.valid[:25].view(1, 25).to(env.device)))
    causal = blk.self_attn(h0, is_causal=True, rope=model.rope)
    unmasked = blk.self_attn(h0, rope=model.rope)          # 001's CachedSelfAttention on a 25-word prompt
    s40, s80 = model.init_state(), model.init_state()
    model.hidden(data.valid[:40].view(1, 40).to(env.device), s40)
    model.hidden(data.valid[:80].view(1, 80).to(env.device), s80)
differs = (unmasked - causal).abs().amax(dim=(0, 2)) > 1e-4  # per prompt position
check_equal("prompt positions whose output changes without the mask (of 25)", int(differs.sum()), 24)
check_true("the last prompt word is unaffected (it may see every word anyway)", not bool(differs[-1]))
check_equal("cache bytes for 80 words / for 40 words", sum(c.nbytes() for c in s80) / sum(c.nbytes() for c in s40), 2.0)
check_equal("cache bytes per word = 2 (K, V) x layers x d_model x 4 bytes", sum(c.nbytes() for c in s40) // 40,
            2 * len(model.blocks.layers) * lm_recipe.RECIPE_MODEL.d_model * 4)
