// A guard's verbose_code_parts: the text torch prints for it when it fails.
//
// torch keeps one list per leaf guard. A large model's frame has tens of
// thousands of leaves (about 20,000 on MobileBert), and every list is an
// object the cyclic garbage collector tracks for as long as the frame
// lives: each full collection in the process walks them all, and they are
// counted among the survivors that bring the next full collection closer.
// The engine keeps one exact str as it is (strs are not tracked at all),
// and any other parts as a tuple, taken off the collector's lists when every
// item is an exact str: a MobileBert guard build then leaves about 12,000
// tracked objects alive instead of 33,000 (stock torch's: 18,000;
// benchmarks/dynamo/guard_build_time.py --count-tracked).
//
// Why a lone str is kept apart: CPython counts every allocation of a tracked
// object towards the next young collection and takes it back only when the
// object is freed, not when it is untracked. An untracked tuple per leaf
// would still bring collections closer by one per leaf (about 20,000 per
// MobileBert build); almost every leaf has exactly one part.
//
// Soundness of the untracking: an untracked object is never traversed, so
// a reference cycle through it would never be collected. A tuple cannot be
// changed after it is built and an exact str holds no references, so a
// tuple of exact strs can never be part of a cycle; CPython itself untracks
// such tuples during a collection. Parts holding anything else (a str
// subclass, an arbitrary object) stay tracked.
#pragma once

#include <pybind11/pybind11.h>

namespace dynamo_guards {

namespace py = pybind11;

class CodeParts {
 public:
  // `parts`: any iterable, as torch's guards take it (a str becomes its
  // characters); anything else raises TypeError.
  explicit CodeParts(const py::handle& parts);

  // A new list of the parts: the type torch's API returns.
  py::list as_list() const;

 private:
  // An exact str (the only part), or a tuple of the parts.
  py::object parts_;
};

}  // namespace dynamo_guards
