"""Property-based tests of ``transformer_nb.cache``: names are stable per configuration, and whatever is saved
loads back exactly (weights and extra)."""

import os
import re
import tempfile
from unittest import mock

import torch
import torch.nn as nn
from hypothesis import given
from hypothesis import strategies as st
from property_helpers import expect_refusal

from transformer_nb import cache

JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-100, 100), st.floats(allow_nan=False), st.text(max_size=4)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=8,
)
CONFIGS = st.dictionaries(st.text(min_size=1, max_size=5), JSON, max_size=5)


@given(config=CONFIGS, prefix=st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True))
def test_cache_name_depends_on_content_not_key_order(config, prefix):
    name = cache.cache_name(prefix, config)
    assert name == cache.cache_name(prefix, dict(reversed(list(config.items()))))
    assert name.startswith(prefix + "_") and len(name) == len(prefix) + 9
    cache.cache_path(name)  # a valid file name


@given(prefix=st.one_of(st.text(max_size=4), st.none(), st.integers(), st.just("../up"), st.just(".hidden")))
def test_cache_name_accepts_exactly_plain_file_names(prefix):
    valid = isinstance(prefix, str) and re.fullmatch(r"[A-Za-z0-9_.-]+", prefix) and not prefix.startswith(".")
    if valid:
        assert cache.cache_name(prefix, {}).startswith(prefix + "_")
    else:
        expect_refusal(cache.cache_name, ["prefix"], prefix, {})


@st.composite
def state(draw):
    """A small state dict of random shapes and dtypes, and the name of one tensor."""
    tensors = {}
    for i in range(draw(st.integers(1, 3))):
        shape = tuple(draw(st.lists(st.integers(1, 4), max_size=3)))
        dtype = draw(st.sampled_from([torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.bool]))
        t = torch.randn(shape, generator=torch.Generator().manual_seed(i + 7 * len(shape)))
        tensors[f"p{i}"] = (t > 0) if dtype == torch.bool else (t * 10).to(dtype)
    return tensors, draw(st.sampled_from(sorted(tensors)))


class Bag(nn.Module):
    """A module whose state is exactly the given tensors (as buffers)."""

    def __init__(self, tensors):
        super().__init__()
        for k, v in tensors.items():
            self.register_buffer(k, v.clone())


@given(state(), JSON, CONFIGS)
def test_what_is_saved_loads_back_exactly(case, extra, config):
    tensors, key = case
    with tempfile.TemporaryDirectory() as folder, mock.patch.dict(os.environ, TNB_CACHE_DIR=folder):
        assert cache.save("x", Bag(tensors), config, {"e": extra, "t": tensors[key]}) is not None
        target = Bag({k: torch.zeros_like(v) for k, v in tensors.items()})
        ok, msg, got = cache.load("x", target, config)
        assert ok, msg
        assert all(torch.equal(getattr(target, k), v) for k, v in tensors.items())
        assert got["e"] == extra and torch.equal(got["t"], tensors[key])
