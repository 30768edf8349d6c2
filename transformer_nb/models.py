"""The three architecture variants from the same blocks (000 §8.6; 001 §19.7–19.8, §19.11; 003; 004 §12–14).

Only the masks and the presence of cross-attention differ:

| variant         | blocks                      | self-attention mask            | cross-attention  |
|-----------------|-----------------------------|--------------------------------|------------------|
| encoder-only    | ``EncoderLayer``            | padding                        | no               |
| decoder-only    | ``EncoderLayer``, causal    | causal (+ padding)             | no               |
| encoder–decoder | ``EncoderLayer`` + ``DecoderLayer`` | enc: padding; dec: causal + padding | dec → enc |

A GPT block *is* an encoder block run with ``is_causal=True``: ``DecoderOnly`` uses
``Encoder(..., causal=True)``. ``DecoderLayer`` (with cross-attention) is used only by the
encoder–decoder.

Also here:

- ``capture_masks`` / ``mask_kind``: run a model and record the mask every attention sublayer
  really used (what the comparison tables are generated from);
- ``trace``: every submodule's input and output shapes (and attention-weight shapes) via hooks;
- ``encoder_to_torch`` / ``decoder_to_torch`` / ``*_from_torch`` / ``to_nn_transformer``: move
  weights to and from ``nn.TransformerEncoder`` / ``nn.TransformerDecoder`` / ``nn.Transformer``;
- the three training objectives on toy batches: ``mlm_batch`` (BERT's masked LM), ``lm_batch``
  (GPT's next token), ``span_corruption`` (T5), and ``describe_objective``, which names an
  objective from the (inputs, targets) it was given.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.block import DecoderLayer, EncoderLayer, make_norm
from transformer_nb.block import copy_from_torch as _layer_from_torch
from transformer_nb.block import to_torch as _layer_to_torch
from transformer_nb.masks import causal_mask, cross_attention_mask, key_padding
from transformer_nb.multihead import MultiHeadAttention, record_attention
from transformer_nb.positional import SinusoidalPositionalEncoding, embedding_scale

IGNORE = -100  # F.cross_entropy's default ignore_index: positions with this target carry no loss


# --------------------------------------------------------------------------- input checks


def _check_keep(keep, b: int, t: int, name: str) -> None:
    """``keep`` must be None or a ``(B, T)`` bool tensor matching the sequence it describes."""
    if keep is None:
        return
    if not isinstance(keep, torch.Tensor):
        raise TypeError(f"{name} must be a (B, T) bool torch.Tensor (True = real token), got {type(keep).__name__}")
    if keep.dtype != torch.bool:
        raise TypeError(
            f"{name} must be a bool mask (True = real token, False = padding), got dtype {keep.dtype}; "
            f"for 0/1 values use {name}.bool()"
        )
    if tuple(keep.shape) != (b, t):
        raise ValueError(
            f"{name} must have the shape (B, T) = ({b}, {t}) of the sequence it describes, got {tuple(keep.shape)}"
        )


def _check_hidden(x, d_model: int, name: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a (B, T, d_model={d_model}) torch.Tensor, got {type(x).__name__}")
    if x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(f"{name} must have shape (B, T, d_model={d_model}), got {tuple(x.shape)}")


# --------------------------------------------------------------------------- embedding and stacks


class Embedder(nn.Module):
    """Token embedding × sqrt(d_model) plus sinusoidal positions: ``(B, T) ids -> (B, T, d)``."""

    def __init__(self, vocab_size: int, d_model: int, max_len: int, dropout: float = 0.0, pad_id: int | None = None):
        super().__init__()
        self.vocab_size = vocab_size
        self.tok = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        self.pos = SinusoidalPositionalEncoding(d_model, max_len)
        self.scale = embedding_scale(d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if not isinstance(ids, torch.Tensor):
            raise TypeError(f"token ids must be a (B, T) integer torch.Tensor, got {type(ids).__name__}")
        if ids.dim() != 2:
            raise ValueError(f"token ids must have shape (B, T), got {tuple(ids.shape)}")
        if ids.is_floating_point() or ids.dtype == torch.bool:
            raise TypeError(f"token ids must be integers (torch.long), got dtype {ids.dtype}")
        if ids.numel() and (ids.min() < 0 or ids.max() >= self.vocab_size):
            raise ValueError(
                f"token ids must lie in [0, {self.vocab_size}), got range [{int(ids.min())}, {int(ids.max())}]"
            )
        return self.drop(self.pos(self.tok(ids) * self.scale))


class Encoder(nn.Module):
    """A stack of ``EncoderLayer``: ``(B, S, d), keep (B, S) -> (B, S, d)``.

    ``causal=False``: bidirectional (BERT, the original encoder). ``causal=True``: every layer also
    applies the causal mask, which turns the same stack into a GPT-style decoder-only stack.
    """

    def __init__(
        self, d_model, n_heads, d_ff, n_layers, dropout=0.0, norm_first=True, activation="relu", causal: bool = False
    ):
        super().__init__()
        self.d_model, self.causal = d_model, causal
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, n_heads, d_ff, dropout, norm_first, activation) for _ in range(n_layers)
        )
        self.norm = make_norm("layer", d_model) if norm_first else nn.Identity()

    def forward(self, x, keep=None):
        _check_hidden(x, self.d_model, "the encoder input x")
        _check_keep(keep, x.shape[0], x.shape[1], "keep")
        mask = None if keep is None else key_padding(keep, x.shape[1])
        for layer in self.layers:
            x = layer(x, mask=mask, is_causal=self.causal)
        return self.norm(x)


class Decoder(nn.Module):
    """A stack of ``DecoderLayer``: ``(B, T, d), memory (B, S, d) -> (B, T, d)``."""

    def __init__(self, d_model, n_heads, d_ff, n_layers, dropout=0.0, norm_first=True, activation="relu"):
        super().__init__()
        self.d_model = d_model
        self.layers = nn.ModuleList(
            DecoderLayer(d_model, n_heads, d_ff, dropout, norm_first, activation) for _ in range(n_layers)
        )
        self.norm = make_norm("layer", d_model) if norm_first else nn.Identity()

    def forward(self, x, memory, keep=None, memory_keep=None):
        _check_hidden(x, self.d_model, "the decoder input x")
        _check_hidden(memory, self.d_model, "memory (the encoder output)")
        if memory.shape[0] != x.shape[0]:
            raise ValueError(f"memory has batch size {memory.shape[0]} but the decoder input has {x.shape[0]}")
        _check_keep(keep, x.shape[0], x.shape[1], "keep (target padding)")
        _check_keep(memory_keep, memory.shape[0], memory.shape[1], "memory_keep (source padding)")
        t = x.shape[1]
        self_mask = None if keep is None else key_padding(keep, t)
        memory_mask = None if memory_keep is None else cross_attention_mask(memory_keep, t)
        for layer in self.layers:
            x = layer(x, memory, self_mask=self_mask, memory_mask=memory_mask)
        return self.norm(x)


# --------------------------------------------------------------------------- the three variants


class EncoderDecoder(nn.Module):
    """The original Transformer for sequence-to-sequence tasks.

    - ``encode(src (B, S), src_keep (B, S) | None) -> memory (B, S, d)``
    - ``decode(tgt_in (B, T), memory, src_keep, tgt_keep) -> logits (B, T, tgt_vocab)``
    - ``forward(src, tgt_in, src_keep=None, tgt_keep=None) -> logits``
    ``*_keep`` are bool padding masks, True at real tokens.
    ``tie_weights``: the output projection shares the target embedding's ``(V, d)`` matrix
    (saves ``|V|·d`` parameters; 001 §19.8.3). ``share_embeddings``: source and target use one
    embedding table (needs ``src_vocab == tgt_vocab``; the original paper shares all three).
    """

    def __init__(
        self,
        src_vocab: int,
        tgt_vocab: int,
        d_model: int = 64,
        n_heads: int = 4,
        n_enc_layers: int = 2,
        n_dec_layers: int = 2,
        d_ff: int = 256,
        dropout: float = 0.0,
        max_len: int = 256,
        norm_first: bool = True,
        pad_id: int | None = 0,
        activation: str = "relu",
        tie_weights: bool = False,
        share_embeddings: bool = False,
    ):
        super().__init__()
        if share_embeddings and src_vocab != tgt_vocab:
            raise ValueError(f"share_embeddings needs one vocabulary, got src_vocab={src_vocab}, tgt_vocab={tgt_vocab}")
        self.src_embed = Embedder(src_vocab, d_model, max_len, dropout, pad_id)
        self.tgt_embed = Embedder(tgt_vocab, d_model, max_len, dropout, pad_id)
        if share_embeddings:
            self.tgt_embed.tok.weight = self.src_embed.tok.weight
        self.encoder = Encoder(d_model, n_heads, d_ff, n_enc_layers, dropout, norm_first, activation)
        self.decoder = Decoder(d_model, n_heads, d_ff, n_dec_layers, dropout, norm_first, activation)
        self.generator = nn.Linear(d_model, tgt_vocab)
        if tie_weights:
            self.generator.weight = self.tgt_embed.tok.weight

    def encode(self, src, src_keep=None):
        if isinstance(src, torch.Tensor) and src.dim() == 2:
            _check_keep(src_keep, src.shape[0], src.shape[1], "src_keep")
        return self.encoder(self.src_embed(src), src_keep)

    def decode(self, tgt_in, memory, src_keep=None, tgt_keep=None):
        if isinstance(tgt_in, torch.Tensor) and tgt_in.dim() == 2:
            _check_keep(tgt_keep, tgt_in.shape[0], tgt_in.shape[1], "tgt_keep")
        if isinstance(memory, torch.Tensor) and memory.dim() == 3:
            _check_keep(src_keep, memory.shape[0], memory.shape[1], "src_keep")
        return self.generator(self.decoder(self.tgt_embed(tgt_in), memory, tgt_keep, src_keep))

    def forward(self, src, tgt_in, src_keep=None, tgt_keep=None):
        return self.decode(tgt_in, self.encode(src, src_keep), src_keep, tgt_keep)


class EncoderOnly(nn.Module):
    """BERT-style: ``Embedder`` -> bidirectional ``Encoder`` -> a masked-LM head (and an optional classifier).

    - ``encode(ids (B, T), keep (B, T) | None) -> hidden (B, T, d)``
    - ``forward(ids, keep=None) -> MLM logits (B, T, vocab)``: a prediction at every position
      (the loss uses only the masked ones, see ``mlm_batch``)
    - ``classify(ids, keep=None) -> (B, n_classes)`` from the hidden state at position 0 (the
      ``[CLS]`` token the caller puts first; 000 §8.6.1, 004 §13.1)
    ``tie_weights``: the MLM head shares the embedding matrix (no bias), as in BERT.
    """

    def __init__(
        self,
        vocab: int,
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 2,
        d_ff: int = 256,
        dropout: float = 0.0,
        max_len: int = 256,
        norm_first: bool = True,
        pad_id: int | None = 0,
        activation: str = "relu",
        n_classes: int | None = None,
        tie_weights: bool = True,
    ):
        super().__init__()
        self.embed = Embedder(vocab, d_model, max_len, dropout, pad_id)
        self.encoder = Encoder(d_model, n_heads, d_ff, n_layers, dropout, norm_first, activation, causal=False)
        self.mlm_head = nn.Linear(d_model, vocab, bias=False)
        if tie_weights:
            self.mlm_head.weight = self.embed.tok.weight
        self.classifier = nn.Linear(d_model, n_classes) if n_classes else None

    def encode(self, ids, keep=None):
        if isinstance(ids, torch.Tensor) and ids.dim() == 2:
            _check_keep(keep, ids.shape[0], ids.shape[1], "keep")
        return self.encoder(self.embed(ids), keep)

    def forward(self, ids, keep=None):
        return self.mlm_head(self.encode(ids, keep))

    def classify(self, ids, keep=None):
        if self.classifier is None:
            raise ValueError("this EncoderOnly has no classifier: build it with n_classes=<number of classes>")
        return self.classifier(self.encode(ids, keep)[:, 0])


class DecoderOnly(nn.Module):
    """GPT-style: ``Embedder`` -> causal stack of the *same* ``EncoderLayer`` -> LM head.

    ``forward(ids (B, T), keep (B, T) | None) -> logits (B, T, vocab)``; the logits at position t
    predict token t+1 and depend on tokens 0..t only. No cross-attention, no ``DecoderLayer``.
    ``tie_weights``: the LM head shares the embedding matrix (no bias), as in GPT-2.
    """

    def __init__(
        self,
        vocab: int,
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 2,
        d_ff: int = 256,
        dropout: float = 0.0,
        max_len: int = 256,
        norm_first: bool = True,
        pad_id: int | None = 0,
        activation: str = "relu",
        tie_weights: bool = True,
    ):
        super().__init__()
        self.embed = Embedder(vocab, d_model, max_len, dropout, pad_id)
        self.blocks = Encoder(d_model, n_heads, d_ff, n_layers, dropout, norm_first, activation, causal=True)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        if tie_weights:
            self.lm_head.weight = self.embed.tok.weight

    def forward(self, ids, keep=None):
        if isinstance(ids, torch.Tensor) and ids.dim() == 2:
            _check_keep(keep, ids.shape[0], ids.shape[1], "keep")
        return self.lm_head(self.blocks(self.embed(ids), keep))


# --------------------------------------------------------------------------- what each sublayer attends with


def _effective_mask(mask, is_causal: bool, b: int, t_q: int, t_k: int, device) -> torch.Tensor:
    """The bool ``(B, T_q, T_k)`` "may attend" pattern that ``MultiHeadAttention`` applies."""
    eff = torch.ones(b, t_q, t_k, dtype=torch.bool, device=device)
    if mask is not None:
        m = mask if mask.dtype == torch.bool else ~torch.isneginf(mask)
        m = m.expand(*m.shape[:-2], t_q, t_k)
        while m.dim() > 3:  # (B, h, T_q, T_k): a key is open if open in every head
            m = m.all(dim=1) if m.dim() == 4 else m.all(dim=0)
        eff = eff & m
    if is_causal:
        eff = eff & causal_mask(t_q, t_k, device=device)
    return eff


def capture_masks(model: nn.Module, *args, **kwargs) -> list:
    """Run ``model(*args, **kwargs)`` (no grad) and record what every ``MultiHeadAttention`` call used.

    Returns one dict per call, in execution order: ``name`` (the module path), ``kind``
    (``"self"`` if keys are the queries' own sequence, else ``"cross"``), ``q_shape``,
    ``k_shape``, ``mask`` (bool ``(B, T_q, T_k)``, True = may attend, causal part included) and
    ``label`` (``mask_kind`` of it).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"capture_masks needs an nn.Module, got {type(model).__name__}")
    names = {m: n for n, m in model.named_modules()}
    records, handles = [], []

    def pre_hook(module, args_, kwargs_):
        query = args_[0] if args_ else kwargs_.get("query")
        key = args_[1] if len(args_) > 1 else kwargs_.get("key")
        key = query if key is None else key
        b, t_q, t_k = query.shape[0], query.shape[1], key.shape[1]
        eff = _effective_mask(kwargs_.get("mask"), bool(kwargs_.get("is_causal", False)), b, t_q, t_k, query.device)
        kind = "self" if key is query else "cross"
        records.append(
            {
                "name": names[module],
                "kind": kind,
                "q_shape": tuple(query.shape),
                "k_shape": tuple(key.shape),
                "mask": eff,
                "label": mask_kind(eff, kind),
            }
        )

    for m in model.modules():
        if isinstance(m, MultiHeadAttention):
            handles.append(m.register_forward_pre_hook(pre_hook, with_kwargs=True))
    try:
        with torch.no_grad():
            model(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    return records


def mask_kind(mask: torch.Tensor, kind: str = "self") -> str:
    """Name a bool ``(B, T_q, T_k)`` "may attend" pattern from what it blocks.

    - ``"causal"`` part: a self-attention pattern that blocks every key after its query (j > i);
    - ``"padding"`` part: some key is blocked for a reason other than being in the future
      (a whole padded column);
    - ``"none"``: nothing is blocked.
    """
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.dim() != 3:
        raise ValueError(
            f"mask_kind expects a bool (B, T_q, T_k) mask, got "
            f"{tuple(mask.shape) if isinstance(mask, torch.Tensor) else type(mask).__name__}"
        )
    t_q, t_k = mask.shape[-2:]
    future = ~causal_mask(t_q, t_k, device=mask.device) if t_k >= t_q else torch.zeros(t_q, t_k, dtype=torch.bool)
    causal = kind == "self" and t_q == t_k and t_q > 1 and not bool((mask & future).any())
    blocked_not_future = ~mask & ~future if causal else ~mask
    parts = (["causal"] if causal else []) + (["padding"] if bool(blocked_not_future.any()) else [])
    return " + ".join(parts) if parts else "none"


# --------------------------------------------------------------------------- parameter bookkeeping

PARAM_GROUPS = ("embeddings", "self-attention", "cross-attention", "feed-forward", "norms", "output head")


def parameter_breakdown(model: nn.Module) -> dict:
    """Parameters by role, each shared (tied) tensor counted once, under the first name that owns it.

    Groups: ``PARAM_GROUPS`` (token tables; ``self_attn``; ``cross_attn``; ``ff``; every norm;
    the untied part of the output layer and any classifier) plus ``"total"`` (= ``numel`` of
    ``model.parameters()``).
    """
    out = dict.fromkeys(PARAM_GROUPS, 0)
    for name, p in model.named_parameters():  # named_parameters() yields a shared tensor once
        if ".tok." in name or name.startswith("tok."):
            group = "embeddings"
        elif "cross_attn" in name:
            group = "cross-attention"
        elif "self_attn" in name:
            group = "self-attention"
        elif ".ff." in name:
            group = "feed-forward"
        elif "norm" in name:
            group = "norms"
        else:
            group = "output head"
        out[group] += p.numel()
    out["total"] = sum(p.numel() for p in model.parameters())
    return out


# --------------------------------------------------------------------------- shape tracing


def trace(model: nn.Module, *args, **kwargs) -> list:
    """Run ``model(*args, **kwargs)`` (no grad) and record every submodule call in execution order.

    One dict per call: ``name``, ``type``, ``inputs`` (a list of ``(argument, shape)`` for every
    tensor argument, keyword arguments included), ``out`` (the output shape) and, for attention,
    ``weights`` (the shape of its attention weights ``(B, h, T_q, T_k)``). Dropout is skipped.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"trace needs an nn.Module, got {type(model).__name__}")
    records, handles = [], []

    def hook(name):
        def fn(module, args_, kwargs_, output):
            ins = [(f"arg{i}", tuple(a.shape)) for i, a in enumerate(args_) if isinstance(a, torch.Tensor)]
            ins += [(k, tuple(v.shape)) for k, v in kwargs_.items() if isinstance(v, torch.Tensor)]
            out = output[0] if isinstance(output, (tuple, list)) else output
            rec = {
                "name": name or type(module).__name__,
                "type": type(module).__name__,
                "inputs": ins,
                "out": tuple(out.shape) if isinstance(out, torch.Tensor) else None,
            }
            if isinstance(module, MultiHeadAttention) and module.last_weights is not None:
                rec["weights"] = tuple(module.last_weights.shape)
            records.append(rec)

        return fn

    for name, module in model.named_modules():
        if not isinstance(module, nn.Dropout):
            handles.append(module.register_forward_hook(hook(name), with_kwargs=True))
    try:
        with torch.no_grad(), record_attention(model):
            model(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    return records


# --------------------------------------------------------------------------- PyTorch's nn.Transformer modules


def _final_norm_to_torch(ours: nn.Module):
    if isinstance(ours, nn.Identity):
        return None
    theirs = nn.LayerNorm(ours.normalized_shape, eps=ours.eps, device=ours.weight.device, dtype=ours.weight.dtype)
    with torch.no_grad():
        theirs.weight.copy_(ours.weight)
        theirs.bias.copy_(ours.bias)
    return theirs


def encoder_to_torch(ours: Encoder) -> nn.TransformerEncoder:
    """A new ``nn.TransformerEncoder`` (``batch_first=True``, dropout 0) with ``ours``' weights.

    Call it as ``theirs(x, mask=~causal, src_key_padding_mask=~keep, is_causal=...)`` (torch's
    masks say True = blocked). A causal ``Encoder`` (decoder-only stack) needs the causal mask.
    """
    if not isinstance(ours, Encoder):
        raise TypeError(f"expected an Encoder, got {type(ours).__name__}")
    layers = [_layer_to_torch(layer) for layer in ours.layers]
    theirs = nn.TransformerEncoder(
        layers[0], num_layers=len(layers), norm=_final_norm_to_torch(ours.norm), enable_nested_tensor=False
    )
    theirs.layers = nn.ModuleList(layers)
    return theirs.train(ours.training)


def decoder_to_torch(ours: Decoder) -> nn.TransformerDecoder:
    """A new ``nn.TransformerDecoder`` (``batch_first=True``, dropout 0) with ``ours``' weights.

    Call it with ``tgt_mask=~causal_mask(T)`` (our decoder is always causal), ``tgt_key_padding_mask=~tgt_keep``
    and ``memory_key_padding_mask=~src_keep``.
    """
    if not isinstance(ours, Decoder):
        raise TypeError(f"expected a Decoder, got {type(ours).__name__}")
    layers = [_layer_to_torch(layer) for layer in ours.layers]
    theirs = nn.TransformerDecoder(layers[0], num_layers=len(layers), norm=_final_norm_to_torch(ours.norm))
    theirs.layers = nn.ModuleList(layers)
    return theirs.train(ours.training)


@torch.no_grad()
def _stack_from_torch(ours, theirs, kind: str):
    if len(ours.layers) != len(theirs.layers):
        raise ValueError(f"layer counts differ: ours has {len(ours.layers)}, torch's {kind} has {len(theirs.layers)}")
    has_norm = not isinstance(ours.norm, nn.Identity)
    if has_norm != (theirs.norm is not None):
        raise ValueError(
            f"final norms differ: ours {'has' if has_norm else 'has no'} final LayerNorm, torch's "
            f"{kind} {'has' if theirs.norm is not None else 'has none'}"
        )
    for mine, other in zip(ours.layers, theirs.layers):
        _layer_from_torch(mine, other)
    if has_norm:
        ours.norm.weight.copy_(theirs.norm.weight)
        ours.norm.bias.copy_(theirs.norm.bias)
    return ours


def encoder_from_torch(ours: Encoder, theirs: nn.TransformerEncoder) -> Encoder:
    """Copy an ``nn.TransformerEncoder``'s weights into ``ours`` (same depth, widths, norm placement)."""
    if not isinstance(ours, Encoder) or not isinstance(theirs, nn.TransformerEncoder):
        raise TypeError(
            f"expected (Encoder, nn.TransformerEncoder), got ({type(ours).__name__}, {type(theirs).__name__})"
        )
    return _stack_from_torch(ours, theirs, "TransformerEncoder")


def decoder_from_torch(ours: Decoder, theirs: nn.TransformerDecoder) -> Decoder:
    """Copy an ``nn.TransformerDecoder``'s weights into ``ours`` (same depth, widths, norm placement)."""
    if not isinstance(ours, Decoder) or not isinstance(theirs, nn.TransformerDecoder):
        raise TypeError(
            f"expected (Decoder, nn.TransformerDecoder), got ({type(ours).__name__}, {type(theirs).__name__})"
        )
    return _stack_from_torch(ours, theirs, "TransformerDecoder")


def to_nn_transformer(model: EncoderDecoder) -> nn.Transformer:
    """``nn.Transformer`` holding the encoder and decoder stacks of ``model`` (not embeddings or generator).

    ``nn.Transformer`` always ends both stacks with a LayerNorm, so only a Pre-LN model
    (``norm_first=True``, which has those final norms) has an exact counterpart.
    """
    if not isinstance(model, EncoderDecoder):
        raise TypeError(f"expected an EncoderDecoder, got {type(model).__name__}")
    if isinstance(model.encoder.norm, nn.Identity):
        raise ValueError(
            "nn.Transformer always applies a final LayerNorm after each stack; this Post-LN "
            "model (norm_first=False) has none, so no nn.Transformer computes the same function. "
            "Compare the stacks with encoder_to_torch / decoder_to_torch instead"
        )
    enc, dec = encoder_to_torch(model.encoder), decoder_to_torch(model.decoder)
    states = {k: v.clone() for k, v in enc.state_dict().items()}, {k: v.clone() for k, v in dec.state_dict().items()}
    l0 = enc.layers[0]
    theirs = nn.Transformer(
        l0.self_attn.embed_dim,
        l0.self_attn.num_heads,
        len(enc.layers),
        len(dec.layers),
        l0.linear1.out_features,
        dropout=0.0,
        batch_first=True,
        norm_first=True,
        custom_encoder=enc,
        custom_decoder=dec,
    )
    # nn.Transformer re-initialises every matrix after building, custom stacks included: copy afterwards
    theirs.encoder.load_state_dict(states[0])
    theirs.decoder.load_state_dict(states[1])
    return theirs.train(model.training)


def torch_masks(src_keep=None, tgt_keep=None, t: int | None = None) -> dict:
    """Our masks in the keyword arguments of ``nn.Transformer*`` (bool, **True = blocked**).

    ``src_keep``/``tgt_keep``: ``(B, S)``/``(B, T)`` True at real tokens; ``t``: the target length
    for the causal ``tgt_mask`` (defaults to ``tgt_keep``'s length).
    """
    out = {}
    if src_keep is not None:
        out["src_key_padding_mask"] = ~src_keep
        out["memory_key_padding_mask"] = ~src_keep
    if tgt_keep is not None:
        out["tgt_key_padding_mask"] = ~tgt_keep
        t = tgt_keep.shape[1] if t is None else t
    if t is not None:
        device = tgt_keep.device if tgt_keep is not None else None
        out["tgt_mask"] = ~causal_mask(t, device=device)
        out["tgt_is_causal"] = True
    return out


# --------------------------------------------------------------------------- the three objectives


def lm_batch(ids: torch.Tensor, keep: torch.Tensor | None = None, ignore_index: int = IGNORE):
    """Causal LM (GPT): ``inputs = ids[:, :-1]``, ``targets = ids[:, 1:]``; padded targets -> ``ignore_index``.

    Returns ``(inputs, targets, inputs_keep)``, all ``(B, T-1)``.
    """
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.shape[1] < 2:
        raise ValueError(
            f"lm_batch needs ids of shape (B, T) with T >= 2, got "
            f"{tuple(ids.shape) if isinstance(ids, torch.Tensor) else type(ids).__name__}"
        )
    keep = torch.ones_like(ids, dtype=torch.bool) if keep is None else keep
    _check_keep(keep, ids.shape[0], ids.shape[1], "keep")
    targets = ids[:, 1:].masked_fill(~keep[:, 1:], ignore_index)
    return ids[:, :-1], targets, keep[:, :-1]


def mlm_batch(
    ids: torch.Tensor,
    keep: torch.Tensor | None,
    mask_id: int,
    vocab: int,
    p: float = 0.15,
    generator: torch.Generator | None = None,
    ignore_index: int = IGNORE,
    protect: int = 0,
):
    """Masked LM (BERT): choose ~``p`` of the real tokens; the loss is on those only.

    Of the chosen tokens 80 % become ``mask_id``, 10 % a random token, 10 % stay (BERT's recipe).
    The first ``protect`` positions (e.g. ``[CLS]``) are never chosen; at least one token per
    sequence is. Returns ``(inputs, targets)``: ``targets`` holds the original token where chosen
    and ``ignore_index`` elsewhere.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p is the fraction of tokens to mask, in (0, 1), got {p}")
    keep = torch.ones_like(ids, dtype=torch.bool) if keep is None else keep
    _check_keep(keep, ids.shape[0], ids.shape[1], "keep")
    eligible = keep.clone()
    eligible[:, :protect] = False
    u = torch.rand(ids.shape, generator=generator)
    chosen = (u < p) & eligible
    first = torch.where(eligible, u, torch.full_like(u, 2.0)).argmin(dim=1)  # guarantee one per row
    chosen[torch.arange(ids.shape[0]), first] |= eligible.any(dim=1)
    r = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(vocab, ids.shape, generator=generator)
    inputs = torch.where(chosen & (r < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(chosen & (r >= 0.8) & (r < 0.9), random_ids, inputs)
    targets = ids.masked_fill(~chosen, ignore_index)
    return inputs, targets


def span_corruption(
    ids: torch.Tensor,
    keep: torch.Tensor | None,
    sentinel_start: int,
    pad_id: int = 0,
    eos_id: int | None = None,
    noise: float = 0.15,
    mean_span: int = 3,
    generator: torch.Generator | None = None,
):
    """T5's span corruption on a padded batch: drop spans, mark each with a sentinel, predict them.

    Per sequence: ``n_spans = max(1, round(noise·len / mean_span))`` non-overlapping spans of
    ``mean_span`` tokens (shorter if the sequence is short) are removed from the source; span k is
    replaced by sentinel ``sentinel_start + k``. The target is ``s_0 span_0 s_1 span_1 ... [eos]``.
    Returns ``(src, src_keep, tgt, tgt_keep)``, right-padded with ``pad_id``.
    """
    keep = torch.ones_like(ids, dtype=torch.bool) if keep is None else keep
    _check_keep(keep, ids.shape[0], ids.shape[1], "keep")
    srcs, tgts = [], []
    for row, k in zip(ids.tolist(), keep.tolist()):
        seq = [tok for tok, real in zip(row, k) if real]
        n = len(seq)
        span = max(1, min(mean_span, n // 2))
        n_spans = max(1, min(round(noise * n / mean_span), n // (span + 1)))
        # choose span starts among positions where spans cannot touch: slots of length span+1
        slots = max(1, n // (span + 1))
        picked = sorted(torch.randperm(slots, generator=generator)[:n_spans].tolist())
        starts = [s * (span + 1) for s in picked]
        src, tgt, pos = [], [], 0
        for k_, s in enumerate(starts):
            src += seq[pos:s] + [sentinel_start + k_]
            tgt += [sentinel_start + k_] + seq[s : s + span]
            pos = s + span
        src += seq[pos:]
        if eos_id is not None:
            tgt.append(eos_id)
        srcs.append(src)
        tgts.append(tgt)

    def pad(rows):
        t = max(len(r) for r in rows)
        out = torch.full((len(rows), t), pad_id, dtype=torch.long)
        m = torch.zeros(len(rows), t, dtype=torch.bool)
        for i, r in enumerate(rows):
            out[i, : len(r)] = torch.tensor(r, dtype=torch.long)
            m[i, : len(r)] = True
        return out, m

    return (*pad(srcs), *pad(tgts))


def lm_loss(logits: torch.Tensor, targets: torch.Tensor, ignore_index: int = IGNORE) -> torch.Tensor:
    """Mean cross-entropy over the positions whose target is not ``ignore_index``: ``(B, T, V), (B, T) -> ()``."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=ignore_index)


def describe_objective(
    inputs: torch.Tensor,
    targets: torch.Tensor,
    source: torch.Tensor | None = None,
    original: torch.Tensor | None = None,
    mask_id: int | None = None,
    special=(),
    ignore_index: int = IGNORE,
) -> dict:
    """Name the objective of a training batch from how its ``targets`` relate to what the model sees.

    ``inputs``/``targets``: what the (decoder or encoder) is fed and what its loss predicts, ``(B, T)``
    each, ``ignore_index`` where no loss is taken. ``source``: the encoder's input, if any.
    ``original``: the clean sequences the batch was made from (for span corruption);
    ``special``: ids that are markers, not text (padding, BOS/EOS, sentinels). Measured facts:

    - ``loss_fraction``: the fraction of positions with a loss term;
    - ``next_token``: every target is the next input token (``targets[:, t] == inputs[:, t+1]``);
    - ``hidden_by_mask``: the fraction of loss positions whose input is ``mask_id``;
    - ``has_source``: a separate sequence conditions the prediction;
    - ``targets_are_dropped_spans``: the target's text is exactly the original text missing from the source.

    Returns those facts and ``name``.
    """
    valid = targets != ignore_index
    frac = float(valid.float().mean())
    both = valid[:, :-1]
    next_token = bool(both.any()) and bool(((targets[:, :-1] == inputs[:, 1:]) | ~both).all())
    hidden = float((inputs[valid] == mask_id).float().mean()) if mask_id is not None and valid.any() else 0.0
    dropped = False
    if source is not None and original is not None:
        special = {int(s) for s in special} | {ignore_index}
        text = lambda row: sorted(t for t in row if t not in special)
        dropped = True
        for src_row, tgt_row, orig_row in zip(source.tolist(), targets.tolist(), original.tolist()):
            removed = text(orig_row)
            for t in text(src_row):
                if t in removed:
                    removed.remove(t)
            dropped = dropped and removed == text(tgt_row)
    if source is not None and dropped:
        name = "span corruption (T5): predict the spans dropped from the source"
    elif source is not None and next_token:
        name = "seq2seq: next target token given the source"
    elif next_token:
        name = "causal LM: next token at every position"
    elif hidden >= 0.5:
        name = "masked LM: the hidden tokens, from both sides"
    else:
        name = "unknown"
    return {
        "loss_fraction": frac,
        "next_token": next_token,
        "hidden_by_mask": hidden,
        "has_source": source is not None,
        "targets_are_dropped_spans": dropped,
        "name": name,
    }
