"""``python -m transformer_nb.bench lm --budget 360``: the WikiText-2 recipe against the LSTM, same budget.

In one process, on ``--threads`` (default 2) CPU threads:

1. measures a matmul peak (square ``n x n`` products, best of several sizes and repeats) in
   the dtype the recipe computes in (bf16 when ``lm.RECIPE_TRAIN`` uses autocast, else fp32);
2. trains the notebook's Transformer recipe (``lm.RECIPE_MODEL``, ``lm.RECIPE_TRAIN``) from
   scratch for ``--budget`` seconds of *training* time (no evaluation happens during training);
3. evaluates perplexity on the full validation split (timed separately): windows sliding by the
   recipe's ``eval_stride`` (``val_ppl``), and non-overlapping windows (``val_ppl_no_overlap``);
4. does the same for the LSTM baseline (``lm.LSTM_MODEL``, ``lm.LSTM_TRAIN``; it carries its
   state across windows, so every prediction sees all the text before it);
5. counts the model FLOPs of one training step with ``torch.utils.flop_counter`` (matmuls and
   attention, forward + backward) and reports MFU = achieved FLOP/s / measured matmul peak.

The last line printed is one JSON object.
"""

import argparse
import json
import os
import time

import torch

from transformer_nb import lm
from transformer_nb.wikitext import load_wikitext2


def matmul_peak_gflops(dtype=torch.float32, sizes=(1024, 2048), seconds: float = 1.5) -> float:
    """Best achieved GFLOP/s of ``a @ b`` (``2 n^3`` FLOPs) over ``sizes``, each run for ~``seconds``."""
    best = 0.0
    for n in sizes:
        a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
        for _ in range(2):
            a @ b  # warm-up
        reps, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            t = time.perf_counter()
            a @ b
            best = max(best, 2 * n**3 / (time.perf_counter() - t) / 1e9)
            reps += 1
    return best


def train_flops_per_token(model, train_ids, tcfg) -> float:
    """Model FLOPs (matmul + attention, forward + backward) of one training step, per token."""
    from torch.utils.flop_counter import FlopCounterMode

    from transformer_nb.wikitext import random_windows

    x, y = random_windows(train_ids, tcfg.batch_size, tcfg.seq_len, generator=torch.Generator().manual_seed(1))
    model.train()
    with FlopCounterMode(display=False) as fc:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=tcfg.bf16):
            loss = model.nll(x, y)
        loss.backward()
    model.zero_grad(set_to_none=True)
    return fc.get_total_flops() / y.numel()


