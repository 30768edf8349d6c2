"""The multi-head widget recomputes headlessly when a control changes (no kernel, no browser)."""

import math

import torch

from transformer_nb.widgets.multihead import HeadsWidget, word_embedding


def test_defaults_are_exercise_8_6():
    w = HeadsWidget()
    w.refresh()
    assert w.last["tokens"] == ["The", "cat", "sat", "on", "the", "comfortable", "mat"]
    assert w.last["weights"].shape == (4, 7, 7)
    assert torch.allclose(w.last["weights"].sum(-1), torch.ones(4, 7), atol=1e-6)
    assert w.fig is not None and len(w.last["distance"]) == 4


def test_controls_change_heads_layer_sentence_order_and_sharpness():
    w = HeadsWidget()
    w.refresh()
    w.controls["n_heads"].value = 8
    assert w.last["weights"].shape == (8, 7, 7) and len(w.fig.axes) >= 8
    w.controls["layer"].value = 2
    assert w.last["layer"] == 2
    w.controls["sentence"].value = "a b c"
    assert w.last["tokens"] == ["a", "b", "c"] and w.last["weights"].shape == (8, 3, 3)
    before = w.last["weights"].clone()
    w.controls["order"].value = "reversed"
    assert w.last["tokens"] == ["c", "b", "a"]
    # no positions anywhere: reversing the words reverses every layer's pattern exactly
    assert torch.allclose(w.last["weights"], before.flip(-1).flip(-2), atol=1e-6)
    w.controls["layer"].value = 1
    flat = sum(w.last["entropy"])
    w.controls["sharpness"].value = 8.0
    assert sum(w.last["entropy"]) < flat


def test_reversal_permutes_layer_one_exactly():
    w = HeadsWidget(layer=1)
    w.refresh()
    a = w.last["weights"]
    w.controls["order"].value = "reversed"
    assert torch.allclose(w.last["weights"], a.flip(-1).flip(-2), atol=1e-6)


def test_identical_tokens_give_uniform_heads_and_empty_input_a_message():
    w = HeadsWidget(sentence="the the the the the")
    w.refresh()
    assert torch.allclose(w.last["weights"], torch.full((4, 5, 5), 0.2), atol=1e-6)
    assert all(abs(e - math.log(5)) < 1e-6 for e in w.last["entropy"])
    w.controls["sentence"].value = "   "
    assert w.last["tokens"] == [] and "type a sentence" in w.last["message"] and w.fig is not None


def test_long_sentences_are_truncated_and_embeddings_are_per_word():
    w = HeadsWidget(sentence=" ".join(f"w{i}" for i in range(30)))
    w.refresh()
    assert len(w.last["tokens"]) == 16 and w.last["truncated"]
    assert torch.equal(word_embedding("cat", 32), word_embedding("cat", 32))
    assert not torch.equal(word_embedding("The", 32), word_embedding("the", 32))
