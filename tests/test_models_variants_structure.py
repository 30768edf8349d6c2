"""The three variants are built from the same blocks and differ only in masks and cross-attention,
as recorded from the masks really used at run time; the objectives are recognised from the batches;
parameter bookkeeping (the causal mask is free, tying saves |V|·d) holds; the shape trace is complete;
the encoder-decoder's embedding options (``scale_embeddings``, ``pad_id``) do what they say, and its
``encode`` / ``decode`` are its forward in two steps."""

import math
from functools import partial

import model_helpers
import pytest
import torch
import torch.nn.functional as F

from transformer_nb.core.masks import padding_mask
from transformer_nb.core.transformer import Transformer
from transformer_nb.objectives import describe_objective, lm_batch, mlm_batch, span_corruption
from transformer_nb.params import numel_breakdown
from transformer_nb.probes import capture_masks, trace_shapes

V = 30
decoder_only = partial(model_helpers.decoder_only, V)
encoder_only = partial(model_helpers.encoder_only, V)
encoder_decoder = partial(model_helpers.encoder_decoder, V)


def _numel(m):
    return sum(p.numel() for p in m.parameters())


def test_two_vocabularies_unequal_depths_and_every_option_reach_the_model():
    m = encoder_decoder(1, 2, tgt_vocab=V + 1, dropout=0.0, max_len=20, norm_first=True, activation="gelu")
    logits, loss = m(torch.ones(2, 3, dtype=torch.long), tgt=torch.ones(2, 4, dtype=torch.long))
    assert logits.shape == (2, 4, V + 1) and loss is None
    assert len(m.blocks.layers) == 1 and len(m.decoder.layers) == 2
    assert m.tok.num_embeddings == V and m.tgt_tok.num_embeddings == V + 1 and m.head.proj.out_features == V + 1
    assert m.max_len == 20 and m.tok.padding_idx == m.tgt_tok.padding_idx == 0


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
    recs = capture_masks(encoder_decoder(), ids, keep=keep, tgt=ids[:, :4], tgt_keep=padding_mask([4, 2], 4))
    assert labels(recs) == [
        ("blocks.layers.0.self_attn", "self", "padding"),
        ("decoder.layers.0.self_attn", "self", "causal + padding"),
        ("decoder.layers.0.cross_attn", "cross", "padding"),
    ]
    assert recs[2]["mask"].shape == (2, 4, 6) and not recs[2]["mask"][1, :, 4:].any()


def test_tying_saves_vocab_times_d():
    a, b, c = (
        encoder_decoder(),
        encoder_decoder(tie_output=True),
        encoder_decoder(tie_output=True, share_embeddings=True),
    )
    assert _numel(a) - _numel(b) == V * 32 and _numel(b) - _numel(c) == V * 32
    assert a.head.proj.weight is not a.tgt_tok.weight and a.tok.weight is not a.tgt_tok.weight
    # tied: the output layer's matrix is the target table (the source keeps its own); shared: one table
    assert b.tgt_tok is None and b.tok.weight is not b.head.tok.weight
    assert c.tok is None and c.tgt_tok is None
    ids = torch.randint(0, V, (2, 5))
    for m, table in ((b, b.head.tok), (c, c.head.tok)):
        with torch.no_grad():
            assert torch.equal(m.eval()._embed(ids, target=True), m.tgt_pos(table(ids) * math.sqrt(32)))
    with torch.no_grad():
        assert torch.equal(c._embed(ids), c.pos(c.head.tok(ids) * math.sqrt(32)))
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
    span = partial(describe_objective, source=src, original=ids, special=[0, 2, *range(20, 30)])
    assert span(tgt_in, tgt_out)["name"].startswith("span")
    shuffled = tgt_out.clone()
    shuffled[tgt_out >= 3] = 5  # wrong targets: not the dropped spans any more
    assert span(tgt_in, shuffled)["name"] != span(tgt_in, tgt_out)["name"]


