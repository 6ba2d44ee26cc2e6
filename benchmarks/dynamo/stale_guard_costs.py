"""Per-call cost of the guards added for the audit of reads the trace makes
without a guard (docs/audit.md, "What the trace reads without a guard").

Each case builds two guard trees through the engine's own API that differ
only in the guard under test, each holding it once for each of ``--objects``
objects, and times ``root.check`` on both: the difference per object is the
guard's cost on the check path. Two layouts per case:

* logged: the objects sit in one dict, a subtree the engine memoizes, so a
  call validates the memo's log (the common case in a real frame);
* walked: each object is a frame local of its own, a subtree too small to
  memoize, so a call walks it.

    .venv-3.11-torch2.13.0/bin/python benchmarks/dynamo/stale_guard_costs.py --objects 1000

Medians over ``--rounds`` interleaved batches; the two trees of a case are
timed alternately, so machine noise hits both alike. Report the difference,
never a lone time.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

from torch._dynamo.guards import GuardManagerType

from dynamo_guards import _C as guards

PLAIN = GuardManagerType.GUARD_MANAGER
DICT = GuardManagerType.DICT_GUARD_MANAGER


class Cls:
    """One class for every object: its methods and constants are what the
    class-level guards pin."""

    constant = 1.5
    shadowed = 1.0

    def method(self) -> int:
        return 1

    @classmethod
    def class_method(cls) -> int:
        return 1

    def __init__(self) -> None:
        self.shadowed = 2.0
        self.table = collections.OrderedDict(a=1.0, b=2.0, c=3.0)
        self.plain_table = dict(a=1.0, b=2.0, c=3.0)
        self.zero = 0.0
        self.count = 3


@dataclass
class Case:
    name: str
    # Adds the guard under test (with=True) or nothing comparable
    # (with=False) to the manager of one object.
    add: Callable[[Any, Cls, bool], None]


def class_attr(name: str) -> Callable[[Any, Cls, bool], None]:
    def add(m: Any, obj: Cls, with_guard: bool) -> None:
        if with_guard:
            m.add_class_attr_match_guard(name, vars(Cls)[name], [f"type(x).{name}"], None)

    return add


def function_code(name: str) -> Callable[[Any, Cls, bool], None]:
    """FUNCTION_CODE_MATCH; a frame has one per inlined function (on its
    root), here one per object so that the cost per leaf shows."""

    def add(m: Any, obj: Cls, with_guard: bool) -> None:
        if with_guard:
            m.add_function_code_match_guard(vars(Cls)[name], [f"Cls.{name} keeps its __code__"], None)

    return add


def shadowed(m: Any, obj: Cls, with_guard: bool) -> None:
    if with_guard:
        m.add_class_attr_shadowed_guard("shadowed", ["x.shadowed shadows"], None)


def dict_order(m: Any, obj: Cls, with_guard: bool) -> None:
    """A DictGuardManager over the OrderedDict (with ORDERED_DICT_ORDER) or
    over a plain dict of the same contents (without)."""
    table = obj.table if with_guard else obj.plain_table
    d = m.get_generic_dict_manager("x.__dict__", obj.__dict__, PLAIN)
    dm = d.dict_getitem_manager("table" if with_guard else "plain_table", "x.table", table, DICT)
    for i, (key, value) in enumerate(dict.items(table)):
        dm.get_key_manager(i, f"key {i}", key, PLAIN).add_equals_match_guard(key, [f"key {i}"], None)
        dm.get_value_manager(i, f"value {i}", value, PLAIN).add_equals_match_guard(value, [f"value {i}"], None)


def equals_float(m: Any, obj: Cls, with_guard: bool) -> None:
    """EQUALS_MATCH on a float (bits) against EQUALS_MATCH on an int (==)."""
    d = m.get_generic_dict_manager("x.__dict__", obj.__dict__, PLAIN)
    if with_guard:
        d.dict_getitem_manager("zero", "x.zero", obj.zero, PLAIN).add_equals_match_guard(0.0, ["x.zero == 0.0"], None)
    else:
        d.dict_getitem_manager("count", "x.count", obj.count, PLAIN).add_equals_match_guard(3, ["x.count == 3"], None)


def metaclass_attr(m: Any, obj: Cls, with_guard: bool) -> None:
    """METACLASS_ATTR_MATCH on ``type(x)``: ``Cls.mro`` is answered by the
    metaclass (``type``)."""
    t = m.type_manager("type(x)", Cls, PLAIN)
    if with_guard:
        t.add_metaclass_attr_match_guard("mro", vars(type)["mro"], ["type(x).mro from type"], None)


def global_name_absent(m: Any, obj: Cls, with_guard: bool) -> None:
    """GLOBAL_NAME_ABSENT's leaf, a DICT_CONTAINS(False), on a dict the
    subtree already reads (here the object's __dict__ standing in for a
    module's globals). Walked, the leaf makes the object's subtree four
    nodes, which the engine memoizes: read the logged row."""
    d = m.get_generic_dict_manager("x.__dict__", obj.__dict__, PLAIN)
    if with_guard:
        d.add_dict_contains_guard(False, "max", ["not ___dict_contains('max', G)"], None)


CASES = (
    Case("CLASS_ATTR_MATCH, function", class_attr("method")),
    Case("CLASS_ATTR_MATCH, float constant", class_attr("constant")),
    Case("FUNCTION_CODE_MATCH, function", function_code("method")),
    Case("FUNCTION_CODE_MATCH, classmethod", function_code("class_method")),
    Case("CLASS_ATTR_SHADOWED", shadowed),
    Case("ORDERED_DICT_ORDER (3 keys) vs dict", dict_order),
    Case("EQUALS_MATCH float (bits) vs int (==)", equals_float),
    Case("METACLASS_ATTR_MATCH", metaclass_attr),
    Case("GLOBAL_NAME_ABSENT (DICT_CONTAINS False)", global_name_absent),
)


def build(case: Case, objects: list[Cls], with_guard: bool, logged: bool) -> tuple[Any, dict[str, Any]]:
    root = guards.RootGuardManager()
    if logged:
        holder = {f"o{i}": obj for i, obj in enumerate(objects)}
        top = root.framelocals_manager(("objs", 0), "L['objs']", holder, PLAIN)
        top.add_type_match_guard(id(dict), ["type(objs) is dict"], None)
        managers = [top.dict_getitem_manager(key, f"L['objs'][{key!r}]", obj, PLAIN) for key, obj in holder.items()]
        f_locals: dict[str, Any] = {"objs": holder}
    else:
        managers = [root.framelocals_manager((f"o{i}", i), f"L['o{i}']", obj, PLAIN) for i, obj in enumerate(objects)]
        f_locals = {f"o{i}": obj for i, obj in enumerate(objects)}
    for m, obj in zip(managers, objects):
        m.add_type_match_guard(id(Cls), ["type(x) is Cls"], None)
        case.add(m, obj, with_guard)
    root.finalize()
    if not root.check(f_locals):
        raise AssertionError(f"{case.name}: the tree does not pass")
    return root, f_locals


def batch_ns(root: Any, f_locals: dict[str, Any], calls: int) -> float:
    check = root.check
    start = time.perf_counter_ns()
    for _ in range(calls):
        check(f_locals)
    return (time.perf_counter_ns() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=200, help="checks per batch")
    args = parser.parse_args()
    objects = [Cls() for _ in range(args.objects)]
    print(f"{'guard':<46}{'layout':>8}{'ns/object, with - without':>28}{'with (µs/check)':>18}")
    for case in CASES:
        for logged in (True, False):
            trees = {flag: build(case, objects, flag, logged) for flag in (True, False)}
            samples: dict[bool, list[float]] = {True: [], False: []}
            for r in range(args.rounds):
                for flag in ((True, False) if r % 2 else (False, True)):
                    samples[flag].append(batch_ns(*trees[flag], args.calls))
            with_ns = statistics.median(samples[True])
            without_ns = statistics.median(samples[False])
            per_object = (with_ns - without_ns) / args.objects
            layout = "logged" if logged else "walked"
            print(f"{case.name:<46}{layout:>8}{per_object:>28.1f}{with_ns / 1e3:>18.1f}")


if __name__ == "__main__":
    main()
