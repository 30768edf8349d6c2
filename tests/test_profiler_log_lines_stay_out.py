"""``lm_compute.cpu_profile`` (notebook 11's operator profile) keeps libkineto's ``USDT: … profiler_start`` and
``STAGE:`` lines, written straight to file descriptor 2, out of the output; anything else on stderr still shows."""

import os

import torch

from transformer_nb import lm_compute


def test_kineto_lines_are_dropped_and_other_stderr_is_kept(capfd):
    with lm_compute.cpu_profile() as prof:
        torch.ones(8) @ torch.ones(8)
        os.write(2, b"a real warning\n")
    out, err = capfd.readouterr()
    assert "USDT" not in out + err and "STAGE:" not in out + err
    assert "a real warning" in err
    assert any(e.key == "aten::dot" or e.key == "aten::matmul" for e in prof.key_averages())


def test_stderr_is_restored_after_an_error(capfd):
    try:
        with lm_compute.cpu_profile():
            raise KeyError("inside")
    except KeyError:
        pass
    os.write(2, b"after\n")
    assert "after" in capfd.readouterr().err
