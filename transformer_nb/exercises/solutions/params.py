"""Notebook 07: Exercise 8.2 (the parameter count) and Exercise 8.4 (memory, FLOPs, crossover, reading)."""


def count_82(d_model, n_heads, d_ff, n_layers, vocab):
    embedding = vocab * d_model  # one table; the tied output layer reuses it
    attention = 4 * d_model * d_model  # W_Q, W_K, W_V, W_O; the h heads split d_model, they add nothing
    ffn = 2 * d_model * d_ff  # W_1 (d_model × d_ff) and W_2 (d_ff × d_model)
    norms = 2 * 2 * d_model  # two LayerNorms per layer, each a scale γ and a shift β
    total = embedding + n_layers * (attention + ffn + norms)
    return {
        "embedding": embedding,
        "attention_per_layer": attention,
        "ffn_per_layer": ffn,
        "norm_per_layer": norms,
        "total": total,
    }


def attention_bytes(seq_len, n_heads, bytes_per_value):
    return n_heads * seq_len * seq_len * bytes_per_value  # one T × T matrix per head


def attn_flops(seq_len, d_model, n_heads):
    T, d = seq_len, d_model
    d_k = d // n_heads
    return {
        "projections": 4 * 2 * T * d * d,  # Q, K, V and O: four (T × d)(d × d) products, 2 FLOPs per multiply-add
        "scores": n_heads * 2 * T * T * d_k,  # Q_i K_iᵀ: (T × d_k)(d_k × T) for each head
        "weighted_sum": n_heads * 2 * T * T * d_k,  # A_i V_i: (T × T)(T × d_k) for each head
    }


def crossover_lengths(d_model, n_heads):
    return {
        "text": d_model + 1,  # T² > d·T  <=>  T > d
        "flops": 2 * d_model + 1,  # scores + weighted sums 4T²d > projections 8Td²  <=>  T > 2d
        "memory": d_model // n_heads + 1,  # h·T² attention weights > T·d activations  <=>  T > d/h
    }


# Which term dominates one attention layer's FLOPs (quadratic 4T²d against projections 8Td²):
my_interpretation = {
    "BERT-base: T=512, d=768, h=12": "projections",
    "GPT-3: T=2048, d=12288, h=96": "projections",
    "a small model with a long window: T=4096, d=512, h=8": "attention",
    "LLaMA-2-7B: T=4096, d=4096, h=32": "projections",
    "a 128K context: T=131072, d=4096, h=32": "attention",
}
