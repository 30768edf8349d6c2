"""Notebook 09's reversal model and the language models of notebooks 10 and 12, run in the book's pages with no kernel.

``export(name, model, folder)`` writes ``folder/<name>.onnx`` (``torch.onnx.export``) and ``<name>.json`` (the
vocabulary, the sizes); ``widget_html(entry, static_dir, ort)`` copies them, onnxruntime-web's wasm build
(``ort``: its files, from ``book.ort_files()``: npm, pinned and integrity-checked) and ``live.mjs`` under
``static_dir/live/`` and returns the HTML that replaces the widget's frozen output. The page decodes greedily as
PyTorch does, a language model with a KV cache (one graph takes the prompt, then each new word with the keys and
values before it) (tests/browser/test_live_models_match_pytorch.py: the same tokens). The exported copy is
checked against the model before export.

    python tools/live_models.py [folder]    # the lecture's models (`make lecture`) -> folder (build/live_models)
"""

from __future__ import annotations

import copy
import fcntl
import functools
import gzip
import hashlib
import html
import json
import shutil
import sys
import warnings
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package


# The legacy exporter lacks isneginf (the attention that keeps its weights uses it): ONNX's IsInf, negative side.
OPSET = 17
torch.onnx.register_custom_op_symbolic("aten::isneginf", lambda g, x: g.op("IsInf", x, detect_positive_i=0), OPSET)
HERE = Path(__file__).resolve().parent
LIVE = "live"  # static_dir/live/: the models, the vocabulary, live.mjs and onnxruntime-web
MODELS = HERE.parent / "build" / "live_models"  # where main() exports to


def _adaptive_tied(head):
    """An ``adaptive_tied`` head's ``embed`` and ``log_probs`` in frequency-rank order (the order the head computes in,
    ``next_token_scores``), as the graph can hold them: every cluster's rows looked up and the right one chosen per
    word (the head's ``embed`` gathers each cluster's words), and the clusters' log-probabilities concatenated (the
    library's ``log_prob`` assigns slices, which export as scatters whose indices are rebuilt at every step)."""
    asm, bounds = head.asm, [0, *head.asm.cutoffs]

    def embed(r):
        out = F.embedding(r.clamp(max=bounds[1] - 1), asm.head.weight)
        for (proj, rows), lo, hi in zip(asm.tail, bounds[1:-1], bounds[2:]):
            low = F.embedding((r - lo).clamp(0, hi - lo - 1), rows.weight) @ proj.weight
            out = torch.where(((r >= lo) & (r < hi))[..., None], low, out)
        return out * head.d_model**0.5

    def log_probs(h):
        lp = F.log_softmax(asm.head(h), -1)
        tails = [F.log_softmax(t(h), -1) + lp[:, asm.shortlist_size + i, None] for i, t in enumerate(asm.tail)]
        return torch.cat([lp[:, : asm.shortlist_size], *tails], 1)

    return embed, log_probs


#: The models stored in 8 bits: notebook 12's, whose 33k x 128 word table alone is 17 MB in float32 (the book < 40 MB).
LOW = ("capstone",)
WORDS, PROMPTS = 30, 20  # the widget's new words; how many prompts measure the agreement


def _rows(w):
    """``w (N, M)`` in 8 bits: each row's integers -127..127 (int8) and its scale ``(N, 1)`` (its largest |weight| /
    127): the row is ``q * scale`` to half a level."""
    scale = w.abs().amax(1, keepdim=True).clamp_min(1e-30) / 127
    return torch.round(w / scale).to(torch.int8), scale


def int8(model):
    """A copy of ``model`` whose matrices (weights with 2 dimensions; a tied one once) are what 8 bits keep of them
    (``_rows``): what the page computes with for a model of ``LOW``."""
    model = copy.deepcopy(model)
    with torch.no_grad():
        for w in model.parameters():
            if w.dim() == 2:
                w.copy_(torch.mul(*_rows(w)))
    return model


