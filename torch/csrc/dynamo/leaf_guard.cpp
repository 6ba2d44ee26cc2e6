#include "torch/csrc/dynamo/leaf_guard.h"

namespace dynamo_guards {

py::list checked_code_parts(const py::object& parts) {
  if (!PyList_Check(parts.ptr())) {
    throw py::type_error(
        "verbose_code_parts must be a list of str, got " +
        std::string(Py_TYPE(parts.ptr())->tp_name));
  }
  py::list copy;
  for (py::handle item : parts) {
    if (!PyUnicode_Check(item.ptr())) {
      throw py::type_error(
          "verbose_code_parts must contain only str, got " +
          std::string(Py_TYPE(item.ptr())->tp_name));
    }
    copy.append(item);
  }
  return copy;
}

LeafGuard::LeafGuard(py::object verbose_code_parts, py::object user_stack)
    : verbose_code_parts_(checked_code_parts(verbose_code_parts)),
      user_stack_(std::move(user_stack)) {
  live_.fetch_add(1, std::memory_order_relaxed);
}

LeafGuard::~LeafGuard() {
  live_.fetch_sub(1, std::memory_order_relaxed);
}

std::atomic<size_t> LeafGuard::live_{0};

void LeafGuard::explain_failure(PyObject* /*value*/, CheckContext& ctx) {
  ctx.record_failure(verbose_code_parts_, user_stack_);
}

}  // namespace dynamo_guards
