"""The tied adaptive head ("adaptive input"): embeddings are the softmax weights, scaled by sqrt(d)."""

import math

import model_helpers
import pytest
import torch

V, D = 300, 32


def tied():
    return model_helpers.lm("adaptive_tied", V, n_layers=1, positions="rope")


def test_a_word_embeds_as_its_head_row_or_through_its_cluster_projection_times_sqrt_d():
    m = tied()
    word = int((m.head.ranks == 3).nonzero())  # the word of frequency rank 3
    emb = m.embed_tokens(torch.tensor([[word]]))[0, 0]
    assert torch.allclose(emb, m.head.asm.head.weight[3] * math.sqrt(D))
    assert m.tok is None and not any(n.startswith("tok.") for n, _ in m.named_parameters())  # no second table
    word = int((m.head.ranks == 200).nonzero())  # third cluster: ranks 150..299
    proj, rows = m.head.asm.tail[1]
    expected = rows.weight[200 - 150] @ proj.weight * math.sqrt(D)
    assert torch.allclose(m.embed_tokens(torch.tensor([[word]]))[0, 0], expected, atol=1e-6)


def test_the_generation_table_equals_the_training_path_and_follows_updates():
    m = tied()
    ids = torch.arange(V).view(3, 100)
    train_path = m.embed_tokens(ids)
    assert torch.allclose(m.head.embedding_table(), train_path.view(V, D), atol=1e-6)
    with m.head.lookup_table():
        assert torch.allclose(m.embed_tokens(ids), train_path, atol=1e-6)  # one lookup per token
    assert m.head._table is None  # gone after the block: nothing is cached on the module
    with torch.no_grad():
        m.head.asm.head.weight.mul_(2.0)  # the next table sees the update
    with m.head.lookup_table():
        after = m.embed_tokens(ids)
    frequent = m.head.ranks[ids] < 40
    assert torch.allclose(after[frequent], 2 * train_path[frequent])
    assert not hasattr(m.head, "_memos") and type(m.head).train is torch.nn.Module.train  # no memo, no train() override


def test_an_open_lookup_table_serves_every_generation_inside_it():
    from transformer_nb.core.generation import generate

    m = tied()
    with m.head.lookup_table():
        table = m.head._table
        m.head.embedding_table = lambda: pytest.fail("the table was built again")
        a = generate(m, torch.tensor([1, 2]), 5)
        assert m.head._table is table  # generate's own lookup_table() reused the open one
    del m.head.embedding_table
    assert torch.equal(a, generate(m, torch.tensor([1, 2]), 5)) and m.head._table is None