class _Attention(torch.autograd.Function):
    """Causal self-attention after a cache, exported as ONNX Runtime's MultiHeadAttention (com.microsoft): one node
    instead of a dozen. Queries, keys and values ``(1, T, d_model)`` and the keys and values before, ``(1, heads, P,
    d_head)`` each -> the output ``(1, T, d_model)`` and the keys and values so far, ``(1, heads, P + T, d_head)``."""

    @staticmethod
    def forward(ctx, q, k, v, past_k, past_v, heads):
        t = q.shape[1]
        split = lambda x: x.view(1, t, heads, -1).transpose(1, 2)
        k, v = torch.cat((past_k, split(k)), 2), torch.cat((past_v, split(v)), 2)
        causal = torch.ones(t, k.shape[2], dtype=torch.bool).tril(k.shape[2] - t)
        return F.scaled_dot_product_attention(split(q), k, v, causal).transpose(1, 2).reshape(q.shape), k, v

    @staticmethod
    def symbolic(g, q, k, v, past_k, past_v, heads):
        none = g.op("prim::Constant")  # an input left out
        none.setType(torch._C.OptionalType.ofTensor())
        args = (q, k, v, none, none, none, past_k, past_v)
        out = g.op("com.microsoft::MultiHeadAttention", *args, num_heads_i=heads, unidirectional_i=1, outputs=3)
        [y.setType(x.type().with_sizes([None] * x.type().dim())) for y, x in zip(out, (q, past_k, past_v))]
        return out


class NextWord(nn.Module):
    """The language model for the page, with a KV cache: words ``w (1, T)`` at positions ``P .. P + T - 1`` and the
    keys and values of the ``P`` words before, ``past (1, layers x 2 heads, P, d_head)`` (each layer's keys then
    values) -> the next word's ``scores (1, V)``, its log-probabilities up to a constant, and ``present``: ``past``
    and the ``T`` words'. An ``adaptive_tied`` head numbers the words by frequency rank, the order PyTorch's
    ``generate`` picks them in (its greedy ties, its sampling): no reordering of the vocabulary at every step; its
    scores are its log-probabilities. Other heads: word ids, their logits (no log-softmax over the vocabulary at every
    step: picking a word needs only their differences).

    A step's cost in the page is the weights it reads (the capstone's head alone, 17 MB) and its graph's nodes (a few
    microseconds each), so the Pre-LN blocks are written here with few: activations ``(T, d_model)`` (a linear layer is
    one Gemm), a layer's queries, keys and values one projection and its attention one node (``_Attention``), RoPE's
    cos/sin rows made once for all layers, the cache one tensor in and one out; RoPE turns the interleaved pairs as
    ``x cos + (x R) sin``, ``R`` the pair swap with a sign in each head (no complex numbers in ONNX). ``low``: the
    matrices stored in 8 bits (``_rows``), multiplied back in the graph."""

    def __init__(self, model, low: bool = False):
        super().__init__()
        self.m, rope, a = copy.deepcopy(model), model.rope, model.blocks.layers[0].self_attn
        assert model.cfg.norm_first and model.cfg.bias and model.alibi is None and a.n_kv_heads == a.n_heads, model.cfg
        if rope is not None:  # each pair's angle twice, for its two numbers
            assert rope.pairing == "interleaved", rope.pairing
            self.cos, self.sin = (t.repeat_interleave(2, -1) for t in (rope.cos, rope.sin))
            i, swap = torch.arange(0, rope.d_head, 2), torch.zeros(rope.d_head, rope.d_head)
            swap[i + 1, i], swap[i, i + 1] = -1, 1
            self.register_buffer("swap", torch.block_diag(*[swap] * a.n_heads))  # a buffer: stored once
        if self.m.head.kind == "adaptive_tied":
            self.m.head.embed, self.m.head.log_probs = _adaptive_tied(self.m.head)
        self.low = {}  # low: who holds each matrix (a tied one, two modules); its int8 rows and scales are buffers
        for mod in self.m.modules() if low else ():
            for key, w in list(mod.named_parameters(recurse=False)):
                if w.dim() == 2:
                    self.low.setdefault(w, []).append((mod, key))
                    delattr(mod, key)
        for i, w in enumerate(self.low):  # buffers, not constants, which the exporter would store multiplied back
            [self.register_buffer(f"{k}{i}", x) for k, x in zip(("q", "scale"), _rows(w))]
        self.low = list(self.low.values())

    def forward(self, w, past):
        for i, holders in enumerate(self.low):  # in the graph, which the page computes once, at load
            full = getattr(self, f"q{i}").float() * getattr(self, f"scale{i}")
            for mod, key in holders:
                setattr(mod, key, full)
        m, heads = self.m, self.m.blocks.layers[0].self_attn.n_heads
        n, past = past.shape[2], past.split(heads, 1)
        if hasattr(self, "cos"):
            pos = torch.arange(n, n + w.shape[1])
            c, s = (t[pos].repeat(1, heads) for t in (self.cos, self.sin))
        x, state = m._embed(w, n)[0], []
        for layer, past_k, past_v in zip(m.blocks.layers, past[::2], past[1::2]):
            a = layer.self_attn
            p = [(f.weight, f.bias) for f in (a.q_proj, a.k_proj, a.v_proj)]
            q, k, v = F.linear(layer.norm1(x), *map(torch.cat, zip(*p)))[None].split(a.d_model, -1)
            if hasattr(self, "cos"):
                q, k = (y * c + (y @ self.swap) * s for y in (q, k))
            y, k, v = _Attention.apply(q, k, v, past_k, past_v, heads)
            x = x + a.out_proj(y[0])
            x = x + layer.ff(layer.norm2(x))
            state += [k, v]
        h = m.blocks.norm(x[-1:])
        return (m.head.log_probs(h) if m.head.adaptive else m.head.logits(h)), torch.cat(state, 1)


