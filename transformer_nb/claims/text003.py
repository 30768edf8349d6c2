"""003 ('The Transformer', lecture notes), in full. Many of its formulas lost their symbols in extraction; they
are read here from the surrounding words (e.g. 'O(1) path length', '~7M parameters per block')."""

import warnings

import torch
import torch.nn as nn

from ._base import CONFIRMED, IMPRECISE, WRONG, factory
from ._checks import close, gen, gpt_params, sinusoidal
from .text000b import _table_params
from .text002 import _gqa_quadratic_unchanged, _rope_identity

C = factory("003")
PAPER = "Vaswani et al. 2017, 'Attention Is All You Need'"


def _bert_block():
    d = 768
    assert 12 * d * d == 7_077_888 and 12 * d * d + 13 * d == 7_087_872
    assert 12 * (12 * d * d + 13 * d) == 85_054_464  # '~85M'


def _sizes():
    def bert(d, n, vocab=30522):  # BertModel: embeddings (words, 512 positions, 2 types, LayerNorm), blocks, pooler
        return vocab * d + 512 * d + 2 * d + 2 * d + n * (12 * d * d + 13 * d) + d * d + d

    def t5(d=768, f=3072, n=12, vocab=32128, heads=12):  # no biases, scale-only norms, 32-bucket relative bias
        enc, dec = n * (4 * d * d + 2 * d * f + 2 * d) + d, n * (8 * d * d + 2 * d * f + 3 * d) + d
        return enc + dec + 2 * 32 * heads + vocab * d

    assert (bert(768, 12), bert(1024, 24), t5()) == (109_482_240, 335_141_888, 222_903_552)
    assert gpt_params(50257, 1024, 1600, 48) == 1_557_611_200


def _doubling():
    close(2**-0.076, 0.9487, 1e-4)  # doubling N: loss × 0.95, a 5% reduction
    close(2 ** (1 / 0.076), 9139, 1)  # halving the loss needs ~9,100× the parameters


def _nn_transformer_shapes():
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


def _leak():
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


