"""The Transformer block (000 §8.5; 001 §19.3–19.6; 004 §7–9, 11).

A block is shape-preserving, ``(B, T, d_model) -> (B, T, d_model)``, so blocks stack.

    Pre-LN  (norm_first=True):   x = x + Attn(LN(x));   x = x + FFN(LN(x))
    Post-LN (norm_first=False):  x = LN(x + Attn(x));   x = LN(x + FFN(x))

With ``residual=False`` the ``x +`` is dropped (an experiment only: notebook 06 shows what
happens to the gradients). Norms are ``nn.LayerNorm`` or ``nn.RMSNorm``; ``layer_norm`` and
``rms_norm`` below are the same computations written out, and notebook 06 checks them equal.

Also here:

- ``swiglu_hidden_size``: LLaMA's rule for the SwiGLU hidden width (2/3 · 4d, rounded up);
- ``copy_from_torch`` / ``to_torch``: move weights between our layers and
  ``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer`` (``batch_first=True``);
- ``trace_shapes``: every submodule's input and output shapes, recorded by forward hooks;
- ``build_stack``, ``layer_grad_norms``, ``stream_stats``: the depth experiment of notebook 06
  (per-layer gradient norms and the residual stream at initialisation, Pre-LN vs Post-LN, with
  and without residuals); ``train_toy_lm``: does Post-LN need warm-up?
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.multihead import MultiHeadAttention
from transformer_nb.multihead import copy_from_torch as _copy_attn_from_torch
from transformer_nb.multihead import copy_to_torch as _copy_attn_to_torch

ACTIVATIONS = ("relu", "gelu", "swiglu")
NORMS = ("layer", "rms")


def _check_positive_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


# --------------------------------------------------------------------------- norms


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None, eps: float = 1e-5
) -> torch.Tensor:
    """LayerNorm over the last axis, written out: ``γ ⊙ (x - μ) / sqrt(σ² + ε) + β``.

    ``x: (..., d)``; ``μ`` and ``σ²`` are the mean and the *biased* variance (divide by ``d``)
    of each row; ``weight`` (γ) and ``bias`` (β) are ``(d,)`` or None. Same as ``nn.LayerNorm(d, eps)``.
    """
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    y = (x - mu) / torch.sqrt(var + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None = None, eps: float | None = None) -> torch.Tensor:
    """RMSNorm over the last axis, written out: ``γ ⊙ x / sqrt(mean(x²) + ε)`` (no centring, no β).

    ``x: (..., d)``, ``weight`` (γ): ``(d,)`` or None. ``eps=None`` means ``torch.finfo(x.dtype).eps``,
    the default of ``nn.RMSNorm``.
    """
    eps = torch.finfo(x.dtype).eps if eps is None else eps
    y = x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps)
    return y if weight is None else y * weight


def make_norm(kind: str, d_model: int, eps: float = 1e-5) -> nn.Module:
    """``"layer"`` -> ``nn.LayerNorm`` (2·d parameters), ``"rms"`` -> ``nn.RMSNorm`` (d parameters)."""
    if kind not in NORMS:
        raise ValueError(f"norm must be 'layer' or 'rms', got {kind!r}")
    _check_positive_int("d_model", d_model)
    if kind == "layer":
        return nn.LayerNorm(d_model, eps=eps)
    return nn.RMSNorm(d_model, eps=eps)


# --------------------------------------------------------------------------- feed-forward


def swiglu_hidden_size(d_model: int, multiple_of: int = 256, ffn_dim_multiplier: float | None = None) -> int:
    """LLaMA's SwiGLU hidden width: ``2/3 · 4·d_model`` (times an optional multiplier), rounded up to ``multiple_of``.

    SwiGLU has three ``d × d_ff`` matrices instead of two; taking ``d_ff ≈ 2/3 · 4d`` keeps
    its ``3·d·d_ff ≈ 8·d²`` weights equal to a ReLU FFN's ``2·d·4d``. LLaMA-7B: 4096 -> 11008.
    """
    _check_positive_int("d_model", d_model)
    _check_positive_int("multiple_of", multiple_of)
    hidden = int(2 * 4 * d_model / 3)
    if ffn_dim_multiplier is not None:
        if not ffn_dim_multiplier > 0:
            raise ValueError(f"ffn_dim_multiplier must be positive, got {ffn_dim_multiplier!r}")
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


class FeedForward(nn.Module):
    """Position-wise FFN ``(B, T, d) -> (B, T, d)``.

    ``relu``/``gelu``: ``W2·act(W1·x)`` with ``2·d·d_ff`` weights (``linear1``, ``linear2``).
    ``swiglu``: ``W2·(silu(W1·x) ⊙ W3·x)`` with ``3·d·d_ff`` weights; ``linear1`` is the
    silu branch, ``gate`` (W3) the linear branch it multiplies.
    """

    def __init__(self, d_model: int, d_ff: int, activation: str = "relu", dropout: float = 0.0, bias: bool = True):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
        _check_positive_int("d_model", d_model)
        if isinstance(d_ff, bool) or not isinstance(d_ff, int) or d_ff <= 0:
            raise ValueError(
                f"d_ff (the FFN's hidden width) must be a positive integer, got {d_ff!r}; "
                f"the usual choice is 4·d_model = {4 * d_model}"
            )
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.gate = nn.Linear(d_model, d_ff, bias=bias) if activation == "swiglu" else None
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.linear1(x)
        if self.activation == "relu":
            h = F.relu(h)
        elif self.activation == "gelu":
            h = F.gelu(h)
        else:
            h = F.silu(h) * self.gate(x)
        return self.linear2(self.dropout(h))


# --------------------------------------------------------------------------- blocks


class EncoderLayer(nn.Module):
    """Self-attention + FFN, each with a residual connection and a norm (Pre- or Post-LN).

    ``forward(x, mask=None, is_causal=False, rope=None)``: ``x: (B, T, d)`` -> ``(B, T, d)``.
    With ``is_causal=True`` this is the decoder-only (GPT) block. ``residual=False`` drops
    the two skip connections (for the depth experiment only).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = True,
        activation: str = "relu",
        norm: str = "layer",
        n_kv_heads: int | None = None,
        bias: bool = True,
        eps: float = 1e-5,
        residual: bool = True,
    ):
        super().__init__()
        self.norm_first, self.residual = norm_first, residual
        self.self_attn = MultiHeadAttention(d_model, n_heads, n_kv_heads, bias=bias, dropout=dropout)
        self.ff = FeedForward(d_model, d_ff, activation, dropout, bias=bias)
        self.norm1 = make_norm(norm, d_model, eps)
        self.norm2 = make_norm(norm, d_model, eps)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask=None, is_causal: bool = False, rope=None):
        attn = lambda h: self.drop(self.self_attn(h, mask=mask, is_causal=is_causal, rope=rope))
        ff = lambda h: self.drop(self.ff(h))
        skip = (lambda h: h) if self.residual else (lambda h: 0.0)
        if self.norm_first:
            x = skip(x) + attn(self.norm1(x))
            return skip(x) + ff(self.norm2(x))
        x = self.norm1(skip(x) + attn(x))
        return self.norm2(skip(x) + ff(x))


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention to ``memory``, FFN (each with residual + norm).

    ``forward(x, memory, self_mask=None, memory_mask=None)``: ``x: (B, T, d)``,
    ``memory: (B, S, d)``, ``memory_mask`` broadcastable to ``(B, h, T, S)`` -> ``(B, T, d)``.
    The causal mask is always applied to self-attention; ``self_mask`` adds padding.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = True,
        activation: str = "relu",
        norm: str = "layer",
        bias: bool = True,
        eps: float = 1e-5,
        residual: bool = True,
    ):
        super().__init__()
        self.norm_first, self.residual = norm_first, residual
        self.self_attn = MultiHeadAttention(d_model, n_heads, bias=bias, dropout=dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, bias=bias, dropout=dropout)
        self.ff = FeedForward(d_model, d_ff, activation, dropout, bias=bias)
        self.norm1 = make_norm(norm, d_model, eps)
        self.norm2 = make_norm(norm, d_model, eps)
        self.norm3 = make_norm(norm, d_model, eps)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        sa = lambda h: self.drop(self.self_attn(h, mask=self_mask, is_causal=True))
        ca = lambda h: self.drop(self.cross_attn(h, memory, memory, mask=memory_mask))
        ff = lambda h: self.drop(self.ff(h))
        skip = (lambda h: h) if self.residual else (lambda h: 0.0)
        if self.norm_first:
            x = skip(x) + sa(self.norm1(x))
            x = skip(x) + ca(self.norm2(x))
            return skip(x) + ff(self.norm3(x))
        x = self.norm1(skip(x) + sa(x))
        x = self.norm2(skip(x) + ca(x))
        return self.norm3(skip(x) + ff(x))


