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

import time

import torch

from transformer_nb import lm_recipe
from transformer_nb.bench import check_positive_flags
from transformer_nb.bench._common import finish, parser, start
from transformer_nb.core.output_head import frequency_ranks
from transformer_nb.lm_compute import flops_per_token, matmul_peak_gflops, mfu
from transformer_nb.lm_training import train_lm
from transformer_nb.params import numel
from transformer_nb.perplexity import evaluate, unigram_perplexity
from transformer_nb.wikitext import load_wikitext2, random_windows


def _run(name, data, tcfg, peak, eval_tokens, ranks, device) -> dict:
    """Build and train the ``name`` recipe on ``data`` for ``tcfg``'s budget; print and return its figures."""
    model = lm_recipe.build_model(name, len(data.vocab), ranks, seed=tcfg.seed).to(device)
    print(
        f"[{name}] {numel(model):,} parameters; training for {tcfg.budget_s:.0f} s "
        f"(batch {tcfg.batch_size} x {tcfg.seq_len}, {tcfg.optimizer}, lr {tcfg.lr:g}, AdamW lr "
        f"{tcfg.adamw_lr or tcfg.lr:g}, bf16={tcfg.bf16})",
        flush=True,
    )
    x, y = random_windows(data.train, tcfg.batch_size, tcfg.seq_len, generator=torch.Generator().manual_seed(1))
    fpt = flops_per_token(model, x.to(device), y.to(device), tcfg.bf16)["total"]
    torch.manual_seed(tcfg.seed)
    hist = train_lm(model, data.train, tcfg, valid_ids=None, live=False, bar=False)
    t0 = time.perf_counter()
    kw = dict(batch_size=tcfg.eval_batch_size, max_tokens=eval_tokens, bf16=tcfg.bf16)
    ev = evaluate(model, data.valid, tcfg.seq_len, stride=tcfg.eval_stride, **kw)
    eval_s = time.perf_counter() - t0
    plain = ev["ppl"] if tcfg.eval_stride is None else evaluate(model, data.valid, tcfg.seq_len, **kw)["ppl"]
    tps = hist["tokens_per_s"]
    out = {
        "val_ppl": round(ev["ppl"], 2),
        "val_ppl_no_overlap": round(plain, 2),
        "tokens_per_s": round(tps, 1),
        "params": numel(model),
        "mfu": round(mfu(fpt, tps, peak), 4),
        "flops_per_token": round(fpt),
        "steps": hist["steps"],
        "tokens_seen": hist["tokens_seen"],
        "train_s": round(hist["train_seconds"], 1),
        "eval_s": round(eval_s, 1),
        "optimizer": tcfg.optimizer,
        "batch_size": tcfg.batch_size,
    }
    print(
        f"[{name}] {hist['steps']} steps, {hist['tokens_seen']:,} tokens in {hist['train_seconds']:.1f} s "
        f"({tps:,.0f} tokens/s, {fpt / 1e6:.1f} MFLOP/token, MFU {out['mfu']:.1%}); validation perplexity "
        f"{ev['ppl']:.1f} on {ev['tokens']:,} tokens (eval {eval_s:.1f} s; non-overlapping windows: {plain:.1f})",
        flush=True,
    )
    return out


def main(argv=None) -> int:
    p = parser("lm", __doc__)
    p.add_argument("--budget", type=float, default=360.0, help="training seconds per model (default 360)")
    p.add_argument("--data", default=None, help="WikiText-2 folder (default: TNB_DATA_DIR, then the user cache)")
    p.add_argument("--eval-tokens", type=int, default=None, help="validation tokens (default: the full split)")
    p.add_argument("--skip-lstm", action="store_true", help="train only the Transformer")
    args = p.parse_args(argv)
    check_positive_flags(p, args, "budget", "eval_tokens")

    device, load = start(args)
    data = load_wikitext2(args.data, progress=False)
    ranks = frequency_ranks(data.train, len(data.vocab))
    cfg = {n: lm_recipe.recipe_config(n, device, budget_s=args.budget, seed=0) for n in ("transformer", "lstm")}
    dtype = torch.bfloat16 if cfg["transformer"].bf16 else torch.float32
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"threads {torch.get_num_threads()}"
    print(
        f"lm benchmark | torch {torch.__version__} | {device.type} | {where} | "
        f"load average {load:.2f} | budget {args.budget:.0f} s per model",
        flush=True,
    )
    peak = matmul_peak_gflops(dtype, device)
    print(f"matmul peak ({str(dtype).replace('torch.', '')}): {peak:.1f} GFLOP/s", flush=True)
    unigram = unigram_perplexity(data.train, data.valid, len(data.vocab))
    print(f"unigram validation perplexity: {unigram:.1f}", flush=True)
    result = {"bench": "lm", "device": device.type, "budget_s": args.budget, "matmul_peak_gflops": round(peak, 1)}
    result.update(matmul_dtype=str(dtype).replace("torch.", ""), unigram_val_ppl=round(unigram, 1))
    result.update(_run("transformer", data, cfg["transformer"], peak, args.eval_tokens, ranks, device))
    result["eval_tokens"] = args.eval_tokens or int(data.valid.numel())
    if not args.skip_lstm:
        lstm = _run("lstm", data, cfg["lstm"], peak, args.eval_tokens, ranks, device)
        result.update({f"lstm_{k}": v for k, v in lstm.items()}, ratio=round(lstm["val_ppl"] / result["val_ppl"], 3))
    finish(result, load)
    return 0
