"""Lecture mode (transformer_nb.lecture, notebooks/py/14_lecture.py): every widget in book order, models
loaded from the cache and never trained there, the best one cached (full, else the small quick one) with a
line saying which, the student's capstone model when there is one, a clear message naming `make lecture`
when one is missing, `make lecture` training only the small models that are missing whatever TNB_PROFILE
says, and the very configurations notebooks 09 and 10 train."""

import ast
import dataclasses
import re
import time
from pathlib import Path

import pytest

from transformer_nb import lecture
from transformer_nb.widgets.catalog import WIDGETS

ROOT = Path(__file__).resolve().parents[1]
TWIN = ROOT / "notebooks" / "py" / "14_lecture.py"


def _calls(path: Path):
    """Every call in the twin, as (dotted function name, node), in order."""
    tree = ast.parse(re.sub(r"^# %matplotlib.*$", "", path.read_text(encoding="utf-8"), flags=re.M))
    calls = [(ast.unparse(n.func), n) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    return sorted(calls, key=lambda c: (c[1].lineno, c[1].col_offset))


def test_the_lecture_shows_every_widget_in_book_order_and_never_trains():
    calls = _calls(TWIN)
    shown = [ast.unparse(n.func.value.func) for name, n in calls if name.endswith(".show")]
    assert shown == [e.name for e in WIDGETS] + ["GenerateWidget"]  # and the capstone's model in 10's widget
    headings = re.findall(r"^# ## (\d\d) ·", TWIN.read_text(encoding="utf-8"), flags=re.M)
    assert headings == sorted(headings) and set(headings) >= {e.notebook[:2] for e in WIDGETS}
    names = [name for name, _ in calls]
    assert not [n for n in names if re.search(r"train|prepare|fit|backward|step", n)], names
    assert [n for n in names if n.startswith("lecture.")] == ["lecture.cached"] * 3


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TNB_PROFILE", "full")
    return tmp_path


def test_a_cold_cache_is_a_message_that_names_make_lecture(empty_cache, monkeypatch, capsys):
    t0 = time.perf_counter()
    assert lecture.cached("reversal", "cpu") is None
    assert time.perf_counter() - t0 < 30  # it loaded nothing and trained nothing
    out = capsys.readouterr().out
    assert out.startswith(f"⚠ no trained reversal model in the cache {empty_cache} (neither the full-profile nor ")
    assert "Run `make lecture` once" in out and f"about {lecture.COLD_MINUTES['quick']['reversal']} min" in out
    assert list(empty_cache.iterdir()) == []  # nothing written
    with pytest.raises(lecture.NotPrepared, match="make lecture"):
        lecture.reversal_model("cpu")
    monkeypatch.setattr(lecture, "_wikitext", (empty_cache / "no WikiText-2 here").read_text)
    assert lecture.cached("lm", "cpu") is None  # no data: the command that fetches it
    assert f"`{lecture.FETCH_DATA}`, then `make lecture`" in capsys.readouterr().out


def test_make_lecture_caches_what_the_lecture_then_loads_without_training(empty_cache, monkeypatch):
    from transformer_nb import cache
    from transformer_nb import reversal as rv

    monkeypatch.setattr(rv, "IMPROVED", dataclasses.replace(rv.IMPROVED, steps=3))  # a tiny stand-in run
    monkeypatch.setattr(rv, "N_EVAL", 20)
    lecture.prepare("cpu", names=("reversal",))
    calls = []
    monkeypatch.setattr(rv.training, "train", lambda *a, **k: calls.append(a))  # training now would be a bug
    model = lecture.cached("reversal", "cpu")
    assert model is not None and not model.training and calls == []
    name, trained, config, train_fn = rv.run(
        rv.IMPROVED, rv.heldout_set(rv.N_EVAL), eval_every=rv.EVAL_EVERY, target=rv.TARGET, device="cpu"
    )
    assert not cache.load_or_train(name, trained, config, train_fn)[1]
    sd, loaded = trained.state_dict(), model.state_dict()
    assert all((sd[k] == loaded[k]).all() for k in sd)  # the notebook's call finds the same cache entry


def test_notebooks_09_and_10_train_what_the_lecture_loads():
    """09 runs ``rv.IMPROVED`` with the evaluation constants of ``reversal``, 10 its Transformer as
    ``lm_recipe.NOTEBOOK_RUN`` says: the runs the lecture loads."""
    nb09 = (ROOT / "notebooks" / "py" / "09_reversal_translation.py").read_text(encoding="utf-8")
    nb10 = (ROOT / "notebooks" / "py" / "10_wikitext_lm.py").read_text(encoding="utf-8")
    assert re.search(r"^N_EVAL = rv\.N_EVAL\b", nb09, flags=re.M) and "rv.heldout_set(N_EVAL)" in nb09
    assert re.search(r"^EVAL_EVERY = rv\.EVAL_EVERY\b", nb09, flags=re.M)
    improved = re.search(r"rv\.run\(\s*rv\.IMPROVED,(.*?)\)\n", nb09, flags=re.S).group(1)
    assert "eval_every=EVAL_EVERY" in improved and "target=rv.TARGET" in improved
    assert re.search(r"^RUN = pick\(\*\*lm_recipe\.NOTEBOOK_RUN\)", nb10, flags=re.M)
    for line in ('STEPS = RUN["steps"]', 'VAL_TOKENS = RUN["eval_tokens"]', 'VAL_EVERY = RUN["eval_every"]'):
        assert re.search(rf"^{re.escape(line)}", nb10, flags=re.M), line
    assert "val = dict(data=data, eval_tokens=VAL_TOKENS, eval_every=VAL_EVERY)" in nb10
    assert '"transformer": dict(kind="transformer", steps=STEPS, **val)' in nb10


def _fake_wikitext(n_words: int = 12_000):
    """A stand-in for ``load_wikitext2()``: a vocabulary and random train/valid ids (no data file needed)."""
    import torch

    from transformer_nb.wikitext import Vocab, WikiText2

    vocab = Vocab([f"w{i}" for i in range(n_words)])
    train = torch.randint(0, len(vocab), (4000,), generator=torch.Generator().manual_seed(0))
    return WikiText2(train=train, valid=train[:1000], test=train[:1000], vocab=vocab, folder=Path("."))


def test_make_lecture_in_the_full_profile_trains_the_small_lm_that_the_full_profile_lecture_then_shows(
    empty_cache, monkeypatch, capsys
):
    data = _fake_wikitext()
    monkeypatch.setattr(lecture, "_wikitext", lambda: data)
    from transformer_nb import lm_recipe

    monkeypatch.setitem(lm_recipe.NOTEBOOK_RUN, "quick", {"steps": 2, "eval_tokens": 256, "eval_every": 2})  # tiny
    lecture.prepare("cpu", names=("lm",))  # TNB_PROFILE=full, as `make lecture` under `make lab`
    assert [p.name.startswith("wikitext2_transformer_") for p in empty_cache.iterdir()] == [True]
    model, prof = lecture.best("lm", "cpu")
    assert prof == "quick" and not model[0].training
    capsys.readouterr()
    assert lecture.cached("lm", "cpu") is not None
    out = capsys.readouterr().out
    assert out.startswith("showing notebook 10's language model, lecture-sized (quick profile")
    assert "`python -m transformer_nb.lecture --full lm`" in out
    lecture.prepare("cpu", names=("lm",))  # trains only what is missing: nothing now
    assert "already cached (quick profile)" in capsys.readouterr().out


def test_the_lecture_prefers_the_full_model_and_make_lecture_keeps_it(empty_cache, monkeypatch, capsys):
    loaded, trained = [], []

    def fake(device=None, train=False, data=None, prof=None):
        if train:
            trained.append(prof)
            return "trained"
        loaded.append(prof)
        if prof != "full":
            raise lecture.NotPrepared("no quick one")
        return ("full model", "vocab")

    monkeypatch.setitem(lecture.LOADERS, "lm", fake)
    monkeypatch.setattr(lecture, "_wikitext", lambda: None)
    assert lecture.best("lm", "cpu") == (("full model", "vocab"), "full")
    lecture.prepare("cpu", names=("lm",))
    assert trained == [] and "already cached (full profile)" in capsys.readouterr().out
    said = "showing notebook 10's language model, trained in the full profile"
    assert lecture.describe("lm", ("m", "v"), "full") == said


def test_the_capstone_widget_shows_the_students_model_when_notebook_12_trained_one(empty_cache, monkeypatch, capsys):
    import torch

    from transformer_nb import cache
    from transformer_nb.exercises import capstone_train as ct
    from transformer_nb.exercises.capstone_lm import package_logits
    from transformer_nb.exercises.solutions import capstone as sol

    data = _fake_wikitext(50)
    V = len(data.vocab)
    monkeypatch.setattr(lecture, "_wikitext", lambda: data)
    with pytest.raises(lecture.NotPrepared, match="make lecture"):
        lecture.capstone_model("cpu", prof="quick")
    student = ct.build(sol.LanguageModel, V)  # the student-style model, under the student's own names
    with torch.no_grad():
        for p in student.parameters():
            p.add_(0.01 * torch.randn(p.shape, generator=torch.Generator().manual_seed(1)))
    name, config = ct._entry("student", V, "quick")
    cache.save(name, student, config, {"steps": 2})
    assert lecture.cached("capstone", "cpu") is not None
    out = capsys.readouterr().out
    assert out.startswith("showing your capstone model (notebook 12), lecture-sized")
    (model, vocab), prof = lecture.best("capstone", "cpu")
    assert prof == "quick" and model.shows.startswith("your")
    ids = torch.arange(10)[None]
    with torch.no_grad():
        assert torch.allclose(package_logits(model, ids), student.eval()(ids), atol=1e-5)  # the student's weights


def test_a_damaged_student_file_falls_back_to_the_reference_message(empty_cache, monkeypatch):
    from transformer_nb import cache
    from transformer_nb.exercises import capstone_train as ct

    cache.cache_path(ct._entry("student", 50, "quick")[0]).write_bytes(b"not a torch file")
    assert lecture.student_capstone(50, "quick", "cpu") is None
