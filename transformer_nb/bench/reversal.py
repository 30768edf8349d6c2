"""``python -m transformer_nb.bench reversal``: train the reversal task from scratch, then the text's recipe.

1. The improved recipe (``reversal.IMPROVED``) trains until greedy decoding gets at least
   ``--target`` (default 99.9%) of 1,000 held-out sequences exactly right, evaluating every
   ``--eval-every`` steps once the training loss is below ``--eval-below``. ``train_seconds``
   counts the optimisation steps (data, forward, backward, update); ``eval_seconds`` the
   evaluations; ``wall_seconds`` both (on a GPU, up to a final synchronisation).
2. Throughput: ``--throughput-steps`` more steps of the same recipe with no evaluation, timed
   between two synchronisations: ``tokens_per_s`` (real source + target tokens per second),
   the FLOPs of a step (``torch.utils.flop_counter``), and on a GPU the MFU against that GPU's
   bf16 matmul peak, measured here (``peak_bf16_tflops``; the model trains in fp32).
3. The text's recipe as written (``reversal.TEXT_RECIPE``: 30 epochs over 2,000 pairs) runs in the
   same process and is scored on the same held-out set.

``--device`` picks the device (default ``cpu``). The last line printed is one JSON object.
"""

import argparse
import json
import os
import platform
import time
from dataclasses import replace

import torch
from torch.utils.flop_counter import FlopCounterMode

from transformer_nb import reversal as rv
from transformer_nb.bench import check_positive_flags
from transformer_nb.core.utils import as_device, as_int


def sync(device: torch.device) -> None:
    """Wait for the device's queued work (a no-op on the CPU)."""
    device = as_device("device", device)
    if device is not None and device.type == "cuda":
        torch.cuda.synchronize(device)


def run_improved(
    eval_batch, target: float, eval_every: int, seed: int, recipe=rv.IMPROVED, eval_below=None, device="cpu"
) -> dict:
    device = torch.device(device)
    model = rv.build_model(recipe.model, recipe.init, seed=seed, device=device)
    t0 = time.perf_counter()
    hist = rv.train(model, recipe, eval_batch, eval_every=eval_every, target=target, seed=seed, eval_below=eval_below)
    sync(device)
    return {"model": model, "hist": hist, "wall": time.perf_counter() - t0}


def run_text(eval_batch, seed: int, eval_every: int, epochs: int = 30, device="cpu") -> dict:
    recipe = replace(rv.TEXT_RECIPE, steps=epochs * rv.TEXT_RECIPE.steps_per_epoch())
    model = rv.build_model(recipe.model, recipe.init, seed=seed, device=device)
    t0 = time.perf_counter()
    hist = rv.train(model, recipe, eval_batch, eval_every=eval_every, target=None, seed=seed)
    sync(torch.device(device))
    return {"model": model, "hist": hist, "wall": time.perf_counter() - t0}


def _check_recipe(recipe) -> None:
    if not isinstance(recipe, rv.Recipe):
        raise TypeError(f"recipe must be a reversal Recipe (e.g. reversal.IMPROVED), got {type(recipe).__name__}")


def step_flops(recipe, device) -> int:
    """FLOPs of one training step's forward and backward (matmuls and attention), on a batch as trained."""
    _check_recipe(recipe)
    model = rv.build_model(recipe.model, recipe.init, seed=0, device=device).train()
    width = rv.MAX_LEN if torch.device(device).type == "cuda" else None  # as rv.train pads on a GPU
    b = next(rv.batches(recipe, torch.Generator().manual_seed(0), device=device, width=width))
    with FlopCounterMode(display=False) as counter:
        logits = model(b.src, keep=b.src_keep, tgt=b.tgt_in, tgt_keep=b.tgt_keep)[0]
        rv.loss_fn(logits, b.tgt_out, recipe.label_smoothing).backward()
    return counter.get_total_flops()


def peak_bf16_flops(device: torch.device, n: int = 8192, repeats: int = 20) -> float:
    """The device's measured bf16 matmul rate in FLOP/s (``n × n`` by ``n × n``, best of ``repeats``)."""
    device, n, repeats = as_device("device", device), as_int("n", n, 1), as_int("repeats", repeats, 1)
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    best = float("inf")
    for i in range(repeats + 3):
        sync(device)
        t0 = time.perf_counter()
        a @ b
        sync(device)
        if i >= 3:  # warm-up first
            best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best


def throughput(recipe, steps: int, seed: int, device: torch.device) -> dict:
    """``steps`` training steps without evaluation, timed between two synchronisations."""
    _check_recipe(recipe)
    run = replace(recipe, steps=as_int("steps", steps, 1))
    model = rv.build_model(run.model, run.init, seed=seed, device=device)
    stream = rv.batches(run, torch.Generator().manual_seed(seed))  # the same batches train() draws, on the CPU
    tokens = sum(int(b.src_keep.sum() + b.tgt_keep.sum()) for b, _ in zip(stream, range(steps)))
    sync(device)
    t0 = time.perf_counter()
    rv.train(model, run, None, eval_every=steps, seed=seed)
    sync(device)
    seconds = time.perf_counter() - t0
    flops = step_flops(run, device)
    out = {
        "throughput_steps": steps,
        "throughput_seconds": round(seconds, 3),
        "ms_per_step": round(1e3 * seconds / steps, 3),
        "tokens_per_s": round(tokens / seconds),
        "flops_per_step": flops,
        "achieved_tflops": round(flops * steps / seconds / 1e12, 4),
    }
    if device.type == "cuda":
        peak = peak_bf16_flops(device)
        out.update(peak_bf16_tflops=round(peak / 1e12, 1), mfu=round(flops * steps / seconds / peak, 6))
    return out


