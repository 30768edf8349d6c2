"""The Muon option: Muon gets exactly the hidden weight matrices, AdamW the rest.

That Muon trains is in test_lm_training_and_eval (every model kind with every optimizer).
"""

import torch

from transformer_nb import lm_training, lstm
from transformer_nb.core import transformer


def _split(model, kind):
    cfg = lm_training.TrainConfig(steps=1, optimizer=kind)
    opts = lm_training.make_optimizers(model, cfg)
    return opts, [{id(p) for g in o.param_groups for p in g["params"]} for o in opts]


def test_transformer_blocks_matrices_go_to_muon_and_the_rest_to_adamw():
    ranks = torch.arange(50)
    sizes = dict(d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=16)
    m = transformer.Transformer(vocab=50, **sizes, adaptive=True, ranks=ranks, cutoffs=(10, 30))
    opts, (muon, adamw) = _split(m, "muon")
    assert isinstance(opts[0], torch.optim.Muon) and isinstance(opts[1], torch.optim.AdamW)
    names = {id(p): n for n, p in m.named_parameters()}
    assert sorted(names[i] for i in muon) == sorted(
        n for n, p in m.named_parameters() if n.startswith("blocks.layers.") and p.dim() == 2
    )
    assert len(muon) == 2 * 6  # q, k, v, out, ff1, ff2 per block
    assert not muon & adamw and muon | adamw == set(names)
    assert all(not names[i].startswith("blocks.layers.") or m.get_parameter(names[i]).dim() == 1 for i in adamw)


def test_lstm_recurrent_and_projection_matrices_go_to_muon():
    m = lstm.LSTMLM(40, d_model=8, hidden_size=12, n_layers=2, head="full")
    _, (muon, _) = _split(m, "muon")
    names = sorted(n for n, p in m.named_parameters() if id(p) in muon)
    assert names == ["proj.weight", "rnn.weight_hh_l0", "rnn.weight_hh_l1", "rnn.weight_ih_l0", "rnn.weight_ih_l1"]


def test_adamw_alone_covers_every_parameter_and_adamw_lr_sets_only_the_adamw_half_of_muon():
    m = lstm.LSTMLM(40, d_model=8, hidden_size=12, n_layers=1, head="full")
    opts, (only,) = _split(m, "adamw")
    assert len(opts) == 1 and only == {id(p) for p in m.parameters()}
    muon, adamw = lm_training.make_optimizers(
        m, lm_training.TrainConfig(steps=1, optimizer="muon", lr=2e-3, adamw_lr=8e-3)
    )
    assert {g["lr"] for g in muon.param_groups} == {2e-3}
    assert {g["lr"] for g in adamw.param_groups} == {8e-3}
    muon, adamw = lm_training.make_optimizers(m, lm_training.TrainConfig(steps=1, optimizer="muon", lr=2e-3))
    assert {g["lr"] for g in adamw.param_groups} == {2e-3}
