// The benchmark's floor for the tensor comparisons a sound check cannot
// skip: the time the fork's own Tensor steps take with nothing else run.
//
// Nothing in torch 2.13 signals a change of a tensor's metadata (`.data =`,
// `set_`, `resize_`, `as_strided_`, `requires_grad_` bump no counter that
// covers all of them), so every check reads every guarded tensor's type,
// dispatch keys, dtype, device, sizes, strides and requires_grad, stock and
// fork alike. Timing exactly the comparisons the fork's logs make, with the
// same prefetches as validation, tells how much of a check that part is,
// and so the most the rest of the engine could still gain: stock's time
// over this floor bounds the fork's ratio to stock unless the comparisons
// themselves get faster.
//
// Which tensors: those of the Tensor steps of every log that validates
// during one check of the root (logs below Walk steps included), taken as
// each log validates (ValidatedLogListener): each tensor is alive then, and
// the collection keeps a reference to it, so the timing never reads an
// object that has died since, whatever the check's Python code did after.
#pragma once

#include <Python.h>

#include <utility>
#include <vector>

#include "torch/csrc/dynamo/py_ref.h"
#include "torch/csrc/dynamo/subtree_memo.h"

namespace dynamo_guards {

struct TensorFloorEntry {
  OwnedRef tensor;
  const TENSOR_MATCH* guard;  // borrowed: its tree outlives the floor
  TensorRecord record;
  const void* impl;  // the TensorImpl the log recorded: prefetched only
};

struct TensorFloorTiming {
  double microseconds_per_pass;
  size_t mismatches;  // tensors that did not match on the last pass (0 right after a passing check)
};

// The tensors of the logs that validate while it lives (on its thread).
class TensorFloorCollector final : public ValidatedLogListener {
 public:
  TensorFloorCollector() = default;
  ~TensorFloorCollector() override = default;
  std::vector<TensorFloorEntry> take() { return std::move(entries_); }

 private:
  void validated(const SubtreeMemo& memo) override;

  std::vector<TensorFloorEntry> entries_;
};

// What a collector gathered, timed on demand; keeps each tensor alive until
// it is destroyed (with the GIL held).
class TensorFloor {
 public:
  explicit TensorFloor(std::vector<TensorFloorEntry> entries) : entries_(std::move(entries)) {}
  TensorFloor(const TensorFloor&) = delete;
  TensorFloor& operator=(const TensorFloor&) = delete;
  TensorFloor(TensorFloor&&) = default;
  TensorFloor& operator=(TensorFloor&&) = default;
  size_t size() const { return entries_.size(); }
  // Runs every comparison `passes` times, prefetching as validation does;
  // times the passes only.
  TensorFloorTiming time(int passes) const;

 private:
  std::vector<TensorFloorEntry> entries_;
};

}  // namespace dynamo_guards
