"""001 (Chapter 19), §19.9–§19.15: training (teacher forcing, label smoothing, warm-up), the toy task, design
decisions, scaling laws, practical considerations, KV cache and FlashAttention."""

import math
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import figures
from ._base import CONFIRMED, IMPRECISE, NOT_CHECKABLE, WRONG, factory
from ._checks import close, gen, generation_flops

C = factory("001")
PAPER = "Vaswani et al. 2017, 'Attention Is All You Need'"
T2T_LS = (
    "tensorflow/tensor2tensor, tensor2tensor/layers/common_layers.py, smoothing_cross_entropy: "
    "low_confidence = (1.0 - confidence) / tf.to_float(vocab_size - 1), one_hot(on_value=confidence, "
    "off_value=low_confidence), confidence = 1 - label_smoothing"
)


def _shift():
    tgt = ["I", "like", "cats"]
    seq = ["<bos>", *tgt, "<eos>"]
    assert seq[:-1] == ["<bos>", "I", "like", "cats"] and seq[1:] == ["I", "like", "cats", "<eos>"]


def _label_smoothing():
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


def _schedule():
    d, w = 512, 4000
    lr = lambda s: d**-0.5 * min(s**-0.5, s * w**-1.5)
    close(lr(w), (d * w) ** -0.5, 1e-15)
    assert lr(1) < lr(2000) < lr(w) and lr(4 * w) == lr(w) / 2  # linear up, then ∝ 1/√step
    close(lr(2000), lr(w) * 2000 / w, 1e-15)


def _toy_sizes():
    assert 10 + 3 == 13 and math.ceil(2000 / 64) * 30 == 960


def _ten_x():
    close(10**-0.050, 0.891, 5e-4)  # each 10× compute multiplies L by 0.89: a constant ratio, not a constant step
    losses = [10 ** (-0.050 * k) for k in range(4)]
    assert len({round(b / a, 12) for a, b in zip(losses, losses[1:])}) == 1
    steps = [a - b for a, b in zip(losses, losses[1:])]
    assert steps[0] > steps[1] > steps[2] > 0  # the absolute improvement shrinks


def _amp_deprecated():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.amp.GradScaler()
    assert any(issubclass(w.category, FutureWarning) and "deprecated" in str(w.message) for w in caught)


def _four_d():
    d = 512
    quad, ffn = (lambda n: 4 * n * n * d), (lambda n: 2 * 2 * n * d * 4 * d)
    assert quad(4 * d) == ffn(4 * d) and quad(4 * d + 1) > ffn(4 * d + 1) and quad(4 * d - 1) < ffn(4 * d - 1)


def _kv_linear():
    per_token = 2 * 6 * 512  # keys and values, 6 layers, d = 512 numbers per token
    assert [per_token * n for n in (40, 80)] == [40 * per_token, 2 * 40 * per_token]


def _recompute_flops():
    (slow, fast), (slow2, fast2) = generation_flops(2048), generation_flops(4096)
    assert slow2 / slow > 6  # doubling n multiplies the cache-less cost by nearly 8: O(n³d) attention dominates
    assert 2 < fast2 / fast < 4.01  # with a cache at most ×4: O(nd²) + O(n²d)


def _preln_stream_grows():
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


def _prompt_needs_mask():
    q, k, v = (torch.randn(1, 4, 25, 8, generator=gen(s)) for s in range(3))
    differs = F.scaled_dot_product_attention(q, k, v) - F.scaled_dot_product_attention(q, k, v, is_causal=True)
    per_pos = differs.abs().amax(dim=(0, 1, 3)) > 1e-5
    assert int(per_pos.sum()) == 24 and not bool(per_pos[-1])


def _text_recipe_partial():
    assert figures.value("09:text_exact") < 90, "the text's recipe learns the task only partly"
    assert figures.read("09:text_demo") != "[4, 9, 7, 5, 3, 2]", "its demo is decoded wrongly"
    assert figures.value("09:improved_steps") <= 960, "the improved recipe gets there within the text's budget"


