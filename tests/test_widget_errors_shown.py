"""A user's error is shown inside the widget, and the widget keeps working after it (issue 18, item 10).

Before: an exception raised in a widget's observer escaped it (in Jupyter: logged nowhere the
reader looks, the figure frozen), and ``GenerateWidget`` with seed 2**70 failed at every later
change until the seed was reset.
"""

import ipywidgets as W
import matplotlib.pyplot as plt
import pytest

from transformer_nb.widgets.base import Widget


class Reciprocal(Widget):
    """1/x: x = 0 raises inside ``compute``; x = 3 raises a bug-like error inside ``draw``."""

    def __init__(self):
        super().__init__(x=W.IntSlider(value=2, min=-5, max=5))

    def compute(self, x):
        if x == 0:
            raise ValueError("x must not be 0: 1/x is undefined there")
        return {"x": x, "y": 1 / x}

    def draw(self, data):
        fig, ax = plt.subplots()
        ax.bar(["1/x"], [data["y"]])
        if data["x"] == 3:
            raise RuntimeError("a bug while drawing")
        return fig


def test_an_error_is_shown_and_the_next_change_works():
    w = Reciprocal()
    w.refresh()
    figures = set(plt.get_fignums())
    w.controls["x"].value = 0  # raised out of the observer before
    assert w.error.startswith("⚠ x must not be 0") and "try again" in w.error
    assert "ValueError" in w.traceback and w.last["x"] == 2
    assert 'class="tnb-widget-error"' in w.message.value and "x must not be 0" in w.message.value  # shown
    assert w.image.layout.display == "none"  # in place of the figure
    w.controls["x"].value = 3  # an unexpected error says what it is
    assert "RuntimeError: a bug while drawing" in w.error and "unexpected" in w.error
    assert set(plt.get_fignums()) == figures  # the half-drawn figure was closed, it will not pop up later
    w.controls["x"].value = 4
    assert w.error is None and w.traceback is None and w.message.value == ""
    assert w.last == {"x": 4, "y": 0.25} and w.fig is not None


def test_the_message_is_one_line_of_escaped_html():
    from transformer_nb.widgets.base import Message, error_message

    msg = Message(error_message(ValueError("length <b>70</b> is too long")))
    html = msg._repr_html_()
    assert 'class="tnb-widget-error"' in html and "&lt;b&gt;70&lt;/b&gt;" in html and "<b>" not in html
    assert repr(msg) == "⚠ length <b>70</b> is too long  (change a control to try again)"


@pytest.fixture(scope="module")
def reversal_model():
    from transformer_nb import reversal as rv

    return rv.build_model(rv.MODEL, "xavier_embeddings", seed=0).eval()


def test_reversal_widget_refuses_a_source_longer_than_its_position_table(reversal_model):
    from transformer_nb.widgets.reversal import ReversalWidget

    w = ReversalWidget(reversal_model)
    w.refresh()
    w.controls["text"].value = " ".join(["3"] * 70)  # raised in the observer before
    assert w.error is None and "70 symbols is too long" in w.last["error"], w.last["error"]
    assert f"at most {w.max_src}" in w.last["error"] and w.fig is not None
    w.controls["text"].value = " ".join(["4"] * w.max_src)  # the longest allowed decodes
    assert w.last["error"] is None and len(w.last["src"]) == w.max_src
    w.controls["text"].value = "3 4 5"
    assert w.last["error"] is None and w.last["src"] == [3, 4, 5]


def test_generate_widget_survives_a_huge_seed():
    import torch
    from test_lm_widget import WORDS, tiny_lm

    from transformer_nb.widgets.lm import GenerateWidget
    from transformer_nb.wikitext import Vocab

    w = GenerateWidget(tiny_lm(), Vocab(WORDS), prompt="the history of", length=5, top_k=5)
    w.refresh()
    w.controls["seed"].value = 2**70  # broke every later change before
    assert w.error is None and 0 <= w.controls["seed"].value < 2**63
    w.controls["temperature"].value = 1.5
    assert w.error is None and w.last["settings"]["temperature"] == 1.5
    assert w.last["ids"].numel() == 3 + 5 and w.last["ids"].dtype == torch.long
