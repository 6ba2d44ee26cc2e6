#include "torch/csrc/dynamo/leaf_guard.h"

namespace dynamo_guards {

py::list code_parts_list(const py::object& parts) {
  PyObject* list = PySequence_List(parts.ptr());  // new reference
  if (list == nullptr) {
    PyErr_Clear();
    throw py::type_error("verbose_code_parts must be an iterable, got " + std::string(Py_TYPE(parts.ptr())->tp_name));
  }
  return py::reinterpret_steal<py::list>(list);
}

LeafGuard::LeafGuard(py::object verbose_code_parts, py::object user_stack)
    : verbose_code_parts_(code_parts_list(verbose_code_parts)),
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
