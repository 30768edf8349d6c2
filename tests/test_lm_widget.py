"""The generation widget recomputes headlessly when a control changes."""

import pytest
import torch

from transformer_nb.core.output_head import frequency_ranks
from transformer_nb.core.transformer import Transformer
from transformer_nb.widgets.lm import GenerateWidget
from transformer_nb.wikitext import Vocab

WORDS = "<eos> the history of learning a an is was in on at to and cat dog".split()  # noqa: SIM905


def tiny_lm():
    """A seeded, untrained two-layer LM over ``WORDS`` of notebook 10's kind: RoPE and the tied adaptive head."""
    torch.manual_seed(0)
    n = len(Vocab(WORDS))
    sizes = dict(d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=64, positions="rope", adaptive=True)
    return Transformer(vocab=n, ranks=frequency_ranks(torch.arange(n).repeat(3), n), cutoffs=(4, 8), **sizes)


def test_widget_generates_and_follows_its_controls():
    w = GenerateWidget(tiny_lm(), Vocab(WORDS), prompt="the history of machine learning", length=10)
    w.refresh()
    last, first = w.last, w.last["ids"].clone()
    assert last["ids"].numel() == 5 + 10 and last["unknown"] == ["machine"] and "&lt;unk&gt;): machine" in w.text.value
    assert last["attention"].shape == (2 * 2, 14) and w.fig is not None  # layers x heads rows, a column per token
    assert torch.allclose(last["attention_full"].sum(-1), torch.ones(4), atol=1e-5)  # RoPE too
    assert len(last["continuation"].split()) == 10
    w.controls["seed"].value = 1
    assert not torch.equal(w.last["ids"], first)  # another seed, another sample
    w.controls["temperature"].value = 0.0  # greedy: the seed no longer matters
    greedy = w.last["ids"].clone()
    w.controls["seed"].value = 2**70  # clamped by the box; broke every later change before (issue 18)
    assert w.error is None and torch.equal(w.last["ids"], greedy)
    w.controls["length"].value = 20
    assert w.last["ids"].numel() == 25 and w.last["attention"].shape[1] == 24
    w.controls["prompt"].value = "the cat"
    assert w.last["prompt_ids"].tolist() == [1, 14]


def test_widget_needs_a_transformer():
    with pytest.raises(TypeError, match="needs a decoder-only Transformer"):
        GenerateWidget(torch.nn.LSTM(4, 4), Vocab(WORDS))