def test_span_corruption_drops_and_marks_spans():
    ids = torch.arange(3, 23)[None]  # 20 distinct tokens
    src, sk, tgt, tk = span_corruption(ids, None, sentinel_start=100, generator=torch.Generator().manual_seed(1))
    s, t = src[0][sk[0]].tolist(), tgt[0][tk[0]].tolist()
    assert sorted([x for x in s if x < 100] + [x for x in t if x < 100]) == list(range(3, 23))
    assert [x for x in s if x >= 100] == [x for x in t if x >= 100] == [100]


def test_trace_records_every_sublayer_with_attention_shapes():
    torch.manual_seed(0)
    m = encoder_decoder(2, d_model=48).eval()
    recs = trace_shapes(m, torch.ones(1, 3, dtype=torch.long), tgt=torch.ones(1, 1, dtype=torch.long))
    by = {r["name"]: r for r in recs}
    assert by["tok"]["out"] == (1, 3, 48) and by["tgt_tok"]["out"] == (1, 1, 48)
    assert by["blocks.layers.1.self_attn"]["weights"] == (1, 6, 3, 3)
    assert by["decoder.layers.0.cross_attn"]["weights"] == (1, 6, 1, 3)
    assert by["decoder.layers.0.cross_attn"]["inputs"][:2] == [("arg0", (1, 1, 48)), ("arg1", (1, 3, 48))]
    assert by["head.proj"]["out"] == (1, V)  # the head sees the (B·T, d) rows
    assert recs[-1]["name"] == "Transformer" and recs[-1]["out"] == (1, 1, V)
    assert not any(r["type"] == "Dropout" for r in recs)
    assert all(not h for mod in m.modules() for h in (mod._forward_hooks, mod._forward_pre_hooks))  # hooks removed


def test_parameter_breakdown_adds_up_and_counts_tied_tensors_once():
    m = encoder_decoder(2, 1, tie_output=True)
    b = numel_breakdown(m)
    parts = {k: v for k, v in b.items() if k not in ("total", "cross-attention")}
    assert sum(parts.values()) == b["total"] == _numel(m)
    assert b["embeddings"] == 2 * V * 32 and b["head"] == V  # tied weight: only the bias is left
    assert b["cross-attention"] == 4 * 32 * 32 + 4 * 32
    assert b["attention"] == 4 * (4 * 32 * 32 + 4 * 32)  # 2 encoder layers' self + the decoder's self and cross
    assert numel_breakdown(decoder_only(1))["cross-attention"] == 0


# --------------------------------------------------------------------------- the embeddings' options


@pytest.mark.parametrize("arch", ["encoder-decoder", "decoder"])
def test_scale_embeddings_multiplies_the_token_embeddings_by_sqrt_d_model(arch):
    """The original's ``Embedding(ids) · sqrt(d_model)`` before the positions are added, on both sides;
    ``scale_embeddings=False`` (the default) reads the table as it is."""
    torch.manual_seed(0)
    fields = {"arch": arch, "vocab": V, "d_model": 32, "n_heads": 4, "n_layers": 1, "d_ff": 64, "tie_output": False}
    if arch == "encoder-decoder":
        fields["share_embeddings"] = False  # a table per side
    scaled, plain = Transformer(**fields, scale_embeddings=True).eval(), Transformer(**fields).eval()
    plain.load_state_dict(scaled.state_dict())
    assert plain.scale is None and scaled.scale == math.sqrt(32)
    ids = torch.randint(0, V, (3, 7))
    pe = scaled.pos.pe[:7]
    with torch.no_grad():
        assert torch.equal(scaled._embed(ids), scaled.tok(ids) * math.sqrt(32) + pe)
        assert torch.equal(plain._embed(ids), plain.tok(ids) + pe)
        # the hidden states are the stack's output for those embeddings
        assert torch.allclose(scaled.hidden(ids)[0], scaled.blocks(scaled.tok(ids) * math.sqrt(32) + pe), atol=1e-6)
        assert not torch.allclose(scaled.hidden(ids)[0], plain.hidden(ids)[0], atol=1e-3)
        if arch == "encoder-decoder":
            tgt_table = scaled.tgt_tok(ids)
            assert torch.equal(scaled._embed(ids, target=True), tgt_table * math.sqrt(32) + scaled.tgt_pos.pe[:7])
            assert torch.equal(plain._embed(ids, target=True), tgt_table + plain.tgt_pos.pe[:7])


