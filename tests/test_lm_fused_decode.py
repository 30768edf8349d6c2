"""The benchmark's fused CPU decoding step (bench/_fused_decode.py) gives exactly the tokens of generate."""

import pytest
import torch

from transformer_nb.bench._fused_decode import block_weights, fused_generate, fused_hidden
from transformer_nb.generation import generate
from transformer_nb.lm import TransformerLM
from transformer_nb.output_head import frequency_ranks

V = 300


@pytest.mark.parametrize("positions", ["learned", "sinusoidal", "rope"])
@pytest.mark.parametrize("activation", ["relu", "gelu", "swiglu"])
def test_fused_step_gives_the_tokens_of_generate(positions, activation):
    torch.manual_seed(0)
    ranks = frequency_ranks(torch.randint(0, V, (3000,), generator=torch.Generator().manual_seed(1)), V)
    m = TransformerLM(
        V, d_model=32, n_heads=4, d_ff=64, n_layers=2, max_len=80, head="adaptive_tied", ranks=ranks,
        cutoffs=(40, 150), positions=positions, activation=activation,
    ).eval()  # fmt: skip
    prompt = torch.randint(0, V, (5,), generator=torch.Generator().manual_seed(3))
    assert torch.equal(fused_generate(m, prompt, 40), generate(m, prompt, 40))


def test_fused_step_refuses_what_it_was_not_written_for():
    m = TransformerLM(50, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16, head="full", positions="alibi")
    with pytest.raises(ValueError, match="ALiBi"):
        fused_generate(m, torch.tensor([1, 2]), 3)
    m = TransformerLM(50, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16, head="full")
    with pytest.raises(ValueError, match="exceeds max_len=16"):
        fused_generate(m, torch.tensor([1, 2]), 15)


def test_fused_step_gives_the_hidden_states_of_the_model():
    torch.manual_seed(0)
    m = TransformerLM(60, d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=40, head="full", positions="rope").eval()
    ids = torch.randint(0, 60, (1, 12), generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        want, _ = m.hidden(ids)
        turns = m.rope._turns(0, m.max_len, torch.float32)
        got = fused_hidden(m, ids, m.init_state(), block_weights(m), turns)
    torch.testing.assert_close(got, want)
    m.rope.pairing = "half"  # rope.py's other layout: the in-place rotation is written for interleaved pairs only
    with pytest.raises(ValueError, match="interleaved"):
        fused_generate(m, ids[0], 3)
