"""000 (Chapter 8 draft), §8.4–§8.5: positional encodings and the Transformer block."""

import math

import torch
import torch.nn as nn

from ._base import CONFIRMED, IMPRECISE, NOT_CHECKABLE, WRONG, factory
from ._checks import alibi_slopes, close, gen, rope, sinusoidal, tiny_mha

C = factory("000")
PAPER = "Vaswani et al. 2017, 'Attention Is All You Need'"
ALIBI = "Press, Smith & Lewis 2022, 'Train Short, Test Long' (ICLR)"


def _equivariant():
    mha, x, p = tiny_mha(), torch.randn(1, 7, 16, generator=gen()), torch.randperm(7, generator=gen(1))
    with torch.no_grad():
        assert torch.allclose(mha(x[:, p], x[:, p], x[:, p])[0], mha(x, x, x)[0][:, p], atol=1e-6)


def _causal_positional():
    mha = tiny_mha()
    first, repeated = torch.randn(1, 1, 16, generator=gen()), torch.randn(1, 1, 16, generator=gen(1))
    seq = torch.cat([first, repeated.expand(1, 8, 16)], 1)  # A B B B B B B B B
    mask = torch.ones(9, 9).triu(1).bool()
    with torch.no_grad():
        free, causal = mha(seq, seq, seq)[0][0, 1:], mha(seq, seq, seq, attn_mask=mask)[0][0, 1:]
    assert (free - free[0]).abs().max() < 1e-6 and torch.pdist(causal).min() > 1e-4


def _frequencies():
    w = 10000.0 ** (-torch.arange(0, 512, 2, dtype=torch.float64) / 512)
    assert w[0] == 1 and abs(2 * math.pi / w[0] - 2 * math.pi) < 1e-12
    close(w[-1], 10000 ** (-510 / 512), 1e-18)


def _rotation():
    pe, k = sinusoidal(300, 64), 7
    angle = k * 10000.0 ** (-torch.arange(0, 64, 2, dtype=torch.float64) / 64)
    c, s = torch.cos(angle), torch.sin(angle)
    sin, cos = pe[:-k, 0::2], pe[:-k, 1::2]  # [sin, cos] @ [[c, -s], [s, c]], every pair at once
    assert torch.allclose(pe[k:, 0::2], sin * c + cos * s, atol=1e-9)
    assert torch.allclose(pe[k:, 1::2], -sin * s + cos * c, atol=1e-9)
    assert torch.allclose(c * c + s * s, torch.ones(32, dtype=torch.float64), atol=1e-12)  # det +1, orthogonal


def _pe_code():
    pe = sinusoidal(128, 64)
    assert pe.shape == (128, 64)
    close(pe[0].norm(), math.sqrt(32), 1e-12)
    close(pe[127].norm(), math.sqrt(32), 1e-12)


def _rope_identity():
    q, k = (torch.randn(8, generator=gen(s), dtype=torch.float64) for s in (0, 1))
    close(rope(q, 5) @ rope(k, 12), rope(q, 10) @ rope(k, 17), 1e-12)  # Exercise 8.10: offset 7 both times
    assert abs(rope(q, 5) @ rope(k, 12) - rope(q, 12) @ rope(k, 5)) > 1e-3  # n - m, not |n - m|


def _alibi_last():
    for n in (4, 8, 16):
        s = alibi_slopes(n)
        assert s[0] == 2 ** (-8 / n) and s[-1] == 2**-8 and s[-1] != 0.5
        assert all(abs(b / a - s[1] / s[0]) < 1e-12 for a, b in zip(s, s[1:]))
    assert alibi_slopes(8)[0] == 0.5


def _table_params():
    assert nn.Embedding(512, 768).weight.numel() == 512 * 768
    try:
        nn.Embedding(512, 8)(torch.tensor([512]))
    except IndexError:
        return
    raise AssertionError("a learned table must have no row for position 512")


def _residual_grad():
    x = torch.randn(5, requires_grad=True)
    (x + 0.0 * torch.tanh(x)).sum().backward()
    assert torch.equal(x.grad, torch.ones(5))


def _layernorm():
    x = torch.randn(3, 8, generator=gen(), dtype=torch.float64)
    mu, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    ln = nn.LayerNorm(8, dtype=torch.float64)
    assert torch.allclose(ln(x), (x - mu) / torch.sqrt(var + ln.eps), atol=1e-12)


def _eps_default():
    assert nn.LayerNorm(4).eps == 1e-5  # PyTorch's default differs from the 1e-6 of the original code


