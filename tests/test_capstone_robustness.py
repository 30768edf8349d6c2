"""The capstone's bar holds for correct students: a model with PyTorch's default initialisation for its linear
layers passes step 5 and is trained like the reference; one whose position embeddings swamp its word embeddings
(PyTorch's N(0, 1) default beside small word embeddings, which trains 0.3 nats worse) is told so at step 5;
the loss threshold keeps a margin of at least 0.2 nats above every measured correct run, and stays below the
unigram model's loss; the loss check prints the loss only, so the notebook names one perplexity figure."""

import contextlib
import io
import math

import pytest
import torch
import torch.nn as nn

from transformer_nb.exercises.capstone_lm import lm_ex
from transformer_nb.exercises.capstone_train import LOSS_THRESHOLD, MEASURED_FINAL_LOSS, training_check
from transformer_nb.exercises.solutions import capstone as sol

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


class DefaultLinear(sol.LanguageModel):
    """Correct; PyTorch's default initialisation everywhere except the two embeddings, N(0, 0.02)."""

    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len):
        nn.Module.__init__(self)
        self.tok, self.pos = nn.Embedding(vocab_size, d_model), nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList([sol.Block(d_model, n_heads, d_ff) for _ in range(n_layers)])
        self.norm = nn.LayerNorm(d_model)
        self.bias = nn.Parameter(torch.zeros(vocab_size))
        nn.init.normal_(self.tok.weight, std=0.02)
        nn.init.normal_(self.pos.weight, std=0.02)


class PositionsDefault(DefaultLinear):
    """Correct, but its positions keep PyTorch's N(0, 1) default beside N(0, 0.02) words."""

    def __init__(self, *sizes):
        super().__init__(*sizes)
        nn.init.normal_(self.pos.weight, std=1.0)


def test_step_5_passes_pytorchs_default_linears_and_names_positions_that_swamp_the_words():
    r = lm_ex.check(DefaultLinear, quiet=True)
    assert r.passed, r.message
    r = lm_ex.check(PositionsDefault, quiet=True)
    assert not r.passed and "position embeddings start" in r.message, r.message


@pytest.mark.parametrize("profile", sorted(MEASURED_FINAL_LOSS))
def test_threshold_keeps_a_margin_over_every_measured_correct_run_and_beats_the_unigram_model(profile):
    worst = max(loss for runs in MEASURED_FINAL_LOSS[profile].values() for loss in runs)
    assert LOSS_THRESHOLD[profile] - worst >= 0.2 - 1e-9, (profile, worst)
    if profile == "full":
        assert LOSS_THRESHOLD[profile] < math.log(965) - 0.1, "the bar must stay clearly below the unigram model's"


def test_the_loss_check_names_no_second_perplexity():
    hist = {"loss": [10.3, 7.0], "val_loss": [10.4, 6.0]}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert training_check(hist, 33_278, threshold=6.5).passed
    assert "perplexity" not in out.getvalue() and "6.00 < 6.50" in out.getvalue()
