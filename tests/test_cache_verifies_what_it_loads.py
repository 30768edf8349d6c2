"""The cache loads only what it saved: a damaged file, another configuration, other model or training code,
another torch release or weights that do not fit are refused with one line that names the run (never a path),
and the model is retrained from where it started.
"""

import linecache
import sys

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


@pytest.fixture
def saved(tmp_path, monkeypatch):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    extra, trained = cache.load_or_train("m", Net(), CONFIG, _train)
    assert trained
    return tmp_path / "m.pt"


def test_a_second_run_loads_what_the_first_trained_unless_retrain(saved, capsys):
    model = Net()
    extra, trained = cache.load_or_train("m", model, CONFIG, lambda m: pytest.fail("trained again"))
    assert not trained and not model.training
    assert extra["losses"] == [3.0, 2.0, 1.0] and torch.equal(extra["curve"], torch.arange(5.0))
    reference = Net()
    _train(reference)
    assert all(torch.equal(reference.state_dict()[k], v) for k, v in model.state_dict().items())
    assert capsys.readouterr().out.splitlines()[-1] == "loaded the trained m from the cache"
    calls = []
    assert cache.load_or_train("m", Net(), CONFIG, lambda m: calls.append(1), retrain=True)[1] and calls == [1]


def _flip_every_13th_bit(data: bytes):
    for pos in range(0, len(data), 13):
        flipped = bytearray(data)
        flipped[pos] ^= 1 << (pos % 8)
        yield bytes(flipped)


DAMAGE = {
    "not a torch file": lambda data: [b"not a torch file"],
    "truncated": lambda data: [data[: len(data) // 2]],
    "a flipped bit anywhere": _flip_every_13th_bit,
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_file_is_refused_untouched_and_retrained(saved, capsys, damage):
    original = saved.read_bytes()
    for data in DAMAGE[damage](original):
        saved.write_bytes(data)
        model = Net()
        before = {k: v.clone() for k, v in model.state_dict().items()}
        ok, msg, _ = cache.load("m", model, CONFIG)
        assert not ok and msg.startswith("m is damaged") and str(saved.parent) not in msg, msg
        assert all(torch.equal(before[k], v) for k, v in model.state_dict().items()), "a refused file touched it"
    capsys.readouterr()
    _, trained = cache.load_or_train("m", Net(), CONFIG, _train)
    out = capsys.readouterr().out.strip().splitlines()
    assert trained and len(out) == 1 and out[0].endswith("; retraining")
    assert cache.load("m", Net(), CONFIG)[0], "the retrained model replaced the damaged file"


LAYERS = """import torch.nn as nn


class Layer(nn.Linear):
    \"\"\"{doc}\"\"\"

    def forward(self, x):  # {comment}
        return {body}
"""


@pytest.fixture
def fakepkg(tmp_path, monkeypatch):
    """A package ``fakepkg`` that the cache treats as its own: ``layers.py`` defines the model ``Layer``."""
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "fakepkg").mkdir()
    (tmp_path / "fakepkg" / "__init__.py").write_text("")
    (tmp_path / "fakepkg" / "layers.py").write_text(LAYERS.format(doc="doc", comment="c", body="super().forward(x)"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cache, "PACKAGE", "fakepkg")
    for name in ("fakepkg", "fakepkg.layers", "fakepkg.training"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return tmp_path / "fakepkg"


def test_other_model_code_is_refused(fakepkg):
    """A module defining the model changes: the cache names it and refuses; docstrings and comments do not count."""
    from fakepkg.layers import Layer

    layers = fakepkg / "layers.py"

    cache.load_or_train("m", Layer(2, 2), CONFIG, _train)
    assert "fakepkg.layers" in cache.read("m", CONFIG)[0]["code"]
    layers.write_text(LAYERS.format(doc="a longer docstring", comment="another comment", body="super().forward(x)"))
    assert cache.load("m", Layer(2, 2), CONFIG)[0], "a docstring or comment edit is not a code change"
    layers.write_text(LAYERS.format(doc="doc", comment="c", body="2 * super().forward(x)"))
    ok, msg, _ = cache.load("m", Layer(2, 2), CONFIG)
    assert not ok and "other code (fakepkg.layers changed)" in msg


def test_the_code_digest_covers_the_model_and_training_code_not_torch_or_infrastructure():
    from dataclasses import replace

    from transformer_nb import reversal as rv

    _, model, _, train_fn = rv.run(replace(rv.IMPROVED, name="digest", steps=1), device="cpu")
    digests = cache.code_digests(model, train_fn)
    modules = {"transformer_nb.core." + m for m in ("transformer", "stack", "attention", "block")}
    assert modules | {"transformer_nb.reversal.training", "transformer_nb.train"} <= digests.keys()
    assert modules <= cache.code_digests(model).keys()
    assert not any(k.split(".")[1] in cache.NOT_MODEL_CODE for k in digests)
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


def test_training_code_edits_stale_the_model_and_docstring_edits_do_not(fakepkg):
    """The digest covers the training code: a model trained by other training code is refused (with or
    without a train_fn, on the tree that trained it or not), a docstring or comment edit is no change."""
    import importlib

    from fakepkg.layers import Layer

    training = fakepkg / "training.py"

    def edit(**text):
        training.write_text(TRAINING.format(**{"doc": "d", "comment": "c", "value": "0.5", **text}))
        linecache.clearcache()
        return importlib.import_module("fakepkg.training") if "fakepkg.training" not in sys.modules else \
            importlib.reload(sys.modules["fakepkg.training"])  # fmt: skip

    clean = edit()
    assert clean.load_or_train(Layer(2, 2), CONFIG)[1]
    assert "fakepkg.training" in cache.read("m", CONFIG)[0]["code"]
    docs = edit(doc="a longer docstring", comment="another comment")
    assert not docs.load_or_train(Layer(2, 2), CONFIG)[1], "a docstring or comment edit is not a code change"
    changed = edit(value="0.75")  # another loss
    assert not cache.load("m", Layer(2, 2), CONFIG)[0]  # no train_fn given: the recorded training code is checked
    model = Layer(2, 2)
    assert changed.load_or_train(model, CONFIG)[1] and bool((model.weight == 0.75).all())  # refused, retrained
    clean = edit()  # back on the clean tree: the model trained by the changed code must not load
    ok, msg, _ = cache.load("m", Layer(2, 2), CONFIG)
    assert not ok and "other code (fakepkg.training changed)" in msg


@pytest.mark.parametrize(
    "change,words",
    [
        (lambda saved, mp: mp.setattr(cache, "TORCH", "9.9.9"), "this is torch 9.9.9"),
        (lambda saved, mp: CONFIG.update(d=9), "was saved for another configuration"),
        (lambda saved, mp: torch.save({"config": "{}", "state_dict": {}}, saved), "old format"),
    ],
)
def test_another_torch_configuration_or_format_is_refused_and_retrained(saved, monkeypatch, capsys, change, words):
    monkeypatch.setattr(sys.modules[__name__], "CONFIG", dict(CONFIG))
    change(saved, monkeypatch)
    assert cache.load_or_train("m", Net(), CONFIG, _train)[1] and words in capsys.readouterr().out


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
    with pytest.warns(RuntimeWarning, match=r"could not cache m \(UnpicklingError"):
        extra, trained = cache.load_or_train("m", model, CONFIG, lambda m: {"when": object()})
    assert trained and "when" in extra and not (tmp_path / "m.pt").exists()


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
