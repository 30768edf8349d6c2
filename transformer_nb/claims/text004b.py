"""004 (blog post), §8–§17: normalisation, residuals, dropout, the encoder and decoder layers, the variants,
generation and the KV cache, the forward-pass walkthrough, what Transformers learn, modern improvements."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from ._base import CONFIRMED, IMPRECISE, NOT_CHECKABLE, WRONG, factory
from ._checks import gen, kv_cache_bytes, tiny_mha
from .text000b import _residual_grad
from .text001b import _recompute_flops
from .text002 import _kv_step as _kv_needs_new_kv

C = factory("004")


def _batchnorm_one():
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


def _layernorm_per_example():
    ln, x = nn.LayerNorm(8), torch.randn(5, 8, generator=gen())
    assert torch.allclose(ln(x)[2:3], ln(x[2:3]), atol=1e-6)


def _pre_post_differ():
    torch.manual_seed(0)
    ln, f, x = nn.LayerNorm(8), nn.Linear(8, 8), torch.randn(3, 8, generator=gen())
    with torch.no_grad():
        assert (ln(x + f(x)) - (x + f(ln(x)))).abs().max() > 1e-2


def _padding_leaks():
    mha, x = tiny_mha(), torch.randn(1, 5, 16, generator=gen())
    y = x.clone()
    y[0, 3:] = torch.randn(2, 16, generator=gen(1))  # change the two padding positions only
    keep = torch.tensor([[False, False, False, True, True]])  # key_padding_mask: True = padding
    with torch.no_grad():
        assert (mha(x, x, x)[0][0, :3] - mha(y, y, y)[0][0, :3]).abs().max() > 1e-3
        assert torch.allclose(
            mha(x, x, x, key_padding_mask=keep)[0][0, :3], mha(y, y, y, key_padding_mask=keep)[0][0, :3], atol=1e-6
        )


def _kv5():
    values = 2 * 80 * 64 * 128 * 4096
    assert values == 5_368_709_120  # '5 GB' is this count of numbers, read as bytes
    assert kv_cache_bytes(80, 64, 128, 4096) == 10_737_418_240 and kv_cache_bytes(80, 8, 128, 4096) == 1_342_177_280


def _temperature():
    z = torch.tensor([2.0, 1.0, 0.5, -1.0], dtype=torch.float64)
    ent = [-(p * p.log()).sum() for p in (torch.softmax(z / t, -1) for t in (0.5, 1.0, 2.0))]
    assert ent[0] < ent[1] < ent[2]


def _walkthrough():
    torch.manual_seed(0)
    cross = nn.MultiheadAttention(768, 12, batch_first=True).eval()
    with torch.no_grad():
        out, w = cross(
            torch.randn(1, 1, 768), torch.randn(1, 3, 768), torch.randn(1, 3, 768), average_attn_weights=False
        )
    assert out.shape == (1, 1, 768) and w.shape == (1, 12, 1, 3)
    assert nn.Embedding(1000, 768)(torch.tensor([[2, 47, 193]])).shape == (1, 3, 768)


def _decoder_sublayers():
    names = lambda layer: sorted(n for n, m in layer.named_children() if isinstance(m, nn.MultiheadAttention))
    assert names(nn.TransformerEncoderLayer(8, 2, batch_first=True)) == ["self_attn"]
    assert names(nn.TransformerDecoderLayer(8, 2, batch_first=True)) == ["multihead_attn", "self_attn"]


def _swiglu():
    x = torch.randn(4, 8, generator=gen())
    w1, w2 = torch.randn(8, 16, generator=gen(1)), torch.randn(8, 16, generator=gen(2))
    assert torch.allclose(F.silu(x @ w1) * (x @ w2), (x @ w1) * torch.sigmoid(x @ w1) * (x @ w2), atol=1e-6)


def _ffn_keys_values():
    torch.manual_seed(0)
    up, down = nn.Linear(8, 32, bias=False).double(), nn.Linear(32, 8, bias=False).double()
    x = torch.randn(8, generator=gen(), dtype=torch.float64)
    memories = sum(F.relu(up.weight[i] @ x) * down.weight[:, i] for i in range(32))  # key row i, value column i
    assert torch.allclose(down(F.relu(up(x))), memories, atol=1e-12)


# fmt: off
CLAIMS = [
    C("004-8.2-batchnorm", "§8.2", "with batch size 1, the batch mean and variance are undefined (or estimated "
      "from a single sample); layer normalisation works per example, independent of the batch", IMPRECISE,
      "on a Transformer's (B, C, T) activations nn.BatchNorm1d at B = 1 runs: each channel's statistics come from "
      "the T positions of the one sequence; only B·T = 1 leaves them undefined", "computed", "06",
      correct="at batch size 1 the statistics are estimated from one sequence's positions: defined, but noisy, and "
      "they mix the positions, so a token's output depends on later tokens (a causal model would see the future); "
      "LayerNorm is per token and has neither problem", source="PyTorch docs, torch.nn.BatchNorm1d (input (N, C, L), "
      "statistics over N and L)", check=_batchnorm_one),
    C("004-8.2-layernorm", "§8.2", "LayerNorm's statistics are computed per example over the features", CONFIRMED,
      "equal alone and in a batch", "computed", "06", check=_layernorm_per_example),
    C("004-8.3-prepost", "§8.3", "Post-LN needs careful warm-up and can diverge; Pre-LN trains without warm-up; "
      "GPT-2 and virtually every modern large model use Pre-LN", CONFIRMED, "Xiong et al.; GPT-2 §2.3",
      "primary sources", "06", source="Xiong et al. 2020; Radford et al. 2019 §2.3", nb_check="06 §6"),
    C("004-8.3-ceiling", "§8.3 table", "Post-LN reaches a marginally better final performance with enough tuning",
      NOT_CHECKABLE, "", "no source", "06", why="no study is cited, and no notebook here trains such a comparison"),
    C("004-9.2-grad", "§9.2", "∂L/∂x = ∂L/∂y · (1 + ∂F/∂x): the loss signal reaches x through the identity path",
      CONFIRMED, "gradient 1 through a dead branch", "autograd", "06", check=_residual_grad),
    C("004-9.2-loss-surface", "§9.2", "He et al. (2016) visualised the loss surfaces of deep networks with and "
      "without skip connections (ResNet-56)", WRONG, "the figure is from Li et al. 2018", "primary source", "06",
      correct="Li, Xu, Taylor, Studer & Goldstein 2018, 'Visualizing the Loss Landscape of Neural Nets' (NeurIPS), "
      "Fig. 1", source="Li et al. 2018, Fig. 1"),
    C("004-9.2-depth", "§9.2", "ResNets can be trained to hundreds of layers while the same architecture without "
      "skip connections fails beyond a dozen", IMPRECISE, "He et al. trained plain nets of 18–34 (ImageNet) and "
      "20–56 layers (CIFAR-10)", "primary source", "06", correct="deeper plain nets train to a higher error "
      "(degradation: plain-34 is worse than plain-18), they do not fail outright; ResNets reached 152 (ImageNet) "
      "and 1202 layers (CIFAR-10)", source="He et al. 2016, §4.1–4.2"),
    C("004-10-dropout", "§10", "dropout is applied after the embeddings (token + position) and after each "
      "attention and FFN sublayer", CONFIRMED, "the paper's two places (sublayer outputs, embedding sums)",
      "primary source", "06", source="Vaswani et al. 2017, §5.4"),
    C("004-10-llama", "§10 box", "LLaMA, Mistral and other recent large models use no dropout", NOT_CHECKABLE, "",
      "the papers do not say", "06", why="the LLaMA and Mistral papers do not state their training dropout; "
      "released inference code says nothing about training"),
    C("004-11-shapes", "§11", "an encoder layer maps B × T × embed_dim to B × T × embed_dim", CONFIRMED,
      "shape preserved", "computed", "06", nb_check="06 §5; 08 §3", check=_walkthrough),
    C("004-12-prepost", "§11–§12", "the diagrams normalise before each sublayer (Pre-LN) while the EncoderLayer "
      "and DecoderLayer code normalises after (Post-LN)", IMPRECISE, "two different functions with the same weights",
      "computed", "08", correct="§11 says the code is Post-LN; §12's DecoderLayer is Post-LN too, under a Pre-LN "
      "diagram: the shapes agree, the functions differ", nb_check="08 §6", check=_pre_post_differ),
    C("004-12-padding", "§12–§13 code", "the encoder-decoder code (Seq2SeqTransformer) serves translation and "
      "summarisation", IMPRECISE, "it takes no padding masks, so real outputs change with the padding", "computed",
      "08", correct="correct only for unpadded batches; the encoder and cross-attention need key-padding masks",
      nb_check="08 §5", check=_padding_leaks),
    C("004-13-variants", "§13", "encoder-only bidirectional, decoder-only causal, encoder–decoder with "
      "cross-attention; BERT/RoBERTa, GPT/LLaMA/Mistral, T5/BART/mT5", CONFIRMED, "as the papers describe",
      "primary sources", "08", source="Devlin et al. 2019; Radford et al. 2018; Raffel et al. 2020",
      nb_check="08 §2"),
    C("004-13.1-mlm", "§13.1", "BERT masks 15% of tokens and predicts them; [CLS] at position 0 feeds the classifier",
      CONFIRMED, "15% selected (80% [MASK], 10% random, 10% kept); [CLS] first", "primary source", "08",
      source="Devlin et al. 2019, §3"),
    C("004-13.2-sampling", "§13.2", "temperature τ < 1 sharpens the distribution, τ > 1 flattens it", CONFIRMED,
      "the entropy grows with τ", "computed", "10", nb_check="10 §7", check=_temperature),
    C("004-13.2-kvcost", "§13.2", "with a KV cache each step costs O(T·d) instead of O(T²·d)", CONFIRMED,
      "one query against T cached keys", "derivation", "10", source="notebook 10 §8"),
    C("004-13.2-kv-only-q", "§13.2", "with a KV cache 'only the new token's Q needs to be computed; it attends to "
      "the cached K/V from all prior positions'", WRONG, "the new token's K and V must be computed too and appended: "
      "it attends to itself as well", "computed", "10", correct="each step computes the new token's q, k and v (and "
      "its whole forward pass); only the earlier positions' keys and values come from the cache. Without the new "
      "k and v the step's output differs from full attention", check=_kv_needs_new_kv),
    C("004-13.2-recompute", "§13.2", "re-computing attention over the full growing sequence at every step would "
      "scale as O(T²) for a T-token generation", IMPRECISE, "T(T+1)/2 token evaluations; in FLOPs O(T²d² + T³d)",
      "derivation; FLOPs counted", "10", correct="O(T²) counts token evaluations; the attention of those "
      "re-runs costs O(T³d) (see 001-19.14.1-recompute)", check=_recompute_flops),
    C("004-13.2-kv5gb", "§13.2", "the cache needs 2·L·H·d_k·T values; LLaMA-3 70B at 4K in fp16: roughly 5 GB", WRONG,
      "by its own formula with H = 64: 5.37·10⁹ values × 2 bytes = 10.7 GB", "computed", "03",
      correct="10.7 GB with 64 K/V heads; 1.34 GB with the model's 8 K/V heads (GQA); '5 GB' is the number of "
      "values read as bytes", nb_check="08 §8", check=_kv5),
    C("004-13.2-gqa-factor", "§13.2", "GQA shrinks the cache by num_heads/num_kv_heads, often 8×", CONFIRMED,
      "64/8 = 8 for LLaMA-2/3 70B", "computed", "03", check=_kv5),
    C("004-13.2-every", "§13.2", "every major modern model (LLaMA 2/3, Mistral, Gemma) uses GQA", WRONG,
      "not every one", "primary sources", "03", correct="Llama 2 7B/13B and Gemma 7B use multi-head attention, "
      "Gemma 2B multi-query; GQA is in Llama 2 34B/70B, all of Llama 3, Mistral 7B and Gemma 2",
      source="Touvron et al. 2023b §2.2; Gemma Team 2024 (arXiv:2403.08295) §2; Gemma 2 report §2"),
    C("004-14-walkthrough", "§14", "1 × 3 ids → 1 × 3 × 768 embeddings; cross-attention weights 1 × 1 × 3; output "
      "1 × 1 × 768 (arrows lost in extraction, e.g. '1 × 31 × 3 × 768')", CONFIRMED, "(1, 3, 768); cross-attention "
      "weights (1, 12, 1, 3): 1 × 3 per head", "computed", "08", nb_check="06 §5; 08 §3", check=_walkthrough),
    C("004-15.1-downstream", "§15.1", "the head specialisation Clark et al. found 'arises purely from the training "
      "signal on downstream tasks'", WRONG, "Clark et al. analysed pre-trained BERT-base, not a fine-tuned model",
      "primary source", "03", correct="it arises from self-supervised pre-training (masked language modelling and "
      "next-sentence prediction on unlabeled text); no downstream task was involved: 'despite not being explicitly "
      "trained on these tasks'", source="Clark et al. 2019, 'What Does BERT Look At?', abstract ('learn from "
      "unlabeled data') and Fig. 5 caption"),
    C("004-15.1-governor", "§15.1", "syntactic heads attend from a token to its syntactic governor (the word it "
      "depends on)", CONFIRMED, "for every relation Clark et al. report except pobj, the dependent attends to its "
      "head word (e.g. head 8-10: direct objects attend to their verbs)", "primary source", "03",
      source="Clark et al. 2019, §4 and Fig. 5"),
    C("004-15.2-keys", "§15.2", "Geva et al.: the first linear layer's weight rows act as keys, the second linear "
      "layer's corresponding columns as values", CONFIRMED, "FFN(x) = Σ_i f(k_i·x)·v_i with k_i the i-th row of "
      "W₁ (nn.Linear(d, d_ff).weight) and v_i the i-th column of W₂ (nn.Linear(d_ff, d).weight), to 1e-12",
      "computed; primary source", "06", source="Geva et al. 2021, EMNLP, §2 (FF(x) = f(x·Kᵀ)·V)",
      check=_ffn_keys_values),
    C("004-15.3-layers", "§15.3", "probing finds early layers (1–4) surface features, middle layers (5–12) syntax, "
      "later layers semantics", NOT_CHECKABLE, "", "no source, no model size given", "06", why="no study is cited "
      "and the layer ranges fit no named model"),
    C("004-16-table", "§16", "Pre-LN (GPT-2, LLaMA, Mistral), RoPE (LLaMA, Mistral, GPT-NeoX, Qwen), RMSNorm "
      "(LLaMA, Mistral, Gemma)", CONFIRMED, "as those models document", "primary sources", "06",
      source="LLaMA §2.2; Mistral 7B §2; Gemma report §2; GPT-NeoX-20B §2.1"),
    C("004-16-swiglu", "§16", "SwiGLU(x) = Swish(xW₁) ⊙ xW₂, used in LLaMA, PaLM and Gemma", WRONG,
      "Gemma uses GeGLU", "computed; primary sources", "06", correct="LLaMA and PaLM use SwiGLU; Gemma uses GeGLU "
      "(a GELU gate). The formula is right", source="Shazeer 2020 Eq. 6; Gemma Team 2024 §2", check=_swiglu),
    C("004-16-gqa", "§16", "GQA is used in LLaMA 2/3 and Mistral", IMPRECISE, "LLaMA 2 only in 34B/70B",
      "primary sources", "03", correct="see 003-gqa", source="Touvron et al. 2023b §2.2"),
    C("004-16-rmsnorm", "§16", "RMSNorm is ~10% faster with equivalent quality", IMPRECISE, "the RMSNorm paper "
      "reports 7%–64% less running time, with comparable quality", "primary source", "06",
      correct="7%–64% faster depending on the model (largest for RNNs)", source="Zhang & Sennrich 2019, abstract"),
    C("004-17-only-mask", "§17 (takeaway 6)", "the only fundamental difference between an encoder and a decoder is "
      "the causal mask", IMPRECISE, "true of decoder-only blocks; the encoder–decoder's decoder layer also has "
      "cross-attention", "computed", "08", correct="a decoder-only block is an encoder block with a causal mask; "
      "the encoder–decoder's decoder adds a third sublayer, cross-attention (as 004 §12 itself says)",
      nb_check="02 §5 (nn.TransformerDecoderLayer has 'multihead_attn')", check=_decoder_sublayers),
    C("004-17-stable", "§16–§17", "the same structure is in GPT-4, LLaMA 3 and Gemini", NOT_CHECKABLE, "",
      "undisclosed architectures", "08", why="GPT-4's and Gemini's architectures are not published"),
]
# fmt: on
