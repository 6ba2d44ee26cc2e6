#include "torch/csrc/dynamo/global_state_guards.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/PythonTorchFunctionTLS.h>
#include <ATen/autocast_mode.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/PyInterpreter.h>

#include "torch/csrc/dynamo/torch_release.h"

namespace dynamo_guards {

namespace {

// The device types whose autocast state torch's GlobalStateGuard records.
constexpr std::array<c10::DeviceType, GlobalStateSnapshot::kAutocastDevices> kAutocastDeviceTypes = {
    c10::DeviceType::CPU,
    c10::DeviceType::CUDA,
    c10::DeviceType::MTIA,
    c10::DeviceType::MAIA,
    c10::DeviceType::XPU,
    c10::DeviceType::IPU,
    c10::DeviceType::HPU,
    c10::DeviceType::XLA,
    c10::DeviceType::PrivateUse1,
    c10::DeviceType::MPS,
};

}  // namespace

GlobalStateSnapshot GlobalStateSnapshot::capture() {
  const at::Context& ctx = at::globalContext();
  GlobalStateSnapshot s{};
  s.grad_mode = at::GradMode::is_enabled();
  s.torch_function_state = static_cast<uint8_t>(at::impl::PythonTorchFunctionTLS::get_disabled_state());
  s.deterministic_algorithms = ctx.deterministicAlgorithms();
  s.deterministic_algorithms_warn_only = ctx.deterministicAlgorithmsWarnOnly();
  if constexpr (torch_release::kGlobalStateComparesCudaMatmulPrecision) {
    s.cuda_matmul_precision =
        static_cast<uint8_t>(ctx.float32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL));
  } else {
    s.allow_tf32 = ctx.allowTF32CuBLAS();
  }
  s.allow_fp16_reduce = static_cast<uint8_t>(ctx.allowFP16ReductionCuBLAS());
  s.allow_bf16_reduce = static_cast<uint8_t>(ctx.allowBF16ReductionCuBLAS());
  s.num_threads = at::get_num_threads();
  s.default_dtype = static_cast<int8_t>(c10::get_default_dtype_as_scalartype());
  s.autocast_cache_enabled = at::autocast::is_autocast_cache_enabled();
  for (size_t i = 0; i < kAutocastDeviceTypes.size(); ++i) {
    s.autocast_enabled[i] = at::autocast::is_autocast_enabled(kAutocastDeviceTypes[i]);
    s.autocast_dtype[i] = static_cast<int8_t>(at::autocast::get_autocast_dtype(kAutocastDeviceTypes[i]));
  }
  return s;
}

bool GlobalStateSnapshot::operator==(const GlobalStateSnapshot& o) const {
  return grad_mode == o.grad_mode && torch_function_state == o.torch_function_state &&
      deterministic_algorithms == o.deterministic_algorithms &&
      deterministic_algorithms_warn_only == o.deterministic_algorithms_warn_only && allow_tf32 == o.allow_tf32 &&
      cuda_matmul_precision == o.cuda_matmul_precision &&
      allow_fp16_reduce == o.allow_fp16_reduce && allow_bf16_reduce == o.allow_bf16_reduce &&
      num_threads == o.num_threads && default_dtype == o.default_dtype &&
      autocast_cache_enabled == o.autocast_cache_enabled && autocast_enabled == o.autocast_enabled &&
      autocast_dtype == o.autocast_dtype;
}

GLOBAL_STATE::GLOBAL_STATE(py::object initial_state, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), initial_state_(std::move(initial_state)) {
  if (!py::hasattr(initial_state_, "check") || !py::hasattr(initial_state_, "reason")) {
    throw py::type_error("add_global_state_guard needs torch's GlobalStateGuard");
  }
  if (initial_state_.attr("check")().cast<bool>()) {
    adopt_current_state();
  }
}

void GLOBAL_STATE::adopt_current_state() {
  snapshot_pending_ = false;
  try {
    snapshot_ = GlobalStateSnapshot::capture();
    native_ = true;
  } catch (const std::exception&) {
    native_ = false;
  }
}

bool GLOBAL_STATE::torch_check() const {
  return call_returned_true(PyObject_CallMethod(initial_state_.ptr(), "check", nullptr));
}

bool GLOBAL_STATE::check(PyObject* /*value*/) {
  if (native_) {
    try {
      return GlobalStateSnapshot::capture() == snapshot_;
    } catch (const std::exception&) {
      return false;
    }
  }
  bool ok = torch_check();
  if (ok && snapshot_pending_) {
    adopt_current_state();
  }
  return ok;
}

void GLOBAL_STATE::explain_failure(PyObject* value, CheckContext& ctx) {
  PyObject* reason = PyObject_CallMethod(initial_state_.ptr(), "reason", nullptr);
  if (reason == nullptr || !PyUnicode_Check(reason)) {
    Py_XDECREF(reason);
    PyErr_Clear();
    LeafGuard::explain_failure(value, ctx);
    return;
  }
  std::string text = "GLOBAL_STATE changed: " + py::reinterpret_steal<py::str>(reason).cast<std::string>();
  py::list parts;
  parts.append(py::str(text));
  ctx.record_failure(std::move(parts), user_stack_);
}

TORCH_FUNCTION_MODE_STACK::TORCH_FUNCTION_MODE_STACK(py::list initial_stack, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)) {
  for (py::handle mode : initial_stack) {
    types_.push_back(py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(Py_TYPE(mode.ptr()))));
  }
}

bool TORCH_FUNCTION_MODE_STACK::check(PyObject* /*value*/) {
  int64_t n = at::impl::PythonTorchFunctionTLS::stack_len();
  if (n != static_cast<int64_t>(types_.size())) {
    return false;
  }
  for (int64_t i = 0; i < n; ++i) {
    PyObject* mode = at::impl::PythonTorchFunctionTLS::get_stack_at(i)->ptr(getPyInterpreter());
    if (reinterpret_cast<PyObject*>(Py_TYPE(mode)) != types_[i].ptr()) {
      return false;
    }
  }
  return true;
}

}  // namespace dynamo_guards