# --------------------------------------------------------------------------- torch interop

_TORCH_LAYERS = (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)


def _torch_activation(theirs) -> str:
    act = theirs.activation
    if act is F.relu or isinstance(act, nn.ReLU):
        return "relu"
    if act is F.gelu or (isinstance(act, nn.GELU) and act.approximate == "none"):
        return "gelu"
    raise ValueError(
        f"{type(theirs).__name__} uses activation {act!r}; only relu and (exact) gelu have a counterpart in FeedForward"
    )


def _check_layer_pair(ours, theirs) -> None:
    pairs = {EncoderLayer: nn.TransformerEncoderLayer, DecoderLayer: nn.TransformerDecoderLayer}
    want = pairs.get(type(ours))
    if want is None:
        raise TypeError(f"expected an EncoderLayer or DecoderLayer, got {type(ours).__name__}")
    if not isinstance(theirs, want):
        raise TypeError(f"a {type(ours).__name__} pairs with an nn.{want.__name__}, got {type(theirs).__name__}")
    if not ours.residual:
        raise ValueError("this layer has residual=False; torch's layers always add the residual")
    if ours.norm_first != theirs.norm_first:
        raise ValueError(
            f"norm placement differs: ours norm_first={ours.norm_first}, torch norm_first={theirs.norm_first}"
        )
    if ours.ff.activation != _torch_activation(theirs):
        raise ValueError(f"activation differs: ours {ours.ff.activation!r}, torch {_torch_activation(theirs)!r}")
    if not isinstance(ours.norm1, nn.LayerNorm):
        raise ValueError("torch's Transformer layers use LayerNorm; this layer uses RMSNorm")
    if ours.norm1.eps != theirs.norm1.eps:
        raise ValueError(f"LayerNorm eps differs: ours {ours.norm1.eps}, torch {theirs.norm1.eps}")
    if ours.ff.linear1.weight.shape != theirs.linear1.weight.shape:
        raise ValueError(
            f"FFN shapes differ: ours linear1 {tuple(ours.ff.linear1.weight.shape)}, "
            f"torch linear1 {tuple(theirs.linear1.weight.shape)}"
        )
    if (ours.ff.linear1.bias is None) != (theirs.linear1.bias is None):
        raise ValueError("bias settings differ between the two layers")


