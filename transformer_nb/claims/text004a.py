"""004 ('The Transformer Architecture: A Deep Dive', blog post), §1–§7: RNNs, embeddings and positions,
scaled dot-product attention and its worked example, the memory table, multi-head attention, the FFN."""

import math

import torch

from ._base import CONFIRMED, FLASH_README, IMPRECISE, NOT_CHECKABLE, WRONG, factory
from ._checks import close, gen, softmax_rows
from .text000a import _mask_zero
from .text000b import _not_linear, _table_params
from .text002 import _online_softmax, _rope_identity

C = factory("004")
Q3 = torch.tensor([[1.0, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]], dtype=torch.float64)
K3 = torch.tensor([[1.0, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0]], dtype=torch.float64)
TEXT_SCORES = torch.tensor([[1.0, 1, 2], [1, 1, 0], [1, 2, 2]], dtype=torch.float64)
TEXT_WEIGHTS = torch.tensor([[0.27, 0.27, 0.46], [0.33, 0.33, 0.33], [0.21, 0.39, 0.39]], dtype=torch.float64)


def _jacobian_product():
    w = torch.randn(4, 4, generator=gen(), dtype=torch.float64) * 0.5
    run = lambda h0: w @ (w @ (w @ h0))  # h_t = W h_(t-1), three steps
    jac = torch.autograd.functional.jacobian(run, torch.zeros(4, dtype=torch.float64))
    assert torch.allclose(jac, torch.linalg.matrix_power(w, 3), atol=1e-12)


def _scores():
    s = Q3 @ K3.T
    assert torch.equal(s, torch.tensor([[1.0, 1, 1], [1, 1, 1], [1, 1, 2]], dtype=torch.float64))
    assert int((s != TEXT_SCORES).sum()) == 3


def _weights():
    w, e = softmax_rows(Q3 @ K3.T / 2), math.exp(0.5)
    ref = torch.tensor([[1 / 3] * 3, [1 / 3] * 3, [1 / (2 + e), 1 / (2 + e), e / (2 + e)]], dtype=torch.float64)
    assert torch.allclose(w, ref, atol=1e-12) and (TEXT_WEIGHTS - w).abs().max() > 0.05
    own = softmax_rows(TEXT_SCORES / 2)  # even the softmax of its own printed scores differs
    assert torch.allclose(
        own, torch.tensor([[0.27, 0.27, 0.45], [0.38, 0.38, 0.23], [0.23, 0.38, 0.38]], dtype=torch.float64), atol=5e-3
    )


def _std():
    assert math.sqrt(64) == 8
    close(math.sqrt(768), 27.71, 5e-3)


def _mask_table():
    m = torch.ones(4, 4).tril().bool()
    assert m[0].tolist() == [True, False, False, False] and m[2].tolist() == [True, True, True, False]


def _weights_vs_scores():
    s = torch.randn(6, 6, generator=gen(), dtype=torch.float64)
    after = softmax_rows(s) * torch.ones(6, 6, dtype=torch.float64).tril()  # masking the weights instead
    assert not torch.allclose(after.sum(-1), torch.ones(6, dtype=torch.float64))


def _memory_rows():
    assert 512**2 == 262_144 and 512**2 * 2 / 2**20 == 0.5
    assert 4096**2 == 16_777_216 and 4096**2 * 2 / 2**20 == 32


def _row_128k():
    assert 128_000**2 == 16_384_000_000  # '16.4B'
    close(128_000**2 * 2 / 2**30, 30.52, 5e-3)  # '~31 GB' in GiB, the binary units of the rows above
    assert 131_072**2 == 17_179_869_184 and 131_072**2 * 2 / 2**30 == 32  # the other reading of '128K'


def _heads():
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


