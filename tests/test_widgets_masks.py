"""MaskExplorer recomputes headlessly when a control changes: the mask, the weights, the empty rows."""

import pytest
import torch

from transformer_nb.core.masks import causal_mask
from transformer_nb.widgets.masks import MaskExplorer, make_batch


def test_default_state_right_padding_causal():
    w = MaskExplorer()
    w.refresh()
    assert w.fig is not None
    last = w.last
    assert last["lengths"] == [5, 3, 7] and last["T"] == 7 and last["causal"]
    assert last["mask"].shape == (3, 7, 7) and last["weights"].shape == (3, 7, 7)
    assert not last["mask"][0].triu(1).any()  # causal
    assert not last["mask"][1][:, 3:].any()  # padded keys of the length-3 sequence
    assert last["n_empty_rows"] == 0 and not last["has_nan"]
    torch.testing.assert_close(last["row_sums"], torch.ones(3, 7))
    assert (last["weights"][~last["mask"]] == 0).all()


def test_length_slider_changes_the_batch():
    w = MaskExplorer()
    w.refresh()
    w.controls["len_3"].value = 8
    assert w.last["lengths"] == [5, 3, 8] and w.last["T"] == 8
    assert w.last["keep"].sum(1).tolist() == [5, 3, 8]
    assert w.updates == 2


def test_left_padding_with_causal_gives_empty_rows_with_zero_weights():
    w = MaskExplorer()
    w.refresh()
    w.controls["pad_side"].value = "left"
    last = w.last
    assert last["pad_side"] == "left"
    assert last["keep"][1].tolist() == [False] * 4 + [True] * 3  # length 3 in T = 7, padded on the left
    assert last["empty_rows"][1].tolist() == [True] * 4 + [False] * 3
    assert last["n_empty_rows"] == 2 + 4
    assert (last["weights"][last["empty_rows"]] == 0).all() and not last["has_nan"]


def test_bidirectional_toggle_and_length_zero():
    w = MaskExplorer()
    w.refresh()
    w.controls["causal"].value = False
    assert not w.last["causal"] and w.last["mask"][2].all()  # length 7 = T: everything visible
    assert w.last["n_empty_rows"] == 0  # padded queries still see real keys
    w.controls["len_1"].value = 0
    assert w.last["empty_rows"][0].all() and (w.last["weights"][0] == 0).all()
    assert not w.last["has_nan"]


def test_real_rows_match_a_plain_causal_mask():
    w = MaskExplorer(lengths=(4, 4, 4))
    w.refresh()
    assert torch.equal(w.last["mask"][0], causal_mask(4))


def test_make_batch_rejects_bad_side():
    assert make_batch([2, 0], "left").tolist() == [[1, 2], [0, 0]]
    with pytest.raises(ValueError, match="pad_side"):
        make_batch([2], "middle")