# fmt: off
CLAIMS = [
    C("001-19.9.1-shift", "§19.9.1", "decoder input ['<bos>', 'I', 'like', 'cats'], labels ['I', 'like', 'cats', "
      "'<eos>']", CONFIRMED, "the shift by one", "computed", "09", nb_check="09 §3", check=_shift),
    C("001-19.9.2-rule", "§19.9.2", "label smoothing gives the true class 1 − ε and every other class ε/(V − 1)",
      CONFIRMED, "exactly the original implementation's rule; PyTorch's F.cross_entropy(label_smoothing=ε) uses "
      "another one (1 − ε + ε/V and ε/V)", "original code; computed", "09", source=T2T_LS, nb_check="09 §4",
      check=_label_smoothing),
    C("001-19.9.2-effect", "§19.9.2", "the original uses ε_ls = 0.1; smoothing hurts perplexity but improves BLEU",
      CONFIRMED, "'This hurts perplexity, as the model learns to be more unsure, but improves accuracy and BLEU "
      "score'", "primary source", "09", source=f"{PAPER}, §5.4"),
    C("001-19.9.3-schedule", "§19.9.3", "lr = d^−0.5·min(step^−0.5, step·warmup^−1.5): linear for warmup (4,000) "
      "steps, then ∝ 1/√step; Adam β = (0.9, 0.98), ε = 10⁻⁹", CONFIRMED, "peak (d·warmup)^−0.5 at the end of "
      "warm-up; the optimiser settings are the paper's", "computed; primary source", "09", source=f"{PAPER}, §5.3",
      nb_check="09 §5", check=_schedule),
    C("001-19.10-task", "§19.10", "the toy task is 'number-word translation (digit sequences to their English word "
      "equivalents)'", WRONG, "the code generates reversal pairs: tgt = reversed(src)", "the text's own code", "09",
      correct="sequence reversal over 10 symbols (ids 3–12), lengths 3–8", source="001 §19.10.1, create_toy_data",
      nb_check="09 errata 2"),
    C("001-19.10-sizes", "§19.10.5", "vocabulary 13 = 10 tokens + PAD + BOS + EOS; 2,000 pairs in batches of 64 "
      "for 30 epochs", CONFIRMED, "13; ⌈2000/64⌉ × 30 = 960 steps", "computed", "09", check=_toy_sizes),
    C("001-19.10-learns", "§19.10.5", "run as written, the loss decreases steadily and the model learns to reverse "
      "sequences", IMPRECISE, "the loss falls, but after its 30 epochs only {09:text_exact}% of 1,000 held-out "
      "sequences are reversed exactly, and its own demo [3, 5, 7, 9, 4] is decoded as {09:text_demo}",
      "measured in notebook 09 (figures read from its stored outputs)", "09", correct="with Adam at a constant "
      "10⁻⁴ the recipe learns the task only partly; with the changes notebook 09 §9 adds one at a time (learning "
      "rate, dropout, batches, warm-up, label smoothing, initialisation) it reaches 99.9% exact match at step "
      "{09:improved_steps}",
      source="notebook 09 §9 (the ladder from the text's recipe to the improved one)", nb_check="09 §9",
      check=_text_recipe_partial),
    C("001-19.10-unused", "§19.9–19.10", "the chapter trains with label smoothing and the warm-up schedule it "
      "defines", IMPRECISE, "train_transformer uses neither: Adam at a constant 10⁻⁴ and plain cross-entropy",
      "the text's own code", "09", correct="both are defined but unused; with warmup_steps = 4000 the 960-step run "
      "would end inside the warm-up at 4.7·10⁻⁴", source="001 §19.10.3, train_transformer", nb_check="09 §5"),
    C("001-19.11.1-12h", "§19.11.1", "the base model was trained in 12 hours on 8 GPUs", CONFIRMED,
      "100,000 steps of 0.4 s on 8 P100 GPUs", "primary source", "09", source=f"{PAPER}, §5.2"),
    C("001-19.11.1-path", "§19.11.1", "self-attention: O(n²) in sequence length and path length 1; an RNN: O(n) "
      "and path length n − 1", CONFIRMED, "Table 1: O(n²·d) vs O(n·d²) per layer; max path O(1) vs O(n)",
      "primary source", "07", source=f"{PAPER}, Table 1"),
    C("001-19.11.1-variants", "§19.11.1", "the quadratic cost motivates 'efficient attention variants like "
      "Linformer, Performer, and Flash Attention'", IMPRECISE, "Linformer and Performer approximate attention in "
      "O(n); FlashAttention computes exact attention, still O(n²) in time", "primary sources", "10",
      correct="Linformer (low-rank projection of K and V) and Performer (random features) change the computation to "
      "linear cost; FlashAttention keeps the exact O(n²d) computation and only removes the O(n²) memory",
      source="Wang et al. 2020 (arXiv:2006.04768), Choromanski et al. 2021 (arXiv:2009.14794), Dao et al. 2022 "
      "(arXiv:2205.14135), abstracts"),
    C("001-19.11.3-gpt3", "§19.11.3", "GPT-3 has 175B parameters", CONFIRMED, "175.0B in the paper; 174.6B counted "
      "from its shapes", "primary source; computed (see 002-12d2-gpt3)", "07", source="Brown et al. 2020, Table 2.1"),
    C("001-19.11.3-closed", "§19.11.3", "GPT-4 and Claude are decoder-only", NOT_CHECKABLE, "", "undisclosed", "08",
      why="neither architecture has been published"),
    C("001-19.11.3-mlm", "§19.11.3", "BERT masks 15% of tokens and predicts them", CONFIRMED, "15% of WordPiece "
      "tokens (of which 80% become [MASK], 10% random, 10% unchanged)", "primary source", "08",
      source="Devlin et al. 2019, §3.1"),
    C("001-19.11.4-laws", "§19.11.4", "Kaplan et al.: L(N) ∝ N^−α_N, L(D) ∝ D^−α_D, L(C) ∝ C^−α_C", CONFIRMED,
      "α_N ≈ 0.076, α_D ≈ 0.095, α_C^min ≈ 0.050", "primary source", "07", source="Kaplan et al. 2020 "
      "(arXiv:2001.08361), Eqs. 1.1–1.3"),
    C("001-19.11.4-10x", "§19.11.4", "each 10× increase in compute yields a roughly constant improvement in loss",
      IMPRECISE, "a constant factor: ×10^−0.050 ≈ 0.89 per 10× compute", "computed", "07",
      correct="under L ∝ C^−0.050 each 10× multiplies the loss by about 0.89 (an 11% relative reduction); the "
      "absolute improvement shrinks as the loss falls", source="Kaplan et al. 2020, Eq. 1.3", check=_ten_x),
    C("001-19.11.4-chinchilla", "§19.11.4", "Chinchilla showed that smaller models trained on more data are "
      "compute-optimal", CONFIRMED, "parameters and tokens should grow equally with compute; 70B on 1.4T tokens "
      "beats Gopher (280B)", "primary source", "07", source="Hoffmann et al. 2022 (arXiv:2203.15556), abstract"),
    C("001-19.12.2-memories", "§19.12.2", "research suggests FFN layers act as key-value memories", CONFIRMED,
      "Geva et al. 2021", "primary source", "06", source="Geva et al. 2021, 'Transformer Feed-Forward Layers Are "
      "Key-Value Memories', EMNLP"),
    C("001-19.12.2-layernorm", "§19.12.2", "layer normalisation 'stabilizes the magnitude of activations, "
      "preventing them from growing or shrinking as they flow through many layers'", IMPRECISE, "true of Post-LN "
      "(the stream is renormalised after every block); in Pre-LN only the sublayers' inputs are normalised and "
      "the residual stream grows with depth", "computed; measured in notebook 06", "06", correct="Post-LN keeps "
      "the stream at unit scale; Pre-LN, which the chapter recommends, lets the residual stream grow with depth "
      "(about 2× RMS after 24 random blocks here; notebook 06 §6 measures 48) and normalises what each sublayer "
      "reads, plus a final LayerNorm", source="notebook 06 §6", nb_check="06 §6", check=_preln_stream_grows),
    C("001-19.12.3-patterns", "§19.12.3", "trained heads show positional, content, delimiter and rare-token patterns",
      CONFIRMED, "delimiter and positional heads (Clark et al.); positional, syntactic and rare-word heads (Voita "
      "et al.)", "primary sources", "03", source="Clark et al. 2019 abstract; Voita et al. 2019 §4"),
    C("001-19.12.3-delimiter", "§19.12.3", "heads that attend to delimiters ('periods or commas') are 'possibly "
      "using them as aggregate information stores'", IMPRECISE, "Clark et al. tested that reading and found "
      "evidence against it for BERT's [SEP]", "primary source", "03", correct="Clark et al. find heads attending "
      "to [SEP], periods and commas; since [SEP] attends almost only to itself and attention to it barely changes "
      "the output (small gradient-based importance), they suggest a 'no-op' rather than an aggregate store",
      source="Clark et al. 2019, 'What Does BERT Look At?', §3 ('Attending to Separator Tokens')"),
    C("001-19.13.1-clip", "§19.13.1", "standard practice clips gradients to a norm of 1.0", CONFIRMED,
      "GPT-3 and LLaMA clip at 1.0; the original Transformer's code did not clip (clip_grad_norm = 0)",
      "primary sources", "09", source="Brown et al. 2020 App. B; LLaMA §2.3; tensor2tensor transformer_base_v1"),
    C("001-19.13.2-amp", "§19.13.2", "mixed precision through torch.cuda.amp.GradScaler and torch.cuda.amp.autocast",
      IMPRECISE, "both raise a FutureWarning in current PyTorch", "computed", "11", correct="use "
      "torch.amp.GradScaler('cuda') and torch.autocast('cuda', dtype=...); with bfloat16 no gradient scaler is "
      "needed", check=_amp_deprecated),
    C("001-19.13.3-dropout", "§19.13.3", "the original applies dropout (p = 0.1) to attention weights, sublayer "
      "outputs and after the positional encoding", IMPRECISE, "the paper names two places", "primary source", "06",
      correct="the paper applies dropout to each sublayer's output and to the sums of embeddings and positional "
      "encodings; attention-weight dropout is an implementation option, not in the paper", source=f"{PAPER}, §5.4"),
    C("001-19.13.3-wd", "§19.13.3", "weight decay was not used in the original", CONFIRMED, "weight_decay = 0.0",
      "original code", "09", source="tensor2tensor transformer_base_v1 (hparams.weight_decay = 0.0)"),
    C("001-19.13.4-init", "§19.13.4", "GPT-2 scales the initialisation of residual sublayers by 1/√N, N the number "
      "of layers", IMPRECISE, "N counts residual layers", "primary source", "06", correct="GPT-2 scales the "
      "weights of residual layers by 1/√N where N is the number of residual layers: two per block",
      source="Radford et al. 2019, §2.3"),
    C("001-19.13.5-4d", "§19.13.5", "with d_ff = 4d the FFN costs more than attention until n > 4d", CONFIRMED,
      "attention's quadratic products 4n²d equal the FFN's 16nd² at n = 4d", "computed", "07",
      nb_check="07 §6 (interpretation)", check=_four_d),
    C("001-19.14.1-step", "§19.14.1", "with a KV cache the per-step attention cost drops from O(n²·d) to O(n·d)",
      CONFIRMED, "one query against n cached keys: 2·n·d multiply-adds per layer", "derivation", "10",
      source="notebook 10 §8"),
    C("001-19.14.1-recompute", "§19.14.1", "without a KV cache, generating n tokens requires O(n²) total "
      "computation (each of n steps processes n tokens)", IMPRECISE, "Σ_t t = n(n+1)/2 token evaluations, but a "
      "token evaluation at step t costs O(d² + t·d)", "derivation; FLOPs counted", "10", correct="O(n²) counts "
      "token evaluations. In FLOPs, re-running every prefix costs O(n²d²) for the projections and FFN plus O(n³d) "
      "for attention; with a cache it is O(nd²) + O(n²d): the cache removes a factor n, attention over the cache "
      "still grows with n (the same claim as 002-kv-recompute)", check=_recompute_flops),
    C("001-19.14.1-memory", "§19.14.1", "caching reduces 'the total to O(n²) in key-value memory'", WRONG,
      "the cache grows linearly: 2·N_layers·d numbers per token", "computed; measured in a notebook", "10",
      correct="O(n) memory: 80 tokens take exactly twice the bytes of 40", nb_check="10 §8", check=_kv_linear),
    C("001-19.14.1-nomask", "§19.14.1", "CachedSelfAttention (no mask) serves autoregressive generation", IMPRECISE,
      "exact for the use its docstring describes (one token per call, seq_len = 1, starting from cache=None); a "
      "multi-token prompt pass through it lets every prompt token see later ones", "computed", "10",
      correct="right token by token; to feed a whole prompt in one call (what generation code usually does) the "
      "prompt pass needs the causal mask, aligned bottom-right when a cache exists: without it 24 of 25 prompt "
      "positions change", source="001 §19.14.1, the listing's docstring", nb_check="10 §8",
      check=_prompt_needs_mask),
    C("001-19.14.2-flash", "§19.14.2", "FlashAttention avoids materialising the n×n matrix (memory O(n²) → O(n)) "
      "and is faster; PyTorch's scaled_dot_product_attention uses it on compatible hardware", CONFIRMED,
      "exact attention with memory linear in n; sdpa dispatches to a flash kernel on supported GPUs",
      "primary sources", "10", source="Dao et al. 2022 (arXiv:2205.14135), abstract; PyTorch docs, "
      "torch.nn.functional.scaled_dot_product_attention"),
    C("001-19.15-dates", "§19.15", "BERT and GPT (2018), GPT-2/GPT-3 (2019/2020), T5 (2020), ViT (2020)", CONFIRMED,
      "publication years as given (T5's arXiv version is from October 2019)", "primary sources", "08",
      source="arXiv 1810.04805, 1910.10683, 2010.11929; GPT reports 2018/2019; Brown et al. 2020"),
]
# fmt: on
