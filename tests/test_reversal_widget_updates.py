"""The reversal widget recomputes when its text box changes (headless)."""

import torch

from transformer_nb import reversal as rv
from transformer_nb.widgets.reversal import ReversalWidget


def _widget():
    return ReversalWidget(rv.build_model(rv.MODEL, "xavier_embeddings", seed=0).eval())


def test_widget_draws_the_default_sequence():
    w = _widget()
    w.refresh()
    assert w.last["src"] == [3, 5, 7, 9, 4] and w.last["expected"] == [4, 9, 7, 5, 3]
    assert w.last["error"] is None and w.fig is not None
    cross = w.last["cross"]
    assert cross.shape == (len(w.last["outputs"]), 5)
    assert torch.allclose(cross.sum(-1), torch.ones(cross.shape[0]), atol=1e-5)


def test_typing_a_new_sequence_updates_last():
    w = _widget()
    w.refresh()
    n = w.updates
    w.controls["text"].value = "12, 11, 10"
    assert w.updates == n + 1
    assert w.last["src"] == [12, 11, 10] and w.last["cross"].shape[1] == 3
    assert not w.last["outside_training"]
    w.controls["text"].value = "3 4 5 6 7 8 9 10 11 12"
    assert w.last["outside_training"] and w.last["cross"].shape[1] == 10


def test_head_and_layer_selectors_change_the_map():
    w = _widget()
    w.refresh()
    mean = w.last["cross"]
    w.controls["head"].value = 0
    assert w.last["head"] == 0 and not torch.allclose(mean, w.last["cross"])
    w.controls["layer"].value = 0
    assert w.last["layer"] == 0


def test_bad_input_shows_a_message_instead_of_raising():
    w = _widget()
    w.controls["text"].value = "3 4 banana"
    assert "integers" in w.last["error"] and w.fig is not None
    w.controls["text"].value = "1 2 3"
    assert "3..12" in w.last["error"]
    w.controls["text"].value = ""
    assert "at least one" in w.last["error"]


def test_verdict_matches_the_decoded_output():
    w = _widget()
    data = w.compute(text="3 4 5", layer=1, head=-1)
    assert data["correct"] == (data["ended"] and data["pred"] == [5, 4, 3])
