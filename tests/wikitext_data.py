"""Where the tests find WikiText-2: TNB_DATA_DIR, else ../shared/data beside the repo (None if neither)."""

import os
from pathlib import Path

import pytest

from transformer_nb import wikitext as wt

ROOT = Path(__file__).resolve().parents[1]


def data_root():
    """The complete ``wikitext-2`` folder, or None."""
    env = os.environ.get("TNB_DATA_DIR")
    for cand in ([env] if env else []) + [str(ROOT.parent / "shared" / "data")]:
        for c in wt._candidates(cand):
            if wt._complete(c):
                return c
    return None


DATA = data_root()
needs_data = pytest.mark.skipif(
    DATA is None, reason="WikiText-2 not found: set TNB_DATA_DIR or provide ../shared/data/wikitext-2"
)
