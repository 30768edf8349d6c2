"""A parameter calculator for instructors (notebook 07).

``ParamCalculator``: start from a named model (GPT-2, LLaMA-2, BERT, the original
Transformer, ...) or from scratch, then change the width, depth, heads, KV heads (GQA),
FFN ratio and activation, vocabulary, weight tying and positions; see where the parameters
go (embeddings vs attention vs FFN vs norms vs output head) as a bar chart and a pie.

Every count comes from ``params.param_breakdown`` (the formulas) and is checked, live,
against ``numel`` of the same model built on the meta device.
"""

import functools
import itertools

import ipywidgets as W
import matplotlib.pyplot as plt

from transformer_nb.core.config import ACTIVATIONS, ARCHS, POSITIONS
from transformer_nb.params import (
    CATEGORIES,
    PRESETS,
    TransformerConfig,
    block_rule,
    build_transformer,
    numel,
    param_breakdown,
)
from transformer_nb.widgets.base import STYLE, Widget, text_figure

COLORS = dict(embeddings="C0", positions="C9", attention="C1", ffn="C2", norms="C4", head="C3", other="C7")
CUSTOM = "custom"


def _fmt(n: float) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.3g}{unit}"
    return f"{n:.0f}"


@functools.lru_cache(maxsize=256)
def _meta_numel(cfg: TransformerConfig) -> int:
    """``numel`` of the model ``cfg`` describes, built on the meta device; cached, so that a control
    moved back and forth builds each model once."""
    return numel(build_transformer(cfg))


