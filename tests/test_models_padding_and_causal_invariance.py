"""Padding masks work through the whole stack of all three variants (outputs at real positions do not
change when the padding's content or length changes), and the causal mask works: changing a future
token leaves earlier logits unchanged (decoder-only, encoder-decoder decoder), while the encoder-only
model is bidirectional."""

from functools import partial

import model_helpers
import pytest
import torch

from transformer_nb.core.masks import padding_mask

V, PAD = 40, 0
decoder_only = partial(model_helpers.decoder_only, V)
encoder_only = partial(model_helpers.encoder_only, V)
encoder_decoder = partial(model_helpers.encoder_decoder, V)
ATOL = 1e-5


def _ids(lengths, t, seed, pad_fill=None):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, V, (len(lengths), t), generator=g)
    keep = padding_mask(lengths, t)
    fill = torch.full_like(ids, PAD) if pad_fill is None else torch.randint(1, V, ids.shape, generator=pad_fill)
    return torch.where(keep, ids, fill), keep


@pytest.mark.parametrize("make", [encoder_only, decoder_only], ids=["encoder-only", "decoder-only (right padding)"])
def test_padding_invariance(make):
    torch.manual_seed(0)
    m = make(2).eval()
    a_ids, a_keep = _ids([6, 3, 4], 6, 1)
    b_ids, b_keep = _ids([6, 3, 4], 9, 1, pad_fill=torch.Generator().manual_seed(7))  # longer, junk padding
    b_ids[:, :6] = torch.where(a_keep, a_ids, b_ids[:, :6])
    with torch.no_grad():
        assert torch.allclose(m(a_ids, keep=a_keep)[0][a_keep], m(b_ids, keep=b_keep)[0][b_keep], atol=ATOL)
        if make is encoder_only:  # without the mask, the junk padding leaks into real positions
            assert not torch.allclose(m(a_ids)[0][a_keep], m(b_ids)[0][b_keep], atol=1e-3)


def test_encoder_decoder_padding_invariance_source_and_target():
    torch.manual_seed(0)
    m = encoder_decoder(2).eval()
    src, sk = _ids([7, 3], 7, 3)
    tgt, tk = _ids([4, 2], 4, 4)
    src2, sk2 = _ids([7, 3], 10, 3, pad_fill=torch.Generator().manual_seed(9))
    src2[:, :7] = torch.where(sk, src, src2[:, :7])
    tgt2, tk2 = _ids([4, 2], 6, 4, pad_fill=torch.Generator().manual_seed(10))
    tgt2[:, :4] = torch.where(tk, tgt, tgt2[:, :4])
    with torch.no_grad():
        a = m(src, keep=sk, tgt=tgt, tgt_keep=tk)[0]
        b = m(src2, keep=sk2, tgt=tgt2, tgt_keep=tk2)[0]
        assert torch.allclose(a[tk], b[tk2], atol=ATOL)
        # without the source mask, the junk source padding changes the logits
        unmasked_a = m(src, tgt=tgt, tgt_keep=tk)[0]
        unmasked_b = m(src2, tgt=tgt2, tgt_keep=tk2)[0]
        assert not torch.allclose(unmasked_a[tk], unmasked_b[tk2], atol=1e-3)


def test_encoder_decoder_decoder_is_causal_in_the_target():
    torch.manual_seed(0)
    m = encoder_decoder(2).eval()
    src = torch.randint(1, V, (2, 6), generator=torch.Generator().manual_seed(6))
    tgt = torch.randint(1, V, (2, 5), generator=torch.Generator().manual_seed(7))
    changed = tgt.clone()
    changed[:, 3] = (changed[:, 3] % (V - 1)) + 1
    with torch.no_grad():
        a, b = m(src, tgt=tgt)[0], m(src, tgt=changed)[0]
    assert torch.allclose(a[:, :3], b[:, :3], atol=ATOL)
    assert not torch.allclose(a[:, 3:], b[:, 3:], atol=1e-4)
