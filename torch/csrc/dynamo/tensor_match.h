// TENSOR_MATCH: a tensor keeps the Python type, dispatch keys, dtype, device,
// requires_grad, rank and the static sizes and strides it was compiled for.
// This header stays free of ATen; only tensor_match.cpp includes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "torch/csrc/dynamo/leaf_guard.h"

namespace dynamo_guards {

// Thread-local dispatch state sampled once per root evaluation, as the
// dispatcher would apply it to every tensor of the frame.
struct TensorLocalState {
  uint64_t included = 0;
  uint64_t excluded = 0;
  bool mask_python_keys = true;
  static TensorLocalState capture();
};

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

class TENSOR_MATCH : public LeafGuard {
 public:
  TENSOR_MATCH(
      py::object value,
      py::object sizes,
      py::object strides,
      py::object tensor_name,
      py::object parts,
      py::object stack,
      py::object pytype,
      py::object dispatch_keys);
  bool check(PyObject* value) override;
  void explain_failure(PyObject* value, CheckContext& ctx) override;
  const char* kind() const override { return "TENSOR_MATCH"; }

 private:
  // Empty string when `value` matches, else why not (cold).
  std::string mismatch(PyObject* value) const;

  py::object pytype_;  // strong: the exact Python type of the tensor
  std::string tensor_name_;
  uint64_t dispatch_keys_;  // after TensorLocalState::apply at build time
  int8_t dtype_;
  int16_t device_index_;
  bool requires_grad_;
  int64_t dim_;
  std::vector<std::optional<int64_t>> sizes_;    // nullopt: dynamic
  std::vector<std::optional<int64_t>> strides_;  // nullopt: dynamic
  // When every size and stride is static: the same values, flat, compared
  // against a non-symbolic tensor's plain sizes()/strides().
  bool all_static_ = false;
  std::vector<int64_t> static_sizes_;
  std::vector<int64_t> static_strides_;
};

}  // namespace dynamo_guards
