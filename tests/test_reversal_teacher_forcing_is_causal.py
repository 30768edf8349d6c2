"""Teacher forcing is legitimate: the decoder's causal mask hides the later inputs. (The shift itself, BOS + labels
shifted right and labels ending with EOS: test_reversal_data_and_padding_masks.py and the property tests.)"""

import torch

from transformer_nb import reversal as rv


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
