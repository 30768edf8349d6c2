# %% [markdown] slideshow={"slide_type": "slide"}
# # 13 · The claims ledger: what to trust in each text
#
# [![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-nb/transformer-nb/blob/main/notebooks/13_claims_ledger.ipynb)
#
# The five texts this companion accompanies make a few hundred checkable statements: numbers, shapes,
# parameter and memory counts, complexities, benchmark figures, attributions. Most are right; some are wrong;
# some are defensible but loose; a few only look wrong because the extracted text lost its symbols. This notebook is the **single place** where every such statement is judged,
# with the value we computed or the primary source we read (the paper, the original code). The other notebooks
# cite it by id instead of repeating a refutation. Read it to know which parts of each text you can trust, and
# how each verdict was reached.
#
# **Serves:** all five texts: 000 §8.1–8.6 and Exercises 8.1–8.10; 001 §19.1–19.15; 002, 003 and 004 in full.
#
# **Runtime on 2 CPU cores:** quick ~5 s, full ~5 s (nothing trains; every check is a small computation).

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
# ## 1 · How to read an entry
#
# Each entry of the ledger (`transformer_nb.claims`) records one statement of one text and one verdict. The
# verdicts form a scale, and every entry follows it:
#
# | verdict | meaning | what the entry adds |
# |---|---|---|
# | **confirmed** | the statement holds | the value we computed, or the source that states it |
# | **wrong** | the text states something false | the **correct** value, and how we obtained it |
# | **imprecise** | defensible wording that the ledger states more exactly | the statement made **exact** |
# | **not checkable here** | neither code nor an available primary source settles it | **why** |
# | **extraction artefact** | the text as extracted lost symbols, so it reads wrongly; what the author wrote holds | the statement **restored** |
#
# "Wrong" is kept apart from "imprecise": *"only the new token's Q needs to be computed"* (004 §13.2) is wrong,
# since the new token's key and value must be computed too; *"Q_m·K_n = f(m − n)"* (004 §4.2, of RoPE) is
# imprecise: the positions enter only through m − n, but the score is a function of q and k as well. An extraction
# artefact is neither: 000 §8.2.5 reads "q₁ᵀk₁ = 1 + 0 + 1 = 1" only because the products 1·1 + 0·0 + 1·0 lost
# their symbols. A correction must itself be right, so every verdict against a text was checked against the
# primary source first: the paper, the original code (tensor2tensor), the authors' repositories, the model papers and their
# released configurations. Where code can settle a statement, the entry carries a small **check**: a function, or
# formulas over the text's numbers (`values`); the test suite runs every one of them, and so does the appendix of
# this notebook. Where a notebook's own check cell already asserts it, the entry names that cell (`nb_check`).
#
# Figures that a notebook measures (perplexities, timings, accuracies) are never copied into the ledger: an
# entry names the figure, and the ledger reads it from that notebook's stored outputs each time it prints, so
# the ledger always quotes what the notebooks last showed. Where the notebooks are not stored next to the
# package (an installed wheel, Colab), the entry says which notebook holds the figure instead.
#
# One entry, printed the way the notebooks cite it:

# %%
from IPython.display import Markdown, display

from transformer_nb import claims as ledger

for status, meaning in ledger.SCALE.items():  # the scale, as the package states it
    print(f"{status:>20}: {meaning}")
print()
print(ledger.cite("000-8.2.5-q1k1"))
print(ledger.cite("004-13.2-kv-only-q"))
print(ledger.cite("001-19.10-learns"))  # its figures come from notebook 09's stored outputs

# %% [markdown]
# The same from a terminal: `python -m transformer_nb.claims` prints the whole ledger as a table,
# `--text 002 --status wrong` filters it, `--notebook 01 --report` prints one notebook's entries with their
# checks run, `--json` gives every field of every entry. Entries that would give away a chapter exercise's answer
# print "(withheld …)" everywhere until you ask with `--reveal` (or `reveal=True` in Python).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · The counts
#
# How many statements of each text we could check, and how they fared:

# %% tags=["nbval-check-output"]
counts = ledger.counts()
width = max(len(s) for s in ledger.STATUSES)
print(f"{'text':<5}" + "".join(f"{s:>{width + 2}}" for s in ledger.STATUSES) + f"{'total':>8}")
for text, row in counts.items():
    print(f"{text:<5}" + "".join(f"{row[s]:>{width + 2}}" for s in ledger.STATUSES) + f"{sum(row.values()):>8}")
total = {s: sum(row[s] for row in counts.values()) for s in ledger.STATUSES}
print(f"{'all':<5}" + "".join(f"{total[s]:>{width + 2}}" for s in ledger.STATUSES) + f"{len(ledger.LEDGER):>8}")
print(f"\nentries with a check function: {sum(bool(c.check) for c in ledger.LEDGER)}")
assert len(ledger.LEDGER) >= 80

# %%
import matplotlib.pyplot as plt
import numpy as np

colors = {"confirmed": "tab:green", "imprecise": "tab:orange", "wrong": "tab:red", "not checkable here": "0.7",
          "extraction artefact": "tab:blue"}
order = ["confirmed", "imprecise", "wrong", "not checkable here", "extraction artefact"]
fig, ax = plt.subplots(figsize=(7, 3.2), layout="constrained")
left = np.zeros(len(ledger.TEXTS))
for status in order:
    n = np.array([counts[t][status] for t in ledger.TEXTS])
    ax.barh(ledger.TEXTS, n, left=left, color=colors[status], label=status)
    left += n
ax.invert_yaxis()
ax.set(xlabel="statements checked", ylabel="text", title="Verdicts per text")
ax.legend(fontsize=8, loc="lower right")
plt.show()

# %% [markdown]
# Every text is mostly right. The errors cluster in a few kinds of statement: hand-computed worked examples
# (004 §5.2), back-of-the-envelope memory figures (the KV-cache sizes of 002 and 004), attributions and history
# (which model scored 28.4 BLEU, who pruned which heads, which layer holds a head, who drew which loss surface),
# statements about other models' architectures (GQA, SwiGLU, RMSNorm), and claims about what an architectural
# change saves (a KV cache still computes the new token's key and value; grouped-query attention shrinks the
# cache, not the quadratic cost). The mathematics itself (variances, masks, rotations, parameter formulas) holds
# almost everywhere.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · What to trust, text by text
#
# For each text: what holds, in a sentence; then, read from the ledger (so none is left out), every statement it
# gets **wrong**, with the correct value; then a table of the entries that are imprecise, not checkable here or
# extraction artefacts. The confirmed ones, with their values and sources, are in the appendix.

# %%
def what_to_distrust(text):
    """The text's 'wrong' entries as a list (one cited line each), then its other unconfirmed entries as a table."""
    wrong = ledger.claims(text=text, status=ledger.WRONG)
    rest = [c for c in ledger.claims(text=text) if c.status not in (ledger.CONFIRMED, ledger.WRONG)]
    lines = [f"**Wrong ({len(wrong)}):**", ""] + [f"- {ledger.cite(c.id)}" for c in wrong]
    lines += ["", f"**Imprecise, not checkable here, or extraction artefacts ({len(rest)}):**", ""]
    display(Markdown("\n".join(lines) + "\n" + ledger.markdown(rest)))


# %% [markdown]
# ### 000 · Chapter 8 (the main spine)
#
# Trust its derivations: the variance argument for 1/√d_k, the causal mask, the rotation behind sinusoidal
# encodings and RoPE, the parameter formulas (4d², 2·d·d_ff, two-thirds of the block in the FFN). Read the
# worked example of §8.2.5 knowing that the extraction lost symbols there (its arithmetic holds once they are
# restored). Where it errs:

# %%
what_to_distrust("000")

# %% [markdown]
# ### 001 · Chapter 19 (PyTorch from scratch)
#
# Trust its building blocks and its parameter table (63M, and the paper's 65M/213M). Its label-smoothing rule
# (ε/(V − 1) on the wrong classes) is exactly the original implementation's; PyTorch's
# `F.cross_entropy(label_smoothing=ε)` uses ε/V instead, so the two losses differ slightly. Where it errs:

# %%
what_to_distrust("001")

# %% [markdown]
# ### 002 · Transformers and Attention (article)
#
# Trust its formulas and its 12d² table (GPT-3: 174B from the blocks, 175B with embeddings), and its 2–4×
# FlashAttention figure, which is the authors' own for the attention computation. Where it errs:

# %%
what_to_distrust("002")

# %% [markdown]
# ### 003 · The Transformer (lecture notes)
#
# Trust its structure and model sizes. Where it errs:

# %%
what_to_distrust("003")

# %% [markdown]
# ### 004 · A Deep Dive (blog post)
#
# Trust its explanations and shape walkthroughs; its 128K row of the memory table is right (for 128,000 tokens,
# in the binary units of the other rows). Where it errs:

# %%
what_to_distrust("004")

# %% [markdown]
# ### Browse the ledger
#
# Pick a text, a verdict and a notebook; the table shows the matching entries (the drawing needs a live kernel;
# a stored notebook shows the first state).

# %%
import ipywidgets as widgets


def browse(text, status, notebook):
    """Show the entries matching the three choices ('all' keeps everything) as a Markdown table."""
    rows = ledger.claims(text=None if text == "all" else text, status=None if status == "all" else status,
                         notebook=None if notebook == "all" else notebook)
    display(Markdown(f"**{len(rows)} entries**\n\n" + ledger.markdown(rows) if rows else "no entries"))


_ = widgets.interact(browse, text=["all", *ledger.TEXTS], status=["wrong", "imprecise", "not checkable here",
                                                                  "extraction artefact", "confirmed", "all"],
                     notebook=["all", *sorted({c.notebook for c in ledger.LEDGER})])

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · How the notebooks use the ledger
#
# Every entry belongs to one notebook (00–11), whose collapsed appendix calls `report(notebook=...)`: it prints
# that notebook's entries and runs their checks, so a refuted number is refuted once, in one place, and tested.
# Prose elsewhere quotes `cite(id)`. Where the entries land:

# %%
notebooks = sorted({c.notebook for c in ledger.LEDGER})
fig, ax = plt.subplots(figsize=(7, 3.2), layout="constrained")
bottom = np.zeros(len(notebooks))
for status in order:
    n = np.array([len(ledger.claims(notebook=nb, status=status)) for nb in notebooks])
    ax.bar(notebooks, n, bottom=bottom, color=colors[status], label=status)
    bottom += n
ax.set(xlabel="notebook whose appendix the entry belongs to", ylabel="entries", title="Where each entry is cited")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# For example, the wrong statements in notebook 01's appendix:

# %% tags=["nbval-check-output"]
ledger.report(notebook="01", status=ledger.WRONG)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# 1. **Reproduce a verdict.** Pick one *wrong* entry of 004 (for example `004-5.2-scores`) and recompute its
#    value in a new cell with plain `torch`, without looking at its check. Then compare with
#    `ledger.get("004-5.2-scores").args`: the text's Q and K, and the formulas its check evaluates.
# 2. **Wrong or imprecise?** 000 §8.2.3 says the scaled scores "stay in [−3, +3]"; 004 §5.3 says the standard
#    deviation for head_dim 768 is 27. Decide for each whether it is wrong or imprecise, and write the exact
#    statement. Then read `ledger.get("000-8.2.3-range3")` and `ledger.get("004-5.3-std768")`.
# 3. **Audit a new claim.** 002 says FlashAttention gives "2–4× wall-clock speed-up over standard PyTorch
#    attention". Find what the FlashAttention paper's abstract and the authors' repository report, for what
#    computation and which sequence lengths, and say which verdict you would give (the ledger's is in
#    `ledger.cite("002-flash-speed")`).

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Appendix · The texts, checked
#
# Every entry of every text, with its value or correction and its source; each entry with a check function
# has it run here (✓). A failing check stops the notebook.

# %% tags=["nbval-check-output"]
ledger.report(text="000")

# %% tags=["nbval-check-output"]
ledger.report(text="001")

# %% tags=["nbval-check-output"]
ledger.report(text="002")

# %% tags=["nbval-check-output"]
ledger.report(text="003")

# %% tags=["nbval-check-output"]
ledger.report(text="004")
