"""The Muon option: it gets exactly the hidden weight matrices, AdamW the rest, and it trains."""
import pytest
import torch

from transformer_nb import lm


def _split(model, kind):
    cfg = lm.TrainConfig(steps=1, optimizer=kind)
    opts = lm.make_optimizers(model, cfg)
    return opts, [{id(p) for g in o.param_groups for p in g["params"]} for o in opts]


def test_transformer_blocks_matrices_go_to_muon_and_the_rest_to_adamw():
    ranks = torch.arange(50)
    m = lm.TransformerLM(50, d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=16, head="adaptive_tied",
                         ranks=ranks, cutoffs=(10, 30))
    opts, (muon, adamw) = _split(m, "muon")
    assert isinstance(opts[0], torch.optim.Muon) and isinstance(opts[1], torch.optim.AdamW)
    names = {id(p): n for n, p in m.named_parameters()}
    assert sorted(names[i] for i in muon) == sorted(n for n, p in m.named_parameters()
                                                    if n.startswith("layers.") and p.dim() == 2)
    assert len(muon) == 2 * 6                           # q, k, v, out, ff1, ff2 per block
    assert not muon & adamw and muon | adamw == set(names)
    assert all(not names[i].startswith("layers.") or m.get_parameter(names[i]).dim() == 1 for i in adamw)


def test_lstm_recurrent_and_projection_matrices_go_to_muon():
    m = lm.LSTMLM(40, d_model=8, hidden_size=12, n_layers=2, head="full")
    _, (muon, _) = _split(m, "muon")
    names = sorted(n for n, p in m.named_parameters() if id(p) in muon)
    assert names == ["proj.weight", "rnn.weight_hh_l0", "rnn.weight_hh_l1", "rnn.weight_ih_l0", "rnn.weight_ih_l1"]


def test_adamw_alone_covers_every_parameter():
    m = lm.LSTMLM(40, d_model=8, hidden_size=12, n_layers=1, head="full")
    opts, (only,) = _split(m, "adamw")
    assert len(opts) == 1 and only == {id(p) for p in m.parameters()}


def test_unknown_optimizer_is_refused():
    with pytest.raises(ValueError, match="optimizer must be one of"):
        lm.TrainConfig(steps=1, optimizer="sgd")


def test_muon_trains_a_tiny_model_and_follows_the_schedule():
    pattern = torch.arange(12).repeat(400)
    m = lm.build_model("transformer", 12, lm.frequency_ranks(pattern, 12), d_model=32, head="adaptive",
                       cutoffs=(4, 8), div_value=2.0, d_ff=64, n_layers=1, n_heads=2, max_len=32)
    cfg = lm.TrainConfig(steps=60, batch_size=8, seq_len=16, lr=1e-2, bf16=False, optimizer="muon",
                         eval_every=30, eval_tokens=500)
    hist = lm.train_lm(m, pattern, cfg, valid_ids=pattern[:600], live=False, disable_bar=True)
    assert hist["val_ppl"][-1] < 3.0                    # from 12 (uniform) towards 1
