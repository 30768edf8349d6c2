"""transformer-nb: the helper package behind the Transformer-chapter notebooks.

Only the infrastructure is imported here. Each chapter concept lives in its own
module and is imported explicitly, in book order, e.g.
``from transformer_nb.attention import scaled_dot_product_attention``.
"""
from transformer_nb.utils import setup, pick, profile, get_device, seed_everything
from transformer_nb.checks import check_close, check_equal, check_true, check_raises
from transformer_nb.source import show_source

__all__ = [
    "setup", "pick", "profile", "get_device", "seed_everything",
    "check_close", "check_equal", "check_true", "check_raises", "show_source",
]
__version__ = "0.1.0"
