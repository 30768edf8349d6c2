"""000 (Chapter 8 draft), §8.6 and the exercises' statements and hints, and the references."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import figures
from ._base import CONFIRMED, IMPRECISE, NOT_CHECKABLE, WRONG, factory
from ._checks import close, gen, layer_flops, sinusoidal

C = factory("000")


def _mask5():
    m = torch.ones(5, 5).tril()
    assert int(m.sum()) == 15 and m.sum(1).tolist() == [1, 2, 3, 4, 5]


def _two_layer_mask():
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


def _ex81():
    q, k = (torch.randn(200_000, generator=gen(s), dtype=torch.float64) for s in (3, 4))
    close((q * k).mean(), 0.0, 0.01)
    close((q * k).var(), 1.0, 0.02)


def _ex82():
    d, f, n, v = 512, 2048, 6, 32000
    total = v * d + n * (4 * d * d + 2 * d * f + 4 * d)
    assert total == 35_270_656 and total + n * (4 * d + f + d) == 35_298_304


def _crossover():
    d, h, d_ff = 64, 4, 256
    lin, quad = layer_flops(6 * d, d, h, d_ff)
    assert lin == quad  # the whole layer: quadratic = linear at T = 2d + d_ff = 6d
    lin, quad = layer_flops(6 * d - 8, d, h, d_ff)
    assert quad < lin
    lin, quad = layer_flops(6 * d + 8, d, h, d_ff)
    assert quad > lin
    t = 2 * d  # the attention sublayer alone: 4T²d = 8Td² at T = 2d
    assert 4 * t * t * d == 8 * t * d * d and 32 * 4096**2 * 2 == 2**30


def _ex85():
    q, k, v = (torch.randn(2, 8, 16, generator=gen(s)) for s in range(3))
    w = torch.softmax((q @ k.transpose(1, 2) / 4).masked_fill(torch.ones(8, 8).triu(1).bool(), -math.inf), -1)
    assert (w.triu(1) == 0).all() and torch.allclose(w.sum(-1), torch.ones(2, 8))
    assert F.scaled_dot_product_attention(q, k, v, is_causal=True).shape == (2, 8, 16)


def _ex87():
    pe = sinusoidal(256, 128)
    u = pe / pe.norm(dim=1, keepdim=True)
    sim = u @ u.T
    i = torch.arange(256)
    assert torch.allclose(sim, sim[0][(i[:, None] - i[None, :]).abs()], atol=1e-12)  # exactly a function of |i-j|
    first_rise = int(((sim[0, 1:] - sim[0, :-1]) > 0).nonzero()[0])
    assert first_rise == 11


def _ex89_ppl():
    v = figures.value
    assert v("10:ex89_ppl_lstm") < v("10:ex89_ppl_transformer"), "the exercise's recipe: the LSTM is lower"
    assert v("10:valid_transformer") < v("10:valid_lstm"), "the tuned recipe: the Transformer is lower"


# fmt: off
CLAIMS = [
    C("000-8.6.1-bert", "§8.6.1", "BERT uses 12 encoder blocks with d_model = 768 and h = 12", CONFIRMED,
      "BERT-base: L = 12, H = 768, A = 12", "primary source", "08", source="Devlin et al. 2019, §3"),
    C("000-8.6.2-gpt", "§8.6.2", "GPT-2 uses 12 to 48 blocks with d_model 768 to 1600; GPT-3 96 blocks with "
      "d_model = 12288", CONFIRMED, "GPT-2: 12/24/36/48 layers, 768/1024/1280/1600; GPT-3 175B: 96 × 12288",
      "primary sources", "07", source="Radford et al. 2019, Table 2; Brown et al. 2020, Table 2.1"),
    C("000-8.6.3-t5", "§8.6.3", "T5 turns tasks into text: 'translate English to German: …', 'summarize: …', "
      "'classify: [text]'", IMPRECISE, "the first two prefixes are T5's", "primary source", "08",
      correct="T5 uses task names as prefixes, e.g. 'cola sentence:' or 'sst2 sentence:' for classification, not "
      "'classify:'", source="Raffel et al. 2020, Fig. 1 and Appendix D"),
    C("000-8.6.4-mask5", "§8.6.4", "the causal mask is lower-triangular (T = 5: rows of 1…5 ones), created once "
      "and shared by all layers and heads, with no parameters", CONFIRMED, "15 ones; a (T, T) tensor broadcasts to "
      "(B, h, T, T)", "computed", "02", nb_check="02 §1; 08 §2", check=_mask5),
    C("000-8.6.4-nodiff", "§8.6.4", "at inference the mask is automatically satisfied; applying it explicitly "
      "makes no difference to the output", WRONG, "with two layers the last position's output changes when the "
      "prefix is re-run without the mask", "computed", "02", correct="true only for a one-layer model or for the "
      "single new query of KV-cached decoding; when the prefix is recomputed, earlier positions would see later "
      "ones in layer 1 and layer 2 reads them", nb_check="02 §5; 08 §2 (the same refutation twice)",
      check=_two_layer_mask),
    C("000-8.6-table8.2", "Table 8.2", "pre-training: masked LM for encoders (BERT), causal LM for decoders (GPT), "
      "span corruption for encoder–decoders (T5)", CONFIRMED, "as the three papers describe", "primary sources", "08",
      source="Devlin et al. 2019 §3.1; Radford et al. 2018; Raffel et al. 2020 §3.1.4",
      nb_check="08: 'pre-training column'"),
    C("000-ex8.1-hint", "Ex. 8.1 hint", "each term q_i k_i has mean 0 and variance 1", CONFIRMED,
      "mean 0 ± 0.01, variance 1 ± 0.02 over 200,000 samples", "Monte Carlo", "01", nb_check="01 §5 steps 1–2",
      check=_ex81),
    C("000-ex8.2-hint", "Ex. 8.2 hint", "per part: embedding |V|·d, attention 4d², FFN 2·d·d_ff, LayerNorm 2d per "
      "sublayer", CONFIRMED, "total 35,270,656 with the hint's conventions; +27,648 with linear biases; 60,454,912 "
      "if read as a 6 + 6 encoder–decoder", "computed", "07", nb_check="07 §4", check=_ex82, reveals="8.2"),
    C("000-ex8.4-crossover", "Ex. 8.4 hint", "the quadratic term dominates when T > d_k: the crossover is at T = "
      "d_model/h", WRONG, "T = d/h (128 for d = 4096, h = 32) is where the h attention matrices outgrow the T×d "
      "activations (memory), not a compute crossover", "derivation; FLOPs counted by PyTorch", "07",
      correct="by the exercise's own T² > d·T: T > d; attention's FLOPs (4T²d vs 8Td²): T > 2d; a whole layer "
      "(attention + FFN, 4T²d vs 8Td² + 4T·d·d_ff): T > 2d + d_ff = 6d for d_ff = 4d (24,576 for d = 4096)",
      nb_check="07 §6 step 3", check=_crossover, reveals="8.4"),
    C("000-ex8.5-tests", "Ex. 8.5", "with a causal mask the upper-triangular weights are exactly zero and every "
      "row sums to 1", CONFIRMED, "exact zeros above the diagonal; rows sum to 1", "computed", "01",
      nb_check="01 §7 (Exercise 8.5's tests)", check=_ex85),
    C("000-ex8.7-offset", "Ex. 8.7", "the cosine similarity of PE(i) and PE(j) depends 'primarily' on |i − j| and "
      "decreases roughly monotonically for small distances", IMPRECISE, "exactly a function of |i − j|; for T = "
      "256, d = 128 it falls strictly up to offset 11", "computed", "04", correct="it depends only on |i − j|: cos "
      "= (2/d)·Σ_k cos((i − j)ω_k)", nb_check="04 §3", check=_ex87, reveals="8.7"),
    C("000-ex8.9-ppl", "Ex. 8.9 hint", "the Transformer should achieve lower perplexity than a comparable LSTM",
      IMPRECISE, "recipe-dependent: with the exercise's recipe the LSTM came out lower (training perplexity "
      "{10:ex89_ppl_lstm} against the Transformer's {10:ex89_ppl_transformer}); with a tuned recipe on all of "
      "WikiText-2 the Transformer won ({10:valid_transformer} against {10:valid_lstm} validation perplexity)",
      "measured in notebook 10 (figures read from its stored outputs)", "10", correct="which model wins depends on "
      "the recipe and the budget; pytorch/examples' word-language models show the same (after 360 s on 2 CPU "
      "cores: Transformer 372.6 with AdamW but 536.3 with its default SGD, LSTM 398.5)", source="notebook 10 §3 "
      "and §5; pytorch/examples word_language_model, run for 360 s each on the companion's 2-core machine (figures "
      "quoted in notebook 10 §5, not produced by a notebook)", nb_check="10 §3", check=_ex89_ppl, reveals="8.9"),
    C("000-ex8.9-speed", "Ex. 8.9 hint", "the Transformer should train faster per epoch on a GPU than the LSTM",
      NOT_CHECKABLE, "", "no GPU in the notebooks' checks", "10", why="a GPU claim; on the CPU notebook 10 §3 "
      "measured {10:ex89_s_transformer} s per epoch for the Transformer and {10:ex89_s_lstm} s for the LSTM, which "
      "says nothing about a GPU", reveals="8.9"),
    C("000-ref-xiong", "References", "Xiong, R., Yang, Y., He, J., Zheng, K., … (2020)", WRONG, "the third author "
      "is Di He", "primary source", "06", correct="He, D. (Di He), as 001's reference list has it",
      source="Xiong et al. 2020, 'On Layer Normalization in the Transformer Architecture', ICML, author list"),
]
# fmt: on
