"""The ledger's checks: each data entry names one of these functions (``check = "name"``). Every check is cheap
(milliseconds), seeded and runs on the CPU; it raises ``AssertionError`` when the entry's verdict stops being true."""

import math
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from . import figures

__all__ = []  # the ledger calls these by the names its data files give; no notebook calls them


def close(a: float, b: float, tol: float) -> None:
    """Assert ``|a - b| <= tol`` with both values in the message."""
    assert abs(float(a) - float(b)) <= tol, f"{a} is not within {tol} of {b}"


def gen(seed: int = 0) -> torch.Generator:
    """A CPU generator with a fixed seed, so every check draws the same numbers everywhere."""
    return torch.Generator().manual_seed(seed)


def softmax_rows(scores: torch.Tensor) -> torch.Tensor:
    """Row-wise softmax in float64."""
    return torch.softmax(scores.double(), dim=-1)


def sinusoidal(n: int, d: int) -> torch.Tensor:
    """(n, d) float64: PE(pos, 2i) = sin(pos ω_i), PE(pos, 2i+1) = cos(pos ω_i), ω_i = 10000^(-2i/d)."""
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.empty(n, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * w), torch.cos(pos * w)
    return pe


def rope(x: torch.Tensor, m: float) -> torch.Tensor:
    """Rotate pairs (x_2i, x_2i+1) of the last axis by m θ_i, θ_i = 10000^(-2i/d) (RoFormer, interleaved)."""
    d = x.shape[-1]
    a = m * 10000.0 ** (-torch.arange(0, d, 2, dtype=x.dtype) / d)
    out = torch.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * torch.cos(a) - x[..., 1::2] * torch.sin(a)
    out[..., 1::2] = x[..., 0::2] * torch.sin(a) + x[..., 1::2] * torch.cos(a)
    return out


def alibi_slopes(n: int) -> list[float]:
    """ALiBi's slopes (Press et al. 2022, §3 and the released code): 2^(-8h/n0) for the n0 = largest power of
    two <= n, then every other slope of 2·n0 heads until there are n."""
    n0 = 2 ** (n.bit_length() - 1)
    base = [2.0 ** (-8 * h / n0) for h in range(1, n0 + 1)]
    extra = [2.0 ** (-8 * h / (2 * n0)) for h in range(1, 2 * n0 + 1, 2)]
    return base + extra[: n - n0]


