"""000 (Chapter 8 draft), §8.1–§8.3: recurrence vs attention, the history, scaled dot-product attention,
the worked example, multi-head attention."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import figures
from ._base import ARTEFACT, CONFIRMED, IMPRECISE, NOT_CHECKABLE, WRONG, factory
from ._checks import close, gaussian_outside, gen, original_params, softmax_rows

C = factory("000")
CLARK_FIG5 = (
    "Clark et al. 2019, 'What Does BERT Look At?', BlackboxNLP, Fig. 5 ('Head 8-10: direct objects attend to their "
    "verbs', 86.8% accuracy on dobj) and §4"
)
PAPER = "Vaswani et al. 2017, 'Attention Is All You Need' (NeurIPS; arXiv:1706.03762)"

# The walkthrough of §8.2.5, reconstructed: q1 = [1, 0, 1] and k3 = [1, 0, 1] give '1 + 0 + 1' = 2; k1 = [1, 0, 0]
# gives q1·k1 = 1, k2 = [0, 1, 0] gives 0, k4 = [0, 0, 1] gives 1: the surviving score row [1, 0, 2, 1].
Q1 = torch.tensor([1.0, 0, 1], dtype=torch.float64)
K4 = torch.tensor([[1.0, 0, 0], [0, 1, 0], [1, 0, 1], [0, 0, 1]], dtype=torch.float64)


def _row1():
    return K4 @ Q1 / math.sqrt(3)


def _rank_collapse():
    def spread(residual: bool, norm: bool) -> float:
        torch.manual_seed(0)
        layers = [nn.MultiheadAttention(32, 4, bias=False, batch_first=True).eval() for _ in range(12)]
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


def _serial():
    x = torch.randn(1000, 8, generator=gen())
    assert (x @ x.T).shape == (1000, 1000)  # all 1000² scores from one product, no chain over positions


def _params_65_213():
    base, big = (sum(original_params(d, f)) for d, f in ((512, 2048), (1024, 4096)))
    assert (base, big) == (63_082_496, 214_245_376), (base, big)
    close(base / 1e6, 65, 2.0)
    close(big / 1e6, 213, 1.5)


def _scores512():
    assert 512**2 == 262_144


def _variance():
    q, k = (torch.randn(40_000, 64, generator=gen(s), dtype=torch.float64) for s in (1, 2))
    s = (q * k).sum(-1)
    close(s.var() / 64, 1.0, 0.03)
    close((s / 8).var(), 1.0, 0.03)


def _std64():
    assert math.sqrt(64) == 8
    close(1 - gaussian_outside(3), 0.9973, 1e-4)  # [-24, 24] = ±3σ


def _std512():
    close(math.sqrt(512), 22.6, 0.05)
    close(3 * math.sqrt(512), 68, 0.5)


def _saturate():
    w = softmax_rows(torch.cat([torch.tensor([24.0]), torch.zeros(511)]))[0]
    close(w, 1 - 511 * math.exp(-24), 1e-12)
    assert w > 1 - 2e-8


def _range3():
    close(1 - gaussian_outside(3), 0.9973, 1e-4)
    close(262_144 * gaussian_outside(3), 707.7, 0.1)  # expected outside [-3, 3] in a 512x512 score matrix


def _mask_zero():
    s = torch.randn(5, 5, generator=gen(), dtype=torch.float64).masked_fill(torch.ones(5, 5).triu(1).bool(), -math.inf)
    w = torch.softmax(s, -1)
    assert (w.triu(1) == 0).all() and torch.allclose(w.sum(-1), torch.ones(5, dtype=torch.float64))


def _q1k1():
    assert [int(x) for x in (Q1 * K4[0])] == [1, 0, 0] and int(Q1 @ K4[0]) == 1
    assert 1 + 0 + 1 == 2 and int(Q1 @ K4[2]) == 2


def _scaled_row():
    assert torch.allclose(_row1(), torch.tensor([0.577, 0, 1.155, 0.577], dtype=torch.float64), atol=5e-4)


def _expsum():
    close(_row1().exp().sum(), 7.7357, 5e-5)
    close(sum(math.exp(x) for x in (0.577, 0.0, 1.155, 0.577)), 7.7354, 5e-5)  # from the 3-decimal exponents
    close(sum(round(math.exp(x), 3) for x in _row1().tolist()), 7.735, 1e-9)  # from the 3-decimal exponentials
    assert abs(_row1().exp().sum() - 7.734) > 1e-3


def _weights():
    w = softmax_rows(_row1())
    assert torch.allclose(w, torch.tensor([0.230, 0.129, 0.410, 0.230], dtype=torch.float64), atol=5e-4)


def _sum999():
    close(0.230 + 0.129 + 0.410 + 0.230, 0.999, 1e-12)
    close(softmax_rows(_row1()).sum(), 1.0, 1e-12)


def _shapes():
    q, k, v = (torch.randn(1, 4, 8, generator=gen(s)) for s in range(3))
    w = torch.softmax(q @ k.transpose(1, 2) / 8**0.5, -1)
    assert (w @ v).shape == (1, 4, 8) and w[0].shape == (4, 4)


def _flops_equal():
    t, d = 128, 512
    scores = {h: h * 2 * t * t * (d // h) for h in (1, 8, 64)}  # Q_i K_iᵀ for every head
    assert len(set(scores.values())) == 1 and scores[1] == 2 * t * t * d
    softmax_entries = {h: h * t * t for h in (1, 8)}  # what does grow with h: one T×T softmax per head
    assert softmax_entries[8] == 8 * softmax_entries[1] < scores[8] / 8  # yet small beside the products


def _head_rank():
    t, d, h = 128, 512, 8
    x = torch.randn(t, d, generator=gen(), dtype=torch.float64)
    wq, wk = (torch.randn(d, d, generator=gen(s), dtype=torch.float64) for s in (1, 2))
    head = (x @ wq[:, : d // h]) @ (x @ wk[:, : d // h]).T  # one head's T×T logits
    assert torch.linalg.matrix_rank(head) == d // h == 64
    assert torch.linalg.matrix_rank((x @ wq) @ (x @ wk).T) == t  # one full-width head: full rank


def _code_shapes():
    x = torch.randn(1, 6, 16, generator=gen())
    q = x.view(1, 6, 4, 4).transpose(1, 2)
    assert (q @ q.transpose(-2, -1)).shape == (1, 4, 6, 6) and q.transpose(1, 2).reshape(1, 6, 16).shape == (1, 6, 16)


def _attn_params():
    for d, h in ((512, 8), (1024, 16)):
        assert 3 * h * d * (d // h) + d * d == 4 * d * d  # h cancels
    assert 4 * 512**2 == 1_048_576 and 4 * 1024**2 == 4_194_304


def _leak_generates_badly():
    assert figures.value("02:unmasked_rule_kept") < 30, "without the mask, generation keeps the rule rarely"


# fmt: off
CLAIMS = [
    C("000-8.1.1-serial", "§8.1.1–8.1.2", "an RNN needs T sequential steps (1000 for T = 1000); self-attention "
      "computes all T² scores in one product, O(1) serial operations", CONFIRMED, "recurrent layer: O(n) "
      "sequential operations; self-attention: O(1)", "primary source; shape check", "07", source=f"{PAPER}, Table 1",
      check=_serial),
    C("000-8.1.2-cost", "§8.1.2", "self-attention costs O(T²) time and space; an RNN O(T) steps of O(d²) each",
      CONFIRMED, "per layer: self-attention O(n²·d), recurrent O(n·d²) (with d factors made explicit)",
      "primary source", "07", source=f"{PAPER}, Table 1"),
    C("000-8.1.3-bleu-ende", "§8.1.3", "the base Transformer achieved 28.4 BLEU on WMT14 En–De and trained in 3.5 "
      "days on 8 P100 GPUs", WRONG, "28.4 BLEU and 3.5 days belong to Transformer (big)", "primary source", "09",
      correct="base: 27.3 BLEU after 100K steps, 12 hours on 8 P100 GPUs; the big model: 28.4 BLEU after 300K "
      "steps, 3.5 days", source=f"{PAPER}, §5.2, §6.1 and Table 2"),
    C("000-8.1.3-bleu-enfr", "§8.1.3", "the large Transformer achieved 41.0 BLEU on WMT14 En–Fr", CONFIRMED,
      "41.0 in the NeurIPS 2017 version (the later arXiv versions report 41.8)", "primary source", "09",
      source=f"{PAPER}, abstract and Table 2"),
    C("000-8.1.3-25years", "§8.1.3", "recurrence was considered indispensable for sequence modelling 'for 25 years'",
      NOT_CHECKABLE, "", "judgment, not a measurement", "00", why="a characterisation of the field, not a dated "
      "fact (Elman networks 1990, LSTM 1997: 20–27 years)"),
    C("000-8.1.3-collapse", "§8.1.3", "without positional encodings, residual connections and layer normalisation "
      "'the attention layers would quickly collapse into untrainable representations'", IMPRECISE, "12 stacked "
      "attention layers: without residuals every position collapses to one vector, with or without LayerNorm; "
      "with residuals they stay apart, with or without it", "computed; primary source", "06", correct="the "
      "collapse (rank collapse: all positions converge to one vector) comes from stacking attention without "
      "skip connections; residual connections (and the FFNs) prevent it, LayerNorm does not; positional "
      "encodings are needed for word order, not against collapse", source="Dong et al. 2021, 'Attention is not "
      "all you need: pure attention loses rank doubly exponentially with depth', ICML, abstract; notebook 06 §6",
      nb_check="06 §6", check=_rank_collapse),
    C("000-8.1-team", "§8.1 sidebar", "the Transformer was developed by a team at Google Brain and Google Research "
      "'led by Ashish Vaswani'", IMPRECISE, "the paper names no leader", "primary source (the author footnote)", "00",
      correct="eight authors marked 'equal contribution, listing order is random' (Google Brain, Google Research; "
      "Gomez and Polosukhin's work done at Google); the footnote credits Uszkoreit with proposing self-attention, "
      "Vaswani and Polosukhin with the first models, Shazeer with scaled dot-product and multi-head attention",
      source=f"{PAPER}, first-page footnote"),
    C("000-8.1-name", "§8.1 sidebar", "the name was chosen 'to evoke transforming representations' (retrospective "
      "accounts)", NOT_CHECKABLE, "", "no primary source available here", "00", why="the text cites no account, "
      "and the paper says nothing about the name"),
    C("000-8.1-successors", "§8.1 sidebar", "within two years the Transformer was the basis of BERT, GPT-2 and T5; "
      "within five years it powered GPT-4, Gemini and Claude", IMPRECISE, "dates from arXiv and the labs' "
      "announcements", "primary sources (publication dates)", "00", correct="BERT (Oct 2018) and GPT-2 (Feb 2019) "
      "within two years of June 2017, T5 (arXiv Oct 2019) within 28 months; GPT-4 and Claude (Mar 2023) ~5¾ years, "
      "Gemini (Dec 2023) ~6½ years later, and their architectures are only partly disclosed",
      source="arXiv 1810.04805 (BERT), 1910.10683 (T5); GPT-2 report (Feb 2019); GPT-4 technical report (2023)"),
    C("000-8.1-params", "§8.1 sidebar", "the original base model had 65 million parameters and the large one 213 "
      "million", CONFIRMED, "the paper's Table 3 says 65M and 213M; counted with the shared 37K vocabulary and "
      "three-way tying: 63,082,496 and 214,245,376 (no single vocabulary size gives both published numbers)",
      "primary source; counted from the shapes", "07", source=f"{PAPER}, Table 3", nb_check="07 §3: 'EXPECTED' "
      "counts and 'implied vocabularies'", check=_params_65_213),
    C("000-8.1-frontier", "§8.1 sidebar", "modern frontier models are estimated to have hundreds of billions of "
      "parameters or more", NOT_CHECKABLE, "", "no published sizes", "07", why="the sizes of GPT-4, Gemini and "
      "Claude are not published"),
    C("000-8.2.2-262144", "§8.2.2", "a 512-token sequence means 262,144 scores", CONFIRMED, "512² = 262,144",
      "computed", "01", nb_check="01 appendix: 'scores of a 512-token sequence'", check=_scores512),
    C("000-8.2.3-var", "§8.2.3, Ex. 8.1", "for independent zero-mean unit-variance components, Var(q·k) = d_k, so "
      "the standard deviation is √d_k; dividing by √d_k restores variance 1", CONFIRMED, "Var(q·k)/d_k = 1 and "
      "Var(q·k/8) = 1 within 3% for 40,000 samples at d_k = 64", "derivation + Monte Carlo", "01",
      source=f"{PAPER}, §3.2.1 footnote 4", nb_check="01 §5: step 3–4 checks for d_k = 4…1024", check=_variance),
    C("000-8.2.3-std64", "§8.2.3", "d_k = 64: standard deviation 8, dot products routinely in [−24, +24]", CONFIRMED,
      "σ = 8; ±3σ holds 99.73% of a Gaussian", "computed", "01", nb_check="01 appendix: 'd_k = 64 → std 8', "
      "'99.4%–99.9% in [-24, 24]'", check=_std64),
    C("000-8.2.3-std512", "§8.2.3", "d_k = 512: standard deviation ≈ 22.6, dot products span [−68, +68]", CONFIRMED,
      "√512 = 22.63, 3σ = 67.9", "computed", "01", nb_check="01 appendix", check=_std512),
    C("000-8.2.3-saturate", "§8.2.3", "one score at 24 among near-zero others puts nearly all the softmax mass on it",
      CONFIRMED, "weight 1/(1 + 511·e⁻²⁴) ≈ 1 − 1.9·10⁻⁸ even among 512 keys", "computed", "01",
      nb_check="01 appendix: 'one score 24 among 511 zeros'", check=_saturate),
    C("000-8.2.3-range3", "§8.2.3", "after scaling, the softmax inputs stay in [−3, +3]", IMPRECISE,
      "99.73% of them (Gaussian limit); about 708 of the 262,144 scores of one 512×512 matrix fall outside",
      "computed", "01", correct="about 99.7% of the scaled scores lie in [−3, +3]; hundreds per 512×512 matrix lie "
      "outside, the largest near ±5", nb_check="01 appendix: the 'stay in [-3, +3]' check", check=_range3),
    C("000-8.2.3-quote", "§8.2.3", "the paper: 'We suspect that for large values of d_k, the dot products grow "
      "large in magnitude, pushing the softmax function into regions where it has extremely small gradients'",
      CONFIRMED, "quoted correctly", "primary source", "01", source=f"{PAPER}, §3.2.1"),
    C("000-8.2.3-practice", "§8.2.3 sidebar", "practitioners who removed the scaling report that training fails to "
      "converge or reaches a worse solution", NOT_CHECKABLE, "", "anecdote without a source", "01",
      why="no study is cited; notebook 01 measures the saturation itself, not a training run without scaling"),
    C("000-8.2.4-mask", "§8.2.4", "M_ij = 0 for j ≤ i and −∞ for j > i; exp(−∞) = 0 gives future positions exactly "
      "zero weight", CONFIRMED, "the masked weights are exactly 0.0 and rows still sum to 1", "computed", "02",
      nb_check="02 §1", check=_mask_zero),
    C("000-8.2.4-leak", "§8.2.4", "without the causal mask a model 'performs perfectly on training data but cannot "
      "generate text'", CONFIRMED, "trained without the mask: held-out loss below ln 2 (impossible honestly), yet "
      "its generated tokens keep the rule only {02:unmasked_rule_kept}% of the time (random guessing: 12.5%)",
      "measured in notebook 02 (figure read from its stored outputs)", "02", source="notebook 02 §4",
      nb_check="02 §4", check=_leak_generates_badly),
    C("000-8.2.4-cross", "§8.2.4", "encoder–decoder models mask the decoder's self-attention but not its "
      "cross-attention", CONFIRMED, "cross-attention reads the fully observed source; it still needs the source "
      "padding mask, which the text omits", "primary source; notebook", "02", source=f"{PAPER}, §3.2.3",
      nb_check="02 §2 table"),
    C("000-8.2.5-q1k1", "§8.2.5", "q₁ᵀk₁ = 1 + 0 + 1 = 1", ARTEFACT, "q₁·k₁ = 1·1 + 0·0 + 1·0 = 1, as the text's "
      "result says", "reconstruction from the surviving score row [1, 0, 2, 1]; the same passage's other formulas",
      "01", correct="the extraction dropped the products: with q₁ = [1, 0, 1] and k₁ = [1, 0, 0] the terms are "
      "1·1 + 0·0 + 1·0 and the result 1 is right. The same paragraph lost symbols elsewhere too ('Each matrix has "
      "shape $4 $' for 4 × 3, 'scale by $1/ = 1/ $' for 1/√3), so the surviving '1 + 0 + 1' is not the author's "
      "arithmetic", source="000 §8.2.5 as extracted; the seeds' README ('many formulas lost their symbols')",
      nb_check="01 §3", check=_q1k1),
    C("000-8.2.5-scaled", "§8.2.5", "first row of scaled scores [0.577, 0, 1.155, 0.577]", CONFIRMED,
      "[1, 0, 2, 1]/√3 = [0.5774, 0, 1.1547, 0.5774]", "computed", "01", nb_check="01 §3", check=_scaled_row),
    C("000-8.2.5-expsum", "§8.2.5", "the four exponentials sum to 7.734", IMPRECISE, "7.7357 (7.736 to 3 decimals)",
      "computed in float64", "01", correct="7.7357; from the 3-decimal exponents 0.577 and 1.155 the sum is 7.7354, "
      "from the 3-decimal exponentials 1.781 + 1 + 3.173 + 1.781 it is 7.735. A slip in the last digit that changes "
      "no weight: the printed weights [0.230, 0.129, 0.410, 0.230] are right either way", nb_check="01 §3",
      check=_expsum),
    C("000-8.2.5-weights", "§8.2.5", "first row of weights ≈ [0.230, 0.129, 0.410, 0.230]", CONFIRMED,
      "[0.2303, 0.1293, 0.4102, 0.2303]", "computed", "01", nb_check="01 §3", check=_weights),
    C("000-8.2.5-sum1", "§8.2.5", "the first row of weights sums to 1 ('we can verify that these sum to 1')",
      CONFIRMED, "the exact weights sum to 1 (to 1e-12); their 3-decimal roundings to 0.999, as rounding does",
      "computed", "01", check=_sum999),
    C("000-8.2.5-shapes", "§8.2.5", "weights 4×4, output 4×3; the listing prints output [1, 4, 8] and a [4, 4] "
      "weight matrix", CONFIRMED, "(4, 4) and (4, d_v); the listing's (1, 4, 8) and (4, 4)", "computed", "01",
      nb_check="01 §3: '000 §8.2.5 listing'", check=_shapes),
    C("000-8.3.2-dk", "§8.3.2", "base model: d_model = 512, h = 8, so d_k = d_v = 64", CONFIRMED, "512/8 = 64",
      "primary source", "03", source=f"{PAPER}, §3.2.2"),
    C("000-8.3.2-cost", "§8.3.2", "with d_k = d_v = d_model/h the total cost of h heads is 'comparable' to "
      "single-head attention of full width", CONFIRMED, "the paper's own claim ('similar to that of single-head "
      "attention with full dimensionality'). Counted: the products Q_iK_iᵀ and A_iV_i cost the same for every h "
      "(2T²d multiply-adds each in all); only the softmax grows, from T² to h·T² entries", "primary source; FLOPs "
      "counted", "03", source=f"{PAPER}, §3.2.2", nb_check="03 §3: 'FLOPs, h = 1 / 8 / 64'", check=_flops_equal),
    C("000-8.3.2-capacity", "§8.3.2", "the h heads' outputs span h·d_v = d_model dimensions, 'recovering the full "
      "representational capacity': a factorization, 'not a compression that discards information'", IMPRECISE,
      "the concatenated values do span d_model; each head's score matrix Q_iK_iᵀ has rank ≤ d_k = d_model/h (64 "
      "for 128 tokens, against 128 for one full-width head)", "computed; primary source", "03",
      correct="the value path keeps d_model dimensions, but each head scores with only d_k: its T×T attention "
      "logits have rank at most d_k, a low-rank bottleneck when d_k < T that one full-width head does not have",
      source="Bhojanapalli et al. 2020, 'Low-Rank Bottleneck in Multi-head Attention Models', ICML, abstract",
      check=_head_rank),
    C("000-8.3.3-code", "§8.3.3", "the MultiHeadAttention listing prints output [1, 6, 16] and head weights [1, 4, "
      "6, 6]", CONFIRMED, "(1, 6, 16) and (1, 4, 6, 6)", "computed", "03", nb_check="03 §3", check=_code_shapes),
    C("000-8.3.4-clark", "§8.3.4", "Clark et al. (2019) found BERT heads for direct objects of verbs, for the "
      "previous token, and heads that attend broadly", CONFIRMED, "all three patterns are in the paper's abstract "
      "and §3", "primary source", "03", source="Clark et al. 2019, 'What Does BERT Look At?', BlackboxNLP, abstract"),
    C("000-8.3.4-layer5", "§8.3.4", "Clark et al.: 'one head in layer 5 consistently attends to the direct objects "
      "of verbs'", WRONG, "the paper's direct-object head is head 10 of layer 8 ('head 8-10')", "primary source",
      "03", correct="head 8-10 of BERT-base (layer 8, head 10); there direct objects attend to their verbs, 86.8% "
      "accurate on the dobj relation. The abstract's looser wording, 'heads that attend to the direct objects of "
      "verbs', names no layer", source=CLARK_FIG5),
    C("000-8.3.4-voita", "§8.3.4", "Voita et al. (2019): in a 12-head BERT model, pruning 8 of the 12 heads in "
      "most layers degraded performance only slightly", WRONG, "Voita et al. pruned the encoder heads of a "
      "translation Transformer", "primary source", "03", correct="Voita et al.: 38 of 48 encoder heads of an En–Ru "
      "NMT Transformer pruned for −0.15 BLEU; head pruning in BERT is Michel et al. 2019 ('Are Sixteen Heads "
      "Really Better than One?': some layers can be reduced to one head)", source="Voita et al. 2019, ACL, "
      "abstract; Michel et al. 2019, NeurIPS, abstract", nb_check="03 summary (prose)"),
    C("000-8.3.5-4d2", "§8.3.5", "multi-head attention has 4·d_model² parameters, whatever h: 1,048,576 for d = "
      "512, ≈ 4.2 million for d = 1024", CONFIRMED, "4·512² = 1,048,576; 4·1024² = 4,194,304; h cancels",
      "computed; original code", "03", source="tensor2tensor common_attention.py: compute_attention_component and "
      "the 'output_transform' dense layer use use_bias=False", nb_check="03 §3; 07 §4",
      check=_attn_params),
]
# fmt: on