@pytest.mark.parametrize(
    "fields",
    [
        {"arch": "encoder-decoder", "share_embeddings": False},  # two tables
        {"arch": "encoder-decoder", "share_embeddings": True},  # one table for both sides
        {"arch": "decoder"},
    ],
    ids=["two-tables", "shared-table", "decoder-only"],
)
def test_pad_id_gives_a_zero_padding_row_that_gets_no_gradient(fields):
    torch.manual_seed(0)
    pad = 2
    shape = dict(vocab=V, d_model=32, n_heads=4, n_layers=1, d_ff=64)
    m = Transformer(**shape, tie_output=False, pad_id=pad, scale_embeddings=True, **fields)
    tables = [t for t in (m.tok, m.tgt_tok) if t is not None]
    assert len(tables) == (2 if fields == {"arch": "encoder-decoder", "share_embeddings": False} else 1)
    for t in tables:
        assert t.padding_idx == pad and not t.weight[pad].any()  # starts at zero (the N(0, 0.02) init spares it)
        assert t.weight[:pad].abs().min() > 0 and t.weight[pad + 1 :].abs().min() > 0
    ids = torch.tensor([[5, 6, pad, pad], [7, pad, 8, pad]])  # PAD is read, on every side
    targets = torch.tensor([[6, 7, 8, 9], [3, 4, 5, 6]])
    kw = {"tgt": ids.flip(1), "tgt_keep": ids.flip(1) != pad} if fields["arch"] == "encoder-decoder" else {}
    _, loss = m(ids, targets, keep=ids != pad, **kw)
    loss.backward()
    for t in tables:
        assert not t.weight.grad[pad].any()  # no gradient reaches the padding row
        assert t.weight.grad[5].abs().sum() > 0  # while a real word's row learns
    opt = torch.optim.SGD(m.parameters(), lr=1.0)
    opt.step()
    assert all(not t.weight[pad].any() for t in tables)  # so training keeps it zero
    with torch.no_grad():  # the padding token embeds to its position alone
        pe = m.pos.pe[:4]
        assert torch.equal(m._embed(ids)[0, 2], pe[2]) and torch.equal(m._embed(ids)[1, 3], pe[3])


@pytest.mark.parametrize(
    "fields",
    [
        {"tie_output": False, "share_embeddings": False, "pad_id": 0, "scale_embeddings": True, "output_bias": True},
        {},  # the defaults: one shared table, tied to the output layer
        {"tie_output": False, "lm_head": False},  # no head: decode gives the decoder's hidden states
    ],
    ids=["original", "tied-shared", "no-head"],
)
def test_decode_of_encode_is_the_forward_exactly(fields):
    torch.manual_seed(0)
    shape = dict(vocab=V, d_model=32, n_heads=4, n_layers=2, n_dec_layers=3, d_ff=64)
    m = Transformer(arch="encoder-decoder", **shape, **fields).eval()
    src, keep = torch.randint(1, V, (3, 7)), padding_mask([7, 4, 2], 7)
    tgt, tgt_keep = torch.randint(1, V, (3, 5)), padding_mask([5, 3, 1], 5)
    with torch.no_grad():
        memory = m.encode(src, keep)
        assert memory.shape == (3, 7, 32) and torch.equal(memory, m.hidden(src, keep=keep)[0])
        two_steps = m.decode(tgt, memory, keep, tgt_keep)
        whole = m(src, keep=keep, tgt=tgt, tgt_keep=tgt_keep)[0]
        assert two_steps.shape == whole.shape == (3, 5, V if m.head is not None else 32)
        assert torch.equal(two_steps, whole)
        # without masks too, and the memory really matters: another source, other logits
        assert torch.equal(m.decode(tgt, m.encode(src)), m(src, tgt=tgt)[0])
        assert not torch.equal(m.decode(tgt, m.encode(src.flip(1))), m(src, tgt=tgt)[0])
        if m.head is not None:
            assert torch.allclose(F.log_softmax(whole, -1).exp().sum(-1), torch.ones(3, 5), atol=1e-5)
