// TENSOR_MATCH: a tensor keeps the Python type, dispatch keys, dtype, device,
// requires_grad, rank and the static sizes and strides it was compiled for.
// This header stays free of ATen, so light files (the memo) can include it.
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
  // The state of the root evaluation in progress, else a fresh capture
  // written to `fresh` (borrowed; valid while `fresh` and that evaluation are).
  static const TensorLocalState& current(TensorLocalState& fresh);
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

// Final, so that a memo's Tensor step calls check() directly.
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
      py::object dispatch_keys);
  bool check(PyObject* value) override;
  // check() with the evaluation's dispatch state already in hand: a memo
  // reads it once for all its tensors.
  bool matches(PyObject* value, const TensorLocalState& state) const;
  void explain_failure(PyObject* value, CheckContext& ctx) override;
  const char* kind() const override { return "TENSOR_MATCH"; }
  void record(MemoRecorder& recorder, PyObject* value) override;
  // Where the tensor's autograd metadata (read by the requires_grad check)
  // was when the memo last recorded this guard: a prefetch hint, never
  // dereferenced (the tensor may have died or changed since).
  const void* autograd_meta_hint() const { return autograd_meta_hint_; }

  // Tensors of up to this rank with all sizes and strides static keep them
  // inside the guard object: one check reads no other allocation of ours.
  static constexpr int64_t kInlineRank = 4;

 private:
  // Empty string when `value` matches, else why not (cold).
  std::string mismatch(PyObject* value) const;

  // What every check reads, together at the front of the object.
  py::object pytype_;       // strong: the exact Python type of the tensor
  bool pytype_is_tensor_;   // a subclass of torch.Tensor: a value of that type needs no other check to unpack
  uint64_t dispatch_keys_;  // after TensorLocalState::apply at build time
  int64_t dim_;
  int16_t device_index_;
  int8_t dtype_;
  bool requires_grad_;
  bool inline_static_ = false;  // sizes and strides below are the whole story
  int64_t inline_sizes_[kInlineRank] = {};
  int64_t inline_strides_[kInlineRank] = {};

  // The general case (dynamic dimensions, higher ranks) and the failure text.
  std::vector<std::optional<int64_t>> sizes_;    // nullopt: dynamic
  std::vector<std::optional<int64_t>> strides_;  // nullopt: dynamic
  std::string tensor_name_;
  const void* autograd_meta_hint_ = nullptr;
};

}  // namespace dynamo_guards
