"""``cache.cache_name``: one stable name per configuration, whatever the key order."""

import pytest

from transformer_nb.cache import cache_name


def test_same_config_same_name_any_key_order():
    assert cache_name("m", {"a": 1, "b": [2, 3]}) == cache_name("m", {"b": [2, 3], "a": 1})
    assert cache_name("m", {"a": 1}) != cache_name("m", {"a": 2})
    assert cache_name("m", {"a": 1}).startswith("m_") and len(cache_name("m", {"a": 1})) == len("m_") + 8


@pytest.mark.parametrize("prefix", ["", "a/b", "../x", ".hidden", None, 3, "a b"])
def test_bad_prefix_is_refused(prefix):
    with pytest.raises(ValueError, match="prefix"):
        cache_name(prefix, {})


def test_config_must_be_a_dict():
    with pytest.raises(TypeError, match="config"):
        cache_name("m", [1, 2])
