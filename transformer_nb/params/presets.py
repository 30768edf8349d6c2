"""Named models with the counts their authors published (000 Ex 8.2; 001 §19.8.4; 002; 004 §5.7).

``PRESETS``: the original base/big Transformer, Exercise 8.2, T5-base, BERT, GPT-2, GPT-3,
LLaMA-2 and Mistral, each a ``TransformerConfig`` whose ``published`` field holds the reported
count and ``source`` where it was reported.
"""

from transformer_nb.core.config import TransformerConfig as C

VASWANI = dict(arch="encoder-decoder", vocab=37000, activation="relu", norm_first=False, positions="sinusoidal")
VASWANI |= dict(max_len=512)
BERT = dict(arch="encoder", vocab=30522, activation="gelu", positions="learned", norm_first=False, token_types=2)
BERT |= dict(embed_norm=True, pooler=True, lm_head=False, tie_output=False, source="Devlin et al. 2019")
GPT = dict(arch="decoder", vocab=50257, activation="gelu", positions="learned", norm_first=True)
GPT2 = dict(GPT, max_len=1024, source="Radford et al. 2019 (model names 124M/355M/774M/1.5B)")
LLAMA = dict(arch="decoder", vocab=32000, activation="swiglu", norm="rms", bias=False, positions="rope", max_len=4096)
LLAMA |= dict(norm_first=True, tie_output=False)

# fmt: off
PRESETS = {
    "transformer-base": C("Transformer base", **VASWANI, d_model=512, n_heads=8, n_layers=6, d_ff=2048, published=65e6,
                          source="Vaswani et al. 2017, Table 3 (shared 37k BPE vocabulary, tied embeddings)"),
    "transformer-big": C("Transformer big", **VASWANI, d_model=1024, n_heads=16, n_layers=6, d_ff=4096,
                         published=213e6, source="Vaswani et al. 2017, Table 3"),
    "exercise-8.2": C("Exercise 8.2", arch="encoder", d_model=512, n_heads=8, n_layers=6, d_ff=2048, vocab=32000,
                      bias=False, norm_first=False, positions="sinusoidal", max_len=512, tie_output=True,
                      source="000 Exercise 8.2 (weights only, as its hint counts)"),
    "t5-base": C("T5-base", arch="encoder-decoder", d_model=768, n_heads=12, n_layers=12, d_ff=3072, vocab=32128,
                 norm="rms", bias=False, activation="relu", positions="t5-bias", norm_first=True, published=220e6,
                 source="Raffel et al. 2020 (T5 v1.0; its LayerNorm has a scale only, i.e. RMSNorm)"),
    "bert-base": C("BERT-base", **BERT, d_model=768, n_heads=12, n_layers=12, max_len=512, published=110e6),
    "bert-large": C("BERT-large", **BERT, d_model=1024, n_heads=16, n_layers=24, max_len=512, published=340e6),
    "gpt2-small": C("GPT-2 small", **GPT2, d_model=768, n_layers=12, n_heads=12, published=117e6),
    "gpt2-medium": C("GPT-2 medium", **GPT2, d_model=1024, n_layers=24, n_heads=16, published=345e6),
    "gpt2-large": C("GPT-2 large", **GPT2, d_model=1280, n_layers=36, n_heads=20, published=762e6),
    "gpt2-xl": C("GPT-2 XL", **GPT2, d_model=1600, n_layers=48, n_heads=25, published=1542e6),
    "gpt3": C("GPT-3 175B", **GPT, d_model=12288, n_heads=96, n_layers=96, max_len=2048, published=175.0e9,
              source="Brown et al. 2020, Table 2.1"),
    "llama2-7b": C("LLaMA-2 7B", **LLAMA, d_model=4096, n_heads=32, n_layers=32, d_ff=11008, published=7e9,
                   source="Touvron et al. 2023 (LLaMA 2)"),
    "llama2-70b": C("LLaMA-2 70B", **LLAMA, d_model=8192, n_heads=64, n_kv_heads=8, n_layers=80, d_ff=28672,
                    published=70e9, source="Touvron et al. 2023 (LLaMA 2; GQA with 8 KV heads)"),
    "mistral-7b": C("Mistral 7B", **LLAMA, d_model=4096, n_heads=32, n_kv_heads=8, n_layers=32, d_ff=14336,
                    published=7.3e9, source="Jiang et al. 2023 (Mistral 7B; GQA)"),
}
# fmt: on
