"""Cache writes never lose or damage a model.

- Two processes training the same name at once both keep their model, and the file left behind loads.
- An unwritable cache folder (a file in its place or in the way, read-only) or a full disk is a warning that
  names the run, and the trained model is still returned; the old file stays and no temporary file is left.
  Ctrl-C during a save is a ``KeyboardInterrupt`` and leaves nothing.
- The model stays on the device it was given on every path: load, refusal, retrain.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from transformer_nb import cache

CONFIG = {"d": 3}
ROOT = str(Path(__file__).resolve().parents[1])  # the subprocesses import this checkout's package


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
    env = {**os.environ, "TNB_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": ROOT}
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
        assert "could not cache" not in err.decode()
    assert [o.decode().split()[-2:] for o, _ in outs] == [["ok", "1.0"], ["ok", "2.0"]]
    model = nn.Sequential(nn.Linear(512, 1024), nn.Linear(1024, 512))  # 4 MB: writes overlap
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path / "cache"))
    ok, msg, extra = cache.load("same", model, {"d": 256})
    assert ok, msg
    assert extra["who"] in ("1.0", "2.0") and all(bool((p == float(extra["who"])).all()) for p in model.parameters())
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["same.pt"], "temporary files were left behind"


@pytest.mark.parametrize("folder", ["cache", "blocker/cache"])
def test_an_unwritable_folder_keeps_the_model_in_memory_with_a_warning(tmp_path, monkeypatch, folder):
    """The cache folder is a file, or a file stands where a parent folder should be."""
    (tmp_path / folder.split("/")[0]).write_text("a file, not a folder")
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path / folder))
    model = nn.Linear(3, 2)
    with pytest.warns(RuntimeWarning, match="could not cache m .*kept in memory only.*TNB_CACHE_DIR"):
        extra, trained = cache.load_or_train("m", model, CONFIG, _train)
    assert trained and extra == {"losses": [1.0]} and torch.all(model.weight == 0.5)


TRAIN_AND_REPORT = """
import os, sys, warnings, torch, torch.nn as nn
from transformer_nb import cache

def train(m):
    with torch.no_grad():
        for p in m.parameters():
            p.fill_(0.25)
    return {"losses": [1.0]}

def train_and_report(model, config, **kw):  # the model is trained and kept; the warnings are printed
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        extra, trained = cache.load_or_train("m", model, config, train, **kw)
    assert trained and extra == {"losses": [1.0]}
    assert all(bool((p == 0.25).all()) for p in model.parameters()), "the trained model was lost"
    print("|".join(str(w.message) for w in caught))
"""
READ_ONLY = (
    TRAIN_AND_REPORT
    + """
if os.geteuid() == 0:
    os.setgid(65534)
    os.setuid(65534)  # nobody: the permission bits apply again
train_and_report(nn.Linear(3, 2), {"d": 3})
"""
)


def test_a_read_only_cache_folder():
    """As root the permission bits do not apply, so the check runs as user nobody."""
    folder = Path(tempfile.mkdtemp(prefix="tnb-ro-"))  # in /tmp: every user can reach it
    folder.chmod(0o555)
    env = {**os.environ, "TNB_CACHE_DIR": str(folder), "HOME": str(folder), "PYTHONPATH": ROOT}
    try:
        out = subprocess.run(
            [sys.executable, "-c", READ_ONLY], env=env, capture_output=True, text=True, timeout=120, cwd="/"
        )
        left = list(folder.iterdir())
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "could not cache m" in out.stdout and "PermissionError" in out.stdout
    assert left == []


FULL_DISK = (
    TRAIN_AND_REPORT
    + """
import resource, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))  # like `ulimit -f`: files of 20 kB at most
cache.load_or_train("m", nn.Linear(2, 2), {"d": 100}, train)  # a small file that fits
old = cache.cache_path("m").read_bytes()
train_and_report(nn.Linear(100, 100), {"d": 100}, retrain=True)  # 40 kB of weights: the write cannot complete
assert cache.cache_path("m").read_bytes() == old, "the old file was damaged"
"""
)


def test_a_full_disk_keeps_the_model_in_memory_warns_and_leaves_the_old_file(tmp_path):
    env = {**os.environ, "TNB_CACHE_DIR": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": ROOT}
    out = subprocess.run([sys.executable, "-c", FULL_DISK], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "could not cache m" in out.stdout and "File too large" in out.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["m.pt"]  # no temporary file


def test_ctrl_c_during_a_save_is_a_keyboard_interrupt_and_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
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
