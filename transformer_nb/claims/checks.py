"""The ledger's checks: each data entry names one of these functions (``check = "name"``) and may give it
arguments (``args = {...}``: the text's numbers). Every check is cheap, seeded and runs on the CPU; it recomputes
what the text claims, with the package where the package computes it, and raises ``AssertionError`` when the
entry's verdict stops being true. Where a notebook's check cell asserts the claim too, the entry names that cell
(``nb_check``)."""

import contextlib
import math
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from ..core.positional import alibi_slopes, sinusoid_frequencies
from ..params import formulas, memory
from ..params.presets import PRESETS
from . import figures

__all__ = []  # the ledger calls these by the names its data files give; no notebook calls them
F64 = torch.float64


def close(a, b, tol: float = 0.0) -> None:
    """Assert ``|a - b| <= tol`` with both values in the message."""
    assert abs(float(a) - float(b)) <= tol, f"{a} is not within {tol} of {b}"


def rand(*shape, seed: int = 0, dtype=F64) -> torch.Tensor:
    """Seeded standard-normal numbers (float64 unless asked), the same everywhere."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def sm(scores: torch.Tensor) -> torch.Tensor:
    return torch.softmax(scores.double(), dim=-1)


def sinusoidal(n: int, d: int) -> torch.Tensor:
    """(n, d) float64: PE(pos, 2i) = sin(pos ω_i), PE(pos, 2i+1) = cos(pos ω_i), the package's ω_i."""
    a = torch.arange(n, dtype=F64)[:, None] * sinusoid_frequencies(d)
    return torch.stack([a.sin(), a.cos()], -1).flatten(1)


