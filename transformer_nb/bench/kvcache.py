"""``python -m transformer_nb.bench kvcache``: greedy generation of 256 new tokens with and without a KV cache.

The model is the notebook's full-data recipe (``lm.RECIPE_MODEL``). If notebook 10 has
trained and cached it (``TNB_CACHE_DIR``), those weights are used; otherwise a freshly
initialised model is timed (the cost of a forward pass does not depend on the weights) and
the JSON says ``"weights": "random-init"``.

Without the cache every new token re-runs the model on the whole sequence so far; with it
the prompt is processed once and each step feeds one token, attending over the stored keys
and values. Each variant runs ``--repeats`` times; the best time counts. ``speedup`` is for
the notebook's 5-token prompt; ``speedup_prompt_256`` repeats the measurement after a
256-token prompt (the longer the context, the more recomputation the cache saves). The last
line is one JSON object; ``identical`` says whether every pair produced exactly the same tokens.
"""

import argparse
import json
import os
import time

import torch

from transformer_nb import lm
from transformer_nb.wikitext import load_wikitext2


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m transformer_nb.bench kvcache",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--new-tokens", type=int, default=256)
    p.add_argument("--prompt", default="The history of machine learning")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--data", default=None, help="WikiText-2 folder (default: TNB_DATA_DIR, then the user cache)")
    p.add_argument("--random-init", action="store_true", help="do not look for the notebook's trained weights")
    p.add_argument(
        "--long-prompt",
        type=int,
        default=256,
        help="also time a prompt of this many validation tokens (0: skip; default 256)",
    )
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    data = load_wikitext2(args.data, progress=False)
    V = len(data.vocab)
    model = lm.build_model("transformer", V, lm.frequency_ranks(data.train, V))
    weights = "random-init"
    if not args.random_init:
        ok, msg = lm.load_cached_recipe(model, V)
        print(msg, flush=True)
        weights = "trained" if ok else weights
    model.eval()
    prompt = data.vocab.encode(args.prompt)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"kvcache benchmark | torch {torch.__version__} | threads {torch.get_num_threads()} | "
        f"load average {load:.2f} | {model.num_parameters():,} parameters ({weights}) | "
        f"prompt {prompt.numel()} tokens + {args.new_tokens} new",
        flush=True,
    )

    def time_both(prompt):
        times, outs = {}, {}
        for use_cache in (True, False):
            best = float("inf")
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                out = lm.generate(model, prompt, args.new_tokens, temperature=0.0, use_cache=use_cache)
                best = min(best, time.perf_counter() - t0)
            times[use_cache], outs[use_cache] = best, out
            print(
                f"  {'with' if use_cache else 'without'} cache: {best:.3f} s ({args.new_tokens / best:.1f} tokens/s)",
                flush=True,
            )
        return times, outs

    times, outs = time_both(prompt)
    identical = bool(torch.equal(outs[True], outs[False]))
    text = data.vocab.decode(outs[True][prompt.numel() : prompt.numel() + 30])
    print(f"  first 30 generated tokens: {text}", flush=True)
    result = {
        "bench": "kvcache",
        "new_tokens": args.new_tokens,
        "speedup": round(times[False] / times[True], 2),
        "identical": identical,
        "seconds_cache": round(times[True], 3),
        "seconds_no_cache": round(times[False], 3),
        "prompt_tokens": int(prompt.numel()),
        "weights": weights,
        "threads": torch.get_num_threads(),
        "load_avg_start": round(load, 2),
    }
    if args.long_prompt:
        long = data.valid[: args.long_prompt]
        print(f"the same with a {long.numel()}-token prompt (the first validation tokens):", flush=True)
        lt, lo = time_both(long)
        result.update(
            {
                f"speedup_prompt_{long.numel()}": round(lt[False] / lt[True], 2),
                f"identical_prompt_{long.numel()}": bool(torch.equal(lo[True], lo[False])),
            }
        )
        identical = identical and result[f"identical_prompt_{long.numel()}"]
        result["identical"] = identical
    print(json.dumps(result))
    return 0 if identical else 1