def copy_from_torch(ours, theirs):
    """Copy a torch Transformer layer's weights into ours and return ours.

    ``EncoderLayer`` <- ``nn.TransformerEncoderLayer``; ``DecoderLayer`` <- ``nn.TransformerDecoderLayer``
    (its ``multihead_attn`` is our ``cross_attn``). Norm placement, activation, eps, widths and
    bias settings must match (``ValueError`` says which differs). Dropout is not copied: compare
    the two in ``eval()`` mode or with dropout 0.
    """
    _check_layer_pair(ours, theirs)
    _copy_attn_from_torch(ours.self_attn, theirs.self_attn)
    if isinstance(ours, DecoderLayer):
        _copy_attn_from_torch(ours.cross_attn, theirs.multihead_attn)
    with torch.no_grad():
        for mine, other in _paired_modules(ours, theirs):
            mine.weight.copy_(other.weight)
            if mine.bias is not None:
                mine.bias.copy_(other.bias)
    return ours


def _paired_modules(ours, theirs):
    """(our module, torch's module) for the FFN linears and the norms."""
    pairs = [
        (ours.ff.linear1, theirs.linear1),
        (ours.ff.linear2, theirs.linear2),
        (ours.norm1, theirs.norm1),
        (ours.norm2, theirs.norm2),
    ]
    if isinstance(ours, DecoderLayer):
        pairs.append((ours.norm3, theirs.norm3))
    return pairs


