"""Where tensors live: one helper for the device tests of every module (issue 16 item 1)."""

import torch
import torch.nn as nn


def devices_of(obj) -> set:
    """The set of devices of every tensor in ``obj`` (a module's parameters and buffers, nested containers)."""
    if isinstance(obj, nn.Module):
        return {t.device for t in (*obj.parameters(), *obj.buffers())}
    if isinstance(obj, torch.Tensor):
        return {obj.device}
    if isinstance(obj, dict):
        return set().union(set(), *(devices_of(v) for v in obj.values()))
    if isinstance(obj, (list, tuple)):
        return set().union(set(), *(devices_of(v) for v in obj))
    return set()
