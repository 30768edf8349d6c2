"""``python -m transformer_nb.bench lm --budget 360``: the WikiText-2 recipe against the LSTM, same budget.

In one process, on ``--device`` (``cpu``, the default, with ``--threads`` threads; or ``cuda``):

1. measures a matmul peak (square ``n x n`` products, best of several sizes and repeats) in
   the dtype the recipe computes in (bf16 when ``lm_recipe.RECIPE_TRAIN`` uses autocast, else fp32);
2. trains the notebook's Transformer recipe (``lm_recipe.recipe_config("transformer", device)``:
   on a GPU the batch is ``GPU_BATCH_SCALE`` times larger) from scratch for ``--budget`` seconds of
   *training* time (no evaluation happens during training);
3. evaluates perplexity on the full validation split (timed separately): windows sliding by the
   recipe's ``eval_stride`` (``val_ppl``), and non-overlapping windows (``val_ppl_no_overlap``);
4. does the same for the LSTM baseline (it carries its state across windows);
5. counts the model FLOPs of one training step with ``torch.utils.flop_counter`` (matmuls and
   attention, forward + backward) and reports tokens/s and MFU = achieved FLOP/s / measured peak.

The last line printed is one JSON object.
"""

import argparse
import json
import os
import time

import torch

from transformer_nb import lm_recipe
from transformer_nb.bench import check_positive_flags
from transformer_nb.core.checks import check_language_model
from transformer_nb.core.output_head import frequency_ranks
from transformer_nb.lm_compute import flops_per_token, matmul_peak_gflops, mfu
from transformer_nb.lm_training import train_lm
from transformer_nb.params import numel
from transformer_nb.perplexity import evaluate, unigram_perplexity
from transformer_nb.wikitext import check_wikitext, load_wikitext2, random_windows


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def run(name, model, data, tcfg, peak, eval_tokens):
    """Train ``model`` (a language model) on ``data`` for ``tcfg``'s budget and print its MFU and perplexity."""
    check_language_model(model)
    check_wikitext(data)
    print(
        f"[{name}] {numel(model):,} parameters; training for {tcfg.budget_s:.0f} s "
        f"(batch {tcfg.batch_size} x {tcfg.seq_len}, {tcfg.optimizer}, lr {tcfg.lr:g}, AdamW lr "
        f"{tcfg.adamw_lr or tcfg.lr:g}, bf16={tcfg.bf16})",
        flush=True,
    )
    device = next(model.parameters()).device
    x, y = random_windows(data.train, tcfg.batch_size, tcfg.seq_len, generator=torch.Generator().manual_seed(1))
    fpt = flops_per_token(model, x.to(device), y.to(device), tcfg.bf16)["total"]
    torch.manual_seed(tcfg.seed)
    hist = train_lm(model, data.train, tcfg, valid_ids=None, live=False, bar=False)
    t0 = time.perf_counter()
    kw = dict(batch_size=tcfg.eval_batch_size, max_tokens=eval_tokens, bf16=tcfg.bf16)
    ev = evaluate(model, data.valid, tcfg.seq_len, stride=tcfg.eval_stride, **kw)
    eval_s = time.perf_counter() - t0
    out_plain = ev["ppl"] if tcfg.eval_stride is None else evaluate(model, data.valid, tcfg.seq_len, **kw)["ppl"]
    tps = hist["tokens_per_s"]
    out = {
        "val_ppl": ev["ppl"],
        "val_ppl_no_overlap": out_plain,
        "tokens_per_s": tps,
        "params": numel(model),
        "steps": hist["steps"],
        "tokens_seen": hist["tokens_seen"],
        "train_s": hist["train_seconds"],
        "eval_s": eval_s,
        "flops_per_token": fpt,
        "mfu": mfu(fpt, tps, peak),
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
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda[:N]")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    p.add_argument("--data", default=None, help="WikiText-2 folder (default: TNB_DATA_DIR, then the user cache)")
    p.add_argument("--eval-tokens", type=int, default=None, help="validation tokens (default: the full split)")
    p.add_argument("--skip-lstm", action="store_true", help="train only the Transformer")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    check_positive_flags(p, args, "budget", "threads", "eval_tokens")

    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    data = load_wikitext2(args.data, progress=False)
    V = len(data.vocab)
    ranks = frequency_ranks(data.train, V)
    recipe = lm_recipe.recipe_config("transformer", device, budget_s=args.budget, seed=args.seed)
    dtype = torch.bfloat16 if recipe.bf16 else torch.float32
    load = _load()
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"threads {torch.get_num_threads()}"
    print(
        f"lm benchmark | torch {torch.__version__} | {device.type} | {where} | "
        f"load average {load:.2f} | budget {args.budget:.0f} s per model",
        flush=True,
    )
    peak = matmul_peak_gflops(dtype, device)
    print(f"matmul peak ({str(dtype).replace('torch.', '')}): {peak:.1f} GFLOP/s", flush=True)
    unigram = unigram_perplexity(data.train, data.valid, V)
    print(f"unigram validation perplexity: {unigram:.1f}", flush=True)

    model = lm_recipe.build_model("transformer", V, ranks, seed=args.seed).to(device)
    tr = run("transformer", model, data, recipe, peak, args.eval_tokens)
    result = {
        "bench": "lm",
        "device": device.type,
        "budget_s": args.budget,
        "val_ppl": round(tr["val_ppl"], 2),
        "val_ppl_no_overlap": round(tr["val_ppl_no_overlap"], 2),
    }
    if not args.skip_lstm:
        lcfg = lm_recipe.recipe_config("lstm", device, budget_s=args.budget, seed=args.seed)
        lstm = lm_recipe.build_model("lstm", V, ranks, seed=args.seed).to(device)
        ls = run("lstm", lstm, data, lcfg, peak, args.eval_tokens)
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
        batch_size=recipe.batch_size,
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
    result["load_avg_end"] = round(_load(), 2)
    print(json.dumps(result))
    return 0
