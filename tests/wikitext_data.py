"""Where the tests find WikiText-2: where the loader finds it without downloading (None if nowhere)."""

import pytest

from transformer_nb.wikitext_files import find_data_dir

try:
    DATA = find_data_dir(download=False)
except FileNotFoundError:
    DATA = None
needs_data = pytest.mark.skipif(DATA is None, reason="WikiText-2 not found: set TNB_DATA_DIR or run doctor")
