"""The parameter calculator recomputes headlessly, checks numel live, and explains impossible settings."""

from transformer_nb.params import PRESETS, param_breakdown
from transformer_nb.widgets.params import ParamCalculator


def test_presets_set_every_control_and_match_numel():
    w = ParamCalculator()
    w.refresh()
    assert w.last["breakdown"]["total"] == w.last["numel"] == 124_439_808
    assert w.last["published"] == PRESETS["gpt2-small"].published
    for name in ("llama2-70b", "bert-base", "transformer-base", "t5-base"):
        w.controls["preset"].value = name
        assert w.last["breakdown"] == param_breakdown(PRESETS[name]), name
        assert w.last["numel"] == w.last["breakdown"]["total"] and w.last["published"] == PRESETS[name].published
    assert w.fig is not None


def test_controls_change_the_count_and_errors_are_explained():
    w = ParamCalculator(preset="llama2-70b")
    w.refresh()
    gqa = w.last["breakdown"]["attention"]
    w.controls["n_kv_heads"].value = 64
    assert w.last["breakdown"]["attention"] > gqa and w.last["published"] is None
    w.controls["n_heads"].value = 60
    assert "must divide d_model" in w.last["error"] and w.fig is not None
    w.controls["n_heads"].value = 64
    before = w.last["breakdown"]["total"]
    w.controls["tie"].value = True
    assert before - w.last["breakdown"]["total"] == 32000 * 8192
    w.controls["activation"].value = "gelu"
    w.controls["ffn_ratio"].value = 4.0
    assert w.last["d_ff"] == 4 * 8192
