"""The capstone (notebook 12), steps 5-7: the language model, its parameter count, greedy generation.

- ``lm_ex``: ``LanguageModel(vocab_size, d_model, n_heads, d_ff, n_layers, max_len)``, ``forward(ids) -> logits
  (B, T, V)``. Checked in order: causality (changing a token never changes an earlier position's output),
  equality with the package's decoder-only LM (``package_lm``: learned positions, ReLU, tied output layer)
  given the same weights, and the initialisation (before training the loss is within ``INIT_TOLERANCE`` of
  ln V, a uniform guess).
- ``params_ex``: ``count_parameters(vocab_size, d_model, n_heads, d_ff, n_layers, max_len)``: 000's count
  (4·d² per attention layer, §8.3.5; 2·d·d_ff per feed-forward, §8.5.4) made exact for this model, checked
  against ``numel`` of the package's model.
- ``generate_ex``: ``generate(model, prompt, n_new, max_len)``: greedy decoding, ``(T0,) -> (T0 + n_new,)``.
"""

__all__ = ["generate_ex", "lm_ex", "package_logits", "params_ex"]  # what a notebook uses

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.transformer import Transformer
from transformer_nb.exercises import gen, say
from transformer_nb.exercises.capstone import PackageExercise, Problem, _close, load_package_weights, randomise_, slip
from transformer_nb.exercises.compare import equal
from transformer_nb.exercises.solutions import capstone as sol

NOTEBOOK = "12_capstone"


#: Exercise 8.9's Transformer: 4 blocks, d_model 128, 4 heads, d_ff 512, learned positions up to 256, ReLU, an
#: output layer tied to the embedding, with a bias (the vocabulary is the data's).
CAPSTONE_MODEL = TransformerConfig(
    name="capstone", d_model=128, n_heads=4, d_ff=512, n_layers=4, max_len=256, positions="learned", output_bias=True
)
SIZES = ("d_model", "n_heads", "d_ff", "n_layers", "max_len")  # the student's classes take them after vocab_size


def sizes(cfg: TransformerConfig) -> tuple:
    """``cfg``'s ``SIZES``, in the order the student's ``LanguageModel(vocab_size, *sizes)`` takes them."""
    return tuple(getattr(cfg, name) for name in SIZES)


def package_lm(vocab_size, *sizes, device=None) -> Transformer:
    """The package's decoder-only ``Transformer`` with the capstone's architecture (``CAPSTONE_MODEL``) and the
    ``sizes`` ``d_model, n_heads, d_ff, n_layers, max_len``."""
    with torch.device(device or "cpu"):
        return Transformer(CAPSTONE_MODEL, vocab=vocab_size, **dict(zip(SIZES, sizes)))


def package_logits(model: Transformer, ids: torch.Tensor) -> torch.Tensor:
    """``(B, T) -> (B, T, V)`` logits of the package LM (its head's output before the softmax)."""
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be the package's Transformer (package_lm), got {type(model).__name__}")
    return model(ids)[0]


# --------------------------------------------------------------------------- step 5: the language model

#: Before training the loss must be within this many nats of ln V (a uniform guess over the V words).
INIT_TOLERANCE = 0.5


def _lm_expected(cfg, ids, probes, seed):
    with torch.no_grad():
        return package_logits(randomise_(package_lm(*cfg), seed), ids)


def causality_problem(changed: torch.Tensor, probes) -> str | None:
    """A nudge unless changing the token at each probe position ``p`` changed exactly the outputs at ``p`` and
    after (``changed``: ``(len(probes), T)`` bool, one row per probe); None if it did."""
    rows = changed.tolist()
    leaks = [[i for i in range(p) if row[i]] for row, p in zip(rows, probes)]
    first = next(((p, leak) for p, leak in zip(probes, leaks) if leak), None)
    if first:
        p, leak = first
        what = f"changing token {p} changed the output at earlier position(s) {leak}: the model sees the future. "
        if any(r[q + 1 :] and not any(r[q + 1 :]) for r, q in zip(rows, probes)):
            return what + "And no later position saw the change: is the mask transposed or inverted?"
        if any(leak and leak != list(range(leak[0], q)) for leak, q in zip(leaks, probes)):
            return what + "Does the causal mask reach the attention of every block?"
        if any(leak != list(range(q)) for leak, q in zip(leaks, probes)):  # only the positions just before
            return what + "Only the positions just before (one more per block): is the mask's diagonal off by one?"
        return what + "Does the causal mask reach the attention of every block?"
    for row, p in zip(rows, probes):
        if not row[p]:
            return (
                f"changing token {p} did not change the output at position {p}: each position must read its own token."
            )
        if row[p + 1 :] and not all(row[p + 1 :]):
            return f"changing token {p} did not reach every later position: a query must see all the keys before it."
    return None


