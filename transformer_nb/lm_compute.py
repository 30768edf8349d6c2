"""Where a language model's compute goes (notebook 11, the engineering lab; ``bench lm``).

- ``flops_per_token``: model FLOPs of one training step per target token, split into the body
  (everything up to the hidden states) and the output head, counted by ``torch.utils.flop_counter``;
- ``time_steps``: training throughput in tokens/s (median step time, through ``train.train``);
- ``matmul_peak_gflops``: the best measured ``a @ b`` rate on a device and dtype, the yardstick of
- ``mfu``: model FLOPs utilisation, achieved FLOP/s over that peak;
- ``cpu_profile``: PyTorch's profiler over the CPU, without the log lines libkineto writes to stderr.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import replace

import torch
from torch.utils.flop_counter import FlopCounterMode

from transformer_nb.core.checks import check_language_model
from transformer_nb.core.transformer import LanguageModel
from transformer_nb.core.utils import as_device, as_real
from transformer_nb.lm_training import TrainConfig, make_optimizers, window_batches
from transformer_nb.train import train


@contextmanager
def cpu_profile():
    """``torch.profiler.profile`` over the CPU (yields the profiler). libkineto writes ``USDT: … profiler_start``
    and ``STAGE: …`` lines straight to file descriptor 2 whatever ``KINETO_LOG_LEVEL`` says; they are left out,
    and anything else written to stderr meanwhile is passed on."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                yield prof
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            lines = caught.read().decode(errors="replace").splitlines(keepends=True)
            sys.stderr.write("".join(line for line in lines if not line.startswith(("USDT:", "STAGE:"))))


def flops_per_token(model: LanguageModel, x: torch.Tensor, y: torch.Tensor, bf16: bool = False) -> dict:
    """FLOPs of one training step (forward + backward) per target token of ``y (B, T)``, for matmuls
    and attention: ``{"total", "body", "head", "head_share"}`` (``body``: up to the hidden states)."""
    check_language_model(model)
    device, was_training = next(model.parameters()).device, model.training
    model.train()
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        with FlopCounterMode(display=False) as fc:
            model(x, y)[1].backward()
        total = fc.get_total_flops()
        with FlopCounterMode(display=False) as fc:
            model.hidden(x)[0].float().sum().backward()
        body = fc.get_total_flops()
    model.zero_grad(set_to_none=True)
    model.train(was_training)
    n = y.numel()
    return {"total": total / n, "body": body / n, "head": (total - body) / n, "head_share": (total - body) / total}


def time_steps(model: LanguageModel, train_ids: torch.Tensor, cfg: TrainConfig, steps=8, warmup=2) -> float:
    """Training throughput in tokens/s: ``batch_size * seq_len`` over the median time of ``steps``
    optimiser steps (after ``warmup`` untimed ones), at a tiny learning rate. On a GPU the steps are
    synchronised, so the time is the device's."""
    check_language_model(model)
    device = next(model.parameters()).device
    cfg = replace(cfg, lr=1e-4, adamw_lr=None if cfg.adamw_lr is None else 1e-4)
    batches = window_batches(train_ids, cfg.batch_size, cfg.seq_len, cfg.seed, device)

    sync = torch.cuda.synchronize if device.type == "cuda" else lambda _: None
    clock = lambda: sync(device) or time.perf_counter()
    opts, n = make_optimizers(model, cfg), steps + warmup
    loss_fn = lambda m, b: m(b[0], b[1])[1]
    hist = train(model, loss_fn, batches, opts, steps=n, clip=cfg.clip or None, bf16=cfg.bf16, bar=False, clock=clock)
    model.train()
    return cfg.batch_size * cfg.seq_len / statistics.median(hist["step_seconds"][warmup:])


def matmul_peak_gflops(dtype=torch.float32, device="cpu", sizes=None, seconds: float = 1.5) -> float:
    """Best achieved GFLOP/s of ``a @ b`` (``2 n^3`` FLOPs) over ``sizes`` (default: 1024 and 2048 on a
    CPU, 4096 and 8192 on a GPU), each run for ~``seconds``."""
    device = as_device("device", device)
    if device.type == "meta":
        raise ValueError("device must hold values to time a matmul; 'meta' has shapes only")
    as_real("seconds", seconds, positive=True)
    sizes = sizes or ((4096, 8192) if device.type == "cuda" else (1024, 2048))
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    best, reps = 0.0, 10 if device.type == "cuda" else 1
    for n in sizes:
        a, b = torch.randn(n, n, device=device).to(dtype), torch.randn(n, n, device=device).to(dtype)
        for _ in range(3):
            a @ b  # warm-up
        sync()
        t_end = time.perf_counter() + seconds
        while time.perf_counter() < t_end:
            t = time.perf_counter()
            for _ in range(reps):
                a @ b
            sync()
            best = max(best, reps * 2 * n**3 / (time.perf_counter() - t) / 1e9)
    return best


def mfu(flops_per_token: float, tokens_per_s: float, peak_gflops: float) -> float:
    """Model FLOPs utilisation: ``flops_per_token * tokens_per_s / peak``, a fraction of 1 (all three finite,
    the rates > 0)."""
    for name, v in dict(flops_per_token=flops_per_token, tokens_per_s=tokens_per_s, peak_gflops=peak_gflops).items():
        as_real(name, v, positive=True)
    return flops_per_token * tokens_per_s / (peak_gflops * 1e9)