def _pe_code():
    d = 64
    pos = torch.arange(100).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2) * (-torch.log(torch.tensor(10000.0)) / d))
    pe = torch.zeros(100, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    assert torch.allclose(pe.double(), sinusoidal(100, d), atol=1e-4)


# fmt: off
CLAIMS = [
    C("003-overview", "Overview", "the transformer is parallelizable, with an O(1) path length between any two "
      "positions", CONFIRMED, "O(1) sequential operations and maximum path length for self-attention",
      "primary source", "07", source=f"{PAPER}, Table 1"),
    C("003-prenorm", "The Encoder Block", "pre-norm is now more common than post-norm", CONFIRMED,
      "GPT-2/3, PaLM, LLaMA, Mistral normalise before each sublayer", "primary sources", "06",
      source="Radford et al. 2019 §2.3; LLaMA §2.2"),
    C("003-bert-block", "The Encoder Block", "BERT-base: ~7M parameters per block × 12 blocks = 85M (plus "
      "embeddings)", CONFIRMED, "12·768² = 7,077,888 weights (7,087,872 with biases and norms); ×12 = 85.1M",
      "computed", "06", nb_check="06 §5: '7,087,872 (~7M, 003)'", check=_bert_block),
    C("003-sinusoidal", "Positional Encoding", "sinusoidal encodings can generalise to sequence lengths not seen "
      "during training", IMPRECISE, "they can be computed for any length; models using them degrade quickly past "
      "the training length", "primary source", "04", correct="the encoding extends to any position, but sinusoidal "
      "models' perplexity rises soon after the training length (Press et al. 2022, Fig. 1)",
      source="Press et al. 2022, Fig. 1"),
    C("003-learned", "Positional Encoding", "learned absolute positions (BERT, GPT-2) cannot generalise beyond the "
      "training context", CONFIRMED, "the table has no row for position T_max", "computed", "04",
      check=_table_params),
    C("003-rope", "Rotary Position Embedding", "RoPE (LLaMA, Mistral, most modern LLMs) rotates q and k so the "
      "score depends only on the relative position", CONFIRMED, "equal scores for equal offsets", "computed", "05",
      nb_check="05 §2", check=_rope_identity),
    C("003-rope-length", "Rotary Position Embedding", "being relative, RoPE enables better length generalisation",
      IMPRECISE, "better than learned absolute positions (which cannot run past T_max at all), yet rotary models "
      "still degrade past the training length", "primary source", "05", correct="length generalisation needs more "
      "than RoPE: position interpolation or base rescaling plus fine-tuning (see 000-8.4.4-extrapolation)",
      source="Press et al. 2022, Fig. 1"),
    C("003-families", "The Three Transformer Families", "BERT-base 110M, BERT-large 340M, T5-base 220M, GPT-2 "
      "1.5B, LLaMA 3 8B–70B", CONFIRMED, "counted: 109.5M, 335.1M, 222.9M, 1.56B; LLaMA 3 was released as 8B and 70B",
      "computed; primary sources", "07", source="Devlin et al. 2019; Raffel et al. 2020; Radford et al. 2019; "
      "Meta's Llama 3 release (Apr 2024)", nb_check="07 §3", check=_sizes),
    C("003-bert-objective", "The Three Transformer Families", "BERT is trained with masked language modelling plus "
      "NSP", CONFIRMED, "MLM and next-sentence prediction", "primary source", "08", source="Devlin et al. 2019, "
      "§3.1"),
    C("003-doubling", "Scaling and Efficiency", "doubling parameters roughly halves the loss at fixed compute", WRONG,
      "under L ∝ N^−0.076 doubling N multiplies the loss by 0.95", "computed from the cited law", "07",
      correct="about a 5% reduction; halving the loss would take ~9,100× the parameters",
      source="Kaplan et al. 2020, Eq. 1.1 (α_N ≈ 0.076)", nb_check="07 §5", check=_doubling),
    C("003-gqa", "Scaling and Efficiency (table)", "GQA is used in LLaMA 2/3 and Mistral", IMPRECISE,
      "LLaMA 2 uses GQA only in its 34B and 70B models", "primary sources", "03", correct="GQA: Llama 2 34B/70B, "
      "every Llama 3 model, Mistral 7B; Llama 2 7B and 13B use multi-head attention", source="Touvron et al. 2023b "
      "(Llama 2) §2.2; Jiang et al. 2023 Table 1"),
    C("003-mqa", "Scaling and Efficiency (table)", "multi-query attention is used in PaLM and Falcon", CONFIRMED,
      "PaLM uses MQA; Falcon-7B uses MQA (Falcon-40B 8 K/V groups)", "primary sources", "03",
      source="Chowdhery et al. 2022 §2; Almazrouei et al. 2023 (Falcon)"),
    C("003-sliding", "Scaling and Efficiency (table)", "sliding-window attention is used in Mistral and Longformer",
      CONFIRMED, "Mistral 7B: window 4096; Longformer: local window plus global tokens", "primary sources", "03",
      source="Jiang et al. 2023 §2; Beltagy et al. 2020"),
    C("003-bottleneck", "Learning objectives; Scaling and Efficiency", "grouped-query and multi-query attention are "
      "architectural changes that reduce the quadratic attention bottleneck ('Solutions' to attention being "
      "quadratic in time and memory)", WRONG, "every query head still scores all T² pairs: the score FLOPs are the "
      "same for MHA, GQA and MQA; what shrinks is the K/V cache (by h/g) and the K/V projections", "FLOPs counted; "
      "primary source", "03", correct="GQA and MQA cut the KV cache and the memory traffic of decoding, not the "
      "T² term; sparse and sliding-window attention reduce it (sliding window: T·w pairs); FlashAttention keeps "
      "the T² time and removes the T² memory", source="Ainslie et al. 2023 (arXiv:2305.13245) and Shazeer 2019 "
      "(arXiv:1911.02150), abstracts: both target memory bandwidth at incremental decoding",
      check=_gqa_quadratic_unchanged),
    C("003-flash", "Scaling and Efficiency", "FlashAttention does not change the mathematical output; it reduces "
      "HBM traffic by fusing the softmax and the value aggregation into one kernel", CONFIRMED, "exact attention "
      "(equal up to rounding), computed tile by tile in one fused kernel", "primary source", "10",
      source="Dao et al. 2022, §3"),
    C("003-nn-transformer", "PyTorch and TensorFlow", "nn.Transformer on src (2, 10, 512), tgt (2, 7, 512) returns "
      "(2, 7, 512); the pre-norm encoder stack returns (2, 10, 512)", CONFIRMED, "(B, tgt_len, d_model) and (B, "
      "src_len, d_model), checked at d_model = 64 with one layer each", "computed", "08", nb_check="08 §6",
      check=_nn_transformer_shapes),
    C("003-decoder-only", "PyTorch and TensorFlow", "a GPT-style decoder-only model is "
      "nn.TransformerDecoder(...)(x, memory=x, tgt_mask=causal)", WRONG, "the cross-attention reads the unmasked "
      "x, so position 0 depends on the last token", "computed", "08", correct="use nn.TransformerEncoder with the "
      "causal mask (no cross-attention)", nb_check="08 §2", check=_leak),
    C("003-pe-code", "PyTorch and TensorFlow", "the SinusoidalPE module implements the sinusoidal encoding",
      CONFIRMED, "equal to the formula to 1e-4 (float32)", "computed", "04", check=_pe_code),
]
# fmt: on
