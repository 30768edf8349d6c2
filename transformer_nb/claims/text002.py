"""002 ('Transformers and Attention', article), in full."""

import math

import torch

from ._base import CONFIRMED, FLASH_README, IMPRECISE, WRONG, factory
from ._checks import close, gen, gpt_params, gqa_score_flops, kv_cache_bytes, layer_flops, rope, softmax_rows
from .text000a import _flops_equal
from .text000b import _equivariant, _rotation
from .text001b import _recompute_flops

C = factory("002")
PAPER = "Vaswani et al. 2017, 'Attention Is All You Need'"
FLASH = "Dao et al. 2022, 'FlashAttention' (arXiv:2205.14135)"


def _var():
    q, k = (torch.randn(40_000, 16, generator=gen(s), dtype=torch.float64) for s in (5, 6))
    s = (q * k).sum(-1)
    close(s.mean(), 0.0, 0.1)
    close(s.var() / 16, 1.0, 0.03)


def _aligned_scores():
    q = torch.randn(40_000, 64, generator=gen(9), dtype=torch.float64)
    k = torch.randn(40_000, 64, generator=gen(10), dtype=torch.float64)
    close(((q * k).sum(-1) / 8).var(), 1.0, 0.03)  # independent: unit variance, as the text says
    close(((q * q).sum(-1) / 8).mean(), 8.0, 0.05)  # aligned (k = q): the scaled scores sit near √d_k = 8


def _causal_same():
    s = torch.randn(6, 6, generator=gen(), dtype=torch.float64)
    m = torch.zeros(6, 6, dtype=torch.float64).masked_fill(torch.ones(6, 6).triu(1).bool(), -math.inf)
    assert torch.equal(softmax_rows((s + m) / 4), softmax_rows(s / 4 + m))
    b = -torch.arange(6.0, dtype=torch.float64)  # a finite bias (ALiBi-like) is NOT unchanged by the division
    assert not torch.allclose(softmax_rows((s + b) / 4), softmax_rows(s / 4 + b))


def _wavelength():
    for d, value in ((512, 60_611.5), (64, 47_117.0)):
        longest = 2 * math.pi / 10000 ** (-(d - 2) / d)
        close(longest, value, 0.5)
        assert longest < 0.97 * 2 * math.pi * 10000