def future_changes(model: nn.Module, ids: torch.Tensor, probes) -> torch.Tensor:
    """``(len(probes), T)`` bool: which positions' outputs move when the token at each probe position changes."""
    base, rows = model(ids.clone()), []  # a clone each time: a model may change its input in place
    for p in probes:
        other = ids.clone()
        other[:, p] = (other[:, p] + 1) % base.shape[-1]
        rows.append((model(other) - base).abs().amax(dim=(0, 2)) > 1e-4)
    return torch.stack(rows)


#: Before training, position embeddings more than this many times larger than the word embeddings swamp them.
SWAMP_RATIO = 5.0


def positions_swamp_words(model: nn.Module) -> float | None:
    """std(pos.weight) / std(tok.weight) when it exceeds ``SWAMP_RATIO`` (the words drowned in positions), else None.
    Measured: PyTorch's default N(0, 1) positions with N(0, 0.02) words end the full profile's training at 6.67 nats
    on 10,000 validation words, against 6.36 with both at N(0, 0.02)."""
    tok, pos = getattr(model, "tok", None), getattr(model, "pos", None)
    if not (isinstance(tok, nn.Embedding) and isinstance(pos, nn.Embedding)):
        return None
    ratio = (pos.weight.std() / tok.weight.std().clamp_min(1e-12)).item()
    return ratio if ratio > SWAMP_RATIO else None


def _lm_harness(cls):
    def run(cfg, ids, probes, seed):
        torch.manual_seed(seed)
        m = cls(*cfg)
        if not isinstance(m, nn.Module):
            return Problem(f"LanguageModel(...) should build an nn.Module, not a {type(m).__name__}.")
        want = (*ids.shape, cfg[0])
        with torch.no_grad():
            out = m(ids.clone())  # a clone each time: a model may change its input in place
            if not isinstance(out, torch.Tensor) or tuple(out.shape) != want:
                got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
                return Problem(f"forward(ids) should return logits of shape (B, T, vocab_size) = {want}, got {got}.")
            if torch.isnan(out).any():
                return Problem("the logits contain NaN. Which softmax sees a row of -inf only?")
            first_loss = F.cross_entropy(out.flatten(0, 1).float(), ids.roll(-1, 1).flatten()).item()
            swamped = positions_swamp_words(m)
            problem = causality_problem(future_changes(randomise_(m, seed), ids, probes), probes)
            if problem:
                return Problem(problem)
            package = randomise_(package_lm(*cfg), seed)
            problem = load_package_weights(m, package, "LanguageModel")
            if problem:
                return Problem(problem)
            logits = m(ids.clone())
        right = _close(logits, package_logits(package, ids))
        if abs(first_loss - math.log(cfg[0])) > INIT_TOLERANCE and right:
            return Problem(say("loud_init", loss=first_loss, uniform=math.log(cfg[0]), V=cfg[0]))
        if swamped and right:
            return Problem(say("positions_swamp_words", ratio=swamped))
        return logits

    return run


class _LMSlip(sol.LanguageModel):
    final_norm = positions = True
    scaled = False
    output = "logits"

    def forward(self, ids):
        B, T = ids.shape
        x = self.tok(ids) * (math.sqrt(self.tok.embedding_dim) if self.scaled else 1.0)
        x = x + self.pos(torch.arange(T)) if self.positions else x
        mask = sol.my_causal_mask(T)
        for block in self.blocks:
            x = block(x, mask)
        logits = (self.norm(x) if self.final_norm else x) @ self.tok.weight.T + self.bias
        return {"logits": logits, "log": F.log_softmax(logits, -1), "probabilities": F.softmax(logits, -1)}[self.output]


def _lm_case(cfg, shape, probes, seed):
    return lambda: (cfg, torch.randint(0, cfg[0], shape, generator=gen(seed)), probes, seed)