def to_torch(ours):
    """A new torch layer (``batch_first=True``, dropout 0) holding the same weights as ``ours``."""
    if not isinstance(ours, (EncoderLayer, DecoderLayer)):
        raise TypeError(f"expected an EncoderLayer or DecoderLayer, got {type(ours).__name__}")
    if ours.ff.activation == "swiglu":
        raise ValueError("torch's Transformer layers have no SwiGLU feed-forward")
    if not isinstance(ours.norm1, nn.LayerNorm):
        raise ValueError("torch's Transformer layers use LayerNorm; this layer uses RMSNorm")
    if ours.self_attn.n_kv_heads != ours.self_attn.n_heads:
        raise ValueError("torch's Transformer layers have no grouped key/value heads (GQA/MQA)")
    cls = nn.TransformerEncoderLayer if isinstance(ours, EncoderLayer) else nn.TransformerDecoderLayer
    w = ours.ff.linear1.weight
    theirs = cls(
        ours.self_attn.d_model,
        ours.self_attn.n_heads,
        dim_feedforward=w.shape[0],
        dropout=0.0,
        activation=ours.ff.activation,
        layer_norm_eps=ours.norm1.eps,
        batch_first=True,
        norm_first=ours.norm_first,
        bias=ours.ff.linear1.bias is not None,
        device=w.device,
        dtype=w.dtype,
    )
    _copy_attn_to_torch(ours.self_attn, theirs.self_attn)
    if isinstance(ours, DecoderLayer):
        _copy_attn_to_torch(ours.cross_attn, theirs.multihead_attn)
    with torch.no_grad():
        for mine, other in _paired_modules(ours, theirs):
            other.weight.copy_(mine.weight)
            if mine.bias is not None:
                other.bias.copy_(mine.bias)
    return theirs.train(ours.training)


# --------------------------------------------------------------------------- shape tracing


def trace_shapes(model: nn.Module, *args, **kwargs) -> list:
    """Run ``model(*args, **kwargs)`` and record every submodule call in execution order.

    Returns a list of dicts ``{"name", "type", "in", "out"}`` where ``in``/``out`` are the
    shapes (tuples) of the first tensor argument and of the (first) tensor output.
    The records come from forward hooks, so they are what really ran, not a description.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"trace_shapes needs an nn.Module, got {type(model).__name__}")
    records, handles = [], []

    def first_tensor(x):
        if isinstance(x, torch.Tensor):
            return x
        if isinstance(x, (tuple, list)):
            for item in x:
                t = first_tensor(item)
                if t is not None:
                    return t
        return None

    def hook(name):
        def fn(module, inputs, output):
            t_in, t_out = first_tensor(inputs), first_tensor(output)
            records.append(
                {
                    "name": name or type(module).__name__,
                    "type": type(module).__name__,
                    "in": tuple(t_in.shape) if t_in is not None else None,
                    "out": tuple(t_out.shape) if t_out is not None else None,
                }
            )

        return fn

    for name, module in model.named_modules():
        if isinstance(module, nn.Dropout):
            continue
        handles.append(module.register_forward_hook(hook(name)))
    try:
        model(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    return records


# --------------------------------------------------------------------------- the depth experiment


def init_xavier_(module: nn.Module) -> nn.Module:
    """Xavier-uniform weights for every matrix, zero biases (the original paper's init); norms keep γ=1, β=0."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    return module


class Stack(nn.Module):
    """``depth`` encoder layers, then (Pre-LN only) a final norm, then a linear read-out to ``n_out`` classes.

    ``forward(x) -> logits``; ``x: (B, T, d_model)``, logits ``(B, T, n_out)``. Used to measure
    gradients at initialisation; ``self.layers`` are the blocks.
    """

    def __init__(
        self,
        depth: int,
        d_model: int = 64,
        n_heads: int = 4,
        d_ff: int | None = None,
        norm_first: bool = True,
        residual: bool = True,
        n_out: int = 64,
        activation: str = "relu",
    ):
        super().__init__()
        _check_positive_int("depth", depth)
        d_ff = 4 * d_model if d_ff is None else d_ff
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, n_heads, d_ff, 0.0, norm_first, activation, residual=residual) for _ in range(depth)
        )
        self.final_norm = make_norm("layer", d_model) if norm_first else nn.Identity()
        self.head = nn.Linear(d_model, n_out)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(self.final_norm(x))


