# %% [markdown] slideshow={"slide_type": "slide"}
# # 00 · Start here
#
# This is the companion to the Transformer chapter: eleven notebooks, one per section, each of which
# **builds an idea from scratch, checks it exactly, and then hands you exercises that check you back**.
# This first notebook shows how to use them:
#
# 1. how a notebook is organised (profiles, devices, check cells, widgets, exercises);
# 2. a map from every notebook to the sections of the five texts it accompanies, with its runtime;
# 3. a warm-up: the two operations attention is made of (softmax and the score matrix), with a widget
#    and two auto-checked exercises.
#
# **Serves:** all five texts: 000 (Ch. 8, the main spine), 001 (Ch. 19), 002 (article), 003 (lecture
# notes), 004 (blog post) — see the map below.
#
# **Runtime on 2 CPU cores:** quick ~10 s, full ~10 s (nothing here trains).

# %%
# %matplotlib inline
from transformer_nb import setup

env = setup()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · How the notebooks work
#
# **The first code cell** of every notebook calls `setup()`. It seeds every random generator (so a second
# run gives the same numbers), picks the device (a GPU when there is one, otherwise the CPU) and prints
# both, together with the **profile**:
#
# | profile | set by | what it does |
# |---|---|---|
# | `full` (default) | nothing, or `TNB_PROFILE=full` | the real thing: what you read in the stored outputs |
# | `quick` | `TNB_PROFILE=quick` | fewer training steps, smaller sweeps: what CI runs on every change |
#
# Training notebooks (09, 10) cache their trained weights (in `TNB_CACHE_DIR`, default
# `~/.cache/transformer_nb`), so running them a second time takes seconds. `TNB_RETRAIN=1` forces a
# retrain; a corrupt or outdated cache is reported and retrained, never a crash.
#
# **Check cells** are the cells whose output is a list of `✓` lines. Each one *asserts* a fact — a shape,
# an exact count, a value within a stated tolerance — and prints the expected value. CI re-runs every
# notebook and compares these outputs, so what you read in a check cell is true on every machine. When a
# text is wrong, a check cell proves the correct value, and the markdown above it says so plainly.
#
# **Widgets** are the sliders and boxes for exploring live (an instructor can drive them in a lecture).
# **Exercises** come last. You fill in a function, call `ex.check(your_function)`, and get either
# `✓` or a *specific* hint ("you normalised over the wrong axis"), never the answer. If you are stuck,
# `ex.show_solution()` reveals the reference on purpose.
#
# **Code you see** is either built from scratch in the notebook and then asserted equal to the package's
# version and to PyTorch's, or the package's own source shown with `show_source(...)`. For example, the
# helper that every check cell uses:

# %%
from transformer_nb import check_close, show_source

show_source(check_close)

# %% [markdown]
# A check that passes prints the *expected* value, not the computed one (float noise differs between
# machines, the fact does not). A check that fails stops the notebook with both values:

# %% tags=["nbval-check-output"]
import math

import torch
import torch.nn.functional as F

from transformer_nb import check_equal, check_raises, check_true

check_close("sqrt(64)", torch.tensor(64.0).sqrt(), 8.0)
check_raises(AssertionError, "expected 9", check_close, "sqrt(64)", torch.tensor(64.0).sqrt(), 9.0, 1e-6)

# %% [markdown]
# The environment this companion needs: PyTorch with the fused attention kernel and `nn.RMSNorm`
# (PyTorch ≥ 2.5, which also returns zeros rather than NaN for fully masked attention rows).

# %% tags=["nbval-check-output"]
major, minor = (int(x) for x in torch.__version__.split(".")[:2])
check_true("PyTorch >= 2.5", (major, minor) >= (2, 5))
check_true("F.scaled_dot_product_attention exists", hasattr(F, "scaled_dot_product_attention"))
check_true("nn.RMSNorm exists", hasattr(torch.nn, "RMSNorm"))
check_equal("device type is one of cpu/cuda/mps", env.device.type in ("cpu", "cuda", "mps"), True)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · The map: notebooks, texts, exercises, runtimes
#
# Everything in this section is *read from the notebooks themselves* (`transformer_nb.companion`): the
# titles, the "Serves" line of each opening cell, the exercises named in their headings, the check cells,
# figures and widgets in their stored outputs, and the runtimes recorded when they were last run. So the
# map cannot drift from the notebooks.
#
# The five texts:

