"""transformer-nb: the helper package behind the Transformer-chapter notebooks.

Only the infrastructure is imported here. Each chapter concept lives in its own
module and is imported explicitly, in book order, e.g.
``from transformer_nb.attention import scaled_dot_product_attention``.
"""

from transformer_nb.checks import check_close, check_equal, check_raises, check_true
from transformer_nb.source import show_source
from transformer_nb.utils import get_device, pick, profile, seed_everything, setup

__all__ = [
    "check_close",
    "check_equal",
    "check_raises",
    "check_true",
    "get_device",
    "pick",
    "profile",
    "seed_everything",
    "setup",
    "show_source",
]
__version__ = "0.1.0"