lm_ex = PackageExercise(
    "Step 5 · the language model",
    sol.LanguageModel,
    name="lm_ex",
    expected=_lm_expected,
    harness=_lm_harness,
    compare=_close,
    cases=[
        ("vocab 40, d_model 16, 2 heads, 2 blocks, 8 tokens", _lm_case((40, 16, 2, 32, 2, 8), (2, 8), (1, 4, 7), 21)),
        (
            "vocab 1000, d_model 64, 4 heads, 1 block, 6 of 10 positions",
            _lm_case((1000, 64, 4, 96, 1, 10), (2, 6), (0, 3, 5), 22),
        ),
        ("vocab 50, d_model 12, 3 heads, 3 blocks, 1 token", _lm_case((50, 12, 3, 24, 3, 4), (3, 1), (0,), 23)),
    ],
    mistakes=[
        slip(_LMSlip, final_norm=False),
        slip(_LMSlip, positions=False),
        slip(_LMSlip, scaled=True),
        slip(_LMSlip, output="log"),
        slip(_LMSlip, output="probabilities"),
    ],
    crash_hints={
        "index out of range": "An embedding was indexed past its end: the position table is indexed by "
        "the positions 0 .. T-1, not by the token ids."
    },
)


# --------------------------------------------------------------------------- step 6: the parameter count


def _count_expected(*cfg):
    return sum(p.numel() for p in package_lm(*cfg, device="meta").parameters())


def _off(delta):
    """A count that is ``delta(*cfg)`` away from the right one."""
    return lambda *cfg: sol.count_parameters(*cfg) + delta(*cfg)


params_ex = PackageExercise(
    "Step 6 · count the parameters",
    sol.count_parameters,
    name="params_ex",
    answers={"parameters of the capstone's model (33,278 words)": 5_118_974},
    expected=_count_expected,
    compare=equal,
    cases=[
        (
            "the capstone's model: vocab 33,278, d 128, 4 heads, d_ff 512, 4 blocks, 256 positions",
            lambda: (33278, 128, 4, 512, 4, 256),
        ),
        ("vocab 100, d 16, 2 heads, d_ff 64, 1 block, 10 positions", lambda: (100, 16, 2, 64, 1, 10)),
        ("vocab 5,000, d 64, 8 heads, d_ff 256, 2 blocks, 128 positions", lambda: (5000, 64, 8, 256, 2, 128)),
        ("vocab 7, d 8, 1 head, d_ff 24, 6 blocks, 5 positions", lambda: (7, 8, 1, 24, 6, 5)),
    ],
    mistakes=[
        _off(lambda V, d, h, f, N, T: -N * (4 * d + f + d) - V),
        _off(lambda V, d, h, f, N, T: -N * 4 * d - 2 * d),
        _off(lambda V, d, h, f, N, T: -2 * d),
        _off(lambda V, d, h, f, N, T: -N * 4 * d),
        _off(lambda V, d, h, f, N, T: V * d),
        _off(lambda V, d, h, f, N, T: -V),
        _off(lambda V, d, h, f, N, T: -T * d),
        _off(lambda V, d, h, f, N, T: -N * (d * d + d)),
        _off(lambda V, d, h, f, N, T: (h - 1) * N * (4 * d * d + 4 * d)),
        _off(lambda V, d, h, f, N, T: -N * d * f),
    ],
)


# --------------------------------------------------------------------------- step 7: greedy generation


def _gen_case(prompt_len, n_new, max_len, seed):
    torch.manual_seed(seed)
    model = randomise_(sol.LanguageModel(30, 16, 2, 32, 2, max_len), seed).eval()
    return model, torch.randint(0, 30, (prompt_len,), generator=gen(seed)), n_new, max_len


@torch.no_grad()
def _gen_slip(model, prompt, n_new, max_len, slip):
    ids = prompt.clone()
    for _ in range(n_new):
        context = prompt if slip == "no feedback" else ids[-max_len:]
        logits = model(context[None])[0]
        ids = torch.cat([ids, logits[0 if slip == "first position" else -1].argmax()[None]])
    return ids[len(prompt) :] if slip == "new only" else ids


generate_ex = PackageExercise(
    "Step 7 · greedy generation",
    sol.generate,
    name="generate_ex",
    compare=equal,
    cases=[
        ("prompt 3 tokens, 4 new, max_len 8", lambda: _gen_case(3, 4, 8, 31)),
        ("prompt 5 tokens, 10 new: the text outgrows max_len 8", lambda: _gen_case(5, 10, 8, 32)),
        ("prompt 1 token, 3 new, max_len 4", lambda: _gen_case(1, 3, 4, 33)),
    ],
    mistakes=[
        lambda *a: _gen_slip(*a, "first position"),
        lambda *a: _gen_slip(*a, "no feedback"),
        lambda *a: _gen_slip(*a, "new only"),
    ],
    crash_hints={
        "index out of range": "The text grew past max_len, the last position the model has an embedding "
        "for: feed it only the last max_len tokens."
    },
)