def layer_flops(t: int, d: int, h: int = 2, d_ff: int = 64) -> tuple[int, int]:
    """FLOPs of one self-attention + FFN layer on ``t`` tokens, counted by PyTorch's FLOP counter on the meta
    device: (the linear part: Q, K, V, O and the FFN, the quadratic part: Q Kᵀ and A V)."""
    with torch.device("meta"), FlopCounterMode(display=False) as counter:
        x, (wq, wk, wv, wo), up, down = (torch.empty(s) for s in [(t, d), (4, d, d), (d, d_ff), (d_ff, d)])
        q, k, v = ((x @ w).view(t, h, d // h).transpose(0, 1) for w in (wq, wk, wv))
        torch.relu((torch.softmax(q @ k.mT, -1) @ v).transpose(0, 1).reshape(t, d) @ wo @ up) @ down
    n = {str(op): c for op, c in counter.get_flop_counts()["Global"].items()}
    return n.get("aten.mm", 0), n.get("aten.bmm", 0)


def mha(d: int = 16, h: int = 4) -> nn.MultiheadAttention:
    torch.manual_seed(0)
    return nn.MultiheadAttention(d, h, bias=False, batch_first=True).eval()


def layers(preset_name: str, kind: str, n: int = 6) -> int:
    """``n`` encoder layers' parameters, or decoder layers': one more attention (cross-attention) and norm each."""
    cfg = PRESETS[preset_name]
    cross = formulas.attention_params(cfg.with_(n_kv_heads=None)) + formulas.norm_params(cfg)
    return n * (formulas.encoder_layer_params(cfg) + (cross if kind == "decoder" else 0))


# What `values` can recompute by name (`of = "params"`): the package's counts and a few computations; any other `of`
# is the text's arithmetic or a comparison, a formula over the case's numbers, math's functions and these names.
NAMES = {
    "params": lambda preset_name, **change: formulas.param_breakdown(PRESETS[preset_name].with_(**change))["total"],
    "attention": lambda preset_name, **change: formulas.attention_params(PRESETS[preset_name].with_(**change)),
    "ffn": lambda preset_name, **change: formulas.ffn_params(PRESETS[preset_name].with_(**change)),
    "layers": layers,
    "embedding": formulas.embedding_params,
    "block_rule": lambda d_model, layers=1: formulas.block_rule(d_model) * layers,
    "swiglu_hidden_size": formulas.swiglu_hidden_size,
    "kv_cache_bytes": memory.kv_cache_bytes,
    "frequency": lambda d_model, i: sinusoid_frequencies(d_model)[i],
    "wavelength": lambda d_model: 2 * math.pi / sinusoid_frequencies(d_model)[-1],
    "alibi_slope": lambda n_heads, i: alibi_slopes(n_heads)[i],
    "score_rank": lambda t, d, width: torch.linalg.matrix_rank(  # a head of this width, t random tokens
        (rand(t, d) @ rand(d, d, seed=1)[:, :width]) @ (rand(t, d) @ rand(d, d, seed=2)[:, :width]).T
    ),
    "figure": lambda key: float(figures.read(key)),  # a notebook's figure, as a number or as text
    "printed": figures.read,
    "softmax": sm,  # the softmax and entropy of scores
    "entropy": lambda p: -(p * p.log()).sum(),
    "dots": lambda n, d, seed: (rand(n, d, seed=seed) * rand(n, d, seed=seed + 1)).sum(-1),  # n random q·k
    **dict(torch=torch, nn=nn, F=F, rand=rand),  # PyTorch's own layers and functions, for one-line comparisons
}


def values(cases: list[dict], **given) -> None:
    """Each case recomputes ``of(**its numbers) / unit`` and compares it with the text's ``is`` (within ``tol``);
    ``given``: numbers every case uses. Lists are float64 tensors."""
    for case in cases:
        kw = {k: torch.tensor(v, dtype=F64) if isinstance(v, list) else v for k, v in (given | case).items()}
        of, expect, tol, unit = kw.pop("of"), kw.pop("is"), kw.pop("tol", 0), kw.pop("unit", 1)
        got = NAMES[of](**kw) if of in NAMES else eval(of, vars(math) | NAMES | kw | {"__builtins__": {}})
        gap = (torch.as_tensor(got, dtype=F64) / unit - torch.as_tensor(expect, dtype=F64)).abs().max()
        assert gap <= tol, f"{of} = {got / unit}, not within {tol} of {expect}"


# --- attention's structure and cost
def shapes():
    """The shapes the texts' code and walk-throughs state, as PyTorch's modules produce them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = nn.Transformer(64, 8, 1, 1, 256, dropout=0.1, batch_first=True)  # d = 64: the same shape rule
        enc = nn.TransformerEncoderLayer(64, 8, 256, batch_first=True, norm_first=True)
    q, x = rand(1, 4, 8, dtype=torch.float32), rand(1, 6, 16, dtype=torch.float32)
    heads = x.view(1, 6, 4, 4).transpose(1, 2)
    with torch.no_grad():
        assert (sm(q @ q.mT) @ q.double()).shape == (1, 4, 8) and (rand(1000, 8) @ rand(1000, 8).T).shape == (1000,) * 2
        assert (heads @ heads.mT).shape == (1, 4, 6, 6) and heads.transpose(1, 2).reshape(1, 6, 16).shape == x.shape
        assert full(torch.randn(2, 10, 64), torch.randn(2, 7, 64)).shape == (2, 7, 64)  # (B, tgt_len, d_model)
        assert enc(torch.randn(2, 10, 64)).shape == (2, 10, 64)
        assert mha()(torch.randn(1, 4, 16), torch.randn(1, 9, 16), torch.randn(1, 9, 16))[1].shape == (1, 4, 9)


def heads():
    a, x = mha(32), rand(1, 5, 32, dtype=torch.float32)
    bases = torch.linalg.qr(a.in_proj_weight.detach()[:32].double().view(4, 8, 32).transpose(1, 2))[0]
    assert torch.linalg.svdvals(bases[0].T @ bases[1]).max() > 0.3  # head i reads its 8 rows' space: not orthogonal
    with torch.no_grad():
        before = a(x, x, x, average_attn_weights=False)[1]
        a.in_proj_weight[8:16] += 1.0  # change head 2's W_Q only
        after = a(x, x, x, average_attn_weights=False)[1]
    assert torch.equal(before[:, 0], after[:, 0]) and not torch.equal(before[:, 1], after[:, 1])


def crossover():
    lin, quad = zip(*(layer_flops(t, 64, 4, 256) for t in (6 * 64 - 8, 6 * 64, 6 * 64 + 8)))
    assert quad[0] < lin[0] and quad[1] == lin[1] and quad[2] > lin[2]  # the whole layer: equal at 2d + d_ff = 6d
    proj, quad = layer_flops(2 * 64, 64, 4, 0)  # d_ff = 0: the attention sublayer alone
    assert quad == proj and 32 * 4096**2 * 2 == 2**30  # 4T²d = 8Td² at T = 2d


def recompute_flops():
    a, b = layer_flops(1, 16)  # one layer: a t-token pass costs a·t + b·t²
    assert layer_flops(8, 16) == (8 * a, 64 * b)
    s1, s2 = (lambda n: n * (n + 1) // 2), (lambda n: n * (n + 1) * (2 * n + 1) // 6)  # Σ t, Σ t² over n steps
    slow, fast = (lambda n: a * s1(n) + b * s2(n)), (lambda n: a * n + b * s1(n))  # no cache: step t runs t tokens
    assert slow(4096) / slow(2048) > 6 and 2 < fast(4096) / fast(2048) < 4.01  # ×8 without a cache, ≤ ×4 with one


def gqa_quadratic_unchanged():
    for g in (8, 2, 1):  # h = 8 query heads sharing g key heads: every query head still scores all T² pairs
        with FlopCounterMode(display=False) as counter, torch.device("meta"):
            torch.empty(1, 8, 256, 16) @ torch.empty(1, g, 256, 16).repeat_interleave(8 // g, dim=1).mT
        assert counter.get_total_flops() == 2 * 8 * 256 * 256 * 16, g
    assert memory.kv_cache_bytes(1, 8, 16, 256) == 4 * memory.kv_cache_bytes(1, 2, 16, 256)  # the cache shrinks


def kv_step():
    (wq, wk, wv), x, t = (rand(16, 16, seed=s) / 4 for s in (1, 2, 3)), rand(10, 16), 10
    full = sm((x @ wq) @ (x @ wk).T / 4 + torch.ones(t, t).triu(1) * -1e30) @ (x @ wv)
    k_cache, v_cache, new = x[:-1] @ wk, x[:-1] @ wv, x[-1:]  # this step projects only the new token
    k, v = torch.cat([k_cache, new @ wk]), torch.cat([v_cache, new @ wv])
    assert torch.allclose(sm((new @ wq) @ k.T / 4) @ v, full[-1:], atol=1e-12)  # no earlier query recomputed
    assert layer_flops(t, 16)[0] == t * layer_flops(1, 16)[0]  # re-projecting the prefix costs n times O(d²)
    assert not torch.allclose(sm((new @ wq) @ k_cache.T / 4) @ v_cache, full[-1:], atol=1e-3)  # the cache alone


def online_softmax():
    q, k, v = rand(5, 8), rand(12, 8, seed=1), rand(12, 8, seed=2)
    m, den, num = torch.full((5, 1), -math.inf, dtype=F64), torch.zeros(5, 1, dtype=F64), torch.zeros(5, 8, dtype=F64)
    for j in range(0, 12, 4):  # three tiles of keys, running max and sum: the n×n matrix is never stored
        s = q @ k[j : j + 4].T / math.sqrt(8)
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        scale, p = torch.exp(m - m_new), torch.exp(s - m_new)
        den, num, m = den * scale + p.sum(-1, keepdim=True), num * scale + p @ v[j : j + 4], m_new
    assert torch.allclose(num / den, sm(q @ k.T / math.sqrt(8)) @ v, atol=1e-12)


# --- positions
def rotation():
    pe, k, w = sinusoidal(300, 64), 7, sinusoid_frequencies(64)
    c, s, sin, cos = torch.cos(k * w), torch.sin(k * w), pe[:-k, 0::2], pe[:-k, 1::2]  # [sin, cos] @ [[c, -s], [s, c]]
    assert torch.allclose(pe[k:, 0::2], sin * c + cos * s, atol=1e-9)
    assert torch.allclose(pe[k:, 1::2], -sin * s + cos * c, atol=1e-9) and sinusoidal(200, 32).abs().max() <= 1


def pe_code():
    pos, div = torch.arange(100).unsqueeze(1), torch.exp(torch.arange(0, 64, 2) * (-torch.log(torch.tensor(1e4)) / 64))
    text = torch.zeros(100, 64)  # 003's listing
    text[:, 0::2], text[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    assert torch.allclose(text.double(), sinusoidal(100, 64), atol=1e-4)


def ex87():
    u = torch.nn.functional.normalize(sinusoidal(256, 128), dim=1)
    sim, i = u @ u.T, torch.arange(256)
    assert torch.allclose(sim, sim[0][(i[:, None] - i[None, :]).abs()], atol=1e-12)  # exactly a function of |i-j|
    assert int(((sim[0, 1:] - sim[0, :-1]) > 0).nonzero()[0]) == 11


def embedding_scale():
    torch.manual_seed(0)
    pe_rms = float(sinusoidal(64, 512).pow(2).mean().sqrt())
    close(pe_rms, 0.5**0.5, 1e-9)  # sin² and cos² average to 1/2, at any d
    for vocab, d, rms in ((13, 64, 0.161), (37_000, 512, 0.0073)):  # the chapter's §19.10 model; the paper's size
        emb = nn.init.xavier_uniform_(torch.empty(vocab, d))  # the chapter's initialisation of the table
        close(emb.pow(2).mean().sqrt(), rms, 0.003)
        assert float(emb.pow(2).mean().sqrt()) < pe_rms / 4  # unscaled: the embeddings are the small signal
        assert vocab != 13 or float((emb * d**0.5).pow(2).mean().sqrt()) > pe_rms  # scaled by √64: the larger


# --- blocks, norms, FFN


def batchnorm_one():
    bn, x = nn.BatchNorm1d(8).train(), rand(1, 8, 16, dtype=torch.float32)  # (B, C, T) with B = 1
    y, later = bn(x), x + (torch.arange(16) == 15)  # later: only the last position changed
    assert torch.allclose(y.mean(dim=(0, 2)), torch.zeros(8), atol=1e-6)  # runs: statistics over the 16 positions
    assert not torch.allclose(bn(later)[..., 0], y[..., 0])  # so the first position's output depends on the last
    with contextlib.suppress(ValueError):  # B·T = 1: one value per channel
        raise AssertionError(f"BatchNorm1d normalised one value per channel: {bn(torch.randn(1, 8, 1))}")


def ffn_keys_values():
    torch.manual_seed(0)
    up, down, x = nn.Linear(8, 32, bias=False).double(), nn.Linear(32, 8, bias=False).double(), rand(8)
    memories = sum(F.relu(up.weight[i] @ x) * down.weight[:, i] for i in range(32))  # key row i, value column i
    assert torch.allclose(down(F.relu(up(x))), memories, atol=1e-12)


def ffn_position_wise():
    torch.manual_seed(0)
    ffn, x = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16)), rand(2, 5, 16, dtype=torch.float32)
    x2 = x + (torch.arange(5) == 3)[:, None]  # change one token (position 3): no other position's output moves
    with torch.no_grad():
        y, alone = ffn(x), torch.stack([ffn(x[:, t]) for t in range(5)], 1)  # one weight set for every position
        moved = (ffn(x2) - y).abs().amax(dim=(0, 2))
    assert torch.allclose(y, alone, atol=1e-6) and moved[3] > 1e-3 and moved[[0, 1, 2, 4]].max() == 0


def modules():
    """What PyTorch's layers hold: 2-D embedding tables, one tied matrix, the decoder's extra cross-attention."""
    names = lambda layer: sorted(n for n, m in layer.named_children() if isinstance(m, nn.MultiheadAttention))
    assert names(nn.TransformerEncoderLayer(8, 2, batch_first=True)) == ["self_attn"]
    assert names(nn.TransformerDecoderLayer(8, 2, batch_first=True)) == ["multihead_attn", "self_attn"]
    emb, head = nn.Embedding(100, 8), nn.Linear(8, 100, bias=False)
    head.weight = emb.weight
    assert emb.weight.dim() == 2 and sum(p.numel() for p in nn.ModuleList([emb, head]).parameters()) == 100 * 8


# --- training


def next_token_loss():
    logits, x = rand(1, 6, 11, seed=3)[0], torch.randint(11, (7,), generator=torch.Generator().manual_seed(4))
    by_hand = -sum(torch.log_softmax(logits[t], -1)[x[t + 1]] for t in range(6))  # position t predicts t + 1
    close(F.cross_entropy(logits, x[1:], reduction="sum"), by_hand, 1e-9)
    assert abs(float(F.cross_entropy(logits, x[:-1], reduction="sum") - by_hand)) > 1e-3  # unshifted


def grad_accumulation():
    torch.manual_seed(0)
    w, x = nn.Linear(8, 3), rand(32, 8, seed=5, dtype=torch.float32)
    y = torch.randint(3, (32,), generator=torch.Generator().manual_seed(6))
    full = torch.autograd.grad(F.cross_entropy(w(x), y), w.weight)[0]
    for xb, yb in zip(x.split(4), y.split(4)):  # 8 micro-batches, each loss divided by 8
        (F.cross_entropy(w(xb), yb) / 8).backward()
    assert torch.allclose(w.weight.grad, full, atol=1e-6)


def amp_deprecated():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.amp.GradScaler()
    assert any(issubclass(w.category, FutureWarning) and "deprecated" in str(w.message) for w in caught)


def tensor_parallel_ffn():
    w1, w2, x = rand(64, 16, seed=11), rand(16, 64, seed=12), rand(5, 16, seed=13)
    cols, ins = torch.arange(64).chunk(4), torch.arange(16).chunk(4)  # W1 split by output columns, W2 by input rows
    assert torch.allclose(sum(F.gelu(x @ w1[c].T) @ w2[:, c].T for c in cols), F.gelu(x @ w1.T) @ w2.T, atol=1e-9)
    assert not torch.allclose(sum(F.gelu(x[:, c] @ w1[:, c].T) for c in ins), F.gelu(x @ w1.T))  # split by input


def tensor_parallel_heads():
    a, x = mha(), rand(1, 6, 16, seed=7, dtype=torch.float32)

    def device(c):  # two of the four heads (their 8 columns of Q, K and V) and the same 8 input rows of W^O
        q, k, v = ((x @ w[c].T).view(1, 6, 2, 4).transpose(1, 2) for w in a.in_proj_weight.chunk(3))
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(1, 6, 8) @ a.out_proj.weight[:, c].T

    with torch.no_grad():  # the two devices' outputs, summed (one all-reduce), are the whole layer's
        assert torch.allclose(sum(map(device, torch.arange(16).chunk(2))), a(x, x, x, need_weights=False)[0], atol=1e-5)
