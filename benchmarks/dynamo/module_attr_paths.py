"""Module attributes through getattr vs through ``__dict__``, on one tree.

Reproduces, in this engine, upstream's measurement behind reading nn.Module
attributes through the instance ``__dict__``: MobileBert's guards are built
twice under the fork, once with every module attribute read by getattr
(``GetAttrGuardAccessor``, i.e. nn.Module's Python ``__getattr__`` for
parameters, buffers and submodules) and once along Python's lookup order
through ``__dict__`` (``NNModuleAttrGuardAccessor``). Both trees are timed
walked in full (unfinalized clones, no subtree memos), and the ``__dict__``
tree also as the engine runs it (with memos). Same process, same locals,
interleaved rounds, medians.

    .venv/bin/python benchmarks/dynamo/module_attr_paths.py
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import time
from typing import Any, Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
import torch._dynamo
import torch._dynamo.guards

import dynamo_guards
from guard_bench.capture import live_output_codes

# The module, not the install() function the package re-exports.
fork_install = importlib.import_module("dynamo_guards.install")


def getattr_only(builder: Any, source: Any, base_guard_manager: Any, base_example_value: Any, example_value: Any,
                 base_source_name: str, source_name: str, guard_manager_enum: Any) -> Any:
    return base_guard_manager.getattr_manager(
        attr=source.member, source=source_name, example_value=example_value, guard_manager_enum=guard_manager_enum
    )


def build_root(
    model: torch.nn.Module, ids: torch.Tensor, attribute_reader: Callable[..., Any] | None
) -> tuple[Any, dict, list[Any]]:
    """Compiles ``model`` under the fork; returns the fork root, the frame's
    locals and the compiled code to keep alive (its globals are what the
    guards read, and a later reset() would delete them with the code)."""
    saved = dict(fork_install._ENGINE_BUILDER_METHODS)
    if attribute_reader is not None:
        fork_install._ENGINE_BUILDER_METHODS["getattr_on_nn_module"] = attribute_reader
    captured: list[tuple[Any, dict]] = []
    previous = torch._dynamo.guards.guard_manager_testing_hook_fn
    torch._dynamo.guards.guard_manager_testing_hook_fn = lambda w, f, b: captured.append((w, dict(f)))
    try:
        torch._dynamo.reset()
        with dynamo_guards.enabled(), torch.no_grad():
            torch.compile(model, backend="eager")(input_ids=ids)
    finally:
        torch._dynamo.guards.guard_manager_testing_hook_fn = previous
        fork_install._ENGINE_BUILDER_METHODS.clear()
        fork_install._ENGINE_BUILDER_METHODS.update(saved)
    wrapper, f_locals = max(captured, key=lambda c: len(str(c[0])))
    return wrapper.fork_root, f_locals, live_output_codes()


def time_us(check: Callable[[Any], bool], f_locals: dict, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        check(f_locals)
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--batch", type=int, default=50)
    args = parser.parse_args()

    from transformers import MobileBertConfig, MobileBertModel

    torch.manual_seed(0)
    model = MobileBertModel(MobileBertConfig()).eval()
    ids = torch.randint(0, 1000, (1, 16))
    dict_root, dict_locals, dict_code = build_root(model, ids, None)
    getattr_root, getattr_locals, getattr_code = build_root(model, ids, getattr_only)
    everything = lambda mgr: True  # noqa: E731
    variants = {
        "getattr, walked": (getattr_root.clone_manager(everything).check, getattr_locals),
        "__dict__, walked": (dict_root.clone_manager(everything).check, dict_locals),
        "__dict__, memoized": (dict_root.check, dict_locals),
    }
    with torch.no_grad():
        for name, (check, f_locals) in variants.items():
            if not check(f_locals):
                raise SystemExit(f"{name}: guards fail on their own frame")
        samples: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, (check, f_locals) in variants.items():
                samples[name].append(time_us(check, f_locals, args.batch))
    medians = {name: statistics.median(s) for name, s in samples.items()}
    del dict_code, getattr_code
    base = medians["getattr, walked"]
    print("MobileBert guard evaluation, one process, medians of interleaved rounds")
    print(f"{'tree':<22}{'us/check':>12}{'vs getattr':>12}")
    for name, value in medians.items():
        print(f"{name:<22}{value:>12.1f}{base / value:>11.2f}x")


if __name__ == "__main__":
    main()