def build_stack(
    depth: int,
    norm_first: bool = True,
    residual: bool = True,
    d_model: int = 64,
    n_heads: int = 4,
    d_ff: int | None = None,
    n_out: int = 64,
    seed: int = 0,
) -> Stack:
    """A seeded, Xavier-initialised ``Stack`` (same seed -> same weights)."""
    torch.manual_seed(seed)
    return init_xavier_(Stack(depth, d_model, n_heads, d_ff, norm_first, residual, n_out))


def layer_grad_norms(
    depth: int,
    norm_first: bool = True,
    residual: bool = True,
    d_model: int = 64,
    n_heads: int = 4,
    seq_len: int = 16,
    batch: int = 8,
    n_out: int = 64,
    seeds=(0,),
) -> dict:
    """Gradient norms at initialisation, per layer, averaged over ``seeds``.

    One forward/backward of a cross-entropy loss on random inputs ``x ~ N(0, 1)`` of shape
    ``(batch, seq_len, d_model)`` and random targets. Returns a dict of float64 tensors:

    - ``"param"``: ``(depth,)`` the L2 norm of all of layer l's parameter gradients
      (what an optimizer step scales with);
    - ``"input"``: ``(depth,)`` the L2 norm of ∂loss/∂(input of layer l), the signal that
      reaches layer l from above.
    """
    _check_positive_int("depth", depth)
    seeds = tuple(seeds)
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    param, inp = torch.zeros(depth, dtype=torch.float64), torch.zeros(depth, dtype=torch.float64)
    for seed in seeds:
        model = build_stack(depth, norm_first, residual, d_model, n_heads, None, n_out, seed)
        g = torch.Generator().manual_seed(10_000 + seed)
        x = torch.randn(batch, seq_len, d_model, generator=g)
        y = torch.randint(n_out, (batch, seq_len), generator=g)
        inputs = []
        h = x.requires_grad_()
        for layer in model.layers:
            h.retain_grad()
            inputs.append(h)
            h = layer(h)
        loss = F.cross_entropy(model.head(model.final_norm(h)).flatten(0, 1), y.flatten())
        loss.backward()
        for i, layer in enumerate(model.layers):
            param[i] += math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in layer.parameters()))
            inp[i] += float(inputs[i].grad.double().norm())
    return {"param": param / len(seeds), "input": inp / len(seeds)}


def token_diversity(h: torch.Tensor) -> float:
    """How different the positions of ``h: (B, T, d)`` are: ``||h - mean_T(h)|| / ||h||`` in [0, 1].

    1 = the tokens share nothing (their mean is 0); 0 = every position holds the same vector
    (the "rank collapse" of deep attention stacks without skip connections).
    """
    h = h.double()
    return float((h - h.mean(dim=1, keepdim=True)).norm() / h.norm().clamp_min(1e-300))


