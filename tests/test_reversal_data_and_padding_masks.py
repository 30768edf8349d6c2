"""The reversal data: the text's generator, padded batches, padding masks, held-out exclusion."""

import torch

from transformer_nb import reversal as rv


def test_make_pairs_lengths_symbols_reversal_reproducibility_and_exclude():
    pairs = rv.make_pairs(500, generator=torch.Generator().manual_seed(0))
    assert len(pairs) == 500 and {len(s) for s, _ in pairs} == set(range(3, 9))
    assert all(tgt == src[::-1] and all(3 <= t <= 12 for t in src) for src, tgt in pairs)
    assert pairs == rv.make_pairs(500, generator=torch.Generator().manual_seed(0))
    only = {(s,) for s in range(3, 12)}  # every 1-symbol sequence but (12,)
    pairs = rv.make_pairs(30, 1, 1, generator=torch.Generator().manual_seed(2), exclude=only)
    assert all(src == [12] for src, _ in pairs)


def test_collate_pads_right_and_masks_are_true_at_real_tokens():
    b = rv.collate([([3, 4, 5], [5, 4, 3]), ([6, 7, 8, 9, 10], [10, 9, 8, 7, 6])])
    assert b.src.tolist() == [[3, 4, 5, 0, 0], [6, 7, 8, 9, 10]]
    assert b.tgt_in.tolist() == [[1, 5, 4, 3, 0, 0], [1, 10, 9, 8, 7, 6]]
    assert b.tgt_out.tolist() == [[5, 4, 3, 2, 0, 0], [10, 9, 8, 7, 6, 2]]
    assert b.src_keep.tolist() == [[True] * 3 + [False] * 2, [True] * 5]
    assert torch.equal(b.tgt_keep, b.tgt_in != rv.PAD)
    assert b.lengths.tolist() == [3, 5]


def test_sequence_codes_ignore_padding_width_and_separate_sequences():
    a, b, c, d = (rv.sequence_codes(torch.tensor([s])) for s in ([3, 4, 0, 0], [3, 4], [4, 3], [3, 4, 3]))
    assert a == b and a != c and a != d


def test_training_batches_never_contain_held_out_sequences():
    held = rv.heldout_set(1000)
    codes = rv.sequence_codes(held.src)
    g = torch.Generator().manual_seed(5)
    seen = torch.cat([rv.sequence_codes(rv.random_batch(512, generator=g, exclude=codes).src) for _ in range(40)])
    assert not torch.isin(seen, codes).any()
    # without the exclusion some short held-out sequences do come up (there are only 1,000 of length 3)
    g = torch.Generator().manual_seed(5)
    seen = torch.cat([rv.sequence_codes(rv.random_batch(512, generator=g).src) for _ in range(40)])
    assert torch.isin(seen, codes).any()
    exclude = rv.sequence_codes(torch.arange(3, 12)[:, None])  # all 1-symbol sequences but [12]: rows redrawn
    assert (rv.random_batch(64, 1, 1, generator=torch.Generator().manual_seed(0), exclude=exclude).src == 12).all()


def test_init_choices_change_only_what_they_say():
    base = rv.build_model(rv.MODEL, "default", seed=0).state_dict()
    emb = rv.build_model(rv.MODEL, "xavier_embeddings", seed=0).state_dict()
    changed = {k for k in base if not torch.equal(base[k], emb[k])}
    assert changed == {"tok.weight", "tgt_tok.weight"}
    assert (emb["tok.weight"][rv.PAD] == 0).all() and (emb["tgt_tok.weight"][rv.PAD] == 0).all()
    assert (base["tok.weight"][rv.PAD] == 0).all() and (base["tgt_tok.weight"][rv.PAD] == 0).all()
    # Xavier keeps the scaled embeddings comparable with the positions (RMS ~1.3, not ~sqrt(d_model) = 8)
    scale = rv.MODEL.d_model**0.5
    assert emb["tok.weight"].std() * scale < 2 < base["tok.weight"].std() * scale
