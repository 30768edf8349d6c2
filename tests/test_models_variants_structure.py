"""The three variants are built from the same blocks and differ only in masks and cross-attention,
as recorded from the masks really used at run time; the objectives are recognised from the batches;
parameter bookkeeping (the causal mask is free, tying saves |V|·d) holds; the shape trace is complete."""

import torch

from transformer_nb.core.block import DecoderLayer, EncoderLayer
from transformer_nb.core.masks import padding_mask
from transformer_nb.core.models import EncoderDecoder, Transformer
from transformer_nb.objectives import describe_objective, lm_batch, mlm_batch, span_corruption
from transformer_nb.params import numel_breakdown
from transformer_nb.probes import capture_masks, mask_kind, trace_shapes

V = 30


def decoder_only(n_layers: int, **fields) -> Transformer:
    """The decoder-only ``Transformer`` at these tests' sizes (d_model 32, 4 heads, d_ff 64)."""
    return Transformer(vocab=V, d_model=32, n_heads=4, n_layers=n_layers, d_ff=64, **fields)


def encoder_only(n_layers: int) -> Transformer:
    """The same ``Transformer``, ``arch="encoder"`` (BERT-style, bidirectional)."""
    return decoder_only(n_layers, arch="encoder")


def _numel(m):
    return sum(p.numel() for p in m.parameters())


def test_legacy_positional_signature_still_works():
    m = EncoderDecoder(V, V + 1, 32, 4, 1, 2, 64, 0.0, 20, True, 0, "gelu")
    logits = m(torch.ones(2, 3, dtype=torch.long), torch.ones(2, 4, dtype=torch.long))
    assert logits.shape == (2, 4, V + 1) and len(m.decoder.layers) == 2


def test_recorded_masks_name_each_sublayer():
    torch.manual_seed(0)
    ids = torch.randint(1, V, (2, 6))
    keep = padding_mask([6, 4], 6)
    labels = lambda recs: [(r["name"], r["kind"], r["label"]) for r in recs]
    assert labels(capture_masks(encoder_only(2), ids, keep=keep)) == [
        ("blocks.layers.0.self_attn", "self", "padding"),
        ("blocks.layers.1.self_attn", "self", "padding"),
    ]
    assert labels(capture_masks(decoder_only(1), ids, keep=keep)) == [
        ("blocks.layers.0.self_attn", "self", "causal + padding")
    ]
    assert labels(capture_masks(decoder_only(1), ids)) == [("blocks.layers.0.self_attn", "self", "causal")]
    recs = capture_masks(EncoderDecoder(V, V, 32, 4, 1, 1, 64), ids, ids[:, :4], keep, padding_mask([4, 2], 4))
    assert labels(recs) == [
        ("encoder.layers.0.self_attn", "self", "padding"),
        ("decoder.layers.0.self_attn", "self", "causal + padding"),
        ("decoder.layers.0.cross_attn", "cross", "padding"),
    ]
    assert recs[2]["mask"].shape == (2, 4, 6) and not recs[2]["mask"][1, :, 4:].any()


def test_same_blocks_and_the_mask_is_free():
    enc, dec = encoder_only(3), decoder_only(3)
    assert {type(m) for m in enc.blocks.layers} == {type(m) for m in dec.blocks.layers} == {EncoderLayer}
    assert not any(isinstance(m, DecoderLayer) for m in dec.modules())
    assert _numel(enc) == _numel(dec)


def test_tying_saves_vocab_times_d():
    a = EncoderDecoder(V, V, 32, 4, 1, 1, 64)
    b = EncoderDecoder(V, V, 32, 4, 1, 1, 64, tie_weights=True)
    c = EncoderDecoder(V, V, 32, 4, 1, 1, 64, tie_weights=True, share_embeddings=True)
    assert _numel(a) - _numel(b) == V * 32 and _numel(b) - _numel(c) == V * 32
    assert b.generator.weight is b.tgt_embed.tok.weight
    assert _numel(decoder_only(1, tie_output=False)) - _numel(decoder_only(1)) == V * 32


