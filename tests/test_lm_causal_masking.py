"""The LM is causal: changing a future token leaves every earlier prediction unchanged."""

import model_helpers
import pytest
import torch

from transformer_nb.core.output_head import HEADS
from transformer_nb.core.transformer import Transformer
from transformer_nb.lstm import LSTMLM

V = 300


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("positions", ["learned", "sinusoidal", "rope", "alibi", "lstm"])
@pytest.mark.parametrize("t", [0, 7, 15])
def test_future_token_does_not_change_earlier_logprobs(head, positions, t):
    torch.manual_seed(0)
    m = LSTMLM(V, 16, 24, head="full").eval() if positions == "lstm" else model_helpers.lm(head, V, positions=positions)
    ids = torch.randint(0, V, (2, 16), generator=torch.Generator().manual_seed(2))
    changed = ids.clone()
    changed[:, t] = (changed[:, t] + 1) % V
    with torch.no_grad():
        a, b = m.log_probs(ids), m.log_probs(changed)
    assert torch.equal(a[:, :t], b[:, :t])  # bit-identical before the change
    assert (a[:, t] - b[:, t]).abs().max() > 1e-4  # and the change is seen from t on


@pytest.mark.parametrize("head", HEADS)
def test_log_probs_are_normalised_and_match_nll(head):
    m = model_helpers.lm(head, V)
    ids = torch.randint(0, V, (2, 10))
    y = torch.randint(0, V, (2, 10))
    with torch.no_grad():
        lp = m.log_probs(ids)
        nll, _ = m.nll(ids, y, reduction="none")
    assert lp.shape == (2, 10, V)
    assert torch.allclose(lp.exp().sum(-1), torch.ones(2, 10), atol=1e-5)
    assert torch.allclose(-lp.gather(-1, y[..., None]).squeeze(-1), nll, atol=1e-5)


def test_tied_head_shares_the_embedding_matrix():
    m = model_helpers.lm("tied", V)
    assert m.head.logits(torch.zeros(1, 32)).shape == (1, V)
    names = [n for n, _ in m.named_parameters()]
    assert m.tok is None and "head.tok.weight" in names and "head.proj.weight" not in names  # one V x d matrix
    assert m.head.proj.weight is m.head.tok.weight  # the output layer is a plain Linear on the embedding's weight
    assert torch.equal(m.embed_tokens(torch.tensor([[3]]))[0, 0], m.head.tok.weight[3])


def test_adaptive_head_needs_ranks():
    with pytest.raises(ValueError, match="frequency_ranks"):
        Transformer(vocab=V, d_model=32, n_heads=4, d_ff=64, n_layers=1, adaptive=True, tie_output=False, cutoffs=(50,))
