"""Generation from the trained WikiText-2 language model (notebook 10).

``GenerateWidget(model, vocab)``: type a prompt, set the temperature (0 = greedy), top-k
(0 = off), the number of new words and the seed; see the continuation (text, above the figure), and the
attention that the **last** token pays to the tokens before it, one row per layer and head.
"""

import html

import ipywidgets as W
import matplotlib.pyplot as plt
import torch

from transformer_nb.core.generation import generate
from transformer_nb.core.transformer import Transformer
from transformer_nb.probes import record_attention
from transformer_nb.widgets.base import STYLE, Widget, painted, token_label, word_shape

MAX_SEED = 2**31 - 1  # the seed box clamps to 0..MAX_SEED (torch takes seeds below 2**64)
MAX_SHOWN = 24  # columns of the attention figure: the last token and the tokens before it


class GenerateWidget(Widget):
    """Controls: ``prompt``, ``temperature``, ``top_k``, ``length``, ``seed``.

    ``last``: ``prompt_ids``, ``ids`` (prompt + continuation), ``continuation`` (text),
    ``tokens`` (the words shown in the figure), ``attention`` ``(n_layers·n_heads, n_shown)``
    (each row sums to 1 over all earlier tokens; only the last ``MAX_SHOWN`` are drawn),
    ``row_labels``, and ``unknown`` (prompt words that became ``<unk>``).
    """

    CONTINUOUS = False  # ~60 ms idle (python -m transformer_nb.widgets.timing), over CHEAP_MS on a loaded machine
    REDRAW = "a tenth of a second per 40 words: it generates word by word"

    def __init__(
        self,
        model: Transformer,
        vocab,
        prompt: str = "The history of machine learning",
        temperature: float = 0.8,
        top_k: int = 40,
        length: int = 30,
        seed: int = 0,
    ):
        if not isinstance(model, Transformer) or model.cfg.arch != "decoder":
            raise TypeError(f"GenerateWidget needs a decoder-only Transformer, got {type(model).__name__}")
        self.model, self.vocab, self.text = model, vocab, W.HTML()
        max_new = max(1, min(100, model.max_len - 32))
        super().__init__(
            dict(prompt=prompt, temperature=temperature, top_k=top_k, length=min(length, max_new), seed=seed),
            prompt=W.Text(description="prompt", continuous_update=False, layout=W.Layout(width="420px")),
            temperature=W.FloatSlider(min=0.0, max=2.0, step=0.1, description="temperature", style=STYLE),
            top_k=W.IntSlider(min=0, max=200, step=5, description="top-k (0 = off)", style=STYLE),
            length=W.IntSlider(min=1, max=max_new, description="new words", style=STYLE),
            seed=W.BoundedIntText(min=0, max=MAX_SEED, description="seed", layout=W.Layout(width="160px")),
        )

    def compute(self, prompt, temperature, top_k, length, seed):
        words = prompt.split() or ["<eos>"]
        prompt_ids = self.vocab.encode(words)[-(self.model.max_len - length) :]
        ids = generate(self.model, prompt_ids, length, temperature=temperature, top_k=top_k or None, seed=seed)
        self.model.eval()
        with torch.no_grad(), record_attention(self.model) as mods:
            self.model.hidden(ids[:-1][None])  # the attention that predicted the last word (no KV cache)
            rows = torch.cat([m.last_weights[0, :, -1, :] for m in mods])  # (L·h, T)
        shown, n_heads = min(MAX_SHOWN, rows.shape[1]), mods[0].n_heads
        data = dict(prompt_ids=prompt_ids, ids=ids, continuation=self.vocab.decode(ids[prompt_ids.numel() :]))
        data.update(tokens=[self.vocab.itos[i] for i in ids[:-1][-shown:].tolist()], attention=rows[:, -shown:])
        data.update(attention_full=rows, row_labels=[f"L{i // n_heads} h{i % n_heads}" for i in range(rows.shape[0])])
        return data | dict(unknown=[w for w in words if w not in self.vocab])

    def layout(self):
        """``Widget.layout`` with the text (prompt ▶ continuation) above the figure."""
        box = super().layout()
        box.children = (*box.children[:-1], self.text, box.children[-1])
        return box

    def draw(self, data):
        """The layout depends on the model only (its rows), so ``update`` redraws any continuation in place."""
        rows, height = len(data["row_labels"]), 1.6 + 0.22 * len(data["row_labels"])  # inches
        fig = plt.figure(figsize=(10, height))
        ax = fig.add_axes((0.062, 1.3 / height, 0.928, 0.22 * rows / height), xticks=[])  # room for 20-letter words
        ax.imshow(data["attention"].numpy(), aspect="auto", cmap="viridis", vmin=0)
        ax.set_yticks(range(rows), data["row_labels"], fontsize=7)
        for i in range(MAX_SHOWN):  # the words where tick labels would sit, shapes (base.word_shape): cheap to redraw
            token_label(ax, (i, 0, ax.get_xaxis_transform()), 60, gap=3)
        self.update(fig, data)
        return fig

    def update(self, fig, data) -> bool:
        """The text (an HTML line: the page draws it), attention, words and title of ``data`` into the figure
        ``draw`` made."""
        ax = fig.axes[0]
        unknown = f"\nnot in the vocabulary (-> <unk>): {', '.join(data['unknown'])}" if data["unknown"] else ""
        text = f"{self.vocab.decode(data['prompt_ids'])} ▶ {data['continuation']}{unknown}"
        self.text.value = f'<pre style="white-space:pre-wrap;margin:0">{html.escape(text)}</pre>'
        a, tokens = data["attention"].numpy(), [t if len(t) <= 20 else t[:19] + "…" for t in data["tokens"]]
        ax.images[0].set(data=a, clim=(0, a.max()), extent=(-0.5, a.shape[1] - 0.5, a.shape[0] - 0.5, -0.5))
        for label, word in zip(ax.patches, tokens + [""] * MAX_SHOWN):
            label.set(path=word_shape(word) if word else label.get_path(), visible=bool(word))
        nxt = self.vocab.itos[int(data["ids"][-1])]
        ax.set_title(f"attention of the last input token '{data['tokens'][-1]}' (which predicted '{nxt}')", fontsize=9)
        self.animated = painted(ax)  # the words among its patches; the row labels stay: see Widget.png
        return True
