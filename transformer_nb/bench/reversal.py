"""``python -m transformer_nb.bench reversal``: train the reversal task from scratch, then the text's recipe.

1. The improved recipe (``reversal.IMPROVED``) trains until greedy decoding gets at least
   ``--target`` (default 99.9%) of 1,000 held-out sequences exactly right, evaluating every
   ``--eval-every`` steps once the training loss is below ``--eval-below``. ``train_seconds``
   counts the optimisation steps (data, forward, backward, update); ``eval_seconds`` the
   evaluations; ``wall_seconds`` both.
2. The text's recipe as written (``reversal.TEXT_RECIPE``: 30 epochs over 2,000 pairs) runs in the
   same process and is scored on the same held-out set.

The last line printed is one JSON object.
"""

import argparse
import json
import os
import platform
import time
from dataclasses import replace

import torch

from transformer_nb import reversal as rv


def run_improved(
    eval_batch, target: float, eval_every: int, seed: int, recipe=rv.IMPROVED, eval_below: float | None = None
) -> dict:
    model = rv.build_model(recipe.model, seed=seed)
    t0 = time.perf_counter()
    hist = rv.train(model, recipe, eval_batch, eval_every=eval_every, target=target, seed=seed, eval_below=eval_below)
    wall = time.perf_counter() - t0
    return {"model": model, "hist": hist, "wall": wall}


def run_text(eval_batch, seed: int, eval_every: int, epochs: int = 30) -> dict:
    recipe = replace(rv.TEXT_RECIPE, steps=epochs * rv.TEXT_RECIPE.steps_per_epoch())
    model = rv.build_model(recipe.model, seed=seed)
    t0 = time.perf_counter()
    hist = rv.train(model, recipe, eval_batch, eval_every=eval_every, target=None, seed=seed)
    return {"model": model, "hist": hist, "wall": time.perf_counter() - t0}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m transformer_nb.bench reversal",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
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
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    eval_batch = rv.heldout_set(args.n_eval)
    print(
        f"reversal benchmark | torch {torch.__version__} | threads {torch.get_num_threads()} | "
        f"{args.n_eval} held-out sequences, target exact match {args.target:.1%}",
        flush=True,
    )

    recipe = rv.IMPROVED if args.max_steps is None else replace(rv.IMPROVED, steps=args.max_steps)
    imp = run_improved(eval_batch, args.target, args.eval_every, args.seed, recipe, args.eval_below)
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
        "exact_match": round(final["exact_match"], 4),
        "token_accuracy": round(final["token_accuracy"], 4),
        "reached_target": bool(h["reached"]),
        "train_seconds": round(h["train_seconds"], 2),
        "eval_seconds": round(h["eval_seconds"], 2),
        "wall_seconds": round(imp["wall"], 2),
        "steps": h["steps"],
        "batch_size": rv.IMPROVED.batch_size,
        "n_eval": args.n_eval,
    }

    if not args.skip_text:
        spe = rv.TEXT_RECIPE.steps_per_epoch()
        txt = run_text(eval_batch, args.seed, eval_every=5 * spe, epochs=args.text_epochs)
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