def run(name, model, data, tcfg, peak, eval_tokens):
    print(
        f"[{name}] {model.num_parameters():,} parameters; training for {tcfg.budget_s:.0f} s "
        f"(batch {tcfg.batch_size} x {tcfg.seq_len}, {tcfg.optimizer}, lr {tcfg.lr:g}, AdamW lr "
        f"{tcfg.adamw_lr or tcfg.lr:g}, bf16={tcfg.bf16})",
        flush=True,
    )
    fpt = train_flops_per_token(model, data.train, tcfg)
    torch.manual_seed(tcfg.seed)
    hist = lm.train_lm(model, data.train, tcfg, valid_ids=None, live=False, disable_bar=True)
    t0 = time.perf_counter()
    ev = lm.evaluate(model, data.valid, tcfg.seq_len, max_tokens=eval_tokens, bf16=tcfg.bf16, stride=tcfg.eval_stride)
    eval_s = time.perf_counter() - t0
    tps = hist["tokens_per_s"]
    if tcfg.eval_stride is not None:
        out_plain = lm.evaluate(model, data.valid, tcfg.seq_len, max_tokens=eval_tokens, bf16=tcfg.bf16)["ppl"]
    else:
        out_plain = ev["ppl"]
    out = {
        "val_ppl": ev["ppl"],
        "val_ppl_no_overlap": out_plain,
        "tokens_per_s": tps,
        "params": model.num_parameters(),
        "steps": hist["steps"],
        "tokens_seen": hist["tokens_seen"],
        "train_s": hist["train_seconds"],
        "eval_s": eval_s,
        "flops_per_token": fpt,
        "mfu": fpt * tps / (peak * 1e9),
    }
    print(
        f"[{name}] {hist['steps']} steps, {hist['tokens_seen']:,} tokens in {hist['train_seconds']:.1f} s "
        f"({tps:,.0f} tokens/s, {fpt / 1e6:.1f} MFLOP/token, MFU {out['mfu']:.1%}); validation perplexity "
        f"{ev['ppl']:.1f} on {ev['tokens']:,} tokens (eval {eval_s:.1f} s; non-overlapping windows: "
        f"{out_plain:.1f})",
        flush=True,
    )
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m transformer_nb.bench lm",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--budget", type=float, default=360.0, help="training seconds per model (default 360)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    p.add_argument("--data", default=None, help="WikiText-2 folder (default: TNB_DATA_DIR, then the user cache)")
    p.add_argument("--eval-tokens", type=int, default=None, help="validation tokens (default: the full split)")
    p.add_argument("--skip-lstm", action="store_true", help="train only the Transformer")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    data = load_wikitext2(args.data, progress=False)
    V = len(data.vocab)
    ranks = lm.frequency_ranks(data.train, V)
    recipe = lm.recipe_config(budget_s=args.budget, seed=args.seed)
    dtype = torch.bfloat16 if recipe.bf16 else torch.float32
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"lm benchmark | torch {torch.__version__} | threads {torch.get_num_threads()} | "
        f"load average {load:.2f} | budget {args.budget:.0f} s per model",
        flush=True,
    )
    peak = matmul_peak_gflops(dtype)
    print(f"matmul peak ({str(dtype).replace('torch.', '')}): {peak:.1f} GFLOP/s", flush=True)
    unigram = lm.unigram_perplexity(data.train, data.valid, V)
    print(f"unigram validation perplexity: {unigram:.1f}", flush=True)

    tr = run(
        "transformer", lm.build_model("transformer", V, ranks, seed=args.seed), data, recipe, peak, args.eval_tokens
    )
    result = {
        "bench": "lm",
        "budget_s": args.budget,
        "val_ppl": round(tr["val_ppl"], 2),
        "val_ppl_no_overlap": round(tr["val_ppl_no_overlap"], 2),
    }
    if not args.skip_lstm:
        lcfg = lm.recipe_config("lstm", budget_s=args.budget, seed=args.seed)
        ls = run("lstm", lm.build_model("lstm", V, ranks, seed=args.seed), data, lcfg, peak, args.eval_tokens)
        result.update(lstm_val_ppl=round(ls["val_ppl"], 2))
    result.update(tokens_per_s=round(tr["tokens_per_s"], 1))
    if not args.skip_lstm:
        result.update(lstm_tokens_per_s=round(ls["tokens_per_s"], 1))
    result.update(
        params=tr["params"],
        mfu=round(tr["mfu"], 4),
        matmul_peak_gflops=round(peak, 1),
        threads=torch.get_num_threads(),
        matmul_dtype=str(dtype).replace("torch.", ""),
        optimizer=recipe.optimizer,
        flops_per_token=round(tr["flops_per_token"]),
        steps=tr["steps"],
        tokens_seen=tr["tokens_seen"],
        train_s=round(tr["train_s"], 1),
        eval_s=round(tr["eval_s"], 1),
        unigram_val_ppl=round(unigram, 1),
        load_avg_start=round(load, 2),
        eval_tokens=args.eval_tokens or int(data.valid.numel()),
    )
    if not args.skip_lstm:
        result.update(
            ratio=round(ls["val_ppl"] / tr["val_ppl"], 3), lstm_params=ls["params"], lstm_mfu=round(ls["mfu"], 4)
        )
    end_load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    result["load_avg_end"] = round(end_load, 2)
    print(json.dumps(result))
    return 0
