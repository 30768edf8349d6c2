"""001 (Chapter 19, PyTorch from scratch), §19.1–§19.8: the paper, positions, normalisation, FFN, residuals,
encoder and decoder blocks, the complete model and its size."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ._base import CONFIRMED, IMPRECISE, WRONG, factory
from ._checks import close, gen, original_params, sinusoidal, tiny_mha
from .text000b import _rotation

C = factory("001")
PAPER = "Vaswani et al. 2017, 'Attention Is All You Need'"
T2T = "tensor2tensor models/transformer.py transformer_base_v1"


def _equivariant_not_invariant():
    mha, x, p = tiny_mha(), torch.randn(1, 6, 16, generator=gen()), torch.tensor([5, 4, 3, 2, 1, 0])
    with torch.no_grad():
        out, out_p = mha(x, x, x)[0], mha(x[:, p], x[:, p], x[:, p])[0]
    assert (out_p - out).abs().max() > 1e-3  # not invariant: the rows move
    assert torch.allclose(out_p, out[:, p], atol=1e-6)  # equivariant


def _pe_bounded_linear():
    assert sinusoidal(200, 32).abs().max() <= 1
    _rotation()  # PE(pos + k) = PE(pos) · M_k, M_k block-diagonal rotations depending on k only


def _rmsnorm():
    x = torch.randn(3, 8, generator=gen(), dtype=torch.float64)
    ref = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    assert torch.allclose(nn.RMSNorm(8, eps=1e-6, dtype=torch.float64)(x), ref, atol=1e-12)


def _gelu():
    z = torch.linspace(-6, 6, 2001, dtype=torch.float64)
    tanh = 0.5 * z * (1 + torch.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z**3)))
    assert torch.allclose(tanh, F.gelu(z, approximate="tanh"), atol=1e-12)
    assert (tanh - F.gelu(z)).abs().max() < 1e-3


def _causal_mask():
    m = torch.triu(torch.ones(5, 5), diagonal=1)
    m = m.masked_fill(m == 1, -math.inf)
    assert torch.equal(m, nn.Transformer.generate_square_subsequent_mask(5))


def _cross_shape():
    mha = tiny_mha()
    with torch.no_grad():
        _, w = mha(torch.randn(1, 4, 16), torch.randn(1, 9, 16), torch.randn(1, 9, 16))
    assert w.shape == (1, 4, 9)  # (tgt_len, src_len), averaged over heads


def _embedding_is_2d():
    assert nn.Embedding(13, 64).weight.dim() == 2  # so 'p.dim() > 1' Xavier-initialises the tables too


def _tying():
    emb, head = nn.Embedding(100, 8), nn.Linear(8, 100, bias=False)
    head.weight = emb.weight
    both = nn.ModuleList([emb, head])
    assert sum(p.numel() for p in both.parameters()) == 100 * 8  # shared once, saving |V|·d


def _table():
    d, f = 512, 2048
    enc, dec, emb = original_params(d, f)
    assert (4 * d * d, 2 * d * f, 2 * 2 * d) == (1_048_576, 2_097_152, 2_048)
    assert (enc, dec, emb, enc + dec + emb) == (18_914_304, 25_224_192, 18_944_000, 63_082_496)


def _embedding_scale():
    torch.manual_seed(0)
    d, pe_rms = 512, float(sinusoidal(64, 512).pow(2).mean().sqrt())
    close(pe_rms, 0.5**0.5, 1e-9)  # sin² and cos² average to 1/2
    for vocab, rms in ((13, 0.062), (37_000, 0.0073)):
        emb = nn.init.xavier_uniform_(torch.empty(vocab, d))  # the chapter's initialisation of the table
        close(emb.pow(2).mean().sqrt(), rms, 0.002)
        assert float(emb.pow(2).mean().sqrt()) < pe_rms / 5  # unscaled: the embeddings are the small signal
        assert float((emb * d**0.5).pow(2).mean().sqrt()) > float(emb.pow(2).mean().sqrt()) * 22  # scaling enlarges


# fmt: off
CLAIMS = [
    C("001-19.1.3-config", "§19.1.3", "the original used N = 6, d_model = 512, h = 8, d_k = d_v = 64", CONFIRMED,
      "the base model's hyper-parameters", "primary source", "07", source=f"{PAPER}, Table 3"),
    C("001-19.2.1-invariant", "§19.1.2, §19.2.1", "self-attention is permutation-invariant: it 'produces the same "
      "output regardless of the order'", IMPRECISE, "the output rows are permuted with the input", "computed", "04",
      correct="permutation-equivariant: f(Px) = P·f(x); only an order-free summary (e.g. the mean over positions) "
      "is invariant. 000, 002, 003 and 004 say 'equivariant'", nb_check="04 §1", check=_equivariant_not_invariant),
    C("001-19.2.2-props", "§19.2.2", "sinusoidal encodings are bounded in [−1, 1], and PE_(pos+k) is a linear "
      "function of PE_pos for a fixed k", CONFIRMED, "max |PE| ≤ 1; one block-diagonal rotation M_k maps PE(pos) "
      "to PE(pos + k) for every pos", "computed", "04", nb_check="04 §4", check=_pe_bounded_linear),
    C("001-19.2.3-comparable", "§19.2.3", "the original paper found sinusoidal and learned encodings comparable",
      CONFIRMED, "learned positional embeddings: 25.7 dev BLEU vs 25.8 (Table 3, row E), 'nearly identical'",
      "primary source", "04", source=f"{PAPER}, §3.5 and Table 3 (E)"),
    C("001-19.2.3-learned", "§19.2.3", "BERT and GPT-2 use learned positional embeddings", CONFIRMED,
      "both learn a position table", "primary sources", "04", source="Devlin et al. 2019; Radford et al. 2019"),
    C("001-19.3.1-ics", "§19.3.1", "normalisation helps because it counters 'internal covariate shift', the "
      "changing distribution of each layer's inputs", IMPRECISE, "that is the BatchNorm paper's motivating "
      "hypothesis, which later work tested and did not support", "primary sources", "06", correct="Ioffe and "
      "Szegedy proposed BatchNorm to reduce internal covariate shift; Santurkar et al. found that its benefit has "
      "little to do with the stability of layer inputs and comes from a smoother optimisation landscape. For "
      "LayerNorm in Transformers the measured benefit is stable gradients (Xiong et al. 2020)", source="Ioffe & "
      "Szegedy 2015, ICML, abstract; Santurkar et al. 2018, 'How Does Batch Normalization Help Optimization?', "
      "NeurIPS, abstract; Xiong et al. 2020, ICML"),
    C("001-19.3.2-eps", "§19.3.2", "ε is typically 10⁻⁵ or 10⁻⁶", CONFIRMED, "10⁻⁵: PyTorch, GPT-2, LLaMA-2; 10⁻⁶: "
      "the original code, T5, LLaMA-1", "primary sources (code)", "06", source="tensor2tensor common_hparams.py "
      "(norm_epsilon=1e-6); torch.nn.LayerNorm (eps=1e-5)"),
    C("001-19.3.3-prenorm", "§19.3.3", "the original places LayerNorm after the residual (post-norm); GPT-2 and "
      "GPT-3 use pre-norm", CONFIRMED, "LayerNorm(x + Sublayer(x)) in the paper; GPT-2 moved LayerNorm to each "
      "sub-block's input, GPT-3 kept GPT-2's design", "primary sources", "06",
      source=f"{PAPER} §3.1; Radford et al. 2019 §2.3; Brown et al. 2020 §2.1"),
    C("001-19.3.4-xiong", "§19.3.4", "Xiong et al.: in post-norm the expected gradient at initialisation grows "
      "with the number of layers; in pre-norm it is well-behaved regardless of depth", IMPRECISE,
      "Xiong et al.: Post-LN's gradients are large near the output (growing with the layer index, not with the "
      "depth L); Pre-LN's gradient norm scales like 1/√L", "primary source; measured in a notebook", "06",
      correct="Post-LN: the gradient of the last layers' parameters is large and does not shrink with L; Pre-LN: "
      "it decreases as 1/√L, so no warm-up is needed", source="Xiong et al. 2020, ICML, Theorem 1 and Fig. 3",
      nb_check="06 §6"),
    C("001-19.3.5-rmsnorm", "§19.3.5", "RMSNorm(x) = γ ⊙ x/√(mean(x²) + ε); adopted by LLaMA and Gemma, with "
      "negligible loss", CONFIRMED, "equal to nn.RMSNorm to 1e-12; LLaMA and Gemma use it; the RMSNorm paper "
      "reports comparable quality", "computed; primary sources", "06", source="Zhang & Sennrich 2019, abstract; "
      "LLaMA §2.2; Gemma Team 2024 §2", nb_check="06 §1", check=_rmsnorm),
    C("001-19.4.1-dff", "§19.4.1", "d_ff is typically 4·d_model; the original uses 2048 with 512", CONFIRMED,
      "2048 = 4 × 512", "primary source", "06", source=f"{PAPER}, §3.3"),
    C("001-19.4.3-gelu", "§19.4.3", "GELU(x) = xΦ(x) ≈ 0.5x(1 + tanh[√(2/π)(x + 0.044715x³)]); the original uses "
      "ReLU", CONFIRMED, "the formula is F.gelu(approximate='tanh') exactly and within 10⁻³ of the exact GELU",
      "computed", "06", nb_check="06 §2", check=_gelu),
    C("001-19.5.3-dropout", "§19.5.3", "the original applies dropout (0.1 for the base model) to each sublayer's "
      "output before the residual addition", CONFIRMED, "P_drop = 0.1 (base)", "primary source", "06",
      source=f"{PAPER}, §5.4 'Residual Dropout'"),
    C("001-19.6.4-scale", "§19.6.4", "embeddings are scaled by √d_model as in the original paper, which 'does this "
      "to ensure that the embedding values are on a similar scale to the positional encodings'", IMPRECISE,
      "the paper multiplies the embedding weights by √d_model and gives no reason", "primary source; original "
      "code", "04", correct="the scaling is the paper's, the reason the book's; it holds for the original code, "
      "whose embeddings start at standard deviation d_model^−0.5, so that the product has unit scale like the "
      "encodings", source=f"{PAPER}, §3.4; tensor2tensor modalities.py (embedding initialiser "
      "random_normal(0, d^-0.5), then multiplied by d^0.5)"),
    C("001-19.6.4-drowned", "§19.6.4", "'without this scaling, the positional signal could be drowned out by the "
      "embeddings'", WRONG, "the scaling enlarges the embeddings (×22.6 for d = 512): without it they are the "
      "smaller signal", "computed", "04", correct="the reverse: unscaled, the chapter's Xavier-initialised "
      "embeddings (RMS 0.062 for its 13-token vocabulary, 0.007 for a 37,000-token one) are far smaller than the "
      "encodings (RMS 0.71), so the token signal would be drowned by the positions; scaling by √d_model brings "
      "the embeddings up to the encodings' scale", check=_embedding_scale),
    C("001-19.7.2-mask", "§19.7.2", "the causal mask is upper-triangular −∞: M_ij = 0 if i ≥ j, −∞ if i < j",
      CONFIRMED, "equal to nn.Transformer.generate_square_subsequent_mask", "computed", "02", nb_check="02 §1; 08 §2",
      check=_causal_mask),
    C("001-19.7.3-cross", "§19.7.3", "cross-attention weights have shape (tgt_len, src_len); encoder keys and "
      "values can be computed once and reused", CONFIRMED, "(4, 9) for 4 target and 9 source positions", "computed",
      "02", nb_check="02 §2", check=_cross_shape),
    C("001-19.8.2-xavier", "§19.8.2", "the original paper uses Xavier (Glorot) uniform initialisation", IMPRECISE,
      "the paper does not state its initialisation; the original code's is Glorot uniform", "original code", "09",
      correct="the paper is silent; tensor2tensor's transformer_base_v1 sets initializer='uniform_unit_scaling' "
      "with gain 1.0, which utils/optimize.py maps to variance_scaling(fan_avg, uniform) = Glorot uniform",
      source=f"{T2T}; tensor2tensor utils/optimize.py get_variable_initializer"),
    C("001-19.8.2-embeddings", "§19.8.2", "nn.Embedding and nn.LayerNorm keep their default initialisation; Xavier "
      "is applied only to parameters with more than one dimension", WRONG, "embedding tables have two dimensions",
      "computed", "09", correct="`_init_parameters` Xavier-initialises the embedding tables too (p.dim() > 1); "
      "only biases and LayerNorm parameters keep their defaults", nb_check="09 errata 5", check=_embedding_is_2d),
    C("001-19.8.3-tying", "§19.8.3", "tying the output projection to the embedding reduces the parameter count; "
      "the original paper mentions it", CONFIRMED, "saves |V|·d; the paper shares one matrix between both "
      "embeddings and the pre-softmax layer (citing Press & Wolf 2017)", "computed; primary source", "07",
      source=f"{PAPER}, §3.4", check=_tying),
    C("001-19.8.4-table", "§19.8.4", "attention 4d² ≈ 1.05M, FFN 2·d·d_ff ≈ 2.1M, norms 2×2×d ≈ 2K per layer; "
      "encoder ≈ 19M, decoder with cross-attention ≈ 25M, shared 37K embeddings ≈ 19M, total ≈ 63M", CONFIRMED,
      "18,914,304 + 25,224,192 + 18,944,000 = 63,082,496 (with biases)", "computed", "07",
      nb_check="07 §4: 001's table", check=_table),
    C("001-19.8.4-published", "§19.8.4", "the base model had about 65 million parameters; the big one (d = 1024, "
      "d_ff = 4096, N = 6, h = 16) about 213 million", CONFIRMED, "65M and 213M in the paper's Table 3",
      "primary source", "07", source=f"{PAPER}, Table 3", nb_check="07 §3"),
]
# fmt: on
