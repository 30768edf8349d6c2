"""The cache loads only what it saved: a flipped bit, other model or training code, another torch release or an
old-format file is refused with one line, and the model is retrained from where it started.

Issue 18, findings 1 and 4 (second half): before the sha256, a bit flipped in a tensor record
loaded silently; before the code digest, weights trained by older code loaded after a change.
"""

import linecache
import struct
import sys
import zipfile

import pytest
import torch
import torch.nn as nn

from transformer_nb import cache

CONFIG = {"d": 8}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 16)
        self.b = nn.Linear(16, 4)
        self.register_buffer("scale", torch.tensor([2.0, 3.0]))

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def _train(model):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.linspace(-1, 1, p.numel()).reshape(p.shape) * (i + 1))
    return {"losses": [3.0, 2.0, 1.0], "curve": torch.arange(5.0)}


def _tensor_records(path):
    """(start, length) of every tensor record's bytes inside a torch.save zip file."""
    raw = path.read_bytes()
    spans = []
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            if "/data/" in info.filename and not info.filename.endswith("serialization_id"):
                name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26 : info.header_offset + 30])
                start = info.header_offset + 30 + name_len + extra_len
                spans.append((start, info.file_size))
    return spans


@pytest.fixture
def saved(tmp_path, monkeypatch):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    extra, trained = cache.load_or_train("m", Net(), CONFIG, _train)
    assert trained
    return tmp_path / "m.pt"


def _flip(path, original: bytes, pos: int, bit: int) -> None:
    data = bytearray(original)
    data[pos] ^= 1 << bit
    path.write_bytes(bytes(data))


def test_an_intact_file_loads(saved):
    model = Net()
    ok, msg, extra = cache.load("m", model, CONFIG)
    assert ok, msg
    assert extra["losses"] == [3.0, 2.0, 1.0] and torch.equal(extra["curve"], torch.arange(5.0))


