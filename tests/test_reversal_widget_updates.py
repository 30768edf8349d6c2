"""The reversal widget recomputes when its text box or selectors change (headless); bad text is a message."""

import pytest
import torch

from transformer_nb import reversal as rv
from transformer_nb.widgets.reversal import ReversalWidget


@pytest.fixture
def w():
    w = ReversalWidget(rv.build_model(rv.MODEL, "xavier_embeddings", seed=0).eval())
    w.refresh()
    return w


def test_widget_decodes_what_is_typed_and_draws_its_cross_attention(w):
    assert w.last["src"] == [3, 5, 7, 9, 4] and w.last["expected"] == [4, 9, 7, 5, 3] and w.fig is not None
    cross = w.last["cross"]
    assert cross.shape == (len(w.last["outputs"]), 5) and torch.allclose(cross.sum(-1), torch.tensor(1.0), atol=1e-5)
    w.controls["text"].value = "12, 11, 10"
    assert w.last["src"] == [12, 11, 10] and w.last["cross"].shape[1] == 3 and not w.last["outside_training"]
    mean = w.last["cross"]
    w.controls["head"].value = 0
    assert not torch.allclose(mean, w.last["cross"])
    w.controls["text"].value = " ".join(["4"] * w.max_src)  # the longest allowed decodes
    assert w.last["error"] is None and w.last["outside_training"]


@pytest.mark.parametrize(
    "text, said", [("3 4 banana", "integers"), ("1 2 3", "3..12"), ("", "at least one"), ("3 " * 70, "70 symbols")]
)
def test_bad_text_is_a_message_in_the_figure(w, text, said):
    w.controls["text"].value = text
    assert w.error is None and said in w.last["error"] and w.fig is not None
