"""The argument checks the companion shares with the core; they live in ``checks.py``."""

from transformer_nb.core.checks import *  # noqa: F403
