# %% [markdown] slideshow={"slide_type": "slide"}
# # 11 · The LM lab (optional): what makes the recipe fast on a CPU
#
# [![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-nb/transformer-nb/blob/main/notebooks/11_lm_lab.ipynb)
#
# *Optional: an engineering lab after notebook 10; nothing later depends on it.* Notebook 10 trains a language
# model on all of WikiText-2 in about nine minutes of one CPU core (its training cell prints how long). On such a
# budget the architecture matters less than where the arithmetic goes and how each second is spent. This lab
# measures, with its own runs: where a training step's FLOPs go, why the output layer is a tied adaptive softmax,
# what bf16 buys, Muon against AdamW, the learning-rate search, what a cached decoding step spends its time on, and
# training on several processes with `torchrun` and DistributedDataParallel.
#
# **Serves:** 001 §19.11.3 (weight tying), §19.13 (mixed precision, optimisers), §19.14.1 (the KV cache); 000
# §8.6.2; Grave et al. 2017 (adaptive softmax), Baevski & Auli 2019 (adaptive input), Jordan et al. 2024 (Muon).
#
# **Runtime on 2 CPU cores:** quick ~25 s, full ~5 min.

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
import json
import os
import statistics
import subprocess
import sys
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

from transformer_nb import cache, check_equal, check_true, lm_compute, lm_recipe, pick, wikitext
from transformer_nb.core.generation import no_onednn
from transformer_nb.core.output_head import frequency_ranks
from transformer_nb.params import embedding_params, numel
from transformer_nb.plotting import plot_curves

BUDGET_S = pick(quick=1, full=20)            # seconds of training per variant in the equal-time comparison
COMPARE_EVAL = pick(quick=1_000, full=10_000)  # validation words each variant is scored on
TIMED_STEPS = pick(quick=2, full=8)          # training steps timed per variant (median)
DDP_STEPS = pick(quick=3, full=60)           # optimiser steps of each torchrun job

