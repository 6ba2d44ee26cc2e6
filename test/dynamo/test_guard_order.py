"""The order in which the engine's build visits a frame's guards: torch sorts
them by ``Guard.sort_key``; while the engine builds, that key is one str
(install.py, ``_guard_order_key``), which must order every set of guards
exactly as torch's tuple does."""

# Owner(s): ["module: dynamo"]
from __future__ import annotations

import functools
import random
import sys
from typing import Any

import torch
import torch._dynamo
import torch._dynamo.guards
import torch._guards
from torch._dynamo.guards import GuardBuilder
from torch._dynamo.source import AttrSource, DictGetItemSource, GlobalSource, LocalSource
from torch._dynamo.test_case import run_tests, TestCase
from torch._guards import Guard

import dynamo_guards

install_module = sys.modules["dynamo_guards.install"]
STOCK_SORT_KEY = torch._guards.Guard.sort_key


def lambda_create_fn(builder: Any, guard: Any) -> None:
    raise AssertionError("never built")


def synthetic_guards(rng: random.Random) -> list[Guard]:
    """Guards whose keys tie on every field but one, in turn: names of equal
    and unequal lengths sharing prefixes, local and global sources, create
    functions defined on different lines, partials, DUPLICATE_INPUT."""
    bases = [LocalSource("x"), LocalSource("xy"), LocalSource("y"), GlobalSource("x"), GlobalSource("G_z")]
    members = ["a", "b", "ab", "ba", "a0", "_modules", "é", "a" * 300]
    sources: list[Any] = list(bases)
    for base in bases:
        for member in members:
            attr = AttrSource(base, member)
            sources.append(attr)
            sources.append(DictGetItemSource(attr, member))
    create_fns = [
        GuardBuilder.TYPE_MATCH,
        GuardBuilder.ID_MATCH,
        GuardBuilder.EQUALS_MATCH,
        functools.partial(GuardBuilder.NOT_PRESENT_IN_GENERIC_DICT, attr="a"),
        functools.partial(GuardBuilder.DUPLICATE_INPUT, source_b=LocalSource("y")),
        lambda_create_fn,
        lambda builder, guard: None,
    ]
    guards = [Guard(source, fn) for source in sources for fn in create_fns]
    guards += [Guard(source, GuardBuilder.TYPE_MATCH) for source in rng.sample(sources, 20)]  # exact ties
    rng.shuffle(guards)
    return guards


def same_order(guards: list[Guard]) -> bool:
    by_torch = sorted(guards, key=STOCK_SORT_KEY)
    by_engine = sorted(guards, key=install_module._guard_order_key)
    return all(a is b for a, b in zip(by_torch, by_engine, strict=True))


class Small(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(3))
        self.scale = 2.0

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x) * self.scale
        return x + y


class GuardOrderTests(TestCase):
    def tearDown(self) -> None:
        install_module._create_fn_first_lines.clear()
        super().tearDown()

    def test_order_key_sorts_synthetic_guards_like_torch(self):
        for seed in range(5):
            guards = synthetic_guards(random.Random(seed))
            self.assertTrue(same_order(guards), f"seed {seed}")

    def test_order_key_sorts_a_compiled_frames_guards_like_torch(self):
        built: list[list[Guard]] = []
        torch._dynamo.reset()
        with dynamo_guards.enabled():
            engine_init = torch._dynamo.guards.CheckFunctionManager.__init__

            def recording_init(self: Any, f_code: Any, output_graph: Any = None, *args: Any, **kwargs: Any) -> None:
                built.append(list(output_graph.guards))
                engine_init(self, f_code, output_graph, *args, **kwargs)

            torch._dynamo.guards.CheckFunctionManager.__init__ = recording_init
            try:
                x = torch.randn(2, 4)
                torch.compile(Small(), backend="eager")(x, x)  # the same tensor twice: DUPLICATE_INPUT
            finally:
                torch._dynamo.guards.CheckFunctionManager.__init__ = engine_init
        self.assertEqual(len(built), 1)
        guard_kinds = {guard.inner_create_fn().__name__ for guard in built[0]}
        self.assertIn("DUPLICATE_INPUT", guard_kinds)
        self.assertIn("NN_MODULE_CALL_PATH", guard_kinds)
        self.assertTrue(same_order(built[0]))

    def test_stock_sort_key_restored_and_first_lines_forgotten_after_a_build(self):
        torch._dynamo.reset()
        with dynamo_guards.enabled():
            torch.compile(Small(), backend="eager")(torch.randn(2, 4), torch.randn(2, 4))
        self.assertIs(torch._guards.Guard.sort_key, STOCK_SORT_KEY)
        self.assertEqual(install_module._create_fn_first_lines, {})


if __name__ == "__main__":
    run_tests()
