// Leaf guards that evaluate a Python callable. LAMBDA_GUARD is the builder's
// own escape hatch; the other kinds are rare ones whose exact semantics live
// in Python (torch internals) and are reproduced by calling the same Python
// code, listed as "python" in the coverage table (docs/coverage.md).
#pragma once

#include "torch/csrc/dynamo/leaf_guard.h"

namespace dynamo_guards {

// predicate(value) is truthy. An exception raised by the predicate fails the
// guard and is discarded.
class PythonPredicateGuard : public LeafGuard {
 public:
  PythonPredicateGuard(py::object predicate, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  // Uses predicate.explain(value) -> str when the predicate offers one.
  void explain_failure(PyObject* value, CheckContext& ctx) override;

 private:
  py::object predicate_;
};

class LAMBDA_GUARD : public PythonPredicateGuard {
 public:
  using PythonPredicateGuard::PythonPredicateGuard;
  const char* kind() const override { return "LAMBDA_GUARD"; }
};

class DUAL_LEVEL_MATCH : public PythonPredicateGuard {
 public:
  using PythonPredicateGuard::PythonPredicateGuard;
  const char* kind() const override { return "DUAL_LEVEL_MATCH"; }
};

class FAKE_SCRIPT_TYPE_MATCH : public PythonPredicateGuard {
 public:
  using PythonPredicateGuard::PythonPredicateGuard;
  const char* kind() const override { return "FAKE_SCRIPT_TYPE_MATCH"; }
};

class DISPATCH_KEY_SET_MATCH : public PythonPredicateGuard {
 public:
  using PythonPredicateGuard::PythonPredicateGuard;
  const char* kind() const override { return "DISPATCH_KEY_SET_MATCH"; }
};

class RANGE_ITERATOR_MATCH : public PythonPredicateGuard {
 public:
  using PythonPredicateGuard::PythonPredicateGuard;
  const char* kind() const override { return "RANGE_ITERATOR_MATCH"; }
};

// dynamo_guards._python_checks.<name>(*args): the predicate factories used
// by the python-evaluated kinds.
py::object make_python_predicate(const char* name, py::args args);

}  // namespace dynamo_guards