def stream_stats(
    depth: int,
    norm_first: bool = True,
    residual: bool = True,
    d_model: int = 64,
    n_heads: int = 4,
    seq_len: int = 16,
    batch: int = 8,
    seed: int = 0,
) -> dict:
    """The residual stream at initialisation, after each layer: ``{"rms", "diversity"}``, each ``(depth + 1,)``.

    Entry 0 is the input ``x ~ N(0, 1)``; entry l is measured after layer l: ``rms`` =
    ``sqrt(mean(x_l²))``, ``diversity`` = ``token_diversity(x_l)``.
    """
    model = build_stack(depth, norm_first, residual, d_model, n_heads, seed=seed)
    g = torch.Generator().manual_seed(10_000 + seed)
    h = torch.randn(batch, seq_len, d_model, generator=g)
    rms, div = [float(h.double().pow(2).mean().sqrt())], [token_diversity(h)]
    with torch.no_grad():
        for layer in model.layers:
            h = layer(h)
            rms.append(float(h.double().pow(2).mean().sqrt()))
            div.append(token_diversity(h))
    return {"rms": torch.tensor(rms, dtype=torch.float64), "diversity": torch.tensor(div, dtype=torch.float64)}


# --------------------------------------------------------------------------- does Post-LN need warm-up?


def markov_batches(
    n_batches: int, batch: int = 16, seq_len: int = 32, vocab: int = 32, seed: int = 0, sharpness: float = 2.0
):
    """Token sequences from a fixed random first-order Markov chain, for a tiny language-modelling task.

    Returns ``(inputs, targets, entropy)``: ``inputs``/``targets`` are ``(n_batches, batch, seq_len)``
    long tensors (targets = inputs shifted by one), ``entropy`` the chain's mean next-token entropy
    in nats (the lowest loss a model can reach; ``ln vocab`` is what guessing uniformly costs).
    """
    for name, v in (("n_batches", n_batches), ("batch", batch), ("seq_len", seq_len), ("vocab", vocab)):
        _check_positive_int(name, v)
    g = torch.Generator().manual_seed(seed)
    trans = torch.softmax(sharpness * torch.randn(vocab, vocab, generator=g, dtype=torch.float64), dim=-1)
    entropy = float(-(trans * trans.log()).sum(-1).mean())
    x = torch.empty(n_batches * batch, seq_len + 1, dtype=torch.long)
    x[:, 0] = torch.randint(vocab, (n_batches * batch,), generator=g)
    for t in range(seq_len):
        x[:, t + 1] = torch.multinomial(trans[x[:, t]], 1, generator=g).squeeze(1)
    x = x.view(n_batches, batch, seq_len + 1)
    return x[..., :-1], x[..., 1:], entropy


class ToyLM(nn.Module):
    """Embedding -> ``depth`` causal blocks (Pre- or Post-LN) -> (final norm) -> logits ``(B, T, vocab)``."""

    def __init__(self, vocab: int, depth: int, norm_first: bool, d_model: int = 64, n_heads: int = 4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d_model)
        self.stack = init_xavier_(Stack(depth, d_model, n_heads, None, norm_first, True, vocab))

    def forward(self, ids):
        h = self.emb(ids)
        for layer in self.stack.layers:
            h = layer(h, is_causal=True)
        return self.stack.head(self.stack.final_norm(h))


def train_toy_lm(depth: int, norm_first: bool, lr: float, warmup: int, steps: int, seed: int = 0, data=None) -> list:
    """Train a ``ToyLM`` with Adam (β = 0.9, 0.98, as in the original paper) and return the loss per step.

    The learning rate rises linearly from ``lr/warmup`` to ``lr`` over the first ``warmup`` steps
    (``warmup=0``: constant ``lr`` from step 1). ``data`` is ``markov_batches(...)`` (default: a
    fresh one with ``steps`` batches).
    """
    _check_positive_int("steps", steps)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a non-negative integer number of steps, got {warmup!r}")
    inputs, targets, _ = markov_batches(steps) if data is None else data
    if inputs.shape[0] < steps:
        raise ValueError(f"data holds {inputs.shape[0]} batches, fewer than steps={steps}")
    vocab = int(max(inputs.max(), targets.max())) + 1
    torch.manual_seed(seed)
    model = ToyLM(vocab, depth, norm_first)
    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup) if warmup else 1.0)
    losses = []
    for step in range(steps):
        logits = model(inputs[step])
        loss = F.cross_entropy(logits.flatten(0, 1), targets[step].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses
