# %% [markdown] slideshow={"slide_type": "slide"}
# # 00 · Start here
#
# [![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-nb/transformer-nb/blob/main/notebooks/00_start_here.ipynb)
#
# A textbook chapter explains the Transformer; a notebook lets you take it apart. This companion follows the
# chapter on the Transformer section by section: each notebook **builds one idea from scratch, checks it
# exactly, and then hands you exercises that check you back**. This first notebook shows how the companion
# works (profiles, check cells, exercises, Colab, the lecture and ledger notebooks), gives a map of all
# notebooks read from the notebooks themselves, and warms up with the two operations attention is made of.
#
# **Serves:** all five texts: 000 (Ch. 8, the main spine, Exercises 8.1–8.10), 001 (Ch. 19), 002 (article),
# 003 (lecture notes), 004 (blog post); the map below says which notebook serves which sections.
#
# **Runtime on 2 CPU cores:** quick ~5 s, full ~5 s.

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

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · How the companion works
#
# **Open in Colab.** The badge under each notebook's title opens it in Colab. There, the first code cell (the
# *setup cell*) notices that it runs in Colab and first installs this companion with pip, pinning torch to
# the version Colab already has (Colab's torch and its GPU build are never replaced), and downloads
# WikiText-2 once (13 MB, checked by sha256) for the notebooks that train language models. Everywhere else it
# installs and downloads nothing. Then, everywhere, it runs `%matplotlib inline` and `env = setup()`, which
# seeds every random generator (a second run gives the same numbers), picks the device (a GPU when there is
# one) and prints both with the **profile**:
#
# | profile | set by | what it does |
# |---|---|---|
# | `full` (default) | nothing, or `TNB_PROFILE=full` | the real runs: what the stored outputs show |
# | `quick` | `TNB_PROFILE=quick` | fewer training steps and smaller sweeps: what CI runs, and a slow laptop |
#
# The notebooks that train (09, 10, 12) keep their trained weights in a cache (`TNB_CACHE_DIR`, default
# `~/.cache/transformer_nb`), so a second run takes seconds; `TNB_RETRAIN=1` forces a retrain, and a damaged
# or outdated cache is reported and retrained, never loaded.
#
# **Check cells** print a list of `✓` lines. Each one *asserts* a fact (a shape, an exact count, a value
# within a stated tolerance) and prints the **expected** value, because float noise differs between machines
# and the fact does not. CI re-runs every notebook and compares these outputs. A check that fails stops the
# notebook with both values:

# %% tags=["nbval-check-output"]
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from transformer_nb import check_close, check_equal, check_raises, check_true

check_close("sqrt(64)", torch.tensor(64.0).sqrt(), 8.0)
_ = check_raises(AssertionError, "expected 9", check_close, "sqrt(64)", torch.tensor(64.0).sqrt(), 9.0, 1e-6)

# %% [markdown]
# **Code you see** is built from scratch in the notebook and then checked equal to the package's version and
# to PyTorch's, or it is the package's own source, shown with `show_source(...)`. Once an idea is taught, the
# notebooks use the library for it (`F.scaled_dot_product_attention`, `nn.LayerNorm`, ...).
#
# **Widgets** are sliders and buttons to explore an idea live; a stored notebook shows their first state.
#
# **Exercises** come at the end of each notebook's main path. A stub cell holds a function whose body is
# `raise NotImplementedError`; replace that line with your code and run the cell:
#
# - `some_ex.check(your_function)` runs it on several cases against a hidden reference and prints `✓`, or a
#   first nudge that names the symptom ("the weights of each query must sum to 1"), never the answer;
# - `some_ex.hint()` prints a hint, more specific each time you call it;
# - `some_ex.solution()` shows a worked solution: call it after you have tried;
# - the cells after an exercise run either way: with your function once it passes, otherwise with a hidden
#   reference, and they say which (`fn = some_ex.use(your_function)`).
#
# Worked verifications that would give an answer away sit in **solution cells** right after the exercise,
# collapsed and labelled "Solution · Exercise 8.N". They run only once your answer passes (or after you called
# `some_ex.solution()`); until then they say so and show nothing, even after Run All. Nothing before an
# exercise shows its answer.
#
# **The texts, checked.** Where one of the five texts states something checkable (a number, a shape, a
# count, a claim about a model), the companion checks it. Those verdicts stay out of the lessons: each
# notebook ends with a collapsed **Appendix · The texts, checked**, and all of them (each confirmed,
# wrong with the correct value, imprecise with the exact statement, or not checkable here) are in one
# ledger, `transformer_nb.claims`, rendered by notebook **13_claims_ledger** (in a terminal:
# `python -m transformer_nb.claims`). A notebook cites a claim by its id, such as `000-8.2.5-expsum`.
#
# **Beyond the chapter.** **11_lm_lab** is an optional engineering lab after notebook 10: where the compute
# of a language model goes on a CPU, and what makes it faster. **12_capstone** is where you build a whole
# Transformer language model from your own code (attention, the causal mask, multi-head attention, a Pre-LN
# block) and train it on WikiText-2. **14_lecture** is for instructors: every widget of the companion, ready to
# drive, in book order; `make lecture` trains its models once, and from then on it only loads them.
#
# This companion needs PyTorch ≥ 2.5 (the fused attention kernel, `nn.RMSNorm`, and zeros rather than NaN for
# fully masked attention rows):

# %% tags=["nbval-check-output"]
check_true("PyTorch >= 2.5", tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 5))
check_true("F.scaled_dot_product_attention exists", hasattr(F, "scaled_dot_product_attention"))
check_true("nn.RMSNorm exists", hasattr(torch.nn, "RMSNorm"))
check_true("the device is a cpu, cuda or mps device", env.device.type in ("cpu", "cuda", "mps"))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · The map
#
# Everything in this section is **read**, not typed: the notebooks' titles, the "Serves" line of their
# opening cell and the chapter exercises named in their headings come from the notebooks themselves
# (`transformer_nb.companion`), and the runtimes from `notebooks/runtimes.json`, measured on 2 CPU cores (the
# quick profile under CI's test run, the full one when the stored outputs were made). A notebook whose stored
# version does not exist yet is listed as in progress. (In Colab only this notebook is present: there the map
# comes from the copy shipped inside the package, which every refresh of a notebook rewrites.)

# %%
import importlib
import re

from IPython.display import Markdown, display

from transformer_nb.companion import TEXTS, exercise_map, format_runtime, notebook_index

index = notebook_index()
print("\n".join(f"{key}  {title}" for key, title in TEXTS.items()))
rows = ["| notebook | serves | chapter exercises | quick | full |", "|---|---|---|---|---|"]
for nb in index:
    title = nb["title"] if nb["stored"] else f"{nb['name']} (in progress)"
    quick, full = (format_runtime(nb[k]) if nb[k] is not None else "–" for k in ("quick_s", "full_s"))
    rows.append(f"| **{title}** | {nb['serves'] or '–'} | {', '.join(nb['exercises']) or '–'} | {quick} | {full} |")
display(Markdown("\n".join(rows) if index else "*No notebooks folder here: see the README's table.*"))

# %% [markdown]
# **The chapter's ten exercises, all auto-checked.** Each of Exercises 8.1–8.10 (000) has checkers in the
# package, `transformer_nb.exercises`, and is worked in one notebook. The list below is read from the
# checkers themselves (their titles and the notebook each module names); the cell after it checks that each
# of those notebooks does name the exercise in a heading.

# %% tags=["nbval-check-output"]
from transformer_nb.exercises import all_exercises

checkers = {}  # "8.N" -> [(notebook, checker)]
for key, ex in all_exercises().items():
    number = re.match(r"Exercise (8\.\d+)\b", ex.title)
    if number:
        notebook = importlib.import_module(f"transformer_nb.exercises.{key.split('.')[0]}").NOTEBOOK
        checkers.setdefault(number.group(1), []).append((notebook, ex.name))
for n in range(1, 11):
    found = checkers.get(f"8.{n}", [])
    where = sorted({nb for nb, _ in found})
    print(f"Exercise 8.{n:<2} → {', '.join(where)}: {len(found)} checker(s), {', '.join(sorted(c for _, c in found))}")
numbers = sorted(checkers, key=lambda e: int(e[2:]))
check_equal("chapter exercises with a checker", numbers, [f"8.{n}" for n in range(1, 11)])
check_true("each is worked in exactly one notebook", all(len({nb for nb, _ in c}) == 1 for c in checkers.values()))

# %%
if index:  # a checkout: the notebooks agree with the map and with the checkers
    names = [nb["name"] for nb in index]
    headings = exercise_map(index)
    assert names == sorted(names) and len({n[:2] for n in names}) == len(names), names
    assert all(nb["has_twin"] for nb in index), "a stored notebook without its twin in notebooks/py/"
    assert all(nb["texts"] for nb in index if nb["stored"]), "a stored notebook without a Serves line"
    for ex, found in checkers.items():
        assert found[0][0] in headings.get(ex, []), (ex, headings.get(ex), found)  # (12 reuses some of them)
    print(f"{len(index)} notebooks ({sum(nb['stored'] for nb in index)} stored); the exercises are where the map says.")
else:
    print("No map here (no notebooks folder and no copy in the package): nothing to compare it with.")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · Warm-up: softmax turns scores into weights
#
# Attention is built from two operations: a matrix of scores (every query against every key) and a softmax
# that turns each row of scores into weights that are positive and sum to 1:
#
# $$\mathrm{softmax}(s)_j = \frac{e^{s_j}}{\sum_{j'} e^{s_{j'}}}.$$
#
# Softmax is a *soft* argmax. Multiply the scores by a larger number and it hardens towards a one-hot vector
# on the largest score; multiply by a smaller one and it flattens towards uniform. This one fact is why
# notebook 01 divides the scores by √d_k. Drag the **scale** slider:

# %%
from transformer_nb.widgets.warmup import SoftmaxTemperature

SoftmaxTemperature().show()

# %% [markdown]
# The same in one static figure: the entropy of the weights (in nats; $\ln n$ is uniform, 0 is one-hot)
# against the scale, for 8 keys with fixed scores.

# %%
scores8 = torch.randn(8, generator=torch.Generator().manual_seed(0))
scales = torch.logspace(-1, 1.5, 60)
W = torch.softmax(scales[:, None] * scores8[None, :], dim=-1)
fig, ax = plt.subplots(figsize=(5.5, 3.2))
ax.plot(scales, -(W * W.log()).sum(-1), label="entropy of softmax(scale · s)")
ax.axhline(math.log(8), color="0.5", ls="--", label="uniform: ln 8")
ax.set_xscale("log")
ax.set_xlabel("scale")
ax.set_ylabel("entropy (nats)")
ax.legend()
plt.show()

# %% [markdown]
# Three exact facts about softmax: its rows sum to 1; it does not change when the same number is added to a
# whole row; and a large scale makes it one-hot on the largest score.

# %% tags=["nbval-check-output"]
s = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]])
check_close("row sums", torch.softmax(s, -1).sum(-1), [1.0, 1.0], atol=1e-6)
shifted = torch.softmax(s + 100, -1) - torch.softmax(s, -1)
check_close("shift invariance: max |softmax(s + 100) - softmax(s)|", shifted.abs().max(), 0.0, atol=1e-6)
one_hot = F.one_hot(s.argmax(-1), 3).float()
check_close("softmax(1000 · s) is one-hot on the argmax", torch.softmax(1000 * s, -1), one_hot)
check_true("exp(1000) overflows float32 to inf", torch.tensor(1000.0).exp().isinf())

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · Exercises
#
# Every exercise in this companion works the same way:
#
# 1. a cell gives a **stub**: a function whose body is `raise NotImplementedError`. Replace that line with
#    your code and run the cell. Its last line, `some_ex.check(your_function)`, runs your function on several
#    inputs against a hidden reference and prints `✓`, or a first nudge that names what went wrong;
# 2. stuck? `some_ex.hint()` prints a hint; call it again for a more specific one;
# 3. `some_ex.solution()` shows a worked solution. Call it only after you have tried.
#
# Cells after an exercise run either way: with your function once it passes, otherwise with a hidden
# reference (they say which).
#
# ### Warm-up 1 · a softmax that never overflows
#
# Write `my_softmax(x)` for a tensor of any shape, normalising over the **last** axis. It must survive
# scores like `[1000, 999, 990]`, where a naive `exp` overflows.

# %%
from transformer_nb.exercises.warmup import scores_ex, softmax_ex


# %% tags=["exercise"]
def my_softmax(x):
    raise NotImplementedError  # your code here


softmax_ex.check(my_softmax)

# %% [markdown]
# Once it passes, the next cell uses your softmax where a naive one fails: on a row of huge scores.

# %%
softmax = softmax_ex.use(my_softmax)
huge = torch.tensor([[1000.0, 999.0, 990.0]])
check_true("no NaN or inf for scores around 1000", bool(torch.isfinite(softmax(huge)).all()))
check_close("the row sums to 1", softmax(huge).sum(), 1.0, atol=1e-6)

# %% [markdown]
# ### Warm-up 2 · the score matrix
#
# Write `my_scores(q, k)` that returns every query–key dot product for a batch:
# `q: (B, T_q, d)`, `k: (B, T_k, d)` → `(B, T_q, T_k)`, where entry `[b, i, j]` is `q[b, i] · k[b, j]`.

# %% tags=["exercise"]
def my_scores(q, k):
    raise NotImplementedError  # your code here


scores_ex.check(my_scores)

# %% [markdown]
# ### What the checkers recognise (for instructors)
#
# Every checker knows the typical mistakes of its exercise, each with its own message (a mistake it does not
# know gets the symptom instead: a shape, a row that does not sum to 1, ...). The table counts them per
# exercise; `catalogue("mha_ex")` prints one checker's messages. They describe mistakes, never the answer.

# %%
from transformer_nb.exercises import catalogue

catalogue()

# %% [markdown]
# **Next:** notebook 01 turns these two operations into scaled dot-product attention and shows why the
# scores are divided by √d_k.

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Appendix · The texts, checked
#
# The few claims of the texts that concern the Transformer's history (who built it, when, what followed),
# with their verdicts from the claims ledger; the other claims belong to the notebooks that teach their topic,
# and all of them are in notebook 13.

# %% tags=["nbval-check-output"]
from transformer_nb.claims import report

report(notebook="00")
