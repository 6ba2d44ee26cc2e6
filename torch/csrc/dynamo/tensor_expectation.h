// What a tensor check compares and reads, as plain data: the dispatch
// state of one evaluation, the expected metadata of a tensor with static
// sizes and strides, and where a check reads inside torch's objects. Free
// of ATen and of the guard classes, so that the memo log can hold copies.
#pragma once

#include <Python.h>

#include <cstdint>

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

// What a TENSOR_MATCH compares when the tensor's rank is at most
// kInlineRank and every size and stride is static: a plain value, so that a
// memo log can keep a copy beside its steps and check a tensor without
// reading the guard object (in situ, one cache miss less per tensor).
struct TensorExpectation {
  static constexpr int64_t kInlineRank = 4;

  PyObject* pytype = nullptr;  // borrowed: the TENSOR_MATCH holds the type
  uint64_t dispatch_keys = 0;  // as TensorLocalState applied them at build time
  int64_t dim = 0;
  int16_t device_index = 0;
  int8_t dtype = 0;
  bool requires_grad = false;
  bool pytype_is_tensor = false;  // a torch.Tensor subclass: a value of that type needs no other check to unpack
  bool all_static = false;        // sizes and strides below are the whole story
  int64_t sizes[kInlineRank] = {};
  int64_t strides[kInlineRank] = {};
};
static_assert(sizeof(TensorExpectation) == 96, "three per two cache lines, read in log order");

// Whether `value` matches `expected`, which must be all_static.
bool tensor_matches_static(const TensorExpectation& expected, PyObject* value, const TensorLocalState& state);

// Where a tensor's check reads inside its TensorImpl and its autograd
// metadata, as byte ranges from each object's start: what a memo
// prefetches (never dereferenced for anything else). Taken from the torch
// headers the engine is built against.
struct TensorMetadataLayout {
  uint16_t impl_begin;      // the autograd_meta_ pointer
  uint16_t impl_end;        // past key_set_
  uint16_t requires_grad;  // AutogradMeta::requires_grad_ (its vtable pointer is at 0)
};
extern const TensorMetadataLayout kTensorMetadataLayout;

}  // namespace dynamo_guards
