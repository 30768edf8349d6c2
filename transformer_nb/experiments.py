"""Notebook 06's experiments on stacks of blocks (001 §19.6.4; 004 §9): what the norm placement and the
residual connections do to a deep stack.

- **Depth at initialisation**: ``layer_grad_norms`` (per-layer gradient norms) and ``stream_stats``
  (the residual stream's size and how different its positions stay), Pre-LN vs Post-LN, with and
  without residuals (``residual=False``: an experiment only);
- **Does Post-LN need warm-up?** ``train_toy_lm`` trains a small causal model on a random Markov
  chain (``markov_batches``) with and without a linear warm-up.

The models are the package's ``stack.Encoder`` with a linear read-out (and, for the toy LM, a token
embedding in front), with the original paper's ReLU feed-forward and Xavier initialisation.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.stack import Encoder
from transformer_nb.core.utils import as_device, as_int, as_real
from transformer_nb.train import train

__all__ = ["layer_grad_norms", "markov_batches", "stream_stats", "train_toy_lm"]  # what notebook 06 and its widget call


def build_stack(
    depth: int,
    norm_first: bool = True,
    residual: bool = True,
    d_model: int = 64,
    n_heads: int = 4,
    d_ff: int | None = None,
    n_out: int = 64,
    seed: int | None = 0,
    causal: bool = False,
) -> nn.Sequential:
    """A seeded ``Encoder`` of ``depth`` blocks followed by a linear read-out to ``n_out``, Xavier-uniform matrices
    and zero biases (the original paper's init; norms keep γ=1, β=0).

    ``model = build_stack(...)``: ``model(x)`` maps ``(B, T, d_model) -> (B, T, n_out)``;
    ``model[0]`` is the ``Encoder`` (its ``layers`` and final ``norm``), ``model[1]`` the read-out.
    Same seed -> same weights (``seed=None``: the global generator as it stands).
    """
    if seed is not None:
        torch.manual_seed(seed)
    cfg = TransformerConfig(
        d_model=d_model, n_heads=n_heads, n_layers=depth, d_ff=d_ff, activation="relu", norm_first=norm_first
    )
    model = nn.Sequential(Encoder(cfg, causal=causal, residual=residual), nn.Linear(d_model, n_out))
    for m in model.modules():
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    return model


def layer_grad_norms(
    depth: int,
    norm_first: bool = True,
    residual: bool = True,
    d_model: int = 64,
    n_heads: int = 4,
    seq_len: int = 16,
    batch: int = 8,
    n_out: int = 64,
    seeds=(0,),
) -> dict:
    """Gradient norms at initialisation, per layer, averaged over ``seeds``.

    One forward/backward of a cross-entropy loss on random inputs ``x ~ N(0, 1)`` of shape
    ``(batch, seq_len, d_model)`` and random targets. Returns a dict of float64 tensors:

    - ``"param"``: ``(depth,)`` the L2 norm of all of layer l's parameter gradients
      (what an optimizer step scales with);
    - ``"input"``: ``(depth,)`` the L2 norm of ∂loss/∂(input of layer l), the signal that
      reaches layer l from above;
    - ``"rms"``, ``"diversity"``: ``(depth + 1,)`` the same pass's residual stream (``stream_stats``).
    """
    as_int("depth", depth, 1)
    as_int("seq_len", seq_len, 1)
    as_int("batch", batch, 1)
    if not (seeds := tuple(seeds)):
        raise ValueError("seeds must name at least one seed")
    param, inp = torch.zeros(depth, dtype=torch.float64), torch.zeros(depth, dtype=torch.float64)
    rms, div = torch.zeros(depth + 1, dtype=torch.float64), torch.zeros(depth + 1, dtype=torch.float64)
    for seed in seeds:
        encoder, head = build_stack(depth, norm_first, residual, d_model, n_heads, None, n_out, seed)
        g = torch.Generator().manual_seed(10_000 + seed)
        x = torch.randn(batch, seq_len, d_model, generator=g)
        y = torch.randint(n_out, (batch, seq_len), generator=g)
        inputs = []
        h = x.requires_grad_()
        for layer in encoder.layers:
            h.retain_grad()
            inputs.append(h)
            h = layer(h)
        loss = F.cross_entropy(head(encoder.norm(h)).flatten(0, 1), y.flatten())
        loss.backward()
        for i, layer in enumerate(encoder.layers):
            param[i] += math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in layer.parameters()))
            inp[i] += float(inputs[i].grad.double().norm())
        for i, s in enumerate([*inputs, h]):
            rms[i] += float(s.detach().double().pow(2).mean().sqrt())
            div[i] += token_diversity(s.detach())
    n = len(seeds)
    return {"param": param / n, "input": inp / n, "rms": rms / n, "diversity": div / n}


def token_diversity(h: torch.Tensor) -> float:
    """How different the positions of ``h: (B, T, d)`` are: ``||h - mean_T(h)|| / ||h||`` in [0, 1].

    1 = the tokens share nothing (their mean is 0); 0 = every position holds the same vector
    (the "rank collapse" of deep attention stacks without skip connections).
    """
    h = h.double()
    return float((h - h.mean(dim=1, keepdim=True)).norm() / h.norm().clamp_min(1e-300))


def stream_stats(
    depth: int,
    norm_first: bool = True,
    residual: bool = True,
    d_model: int = 64,
    n_heads: int = 4,
    seq_len: int = 16,
    batch: int = 8,
    seed: int = 0,
) -> dict:
    """The residual stream at initialisation, after each layer: ``{"rms", "diversity"}``, each ``(depth + 1,)``.

    Entry 0 is the input ``x ~ N(0, 1)``; entry l is measured after layer l: ``rms`` =
    ``sqrt(mean(x_l²))``, ``diversity`` = ``token_diversity(x_l)``.
    """
    out = layer_grad_norms(depth, norm_first, residual, d_model, n_heads, seq_len, batch, seeds=(seed,))
    return {"rms": out["rms"], "diversity": out["diversity"]}


# --------------------------------------------------------------------------- does Post-LN need warm-up?


def markov_batches(
    n_batches: int, batch: int = 16, seq_len: int = 32, vocab: int = 32, seed: int = 0, sharpness: float = 2.0
):
    """Token sequences from a fixed random first-order Markov chain, for a tiny language-modelling task.

    Returns ``(inputs, targets, entropy)``: ``inputs``/``targets`` are ``(n_batches, batch, seq_len)``
    long tensors (targets = inputs shifted by one), ``entropy`` the chain's mean next-token entropy
    in nats (the lowest loss a model can reach; ``ln vocab`` is what guessing uniformly costs).
    """
    for name, v in (("n_batches", n_batches), ("batch", batch), ("seq_len", seq_len), ("vocab", vocab)):
        as_int(name, v, 1)
    as_real("sharpness", sharpness)
    g = torch.Generator().manual_seed(seed)
    trans = torch.softmax(sharpness * torch.randn(vocab, vocab, generator=g, dtype=torch.float64), dim=-1)
    entropy = float(-(trans * trans.clamp_min(1e-300).log()).sum(-1).mean())
    x = torch.empty(n_batches * batch, seq_len + 1, dtype=torch.long)
    x[:, 0] = torch.randint(vocab, (n_batches * batch,), generator=g)
    for t in range(seq_len):
        x[:, t + 1] = torch.multinomial(trans[x[:, t]], 1, generator=g).squeeze(1)
    x = x.view(n_batches, batch, seq_len + 1)
    return x[..., :-1], x[..., 1:], entropy


def _check_data(data):
    ok = isinstance(data, (tuple, list)) and len(data) == 3 and all(isinstance(t, torch.Tensor) for t in data[:2])
    if not ok or data[0].dim() != 3 or data[0].shape != data[1].shape or data[0].is_floating_point():
        raise ValueError("data must be what markov_batches returns: (inputs, targets, entropy), ids of shape (N, B, T)")
    return data


def train_toy_lm(
    depth: int, norm_first: bool, lr: float, warmup: int, steps: int, seed: int = 0, data=None, device=None
) -> list:
    """Train a toy causal LM (token embedding -> ``depth`` blocks of width 64, 4 heads -> logits) with Adam
    (β = 0.9, 0.98, as in the original paper) and return the loss per step.

    It runs the package's one training loop (``train.train``), one batch of ``data`` per step.

    The learning rate rises linearly from ``lr/warmup`` to ``lr`` over the first ``warmup`` steps
    (``warmup=0``: constant ``lr`` from step 1). ``data`` is ``markov_batches(...)`` (default: a
    fresh one with ``steps`` batches). The model is built on the CPU (the same initial weights everywhere)
    and trained on ``device`` (default: the CPU), where the batches go too.
    """
    as_int("steps", steps, 1)
    as_int("warmup", warmup, 0)
    if not isinstance(lr, (int, float)) or isinstance(lr, bool) or not 0 < lr < math.inf:
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    inputs, targets, _ = markov_batches(steps) if data is None else _check_data(data)
    if inputs.shape[0] < steps:
        raise ValueError(f"data holds {inputs.shape[0]} batches, fewer than steps={steps}")
    vocab = int(max(inputs.max(), targets.max())) + 1
    torch.manual_seed(seed)
    device = as_device("device", device) or torch.device("cpu")
    embedding = nn.Embedding(vocab, 64)  # N(0, 1), drawn first; the blocks and read-out Xavier
    model = nn.Sequential(embedding, *build_stack(depth, norm_first, True, 64, 4, None, vocab, None, True)).to(device)
    inputs, targets = inputs.to(device), targets.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup) if warmup else 1.0)
    loss_fn = lambda m, b: F.cross_entropy(m(b[0]).flatten(0, 1), b[1].flatten())
    return train(model, loss_fn, zip(inputs, targets), opt, sched, steps=steps, bar=False)["loss"]