# %%
from transformer_nb.companion import TEXTS, exercise_map, notebook_index

for key, title in TEXTS.items():
    print(f"{key}  {title}")

# %%
from IPython.display import Markdown, display

index = notebook_index()


def _fmt_s(s):
    return "–" if s is None else f"{s:.0f} s"


rows = ["| notebook | serves | chapter exercises | checks | figures | widgets | quick | full |",
        "|---|---|---|---:|---:|---:|---:|---:|"]
for nb in index:
    rows.append(f"| **{nb['title']}** | {nb['serves']} | {', '.join(nb['exercises']) or '–'} | "
                f"{nb['check_cells']} | {nb['figures']} | {nb['widgets']} | {_fmt_s(nb['quick_s'])} | "
                f"{_fmt_s(nb['full_s'])} |")
display(Markdown("\n".join(rows)))

# %% [markdown]
# The runtimes were measured on a 2-core CPU machine (the machine CI uses) — the quick profile under
# nbval, the full profile when the stored outputs were produced. On a laptop they are usually shorter;
# with a GPU, the two training notebooks are much shorter.
#
# Which texts does each notebook serve? Darker means the notebook cites more sections of that text.

# %%
import matplotlib.pyplot as plt
import numpy as np

from transformer_nb.plotting import heatmap

cover = np.array([[nb["serves"].count(t) for t in TEXTS] for nb in index], dtype=float)
ax = heatmap(cover, xlabels=[f"{k}" for k in TEXTS], ylabels=[nb["title"][:38] for nb in index],
             title="sections cited per text", cmap="Blues", colorbar=False, annotate=False)
ax.figure.set_size_inches(6.5, 5)
ax.set_xlabel("text (see the list above)")
plt.show()

# %%
names = [nb["name"][:2] for nb in index]
quick = [nb["quick_s"] or 0 for nb in index]
full = [nb["full_s"] or 0 for nb in index]
fig, ax = plt.subplots(figsize=(7, 3))
x = np.arange(len(index))
ax.bar(x - 0.2, quick, 0.4, label="quick profile (CI)")
ax.bar(x + 0.2, full, 0.4, label="full profile (stored outputs)")
ax.set_xticks(x, names)
ax.set_xlabel("notebook")
ax.set_ylabel("seconds on 2 CPU cores")
ax.set_yscale("log")
ax.legend()
ax.set_title("runtime per notebook")
plt.show()

# %% [markdown]
# What the map promises, checked. Every notebook of this release is present with its text twin (the
# `.py` file under `notebooks/py/` that you edit and diff; the `.ipynb` is generated from it), says which
# texts it serves, and proves its claims in at least five check cells.

# %% tags=["nbval-check-output"]
expected = ["00_start_here", "01_scaled_attention", "02_masking", "03_multihead_attention",
            "04_positional_encodings", "05_rope", "06_transformer_block", "07_parameter_counting",
            "08_architecture_variants", "09_reversal_translation", "10_wikitext_lm"]
check_equal("notebooks in book order", [nb["name"] for nb in index], expected)
others = [nb for nb in index if nb["name"] != "00_start_here"]   # this one is being run right now
check_true("every notebook has its jupytext twin", all(nb["has_twin"] for nb in index))
check_true("every other notebook is stored with outputs", all(nb["stored"] for nb in others))
check_true("every other notebook says which texts it serves", all(nb["texts"] for nb in others))
check_true("every other notebook has >= 5 check cells", all(nb["check_cells"] >= 5 for nb in others))
check_true("every other notebook has >= 2 figures and a widget",
           all(nb["figures"] >= 2 and nb["widgets"] >= 1 for nb in others))

# %% [markdown]
# Where each of the chapter's ten exercises (000, Exercises 8.1–8.10) is worked:

# %% tags=["nbval-check-output"]
where = exercise_map(index)
for ex, nbs in where.items():
    print(f"Exercise {ex:5s} → {', '.join(nbs)}")
