"""Every widget of the companion, in book order: where it is shown and how it is built.

The lecture notebook (14) shows them all, ``python -m transformer_nb.widgets.timing`` times them,
and a test keeps this list, the notebooks' widget cells and the lecture notebook in step.
"""

from dataclasses import dataclass, field
from importlib import import_module

__all__ = ["WIDGETS", "build"]


@dataclass(frozen=True)
class Entry:
    """One widget: the notebook that shows it, its class (``module``, ``name``), the keyword
    arguments that notebook passes, and the trained model it needs (``None``, ``"reversal"``,
    ``"lm"``)."""

    notebook: str
    module: str
    name: str
    kwargs: dict = field(default_factory=dict)
    needs: str | None = None

    def cls(self):
        return getattr(import_module(f"transformer_nb.widgets.{self.module}"), self.name)


WIDGETS = [
    Entry("00_start_here", "warmup", "SoftmaxTemperature"),
    Entry("01_scaled_attention", "attention", "ScalingWidget", {"d_k": 64, "scaled": True, "n_keys": 10}),
    Entry("02_masking", "masks", "MaskExplorer"),
    Entry("03_multihead_attention", "multihead", "HeadsWidget"),
    Entry("04_positional_encodings", "positional", "SinusoidFingerprint"),
    Entry("04_positional_encodings", "positional", "AlibiExplorer"),
    Entry("05_rope", "rope", "RotatePair"),
    Entry("06_transformer_block", "block", "DepthWidget"),
    Entry("07_parameter_counting", "params", "ParamCalculator", {"preset": "llama2-7b"}),
    Entry("08_architecture_variants", "models", "VariantWidget"),
    Entry("09_reversal_translation", "reversal", "ReversalWidget", needs="reversal"),
    Entry("10_wikitext_lm", "lm", "GenerateWidget", needs="lm"),
]


def build(entry: Entry, models: dict | None = None):
    """The widget of ``entry``; ``models`` maps ``"reversal"`` to a reversal model and ``"lm"`` to
    ``(language model, vocab)`` for the widgets that need one."""
    cls = entry.cls()
    if entry.needs is None:
        return cls(**entry.kwargs)
    if not models or entry.needs not in models:
        raise ValueError(f"{entry.name} needs a trained {entry.needs} model: pass models={{{entry.needs!r}: ...}}")
    model = models[entry.needs]
    args = model if isinstance(model, tuple) else (model,)
    return cls(*args, **entry.kwargs)