data = wikitext.load_wikitext2()
V, d = len(data.vocab), lm_recipe.RECIPE_MODEL.d_model
ranks = frequency_ranks(data.train, V)
print(f"CPU: {torch.backends.cpu.get_cpu_capability()}; torch threads: {env.threads}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · Where a training step's arithmetic goes
#
# `lm_compute.flops_per_token` counts the FLOPs of one training step (forward and backward) with PyTorch's FLOP
# counter and splits them into the **body** (embeddings and blocks) and the **output layer**. With a plain
# softmax over 33,278 words the output layer is a $d \times V$ product, forward and backward: $6 d V$ FLOPs per
# word, 25.6 MFLOP at $d = 128$, against about 2.4 MFLOP for two blocks over 128-word windows.

# %%
xb, yb = wikitext.random_windows(data.train, 8, 128, generator=torch.Generator().manual_seed(0))
SHAPES = {"d=128, 2 blocks": dict(), "d=256, 4 blocks": dict(d_model=256, d_ff=1024, n_layers=4)}
SHAPES = pick(quick={"d=128, 2 blocks": dict()}, full=SHAPES)  # the quick profile counts the recipe's size only
HEADS = {"full softmax": "full", "adaptive softmax": "adaptive", "tied adaptive (recipe)": "adaptive_tied"}
flops = {(s, h): lm_compute.flops_per_token(lm_recipe.build_model("transformer", V, ranks, **lm_recipe.HEAD_FIELDS[k], **kw), xb, yb)
         for s, kw in SHAPES.items() for h, k in HEADS.items()}
fig, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
labels = [f"{s}, {h}" for s, h in flops]
body, head = [f["body"] / 1e6 for f in flops.values()], [f["head"] / 1e6 for f in flops.values()]
ax.barh(labels, body, label="embeddings + blocks")
ax.barh(labels, head, left=body, label="output layer")
ax.set(xlabel="MFLOP per training word (forward + backward)", title="where the arithmetic goes")
ax.invert_yaxis()
ax.legend()
plt.show()
for (s, h), f in flops.items():
    print(f"{s}, {h:24s} {f['total'] / 1e6:6.1f} MFLOP per word, output layer {f['head_share']:.0%}")

# %% tags=["nbval-check-output"]
check_equal("full softmax: output-layer FLOPs per word = 6·d·V", flops["d=128, 2 blocks", "full softmax"]["head"],
            6 * d * V)
check_true("the adaptive softmax cuts the output layer's FLOPs by more than 5x",
           flops["d=128, 2 blocks", "adaptive softmax"]["head"] < flops["d=128, 2 blocks", "full softmax"]["head"] / 5)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · The tied adaptive softmax
#
# Word frequencies are very uneven, and the **adaptive softmax** (Grave et al., 2017;
# `nn.AdaptiveLogSoftmaxWithLoss`) uses it: the 2,000 most frequent words get a full $d$-wide softmax, the next
# 8,000 and the remaining 23,278 sit in two tail clusters reached through one extra "cluster" logit each, with
# projections to $d/4$ and $d/16$. It still gives exact, normalised probabilities for every word. **Tying** it to
# the input embedding (the "adaptive input" of Baevski & Auli, 2019; weight tying, 001 §19.11.3) makes the same
# weights serve as the embedding table: a frequent word's embedding is its row of the head, a rarer word's its
# cluster row mapped back to $d$. How much of the running text the head's 2,000 words cover:

# %%
coverage = torch.bincount(data.train, minlength=V).sort(descending=True).values.cumsum(0) / data.train.numel()
fig, ax = plt.subplots(figsize=(6.5, 3.2), layout="constrained")
ax.semilogx(np.arange(1, V + 1), coverage.numpy())
for cut in (2_000, 10_000):
    ax.axvline(cut, color="gray", ls=":")
    ax.annotate(f"{coverage[cut - 1]:.0%} of the text", (cut, float(coverage[cut - 1])), xytext=(4, -14),
                textcoords="offset points", fontsize=8)
ax.set(xlabel="the k most frequent words", ylabel="share of training words", title="word frequency is very uneven")
plt.show()
HEAD_KINDS = ("full", "tied", "adaptive", "adaptive_tied")
models = {h: lm_recipe.build_model("transformer", V, ranks, **lm_recipe.HEAD_FIELDS[h]) for h in HEAD_KINDS}
for h, m in models.items():
    print(f"{h:14s} {numel(m):>10,} parameters, of which the output layer {numel(m.head):>10,}")

# %% tags=["nbval-check-output"]
check_equal("full softmax: output layer = V·d weights + V biases", numel(models["full"].head),
            embedding_params(V, d) + V)
check_equal("tying saves the V·d embedding table (full softmax)", numel(models["full"]) - numel(models["tied"]),
            embedding_params(V, d))
check_equal("tying saves the V·d embedding table (adaptive softmax)",
            numel(models["adaptive"]) - numel(models["adaptive_tied"]), embedding_params(V, d))

# %% [markdown]
# FLOPs are not seconds. The next cell times training steps (median of several) for each output layer, in bf16
# and in fp32, with Muon and with AdamW alone, and reads each as **MFU**: the model FLOPs per second over the
# best `a @ b` rate this CPU reaches (measured here).

# %%
STEP_VARIANTS = {
    "recipe (tied adaptive, fp32, Muon)": (dict(), dict()),
    "bf16": (dict(), dict(bf16=True)),
    "AdamW only": (dict(), dict(optimizer="adamw", adamw_lr=None)),
    "untied adaptive": (lm_recipe.HEAD_FIELDS["adaptive"], dict()),
    "full softmax": (lm_recipe.HEAD_FIELDS["full"], dict()),
    "full softmax, bf16": (lm_recipe.HEAD_FIELDS["full"], dict(bf16=True)),
}
if env.profile == "quick":  # the quick profile times one
    STEP_VARIANTS = {k: v for k, v in STEP_VARIANTS.items() if k == "bf16"}
peak_s = pick(quick=0.2, full=1.5)
peak = {dt: lm_compute.matmul_peak_gflops(dt, seconds=peak_s) for dt in (torch.float32, torch.bfloat16)}
speed = {}
for label, (mkw, tkw) in STEP_VARIANTS.items():
    m = lm_recipe.build_model("transformer", V, ranks, **mkw)
    cfg = lm_recipe.recipe_config(steps=1, **tkw)
    f = lm_compute.flops_per_token(m, xb, yb, bf16=cfg.bf16)["total"]
    tps = lm_compute.time_steps(m, data.train, cfg, steps=TIMED_STEPS)
    speed[label] = (tps, lm_compute.mfu(f, tps, peak[torch.bfloat16 if cfg.bf16 else torch.float32]))
fig, ax = plt.subplots(figsize=(7.5, 3), layout="constrained")
ax.barh(list(speed), [s[0] for s in speed.values()])
for i, (tps, u) in enumerate(speed.values()):
    ax.annotate(f" {u:.0%} MFU", (tps, i), va="center", fontsize=8)
ax.set(xlabel="training words per second", title=f"training speed (torch threads: {env.threads})")
ax.set_xlim(0, 1.2 * max(s[0] for s in speed.values()))
ax.invert_yaxis()
plt.show()
print(", ".join(f"{dt} matmul peak {g:,.0f} GFLOP/s" for dt, g in peak.items()))

# %% [markdown]
# Throughput is half the story: a cheaper output layer or a faster optimiser may learn less per word. The fair
# comparison gives every variant **the same seconds of training** from the same seed and compares validation
# perplexity (the first words of the validation split, non-overlapping windows). `lm_recipe.compare` runs it and
# caches the result; the same runs serve sections 2–5 (bf16, Muon, the learning rates).

# %%
VARIANTS = {
    "recipe": (dict(), dict()),
    "recipe, again": (dict(), dict()),
    "untied adaptive": (lm_recipe.HEAD_FIELDS["adaptive"], dict()),
    "full softmax": (lm_recipe.HEAD_FIELDS["full"], dict()),
    "bf16": (dict(), dict(bf16=True)),
    "AdamW only": (dict(), dict(optimizer="adamw", adamw_lr=None)),
    "lr 1e-3": (dict(), dict(lr=1e-3, adamw_lr=3e-3)),
    "lr 1e-2": (dict(), dict(lr=1e-2, adamw_lr=3e-2)),
    "one rate 3e-3": (dict(), dict(adamw_lr=3e-3)),
}
if env.profile == "quick":  # the quick profile runs two, for a few seconds
    VARIANTS = {k: VARIANTS[k] for k in ("recipe", "lr 1e-2")}
runs = lm_recipe.compare(VARIANTS, data, BUDGET_S, eval_tokens=COMPARE_EVAL)
final = {k: h["val_ppl"][-1] for k, h in runs.items()}


def show_runs(labels, title):
    """Validation perplexity against training seconds for the chosen variants."""
    fig, ax = plt.subplots(figsize=(6.5, 3.4), layout="constrained")
    plot_curves({k: (runs[k]["seconds"], runs[k]["val_ppl"]) for k in labels if k in runs}, "training seconds",
                "validation perplexity", f"{title} ({BUDGET_S} s each)", ax=ax, logy=True)
    plt.show()
    for k in labels:
        if k in runs:
            print(f"{k:18s} {runs[k]['steps']:5d} steps, {runs[k]['tokens_seen'] / runs[k]['train_seconds']:7,.0f} "
                  f"words/s, validation perplexity {final[k]:7.1f}")


show_runs(["recipe", "recipe, again", "untied adaptive", "full softmax"], "the output layer")

# %% [markdown]
# Read it with the noise in mind. "recipe, again" is the recipe run a second time, from the same seed for the
# same seconds: the two differ only in how many steps the machine managed, and that difference is the noise any
# other difference must beat. A short budget also favours whatever learns fastest early.
#
# ## 3 · bf16
#
# Under `torch.autocast(device, dtype=torch.bfloat16)` the matrix products run in bfloat16 (8 bits of mantissa,
# float32's range) while reductions, the softmax and the loss stay in float32. Because bf16 has float32's range,
# no gradient scaler is needed (fp16 needs one). 001 §19.13.2 still writes `torch.cuda.amp.autocast` and
# `torch.cuda.amp.GradScaler`, which current PyTorch deprecates in favour of `torch.autocast` and
# `torch.amp.GradScaler("cuda")` (ledger entry `001-19.13.2-amp`). Whether it pays depends on the hardware: it
# halves the bytes moved, and CPUs with AVX-512 BF16 or AMX multiply in it natively.

# %%
recipe_model, seen = lm_recipe.build_model("transformer", V, ranks), {}
hook = recipe_model.blocks.layers[0].ff.register_forward_hook(lambda mod, inp, out: seen.update(ffn=out.dtype))
with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
    _, loss_bf16 = recipe_model(xb, yb)  # (logits, loss): the adaptive head gives no logits with targets
hook.remove()
with torch.no_grad():
    _, loss_fp32 = recipe_model(xb, yb)
print(f"loss on one batch: bf16 autocast {loss_bf16:.4f}, fp32 {loss_fp32:.4f}")
show_runs(["recipe", "bf16"], "fp32 (the recipe) against bf16")

# %% tags=["nbval-check-output"]
check_equal("inside autocast a block's feed-forward network computes in", seen["ffn"], torch.bfloat16)
check_equal("while the loss is computed in", loss_bf16.dtype, torch.float32)
check_true("the loss agrees with fp32 to 1 %", bool(abs(loss_bf16 / loss_fp32 - 1) < 0.01))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · Muon against AdamW
#
# AdamW scales each coordinate of the update separately. **Muon** (Jordan et al., 2024; `torch.optim.Muon`)
# treats a weight matrix as a matrix: it replaces the momentum of its gradient by the nearest (semi-)orthogonal
# matrix, computed with five Newton–Schulz iterations, so every direction of the matrix gets an update of about
# the same size and none is starved. It is meant for the hidden matrices (the blocks' weights); embeddings, the
# output layer, norms and biases stay with AdamW (`lm_training.make_optimizers`). One Muon step on a gradient
# with very unequal singular values:

# %%
grad = torch.randn(128, 512, generator=torch.Generator().manual_seed(0)) @ torch.diag(torch.logspace(0, -3, 512))
w = torch.nn.Parameter(torch.zeros(128, 512))
w.grad = grad.clone()
torch.optim.Muon([w], lr=1.0, weight_decay=0.0, adjust_lr_fn=None).step()
sv_grad, sv_step = torch.linalg.svdvals(grad), torch.linalg.svdvals(w.detach())
fig, ax = plt.subplots(figsize=(6, 3), layout="constrained")
ax.semilogy(sv_grad / sv_grad.max(), label="gradient")
ax.semilogy(sv_step / sv_step.max(), label="Muon's update")
ax.set(xlabel="singular value index", ylabel="relative to the largest", title="one Muon step: all directions alike")
ax.legend()
plt.show()
print(f"largest / smallest singular value: gradient {sv_grad.max() / sv_grad.min():.1f}, "
      f"Muon's update {sv_step.max() / sv_step.min():.2f}")
show_runs(["recipe", "AdamW only"], "Muon + AdamW against AdamW alone")

# %% tags=["nbval-check-output"]
check_true("the gradient's singular values span more than a factor 10", bool(sv_grad.max() / sv_grad.min() > 10))
check_true("Muon's update: all within a factor 2 of each other", bool(sv_step.max() / sv_step.min() < 2))

# %% [markdown]
# Muon's Newton–Schulz iterations cost arithmetic (the step timings of section 2); whether it wins at equal
# seconds is what the curves show.
#
# ## 5 · The learning-rate search
#
# The recipe's peak rates, $3\cdot10^{-3}$ for Muon's matrices and three times that for AdamW's half, came from
# a search like this one: the same budget, the rates scaled together, and one variant with a single shared rate.
# AdamW's half holds the tied embedding, whose rows are updated only when their word occurs.

# %%
LR = {"lr 1e-3": 1e-3, "recipe": 3e-3, "lr 1e-2": 1e-2}
fig, ax = plt.subplots(figsize=(5.5, 3.2), layout="constrained")
lrs = [k for k in LR if k in runs]
ax.semilogx([LR[k] for k in lrs], [final[k] for k in lrs], "o-", label="AdamW's rate = 3 × Muon's")
if "one rate 3e-3" in runs:
    ax.plot([3e-3], [final["one rate 3e-3"]], "s", label="one shared rate")
ax.set(xlabel="Muon's peak learning rate", ylabel="validation perplexity", title=f"learning rates ({BUDGET_S} s each)")
ax.legend(fontsize=8)
plt.show()
for k in sorted(final, key=final.get):
    print(f"{k:18s} {final[k]:7.1f}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6 · Profiling a cached decoding step
#
# Generation with the KV cache (notebook 10 §7) feeds one word per step. Such a step does very little
# arithmetic: per block two LayerNorms, a few matrix-vector products, a GELU, a rotation and one attention row.
# Where does its time go? The model is notebook 10's trained recipe if it is in the cache (the time of a step
# does not depend on the weights, so a fresh one does as well otherwise). First, a step split into the blocks
# and the output layer, with PyTorch's oneDNN kernels on and off (`generation.generate` switches them off):

# %%
name, model, config, _ = lm_recipe.run("transformer", data, lm_recipe.FULL_STEPS, device="cpu")
ok, msg, _ = cache.load(name, model.eval(), config)
print("notebook 10's weights" if ok else f"fresh weights ({msg})")
prompt = data.vocab.encode("The history of machine learning")[None]


def step_times(n=200):
    """Median ms of the blocks and of the greedy output layer over ``n`` cached greedy steps."""
    state, blocks, head = model.init_state(), [], []
    with torch.inference_mode(), model.head.lookup_table():
        h, state = model.hidden(prompt, state)
        for _ in range(n):
            t0 = time.perf_counter()
            nxt = model.head.greedy(h[:, -1])
            t1 = time.perf_counter()
            h, state = model.hidden(nxt[None], state)
            blocks.append(time.perf_counter() - t1)
            head.append(t1 - t0)
    return 1e3 * statistics.median(blocks), 1e3 * statistics.median(head)


n_steps = pick(quick=30, full=200)
with no_onednn():
    times = {"oneDNN off": step_times(n_steps)}
times["oneDNN on"] = step_times(n_steps)
fig, ax = plt.subplots(figsize=(6, 2.4), layout="constrained")
ax.barh(list(times), [t[0] for t in times.values()], label="2 blocks")
ax.barh(list(times), [t[1] for t in times.values()], left=[t[0] for t in times.values()], label="output layer (greedy)")
ax.set(xlabel="ms per generated word", title="one cached decoding step")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# Second, the operators inside the blocks, from PyTorch's profiler over a few cached steps:

# %%
with torch.inference_mode(), no_onednn(), model.head.lookup_table():
    state = model.init_state()
    h, state = model.hidden(prompt, state)
    nxt = model.head.greedy(h[:, -1])
    n_prof = pick(quick=20, full=100)
    with lm_compute.cpu_profile() as prof:
        for _ in range(n_prof):
            h, state = model.hidden(nxt[None], state)
ops = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
top = [e for e in ops if e.key.startswith("aten::")][:12]
fig, ax = plt.subplots(figsize=(7, 3.4), layout="constrained")
ax.barh([e.key for e in top], [e.self_cpu_time_total / n_prof for e in top])
ax.set(xlabel="µs per step (self time)", title="PyTorch operators in a cached step of the blocks")
ax.invert_yaxis()
plt.show()
calls = {e.key: e.count // n_prof for e in ops}
print(f"{sum(e.count for e in ops if e.key.startswith('aten::')) // n_prof} operator calls per step; "
      f"linear {calls.get('aten::linear', 0)}, scaled_dot_product_attention "
      f"{calls.get('aten::scaled_dot_product_attention', 0)}, layer_norm {calls.get('aten::layer_norm', 0)}")

# %% tags=["nbval-check-output"]
n_layers = lm_recipe.RECIPE_MODEL.n_layers
check_equal("attention calls per cached step = one per block", calls.get("aten::scaled_dot_product_attention"),
            n_layers)
check_equal("LayerNorms per cached step = two per block + the last", calls.get("aten::layer_norm"), 2 * n_layers + 1)

# %% [markdown]
# A cached step is a long chain of small operators, each paying a fixed cost for Python, dispatch and kernel
# set-up that rivals its arithmetic. So the one forward path (what notebook 10 teaches) keeps the chain short:
# `generate` checks its arguments once and no step checks them again, the KV cache is written in place, and RoPE
# turns the new queries and keys in place. `python -m transformer_nb.bench kvcache` times the cached steps
# against recomputing, with the same tokens.
#
# ## 7 · Several processes: `torchrun` and DistributedDataParallel
#
# With DistributedDataParallel every process holds a copy of the model and reads its own windows of the stream;
# after each backward pass the gradients are averaged across processes, so every copy takes the same step.
# The recipe's batch (8 windows) is the batch of all processes together, so $N$ processes read exactly what one
# reads. On a CPU the processes talk through gloo (on GPUs through NCCL, one GPU each):
#
# ```
# torchrun --standalone --nproc_per_node=2 -m transformer_nb.lm_ddp --threads 1
# ```
#
# trains notebook 10's recipe for its 4,600 steps; process 0 saves the model in the cache under the name
# `lm_recipe.run("transformer", data, 4600)` gives, which is the run notebook 10 loads or trains, so notebook
# 10 then loads it instead of training. Two cores can run one process with two threads or two processes with one
# thread each. Below, two short jobs measure both (the notebook runs `torchrun` as a subprocess; the last line of
# each job's output is a JSON summary):

# %%
def torchrun(nproc, threads, save):
    """Run a short lm_ddp job on the CPU; return its JSON summary."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
           "-m", "transformer_nb.lm_ddp", "--steps", str(DDP_STEPS), "--threads", str(threads),
           "--eval-tokens", "1000", "--final-eval-tokens", "2000", "--timeout", "120"] + ([] if save else ["--no-save"])
    env_cpu = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": str(threads)}
    out = subprocess.run(cmd, env=env_cpu, capture_output=True, text=True, timeout=900)
    if out.returncode:
        raise RuntimeError(f"torchrun failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


jobs = {"1 process × 2 threads": torchrun(1, 2, save=False), "2 processes × 1 thread": torchrun(2, 1, save=True)}
fig, ax = plt.subplots(figsize=(6, 2.2), layout="constrained")
ax.barh(list(jobs), [j["tokens_per_s"] for j in jobs.values()])
ax.set(xlabel="training words per second", title=f"two cores, {DDP_STEPS} steps of the recipe")
ax.invert_yaxis()
plt.show()
for label, j in jobs.items():
    print(f"{label}: {j['tokens_per_s']:,.0f} words/s ({j['steps']} steps, {j['train_s']} s of training, "
          f"{j['wall_s']} s in all), validation perplexity {j['val_ppl']}")
fast, slow = sorted(jobs, key=lambda k: jobs[k]["tokens_per_s"], reverse=True)
print(f"faster here: {fast}, by {jobs[fast]['tokens_per_s'] / jobs[slow]['tokens_per_s'] - 1:.0%}")

# %% [markdown]
# The second job saved its model. Notebook 10's loader accepts it when asked for the same recipe and the same
# steps (and, here, the same validation setting of the short job): it loads, it does not train.

# %%
name, loaded, config, train_fn = lm_recipe.run("transformer", data, DDP_STEPS, eval_tokens=1000, live=False,
                                               device="cpu")
loaded_hist, trained_now = cache.load_or_train(name, loaded, config, train_fn)
job = jobs["2 processes × 1 thread"]

# %% tags=["nbval-check-output"]
check_equal("both jobs ran on", sorted(j["world"] for j in jobs.values()), [1, 2])
check_true("the loader loaded torchrun's model instead of training", not trained_now)
check_true("its history is the 2-process job's (steps, words/s)",
           (loaded_hist["steps"], round(loaded_hist["tokens_per_s"], 1)) == (job["steps"], job["tokens_per_s"]))

# %% [markdown]
# The two jobs compute the same thing: with two processes each reads half of every batch, and the averaged
# gradients equal those of one process on the whole batch (`tests/test_ddp_lm.py` checks that two processes end
# with the parameters of one). Which layout is faster depends on the machine: one process runs every operator on
# two threads, which meet at the end of each operator; two one-thread processes meet once per step, to average
# gradients, but each computes with one core. The figure and the last line above show which won on the machine
# that ran this notebook (in the stored run, the development machine's two idle cores). Sharing the cores with
# other jobs hurts the two-thread process most (its threads wait for each other at the end of every operator), so
# on a busy machine it loses ground: run the cell again before drawing a conclusion.
#
# ## 8 · Things to try
#
# * Add a variant to `VARIANTS` in section 2 (`dict(positions="learned")`, `dict(n_layers=3)`, a batch of
#   `dict(batch_size=16, seq_len=64)`) and re-run: the comparison is cached per set of variants.
# * Set `BUDGET_S` to 360 and compare the ranking with the 20-second one: short budgets favour fast starters.
# * Run the full `torchrun` command above in a terminal, then notebook 10: it loads the model instead of training.

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Appendix · The texts, checked
#
# The claims of the five texts that belong to this lab, with their verdicts from the claims ledger
# (`transformer_nb.claims`; notebook 13 lists them all); their checks run below.

# %% tags=["nbval-check-output"]
from transformer_nb.claims import report

report(notebook="11")
