"""Batched greedy decoding and scoring, on hand-built models whose logits are written down."""

from dataclasses import replace

import torch
import torch.nn as nn

from transformer_nb import reversal as rv
from transformer_nb.exercises.reversal import HandBuiltReverser


class Scripted(nn.Module):
    """Ignores its input: at decoder position t, row b's logits peak at ``script[b][t]``."""

    def __init__(self, script):
        super().__init__()
        self.script = torch.tensor(script)
        self.calls = []

    def encode(self, src, src_keep=None):
        return torch.zeros(src.shape[0], src.shape[1], 4)

    def decode(self, tgt_in, memory, src_keep=None, tgt_keep=None):
        self.calls.append(tgt_in.clone())
        T = tgt_in.shape[1]
        return 5.0 * nn.functional.one_hot(self.script[:, :T], rv.VOCAB_SIZE).float()


def test_greedy_follows_the_last_position_pads_after_eos_and_respects_max_new():
    model = Scripted([[5, 6, 2, 9, 9, 9], [7, 8, 9, 10, 2, 9]])
    src = torch.tensor([[3, 3, 3], [4, 4, 4]])
    out = rv.greedy_decode(model, src, max_new=6)
    assert out.tolist() == [[5, 6, 2, 0, 0, 0], [7, 8, 9, 10, 2, 0]]
    # each step fed back the previous predictions, starting from BOS
    assert model.calls[0].tolist() == [[1], [1]]
    assert model.calls[2].tolist() == [[1, 5, 6], [1, 7, 8]]
    # it stopped once both rows were done (5 decoder calls, not 6)
    assert len(model.calls) == 5
    model = Scripted([[5, 6, 7, 8, 9, 2]])
    assert rv.greedy_decode(model, torch.tensor([[3, 4]]), max_new=3).tolist() == [[5, 6, 7]]
    assert rv.greedy_decode(model, torch.tensor([[3, 4]])).shape == (1, 3)  # default max_new = S + 1


def test_greedy_on_the_hand_built_reverser_is_exact():
    b = rv.random_batch(64, generator=torch.Generator().manual_seed(0))
    res = rv.evaluate(HandBuiltReverser(), b)
    assert res["exact_match"] == 1.0 and res["token_accuracy"] == 1.0
    assert (res["first_wrong"] == -1).all()


def test_score_exact_first_wrong_and_token_accuracy():
    tgt_out = torch.tensor([[5, 4, 3, 2, 0], [9, 8, 7, 6, 2]])
    pred = torch.tensor([[5, 4, 3, 2, 0], [9, 8, 6, 6, 2]])  # right; wrong at position 2
    s = rv.score(pred, tgt_out)
    assert s["exact"].tolist() == [True, False]
    assert s["first_wrong"].tolist() == [-1, 2]
    assert abs(s["token_accuracy"] - 8 / 9) < 1e-6
    # a missing EOS, an early EOS and a late EOS are all wrong
    assert not rv.score(torch.tensor([[5, 4, 3, 7]]), tgt_out[:1, :4])["exact"].item()
    assert not rv.score(torch.tensor([[5, 4, 2, 0]]), tgt_out[:1, :4])["exact"].item()
    late = rv.score(torch.tensor([[5, 4, 3, 3, 2]]), tgt_out[:1])
    assert not late["exact"].item() and late["first_wrong"].item() == 3


def test_failure_table_counts():
    res = {
        "lengths": torch.tensor([3, 3, 5, 8]),
        "exact": torch.tensor([True, False, True, False]),
        "first_wrong": torch.tensor([-1, 1, -1, 4]),
    }
    t = rv.failure_table(res)
    assert (t["by_length"], t["by_first_wrong"], t["n_wrong"]) == ({3: (2, 1), 5: (1, 0), 8: (1, 1)}, {1: 1, 4: 1}, 2)


def test_forced_match_gives_greedy_decodings_exact_match():
    """One teacher-forced pass finds the sequences greedy decoding gets exactly right (a half-trained model)."""
    recipe = replace(rv.IMPROVED, name="half", steps=50, warmup=10)  # exact match 0.21: some right, some wrong
    model = rv.build_model(recipe.model, recipe.init, device="cpu")
    rv.train(model, recipe, seed=0)
    held = rv.heldout_set(300)
    greedy, forced = rv.evaluate(model, held), rv.forced_match(model, held)
    assert 0.05 < greedy["exact_match"] < 0.95, "the model must get some sequences right and some wrong"
    assert forced["exact_match"] == greedy["exact_match"]
    assert forced["forced_token_accuracy"] >= greedy["token_accuracy"]
