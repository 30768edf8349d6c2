"""Exercise 8.9 as stated (000 §8.6.2): a Transformer and an LSTM of about the same size, trained on
a small WikiText-2 sample with AdamW at a constant learning rate, compared by perplexity.

- ``sample_corpus``: the first ``n_tokens`` of the training stream with their own vocabulary;
- ``lstm_matching``: the ``LSTMLM`` whose hidden size brings it closest to a parameter count;
- ``train_epochs``: the exercise's recipe (epochs over shuffled non-overlapping windows), run
  through the package's one training loop;
- ``exercise_8_9``: both models trained on the sample and scored, through the model cache.
"""

from __future__ import annotations

import math
from itertools import count

import torch

from transformer_nb import cache
from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.transformer import LanguageModel, Transformer
from transformer_nb.core.utils import as_int
from transformer_nb.lstm import LSTMLM
from transformer_nb.params import numel
from transformer_nb.perplexity import evaluate
from transformer_nb.train import train
from transformer_nb.wikitext import check_wikitext

#: The exercise's Transformer: 4 blocks of width 128 over windows of 256 tokens.
#: A full softmax with its own bias (``tie_output=False, output_bias=True``).
EX89_TRANSFORMER = TransformerConfig(
    name="exercise 8.9", d_model=128, n_heads=4, d_ff=512, n_layers=4, max_len=256, positions="learned",
    activation="gelu", tie_output=False, output_bias=True
)  # fmt: skip
EX89_TRAIN = dict(batch_size=16, seq_len=256, lr=3e-4)


def sample_corpus(train_ids: torch.Tensor, itos: list[str], n_tokens: int = 50_000, unk: str = "<unk>"):
    """The first ``n_tokens`` of the training stream, re-indexed with its own vocabulary.

    Returns ``(ids (n_tokens,), itos_sample)``; ``itos_sample`` lists the sample's word types in
    order of first appearance (plus ``unk`` if absent), so a word outside the sample encodes to ``unk``.
    """
    if not isinstance(train_ids, torch.Tensor) or train_ids.dim() != 1 or train_ids.numel() < n_tokens:
        raise ValueError(f"need a 1-D stream of at least n_tokens={n_tokens} ids, got {train_ids!r:.60}")
    part = train_ids[:n_tokens]
    old = list(dict.fromkeys(part.tolist()))
    words = [itos[i] for i in old]
    words += [unk] * (unk not in words)
    remap = {o: n for n, o in enumerate(old)}
    return torch.tensor([remap[i] for i in part.tolist()], dtype=torch.long), words


def lstm_matching(target_params: int, vocab_size: int, d_model: int, n_layers: int = 2, **kw) -> LSTMLM:
    """An ``LSTMLM`` whose hidden size makes its parameter count closest to ``target_params`` (>= 1)."""
    as_int("target_params", target_params, 1)
    base = numel(LSTMLM(vocab_size, d_model, d_model, n_layers, **kw))

    def count(h):  # an LSTM layer: 4 gates x (input + hidden + 2 biases) x hidden; the projection h -> d
        rnn = sum(4 * h * ((d_model if i == 0 else h) + h + 2) for i in range(n_layers))
        return rnn + (h * d_model + d_model if h != d_model else 0)

    hidden = min(range(4, 8 * d_model + 1), key=lambda h: abs(base - count(d_model) + count(h) - target_params))
    return LSTMLM(vocab_size, d_model, hidden, n_layers, **kw)