def _device(name: str) -> torch.device:
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"--device {name}: this machine has no CUDA device (torch {torch.__version__})")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise SystemExit(f"--device {name}: MPS is not available on this machine")
    if device.type == "meta":
        raise SystemExit("--device meta holds no values: choose cpu, cuda or mps")
    return device


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m transformer_nb.bench reversal",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--device", default="cpu", help="cpu (default), cuda, cuda:1, mps")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    p.add_argument("--target", type=float, default=0.999, help="exact match to reach (default 0.999)")
    p.add_argument("--eval-every", type=int, default=25, help="evaluate every N steps (default 25)")
    p.add_argument(
        "--eval-below",
        type=float,
        default=0.6,
        help="... once the mean training loss of those N steps is below this (default 0.6; "
        "the smoothed loss cannot go below 0.537)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-eval", type=int, default=1000, help="held-out sequences (default 1000)")
    p.add_argument("--skip-text", action="store_true", help="do not run the text's recipe")
    p.add_argument("--text-epochs", type=int, default=30, help="epochs of the text's recipe (default 30, as written)")
    p.add_argument("--max-steps", type=int, default=None, help="cap on the improved recipe's steps")
    p.add_argument("--throughput-steps", type=int, default=100, help="steps of the throughput run (0: skip it)")
    args = p.parse_args(argv)
    check_positive_flags(p, args, "threads", "eval_every", "n_eval", "text_epochs", "max_steps")
    if not 0 < args.target <= 1 or args.throughput_steps < 0:
        p.error(f"--target must be in (0, 1] and --throughput-steps >= 0, got {args.target}, {args.throughput_steps}")

    device = _device(args.device)
    torch.set_num_threads(args.threads)
    eval_batch = rv.heldout_set(args.n_eval, device=device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    print(
        f"reversal benchmark | {device} ({name}) | torch {torch.__version__} | threads {torch.get_num_threads()} | "
        f"{args.n_eval} held-out sequences, target exact match {args.target:.1%}",
        flush=True,
    )

    recipe = rv.IMPROVED if args.max_steps is None else replace(rv.IMPROVED, steps=args.max_steps)
    imp = run_improved(eval_batch, args.target, args.eval_every, args.seed, recipe, args.eval_below, device)
    h = imp["hist"]
    for s, t, em in zip(h["eval_step"], h["eval_train_seconds"], h["exact_match"]):
        print(f"  improved  step {s:5d}  train {t:6.2f} s  exact match {em:.3f}", flush=True)
    final = rv.evaluate(imp["model"], eval_batch)
    print(
        f"improved recipe: {h['steps']} steps, {h['train_seconds']:.2f} s training "
        f"(+{h['eval_seconds']:.2f} s evaluating), exact match {final['exact_match']:.4f}, "
        f"per-token {final['token_accuracy']:.4f}",
        flush=True,
    )

    result = {
        "bench": "reversal",
        "device": str(device),
        "device_name": name,
        "exact_match": round(final["exact_match"], 4),
        "token_accuracy": round(final["token_accuracy"], 4),
        "reached_target": bool(h["reached"]),
        "train_seconds": round(h["train_seconds"], 2),
        "eval_seconds": round(h["eval_seconds"], 2),
        "wall_seconds": round(imp["wall"], 2),
        "steps": h["steps"],
        "batch_size": recipe.batch_size,
        "n_eval": args.n_eval,
    }
    if args.throughput_steps > 0:
        tp = throughput(recipe, args.throughput_steps, args.seed, device)
        mfu = f", MFU {tp['mfu']:.2e} of a {tp['peak_bf16_tflops']} TFLOP/s bf16 peak" if "mfu" in tp else ""
        print(f"throughput: {tp['tokens_per_s']:,} tokens/s, {tp['ms_per_step']} ms/step{mfu}", flush=True)
        result.update(tp)

    if not args.skip_text:
        spe = rv.TEXT_RECIPE.steps_per_epoch()
        txt = run_text(eval_batch, args.seed, eval_every=5 * spe, epochs=args.text_epochs, device=device)
        th = txt["hist"]
        for s, t, em in zip(th["eval_step"], th["eval_train_seconds"], th["exact_match"]):
            print(f"  text      epoch {s // spe:3d}  train {t:6.2f} s  exact match {em:.3f}", flush=True)
        tf = rv.evaluate(txt["model"], eval_batch)
        demo = rv.greedy_decode(txt["model"], torch.tensor([[3, 5, 7, 9, 4]]))[0]
        demo = [int(t) for t in demo if t != rv.PAD]
        print(
            f"text recipe: {th['steps']} steps ({args.text_epochs} epochs), {th['train_seconds']:.2f} s, exact match "
            f"{tf['exact_match']:.4f}; its demo [3, 5, 7, 9, 4] -> {demo}",
            flush=True,
        )
        result.update(
            text_recipe_exact_match=round(tf["exact_match"], 4),
            text_recipe_token_accuracy=round(tf["token_accuracy"], 4),
            text_recipe_seconds=round(th["train_seconds"], 2),
            text_recipe_wall_seconds=round(txt["wall"], 2),
            text_recipe_steps=th["steps"],
            text_recipe_epochs=args.text_epochs,
            text_recipe_demo=demo,
        )

    result.update(
        threads=torch.get_num_threads(),
        torch=torch.__version__,
        python=platform.python_version(),
        seed=args.seed,
        cpu_count=os.cpu_count(),
        loadavg_1min=round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    )
    print(json.dumps(result))
    return 0
