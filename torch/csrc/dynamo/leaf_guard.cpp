#include "torch/csrc/dynamo/leaf_guard.h"

namespace dynamo_guards {

LeafGuard::LeafGuard(const py::object& verbose_code_parts, py::object user_stack)
    : LeafGuard(CodeParts(verbose_code_parts), std::move(user_stack)) {}

LeafGuard::LeafGuard(CodeParts verbose_code_parts, py::object user_stack)
    : verbose_code_parts_(std::move(verbose_code_parts)),
      user_stack_(std::move(user_stack)) {
  live_.fetch_add(1, std::memory_order_relaxed);
}

LeafGuard::~LeafGuard() {
  live_.fetch_sub(1, std::memory_order_relaxed);
}

std::atomic<size_t> LeafGuard::live_{0};

void LeafGuard::explain_failure(PyObject* /*value*/, CheckContext& ctx) {
  ctx.record_failure(verbose_code_parts_.as_list(), user_stack_);
}

}  // namespace dynamo_guards
