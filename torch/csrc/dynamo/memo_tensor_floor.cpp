#include "torch/csrc/dynamo/memo_tensor_floor.h"

#include <chrono>

#include "torch/csrc/dynamo/tensor_expectation.h"

namespace dynamo_guards {

void TensorFloorCollector::validated(const SubtreeMemo& memo) {
  memo.for_each_step([&](MemoStep::Kind kind, void* object, const MemoStep& step) {
    if (kind == MemoStep::Kind::Tensor) {
      entries_.push_back({OwnedRef::from_borrowed(static_cast<PyObject*>(object)),
                          static_cast<const TENSOR_MATCH*>(step.b),
                          memo.tensor_record(step),
                          reinterpret_cast<const void*>(step.c)});
    }
  });
}

TensorFloorTiming TensorFloor::time(int passes) const {
  const std::vector<TensorFloorEntry>& entries = entries_;
  TensorLocalState fresh_state;
  const TensorLocalState& state = TensorLocalState::current(fresh_state);
  const size_t n = entries.size();
  size_t mismatches = 0;
  auto start = std::chrono::steady_clock::now();
  for (int pass = 0; pass < passes; ++pass) {
    mismatches = 0;
    for (size_t i = 0; i < n; ++i) {
      if (i + SubtreeMemo::kPrefetchDistance < n) {
        const TensorFloorEntry& ahead = entries[i + SubtreeMemo::kPrefetchDistance];
        __builtin_prefetch(ahead.tensor.get());
        prefetch_tensor_metadata(ahead.impl, ahead.record);
      }
      const TensorFloorEntry& entry = entries[i];
      mismatches += tensor_record_matches(entry.record, entry.guard, entry.tensor.get(), state) ? 0 : 1;
    }
  }
  std::chrono::duration<double, std::micro> total = std::chrono::steady_clock::now() - start;
  return {total.count() / passes, mismatches};
}

}  // namespace dynamo_guards