def train_epochs(model: LanguageModel, ids: torch.Tensor, epochs=5, batch_size=16, seq_len=256, lr=3e-4, seed=0,
                 live=True, title="training") -> dict:  # fmt: skip
    """Exercise 8.9's recipe: AdamW at a constant ``lr`` for ``epochs`` passes over ``ids``.

    ``ids`` is cut into non-overlapping windows of ``seq_len + 1`` tokens (inputs and the targets
    shifted by one), shuffled each epoch with a seeded generator; the LSTM starts every window from
    a zero state, like the Transformer. ``live=False``: no figure and no progress bar. Returns
    ``train.train``'s history plus per epoch ``train_ppl`` (over the epoch's tokens) and ``seconds``
    (training time).
    """
    n = (ids.numel() - 1) // seq_len
    if n < 1:
        raise ValueError(f"{ids.numel()} tokens do not fill one window of seq_len={seq_len}")
    epochs = as_int("epochs", epochs, 1)
    device = next(model.parameters()).device
    windows = ids[: n * seq_len + 1].unfold(0, seq_len + 1, seq_len).to(device)  # (n, seq_len + 1), overlap 1
    torch.manual_seed(seed)
    per_epoch = math.ceil(n / batch_size)
    sizes = [min(batch_size, n - i * batch_size) for i in range(per_epoch)]  # windows in each batch of an epoch
    g = torch.Generator().manual_seed(seed)  # each epoch, the windows in a fresh shuffled order
    batches = (windows[i.to(device)] for _ in count() for i in torch.randperm(n, generator=g).split(batch_size))
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    loss_fn = lambda m, w: m(w[:, :-1], w[:, 1:])[1]
    hist = train(model, loss_fn, batches, opt, steps=epochs * per_epoch, live=live, bar=live, title=title)
    epoch = [slice(e * per_epoch, (e + 1) * per_epoch) for e in range(epochs)]
    hist["train_ppl"] = [math.exp(sum(a * s for a, s in zip(hist["loss"][k], sizes)) / n) for k in epoch]
    hist["seconds"] = [sum(hist["step_seconds"][k]) for k in epoch]
    model.train()
    return hist


def _run(name: str, ids: torch.Tensor, n_types: int, epochs: int, seed: int, device, live: bool):
    """One model's run: its cache name, fresh model on ``device``, config and training function."""
    torch.manual_seed(seed)
    tf = Transformer(EX89_TRANSFORMER, vocab=n_types)
    d = EX89_TRANSFORMER.d_model
    model = tf if name == "Transformer" else lstm_matching(numel(tf), n_types, d, 2, head="full")
    config = {"exercise": "8.9", "model": name, "params": numel(model), "n_tokens": ids.numel(), "epochs": epochs}
    config.update(seed=seed, **EX89_TRAIN)

    def train_fn(m):
        hist = train_epochs(m, ids, epochs, seed=seed, live=live, title=f"Exercise 8.9: {name}", **EX89_TRAIN)
        return {**hist, "ppl": evaluate(m, ids, seq_len=EX89_TRAIN["seq_len"])["ppl"]}  # scored once

    return cache.cache_name(f"ex89_{name.lower()}", config), model.to(device), config, train_fn


def exercise_8_9(data, n_tokens=50_000, epochs=5, seed=0, retrain=False, device=None, workers=1):
    """Both models of the exercise trained on the first ``n_tokens`` of WikiText-2's training split
    (cached) and scored on that sample (once, when trained). With ``workers=2`` on the CPU the two
    train side by side, each in its own process on one thread (``cache.load_or_train_many``). Returns
    ``{"vocab": itos, "ids": ..., "models": {name: model}, "hist": {name: history}, "ppl": {name:
    perplexity}}``; models in eval mode on ``device``."""
    check_wikitext(data)
    ids, itos = sample_corpus(data.train, data.vocab.itos, n_tokens)
    device = torch.device(device or "cpu")
    kw = dict(ids=ids, n_types=len(itos), epochs=epochs, seed=seed, device=device)
    args = {n: dict(name=n, **kw) for n in ("Transformer", "LSTM")}
    done = cache.load_or_train_many(_run, args, workers, retrain, True)
    models, hists = {n: m for n, (m, _, _) in done.items()}, {n: h for n, (_, h, _) in done.items()}
    return {"vocab": itos, "ids": ids, "models": models, "hist": hists, "ppl": {n: h["ppl"] for n, h in hists.items()}}