def test_one_flipped_bit_anywhere_in_the_tensor_data_is_refused(saved):
    original = saved.read_bytes()
    spans = _tensor_records(saved)
    assert len(spans) == 6  # two weights, two biases, the buffer, the extra tensor
    positions = [(s + off, (s + off) % 8) for s, n in spans for off in sorted({0, n // 3, n // 2, n - 1})]
    assert len(positions) >= 20
    for pos, bit in positions:
        _flip(saved, original, pos, bit)
        model = Net()
        before = {k: v.clone() for k, v in model.state_dict().items()}
        ok, msg, _ = cache.load("m", model, CONFIG)
        assert not ok and "damaged" in msg and "sha256" in msg, (pos, msg)
        assert all(torch.equal(before[k], v) for k, v in model.state_dict().items()), "a refused file touched the model"


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")  # a flipped bit can change the pickle's protocol byte
def test_a_flipped_bit_anywhere_in_the_file_never_loads_other_values(saved):
    """Outside the tensor records too (pickle, zip headers): refused, or loaded exactly as saved."""
    original = saved.read_bytes()
    reference = Net()
    assert cache.load("m", reference, CONFIG)[0]
    for pos in range(0, len(original), 13):  # every 13th byte, each bit in turn
        _flip(saved, original, pos, pos % 8)
        model = Net()
        ok, _, extra = cache.load("m", model, CONFIG)
        if ok:
            assert all(torch.equal(reference.state_dict()[k], v) for k, v in model.state_dict().items()), pos
            assert extra["losses"] == [3.0, 2.0, 1.0] and torch.equal(extra["curve"], torch.arange(5.0)), pos


def test_a_damaged_file_is_retrained_with_a_message(saved, capsys):
    original = saved.read_bytes()
    start, n = _tensor_records(saved)[0]
    _flip(saved, original, start + n // 2, 6)
    capsys.readouterr()
    model = Net()
    extra, trained = cache.load_or_train("m", model, CONFIG, _train)
    out = capsys.readouterr().out.strip().splitlines()
    assert trained and len(out) == 1 and "is damaged" in out[0] and out[0].endswith("retraining")
    ok, msg, _ = cache.load("m", Net(), CONFIG)  # the retrained result replaced the damaged file
    assert ok, msg


LAYERS = """import torch.nn as nn


class Layer(nn.Linear):
    \"\"\"{doc}\"\"\"

    def forward(self, x):  # {comment}
        return {body}
"""


def test_other_model_code_is_refused(tmp_path, monkeypatch):
    """A module defining the model changes: the cache names it and refuses; docstrings and comments do not count."""
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "fakepkg").mkdir()
    (tmp_path / "fakepkg" / "__init__.py").write_text("")
    layers = tmp_path / "fakepkg" / "layers.py"
    layers.write_text(LAYERS.format(doc="doc", comment="c", body="super().forward(x)"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cache, "PACKAGE", "fakepkg")  # treat fakepkg as the package whose code defines models
    for name in ("fakepkg", "fakepkg.layers"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    from fakepkg.layers import Layer

    cache.load_or_train("m", Layer(2, 2), CONFIG, _train)
    assert "fakepkg.layers" in torch.load(tmp_path / "cache" / "m.pt", weights_only=True)["code"]
    layers.write_text(LAYERS.format(doc="a longer docstring", comment="another comment", body="super().forward(x)"))
    assert cache.load("m", Layer(2, 2), CONFIG)[0], "a docstring or comment edit is not a code change"
    layers.write_text(LAYERS.format(doc="doc", comment="c", body="2 * super().forward(x)"))
    ok, msg, _ = cache.load("m", Layer(2, 2), CONFIG)
    assert not ok and "other code (fakepkg.layers changed)" in msg


def test_the_code_digest_covers_the_modules_the_model_uses():
    from transformer_nb import reversal
    from transformer_nb.core import transformer

    digests = cache.code_digests(reversal.build_model(reversal.IMPROVED.model, reversal.IMPROVED.init))
    assert {
        "transformer_nb.core.transformer",
        "transformer_nb.core.stack",
        "transformer_nb.core.attention",
        "transformer_nb.core.block",
    } <= digests.keys()
    assert not any(k.split(".")[1] in cache.NOT_MODEL_CODE for k in digests)
    assert transformer.__name__ in digests
    assert cache.code_digests(nn.Linear(2, 2)) == {}  # torch's own code: covered by the torch release


TRAINING = """import torch

from transformer_nb import cache


def train(model):
    \"\"\"{doc}\"\"\"
    with torch.no_grad():
        for p in model.parameters():
            p.fill_({value})  # {comment}
    return {{"loss": [{value}]}}


def load_or_train(model, config):
    def train_fn(m):  # a closure in the package, as the package's own trainers pass
        return train(m)

    return cache.load_or_train("m", model, config, train_fn)
"""


def test_training_code_edits_stale_the_model_and_docstring_edits_do_not(tmp_path, monkeypatch):
    """The digest covers the training code: a model trained by other training code is refused (with or
    without a train_fn, on the tree that trained it or not), a docstring or comment edit is no change."""
    import importlib

    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "fakepkg").mkdir()
    (tmp_path / "fakepkg" / "__init__.py").write_text("")
    (tmp_path / "fakepkg" / "layers.py").write_text(LAYERS.format(doc="d", comment="c", body="super().forward(x)"))
    training = tmp_path / "fakepkg" / "training.py"
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cache, "PACKAGE", "fakepkg")
    for name in ("fakepkg", "fakepkg.layers", "fakepkg.training"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    from fakepkg.layers import Layer

    def edit(**text):
        training.write_text(TRAINING.format(**{"doc": "d", "comment": "c", "value": "0.5", **text}))
        linecache.clearcache()
        return importlib.import_module("fakepkg.training") if "fakepkg.training" not in sys.modules else \
            importlib.reload(sys.modules["fakepkg.training"])  # fmt: skip

    clean = edit()
    assert clean.load_or_train(Layer(2, 2), CONFIG)[1]
    assert "fakepkg.training" in torch.load(tmp_path / "cache" / "m.pt", weights_only=True)["code"]
    docs = edit(doc="a longer docstring", comment="another comment")
    assert not docs.load_or_train(Layer(2, 2), CONFIG)[1], "a docstring or comment edit is not a code change"
    changed = edit(value="0.75")  # another loss
    assert not cache.load("m", Layer(2, 2), CONFIG)[0]  # no train_fn given: the recorded training code is checked
    model = Layer(2, 2)
    assert changed.load_or_train(model, CONFIG)[1] and bool((model.weight == 0.75).all())  # refused, retrained
    clean = edit()  # back on the clean tree: the model trained by the changed code must not load
    ok, msg, _ = cache.load("m", Layer(2, 2), CONFIG)
    assert not ok and "other code (fakepkg.training changed)" in msg


def test_the_digest_of_a_reversal_model_covers_its_training_code(tmp_path, monkeypatch):
    from dataclasses import replace

    from transformer_nb import reversal as rv

    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    rv.load_or_train(replace(rv.IMPROVED, name="digest", steps=1), device="cpu")
    (path,) = tmp_path.glob("*.pt")
    code = torch.load(path, weights_only=True)["code"]
    assert {
        "transformer_nb.reversal.training",
        "transformer_nb.train",
        "transformer_nb.core.transformer",
    } <= code.keys()


def test_another_torch_release_is_refused(saved, monkeypatch):
    monkeypatch.setattr(cache, "torch_release", lambda: "9.9.9")
    ok, msg, _ = cache.load("m", Net(), CONFIG)
    assert not ok and "torch" in msg and "9.9.9" in msg


def test_a_file_without_checksum_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    torch.save({"config": cache._canonical(CONFIG), "state_dict": Net().state_dict(), "extra": {}}, tmp_path / "m.pt")
    ok, msg, _ = cache.load("m", Net(), CONFIG)
    assert not ok and "no checksum" in msg


def test_weights_that_do_not_fit_leave_the_model_untouched(tmp_path, monkeypatch, capsys):
    """Before: load_state_dict copied the weights that fit before failing, so the 'retrain' started
    from a half-loaded model. Now a misfit is found first and nothing is copied."""
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    other = Net()
    other.b = nn.Linear(16, 5)  # same names, one shape differs
    _train(other)
    cache.save("m", other, CONFIG)
    model = Net()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    seen = []
    cache.load_or_train("m", model, CONFIG, lambda m: seen.append({k: v.clone() for k, v in m.state_dict().items()}))
    assert "does not fit" in capsys.readouterr().out
    assert all(torch.equal(before[k], v) for k, v in seen[0].items()), "training started from half-loaded weights"


def test_extra_that_weights_only_cannot_load_is_a_warning_not_a_lost_model(tmp_path, monkeypatch):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    model = Net()
    with pytest.warns(RuntimeWarning, match=r"extra\['when'\] is a object"):
        extra, trained = cache.load_or_train("m", model, CONFIG, lambda m: {"when": object()})
    assert trained and "when" in extra and not (tmp_path / "m.pt").exists()


@pytest.mark.parametrize(
    "call,exc,words",
    [
        (lambda: cache.cache_path("../up"), ValueError, "name"),
        (lambda: cache.cache_path(""), ValueError, "name"),
        (lambda: cache.load_or_train("m", "not a model", {}, _train), TypeError, "model"),
        (lambda: cache.load_or_train("m", Net(), {}, "train"), TypeError, "train_fn"),
        (lambda: cache.load_or_train("m", Net(), {}, lambda m: [1, 2]), TypeError, "train_fn must return a dict"),
        (lambda: cache.save("m", Net().to("meta"), {}), ValueError, "meta"),
        (lambda: cache.save("m", Net(), [1]), TypeError, "config must be a dict"),
        (lambda: cache.load("m", "not a model", {}), TypeError, "model must be a torch.nn.Module"),
        (lambda: cache.load("../m", Net(), {}), ValueError, "name must be"),
        (lambda: cache.load("m", Net(), "d=3"), TypeError, "config must be a dict"),
        (lambda: cache.code_digests("model"), TypeError, "model must be a torch.nn.Module"),
        (lambda: cache.payload_sha256({"d": 3}, {}, {}), TypeError, "config must be a str"),
        (lambda: cache.clean_stale(3), TypeError, "folder must be a path"),
    ],
)
def test_bad_arguments_are_named(tmp_path, monkeypatch, call, exc, words):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    with pytest.raises(exc, match=words):
        call()


def _cell_class(body: str, cell: int):
    """A class typed into a notebook cell: its code lives in linecache only, as IPython keeps it."""
    src = f"import torch.nn as nn\n\n\nclass Student(nn.Linear):\n    def forward(self, x):\n        return {body}\n"
    filename = f"<ipython-input-{cell}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    namespace = {"__name__": "__main__"}
    exec(compile(src, filename, "exec"), namespace)
    return namespace["Student"]


def test_a_model_class_typed_into_a_notebook_cell_is_digested_by_its_methods(tmp_path, monkeypatch):
    """The capstone's students define their model in a cell: editing it must retrain, not load old weights."""
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    cache.load_or_train("m", _cell_class("super().forward(x)", 1)(2, 2), CONFIG, _train)
    assert cache.load("m", _cell_class("super().forward(x)", 2)(2, 2), CONFIG)[0]  # the same code, re-run
    ok, msg, _ = cache.load("m", _cell_class("2 * super().forward(x)", 3)(2, 2), CONFIG)
    assert not ok and "other code (__main__.Student changed)" in msg
