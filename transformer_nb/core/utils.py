"""The argument checks the companion shares with the core; they live in ``checks.py``."""

from transformer_nb.core.checks import (  # noqa: F401
    as_device,
    as_int,
    as_real,
    available_devices,
    check_device,
    check_dropout,
    check_like,
    check_memory,
    is_int_tensor,
    memory_of,
    plain_tensor,
)