check_equal("exercises present", [e for e in where if e.startswith("8.")],
            [f"8.{i}" for i in range(1, 11)])

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · Warm-up: softmax turns scores into weights
#
# Attention is built from two operations: a matrix of scores (every query against every key) and a
# softmax that turns each row of scores into weights that are positive and sum to 1:
#
# $$\mathrm{softmax}(s)_j = \frac{e^{s_j}}{\sum_{j'} e^{s_{j'}}}.$$
#
# Softmax is a *soft* argmax. Multiply the scores by a larger number and it hardens towards a one-hot
# vector on the largest score; multiply by a smaller one and it flattens towards uniform. This single
# fact is why notebook 01 divides scores by √d_k. Drag the **scale** slider:

# %%
from transformer_nb.widgets.warmup import SoftmaxTemperature

SoftmaxTemperature().show()

# %% [markdown]
# The same in one static figure: the entropy of the weights (in nats; `log n` is uniform, 0 is one-hot)
# against the scale, for 8 keys with fixed scores.

# %%
scores8 = torch.randn(8, generator=torch.Generator().manual_seed(0))
scales = torch.logspace(-1, 1.5, 60)
W = torch.softmax(scales[:, None] * scores8[None, :], dim=-1)
entropy = -(W * W.log()).sum(-1)
fig, ax = plt.subplots(figsize=(5.5, 3.2))
ax.plot(scales, entropy, label="entropy of softmax(scale · s)")
ax.axhline(math.log(8), color="0.5", ls="--", label="uniform: log 8")
ax.set_xscale("log")
ax.set_xlabel("scale")
ax.set_ylabel("entropy (nats)")
ax.legend()
plt.show()

# %% [markdown]
# Three exact facts about softmax, checked: its rows sum to 1; it does not change when the same number is
# added to a whole row (this is what makes the max-subtraction trick below safe); and a large scale makes
# it one-hot on the largest score.

# %% tags=["nbval-check-output"]
s = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]])
check_close("row sums", torch.softmax(s, -1).sum(-1), [1.0, 1.0], atol=1e-6)
check_close("shift invariance: max |softmax(s + 100) - softmax(s)|",
            (torch.softmax(s + 100, -1) - torch.softmax(s, -1)).abs().max(), 0.0, atol=1e-6)
check_close("softmax(1000 · s) is one-hot on the argmax", torch.softmax(1000 * s, -1),
            F.one_hot(s.argmax(-1), 3).float(), atol=1e-6)
check_equal("naive exp(1000) overflows float32", torch.tensor(1000.0).exp().isinf().item(), True)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · Exercises
#
# Both exercises are checked on several inputs against a reference. A wrong answer gets a hint aimed at
# the mistake you probably made; the reference itself is never printed unless you ask for it.
#
# ### Warm-up 1 · a softmax that never overflows
#
# Write `my_softmax(x)` for a tensor of any shape, normalising over the **last** axis. It must survive
# scores like `[1000, 999, 990]`, where a naive `exp` overflows.

# %%
from transformer_nb.exercises.warmup import SCORES, SOFTMAX


def my_softmax(x):
    # your code here
    raise NotImplementedError


SOFTMAX.check(my_softmax)

# %% [markdown]
# This is what a typical mistake looks like — a naive softmax that forgets the max subtraction. The
# checker recognises it and says what to change:

# %%
def naive_softmax(x):
    return x.exp() / x.exp().sum(dim=-1, keepdim=True)


result = SOFTMAX.check(naive_softmax)
assert not result.passed and "max" in result.message

# %% [markdown]
# ### Warm-up 2 · the score matrix
#
# Write `my_scores(q, k)` that returns every query–key dot product for a batch:
# `q: (B, T_q, d)`, `k: (B, T_k, d)` → `(B, T_q, T_k)`, where entry `[b, i, j]` is `q[b, i] · k[b, j]`.

# %%
def my_scores(q, k):
    # your code here
    raise NotImplementedError


SCORES.check(my_scores)

# %% [markdown]
# A typical mistake — the product taken the wrong way round, which gives keys along the rows:

# %%
result = SCORES.check(lambda q, k: k @ q.transpose(-2, -1))
assert not result.passed and "K·Qᵀ" in result.message

# %% [markdown]
# Stuck? `SOFTMAX.show_solution()` and `SCORES.show_solution()` reveal the reference solutions.
#
# **Next:** notebook 01 turns these two operations into scaled dot-product attention and derives why the
# scores are divided by √d_k.