def test_objectives_are_recognised_from_batches():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, 20, (4, 12), generator=g)
    keep = padding_mask([12, 9, 7, 12], 12)
    ids = ids.masked_fill(~keep, 0)
    x, y, _ = lm_batch(ids, keep)
    assert describe_objective(x, y)["name"].startswith("causal LM")
    xm, ym = mlm_batch(ids, keep, mask_id=1, vocab=20, generator=g)
    facts = describe_objective(xm, ym, mask_id=1)
    assert facts["name"].startswith("masked LM") and 0 < facts["loss_fraction"] < 0.5
    src, sk, tgt, tk = span_corruption(ids, keep, sentinel_start=20, eos_id=2, generator=g)
    tgt_in, tgt_out, _ = lm_batch(tgt, tk)
    assert describe_objective(tgt_in, tgt_out, source=src, original=ids, special=[0, 2, *range(20, 30)])[
        "name"
    ].startswith("span")
    shuffled = tgt_out.clone()
    shuffled[tgt_out >= 3] = 5  # wrong targets: not the dropped spans any more
    assert (
        describe_objective(tgt_in, shuffled, source=src, original=ids, special=[0, 2, *range(20, 30)])["name"]
        != describe_objective(tgt_in, tgt_out, source=src, original=ids, special=[0, 2, *range(20, 30)])["name"]
    )


def test_span_corruption_drops_and_marks_spans():
    ids = torch.arange(3, 23)[None]  # 20 distinct tokens
    src, sk, tgt, tk = span_corruption(ids, None, sentinel_start=100, generator=torch.Generator().manual_seed(1))
    s, t = src[0][sk[0]].tolist(), tgt[0][tk[0]].tolist()
    assert sorted([x for x in s if x < 100] + [x for x in t if x < 100]) == list(range(3, 23))
    assert [x for x in s if x >= 100] == [x for x in t if x >= 100] == [100]


def test_mask_kind_labels():
    full = torch.ones(1, 3, 3, dtype=torch.bool)
    tri = torch.ones(3, 3, dtype=torch.bool).tril()[None]
    pad = full.clone()
    pad[..., 2] = False
    assert mask_kind(full) == "none" and mask_kind(tri) == "causal" and mask_kind(pad) == "padding"
    assert mask_kind(tri & pad) == "causal + padding"
    assert mask_kind(tri, "cross") == "padding"  # cross-attention is never called causal


def test_trace_records_every_sublayer_with_attention_shapes():
    torch.manual_seed(0)
    m = EncoderDecoder(V, V, 48, 6, 2, 2, 96).eval()
    recs = trace_shapes(m, torch.ones(1, 3, dtype=torch.long), torch.ones(1, 1, dtype=torch.long))
    by = {r["name"]: r for r in recs}
    assert by["encoder.layers.1.self_attn"]["weights"] == (1, 6, 3, 3)
    assert by["decoder.layers.0.cross_attn"]["weights"] == (1, 6, 1, 3)
    assert by["decoder.layers.0.cross_attn"]["inputs"][:2] == [("arg0", (1, 1, 48)), ("arg1", (1, 3, 48))]
    assert by["generator"]["out"] == (1, 1, V) and recs[-1]["name"] == "EncoderDecoder"
    assert not any(r["type"] == "Dropout" for r in recs)


def test_parameter_breakdown_adds_up_and_counts_tied_tensors_once():
    m = EncoderDecoder(V, V, 32, 4, 2, 1, 64, tie_weights=True)
    b = numel_breakdown(m)
    parts = {k: v for k, v in b.items() if k not in ("total", "cross-attention")}
    assert sum(parts.values()) == b["total"] == _numel(m)
    assert b["embeddings"] == 2 * V * 32 and b["head"] == V  # tied weight: only the bias is left
    assert b["cross-attention"] == 4 * 32 * 32 + 4 * 32
    assert b["attention"] == 4 * (4 * 32 * 32 + 4 * 32)  # 2 encoder layers' self + the decoder's self and cross
    assert numel_breakdown(decoder_only(1))["cross-attention"] == 0