class NextSymbol(nn.Module):
    """The reversal model for the page: ``src (1, S)``, decoder input ``ys (1, T)`` -> the next token's logits
    ``(V,)`` and the cross-attention weights ``(layers, heads, T, S)`` (what the widget draws)."""

    def __init__(self, model):
        super().__init__()
        self.m = copy.deepcopy(model)
        self.cross = [layer.cross_attn for layer in self.m.decoder.layers]
        for a in self.cross:
            a.keep_weights = True  # the reference attention, which keeps its weights in last_weights

    def forward(self, src, ys):
        memory = self.m.encode(src, src != 0)
        logits = self.m.decode(ys, memory, src != 0, ys != 0)[0, -1]
        return logits, torch.cat([a.last_weights for a in self.cross])


FLOAT32 = "float32 weights, exported from PyTorch"
SAMPLES = (
    " Samples come from the page's own seeded generator, so they differ from the notebook's for the same seed; the "
    "attention figure is drawn only in the notebook."
)
EIGHT_BITS = (
    "exported from PyTorch, its matrices stored in 8 bits to fit in the book, a quarter of float32's size: each row "
    "as integers -127..127 and a scale"
)


def _note(notebook: str, how: str, gives: str) -> str:
    return f"notebook {notebook}'s trained model, run in this page by ONNX Runtime Web ({how}): {gives}"


NOTES = {
    "reversal": _note("09", FLOAT32, "greedy decoding gives PyTorch's tokens."),
    "lm": _note("10", FLOAT32, "at temperature 0 (greedy) it writes PyTorch's words." + SAMPLES),
    "capstone": _note(
        "12",
        EIGHT_BITS,
        "at temperature 0 (greedy) it writes the words PyTorch writes with those weights{agree}." + SAMPLES,
    ),
}
AGREE = (
    "; with the float32 weights PyTorch writes the same {2} greedy words for {0} of {1} prompts from WikiText-2's "
    "validation text, and finds the same most likely next word at {3}% of its first {4:,} words"
)


def _greedy(model, prompts, n: int):
    """``prompts (B, T0)`` and the ``n`` words greedy decoding adds to each, all rows at once (with a KV cache, as
    ``generate`` decodes one): ``(B, T0 + n)``."""
    h, state = model.hidden(prompts, model.init_state())
    out = [prompts]
    for _ in range(n):
        out.append(model.head.greedy(h[:, -1])[:, None])
        h, state = model.hidden(out[-1], state)
    return torch.cat(out, 1)


def export(name: str, model, folder: Path, vocab=None, text=None) -> Path:
    """Write ``folder/<name>.onnx`` and ``<name>.json`` (what the page needs to know) for ``name`` ``"reversal"`` or
    a language model, ``"lm"`` or ``"capstone"`` (with its ``vocab``), after checking that the exported wrapper
    computes what ``model`` computes (``int8(model)`` for a model of ``LOW``). For those, with ``text`` (word ids),
    the json's ``agree`` says how often ``int8(model)`` decides as ``model``: for how many of ``PROMPTS`` prompts (8
    words of ``text``, evenly spaced) it writes the same ``WORDS`` greedy words, and at what percentage of the first
    ``4 max_len`` words of ``text`` it finds the same most likely next word."""
    from transformer_nb.widgets.reversal import _max_source_len

    folder.mkdir(parents=True, exist_ok=True)
    model = copy.deepcopy(model).cpu().float().eval()  # a model trained on a GPU is exported from the CPU
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on the package's Python-side checks
        if name != "reversal":  # traced on 2 words after 3: the causal mask and the cache both in the graph
            ref = int8(model) if name in LOW else model
            w, wrap = torch.tensor([[5, 17, 3, 250, 9]]) % model.vocab_size, NextWord(ref, low=name in LOW)
            order = model.head.order if model.head.kind == "adaptive_tied" else torch.arange(model.vocab_size)
            a, n = model.blocks.layers[0].self_attn, 2 * len(model.blocks.layers)
            empty = torch.zeros(1, n * a.n_heads, 0, a.d_head)
            args, names, outs = (w[:, 3:], wrap(w[:, :3], empty)[1]), ["w", "past"], ["scores", "present"]
            torch.testing.assert_close(wrap(*args)[0].log_softmax(-1), ref.log_probs(order[w])[:, -1, order])
            axes = {"w": {1: "T"}, "past": {2: "P"}, "present": {2: "P + T"}}
            itos, unk = [vocab.itos[i] for i in order], order.tolist().index(vocab.unk)  # in the graph's order
            meta = {"itos": itos, "unk": unk, "max_len": model.max_len, "past": list(empty.shape)}
            if name in LOW and text is not None:
                at = range(0, len(text) - 8, len(text) // PROMPTS)[:PROMPTS]
                prompts = torch.stack([text[i : i + 8] for i in at])
                same = int((_greedy(model, prompts, WORDS) == _greedy(ref, prompts, WORDS)).all(1).sum())
                x = text[: 4 * model.max_len].view(4, -1)
                top = (model.log_probs(x).argmax(-1) == ref.log_probs(x).argmax(-1)).double().mean().item()
                meta["agree"] = [same, len(prompts), WORDS, round(100 * top, 1), x.numel()]
        else:
            args, names, outs = (torch.tensor([[3, 5, 7, 9]]), torch.tensor([[1, 9, 7]])), ["src", "ys"], None
            wrap = NextSymbol(model)
            torch.testing.assert_close(wrap(*args)[0], model.decode(args[1], model.encode(args[0]))[0, -1])
            axes = {"src": {1: "S"}, "ys": {1: "T"}}
            layers = model.decoder.layers
            meta = {"maxSrc": _max_source_len(model), "layers": len(layers), "heads": layers[0].cross_attn.n_heads}
        (folder / f"{name}.json").write_text(json.dumps(meta, separators=(",", ":")))
        out = folder / f"{name}.onnx"
        # TorchScript's exporter; no constant folding, which would store a transposed copy of every tied matrix
        kw = dict(dynamo=False, opset_version=OPSET, do_constant_folding=False)
        torch.onnx.export(wrap, args, out, input_names=names, output_names=outs, dynamic_axes=axes, **kw)
    return out


def widget_html(
    entry, static_dir: Path, ort=(), models: Path | None = None, name: str | None = None, prompt=None
) -> str:
    """The controls and output that run ``entry``'s model in the page: ``name`` (``NOTES``; default ``entry.needs``,
    ``"reversal"`` or ``"lm"``; ``"capstone"``: notebook 12's in the language model's widget, with ``prompt``);
    copies what they load (``ort``: onnxruntime-web's files) under ``static_dir/live/``. ``models``: where
    ``export`` wrote them; by default the lecture's cached model is exported now (``lecture.NotPrepared`` before
    `make lecture`). The page sits in ``static_dir``'s parent folder."""
    name = name or entry.needs
    if entry.needs not in NOTES or name not in NOTES or (name == "reversal") != (entry.needs == "reversal"):
        raise ValueError(f"{entry.name} runs no trained model in the page (needs={entry.needs!r}, name={name!r})")
    shows = ""
    if models is None:
        path, shows = export_lecture(name)
        models, shows = path.parent, f" ({html.escape(shows)})"
    live = static_dir / LIVE
    live.mkdir(parents=True, exist_ok=True)
    files = [*ort, HERE / "live.mjs"]
    for f in files + [models / f"{name}{ext}" for ext in (".onnx", ".json")]:
        if f.suffix != ".wasm":
            shutil.copyfile(f, live / f.name)
        elif not (live / f"{f.name}.gz").is_file():  # a quarter of the size; live.mjs unpacks it
            (live / f"{f.name}.gz").write_bytes(gzip.compress(f.read_bytes(), 9, mtime=0))
    el, said = f"tnb-live-{name}", "" if prompt is None else f' data-prompt="{html.escape(prompt)}"'
    agree = json.loads((models / f"{name}.json").read_text()).get("agree")
    note = NOTES[name].replace("{agree}", AGREE.format(*agree) if agree else "")
    return (
        f'<div class="tnb-live" id="{el}" data-model="{name}"{said}><p class="tnb-serves">Live: {note}'
        f'{shows}</p></div>\n<script type="module">import {{ mount }} from "./{static_dir.name}/{LIVE}/live.mjs"; '
        f'mount(document.getElementById("{el}"));</script>'
    )


@functools.cache
def _wikitext():
    """WikiText-2, loaded once for the language models."""
    from transformer_nb.wikitext import load_wikitext2

    return load_wikitext2()


def export_lecture(name: str, folder: Path = MODELS) -> tuple[Path, str]:
    """Export the lecture's model ``name`` (``lecture.best``: the cached model the notebook trained; ``make lecture``
    trains what is missing) into ``folder``, unless there from the same weights and code: the path, and which model
    it is (``lecture.describe``)."""
    from transformer_nb import lecture

    data = None if name == "reversal" else _wikitext()
    model, prof = lecture.best(name, data=data)
    shows = lecture.describe(name, model, prof)
    model, vocab = (model, None) if name == "reversal" else model
    path, text = folder / f"{name}.onnx", data and data.valid
    # exported once for the same weights, words and code (the book and the slides want it, maybe in parallel)
    h = hashlib.sha256(repr((torch.__version__, model, vocab and vocab.itos)).encode())
    files, tensors = [Path(__file__), *HERE.parent.glob("transformer_nb/**/*.py")], [*model.state_dict().values(), text]
    for b in [*map(Path.read_bytes, sorted(files)), *(t.cpu().numpy().tobytes() for t in tensors if t is not None)]:
        h.update(b)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{name}.digest", "a+") as done:  # another process exporting it: wait
        fcntl.flock(done, fcntl.LOCK_EX)
        done.seek(0)  # "a+" opened it at the end
        if done.read() != h.hexdigest():
            done.truncate(0)  # until the export is complete
            export(name, model, folder, vocab, text)
            done.write(h.hexdigest())
    print(f"live: {path}, {shows}")
    return path, shows


def main(argv=None) -> int:
    folder = Path(argv[0]) if argv else MODELS
    for name in NOTES:
        export_lecture(name, folder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