def layer_flops(t: int, d: int, h: int, d_ff: int) -> tuple[int, int]:
    """FLOPs of one self-attention + FFN layer on ``t`` tokens, counted by PyTorch's FLOP counter on the meta
    device (nothing is computed). Returns (the linear-in-T part: the Q, K, V, O projections and the FFN,
    the quadratic part: Q Kᵀ and A V for all heads)."""
    with torch.device("meta"):
        proj = [nn.Linear(d, d, bias=False) for _ in range(4)]
        up, down = nn.Linear(d, d_ff, bias=False), nn.Linear(d_ff, d, bias=False)
        x = torch.empty(t, d)
    with FlopCounterMode(display=False) as counter:
        q, k, v = (p(x).view(t, h, d // h).transpose(0, 1) for p in proj[:3])
        a = torch.softmax(q @ k.transpose(1, 2), dim=-1) @ v
        y = proj[3](a.transpose(0, 1).reshape(t, d))
        down(torch.relu(up(y)))
    counts = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
    return counts.get("aten.mm", 0), counts.get("aten.bmm", 0)


def tiny_mha(d: int = 16, h: int = 4, seed: int = 0) -> nn.MultiheadAttention:
    """A seeded ``nn.MultiheadAttention`` without biases, in eval mode."""
    torch.manual_seed(seed)
    return nn.MultiheadAttention(d, h, bias=False, batch_first=True).eval()


def gpt_params(vocab: int, ctx: int, d: int, layers: int) -> int:
    """A GPT-2/3-style decoder with tied output: token + position embeddings, per block 12d² + 13d
    (attention 4d² + 4d, FFN 8d² + 5d, two LayerNorms 4d), a final LayerNorm."""
    return vocab * d + ctx * d + layers * (12 * d * d + 13 * d) + 2 * d


def original_params(d: int, d_ff: int, layers: int = 6, vocab: int = 37000) -> tuple[int, int, int]:
    """The original encoder-decoder with biases, Post-LN, one shared vocabulary (37K BPE) tied three ways:
    (encoder, decoder, embeddings)."""
    attn, ffn, norm = 4 * d * d + 4 * d, 2 * d * d_ff + d_ff + d, 2 * d
    return layers * (attn + ffn + 2 * norm), layers * (2 * attn + ffn + 3 * norm), vocab * d


def gaussian_outside(k: float) -> float:
    """P(|Z| > k) for a standard normal Z."""
    return math.erfc(k / math.sqrt(2))


def generation_flops(n: int, d: int = 16, h: int = 2, d_ff: int = 64) -> tuple[int, int]:
    """FLOPs of one layer generating ``n`` tokens greedily (counted per token by :func:`layer_flops`):
    (without a cache: step t re-runs the whole t-token prefix, with a cache: step t runs one token against t keys)."""
    a, b = layer_flops(1, d, h, d_ff)  # per token: the linear part a, and the quadratic coefficient b
    assert layer_flops(8, d, h, d_ff) == (8 * a, 64 * b)  # a·t + b·t² for a t-token pass
    s1, s2 = n * (n + 1) // 2, n * (n + 1) * (2 * n + 1) // 6  # Σ t and Σ t² over t = 1..n
    return a * s1 + b * s2, a * n + b * s1


def gqa_score_flops(t: int, h: int, g: int, d_head: int = 16) -> int:
    """FLOPs of Q Kᵀ for ``h`` query heads sharing ``g`` key heads (grouped-query attention) on ``t`` tokens,
    counted by PyTorch's FLOP counter on the meta device."""
    with torch.device("meta"):
        q, k = torch.empty(1, h, t, d_head), torch.empty(1, g, t, d_head)
    with FlopCounterMode(display=False) as counter:
        q @ k.repeat_interleave(h // g, dim=1).transpose(-2, -1)  # each group's keys serve h/g query heads
    return counter.get_total_flops()


Q1 = torch.tensor([1.0, 0, 1], dtype=torch.float64)


K4 = torch.tensor([[1.0, 0, 0], [0, 1, 0], [1, 0, 1], [0, 0, 1]], dtype=torch.float64)


def row1():
    return K4 @ Q1 / math.sqrt(3)


def rank_collapse():
    def spread(residual: bool, norm: bool, depth: int = 12) -> float:
        torch.manual_seed(0)
        layers = [nn.MultiheadAttention(32, 4, bias=False, batch_first=True).eval() for _ in range(depth)]
        x = torch.randn(1, 10, 32, generator=gen())
        with torch.no_grad():
            for attn in layers:
                y = attn(x, x, x, need_weights=False)[0]
                x = x + y if residual else y
                x = F.layer_norm(x, (32,)) if norm else x
        x = x / x.norm(dim=-1, keepdim=True)
        return float((x - x.mean(1, keepdim=True)).norm())  # 0 when every position is the same direction

    assert spread(residual=False, norm=False) < 1e-4 and spread(residual=False, norm=True) < 1e-4  # collapse
    assert spread(residual=True, norm=False) > 0.5 and spread(residual=True, norm=True) > 0.5  # kept apart
    assert spread(residual=True, norm=True, depth=96) < spread(residual=True, norm=True) / 10  # slowed, not stopped


def serial():
    x = torch.randn(1000, 8, generator=gen())
    assert (x @ x.T).shape == (1000, 1000)  # all 1000² scores from one product, no chain over positions


def params_65_213():
    base, big = (sum(original_params(d, f)) for d, f in ((512, 2048), (1024, 4096)))
    assert (base, big) == (63_082_496, 214_245_376), (base, big)
    close(base / 1e6, 65, 2.0)
    close(big / 1e6, 213, 1.5)


def scores512():
    assert 512**2 == 262_144


def variance():
    q, k = (torch.randn(40_000, 64, generator=gen(s), dtype=torch.float64) for s in (1, 2))
    s = (q * k).sum(-1)
    close(s.var() / 64, 1.0, 0.03)
    close((s / 8).var(), 1.0, 0.03)


def std64():
    assert math.sqrt(64) == 8
    close(1 - gaussian_outside(3), 0.9973, 1e-4)  # [-24, 24] = ±3σ


def std512():
    close(math.sqrt(512), 22.6, 0.05)
    close(3 * math.sqrt(512), 68, 0.5)


def saturate():
    w = softmax_rows(torch.cat([torch.tensor([24.0]), torch.zeros(511)]))[0]
    close(w, 1 - 511 * math.exp(-24), 1e-12)
    assert w > 1 - 2e-8


def range3():
    close(1 - gaussian_outside(3), 0.9973, 1e-4)
    close(262_144 * gaussian_outside(3), 707.7, 0.1)  # expected outside [-3, 3] in a 512x512 score matrix


def mask_zero():
    s = torch.randn(5, 5, generator=gen(), dtype=torch.float64).masked_fill(torch.ones(5, 5).triu(1).bool(), -math.inf)
    w = torch.softmax(s, -1)
    assert (w.triu(1) == 0).all() and torch.allclose(w.sum(-1), torch.ones(5, dtype=torch.float64))


def q1k1():
    assert [int(x) for x in (Q1 * K4[0])] == [1, 0, 0] and int(Q1 @ K4[0]) == 1
    assert 1 + 0 + 1 == 2 and int(Q1 @ K4[2]) == 2


def scaled_row():
    assert torch.allclose(row1(), torch.tensor([0.577, 0, 1.155, 0.577], dtype=torch.float64), atol=5e-4)


def expsum():
    close(row1().exp().sum(), 7.7357, 5e-5)
    close(sum(math.exp(x) for x in (0.577, 0.0, 1.155, 0.577)), 7.7354, 5e-5)  # from the 3-decimal exponents
    close(sum(round(math.exp(x), 3) for x in row1().tolist()), 7.735, 1e-9)  # from the 3-decimal exponentials
    assert abs(row1().exp().sum() - 7.734) > 1e-3


def weights():
    w = softmax_rows(row1())
    assert torch.allclose(w, torch.tensor([0.230, 0.129, 0.410, 0.230], dtype=torch.float64), atol=5e-4)


def sum999():
    close(0.230 + 0.129 + 0.410 + 0.230, 0.999, 1e-12)
    close(softmax_rows(row1()).sum(), 1.0, 1e-12)


def shapes():
    q, k, v = (torch.randn(1, 4, 8, generator=gen(s)) for s in range(3))
    w = torch.softmax(q @ k.transpose(1, 2) / 8**0.5, -1)
    assert (w @ v).shape == (1, 4, 8) and w[0].shape == (4, 4)


def flops_equal():
    t, d = 128, 512
    scores = {h: h * 2 * t * t * (d // h) for h in (1, 8, 64)}  # Q_i K_iᵀ for every head
    assert len(set(scores.values())) == 1 and scores[1] == 2 * t * t * d
    softmax_entries = {h: h * t * t for h in (1, 8)}  # what does grow with h: one T×T softmax per head
    assert softmax_entries[8] == 8 * softmax_entries[1] < scores[8] / 8  # yet small beside the products


def head_rank():
    t, d, h = 128, 512, 8
    x = torch.randn(t, d, generator=gen(), dtype=torch.float64)
    wq, wk = (torch.randn(d, d, generator=gen(s), dtype=torch.float64) for s in (1, 2))
    head = (x @ wq[:, : d // h]) @ (x @ wk[:, : d // h]).T  # one head's T×T logits
    assert torch.linalg.matrix_rank(head) == d // h == 64
    assert torch.linalg.matrix_rank((x @ wq) @ (x @ wk).T) == t  # one full-width head: full rank


def code_shapes():
    x = torch.randn(1, 6, 16, generator=gen())
    q = x.view(1, 6, 4, 4).transpose(1, 2)
    assert (q @ q.transpose(-2, -1)).shape == (1, 4, 6, 6) and q.transpose(1, 2).reshape(1, 6, 16).shape == (1, 6, 16)


def attn_params():
    for d, h in ((512, 8), (1024, 16)):
        assert 3 * h * d * (d // h) + d * d == 4 * d * d  # h cancels
    assert 4 * 512**2 == 1_048_576 and 4 * 1024**2 == 4_194_304


def leak_generates_badly():
    assert figures.value("02:unmasked_rule_kept") < 30, "without the mask, generation keeps the rule rarely"


def equivariant():
    mha, x, p = tiny_mha(), torch.randn(1, 7, 16, generator=gen()), torch.randperm(7, generator=gen(1))
    with torch.no_grad():
        assert torch.allclose(mha(x[:, p], x[:, p], x[:, p])[0], mha(x, x, x)[0][:, p], atol=1e-6)


def causal_positional():
    mha = tiny_mha()
    first, repeated = torch.randn(1, 1, 16, generator=gen()), torch.randn(1, 1, 16, generator=gen(1))
    seq = torch.cat([first, repeated.expand(1, 8, 16)], 1)  # A B B B B B B B B
    mask = torch.ones(9, 9).triu(1).bool()
    with torch.no_grad():
        free, causal = mha(seq, seq, seq)[0][0, 1:], mha(seq, seq, seq, attn_mask=mask)[0][0, 1:]
    assert (free - free[0]).abs().max() < 1e-6 and torch.pdist(causal).min() > 1e-4


def frequencies():
    w = 10000.0 ** (-torch.arange(0, 512, 2, dtype=torch.float64) / 512)
    assert w[0] == 1 and abs(2 * math.pi / w[0] - 2 * math.pi) < 1e-12
    close(w[-1], 10000 ** (-510 / 512), 1e-18)


def rotation():
    pe, k = sinusoidal(300, 64), 7
    angle = k * 10000.0 ** (-torch.arange(0, 64, 2, dtype=torch.float64) / 64)
    c, s = torch.cos(angle), torch.sin(angle)
    sin, cos = pe[:-k, 0::2], pe[:-k, 1::2]  # [sin, cos] @ [[c, -s], [s, c]], every pair at once
    assert torch.allclose(pe[k:, 0::2], sin * c + cos * s, atol=1e-9)
    assert torch.allclose(pe[k:, 1::2], -sin * s + cos * c, atol=1e-9)
    assert torch.allclose(c * c + s * s, torch.ones(32, dtype=torch.float64), atol=1e-12)  # det +1, orthogonal


def pe_code():
    pe = sinusoidal(128, 64)
    assert pe.shape == (128, 64)
    close(pe[0].norm(), math.sqrt(32), 1e-12)
    close(pe[127].norm(), math.sqrt(32), 1e-12)


def rope_identity():
    q, k = (torch.randn(8, generator=gen(s), dtype=torch.float64) for s in (0, 1))
    close(rope(q, 5) @ rope(k, 12), rope(q, 10) @ rope(k, 17), 1e-12)  # Exercise 8.10: offset 7 both times
    assert abs(rope(q, 5) @ rope(k, 12) - rope(q, 12) @ rope(k, 5)) > 1e-3  # n - m, not |n - m|


def alibi_last():
    for n in (4, 8, 16):
        s = alibi_slopes(n)
        assert s[0] == 2 ** (-8 / n) and s[-1] == 2**-8 and s[-1] != 0.5
        assert all(abs(b / a - s[1] / s[0]) < 1e-12 for a, b in zip(s, s[1:]))
    assert alibi_slopes(8)[0] == 0.5


def table_params():
    assert nn.Embedding(512, 768).weight.numel() == 512 * 768
    try:
        nn.Embedding(512, 8)(torch.tensor([512]))
    except IndexError:
        return
    raise AssertionError("a learned table must have no row for position 512")


def residual_grad():
    x = torch.randn(5, requires_grad=True)
    (x + 0.0 * torch.tanh(x)).sum().backward()
    assert torch.equal(x.grad, torch.ones(5))


def layernorm():
    x = torch.randn(3, 8, generator=gen(), dtype=torch.float64)
    mu, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    ln = nn.LayerNorm(8, dtype=torch.float64)
    assert torch.allclose(ln(x), (x - mu) / torch.sqrt(var + ln.eps), atol=1e-12)


def eps_default():
    assert nn.LayerNorm(4).eps == 1e-5  # PyTorch's default differs from the 1e-6 of the original code


def ffn():
    assert 2 * 512 * 2048 == 2_097_152 == 2 * 1_048_576
    assert (2 * 512 * 2048) / (4 * 512**2 + 2 * 512 * 2048) == 2 / 3


def swiglu_width():
    assert 256 * math.ceil(int(2 * 4 * 4096 / 3) / 256) == 11008  # LLaMA-7B's FFN width, not 4d = 16384


def not_linear():
    mha, x, y = tiny_mha(), *(torch.randn(1, 6, 16, generator=gen(s)) for s in (1, 2))
    with torch.no_grad():
        f = lambda z: mha(z, z, z)[0]
        assert (f(2 * x) - 2 * f(x)).abs().max() > 1e-3 and (f(x + y) - f(x) - f(y)).abs().max() > 1e-3
        assert torch.allclose(mha(x, x, 2 * y)[0], 2 * mha(x, x, y)[0], atol=1e-5)  # linear in V, weights fixed


def block_shape():
    torch.manual_seed(0)
    block = nn.TransformerEncoderLayer(32, 4, 128, dropout=0.0, batch_first=True, norm_first=True)
    assert block(torch.randn(1, 5, 32)).shape == (1, 5, 32)


def mask5():
    m = torch.ones(5, 5).tril()
    assert int(m.sum()) == 15 and m.sum(1).tolist() == [1, 2, 3, 4, 5]


def two_layer_mask():
    torch.manual_seed(0)
    layers = [nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True).eval() for _ in range(2)]
    x, mask = torch.randn(1, 6, 16, generator=gen()), nn.Transformer.generate_square_subsequent_mask(6)

    def last(n, m):
        h = x
        for layer in layers[:n]:
            h = layer(h, src_mask=m)
        return h[0, -1]

    with torch.no_grad():
        assert torch.allclose(last(1, mask), last(1, None), atol=1e-5)  # one layer: no difference
        assert (last(2, mask) - last(2, None)).abs().max() > 1e-3  # two layers: the output changes


def ex81():
    q, k = (torch.randn(200_000, generator=gen(s), dtype=torch.float64) for s in (3, 4))
    close((q * k).mean(), 0.0, 0.01)
    close((q * k).var(), 1.0, 0.02)


def ex82():
    d, f, n, v = 512, 2048, 6, 32000
    total = v * d + n * (4 * d * d + 2 * d * f + 4 * d)
    assert total == 35_270_656 and total + n * (4 * d + f + d) == 35_298_304


def crossover():
    d, h, d_ff = 64, 4, 256
    lin, quad = layer_flops(6 * d, d, h, d_ff)
    assert lin == quad  # the whole layer: quadratic = linear at T = 2d + d_ff = 6d
    lin, quad = layer_flops(6 * d - 8, d, h, d_ff)
    assert quad < lin
    lin, quad = layer_flops(6 * d + 8, d, h, d_ff)
    assert quad > lin
    t = 2 * d  # the attention sublayer alone: 4T²d = 8Td² at T = 2d
    assert 4 * t * t * d == 8 * t * d * d and 32 * 4096**2 * 2 == 2**30


def ex85():
    q, k, v = (torch.randn(2, 8, 16, generator=gen(s)) for s in range(3))
    w = torch.softmax((q @ k.transpose(1, 2) / 4).masked_fill(torch.ones(8, 8).triu(1).bool(), -math.inf), -1)
    assert (w.triu(1) == 0).all() and torch.allclose(w.sum(-1), torch.ones(2, 8))
    assert F.scaled_dot_product_attention(q, k, v, is_causal=True).shape == (2, 8, 16)


def ex87():
    pe = sinusoidal(256, 128)
    u = pe / pe.norm(dim=1, keepdim=True)
    sim = u @ u.T
    i = torch.arange(256)
    assert torch.allclose(sim, sim[0][(i[:, None] - i[None, :]).abs()], atol=1e-12)  # exactly a function of |i-j|
    first_rise = int(((sim[0, 1:] - sim[0, :-1]) > 0).nonzero()[0])
    assert first_rise == 11


def ex89_ppl():
    v = figures.value
    assert v("10:ex89_ppl_lstm") < v("10:ex89_ppl_transformer"), "the exercise's recipe: the LSTM is lower"
    assert v("10:valid_transformer") < v("10:valid_lstm"), "the tuned recipe: the Transformer is lower"


def equivariant_not_invariant():
    mha, x, p = tiny_mha(), torch.randn(1, 6, 16, generator=gen()), torch.tensor([5, 4, 3, 2, 1, 0])
    with torch.no_grad():
        out, out_p = mha(x, x, x)[0], mha(x[:, p], x[:, p], x[:, p])[0]
    assert (out_p - out).abs().max() > 1e-3  # not invariant: the rows move
    assert torch.allclose(out_p, out[:, p], atol=1e-6)  # equivariant


def pe_bounded_linear():
    assert sinusoidal(200, 32).abs().max() <= 1
    rotation()  # PE(pos + k) = PE(pos) · M_k, M_k block-diagonal rotations depending on k only


def rmsnorm():
    x = torch.randn(3, 8, generator=gen(), dtype=torch.float64)
    ref = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    assert torch.allclose(nn.RMSNorm(8, eps=1e-6, dtype=torch.float64)(x), ref, atol=1e-12)


def gelu():
    z = torch.linspace(-6, 6, 2001, dtype=torch.float64)
    tanh = 0.5 * z * (1 + torch.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z**3)))
    assert torch.allclose(tanh, F.gelu(z, approximate="tanh"), atol=1e-12)
    assert (tanh - F.gelu(z)).abs().max() < 1e-3


def causal_mask():
    m = torch.triu(torch.ones(5, 5), diagonal=1)
    m = m.masked_fill(m == 1, -math.inf)
    assert torch.equal(m, nn.Transformer.generate_square_subsequent_mask(5))


def cross_shape():
    mha = tiny_mha()
    with torch.no_grad():
        _, w = mha(torch.randn(1, 4, 16), torch.randn(1, 9, 16), torch.randn(1, 9, 16))
    assert w.shape == (1, 4, 9)  # (tgt_len, src_len), averaged over heads


def embedding_is_2d():
    assert nn.Embedding(13, 64).weight.dim() == 2  # so 'p.dim() > 1' Xavier-initialises the tables too


def tying():
    emb, head = nn.Embedding(100, 8), nn.Linear(8, 100, bias=False)
    head.weight = emb.weight
    both = nn.ModuleList([emb, head])
    assert sum(p.numel() for p in both.parameters()) == 100 * 8  # shared once, saving |V|·d


def table():
    d, f = 512, 2048
    enc, dec, emb = original_params(d, f)
    assert (4 * d * d, 2 * d * f, 2 * 2 * d) == (1_048_576, 2_097_152, 2_048)
    assert (enc, dec, emb, enc + dec + emb) == (18_914_304, 25_224_192, 18_944_000, 63_082_496)


def embedding_scale():
    torch.manual_seed(0)
    pe_rms = float(sinusoidal(64, 512).pow(2).mean().sqrt())
    close(pe_rms, 0.5**0.5, 1e-9)  # sin² and cos² average to 1/2, at any d
    for vocab, d, rms in ((13, 64, 0.161), (37_000, 512, 0.0073)):  # the chapter's §19.10 model; the paper's size
        emb = nn.init.xavier_uniform_(torch.empty(vocab, d))  # the chapter's initialisation of the table
        close(emb.pow(2).mean().sqrt(), rms, 0.003)
        assert float(emb.pow(2).mean().sqrt()) < pe_rms / 4  # unscaled: the embeddings are the small signal
        if vocab == 13:  # scaled by √64 = 8: 1.29, now the larger signal
            assert float((emb * d**0.5).pow(2).mean().sqrt()) > pe_rms


def shift():
    tgt = ["I", "like", "cats"]
    seq = ["<bos>", *tgt, "<eos>"]
    assert seq[:-1] == ["<bos>", "I", "like", "cats"] and seq[1:] == ["I", "like", "cats", "<eos>"]


def label_smoothing():
    v, eps, logits = 13, 0.1, torch.tensor([[4.0, 1.0] + [0.0] * 11], dtype=torch.float64)
    logp = torch.log_softmax(logits, -1)[0]
    text = torch.full((v,), eps / (v - 1), dtype=torch.float64)
    text[0] = 1 - eps  # the text's rule = tensor2tensor's: confidence 1-ε, the rest (1-confidence)/(V-1)
    uniform = torch.full((v,), eps / v, dtype=torch.float64)
    uniform[0] += 1 - eps  # PyTorch's: the one-hot mixed with the uniform distribution over all V classes
    torch_loss = F.cross_entropy(logits, torch.tensor([0]), label_smoothing=eps)
    close(torch_loss, -(uniform * logp).sum(), 1e-12)
    assert abs(torch_loss - (-(text * logp).sum())) > 1e-3
    close(text.sum(), 1.0, 1e-12)


def schedule():
    d, w = 512, 4000
    lr = lambda s: d**-0.5 * min(s**-0.5, s * w**-1.5)
    close(lr(w), (d * w) ** -0.5, 1e-15)
    assert lr(1) < lr(2000) < lr(w) and lr(4 * w) == lr(w) / 2  # linear up, then ∝ 1/√step
    close(lr(2000), lr(w) * 2000 / w, 1e-15)


def toy_sizes():
    assert 10 + 3 == 13 and math.ceil(2000 / 64) * 30 == 960


def ten_x():
    close(10**-0.050, 0.891, 5e-4)  # each 10× compute multiplies L by 0.89: a constant ratio, not a constant step
    losses = [10 ** (-0.050 * k) for k in range(4)]
    assert len({round(b / a, 12) for a, b in zip(losses, losses[1:])}) == 1
    steps = [a - b for a, b in zip(losses, losses[1:])]
    assert steps[0] > steps[1] > steps[2] > 0  # the absolute improvement shrinks


def amp_deprecated():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.amp.GradScaler()
    assert any(issubclass(w.category, FutureWarning) and "deprecated" in str(w.message) for w in caught)


def four_d():
    d = 512
    quad, ffn = (lambda n: 4 * n * n * d), (lambda n: 2 * 2 * n * d * 4 * d)
    assert quad(4 * d) == ffn(4 * d) and quad(4 * d + 1) > ffn(4 * d + 1) and quad(4 * d - 1) < ffn(4 * d - 1)


def kv_linear():
    per_token = 2 * 6 * 512  # keys and values, 6 layers, d = 512 numbers per token
    assert [per_token * n for n in (40, 80)] == [40 * per_token, 2 * 40 * per_token]


def recompute_flops():
    (slow, fast), (slow2, fast2) = generation_flops(2048), generation_flops(4096)
    assert slow2 / slow > 6  # doubling n multiplies the cache-less cost by nearly 8: O(n³d) attention dominates
    assert 2 < fast2 / fast < 4.01  # with a cache at most ×4: O(nd²) + O(n²d)


def preln_stream_grows():
    def rms_after(norm_first: bool) -> float:
        torch.manual_seed(0)
        blocks = [
            nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=norm_first).eval()
            for _ in range(24)
        ]
        x = torch.randn(2, 8, 32, generator=gen())
        with torch.no_grad():
            for block in blocks:
                x = block(x)
        return float(x.pow(2).mean().sqrt())

    assert rms_after(norm_first=True) > 1.5  # Pre-LN: the residual stream grows with depth
    close(rms_after(norm_first=False), 1.0, 1e-3)  # Post-LN: renormalised after every block


def prompt_needs_mask():
    q, k, v = (torch.randn(1, 4, 25, 8, generator=gen(s)) for s in range(3))
    differs = F.scaled_dot_product_attention(q, k, v) - F.scaled_dot_product_attention(q, k, v, is_causal=True)
    per_pos = differs.abs().amax(dim=(0, 1, 3)) > 1e-5
    assert int(per_pos.sum()) == 24 and not bool(per_pos[-1])


def text_recipe_partial():
    assert figures.value("09:text_exact") < 90, "the text's recipe learns the task only partly"
    assert figures.read("09:text_demo") != "[4, 9, 7, 5, 3, 2]", "its demo is decoded wrongly"
    assert figures.value("09:improved_steps") <= 960, "the improved recipe gets there within the text's budget"


def var():
    q, k = (torch.randn(40_000, 16, generator=gen(s), dtype=torch.float64) for s in (5, 6))
    s = (q * k).sum(-1)
    close(s.mean(), 0.0, 0.1)
    close(s.var() / 16, 1.0, 0.03)


def aligned_scores():
    q = torch.randn(40_000, 64, generator=gen(9), dtype=torch.float64)
    k = torch.randn(40_000, 64, generator=gen(10), dtype=torch.float64)
    close(((q * k).sum(-1) / 8).var(), 1.0, 0.03)  # independent: unit variance, as the text says
    close(((q * q).sum(-1) / 8).mean(), 8.0, 0.05)  # aligned (k = q): the scaled scores sit near √d_k = 8


def causal_same():
    s = torch.randn(6, 6, generator=gen(), dtype=torch.float64)
    m = torch.zeros(6, 6, dtype=torch.float64).masked_fill(torch.ones(6, 6).triu(1).bool(), -math.inf)
    assert torch.equal(softmax_rows((s + m) / 4), softmax_rows(s / 4 + m))
    b = -torch.arange(6.0, dtype=torch.float64)  # a finite bias (ALiBi-like) is NOT unchanged by the division
    assert not torch.allclose(softmax_rows((s + b) / 4), softmax_rows(s / 4 + b))


def wavelength():
    for d, value in ((512, 60_611.5), (64, 47_117.0)):
        longest = 2 * math.pi / 10000 ** (-(d - 2) / d)
        close(longest, value, 0.5)
        assert longest < 0.97 * 2 * math.pi * 10000


def rope_theta():
    d = 8
    roformer = [10000 ** (-2 * (i - 1) / d) for i in range(1, d // 2 + 1)]  # θ_i, i = 1..d/2
    text = [10000 ** (-2 * j / d) for j in range(1, d // 2 + 1)]  # 002 read literally
    assert roformer[0] == 1.0 and text[0] == 10000 ** (-2 / d) and text[-1] == 1e-4
    c = 10000 ** (-2 / d)
    assert all(abs(t - c * r) < 1e-15 for t, r in zip(text, roformer))  # every angle scaled by c


def rope_identity_002():
    q, k = (torch.randn(16, generator=gen(s), dtype=torch.float64) for s in (7, 8))
    for m, n in ((0, 9), (40, 49), (1000, 1009)):
        close(rope(q, m) @ rope(k, n), rope(q, 0) @ rope(k, 9), 1e-9)


def twelve():
    d = 768
    assert 3 * d * d + d * d + 4 * d * d + 4 * d * d == 12 * d * d and 4 * d == 2 * (2 * d)


def gpt3():
    assert 12 * 12288**2 * 96 == 173_946_175_488
    assert gpt_params(50257, 2048, 12288, 96) == 174_604_259_328


def gpt2():
    counts = [gpt_params(50257, 1024, d, n) for d, n in ((768, 12), (1024, 24), (1280, 36), (1600, 48))]
    assert counts == [124_439_808, 354_823_168, 774_030_080, 1_557_611_200]
    assert round(counts[-1] / 1e9, 1) == 1.6 and 1.5e9 < counts[-1] < 1.56e9


def kv40():
    from ..params.memory import kv_cache_bytes  # the package's, imported only where a check needs it

    mha, gqa = kv_cache_bytes(80, 64, 128, 4096), kv_cache_bytes(80, 8, 128, 4096)
    assert (mha, gqa, mha // gqa) == (10_737_418_240, 1_342_177_280, 8)
    assert abs(40e9 - mha) > 0.2 * mha


def online_softmax():
    q, k, v = (torch.randn(n, 8, generator=gen(s), dtype=torch.float64) for s, n in ((0, 5), (1, 12), (2, 12)))
    m = torch.full((5, 1), -math.inf, dtype=torch.float64)
    den, num = torch.zeros(5, 1, dtype=torch.float64), torch.zeros(5, 8, dtype=torch.float64)
    for j in range(0, 12, 4):  # three tiles of keys, running max and sum: the n×n matrix is never stored
        s = q @ k[j : j + 4].T / math.sqrt(8)
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        scale, p = torch.exp(m - m_new), torch.exp(s - m_new)
        den, num, m = den * scale + p.sum(-1, keepdim=True), num * scale + p @ v[j : j + 4], m_new
    assert torch.allclose(num / den, softmax_rows(q @ k.T / math.sqrt(8)) @ v, atol=1e-12)


def gqa_sizes():
    from ..params.memory import kv_cache_bytes

    size = {g: kv_cache_bytes(80, g, 128, 4096, bytes_per_value=1) for g in (64, 8, 1)}
    assert size[64] == 2 * 80 * 64 * 128 * 4096 and size[64] // size[8] == 8 and size[64] // size[1] == 64


def gqa_quadratic_unchanged():
    from ..params.memory import kv_cache_bytes

    t, h = 256, 8
    mha, gqa, mqa = (gqa_score_flops(t, h, g) for g in (8, 2, 1))
    assert mha == gqa == mqa == 2 * h * t * t * 16  # every query head still scores all T² pairs
    assert kv_cache_bytes(1, 8, 16, t) == 4 * kv_cache_bytes(1, 2, 16, t)  # what shrinks: the cache, by h/g


def kv_step():
    torch.manual_seed(0)
    d, t = 16, 10
    wq, wk, wv = (torch.randn(d, d, dtype=torch.float64) / 4 for _ in range(3))
    x = torch.randn(t, d, generator=gen(), dtype=torch.float64)
    full = softmax_rows((x @ wq) @ (x @ wk).T / 4 + torch.ones(t, t).triu(1) * -1e30) @ (x @ wv)
    k_cache, v_cache = x[:-1] @ wk, x[:-1] @ wv  # stored at earlier steps
    new = x[-1:]  # this step projects only the new token: its q, k and v
    k, v = torch.cat([k_cache, new @ wk]), torch.cat([v_cache, new @ wv])
    step = softmax_rows((new @ wq) @ k.T / 4) @ v
    assert torch.allclose(step, full[-1:], atol=1e-12)  # the same output; no earlier query is recomputed
    lin_prefix, _ = layer_flops(t, d, 2, 4 * d)
    lin_new, _ = layer_flops(1, d, 2, 4 * d)
    assert lin_prefix == t * lin_new  # re-projecting the prefix costs n times one token's O(d²)
    stale = softmax_rows((new @ wq) @ k_cache.T / 4) @ v_cache  # the cache alone, without the new k and v
    assert not torch.allclose(stale, full[-1:], atol=1e-3)


def bert_block():
    d = 768
    assert 12 * d * d == 7_077_888 and 12 * d * d + 13 * d == 7_087_872
    assert 12 * (12 * d * d + 13 * d) == 85_054_464  # '~85M'


def sizes():
    def bert(d, n, vocab=30522):  # BertModel: embeddings (words, 512 positions, 2 types, LayerNorm), blocks, pooler
        return vocab * d + 512 * d + 2 * d + 2 * d + n * (12 * d * d + 13 * d) + d * d + d

    def t5(d=768, f=3072, n=12, vocab=32128, heads=12):  # no biases, scale-only norms, 32-bucket relative bias
        enc, dec = n * (4 * d * d + 2 * d * f + 2 * d) + d, n * (8 * d * d + 2 * d * f + 3 * d) + d
        return enc + dec + 2 * 32 * heads + vocab * d

    assert (bert(768, 12), bert(1024, 24), t5()) == (109_482_240, 335_141_888, 222_903_552)
    assert gpt_params(50257, 1024, 1600, 48) == 1_557_611_200


def doubling():
    close(2**-0.076, 0.9487, 1e-4)  # doubling N: loss × 0.95, a 5% reduction
    close(2 ** (1 / 0.076), 9139, 1)  # halving the loss needs ~9,100× the parameters


def nn_transformer_shapes():
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = nn.Transformer(64, 8, 1, 1, 256, dropout=0.1, batch_first=True)  # d = 64: the same shape rule
        enc = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(64, 8, 256, batch_first=True, norm_first=True), num_layers=1
        )
    with torch.no_grad():
        assert full(torch.randn(2, 10, 64), torch.randn(2, 7, 64)).shape == (2, 7, 64)  # (B, tgt_len, d_model)
        assert enc(torch.randn(2, 10, 64)).shape == (2, 10, 64)


def leak():
    torch.manual_seed(0)
    layer = nn.TransformerDecoderLayer(16, 2, 32, dropout=0.0, batch_first=True, norm_first=True)
    dec, t = nn.TransformerDecoder(layer, num_layers=1).eval(), 6
    mask = nn.Transformer.generate_square_subsequent_mask(t)
    x = torch.randn(1, t, 16, generator=gen())
    y = x.clone()
    y[0, -1] += 1.0  # change only the LAST token
    with torch.no_grad():
        first = lambda z: dec(z, memory=z, tgt_mask=mask)[0, 0]
        assert (first(x) - first(y)).abs().max() > 1e-4  # position 0 sees the future through memory=x


def pe_code_003():
    d = 64
    pos = torch.arange(100).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2) * (-torch.log(torch.tensor(10000.0)) / d))
    pe = torch.zeros(100, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    assert torch.allclose(pe.double(), sinusoidal(100, d), atol=1e-4)


Q3 = torch.tensor([[1.0, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]], dtype=torch.float64)


K3 = torch.tensor([[1.0, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0]], dtype=torch.float64)


TEXT_SCORES = torch.tensor([[1.0, 1, 2], [1, 1, 0], [1, 2, 2]], dtype=torch.float64)


TEXT_WEIGHTS = torch.tensor([[0.27, 0.27, 0.46], [0.33, 0.33, 0.33], [0.21, 0.39, 0.39]], dtype=torch.float64)


def jacobian_product():
    w = torch.randn(4, 4, generator=gen(), dtype=torch.float64) * 0.5
    run = lambda h0: w @ (w @ (w @ h0))  # h_t = W h_(t-1), three steps
    jac = torch.autograd.functional.jacobian(run, torch.zeros(4, dtype=torch.float64))
    assert torch.allclose(jac, torch.linalg.matrix_power(w, 3), atol=1e-12)


def scores():
    s = Q3 @ K3.T
    assert torch.equal(s, torch.tensor([[1.0, 1, 1], [1, 1, 1], [1, 1, 2]], dtype=torch.float64))
    assert int((s != TEXT_SCORES).sum()) == 3


def weights_004():
    w, e = softmax_rows(Q3 @ K3.T / 2), math.exp(0.5)
    ref = torch.tensor([[1 / 3] * 3, [1 / 3] * 3, [1 / (2 + e), 1 / (2 + e), e / (2 + e)]], dtype=torch.float64)
    assert torch.allclose(w, ref, atol=1e-12) and (TEXT_WEIGHTS - w).abs().max() > 0.05
    own = softmax_rows(TEXT_SCORES / 2)  # even the softmax of its own printed scores differs
    assert torch.allclose(
        own, torch.tensor([[0.27, 0.27, 0.45], [0.38, 0.38, 0.23], [0.23, 0.38, 0.38]], dtype=torch.float64), atol=5e-3
    )


def std():
    assert math.sqrt(64) == 8
    close(math.sqrt(768), 27.71, 5e-3)


def mask_table():
    m = torch.ones(4, 4).tril().bool()
    assert m[0].tolist() == [True, False, False, False] and m[2].tolist() == [True, True, True, False]


def weights_vs_scores():
    s = torch.randn(6, 6, generator=gen(), dtype=torch.float64)
    after = softmax_rows(s) * torch.ones(6, 6, dtype=torch.float64).tril()  # masking the weights instead
    assert not torch.allclose(after.sum(-1), torch.ones(6, dtype=torch.float64))


def memory_rows():
    assert 512**2 == 262_144 and 512**2 * 2 / 2**20 == 0.5
    assert 4096**2 == 16_777_216 and 4096**2 * 2 / 2**20 == 32


def row_128k():
    assert 128_000**2 == 16_384_000_000  # '16.4B'
    close(128_000**2 * 2 / 2**30, 30.52, 5e-3)  # '~31 GB' in GiB, the binary units of the rows above
    assert 131_072**2 == 17_179_869_184 and 131_072**2 * 2 / 2**30 == 32  # the other reading of '128K'


def heads():
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(32, 4, bias=False, batch_first=True).eval()
    x = torch.randn(1, 5, 32, generator=gen())
    wq = mha.in_proj_weight.detach()[:32].double().view(4, 8, 32)  # head i reads the row space of its 8 rows
    bases = torch.linalg.qr(wq.transpose(1, 2))[0]
    largest = torch.linalg.svdvals(bases[0].T @ bases[1]).max()
    assert largest > 0.3  # far from orthogonal (0)
    with torch.no_grad():
        before = mha(x, x, x, average_attn_weights=False)[1]
        mha.in_proj_weight[8:16] += 1.0  # change head 2's W_Q only
        after = mha(x, x, x, average_attn_weights=False)[1]
    assert torch.equal(before[:, 0], after[:, 0]) and not torch.equal(before[:, 1], after[:, 1])


def batchnorm_one():
    bn, x = nn.BatchNorm1d(8).train(), torch.randn(1, 8, 16, generator=gen())  # (B, C, T) with B = 1
    y = bn(x)  # runs: each channel's mean and variance come from the 16 positions of the one sequence
    assert torch.allclose(y.mean(dim=(0, 2)), torch.zeros(8), atol=1e-6)
    later = x.clone()
    later[..., -1] += 1.0  # change only the last position
    assert not torch.allclose(bn(later)[..., 0], y[..., 0])  # the first position's output changes: positions mix
    try:
        bn(torch.randn(1, 8, 1))  # B·T = 1: one value per channel
    except ValueError:
        return
    raise AssertionError("BatchNorm1d should refuse one value per channel in training")


def layernorm_per_example():
    ln, x = nn.LayerNorm(8), torch.randn(5, 8, generator=gen())
    assert torch.allclose(ln(x)[2:3], ln(x[2:3]), atol=1e-6)


def pre_post_differ():
    torch.manual_seed(0)
    ln, f, x = nn.LayerNorm(8), nn.Linear(8, 8), torch.randn(3, 8, generator=gen())
    with torch.no_grad():
        assert (ln(x + f(x)) - (x + f(ln(x)))).abs().max() > 1e-2


def padding_leaks():
    mha, x = tiny_mha(), torch.randn(1, 5, 16, generator=gen())
    y = x.clone()
    y[0, 3:] = torch.randn(2, 16, generator=gen(1))  # change the two padding positions only
    keep = torch.tensor([[False, False, False, True, True]])  # key_padding_mask: True = padding
    with torch.no_grad():
        assert (mha(x, x, x)[0][0, :3] - mha(y, y, y)[0][0, :3]).abs().max() > 1e-3
        assert torch.allclose(
            mha(x, x, x, key_padding_mask=keep)[0][0, :3], mha(y, y, y, key_padding_mask=keep)[0][0, :3], atol=1e-6
        )


def kv5():
    from ..params.memory import kv_cache_bytes

    values = 2 * 80 * 64 * 128 * 4096
    assert values == 5_368_709_120  # '5 GB' is this count of numbers, read as bytes
    assert kv_cache_bytes(80, 64, 128, 4096) == 10_737_418_240 and kv_cache_bytes(80, 8, 128, 4096) == 1_342_177_280


def temperature():
    z = torch.tensor([2.0, 1.0, 0.5, -1.0], dtype=torch.float64)
    ent = [-(p * p.log()).sum() for p in (torch.softmax(z / t, -1) for t in (0.5, 1.0, 2.0))]
    assert ent[0] < ent[1] < ent[2]


def walkthrough():
    torch.manual_seed(0)
    cross = nn.MultiheadAttention(768, 12, batch_first=True).eval()
    with torch.no_grad():
        out, w = cross(
            torch.randn(1, 1, 768), torch.randn(1, 3, 768), torch.randn(1, 3, 768), average_attn_weights=False
        )
    assert out.shape == (1, 1, 768) and w.shape == (1, 12, 1, 3)
    assert nn.Embedding(1000, 768)(torch.tensor([[2, 47, 193]])).shape == (1, 3, 768)


def decoder_sublayers():
    names = lambda layer: sorted(n for n, m in layer.named_children() if isinstance(m, nn.MultiheadAttention))
    assert names(nn.TransformerEncoderLayer(8, 2, batch_first=True)) == ["self_attn"]
    assert names(nn.TransformerDecoderLayer(8, 2, batch_first=True)) == ["multihead_attn", "self_attn"]


def swiglu():
    x = torch.randn(4, 8, generator=gen())
    w1, w2 = torch.randn(8, 16, generator=gen(1)), torch.randn(8, 16, generator=gen(2))
    assert torch.allclose(F.silu(x @ w1) * (x @ w2), (x @ w1) * torch.sigmoid(x @ w1) * (x @ w2), atol=1e-6)


def ffn_keys_values():
    torch.manual_seed(0)
    up, down = nn.Linear(8, 32, bias=False).double(), nn.Linear(32, 8, bias=False).double()
    x = torch.randn(8, generator=gen(), dtype=torch.float64)
    memories = sum(F.relu(up.weight[i] @ x) * down.weight[:, i] for i in range(32))  # key row i, value column i
    assert torch.allclose(down(F.relu(up(x))), memories, atol=1e-12)


# --- third sweep (issue 39)


def ffn_position_wise():
    torch.manual_seed(0)
    ffn = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16))
    x = torch.randn(2, 5, 16, generator=gen())
    with torch.no_grad():
        y, alone = ffn(x), torch.stack([ffn(x[:, t]) for t in range(5)], 1)  # one weight set for every position
        x2 = x.clone()
        x2[:, 3] += 1.0  # change one token: no other position's output moves
        moved = (ffn(x2) - y).abs().amax(dim=(0, 2))
    assert torch.allclose(y, alone, atol=1e-6)
    assert moved[3] > 1e-3 and moved[[0, 1, 2, 4]].max() == 0


def gelu_gate():
    x = torch.linspace(-4, 4, 81, dtype=torch.float64)
    phi = 0.5 * (1 + torch.erf(x / math.sqrt(2)))  # the Gaussian CDF
    assert torch.allclose(F.gelu(x), x * phi, atol=1e-12)


def next_token_loss():
    logits = torch.randn(1, 6, 11, generator=gen(3), dtype=torch.float64)  # position t predicts token t + 1
    x = torch.randint(11, (1, 7), generator=gen(4))
    by_hand = -sum(torch.log_softmax(logits[0, t], -1)[x[0, t + 1]] for t in range(6))
    close(F.cross_entropy(logits[0], x[0, 1:], reduction="sum"), by_hand, 1e-9)
    assert abs(float(F.cross_entropy(logits[0], x[0, :-1], reduction="sum") - by_hand)) > 1e-3  # unshifted differs


def grad_accumulation():
    torch.manual_seed(0)
    w = nn.Linear(8, 3)
    x, y = torch.randn(32, 8, generator=gen(5)), torch.randint(3, (32,), generator=gen(6))
    F.cross_entropy(w(x), y).backward()
    full = w.weight.grad.clone()
    w.zero_grad()
    for xb, yb in zip(x.split(4), y.split(4)):  # 8 micro-batches, each loss divided by 8
        (F.cross_entropy(w(xb), yb) / 8).backward()
    assert torch.allclose(w.weight.grad, full, atol=1e-6)


def tensor_parallel_ffn():
    torch.manual_seed(0)
    d, dff, parts = 16, 64, 4
    w1, w2, x = torch.randn(dff, d, dtype=torch.float64), torch.randn(d, dff, dtype=torch.float64), torch.randn(5, d)
    x = x.double()
    full = F.gelu(x @ w1.T) @ w2.T
    cols = torch.arange(dff).chunk(parts)  # W1 split by its output columns, W2 by its input rows
    shards = [F.gelu(x @ w1[c].T) @ w2[:, c].T for c in cols]  # each device: local GELU, no communication
    assert torch.allclose(sum(shards), full, atol=1e-9)  # one all-reduce (a sum) gives the output
    ins = torch.arange(d).chunk(parts)  # W1 split along its input instead: the GELU needs the sum first
    assert not torch.allclose(sum(F.gelu(x[:, c] @ w1[:, c].T) for c in ins), F.gelu(x @ w1.T))


def tensor_parallel_heads():
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(16, 4, bias=False, batch_first=True).eval()
    x = torch.randn(1, 6, 16, generator=gen(7))
    wq, wk, wv = mha.in_proj_weight.chunk(3)
    with torch.no_grad():
        full = mha(x, x, x, need_weights=False)[0]
        partial = []
        for heads in (range(0, 2), range(2, 4)):  # two devices, two heads each
            cols = torch.cat([torch.arange(h * 4, h * 4 + 4) for h in heads])
            q, k, v = (x @ w[cols].T for w in (wq, wk, wv))
            o = torch.cat(
                [torch.softmax(q[..., i : i + 4] @ k[..., i : i + 4].mT / 2, -1) @ v[..., i : i + 4] for i in (0, 4)],
                -1,
            )
            partial.append(o @ mha.out_proj.weight[:, cols].T)
    assert torch.allclose(sum(partial), full, atol=1e-5)


def cached_attention_scale():
    torch.manual_seed(0)
    d, h = 64, 4
    q, k = torch.randn(1, 1, d, generator=gen(8)), torch.randn(1, 9, d, generator=gen(9))
    as_listed = (q @ k.mT) / (d // h) ** 0.5  # one head of width d_model, scaled by 1/√d_head
    one_head = (q @ k.mT) / d**0.5
    close(as_listed.std() / one_head.std(), h**0.5, 1e-6)  # √n_heads too large