# fmt: off
CLAIMS = [
    C("004-1.3-jacobian", "§1.3", "∂L/∂h₀ = ∂L/∂h_T · Π ∂h_t/∂h_(t−1): a product of one Jacobian per step", CONFIRMED,
      "autograd's Jacobian of three linear steps equals W³", "autograd", "10", check=_jacobian_product),
    C("004-2-vit", "§2", "images: treat patches as tokens and 'inject 2D positional encodings (ViT)'", WRONG,
      "ViT uses learned 1D position embeddings", "primary source", "04", correct="ViT adds standard learnable 1D "
      "position embeddings to its sequence of patches; its authors tried 2D-aware ones and saw no significant "
      "gain", source="Dosovitskiy et al. 2021, 'An Image is Worth 16x16 Words', ICLR, §3.1 and Appendix D.4"),
    C("004-2-alphafold", "§2", "proteins: treat amino acids as tokens, 'use pairwise distances as positional "
      "information (AlphaFold2)'; positional encoding is 'the only thing that changes across domains'",
      IMPRECISE, "AlphaFold2's positional input is the relative residue index, not distances", "primary source",
      "04", correct="AlphaFold2 encodes position as the residue-index offset (clipped to ±32) added to its pair "
      "representation; inter-residue distances are what it predicts (template structures add distance features as "
      "one input among others); its Evoformer also changes the block itself (a pair representation with triangle "
      "updates), so more than the positional encoding changes", source="Jumper et al. 2021, Nature, Supplementary "
      "Information, Algorithm 4 ('relpos', relative position encoding) and the Evoformer's description"),
    C("004-4.2-learned", "§4.2", "BERT and GPT use learned absolute positions; positions past max_seq_len have no "
      "encoding", CONFIRMED, "both learn a table; nn.Embedding has no row for position T_max", "primary sources; "
      "computed", "04", source="Devlin et al. 2019; Radford et al. 2018", check=_table_params),
    C("004-4.2-sinusoidal", "§4.2", "sinusoidal encodings can generalise to sequences longer than those seen in "
      "training", IMPRECISE, "computable for any length, but models degrade past the training length",
      "primary source", "04", correct="see 003-sinusoidal: sinusoidal models' perplexity rises soon after the "
      "training length (Press et al. 2022, Fig. 1)", source="Press et al. 2022, Fig. 1"),
    C("004-4.2-rope", "§4.2", "RoPE (LLaMA, Mistral, GPT-NeoX) rotates Q and K by angles proportional to the "
      "position, so Q_m·K_n depends on m − n", CONFIRMED, "equal scores for equal offsets", "computed", "05",
      source="Su et al. 2021", check=_rope_identity),
    C("004-4.2-rope-length", "§4.2", "RoPE generalises better to longer sequences than the model was trained on",
      IMPRECISE, "better than learned positions, but not without modification", "primary source", "05",
      correct="see 000-8.4.4-extrapolation", source="Press et al. 2022, Fig. 1"),
    C("004-5.2-scores", "§5.2", "for its Q and K, QKᵀ = [[1, 1, 2], [1, 1, 0], [1, 2, 2]]", WRONG,
      "three entries differ", "computed", "01", correct="QKᵀ = [[1, 1, 1], [1, 1, 1], [1, 1, 2]] (e.g. q₁·k₃ = "
      "[1,0,1,0]·[1,1,0,0] = 1)", nb_check="01 §2", check=_scores),
    C("004-5.2-weights", "§5.2", "weights [[0.27, 0.27, 0.46], [0.33, 0.33, 0.33], [0.21, 0.39, 0.39]]: 'the' "
      "attends most to 'sat', 'sat' most to 'cat' and itself", WRONG, "the printed weights match neither its Q, K "
      "nor its own scores", "computed", "01", correct="[[1/3, 1/3, 1/3], [1/3, 1/3, 1/3], [0.27, 0.27, 0.45]]: "
      "'the' and 'cat' attend uniformly, 'sat' most to itself (0.45); the softmax of its printed scores would be "
      "[[0.27, 0.27, 0.45], [0.38, 0.38, 0.23], [0.23, 0.38, 0.38]]", nb_check="01 §2", check=_weights),
    C("004-5.3-std64", "§5.3", "head_dim 64: the raw dot products have standard deviation 8", CONFIRMED, "√64 = 8",
      "computed", "01", nb_check="01 appendix", check=_std),
    C("004-5.3-std768", "§5.3", "head_dim 768: standard deviation 27", IMPRECISE, "√768 = 27.71", "computed", "01",
      correct="≈ 27.7 (28 to the nearest integer)", nb_check="01 appendix", check=_std),
    C("004-5.5-table", "§5.5", "token 1 attends only to itself; token 3 to tokens 1–3, not 4", CONFIRMED,
      "the rows of the 4×4 causal mask", "computed", "02", nb_check="02 §1", check=_mask_table),
    C("004-5.5-weights", "§5.5", "the upper triangle of the T×T attention weight matrix is set to −∞ before the "
      "softmax", IMPRECISE, "it is the scores, strictly above the diagonal", "computed", "02",
      correct="−∞ goes into the scores (pre-softmax) strictly above the diagonal; masking the weights after the "
      "softmax leaves rows that no longer sum to 1", nb_check="02 §5", check=_weights_vs_scores),
    C("004-5.5-zero", "§5.5", "after the softmax, −∞ becomes exactly 0", CONFIRMED, "exactly 0.0", "computed", "02",
      nb_check="02 §1", check=_mask_zero),
    C("004-5.5-copy", "§5.5", "without the mask the model would just copy the future token", CONFIRMED,
      "the unmasked model's attention sits at offset +1", "measured in a notebook", "02",
      source="notebook 02 §4c (stored run)", nb_check="02 §4"),
    C("004-5.7-rows", "§5.7", "fp16, 1 head: 512 tokens → 262K entries, ~0.5 MB; 4,096 → 16.8M, ~32 MB", CONFIRMED,
      "0.5 MiB and 32 MiB exactly (binary megabytes)", "computed", "01", nb_check="01 appendix; 07 §7",
      check=_memory_rows),
    C("004-5.7-128k", "§5.7", "128K tokens → 128K × 128K = 16.4B entries, ~31 GB", CONFIRMED, "128,000² = 16.4B "
      "entries, 30.5 GiB: the same binary units as the two rows above", "computed", "01",
      nb_check="01 appendix; 07 §7", check=_row_128k),
    C("004-5.7-bert", "§5.7", "early BERT was capped at 512 tokens", CONFIRMED, "512 learned positions",
      "primary source", "04", source="Devlin et al. 2019"),
    C("004-5.7-flash", "§5.7 box", "FlashAttention: identical FLOPs to standard attention, numerically identical "
      "outputs, peak memory O(T) instead of O(T²)", IMPRECISE, "a tiled online softmax equals the full one to "
      "1e-12 in float64", "computed; primary source", "10", correct="the forward FLOPs are the same, but training "
      "recomputes the attention matrix in the backward pass (more FLOPs, less memory traffic); the outputs are "
      "equal up to floating-point rounding, not bit for bit", source="Dao et al. 2022, §3.1 and Fig. 2",
      check=_online_softmax),
    C("004-5.7-flash-speed", "§5.7 box, §16", "FlashAttention gives a 2–4× wall-clock speed-up", CONFIRMED,
      "the authors' figure for attention at sequence lengths 128 to 4K (see 002-flash-speed)", "primary source",
      "10", source=FLASH_README),
    C("004-6.1-orthogonal", "§6.1", "heads don't interfere because they project into orthogonal subspaces of the "
      "embedding", IMPRECISE, "each head's weights depend only on its own projections; the input subspaces the "
      "heads read are not orthogonal (largest principal cosine > 0.3)", "computed", "03",
      correct="the heads are independent because they have separate projections and write to separate (hence "
      "orthogonal) column blocks of the concatenation; the subspaces of the embedding they read (the row spaces of "
      "their W_i^Q) are not orthogonal, and W^O writes them back into shared directions", nb_check="03 §4",
      check=_heads),
    C("004-6.1-clark", "§6.1, §15.1", "BERT heads track syntactic dependencies, attend to adjacent tokens, or "
      "attend heavily to [SEP] as a 'no-op'", CONFIRMED, "all three in Clark et al.", "primary source", "03",
      source="Clark et al. 2019, abstract and §3"),
    C("004-6.2-linear", "§6.2, §7.1", "multi-head attention is linear in V, so stacked attention layers collapse "
      "to a single linear transformation", IMPRECISE, "linear in V for fixed weights; MHA(2x) ≠ 2·MHA(x)", "computed",
      "06", correct="see 000-8.5.4-linear: no per-token nonlinearity, but the mixing weights depend nonlinearly on "
      "the input, so stacks do not collapse to one linear map", nb_check="03 §4; 06 §3",
      check=_not_linear),
    C("004-7.1-geva", "§7.1, §15.2", "Geva et al. (2021): FFN layers act as key-value memories", CONFIRMED,
      "the paper's title and thesis", "primary source", "06", source="Geva et al. 2021, EMNLP"),
    C("004-7.2-gelu", "§7.2", "GELU consistently outperforms ReLU in Transformer training", NOT_CHECKABLE, "",
      "no controlled comparison here", "06", why="no source is given and no notebook here trains a ReLU/GELU "
      "comparison"),
    C("004-7.2-swiglu", "§7.2", "LLaMA and PaLM use SwiGLU", CONFIRMED, "both do", "primary sources", "06",
      source="LLaMA §2.2; PaLM §2"),
]
# fmt: on
