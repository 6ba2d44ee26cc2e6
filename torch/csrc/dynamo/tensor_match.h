// TENSOR_MATCH: a tensor keeps the Python type, dispatch keys, dtype, device,
// requires_grad, rank and the static sizes and strides it was compiled for.
// Free of ATen (what the memo needs is in tensor_expectation.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "torch/csrc/dynamo/leaf_guard.h"
#include "torch/csrc/dynamo/tensor_expectation.h"

namespace dynamo_guards {

// Sets the state every TENSOR_MATCH in the current evaluation reads, and
// restores the previous one when the evaluation ends (evaluations nest when
// a lambda guard compiles or checks another frame).
class TensorLocalStateScope {
 public:
  TensorLocalStateScope();
  ~TensorLocalStateScope();
  TensorLocalStateScope(const TensorLocalStateScope&) = delete;
  TensorLocalStateScope& operator=(const TensorLocalStateScope&) = delete;

 private:
  TensorLocalState state_;
  const TensorLocalState* previous_;
};

// Final, so that a memo's Tensor step calls matches() directly.
//
// device_index_is_current (torch 2.15, compile-on-one-rank): the tensor's
// device index is compared with the current accelerator device index at
// each check, not with the index it had when compiled. Such a guard is
// never inlined into a memo log (record() logs it as a plain leaf), since
// the expected index is not a fact of the build.
class TENSOR_MATCH final : public LeafGuard {
 public:
  TENSOR_MATCH(
      py::object value,
      py::object sizes,
      py::object strides,
      py::object tensor_name,
      py::object parts,
      py::object stack,
      py::object pytype,
      py::object dispatch_keys,
      const TensorLocalState& build_state,
      bool device_index_is_current = false);
  bool check(PyObject* value) override;
  // check() with the evaluation's dispatch state already in hand: a memo
  // reads it once for all its tensors.
  bool matches(PyObject* value, const TensorLocalState& state) const;
  void explain_failure(PyObject* value, CheckContext& ctx) override;
  const char* kind() const override { return "TENSOR_MATCH"; }
  void record(MemoRecorder& recorder, PyObject* value) override;
  const TensorExpectation& expectation() const { return expected_; }

 private:
  // Empty string when `value` matches, else why not (cold).
  std::string mismatch(PyObject* value) const;

  // matches() against `expected`: expected_, or a copy of it holding the
  // current accelerator's device index.
  bool matches_expectation(const TensorExpectation& expected, PyObject* value, const TensorLocalState& state) const;

  py::object pytype_;  // strong: the exact Python type of the tensor
  bool device_index_is_current_;
  TensorExpectation expected_;
  // The general case (dynamic dimensions, higher ranks) and the failure text.
  std::vector<std::optional<int64_t>> sizes_;    // nullopt: dynamic
  std::vector<std::optional<int64_t>> strides_;  // nullopt: dynamic
  std::string tensor_name_;
};

}  // namespace dynamo_guards