def _ffn():
    assert 2 * 512 * 2048 == 2_097_152 == 2 * 1_048_576
    assert (2 * 512 * 2048) / (4 * 512**2 + 2 * 512 * 2048) == 2 / 3


def _swiglu_width():
    assert 256 * math.ceil(int(2 * 4 * 4096 / 3) / 256) == 11008  # LLaMA-7B's FFN width, not 4d = 16384


def _not_linear():
    mha, x, y = tiny_mha(), *(torch.randn(1, 6, 16, generator=gen(s)) for s in (1, 2))
    with torch.no_grad():
        f = lambda z: mha(z, z, z)[0]
        assert (f(2 * x) - 2 * f(x)).abs().max() > 1e-3 and (f(x + y) - f(x) - f(y)).abs().max() > 1e-3
        assert torch.allclose(mha(x, x, 2 * y)[0], 2 * mha(x, x, y)[0], atol=1e-5)  # linear in V, weights fixed


def _block_shape():
    torch.manual_seed(0)
    block = nn.TransformerEncoderLayer(32, 4, 128, dropout=0.0, batch_first=True, norm_first=True)
    assert block(torch.randn(1, 5, 32)).shape == (1, 5, 32)


# fmt: off
CLAIMS = [
    C("000-8.4.1-equivariant", "§8.4, §8.4.1", "self-attention is permutation-equivariant: permuting the input "
      "rows permutes the output rows", CONFIRMED, "MHA(Px) = P·MHA(x) to 1e-6", "computed", "04", nb_check="04 §1",
      check=_equivariant),
    C("000-8.4.1-impossible", "§8.4.1", "without explicit encodings, learning position is 'mathematically "
      "impossible … no amount of training data' can do it", IMPRECISE, "true without a mask; with a causal mask "
      "eight identical tokens after a distinct first one get eight different outputs", "computed", "04",
      correct="holds for unmasked (encoder) attention; a causal mask is itself positional, and decoder-only LMs "
      "trained with no positional encoding do learn position (Haviv et al. 2022)", source="Haviv et al. 2022, "
      "'Transformer Language Models without Positional Encodings Still Learn Positional Information'",
      nb_check="04 §1: 'causal mask: all 8 repeats get different outputs'", check=_causal_positional),
    C("000-8.4.2-freq", "§8.4.2", "dimension 0 has frequency 1 (period 2π); dimension d − 2 the slowest frequency "
      "1/10000^((d−2)/d) (symbols reconstructed)", CONFIRMED, "ω_0 = 1; ω_255 = 10000^(−510/512) for d = 512",
      "computed", "04", nb_check="04 §2", check=_frequencies),
    C("000-8.4.2-rotation", "§8.4.2, Ex. 8.3", "a shift by k maps each (sin, cos) pair by a fixed 2×2 rotation "
      "that depends on k only (orthogonal, determinant +1)", CONFIRMED, "exact to 1e-9 for all 32 pairs, positions "
      "0..292", "computed", "04", nb_check="04 §4 (Exercise 8.3)", check=_rotation),
    C("000-8.4.2-code", "§8.4.2", "the listing prints PE shape [128, 64] (and the norms of positions 0 and 127)",
      CONFIRMED, "(128, 64); every row has norm √(d/2) = 5.6569", "computed", "04", nb_check="04 §2", check=_pe_code),
    C("000-8.4.3-tmax", "§8.4.3", "BERT uses learned positions with T_max = 512, GPT-2 with T_max = 1024", CONFIRMED,
      "512 and 1024", "primary sources", "04", source="Devlin et al. 2019 (BERT), §A.2; Radford et al. 2019 "
      "(GPT-2), §2.3"),
    C("000-8.4.4-rope", "§8.4.4, Ex. 8.10", "RoPE rotates pair i by mθ_i, θ_i = 10000^(−2i/d); (R^m)ᵀR^n = "
      "R^(n−m), so scores depend on n − m only; no parameters", CONFIRMED, "scores at (5, 12) and (10, 17) equal "
      "to 1e-12", "computed", "05", source="Su et al. 2021, RoFormer (arXiv:2104.09864), §3.2",
      nb_check="05 §2 and the exercise 8.10 checks", check=_rope_identity),
    C("000-8.4.4-models", "§8.4.4", "RoPE is used by LLaMA, PaLM and GPT-NeoX", CONFIRMED, "all three use rotary "
      "embeddings", "primary sources", "05", source="Touvron et al. 2023 (LLaMA) §2.2; Chowdhery et al. 2022 "
      "(PaLM) §2; Black et al. 2022 (GPT-NeoX-20B) §2.1"),
    C("000-8.4.4-extrapolation", "§8.4.4, §8.4.6, Table 8.1", "RoPE 'supports length extrapolation' and "
      "extrapolates well (Table 8.1: 'Good')", WRONG, "rotary embeddings degrade past the training length",
      "primary source", "05", correct="without modification RoPE does not extrapolate well: in Press et al. (2022, "
      "Fig. 1) rotary models' perplexity rises past the training length, like sinusoidal ones; long-context RoPE "
      "models rescale positions or the base and fine-tune", source=f"{ALIBI}, Fig. 1", nb_check="05 §5 (prose and "
      "the right panel)"),
    C("000-8.4.5-slopes", "§8.4.5", "ALiBi slopes: head 1 uses 2^(−8/h), head 2 2^(−16/h), … up to head h which "
      "uses 2^(−1) = 0.5", WRONG, "for h a power of 2 the slopes run from 2^(−8/h) down to 2^(−8)",
      "primary source; computed", "04", correct="the last head's slope is 2^(−8) = 1/256; 0.5 is the first head's "
      "slope when h = 8. For h not a power of 2 the slopes are two interleaved geometric sequences",
      source=f"{ALIBI}, §3 and the released code", nb_check="04 §6", check=_alibi_last),
    C("000-8.4.5-6144", "§8.4.5", "models trained on length 1024 generalise to length 6144", NOT_CHECKABLE, "",
      "abstract read; figure not available", "04", why="the ALiBi abstract reports 1024 → 2048 (the perplexity of "
      "a sinusoidal model trained on 2048); the 6144 figure could not be located in the sources available here"),
    C("000-8.4.5-bloom", "§8.4.5, Table 8.1", "ALiBi is used in BLOOM", CONFIRMED, "BLOOM uses ALiBi",
      "primary source", "04", source="BigScience 2022, 'BLOOM' (arXiv:2211.05100), §3.2"),
    C("000-8.4.6-table", "Table 8.1", "parameters: sinusoidal 0, learned T_max·d_model, RoPE 0, ALiBi 0; learned "
      "positions cannot extrapolate", CONFIRMED, "nn.Embedding(T_max, d) has T_max·d weights and no row for "
      "position T_max", "computed", "04", nb_check="04 §5", check=_table_params),
    C("000-8.5.2-identity", "§8.5.2", "a residual connection adds an identity term to the Jacobian, so the "
      "gradient always has a direct path", CONFIRMED, "∂(x + F(x))/∂x = I + ∂F/∂x: gradient 1 through a dead branch",
      "autograd", "06", check=_residual_grad),
    C("000-8.5.2-he", "§8.5.2", "He et al. (2016): 152-layer residual networks outperformed 34-layer plain ones",
      CONFIRMED, "ResNet-152 is the best single model; the 34-layer plain net is worse than the 18-layer one",
      "primary source", "06", source="He et al. 2016, CVPR, Tables 2–4"),
    C("000-8.5.2-vanish", "§8.5.2", "without residual connections, gradients in deep stacks vanish or explode",
      IMPRECISE, "with a LayerNorm in every block the gradient does not vanish at initialisation even at 48 "
      "blocks; the token representations collapse to one vector", "measured in a notebook", "06",
      correct="in a Transformer without residuals the failure is rank collapse (all positions converge) rather "
      "than vanishing gradients (Dong et al. 2021, 'Attention is not all you need')", source="notebook 06 §6 "
      "(stored run); Dong et al. 2021, ICML", nb_check="06 §6"),
    C("000-8.5.3-layernorm", "§8.5.3", "LayerNorm: (x − μ)/√(σ² + ε)·γ + β with μ, σ² over the features (symbols "
      "reconstructed)", CONFIRMED, "equal to nn.LayerNorm to 1e-12", "computed", "06", check=_layernorm),
    C("000-8.5.3-eps", "§8.5.3", "the constant ε is typically 10⁻⁶", CONFIRMED, "10⁻⁶ in the original code, T5 and "
      "LLaMA-1; 10⁻⁵ in PyTorch's default, GPT-2 and LLaMA-2; 10⁻¹² in BERT", "primary sources (code)", "06",
      source="tensor2tensor common_hparams.py basic_params1: norm_epsilon=1e-6; T5 (T5LayerNorm eps=1e-6); LLaMA-1 "
      "params.json norm_eps 1e-06", nb_check="06 summary", check=_eps_default),
    C("000-8.5.3-preln", "§8.5.3", "the original used Post-LN; Pre-LN (Xiong et al. 2020) trains stably without "
      "the warm-up Post-LN needs", CONFIRMED, "Xiong et al. train Pre-LN without warm-up; Post-LN depends on the "
      "warm-up stage and is sensitive to its length", "primary sources", "06",
      source=f"{PAPER} §3.1; Xiong et al. 2020, ICML, §3–4", nb_check="06 §6 (warm-up experiment)"),
    C("000-8.5.3-universal", "§8.5.3", "modern implementations (GPT-2 and beyond) universally use Pre-LN", IMPRECISE,
      "GPT-2/3, PaLM, LLaMA use Pre-LN; not universal", "primary sources", "06", correct="most large decoder "
      "models use Pre-LN, but not all: e.g. Gemma 2 normalises both before and after each sublayer",
      source="GPT-2 report §2.3; Gemma Team 2024, 'Gemma 2' §2"),
    C("000-8.5.4-ffn", "§8.5.4", "FFN: 2·d·d_ff = 2,097,152 weights for 512/2048, twice the attention's 1,048,576, "
      "about two-thirds of the block", CONFIRMED, "2,097,152 = 2 × 1,048,576; share 2/3 (0.666 with biases and "
      "norms)", "computed", "06", nb_check="06 §3; 07 §4", check=_ffn),
    C("000-8.5.4-ratio", "§8.5.4", "the expansion factor 4 has been retained in most subsequent architectures",
      IMPRECISE, "GPT-2/3, BERT, T5 keep 4d; SwiGLU models use about 8d/3", "computed; primary sources", "06",
      correct="ReLU/GELU models keep d_ff = 4d; SwiGLU models (LLaMA, PaLM) use ≈ (2/3)·4d so the three matrices "
      "keep 8d² weights: LLaMA-7B 11008 = 2.69·d", source="Touvron et al. 2023 (LLaMA) §2.2", nb_check="06 summary",
      check=_swiglu_width),
    C("000-8.5.4-linear", "§8.5.4", "attention is a linear operation (a weighted average); without the FFN a stack "
      "of attention layers would still be a linear mapping", IMPRECISE, "MHA(2x) ≠ 2·MHA(x); with the weights "
      "fixed the output is linear in V", "computed", "06", correct="for fixed weights the output is a convex "
      "combination of the value vectors, and attention applies no per-token nonlinearity; but the weights are a "
      "softmax of input-dependent scores, so the layer (and a stack) is not linear in its input. The FFN supplies "
      "the per-position nonlinearity", nb_check="06 §3; 03 §4", check=_not_linear),
    C("000-8.5.4-knowledge", "§8.5.4", "the FFN is believed to be the primary storage site for factual knowledge",
      NOT_CHECKABLE, "", "a hypothesis of the literature", "06", why="interpretability results (Geva et al. 2021; "
      "Meng et al. 2022) support it; it is not a measurement a notebook here can make"),
    C("000-8.5.4-swiglu", "§8.5.4", "SwiGLU, used in LLaMA and PaLM, consistently outperforms ReLU", CONFIRMED,
      "GLU variants beat ReLU in Shazeer's comparisons; LLaMA and PaLM use SwiGLU", "primary sources", "06",
      source="Shazeer 2020 (arXiv:2002.05202) Tables 1–3; LLaMA §2.2; PaLM §2"),
    C("000-8.5.5-depth", "§8.5.5", "the original used N = 6; LLaMA-7B uses N = 32", CONFIRMED, "6 and 32",
      "primary sources", "07", source=f"{PAPER} §3.1; Touvron et al. 2023 (LLaMA) Table 2"),
    C("000-8.5.5-gpt4", "§8.5.5", "GPT-4 uses N = 80 (estimated)", NOT_CHECKABLE, "", "undisclosed", "07",
      why="OpenAI has not published GPT-4's architecture"),
    C("000-8.5.5-code", "§8.5.5", "the block listing prints input and output shapes [1, 5, 32]", CONFIRMED,
      "(1, 5, 32) in and out", "computed", "06", check=_block_shape),
    C("000-8.5.6-tenney", "§8.5.6", "Tenney et al. (2019): BERT layers 1–4 encode syntax, layers 8–12 semantics",
      NOT_CHECKABLE, "", "the paper's figures were not available here", "06", why="Tenney et al. report the order "
      "(POS, constituents, dependencies before SRL and coreference) by expected layer, mainly for the 24-layer "
      "BERT-large; these layer ranges could not be verified"),
]
# fmt: on
