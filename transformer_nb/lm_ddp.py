"""Train the WikiText-2 recipe on several processes with DistributedDataParallel::

    torchrun --standalone --nproc_per_node=2 -m transformer_nb.lm_ddp --threads 1

Every process holds a copy of the model and reads its own windows of the training stream
(``lm_training.window_batches``: one seeded order per epoch, process ``r`` takes every ``world``-th
window from ``r``), so ``world`` processes together read exactly what one process reads: the
recipe's ``batch_size`` is the batch of all processes together. After each backward pass DDP
averages the gradients, so every copy takes the same step. The logged losses and the validation
perplexity are averaged / summed across processes; process 0 saves the trained model in the
cache under the name of notebook 10's run (``lm_recipe.run``: same recipe, same steps).

CPU: the gloo backend, ``--threads`` torch threads per process. GPU: NCCL, one GPU per process.
The models hold registered buffers (RoPE's cos/sin tables), so they are wrapped with
``forward_sync_buffers=False`` (``broadcast_buffers=False`` on older torch: the buffers are
constants) and evaluated through the unwrapped module on every rank: a forward through the
wrapper on one rank alone would wait for the others forever.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from transformer_nb import cache
from transformer_nb.bench import check_positive_flags
from transformer_nb.core.utils import as_device
from transformer_nb.env import check_module
from transformer_nb.lm_recipe import FULL_STEPS, run
from transformer_nb.lm_training import TrainConfig, train_lm
from transformer_nb.perplexity import evaluate
from transformer_nb.wikitext import load_wikitext2


def wrap(model: torch.nn.Module, device: torch.device) -> DistributedDataParallel:
    """``model`` in ``DistributedDataParallel``, as this module trains it: constant buffers are not
    re-broadcast at every forward; a parameter a batch does not reach (an adaptive-softmax cluster
    without a word in it) is allowed."""
    check_module("model", model)
    device = as_device("device", device)
    ids = [device.index] if device is not None and device.type == "cuda" else None
    new = "forward_sync_buffers" in inspect.signature(DistributedDataParallel.__init__).parameters  # torch >= 2.12
    no_sync = {"forward_sync_buffers" if new else "broadcast_buffers": False}
    return DistributedDataParallel(model, device_ids=ids, find_unused_parameters=True, **no_sync)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="torchrun --standalone --nproc_per_node=N -m transformer_nb.lm_ddp")
    p.add_argument("--steps", type=int, default=FULL_STEPS, help="optimizer steps (default: the notebook's full run)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads per process (default 1)")
    p.add_argument("--eval-tokens", type=int, default=20_000, help="validation tokens of each point")
    p.add_argument("--final-eval-tokens", type=int, default=None, help="validation tokens at the end (default all)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds a collective may wait (default 300)")
    p.add_argument("--no-save", action="store_true", help="do not write the cache")
    args = p.parse_args(argv)
    check_positive_flags(p, args, "steps", "threads", "eval_tokens", "final_eval_tokens", "timeout")

    cuda = torch.cuda.is_available()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.set_num_threads(args.threads)
    dist.init_process_group("nccl" if cuda else "gloo", timeout=timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    try:
        data = load_wikitext2(progress=False)
        name, model, config, _ = run("transformer", data, args.steps, device=device, eval_tokens=args.eval_tokens)
        tcfg = TrainConfig(**config["train"])  # notebook 10's run: its cache name, its seeded model
        if rank == 0:
            how, b, t = "NCCL" if cuda else f"gloo, {args.threads} thread(s) each", tcfg.batch_size, tcfg.seq_len
            print(f"{world} processes ({how}); batch {b} = {world} x {b // world} windows of {t}", flush=True)
        t0 = time.perf_counter()
        hist = train_lm(wrap(model, device), data.train, tcfg, data.valid, live=False, bar=rank == 0)
        wall = time.perf_counter() - t0
        final = evaluate(model, data.valid, tcfg.seq_len, tcfg.eval_batch_size, args.final_eval_tokens,
                         tcfg.bf16, tcfg.eval_stride)  # fmt: skip
        if rank == 0:
            path = None if args.no_save else cache.save(name, model, config, hist, train_lm)
            result = dict(world=world, steps=hist["steps"], tokens_per_s=round(hist["tokens_per_s"], 1),
                          train_s=round(hist["train_seconds"], 1), wall_s=round(wall, 1),
                          val_ppl=round(final["ppl"], 2), saved=str(path) if path else None)  # fmt: skip
            print(json.dumps(result), flush=True)
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
