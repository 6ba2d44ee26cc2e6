#include "torch/csrc/dynamo/leaf_floor.h"

#include <chrono>

#include "torch/csrc/dynamo/leaf_guard.h"

namespace dynamo_guards {

LeafFloorTiming time_leaf_guards(const GuardManager& manager, PyObject* value, int passes) {
  const std::vector<LeafGuardPtr>& leaves = manager.leaf_guards();
  bool passed = true;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < passes; ++i) {
    for (const LeafGuardPtr& leaf : leaves) {
      if (!leaf->run(value, nullptr)) {
        passed = false;
        break;
      }
    }
  }
  std::chrono::duration<double, std::micro> total = std::chrono::steady_clock::now() - start;
  return {total.count() / passes, passed};
}

}  // namespace dynamo_guards
