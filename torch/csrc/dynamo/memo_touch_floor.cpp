#include "torch/csrc/dynamo/memo_touch_floor.h"

#include <chrono>

#include "torch/csrc/dynamo/guard_accessor.h"
#include "torch/csrc/dynamo/subtree_memo.h"

namespace dynamo_guards {

void collect_memo_touch_addresses(const GuardManager& manager, std::vector<const void*>& addresses, bool tensors) {
  const SubtreeMemo* memo = manager.memo();
  if (memo == nullptr || !memo->has_log()) {
    for (const auto& accessor : manager.accessors()) {
      collect_memo_touch_addresses(*accessor->child(), addresses, tensors);
    }
    return;
  }
  memo->for_each_step([&](MemoStep::Kind kind, void* object, const MemoStep& step) {
    if (kind == MemoStep::Kind::Tensor) {
      if (tensors) {
        addresses.push_back(object);
        addresses.push_back(reinterpret_cast<const void*>(step.c));  // the TensorImpl
        if (const void* autograd_meta = memo->tensor_record(step).autograd_meta) {
          addresses.push_back(autograd_meta);
        }
      }
      return;
    }
    addresses.push_back(object);
    if (kind == MemoStep::Kind::Walk) {
      collect_memo_touch_addresses(*static_cast<const GuardAccessor*>(step.b)->child(), addresses, tensors);
    }
  });
}

TouchTiming time_touches(const std::vector<const void*>& addresses, int passes) {
  uintptr_t sink = 0;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < passes; ++i) {
    for (const void* address : addresses) {
      sink += *static_cast<const volatile uintptr_t*>(address);
    }
  }
  std::chrono::duration<double, std::micro> total = std::chrono::steady_clock::now() - start;
  return {total.count() / passes, sink};
}

}  // namespace dynamo_guards
