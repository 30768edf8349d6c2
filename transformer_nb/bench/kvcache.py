"""``python -m transformer_nb.bench kvcache``: greedy generation of 256 new tokens with and without a KV cache.

The model is the notebook's full-data recipe (``lm_recipe.RECIPE_MODEL``). If notebook 10 has
trained and cached it (``TNB_CACHE_DIR``), those weights are used; otherwise a freshly
initialised model is timed (the cost of a forward pass does not depend on the weights) and
the JSON says ``"weights": "random-init"``.

Without the cache every new token re-runs the model on the whole sequence so far; with it the
prompt is processed once and each step feeds one token, attending over the stored keys and
values. Both run the same modules (``generation.generate``, what notebook 10 teaches); the tied
embedding table is built once for all runs (``OutputHead.lookup_table``). Each
variant runs ``--repeats`` times; the best time counts. ``speedup`` is for the notebook's 5-token
prompt; ``speedup_prompt_256`` repeats the measurement after a 256-token prompt (the longer the
context, the more recomputation the cache saves).

Each step runs the package's modules, so their per-call costs are part of what is timed: on a
CPU a one-token step does so little arithmetic that checking inputs, making copies and calling
modules can cost as much as computing. ``generate`` checks its arguments once and no step checks
them again, the cache is written in place, and RoPE turns the new keys and queries in place.
On a GPU (``--device cuda``) the JSON also gives tokens/s of each way.
The last line is one JSON object; ``identical`` says whether every pair produced the same tokens.

``time_generation`` is the same comparison for a model in a notebook (notebook 10).
"""

import argparse
import json
import os
import time

import torch

from transformer_nb import cache, lm_recipe
from transformer_nb.core.checks import as_int, check_language_model
from transformer_nb.core.generation import generate
from transformer_nb.core.transformer import LanguageModel
from transformer_nb.params import numel
from transformer_nb.wikitext import load_wikitext2


def time_generation(model: LanguageModel, prompt: torch.Tensor, lengths, repeats: int = 1) -> dict:
    """Seconds to generate ``n`` greedy tokens for each ``n`` in ``lengths``, with and without the
    KV cache (best of ``repeats``). Returns ``{"lengths", "cache", "no_cache", "identical"}``."""
    check_language_model(model)
    repeats = as_int("repeats", repeats, 1)
    out = {"lengths": list(lengths), "cache": [], "no_cache": [], "identical": True}
    with model.head.lookup_table():  # one embedding table for all the runs (the weights stay fixed)
        _time_lengths(model, prompt, out, repeats)
    return out


def _time_lengths(model: LanguageModel, prompt: torch.Tensor, out: dict, repeats: int) -> None:
    for n in out["lengths"]:
        seqs = {}
        for use_cache in (True, False):
            best = float("inf")
            for _ in range(repeats):
                t0 = time.perf_counter()
                seqs[use_cache] = generate(model, prompt, n, use_cache=use_cache)
                best = min(best, time.perf_counter() - t0)
            out["cache" if use_cache else "no_cache"].append(best)
        out["identical"] &= bool(torch.equal(seqs[True], seqs[False]))


def _at_least(low: int):
    """An argparse type: an int ``>= low`` (argparse names the option in its error)."""

    def parse(text: str) -> int:
        n = int(text)
        if n < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {n}")
        return n

    parse.__name__ = "int"  # argparse's message: "invalid int value"
    return parse


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m transformer_nb.bench kvcache",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--new-tokens", type=_at_least(1), default=256, help="tokens to generate (>= 1; default 256)")
    p.add_argument("--prompt", default="The history of machine learning")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda[:N]")
    p.add_argument("--threads", type=_at_least(1), default=2)
    p.add_argument("--repeats", type=_at_least(1), default=5, help="runs per variant, the best counts (default 5)")
    p.add_argument("--data", default=None, help="WikiText-2 folder (default: TNB_DATA_DIR, then the user cache)")
    p.add_argument("--random-init", action="store_true", help="do not look for the notebook's trained weights")
    p.add_argument(
        "--long-prompt",
        type=_at_least(0),
        default=256,
        help="also time a prompt of this many validation tokens (0: skip; default 256)",
    )
    args = p.parse_args(argv)

    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    data = load_wikitext2(args.data, progress=False)
    name, model, config, _ = lm_recipe.run("transformer", data, lm_recipe.FULL_STEPS, device="cpu")  # notebook 10's
    weights = "random-init"
    if not args.random_init:
        ok, msg, _ = cache.load(name, model, config)
        print(msg, flush=True)
        weights = "trained" if ok else weights
    model.to(device).eval()
    prompt = data.vocab.encode(args.prompt).to(device)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"kvcache benchmark | torch {torch.__version__} | {device.type} | threads {torch.get_num_threads()} | "
        f"load average {load:.2f} | {numel(model):,} parameters ({weights}) | "
        f"prompt {prompt.numel()} tokens + {args.new_tokens} new",
        flush=True,
    )
    ways = {
        "cache": lambda pr: generate(model, pr, args.new_tokens, use_cache=True),
        "no_cache": lambda pr: generate(model, pr, args.new_tokens, use_cache=False),
    }

    def time_all(prompt):
        times, outs = {}, {}
        for name, fn in ways.items():
            best = float("inf")
            for _ in range(args.repeats):
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                t0 = time.perf_counter()
                out = fn(prompt)
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                best = min(best, time.perf_counter() - t0)
            times[name], outs[name] = best, out
            print(f"  {name:9s} {best:.3f} s ({args.new_tokens / best:.1f} tokens/s)", flush=True)
        same = all(torch.equal(outs["no_cache"], o) for o in outs.values())
        return times, outs, same

    with model.head.lookup_table():  # the tied embedding table, built once for all runs (the weights stay fixed)
        times, outs, identical = time_all(prompt)
        if args.long_prompt:
            long = data.valid[: args.long_prompt].to(device)
            print(f"the same with a {long.numel()}-token prompt (the first validation tokens):", flush=True)
            long_times, _, long_same = time_all(long)
    text = data.vocab.decode(outs["cache"][prompt.numel() : prompt.numel() + 30].cpu())
    print(f"  first 30 generated tokens: {text}", flush=True)
    result = {
        "bench": "kvcache",
        "device": device.type,
        "new_tokens": args.new_tokens,
        "speedup": round(times["no_cache"] / times["cache"], 2),
        "identical": identical,
        "seconds_cache": round(times["cache"], 3),
        "seconds_no_cache": round(times["no_cache"], 3),
        "tokens_per_s_cache": round(args.new_tokens / times["cache"], 1),
        "tokens_per_s_no_cache": round(args.new_tokens / times["no_cache"], 1),
    }
    result.update(prompt_tokens=int(prompt.numel()), weights=weights, threads=torch.get_num_threads())
    result["load_avg_start"] = round(load, 2)
    if args.long_prompt:
        n = long.numel()
        result[f"speedup_prompt_{n}"] = round(long_times["no_cache"] / long_times["cache"], 2)
        result[f"identical_prompt_{n}"] = long_same
        result["identical"] = identical = identical and long_same
    print(json.dumps(result))
    return 0 if identical else 1
