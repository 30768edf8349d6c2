"""transformer-nb: the helper package behind the Transformer-chapter notebooks.

Two layers. The core is the Transformer the chapter teaches, one concept a module, imported
explicitly in book order, e.g. ``from transformer_nb.core.attention import scaled_dot_product_attention``.
The companion (exercises, the claims ledger, widgets, lecture mode, benchmarks, the model cache and the
notebook tools) imports the core; the core never imports it (``tests/test_core_never_imports_companion.py``).

The notebooks' infrastructure is reachable from here, loaded on first use, so that importing a core
module loads no companion code.
"""

from importlib import import_module

_LAZY = {
    "check_close": "checks",
    "check_equal": "checks",
    "check_raises": "checks",
    "check_true": "checks",
    "show_source": "source",
    "get_device": "env",
    "pick": "env",
    "profile": "env",
    "seed_everything": "env",
    "setup": "env",
}
__all__ = sorted(_LAZY)
__version__ = "0.1.0"


def __getattr__(name: str):
    """``transformer_nb.setup`` and friends, imported from their module when first asked for."""
    if name not in _LAZY:
        raise AttributeError(f"module 'transformer_nb' has no attribute {name!r}")
    value = getattr(import_module(f"transformer_nb.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
