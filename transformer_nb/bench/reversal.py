"""``python -m transformer_nb.bench reversal``: train the reversal task from scratch, then the text's recipe.

1. The improved recipe (``reversal.IMPROVED``) trains until greedy decoding gets at least
   ``rv.TARGET`` (99.9%) of 1,000 held-out sequences exactly right, evaluating every
   ``--eval-every`` steps. ``train_seconds`` counts the optimisation steps (data, forward, backward,
   update); ``eval_seconds`` the evaluations; ``wall_seconds`` both (on a GPU, up to a final synchronisation).
2. Throughput: ``--throughput-steps`` more steps of the same recipe with no evaluation, timed
   between two synchronisations: ``tokens_per_s`` (real source + target tokens per second),
   the FLOPs of a step (``torch.utils.flop_counter``), and on a GPU the MFU against that GPU's
   bf16 matmul peak, measured here (``peak_bf16_tflops``; the model trains in fp32).
3. The text's recipe as written (``reversal.TEXT_RECIPE``: 30 epochs over 2,000 pairs) runs in the
   same process and is scored on the same held-out set.

The last line printed is one JSON object.
"""

import platform
from dataclasses import replace

import torch
from torch.utils.flop_counter import FlopCounterMode

from transformer_nb import reversal as rv
from transformer_nb.bench import check_positive_flags
from transformer_nb.bench._common import best_time, finish, parser, start
from transformer_nb.lm_compute import matmul_peak_gflops


def _trained(recipe, eval_batch, device, **kw):
    """``(model, history, wall seconds)`` of ``rv.train`` on a fresh model (seed 0)."""
    model = rv.build_model(recipe.model, recipe.init, seed=0, device=device)
    wall, hist = best_time(lambda: rv.train(model, recipe, eval_batch, seed=0, **kw), 1, device)
    return model, hist, wall


def _throughput(recipe, steps: int, device: torch.device) -> dict:
    """``steps`` training steps without evaluation, timed between two synchronisations; FLOPs and MFU."""
    run = replace(recipe, steps=steps)
    stream = rv.batches(run, torch.Generator().manual_seed(0))  # the same batches train() draws, on the CPU
    tokens = sum(int(b.src_keep.sum() + b.tgt_keep.sum()) for b, _ in zip(stream, range(steps)))
    model, _, seconds = _trained(run, None, device, eval_every=steps)
    b = next(rv.batches(run, torch.Generator().manual_seed(0), device=device))
    with FlopCounterMode(display=False) as counter:
        logits = model.train()(b.src, keep=b.src_keep, tgt=b.tgt_in, tgt_keep=b.tgt_keep)[0]
        rv.loss_fn(logits, b.tgt_out, recipe.label_smoothing).backward()
    flops = counter.get_total_flops()
    out = {
        "throughput_steps": steps,
        "throughput_seconds": round(seconds, 3),
        "ms_per_step": round(1e3 * seconds / steps, 3),
        "tokens_per_s": round(tokens / seconds),
        "flops_per_step": flops,
        "achieved_tflops": round(flops * steps / seconds / 1e12, 4),
    }
    if device.type == "cuda":
        peak = matmul_peak_gflops(torch.bfloat16, device) * 1e9
        out.update(peak_bf16_tflops=round(peak / 1e12, 1), mfu=round(flops * steps / seconds / peak, 6))
    return out


def main(argv=None) -> int:
    p = parser("reversal", __doc__)
    p.add_argument("--eval-every", type=int, default=25, help="evaluate every N steps (default 25)")
    p.add_argument("--n-eval", type=int, default=1000, help="held-out sequences (default 1000)")
    p.add_argument("--skip-text", action="store_true", help="do not run the text's recipe")
    p.add_argument("--text-epochs", type=int, default=30, help="epochs of the text's recipe (default 30, as written)")
    p.add_argument("--max-steps", type=int, default=None, help="cap on the improved recipe's steps")
    p.add_argument("--throughput-steps", type=int, default=100, help="steps of the throughput run (0: skip it)")
    args = p.parse_args(argv)
    check_positive_flags(p, args, "eval_every", "n_eval", "text_epochs", "max_steps")
    if args.throughput_steps < 0:
        p.error(f"--throughput-steps must be >= 0, got {args.throughput_steps}")

    device, load = start(args)
    eval_batch = rv.heldout_set(args.n_eval, device=device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    print(
        f"reversal benchmark | {device} ({name}) | torch {torch.__version__} | threads {torch.get_num_threads()} | "
        f"{args.n_eval} held-out sequences, target exact match {rv.TARGET:.1%}",
        flush=True,
    )

    recipe = rv.IMPROVED if args.max_steps is None else replace(rv.IMPROVED, steps=args.max_steps)
    model, h, wall = _trained(recipe, eval_batch, device, eval_every=args.eval_every, target=rv.TARGET)
    final = rv.evaluate(model, eval_batch)
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
        "wall_seconds": round(wall, 2),
        "steps": h["steps"],
        "batch_size": recipe.batch_size,
        "n_eval": args.n_eval,
        "python": platform.python_version(),
    }
    if args.throughput_steps > 0:
        tp = _throughput(recipe, args.throughput_steps, device)
        mfu = f", MFU {tp['mfu']:.2e} of a {tp['peak_bf16_tflops']} TFLOP/s bf16 peak" if "mfu" in tp else ""
        print(f"throughput: {tp['tokens_per_s']:,} tokens/s, {tp['ms_per_step']} ms/step{mfu}", flush=True)
        result.update(tp)

    if not args.skip_text:
        spe = rv.TEXT_RECIPE.steps_per_epoch()
        text = replace(rv.TEXT_RECIPE, steps=args.text_epochs * spe)
        text_model, th, text_wall = _trained(text, eval_batch, device, eval_every=5 * spe)
        tf = rv.evaluate(text_model, eval_batch)
        demo = [int(t) for t in rv.greedy_decode(text_model, torch.tensor([[3, 5, 7, 9, 4]]))[0] if t != rv.PAD]
        print(
            f"text recipe: {th['steps']} steps ({args.text_epochs} epochs), {th['train_seconds']:.2f} s, exact match "
            f"{tf['exact_match']:.4f}; its demo [3, 5, 7, 9, 4] -> {demo}",
            flush=True,
        )
        result.update(
            text_recipe_exact_match=round(tf["exact_match"], 4),
            text_recipe_token_accuracy=round(tf["token_accuracy"], 4),
            text_recipe_seconds=round(th["train_seconds"], 2),
            text_recipe_wall_seconds=round(text_wall, 2),
            text_recipe_steps=th["steps"],
            text_recipe_epochs=args.text_epochs,
            text_recipe_demo=demo,
        )
    finish(result, load)
    return 0
