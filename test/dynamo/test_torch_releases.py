"""What differs between the torch releases the engine supports (2.13, 2.14,
2.15; torch/csrc/dynamo/torch_release.h and torch/_dynamo/torch_release.py),
tested on the release the suite runs under: each test asserts that
release's stock verdict and that the fork gives the same, with a real
compile where the difference reaches one.

Tests named ``..._on_2_15`` or ``..._on_2_14`` are skipped on releases
without the feature; the others hold on every release."""

# Owner(s): ["module: dynamo"]
from __future__ import annotations

import contextlib
import math
import struct
import sys
import unittest
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
import torch._dynamo
import torch._dynamo.guards
from torch._dynamo.test_case import run_tests, TestCase

import dynamo_guards
from dynamo_guards import _C as guards
from dynamo_guards import torch_release
from dynamo_guards.install import _stock_fallback_reason

from scenario import fork_used_everywhere, Step, stock_and_fork

RUNNING = torch_release.RUNNING
on_2_14 = unittest.skipUnless(RUNNING is not None and RUNNING >= (2, 14), "torch 2.14 and later")
on_2_15 = unittest.skipUnless(RUNNING is not None and RUNNING >= (2, 15), "torch 2.15 and later")


def nan_with_bits(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


QUIET_NAN = float("nan")
NEGATIVE_NAN = -QUIET_NAN  # same payload, sign bit set
PAYLOAD_NAN = nan_with_bits(0x7FF8000000000001)


class ReleaseCheckTests(TestCase):
    def test_engine_built_against_running_release(self):
        self.assertEqual(guards.TORCH_RELEASE, RUNNING)
        self.assertIn(RUNNING, torch_release.SUPPORTED_RELEASES)

    def test_unsupported_release_named_with_supported_ones(self):
        self.assertEqual(
            torch_release.unsupported_reason("2.16.0", (2, 15)),
            "dynamo_guards supports torch 2.13, 2.14, 2.15; this is torch 2.16.0",
        )
        self.assertEqual(
            torch_release.unsupported_reason("2.12.1+cpu", (2, 13)),
            "dynamo_guards supports torch 2.13, 2.14, 2.15; this is torch 2.12.1+cpu",
        )

    def test_engine_built_against_another_release_refused(self):
        self.assertEqual(
            torch_release.unsupported_reason("2.15.0+cu132", (2, 13)),
            "dynamo_guards' C++ engine was built against torch 2.13 and this is torch 2.15.0+cu132; "
            "reinstall dynamo_guards against it",
        )
        self.assertIn("did not load", torch_release.unsupported_reason("2.14.1", None))

    def test_supported_release_accepted(self):
        for release in torch_release.SUPPORTED_RELEASES:
            self.assertIsNone(torch_release.unsupported_reason("%d.%d.0" % release, release))

    def test_import_under_mismatched_engine_raises_once_clearly(self):
        # dynamo_guards/__init__.py refuses at import: a mismatch never
        # reaches install() to fall back frame by frame.
        self.assertTrue(issubclass(dynamo_guards.UnsupportedTorchRelease, ImportError))
        self.assertIsNone(torch_release.unsupported_reason(torch.__version__, guards.TORCH_RELEASE))


class Fp32Precision:
    """Sets ``owner.fp32_precision`` for the block."""

    def __init__(self, owner: Any, value: str) -> None:
        self.owner, self.value = owner, value

    def __enter__(self) -> None:
        self.previous = self.owner.fp32_precision
        self.owner.fp32_precision = self.value

    def __exit__(self, *exc: Any) -> None:
        self.owner.fp32_precision = self.previous


def fp32_precision_settings() -> Iterator[tuple[str, Any, str]]:
    backends = torch.backends
    owners = {
        "backends": backends,
        "cuda.matmul": backends.cuda.matmul,
        "cudnn": backends.cudnn,
        "cudnn.conv": backends.cudnn.conv,
        "mkldnn": backends.mkldnn,
        "mkldnn.matmul": backends.mkldnn.matmul,
    }
    for name, owner in owners.items():
        for value in ("ieee", "tf32", "bf16", "none"):
            if value == owner.fp32_precision:
                continue
            try:
                with Fp32Precision(owner, value):
                    pass
            except (RuntimeError, ValueError):
                continue  # that backend does not take that precision
            yield name, owner, value


class GlobalStateReleaseTests(TestCase):
    def test_every_fp32_precision_change_agrees_with_torch(self):
        # torch 2.15 compares the CUDA matmul fp32 precision; 2.13 and 2.14
        # compare allowTF32CuBLAS, which only some precisions change.
        initial = torch._C._dynamo.guards.GlobalStateGuard()
        root = guards.RootGuardManager()
        root.add_global_state_guard(initial, ["___check_global_state()"], None)
        (guard,) = root.get_leaf_guards()
        self.assertTrue(guard.is_native())
        seen = 0
        for name, owner, value in fp32_precision_settings():
            with self.subTest(f"{name}.fp32_precision = {value}"), Fp32Precision(owner, value):
                self.assertEqual(guard(None), initial.check())
                seen += 1
            self.assertTrue(guard(None))
        self.assertGreaterEqual(seen, 5)

    def test_cuda_matmul_fp32_precision_set_to_ieee_after_compiling(self):
        def mutate(state: Any) -> None:
            state.previous = torch.backends.cuda.matmul.fp32_precision
            torch.backends.cuda.matmul.fp32_precision = "ieee"

        previous = torch.backends.cuda.matmul.fp32_precision

        def make() -> Any:
            # Each engine's run starts from the precision the test started with.
            torch.backends.cuda.matmul.fp32_precision = previous
            return SimpleNamespace(target=lambda x: x @ x.t(), previous=None)

        steps = [Step("first"), Step("again"), Step("precision set", mutate), Step("again")]
        try:
            stock, fork = stock_and_fork(make, lambda f, args: f(*args), steps, lambda s: (torch.ones(2, 3),))
        finally:
            torch.backends.cuda.matmul.fp32_precision = previous
        self.assertTrue(fork_used_everywhere(fork), fork.wrapper_types)
        self.assertEqual(fork.frame_counts, stock.frame_counts, f"stock: {stock}\nfork: {fork}")
        expected_recompiles = 1 if RUNNING >= (2, 15) else 0  # 2.15 compares the precision itself
        self.assertEqual(stock.frame_counts[2] - stock.frame_counts[1], expected_recompiles)


class NanGuardTests(TestCase):
    """FLOAT_IS_NAN / COMPLEX_IS_NAN: any NaN passes on 2.13 and 2.14; on
    2.15 the guard holds the NaN the trace saw and passes only its bits."""

    def leaf(self, torch_module: Any, cls: str, value: Any) -> Any:
        root = torch_module.RootGuardManager()
        args = (value,) if RUNNING >= (2, 15) else ()
        return getattr(torch_module, cls)(root, *args, ["x"], None)

    def test_float_nan_verdicts_equal_stock(self):
        for value in (QUIET_NAN, NEGATIVE_NAN, PAYLOAD_NAN, 1.0, 1, complex(QUIET_NAN, 0)):
            with self.subTest(value=value):
                stock = self.leaf(torch._C._dynamo.guards, "FLOAT_IS_NAN", QUIET_NAN)
                fork = self.leaf(guards, "FLOAT_IS_NAN", QUIET_NAN)
                self.assertEqual(fork(value), stock(value))

    def test_complex_nan_verdicts_equal_stock(self):
        expected = complex(QUIET_NAN, 0.0)
        for value in (expected, complex(0.0, QUIET_NAN), complex(QUIET_NAN, 1.0), complex(PAYLOAD_NAN, 0.0), QUIET_NAN, 1j):
            with self.subTest(value=value):
                stock = self.leaf(torch._C._dynamo.guards, "COMPLEX_IS_NAN", expected)
                fork = self.leaf(guards, "COMPLEX_IS_NAN", expected)
                self.assertEqual(fork(value), stock(value))

    @on_2_15
    def test_float_nan_of_other_sign_fails_on_2_15(self):
        fork = self.leaf(guards, "FLOAT_IS_NAN", QUIET_NAN)
        self.assertTrue(fork(float("nan")))
        self.assertFalse(fork(NEGATIVE_NAN))
        self.assertFalse(fork(PAYLOAD_NAN))

    def test_nan_argument_replaced_by_negative_nan(self):
        def make() -> Any:
            return SimpleNamespace(target=lambda x, c: x * math.copysign(1.0, c), c=QUIET_NAN)

        def negate(state: Any) -> None:
            state.c = NEGATIVE_NAN

        steps = [Step("first"), Step("again"), Step("negative NaN", negate), Step("again")]
        stock, fork = stock_and_fork(make, lambda f, args: f(*args), steps, lambda s: (torch.ones(2), s.c))
        report = f"stock: {stock}\nfork: {fork}"
        self.assertTrue(fork_used_everywhere(fork), fork.wrapper_types)
        self.assertEqual(fork.equal_to_eager, stock.equal_to_eager, report)
        self.assertEqual(fork.frame_counts, stock.frame_counts, report)


class TensorMatchReleaseTests(TestCase):
    @on_2_15
    def test_tensor_match_pinned_device_index_unchanged_on_2_15(self):
        t = torch.ones(2, 3)
        keys = torch._C._dispatch_keys(t)
        root = guards.RootGuardManager()
        root.add_tensor_match_guard(t, [2, 3], [3, 1], "t", ["t"], None, torch.Tensor, keys, False)
        (leaf,) = root.get_leaf_guards()
        self.assertTrue(leaf(t))
        self.assertFalse(leaf(torch.ones(3, 3)))

    @on_2_15
    def test_tensor_match_current_device_index_without_accelerator_fails_on_2_15(self):
        # compile_on_one_rank relaxes only accelerator tensors; on a machine
        # without one no tensor can be on the current accelerator (stock
        # raises from the accelerator runtime there; the fork fails the guard).
        if torch.accelerator.current_accelerator() is not None and torch.accelerator.is_available():
            self.skipTest("an accelerator is present")
        t = torch.ones(2)
        leaf = guards.TENSOR_MATCH(
            guards.RootGuardManager(), t, [2], [1], "t", ["t"], None, torch.Tensor, torch._C._dispatch_keys(t), True
        )
        self.assertFalse(leaf(t))

    @on_2_15
    def test_compile_on_one_rank_flag_taken_by_root_on_2_15(self):
        root = guards.RootGuardManager()
        root.set_compile_on_one_rank(True)
        root.set_compile_on_one_rank(False)

    @on_2_14
    def test_local_state_set_on_root_applies_to_tensor_match_on_2_14(self):
        # A state captured with autograd's keys excluded, as a loaded
        # package's may be: tensor guards built under it pass a check made
        # under that state and fail one made outside it, on torch's root and
        # on ours alike.
        t = torch.ones(2, requires_grad=True)
        keys = torch._C._dispatch_keys(t)
        for module in (torch._C._dynamo.guards, guards):
            with self.subTest(module=module.__name__):

                def build(state: Any = None) -> Any:
                    root = module.RootGuardManager()
                    if state is not None:
                        root.set_local_state(state)
                    manager = root.dict_getitem_manager("t", "L['t']", t, None)
                    manager.add_tensor_match_guard(t, [2], [1], "t", ["t"], None, torch.Tensor, keys)
                    return root

                with torch._C._AutoDispatchBelowAutograd():
                    saved = module.RootGuardManager().get_local_state()
                plain, restored = build(), build(saved)
                self.assertEqual([plain.check({"t": t}), restored.check({"t": t})], [True, False])
                with torch._C._AutoDispatchBelowAutograd():
                    self.assertEqual([plain.check({"t": t}), restored.check({"t": t})], [False, True])

    @on_2_15
    def test_unoptimized_relational_guard_reported_on_2_15(self):
        root = guards.RootGuardManager()
        a = root.getattr_manager("a", "L['o'].a", None, None)
        b = root.getattr_manager("b", "L['o'].b", None, None)
        self.assertFalse(a.has_unoptimized_relational_guard())
        guards.install_object_aliasing_guard(a, b, ["L['o'].a is L['o'].b"], None)
        self.assertTrue(a.has_unoptimized_relational_guard())


class BuildPathTests(TestCase):
    def test_loaded_package_frame_falls_back_with_reason(self):
        state = torch._C._dynamo.guards.RootGuardManager().get_local_state() if RUNNING >= (2, 14) else object()
        reason = _stock_fallback_reason({"guard_build_local_state": state})
        self.assertIsNotNone(reason)
        self.assertEqual(reason[0], "loaded package")
        self.assertIsNone(_stock_fallback_reason({"guard_build_local_state": None}))

    def test_epilogue_guard_code_parts_collected_as_stock_does(self):
        # torch 2.15's populate_code_parts_for_debugging also collects the
        # root's epilogue guards; 2.13 and 2.14 do not.
        from dynamo_guards.guard_manager_wrapper import ForkGuardManagerWrapper

        parts = []
        for wrapper in (torch._dynamo.guards.GuardManagerWrapper(), ForkGuardManagerWrapper()):
            wrapper.root.add_epilogue_lambda_guard(lambda f_locals: True, ["epilogue_part  # note"], None)
            wrapper.populate_code_parts_for_debugging()
            parts.append(wrapper.code_parts)
        self.assertEqual(parts[1], parts[0])
        self.assertEqual(parts[1], ["epilogue_part"] if RUNNING >= (2, 15) else [])

    def test_testing_hook_error_passes_through_once_unchanged(self):
        class HookError(AssertionError):
            pass

        calls = []

        def hook(wrapper: Any, f_locals: Any, builder: Any) -> None:
            calls.append(type(wrapper))
            raise HookError("raised by the test's hook")

        def compile_and_call(engine: Callable[[], Any]) -> BaseException:
            torch._dynamo.reset()
            previous = torch._dynamo.guards.guard_manager_testing_hook_fn
            torch._dynamo.guards.guard_manager_testing_hook_fn = hook
            try:
                with engine():
                    with self.assertRaises(BaseException) as caught:
                        torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))
            finally:
                torch._dynamo.guards.guard_manager_testing_hook_fn = previous
                torch._dynamo.reset()
            return caught.exception

        stock_error = compile_and_call(contextlib.nullcontext)
        stock_calls = list(calls)
        calls.clear()
        dynamo_guards.reset_fallback_counts()
        fork_error = compile_and_call(dynamo_guards.enabled)
        self.assertEqual(type(fork_error), type(stock_error))
        self.assertEqual(str(fork_error), str(stock_error))
        self.assertEqual(len(calls), len(stock_calls))
        self.assertEqual(dynamo_guards.fallback_counts(), {})


if __name__ == "__main__":
    run_tests()
