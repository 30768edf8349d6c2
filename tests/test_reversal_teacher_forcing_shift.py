"""The teacher-forcing shift: decoder input = BOS + labels shifted right; labels end with EOS."""

import torch

from transformer_nb import reversal as rv


def test_shift_on_a_hand_example():
    tgt = torch.tensor([[9, 7, 5], [4, 3, 0]])
    tgt_in, tgt_out = rv.shift_for_teacher_forcing(tgt)
    assert tgt_in.tolist() == [[1, 9, 7, 5], [1, 4, 3, 0]]
    assert tgt_out.tolist() == [[9, 7, 5, 2], [4, 3, 2, 0]]


def test_causal_mask_makes_teacher_forcing_legitimate():
    """Changing the decoder input at positions > t leaves the logits at positions <= t unchanged."""
    model = rv.build_model(rv.MODEL, "xavier_embeddings", seed=0, device="cpu").eval()
    b = rv.collate([([3, 4, 5, 6, 7], [7, 6, 5, 4, 3])])
    with torch.no_grad():
        a = model(b.src, keep=b.src_keep, tgt=b.tgt_in, tgt_keep=b.tgt_keep)[0]
        changed = b.tgt_in.clone()
        changed[0, 3:] = 12
        c = model(b.src, keep=b.src_keep, tgt=changed, tgt_keep=changed != rv.PAD)[0]
    assert torch.allclose(a[0, :3], c[0, :3], atol=1e-6)
    assert not torch.allclose(a[0, 3:], c[0, 3:], atol=1e-3)
