# %% [markdown] slideshow={"slide_type": "slide"}
# # 14 · Lecture mode: every widget, ready to drive
#
# [![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-nb/transformer-nb/blob/main/notebooks/14_lecture.ipynb)
#
# Every widget of the companion on one page, in book order, for a lecture: run all cells and drive them
# live. Nothing here trains. The models of notebooks 09, 10 and 12 come from the package's cache: for each widget
# the best one there, the full-profile model when you have run that notebook in the full profile, else a small
# lecture-sized one, and the cell says which it shows. `make lecture` trains, once, the small ones that are
# missing (a few minutes on 2 CPU cores); a model that is not cached yet is reported in its cell, with
# the command that prepares it, and the other widgets still work. Sliders of the fast widgets redraw while you drag; the slower
# ones say under their controls that they redraw when you release.
#
# **Serves:** all five texts, through the widgets of notebooks 00–10: 000 §8.2–8.6; 001 §19.2–19.11; 002;
# 003; 004 §4–§13.
#
# **Runtime on 2 CPU cores:** quick ~10 s, full ~15 s with warm caches (`make lecture` first, once: it trains the
# missing lecture-sized models of 09, 10 and 12, the ones their quick runs train).

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
from transformer_nb import lecture

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 00 · Softmax is a soft argmax
#
# Drag **scale**: small scales flatten the weights towards uniform, large ones harden them towards one-hot.
# %%
from transformer_nb.widgets.warmup import SoftmaxTemperature

SoftmaxTemperature().show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 01 · Why scores are divided by √d_k
#
# Switch to **unscaled** and drag **d_k** up: the scores leave the grey band and the weights collapse onto one
# key; scaled, they stay soft at every d_k.

# %%
from transformer_nb.widgets.attention import ScalingWidget

ScalingWidget(d_k=64, scaled=True, n_keys=10).show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 02 · Padding and causal masks
#
# Change the lengths, pad on the left, turn the causal mask on: rows with no visible key get zero weights,
# never NaN.

# %%
from transformer_nb.widgets.masks import MaskExplorer

MaskExplorer().show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 03 · One heatmap per head
#
# Type a sentence (Enter), change the number of heads and the sharpness of the queries.

# %%
from transformer_nb.widgets.multihead import HeadsWidget

HeadsWidget().show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 04 · Sinusoidal fingerprints and ALiBi slopes
#
# Drag the position: its column of the table is its fingerprint; drag the pair to change the frequency.

# %%
from transformer_nb.widgets.positional import AlibiExplorer, SinusoidFingerprint

SinusoidFingerprint().show()

# %% [markdown]
# ALiBi: more heads interpolate new slopes between the base ones; each head's recency window differs.

# %%
AlibiExplorer().show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 05 · RoPE: the score depends on n − m only
#
# Drag **shift both by s**: both arrows turn together, the star slides along its diagonal and the score does
# not change. Then move m or n alone.

# %%
from transformer_nb.widgets.rope import RotatePair

RotatePair().show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 06 · Depth, norms and residual connections at initialisation
#
# Post-LN against Pre-LN, with and without residual connections, from 2 to 48 blocks.

# %%
from transformer_nb.widgets.block import DepthWidget

DepthWidget().show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 07 · Where the parameters go
#
# Start from a published model and change its width, depth, heads, KV heads, FFN and vocabulary.

# %%
from transformer_nb.widgets.params import ParamCalculator

ParamCalculator(preset="llama2-7b").show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 08 · Which mask does each attention sublayer use?
#
# Encoder-only, decoder-only, encoder–decoder: the masks are recorded from the model while it runs.

# %%
from transformer_nb.widgets.models import VariantWidget

VariantWidget().show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 09 · The trained reversal model and its cross-attention
#
# Type a source (symbols 3..12) and press Enter: a perfect reversal attends along the anti-diagonal. Try
# lengths outside the training range 3–8.

# %%
from transformer_nb.widgets.reversal import ReversalWidget

reversal_model = lecture.cached("reversal", env.device)  # from the cache (it says which); None, and why, if it is cold
if reversal_model is not None:
    ReversalWidget(reversal_model).show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10 · The WikiText-2 language model writes
#
# Change the prompt, the temperature (0 = greedy), top-k and the seed; the heatmap shows where the last
# word looked.

# %%
from transformer_nb.widgets.lm import GenerateWidget

lm_model = lecture.cached("lm", env.device)  # (model, vocab): the full-profile model, else the lecture-sized one
if lm_model is not None:
    GenerateWidget(*lm_model).show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 12 · The capstone's model writes too
#
# The model of notebook 12 (Exercise 8.9's size) in the same widget: yours, once you have trained it there,
# else the reference model; the cell says which. Compare its continuations with notebook 10's.

# %%
capstone_model = lecture.cached("capstone", env.device)  # (model, vocab): yours if notebook 12 trained it, or None
if capstone_model is not None:
    GenerateWidget(*capstone_model, prompt="The history of machine learning").show()

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Appendix · The texts, checked
#
# This notebook checks no statement of the texts: each widget's own notebook does, in its appendix, and the
# claims ledger (notebook 13) lists them all. What it loaded from the cache (`transformer_nb.cache.cache_dir()`
# says where), and a check that each loaded model is in eval mode on the notebook's device:

# %%
for name, model in (("reversal", reversal_model), ("lm", lm_model), ("capstone", capstone_model)):
    print(f"{name}: {'loaded from' if model is not None else 'not found in'} the cache")

# %% tags=["nbval-check-output"]
from transformer_nb.checks import check_true

loaded = [m[0] if isinstance(m, tuple) else m for m in (reversal_model, lm_model, capstone_model) if m is not None]
check_true("every model loaded here is in eval mode and on the notebook's device (the lecture never trains)",
           all(not m.training and next(m.parameters()).device.type == env.device.type for m in loaded))
