// A leaf guard checks one property of one value. Leaves are shared
// (std::shared_ptr) because cloning a tree for the diff guard manager and
// relational guards installed on several managers reuse the same leaf.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <memory>
#include <string>

#include "torch/csrc/dynamo/check_context.h"
#include "torch/csrc/dynamo/code_parts.h"
#include "torch/csrc/dynamo/subtree_memo.h"

namespace dynamo_guards {

namespace py = pybind11;

// How a kind of guard is evaluated, for the coverage table (docs/coverage.md).
enum class Evaluation { Native, PythonCallable };

class LeafGuard {
 public:
  LeafGuard(const py::object& verbose_code_parts, py::object user_stack);
  LeafGuard(CodeParts verbose_code_parts, py::object user_stack);
  virtual ~LeafGuard();
  LeafGuard(const LeafGuard&) = delete;
  LeafGuard& operator=(const LeafGuard&) = delete;

  // `value` is borrowed. Returns false on mismatch; never leaves a Python
  // error set.
  virtual bool check(PyObject* value) = 0;

  // Out-of-line, cold: the explanation recorded when check() failed. The
  // default reports the guard's own code parts; guards with a more precise
  // story (tensor mismatches) override it.
  virtual void explain_failure(PyObject* value, CheckContext& ctx);

  virtual const char* kind() const = 0;

  // What this guard's verdict on `value` depends on, for a SubtreeMemo. The
  // default re-runs the guard (tensor metadata, Python callables, relation
  // slots); guards whose verdict is pinned by a dict's contents, a type's
  // identity or version tag say so instead.
  virtual void record(MemoRecorder& recorder, PyObject* value) { recorder.leaf(this, value); }

  // Whether check() may run Python code (a callable, an __eq__, a getattr),
  // which can change any dict. A memo re-checks what it pins after such a
  // guard runs.
  virtual bool may_run_python() const { return true; }

  // Whether check(value) only compares value's address with one it holds
  // (ID_MATCH): then it passes for an address exactly when it passed before.
  virtual bool decides_by_identity() const { return false; }

  // Whether record() on `value`, held (MemoRecorder::held: alive, maybe
  // another object at the recorded address), logs only what is sound there:
  // a Type step, or a Leaf step whose check runs no Python and reads the
  // value only after its type is checked, if at all.
  virtual bool records_on_held_value(PyObject* value) const { return false; }

  // The one evaluation entry point for managers: fast when ctx is null.
  bool run(PyObject* value, CheckContext* ctx) {
    if (ctx != nullptr) {
      ctx->num_guards_executed++;
    }
    if (check(value)) {
      if (ctx != nullptr && ctx->recorder != nullptr) {
        record(*ctx->recorder, value);
      }
      return true;
    }
    if (ctx != nullptr) {
      explain_failure(value, *ctx);
    }
    return false;
  }

  // A new list each call (see code_parts.h).
  py::list verbose_code_parts() const { return verbose_code_parts_.as_list(); }
  const CodeParts& code_parts() const { return verbose_code_parts_; }
  const py::object& user_stack() const { return user_stack_; }
  // Leaf guards alive in the process, for the lifetime tests.
  static size_t live_count() { return live_.load(std::memory_order_relaxed); }

 protected:
  CodeParts verbose_code_parts_;
  py::object user_stack_;

 private:
  static std::atomic<size_t> live_;
};

using LeafGuardPtr = std::shared_ptr<LeafGuard>;

}  // namespace dynamo_guards
