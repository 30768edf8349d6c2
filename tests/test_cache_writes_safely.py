"""Cache writes never lose or damage a model (issue 18, findings 2, 3 and 4).

- Two processes training the same name at once both keep their model, and the file left behind
  loads (before: both wrote ``<name>.tmp``; one failed after training and the survivor was damaged).
- An unwritable cache folder (not a directory, a file in the way, read-only) is a warning and the
  trained model is still returned (before: FileNotFoundError / NotADirectoryError after training).
- Temporary files of interrupted writes are removed (before: ``<name>.tmp`` stayed for ever), at a
  load as well as at a save (before: only at the next save into that folder).
- A full disk is a warning and the trained model is still returned, with no temporary file (before:
  torch's ``RuntimeError: ... unexpected pos`` after training, and a ``.tmp`` left behind); Ctrl-C
  during a save is a ``KeyboardInterrupt`` and leaves nothing (before: a ``RuntimeError``).
- The model stays on the device it was given on every path: load, refusal, retrain.
"""

import io
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from transformer_nb import cache

CONFIG = {"d": 3}


def _train(model):
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(0.5)
    return {"losses": [1.0]}


WORKER = textwrap.dedent(
    """
    import pathlib, sys, time, torch, torch.nn as nn
    from transformer_nb import cache

    ready = pathlib.Path(sys.argv[1])

    def train(m):
        with torch.no_grad():
            for p in m.parameters():
                p.fill_(float(sys.argv[2]))
        return {"who": sys.argv[2]}

    (ready / sys.argv[2]).touch()
    while len(list(ready.iterdir())) < 2:  # start together: both have imported torch
        time.sleep(0.01)

    model = nn.Sequential(nn.Linear(512, 1024), nn.Linear(1024, 512))  # 4 MB: writes overlap
    for i in range(10):  # many overlapping writes of the same name
        extra, trained = cache.load_or_train("same", model, {"d": 256}, train, retrain=True)
    assert trained and extra["who"] == sys.argv[2]
    assert all(bool((p == float(sys.argv[2])).all()) for p in model.parameters()), "the trained model was lost"
    print("ok", sys.argv[2])
    """
)


def test_two_concurrent_trainers_of_one_name_never_collide(tmp_path, monkeypatch):
    env = {**os.environ, "TNB_CACHE_DIR": str(tmp_path / "cache")}
    (tmp_path / "ready").mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(tmp_path / "ready"), who],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for who in ("1.0", "2.0")
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err.decode()[-2000:]
        assert "could not write" not in err.decode()
    assert [o.decode().split()[-2:] for o, _ in outs] == [["ok", "1.0"], ["ok", "2.0"]]
    model = nn.Sequential(nn.Linear(512, 1024), nn.Linear(1024, 512))  # 4 MB: writes overlap
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path / "cache"))
    ok, msg, extra = cache.load("same", model, {"d": 256})
    assert ok, msg
    assert extra["who"] in ("1.0", "2.0") and all(bool((p == float(extra["who"])).all()) for p in model.parameters())
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["same.pt"], "temporary files were left behind"


def _assert_kept(model, extra, trained):
    assert trained and extra == {"losses": [1.0]}
    assert torch.all(model.weight == 0.5), "the trained model was lost"


def test_cache_folder_is_a_file(tmp_path, monkeypatch):
    (tmp_path / "cache").write_text("a file, not a folder")
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path / "cache"))
    model = nn.Linear(3, 2)
    with pytest.warns(RuntimeWarning, match="could not write the cache.*kept in memory only"):
        _assert_kept(model, *cache.load_or_train("m", model, CONFIG, _train))


def test_a_file_in_the_way_of_the_cache_folder(tmp_path, monkeypatch):
    (tmp_path / "blocker").write_text("a file where a parent folder should be")
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path / "blocker" / "cache"))
    model = nn.Linear(3, 2)
    with pytest.warns(RuntimeWarning, match="could not write the cache.*TNB_CACHE_DIR"):
        _assert_kept(model, *cache.load_or_train("m", model, CONFIG, _train))


READ_ONLY = textwrap.dedent(
    """
    import os, sys, warnings, torch, torch.nn as nn
    from transformer_nb import cache
    if os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)  # nobody: the permission bits apply again
    def train(m):
        with torch.no_grad():
            m.weight.fill_(0.5)
        return {"losses": [1.0]}
    model = nn.Linear(3, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        extra, trained = cache.load_or_train("m", model, {"d": 3}, train)
    assert trained and extra == {"losses": [1.0]} and bool((model.weight == 0.5).all())
    print("|".join(str(w.message) for w in caught))
    """
)


def test_a_read_only_cache_folder():
    """As root the permission bits do not apply, so the check runs as user nobody."""
    folder = Path(tempfile.mkdtemp(prefix="tnb-ro-"))  # in /tmp: every user can reach it
    folder.chmod(0o555)
    env = {**os.environ, "TNB_CACHE_DIR": str(folder), "HOME": str(folder)}
    try:
        out = subprocess.run(
            [sys.executable, "-c", READ_ONLY], env=env, capture_output=True, text=True, timeout=120, cwd="/"
        )
        left = list(folder.iterdir())
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "could not write the cache" in out.stdout and "PermissionError" in out.stdout
    assert left == []