class ParamCalculator(Widget):
    """Controls: ``preset``, ``arch``, ``d_model``, ``n_layers``, ``n_heads``, ``n_kv_heads``, ``ffn_ratio``,
    ``activation``, ``vocab``, ``tie``, ``positions``.

    ``last``: ``config`` (the ``TransformerConfig``), ``breakdown`` (formula counts per category and
    ``total``), ``numel`` (the meta-device count), ``rule`` (``12·L·d²``), ``d_ff``; or ``error`` (a
    message) when the controls describe an impossible model (e.g. heads that do not divide d_model).
    """

    def __init__(self, preset: str = "gpt2-small", check_numel: bool = True):
        self.check_numel, self._applying = check_numel, False
        narrow = W.Layout(width="220px")
        super().__init__(
            dict(preset=preset),
            preset=W.Dropdown(options=[CUSTOM, *PRESETS], description="start from", style=STYLE),
            arch=W.Dropdown(options=ARCHS, description="arch", style=STYLE, layout=narrow),
            d_model=W.IntSlider(min=64, max=16384, step=64, description="d_model", style=STYLE),
            n_layers=W.IntSlider(min=1, max=128, description="layers", style=STYLE),
            n_heads=W.IntSlider(min=1, max=128, description="heads", style=STYLE),
            n_kv_heads=W.IntSlider(min=1, max=128, description="KV heads", style=STYLE),
            ffn_ratio=W.FloatSlider(min=0.5, max=8.0, step=0.125, description="d_ff / d_model", style=STYLE),
            activation=W.ToggleButtons(options=ACTIVATIONS, description="FFN", style={**STYLE, "button_width": "72px"}),
            vocab=W.BoundedIntText(min=1, max=1_000_000, description="vocabulary", style=STYLE, layout=narrow),
            tie=W.Checkbox(description="tie output to embedding", style=STYLE),
            positions=W.Dropdown(options=POSITIONS, description="positions", style=STYLE, layout=narrow),
        )
        self._apply_preset(preset if preset != CUSTOM else "gpt2-small")

    # the preset sets every other control; recompute once, not once per control
    def refresh(self, change=None):
        if self._applying:
            return self.last
        if isinstance(change, dict) and change.get("owner") is self.controls["preset"]:
            self._apply_preset(change["new"])
        return super().refresh()

    def _apply_preset(self, name: str) -> None:
        if name == CUSTOM:
            return
        cfg = PRESETS[name]
        values = dict(arch=cfg.arch, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads)
        values.update(n_kv_heads=cfg.kv_heads, ffn_ratio=cfg.ff / cfg.d_model, activation=cfg.activation)
        values.update(vocab=cfg.vocab, tie=cfg.tie_output, positions=cfg.positions)
        self._applying = True
        try:
            for name, value in values.items():
                self.controls[name].value = value
        finally:
            self._applying = False

    def config(
        self, preset, arch, d_model, n_layers, n_heads, n_kv_heads, ffn_ratio, activation, vocab, tie, positions
    ) -> TransformerConfig:
        """The ``TransformerConfig`` the controls describe (BERT/LLaMA details kept from the chosen preset); an
        impossible one raises ``ValueError`` here, when it is made."""
        base = PRESETS[preset if preset != CUSTOM else "gpt2-small"]
        fields = dict(name=base.name if preset != CUSTOM else "custom", arch=arch, d_model=d_model, n_layers=n_layers)
        fields.update(n_heads=n_heads, n_kv_heads=n_kv_heads, d_ff=max(1, round(ffn_ratio * d_model)))
        fields.update(activation=activation, vocab=vocab, tie_output=tie and base.lm_head, positions=positions)
        fields.update(n_dec_layers=None, tgt_vocab=None)
        if arch != "encoder-decoder":
            fields["share_embeddings"] = True
        return TransformerConfig(**{**base.__dict__, **fields})

    def compute(self, **values):
        try:
            cfg = self.config(**values)  # validated when it is made
        except ValueError as err:
            return {"error": str(err), "values": values}
        rule = cfg.n_layers * block_rule(cfg.d_model)
        out = dict(config=cfg, breakdown=param_breakdown(cfg), d_ff=cfg.ff, rule=rule, published=None)
        unchanged = values["preset"] != CUSTOM and out["breakdown"] == param_breakdown(PRESETS[values["preset"]])
        if unchanged:
            out["published"] = cfg.published  # the preset's count, unchanged by the controls
        out["label"] = cfg.name if unchanged or values["preset"] == CUSTOM else f"{cfg.name}, modified"
        out["numel"] = _meta_numel(cfg) if self.check_numel else None
        return out

    def draw(self, data):
        if "error" in data:
            return text_figure("impossible model:\n" + data["error"], "C3", (9, 1.4))
        cats = [c for c in CATEGORIES if data["breakdown"][c] > 0]
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10.5, 3.8), width_ratios=[1.6, 1], layout="constrained")
        ax1.barh(cats, [1] * len(cats), color=[COLORS[c] for c in cats])
        ax1.invert_yaxis()
        for _ in cats:
            ax1.text(0, 0, "", va="center", fontsize=9)
        ax1.set_xlabel("parameters (each bar says how many)")
        ax1.tick_params(bottom=False, labelbottom=False)  # its scale changes at each redraw; the labels say it
        ax1.set_title(" \n ", fontsize=10, loc="left", y=1)  # placed once, not at each redraw
        ring = dict(width=0.45, edgecolor="white")  # its angles set by update
        ax2.pie([1] * len(cats), colors=[COLORS[c] for c in cats], wedgeprops=ring, labeldistance=None)
        ax2.text(0, 0, "", ha="center", va="center", fontsize=12, weight="bold")
        ax2.set_title("share of the total", fontsize=10)
        self._cats = cats
        self.update(fig, data)
        fig.set_layout_engine("none")  # laid out once: later redraws keep it (and skip its cost)
        return fig

    def update(self, fig, data) -> bool:
        """Bars, labels, ring and title of ``data`` into the figure ``draw`` made, if it shows
        the same categories (else False: ``draw`` builds a new one)."""
        if "error" in data or len(fig.axes) != 2:
            return False
        b = data["breakdown"]
        cats = [c for c in CATEGORIES if b[c] > 0]
        if cats != self._cats:
            return False
        ax1, ax2 = fig.axes
        vals = [b[c] for c in cats]
        for bar, label, v in zip(ax1.patches, ax1.texts, vals):
            bar.set_width(v)
            label.set_position((v, bar.get_y() + bar.get_height() / 2))
            label.set_text(f" {_fmt(v)} ({100 * v / b['total']:.1f}%)")
        ax1.set_xlim(0, max(vals) * 1.45)
        ends = [90 - 360 * c / sum(vals) for c in itertools.accumulate(vals, initial=0)]  # clockwise from the top
        for wedge, start, end in zip(ax2.patches, ends, ends[1:]):
            wedge.set(theta1=end, theta2=start)
        ax2.texts[0].set_text(_fmt(b["total"]))
        self.animated = [*ax1.patches, *ax1.texts, ax1._left_title, *ax2.patches, ax2.texts[0]]  # see Widget.png
        check = ""
        if data["numel"] is not None:
            check = "  ✓ = numel on meta" if data["numel"] == b["total"] else f"  ✗ numel {data['numel']:,}"
        pub = f" | published: {_fmt(data['published'])}" if data.get("published") else ""
        ax1.set_title(
            f"{data['label']}: {b['total']:,} parameters{check}\n"
            f"d_ff = {data['d_ff']}, 12·L·d² rule: {_fmt(data['rule'])}, fp16 weights: "
            f"{2 * b['total'] / 1e9:.3g} GB{pub}",
            fontsize=10,
            loc="left",
        )
        return True