def _rope_theta():
    d = 8
    roformer = [10000 ** (-2 * (i - 1) / d) for i in range(1, d // 2 + 1)]  # θ_i, i = 1..d/2
    text = [10000 ** (-2 * j / d) for j in range(1, d // 2 + 1)]  # 002 read literally
    assert roformer[0] == 1.0 and text[0] == 10000 ** (-2 / d) and text[-1] == 1e-4
    c = 10000 ** (-2 / d)
    assert all(abs(t - c * r) < 1e-15 for t, r in zip(text, roformer))  # every angle scaled by c


def _rope_identity():
    q, k = (torch.randn(16, generator=gen(s), dtype=torch.float64) for s in (7, 8))
    for m, n in ((0, 9), (40, 49), (1000, 1009)):
        close(rope(q, m) @ rope(k, n), rope(q, 0) @ rope(k, 9), 1e-9)


def _twelve():
    d = 768
    assert 3 * d * d + d * d + 4 * d * d + 4 * d * d == 12 * d * d and 4 * d == 2 * (2 * d)


def _gpt3():
    assert 12 * 12288**2 * 96 == 173_946_175_488
    assert gpt_params(50257, 2048, 12288, 96) == 174_604_259_328


def _gpt2():
    counts = [gpt_params(50257, 1024, d, n) for d, n in ((768, 12), (1024, 24), (1280, 36), (1600, 48))]
    assert counts == [124_439_808, 354_823_168, 774_030_080, 1_557_611_200]
    assert round(counts[-1] / 1e9, 1) == 1.6 and 1.5e9 < counts[-1] < 1.56e9


def _kv40():
    mha, gqa = kv_cache_bytes(80, 64, 128, 4096), kv_cache_bytes(80, 8, 128, 4096)
    assert (mha, gqa, mha // gqa) == (10_737_418_240, 1_342_177_280, 8)
    assert abs(40e9 - mha) > 0.2 * mha


def _online_softmax():
    q, k, v = (torch.randn(n, 8, generator=gen(s), dtype=torch.float64) for s, n in ((0, 5), (1, 12), (2, 12)))
    m = torch.full((5, 1), -math.inf, dtype=torch.float64)
    den, num = torch.zeros(5, 1, dtype=torch.float64), torch.zeros(5, 8, dtype=torch.float64)
    for j in range(0, 12, 4):  # three tiles of keys, running max and sum: the n×n matrix is never stored
        s = q @ k[j : j + 4].T / math.sqrt(8)
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        scale, p = torch.exp(m - m_new), torch.exp(s - m_new)
        den, num, m = den * scale + p.sum(-1, keepdim=True), num * scale + p @ v[j : j + 4], m_new
    assert torch.allclose(num / den, softmax_rows(q @ k.T / math.sqrt(8)) @ v, atol=1e-12)


def _gqa_sizes():
    size = {g: kv_cache_bytes(80, g, 128, 4096, 1) for g in (64, 8, 1)}
    assert size[64] == 2 * 80 * 64 * 128 * 4096 and size[64] // size[8] == 8 and size[64] // size[1] == 64


def _gqa_quadratic_unchanged():
    t, h = 256, 8
    mha, gqa, mqa = (gqa_score_flops(t, h, g) for g in (8, 2, 1))
    assert mha == gqa == mqa == 2 * h * t * t * 16  # every query head still scores all T² pairs
    assert kv_cache_bytes(1, 8, 16, t) == 4 * kv_cache_bytes(1, 2, 16, t)  # what shrinks: the cache, by h/g


def _kv_step():
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


# fmt: off
CLAIMS = [
    C("002-attn-var", "Attention as a Differentiable Dictionary", "q·k has mean 0 and variance d_k; dividing by "
      "√d_k normalises it to 1", CONFIRMED, "mean 0 ± 0.1, Var/d_k = 1 ± 0.03 (40,000 samples, d_k = 16)",
      "Monte Carlo", "01", nb_check="01 §5", check=_var),
    C("002-scale-throughout", "Attention as a Differentiable Dictionary", "dividing by √d_k normalises the "
      "variance to 1, 'keeping the softmax in a regime with useful gradients throughout training'", IMPRECISE,
      "the variance argument assumes independent, zero-mean, unit-variance components, which holds at "
      "initialisation, not for learned queries and keys: with k = q the scaled score has mean √d_k (8 for d_k = "
      "64)", "derivation; Monte Carlo; primary sources", "01", correct="the scaling keeps the logits at unit scale "
      "at initialisation; nothing keeps them there during training, and large models have been seen to diverge "
      "from growing attention logits (ViT-22B normalises queries and keys for that reason)", source="Vaswani et "
      "al. 2017, §3.2.1 footnote 4 (the independence assumption); Dehghani et al. 2023, 'Scaling Vision "
      "Transformers to 22 Billion Parameters', ICML, §2.1 (query/key normalisation)", check=_aligned_scores),
    C("002-mha-768", "Multi-Head Attention", "d_model = 768, h = 12 gives d_k = 64; W^O ∈ R^(h·d_v × d_model)",
      CONFIRMED, "768/12 = 64", "computed", "03", source=f"{PAPER}, §3.2.2", nb_check="03 §3"),
    C("002-mha-cost", "Multi-Head Attention", "d_k = d_model/h keeps the total cost comparable to single-head "
      "attention with full dimensionality", CONFIRMED, "the paper's own claim ('similar'); the products cost the "
      "same for every h, only the softmax grows from T² to h·T² entries (see 000-8.3.2-cost)", "primary source; "
      "FLOPs counted", "03", source=f"{PAPER}, §3.2.2", nb_check="03 §3", check=_flops_equal),
    C("002-heads", "Multi-Head Attention", "head types (positional, syntactic, semantic, delimiter); Voita et al.: "
      "many heads can be pruned with little loss", CONFIRMED, "38 of 48 encoder heads pruned for −0.15 BLEU",
      "primary sources", "03", source="Voita et al. 2019 abstract; Clark et al. 2019 abstract"),
    C("002-causal", "Self-Attention vs Cross-Attention", "causal attention = softmax((QKᵀ + M)/√d_k)V with M_ij = "
      "−∞ for j > i", CONFIRMED, "the same weights as softmax(QKᵀ/√d_k + M), since −∞/√d_k = −∞", "computed", "01",
      nb_check="01 appendix: '002's (QKᵀ + M)/√d_k'", check=_causal_same),
    C("002-equivariant", "Positional Encoding", "self-attention is permutation-equivariant", CONFIRMED,
      "MHA(Px) = P·MHA(x) to 1e-6 (the check of 000-8.4.1-equivariant)", "computed", "04", nb_check="04 §1",
      check=_equivariant),
    C("002-wavelength", "Sinusoidal Positional Encoding", "the wavelengths run from 2π (i = 0) to 10000·2π (i = "
      "d_model/2 − 1)", CONFIRMED, "the paper's own wording ('a geometric progression from 2π to 10000·2π'); "
      "exactly, the last is 2π·10000^((d−2)/d), one ratio short of the limit: 60,611 for d = 512, 47,117 for "
      "d = 64", "primary source; computed", "04", source=f"{PAPER}, §3.5", nb_check="04 §2", check=_wavelength),
    C("002-rotation", "Sinusoidal Positional Encoding", "PE(pos + k) is PE(pos) times a rotation that depends only "
      "on k", CONFIRMED, "exact to 1e-9 (the check of 000-8.4.2-rotation)", "computed", "04", nb_check="04 §4",
      check=_rotation),
    C("002-learned", "Learned Positional Embeddings", "BERT and GPT use learned position embeddings with a maximum "
      "length L_max", CONFIRMED, "both learn a table of positions", "primary sources", "04",
      source="Devlin et al. 2019; Radford et al. 2018"),
    C("002-rope-theta", "Rotary Position Embeddings", "θ_j = 10000^(−2j/d) for the pairs j = 1 … d/2", IMPRECISE,
      "with j counted from 1 every angle is scaled by 10000^(−2/d)", "computed", "05", correct="RoFormer: θ_i = "
      "10000^(−2(i−1)/d), i = 1 … d/2 (= 000's 10000^(−2i/d), i from 0); 002's set is still a valid rotary "
      "encoding (standard RoPE at positions c·m) but not the one models use", source="Su et al. 2021, Eq. 15",
      nb_check="05 (the texts' RoPE formulas)", check=_rope_theta),
    C("002-rope-identity", "Rotary Position Embeddings", "f(q, m)ᵀf(k, n) = g(q, k, m − n)", CONFIRMED,
      "equal scores for equal offsets up to position 1009", "computed", "05", nb_check="05 §2", check=_rope_identity),
    C("002-rope-models", "Rotary Position Embeddings", "RoPE is the standard for LLaMA, Mistral, Qwen", CONFIRMED,
      "all three use rotary embeddings", "primary sources", "05", source="LLaMA §2.2; Jiang et al. 2023 (Mistral "
      "7B) §2; Qwen technical report §2"),
    C("002-alibi", "ALiBi", "ALiBi adds −λ·|i − j| with head-specific geometric slopes, no positional encoding and "
      "zero parameters, and extrapolates strongly", CONFIRMED, "trained on 1024, it matches at 2048 a sinusoidal "
      "model trained on 2048", "primary source", "04", source="Press et al. 2022, abstract and §3", nb_check="04 §6"),
    C("002-block", "The Transformer Block", "pre-norm block h' = x + MHA(LN(x)), h = h' + FFN(LN(h')), FFN with "
      "GELU, d_ff = 4d", CONFIRMED, "the GPT-2/3 block", "primary sources", "06", source="Radford et al. 2019 §2.3",
      nb_check="06 §4"),
    C("002-prenorm", "Pre-Norm vs Post-Norm", "post-norm needs careful warm-up; pre-norm is standard in GPT-3, "
      "PaLM, LLaMA", CONFIRMED, "all three normalise before each sublayer", "primary sources", "06",
      source="Xiong et al. 2020; Brown et al. 2020 §2.1; PaLM §2; LLaMA §2.2"),
    C("002-palm-rmsnorm", "Pre-Norm vs Post-Norm", "some architectures (PaLM) use RMSNorm instead of LayerNorm",
      IMPRECISE, "the PaLM paper describes LayerNorm without bias terms", "primary source", "06",
      correct="PaLM removes the biases from its dense layers and layer norms; RMSNorm is what T5, Gopher and LLaMA "
      "use", source="Chowdhery et al. 2022 (PaLM), §2 'No Biases'; LLaMA §2.2"),
    C("002-12d2", "Parameter Count per Block", "3d² + d² + 4d² + 4d² + 4d ≈ 12d² per block", CONFIRMED,
      "12d² weights (biases, 9d + d_ff, are left out)", "computed", "07", nb_check="07 §5", check=_twelve),
    C("002-12d2-gpt3", "Parameter Count per Block", "GPT-3: 12 × 12288² × 96 ≈ 174B, consistent with 175B "
      "including embeddings", CONFIRMED, "173,946,175,488; with embeddings, positions, biases and norms "
      "174,604,259,328", "computed", "07", nb_check="07 §3, §5", check=_gpt3),
    C("002-encdec", "Encoder-Decoder Architecture", "T5 casts all tasks as text-to-text; BART combines a "
      "bidirectional encoder with an autoregressive decoder for denoising", CONFIRMED, "as the papers describe",
      "primary sources", "08", source="Raffel et al. 2020; Lewis et al. 2020"),
    C("002-gpt2", "Decoder-Only; Key Papers", "GPT-2 scaled the decoder-only model to 1.5B parameters and showed "
      "zero-shot transfer", CONFIRMED, "1542M in the GPT-2 paper; 1,557,611,200 in the released checkpoint",
      "primary source; computed", "07", source="Radford et al. 2019, Table 2", nb_check="07 §3",
      check=_gpt2),
    C("002-gpt3", "Decoder-Only; Key Papers", "GPT-3 (175B) established few-shot in-context learning", CONFIRMED,
      "175B", "primary source", "07", source="Brown et al. 2020, abstract"),
    C("002-bert", "Encoder-Only Architecture", "BERT masks 15% of input tokens; NSP was later shown unnecessary by "
      "RoBERTa", CONFIRMED, "RoBERTa matches or improves without NSP", "primary sources", "08",
      source="Devlin et al. 2019 §3.1; Liu et al. 2019 (RoBERTa) §4.2"),
    C("002-rnn", "Why Transformers Replaced RNNs", "RNNs need O(n) sequential operations, self-attention O(1) "
      "(with O(n²) work); path length O(n) vs O(1)", CONFIRMED, "Table 1 of the paper", "primary source", "07",
      source=f"{PAPER}, Table 1"),
    C("002-quadratic", "Why Transformers Replaced RNNs", "computing the attention matrix needs O(n²d) operations "
      "and O(n²) memory", CONFIRMED, "n² dot products of length d; n² weights", "derivation", "07",
      source=f"{PAPER}, Table 1", nb_check="07 §6"),
    C("002-sparse", "Why Transformers Replaced RNNs (table)", "sparse attention (Beltagy et al., 2020): O(n√n)",
      WRONG, "Beltagy et al. 2020 is Longformer, which is linear in n", "primary sources", "07",
      correct="Longformer's window + global attention is O(n) (O(n·w) for window w); O(n√n) is the Sparse "
      "Transformer of Child et al. 2019", source="Beltagy et al. 2020 (Longformer), abstract; Child et al. 2019, "
      "abstract"),
    C("002-linear", "Why Transformers Replaced RNNs (table)", "linear attention (Katharopoulos et al., 2020): O(n)",
      CONFIRMED, "kernel feature maps make attention linear in n", "primary source", "07",
      source="Katharopoulos et al. 2020, 'Transformers are RNNs', abstract"),
    C("002-flash-asymptotic", "Why Transformers Replaced RNNs", "FlashAttention does not reduce the asymptotic "
      "time complexity but eliminates the memory bottleneck", CONFIRMED, "O(N²d) FLOPs, O(N) extra memory; the "
      "tiled computation equals softmax(QKᵀ/√d)V without storing the N×N matrix", "primary source; computed",
      "10", source=f"{FLASH}, §3.2, Theorem 1", check=_online_softmax),
    C("002-flash", "Flash Attention", "FlashAttention: O(n²) time, O(n) memory, exact; tiling, online softmax, "
      "recomputation in the backward pass", CONFIRMED, "a tiled online softmax reproduces softmax(QKᵀ/√d)V to "
      "1e-12 without storing the matrix", "primary source; computed", "10", source=f"{FLASH}, §3",
      check=_online_softmax),
    C("002-flash-speed", "Flash Attention", "FlashAttention gives a 2–4× wall-clock speed-up over standard PyTorch "
      "attention", CONFIRMED, "the authors' own figure for the attention computation at sequence lengths 128 to 4K "
      "(up to 4× at 512 and 1K with dropout and masking); end to end the paper reports 15% (BERT-large), 3× (GPT-2) "
      "and 2.4× (long-range arena)", "primary sources", "10", source=f"{FLASH_README}; {FLASH}, abstract"),
    C("002-kv-recompute", "KV Cache", "without caching, generation is O(n²) in total", IMPRECISE,
      "Σ_t t = O(n²) token evaluations", "derivation", "10", correct="counted in token evaluations; in FLOPs, "
      "re-running the prefix costs O(n²d²) for the projections and O(n³d) for attention, against O(nd² + n²d) with "
      "a cache (see 001-19.14.1-recompute)", check=_recompute_flops),
    C("002-kv-step", "KV Cache", "with the cache only the new token's query, key and value are computed; they "
      "attend to the cached keys and values", CONFIRMED, "the step's output equals the last row of full causal "
      "attention to 1e-12, with only the new token projected", "computed", "10", check=_kv_step),
    C("002-kv-projection", "KV Cache", "this reduces per-step attention from O(n·d) to O(d) for the projection (the "
      "attention itself is O(n·d_k) for the dot products)", IMPRECISE, "the factor n saved is right; the costs "
      "are a factor d too small", "FLOPs counted", "10", correct="the projections of one step go from O(n·d²) (the "
      "whole prefix re-projected) to O(d²) (the new token only); each head's dot products then cost O(n·d_k), "
      "O(n·d) over all heads", check=_kv_step),
    C("002-kv-formula", "KV Cache", "the cache for n tokens requires 2·L·h·d_k·n parameters", IMPRECISE,
      "the formula counts cached values (activations), per sequence", "derivation", "03",
      correct="2·L·h·d_k·n numbers per sequence; bytes = that × batch × bytes per number; they are not parameters",
      source="notebook 03 §5 (shapes of the cached tensors)", nb_check="03 §5"),
    C("002-kv-40gb", "KV Cache", "LLaMA-2 70B (L = 80, h = 64, d_k = 128) at n = 4096 in FP16 needs about 40 GB",
      WRONG, "2·80·64·128·4096 × 2 bytes = 10,737,418,240 bytes", "computed", "03", correct="10.7 GB (10 GiB) per "
      "sequence with 64 K/V heads; 1.34 GB with the model's real 8 K/V heads (GQA). 40 GB is about 4 sequences "
      "under MHA", nb_check="03 §5 (also 07 §7, 08, 10: one refutation, cite this id)", check=_kv40),
    C("002-gqa", "Grouped Query Attention", "cache sizes 2Lhd_kn (MHA), 2Ld_kn (MQA), 2Lgd_kn (GQA); LLaMA-2 70B "
      "uses 8 K/V heads for 64 query heads, 8× less cache; Mistral 7B uses GQA", CONFIRMED, "64/8 = 8; Mistral 7B: "
      "32 query, 8 K/V heads", "computed; primary sources", "03", source="Touvron et al. 2023b (Llama 2) §2.2; "
      "Jiang et al. 2023 (Mistral 7B) Table 1", nb_check="03 §5", check=_gqa_sizes),
    C("002-gqa-adopted", "Grouped Query Attention; Key Papers", "GQA (Ainslie et al., 2023) was adopted by LLaMA 2 "
      "and Mistral", IMPRECISE, "LLaMA 2 uses GQA only in its 34B and 70B models (7B and 13B use multi-head "
      "attention); Mistral 7B uses 8 K/V heads", "primary sources", "03", correct="adopted by the two largest "
      "LLaMA 2 models and by Mistral 7B; both trained with GQA from scratch, whereas Ainslie et al. build GQA by "
      "uptraining multi-head checkpoints (5% of the original pre-training compute)", source="Touvron et al. 2023b "
      "(Llama 2) §2.2 and Table 1; Jiang et al. 2023 (Mistral 7B) Table 1; Ainslie et al. 2023 (arXiv:2305.13245), "
      "abstract"),
    C("002-papers", "Key Papers", "the papers' years: Transformer 2017, BERT and GPT 2018, GPT-2 2019, GPT-3 2020, "
      "RoFormer 2021, FlashAttention 2022, GQA 2023", CONFIRMED, "as listed", "primary sources", "00",
      source="arXiv 1706.03762, 1810.04805, 2104.09864, 2205.14135, 2305.13245; the OpenAI reports"),
]
# fmt: on