def test_stale_temporaries_are_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    legacy = tmp_path / "m.tmp"  # what the old code left behind
    of_dead_writer = tmp_path / f".m.pt.{int(dead.stdout)}-0123abcd.tmp"
    old = tmp_path / f".x.pt.{os.getppid()}-0123abcd.tmp"  # a live process, but a day old
    live = tmp_path / f".y.pt.{os.getppid()}-89abcdef.tmp"  # a write in progress elsewhere
    for p in (legacy, of_dead_writer, old, live):
        p.write_bytes(b"half a file")
    os.utime(old, (time.time() - 86400, time.time() - 86400))
    cache.load_or_train("m", nn.Linear(3, 2), CONFIG, _train)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["m.pt", live.name])


def test_interrupted_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    cache.load_or_train("m", nn.Linear(3, 2), CONFIG, _train)
    before = (tmp_path / "m.pt").read_bytes()

    def full_disk(obj, f, *a, **k):
        f.write(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache.torch, "save", full_disk)
    model = nn.Linear(3, 2)
    with pytest.warns(RuntimeWarning, match="No space left"):
        _assert_kept(model, *cache.load_or_train("m", model, CONFIG, _train, retrain=True))
    assert (tmp_path / "m.pt").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.pt"]


def test_a_load_removes_the_temporaries_of_dead_writers(tmp_path, monkeypatch):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    of_dead_writer = tmp_path / f".m.pt.{int(dead.stdout)}-0123abcd.tmp"
    live = tmp_path / f".y.pt.{os.getppid()}-89abcdef.tmp"  # a write in progress elsewhere
    for p in (of_dead_writer, live):
        p.write_bytes(b"half a file")
    assert not cache.load("m", nn.Linear(3, 2), CONFIG)[0]
    assert [p.name for p in tmp_path.iterdir()] == [live.name]


FULL_DISK = textwrap.dedent(
    """
    import pathlib, resource, signal, sys, warnings, torch, torch.nn as nn
    from transformer_nb import cache

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as on a full disk
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))  # like `ulimit -f`: files of 20 kB at most

    def train(m):
        with torch.no_grad():
            for p in m.parameters():
                p.fill_(0.25)
        return {"losses": [1.0, 0.5]}

    model = nn.Linear(100, 100)  # 40 kB of weights: the write cannot complete
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        extra, trained = cache.load_or_train("m", model, {"d": 100}, train)
    assert trained and extra == {"losses": [1.0, 0.5]}
    assert all(bool((p == 0.25).all()) for p in model.parameters()), "the trained model was lost"
    print([str(w.message) for w in caught])
    """
)


def test_a_full_disk_keeps_the_model_in_memory_warns_and_leaves_no_temporary(tmp_path):
    env = {**os.environ, "TNB_CACHE_DIR": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", FULL_DISK], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "could not write the cache" in out.stdout and "File too large" in out.stdout
    assert list(tmp_path.iterdir()) == []  # no .pt, no .tmp


class _InterruptedFile(io.FileIO):
    """A cache file that Ctrl-C interrupts after a few writes (torch.save wraps it in a RuntimeError)."""

    def write(self, b):
        self.writes = getattr(self, "writes", 0) + 1
        if self.writes > 3:
            raise KeyboardInterrupt
        return super().write(b)


def test_ctrl_c_during_a_save_is_a_keyboard_interrupt_and_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "open", lambda path, mode: _InterruptedFile(path, "w"), raising=False)
    with pytest.raises(KeyboardInterrupt):
        cache.save("m", nn.Linear(30, 30), CONFIG)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- devices


def _where(model):
    return [(id(t), t.device) for t in (*model.parameters(), *model.buffers())]


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
def test_the_model_stays_on_its_device_on_every_path(tmp_path, monkeypatch, device):
    """Load, refusal (damaged file, other config) and retrain: the same tensors, on the same device."""
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).to(device)
    where = _where(model)
    cache.load_or_train("m", model, CONFIG, _train)  # trains
    assert _where(model) == where
    cache.load_or_train("m", model, CONFIG, _train)  # loads
    assert _where(model) == where
    data = bytearray((tmp_path / "m.pt").read_bytes())
    data[-200] ^= 0xFF
    (tmp_path / "m.pt").write_bytes(bytes(data))
    _, trained = cache.load_or_train("m", model, CONFIG, _train)  # refused, retrained
    assert trained and _where(model) == where
    _, trained = cache.load_or_train("m", model, {"d": 4}, _train)  # another config: refused, retrained
    assert trained and _where(model) == where


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a second device")
def test_a_train_fn_that_moves_the_model_gives_it_back(tmp_path, monkeypatch):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    model = nn.Linear(3, 2).to("cuda")
    cache.load_or_train("m", model, CONFIG, lambda m: _train(m.cpu()))
    assert model.weight.device.type == "cuda"
