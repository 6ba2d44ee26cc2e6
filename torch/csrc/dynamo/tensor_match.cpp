#include "torch/csrc/dynamo/tensor_match.h"

#include <ATen/DeviceAccelerator.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/autograd/variable.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <sstream>

namespace dynamo_guards {

namespace {

thread_local const TensorLocalState* tls_current_state = nullptr;

// torch.utils._python_dispatch keeps this module global in step with the
// thread-local flag torch's own guards read (set on every mode push/pop);
// that flag is not exported from libtorch_python, the global is.
bool in_mode_without_ignore_compile_internals() {
  static PyObject* module_dict = [] {
    PyObject* mod = PyImport_ImportModule("torch.utils._python_dispatch");
    if (mod == nullptr) {
      PyErr_Clear();
      return static_cast<PyObject*>(nullptr);
    }
    PyObject* d = PyModule_GetDict(mod);  // borrowed; the module is immortal in practice
    Py_INCREF(d);
    Py_DECREF(mod);
    return d;
  }();
  if (module_dict == nullptr) {
    return false;
  }
  PyObject* flag = PyDict_GetItemString(module_dict, "_is_in_any_mode_without_ignore_compile_internals");  // borrowed
  return flag == Py_True;
}

// The keys a tensor dispatches on under `state`: the thread's forced-on
// keys join the tensor's own, its forced-off keys leave, and (outside a
// Python mode that asked to see compile internals) the three Python keys
// are dropped, since Dynamo traces through Python dispatch itself.
c10::DispatchKeySet python_keys() {
  return c10::DispatchKeySet(c10::DispatchKey::Python) | c10::DispatchKeySet(c10::DispatchKey::PythonTLSSnapshot) |
      c10::DispatchKeySet(c10::DispatchKey::PythonDispatcher);
}

inline uint64_t effective_keys(const TensorLocalState& state, c10::DispatchKeySet tensor_keys) {
  static const uint64_t kPythonKeys = python_keys().raw_repr();
  uint64_t keys = (tensor_keys.raw_repr() | state.included) & ~state.excluded;
  return state.mask_python_keys ? keys & ~kPythonKeys : keys;
}

std::optional<int64_t> optional_int(py::handle item, const char* what) {
  if (item.is_none()) {
    return std::nullopt;
  }
  if (!PyLong_Check(item.ptr())) {
    throw py::type_error(std::string(what) + " entries must be int or None, got " + Py_TYPE(item.ptr())->tp_name);
  }
  return item.cast<int64_t>();
}

std::vector<std::optional<int64_t>> optional_ints(const py::object& seq, const char* what) {
  if (!PyList_Check(seq.ptr()) && !PyTuple_Check(seq.ptr())) {
    throw py::type_error(std::string(what) + " must be a list of int or None, got " + Py_TYPE(seq.ptr())->tp_name);
  }
  std::vector<std::optional<int64_t>> out;
  for (py::handle item : seq) {
    out.push_back(optional_int(item, what));
  }
  return out;
}

}  // namespace

TensorLocalState TensorLocalState::capture() {
  c10::impl::LocalDispatchKeySet tls = c10::impl::tls_local_dispatch_key_set();
  TensorLocalState s;
  s.included = tls.included_.raw_repr();
  s.excluded = tls.excluded_.raw_repr();
  s.mask_python_keys = !in_mode_without_ignore_compile_internals();
  return s;
}

const TensorLocalState& TensorLocalState::current(TensorLocalState& fresh) {
  if (tls_current_state != nullptr) {
    return *tls_current_state;
  }
  fresh = capture();
  return fresh;
}

TensorLocalStateScope::TensorLocalStateScope()
    : state_(TensorLocalState::capture()), previous_(tls_current_state) {
  tls_current_state = &state_;
}

TensorLocalStateScope::~TensorLocalStateScope() {
  tls_current_state = previous_;
}

TENSOR_MATCH::TENSOR_MATCH(
    py::object value,
    py::object sizes,
    py::object strides,
    py::object tensor_name,
    py::object parts,
    py::object stack,
    py::object pytype,
    py::object dispatch_keys,
    const TensorLocalState& build_state,
    bool device_index_is_current)
    : LeafGuard(std::move(parts), std::move(stack)),
      pytype_(std::move(pytype)),
      device_index_is_current_(device_index_is_current) {
  if (!THPVariable_Check(value.ptr())) {
    throw py::type_error(std::string("TENSOR_MATCH needs a tensor, got ") + Py_TYPE(value.ptr())->tp_name);
  }
  if (!PyType_Check(pytype_.ptr())) {
    throw py::type_error("pytype must be a type");
  }
  if (!PyUnicode_Check(tensor_name.ptr())) {
    throw py::type_error("tensor_name must be a str");
  }
  tensor_name_ = tensor_name.cast<std::string>();
  const at::Tensor& t = THPVariable_Unpack(value.ptr());
  expected_.pytype = pytype_.ptr();
  // By MRO, as CPython lays instances out: no __subclasscheck__ is asked.
  expected_.pytype_is_tensor = THPVariableClass != nullptr &&
      PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(pytype_.ptr()), reinterpret_cast<PyTypeObject*>(THPVariableClass));
  const uint64_t raw_keys = dispatch_keys.attr("raw_repr")().cast<uint64_t>();
  expected_.dispatch_keys =
      effective_keys(build_state, c10::DispatchKeySet(c10::DispatchKeySet::RAW, raw_keys));
  expected_.dtype = static_cast<int8_t>(t.scalar_type());
  expected_.device_index = t.device().index();
  expected_.requires_grad = t.requires_grad();
  expected_.dim = t.dim();
  sizes_ = optional_ints(sizes, "sizes");
  strides_ = optional_ints(strides, "strides");
  if (static_cast<int64_t>(sizes_.size()) != expected_.dim || static_cast<int64_t>(strides_.size()) != expected_.dim) {
    throw py::value_error("sizes and strides must have one entry per dimension of the tensor");
  }
  bool all_static = expected_.dim <= TensorExpectation::kInlineRank;
  for (int64_t i = 0; i < expected_.dim && all_static; ++i) {
    all_static = sizes_[i].has_value() && strides_[i].has_value();
    expected_.sizes[i] = sizes_[i].value_or(0);
    expected_.strides[i] = strides_[i].value_or(0);
  }
  expected_.all_static = all_static;
}

bool TENSOR_MATCH::check(PyObject* value) {
  TensorLocalState fresh;
  return matches(value, TensorLocalState::current(fresh));
}

namespace {

// The checks every tensor takes before its sizes and strides; the tensor,
// when they pass.
inline const at::Tensor* matching_tensor(
    const TensorExpectation& expected,
    PyObject* value,
    const TensorLocalState& state) {
  if (reinterpret_cast<PyObject*>(Py_TYPE(value)) != expected.pytype ||
      (!expected.pytype_is_tensor && !THPVariable_Check(value))) {
    return nullptr;
  }
  const at::Tensor& t = THPVariable_Unpack(value);
  if (effective_keys(state, t.key_set()) != expected.dispatch_keys ||
      static_cast<int8_t>(t.scalar_type()) != expected.dtype || t.device().index() != expected.device_index ||
      t.requires_grad() != expected.requires_grad || t.dim() != expected.dim) {
    return nullptr;
  }
  return &t;
}

// Sizes and strides against expected values; nullopt entries are dynamic.
// A symbolic size matches only when it has a concrete value.
template <typename Expected>
bool symbolic_sizes_match(const at::Tensor& t, int64_t dim, const Expected& sizes, const Expected& strides) {
  c10::SymIntArrayRef actual_sizes = t.sym_sizes();
  c10::SymIntArrayRef actual_strides = t.sym_strides();
  for (int64_t i = 0; i < dim; ++i) {
    std::optional<int64_t> size = sizes[i];
    std::optional<int64_t> stride = strides[i];
    if (size.has_value() && actual_sizes[i].maybe_as_int() != size) {
      return false;
    }
    if (stride.has_value() && actual_strides[i].maybe_as_int() != stride) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool tensor_matches_static(const TensorExpectation& expected, PyObject* value, const TensorLocalState& state) {
  const at::Tensor* t = matching_tensor(expected, value, state);
  if (t == nullptr) {
    return false;
  }
  if (t->unsafeGetTensorImpl()->has_symbolic_sizes_strides()) {
    return symbolic_sizes_match(*t, expected.dim, expected.sizes, expected.strides);
  }
  c10::IntArrayRef sizes = t->sizes();
  c10::IntArrayRef strides = t->strides();
  for (int64_t i = 0; i < expected.dim; ++i) {
    if (sizes[i] != expected.sizes[i] || strides[i] != expected.strides[i]) {
      return false;
    }
  }
  return true;
}

namespace {

// The current accelerator's device index; nullopt when there is no
// accelerator to be current on (torch's own check raises from the
// accelerator runtime there).
std::optional<c10::DeviceIndex> current_accelerator_index() {
  try {
    return at::accelerator::getDeviceIndex();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

bool TENSOR_MATCH::matches(PyObject* value, const TensorLocalState& state) const {
  if (!device_index_is_current_) {
    return matches_expectation(expected_, value, state);
  }
  std::optional<c10::DeviceIndex> current = current_accelerator_index();
  if (!current.has_value()) {
    return false;  // the tensor cannot be on the current accelerator
  }
  TensorExpectation expected = expected_;
  expected.device_index = *current;
  return matches_expectation(expected, value, state);
}

bool TENSOR_MATCH::matches_expectation(
    const TensorExpectation& expected,
    PyObject* value,
    const TensorLocalState& state) const {
  if (expected.all_static) {
    return tensor_matches_static(expected, value, state);
  }
  const at::Tensor* t = matching_tensor(expected, value, state);
  return t != nullptr && symbolic_sizes_match(*t, expected.dim, sizes_, strides_);
}

void TENSOR_MATCH::record(MemoRecorder& recorder, PyObject* value) {
  if (device_index_is_current_) {
    recorder.leaf(this, value);
    return;
  }
  // check() passed, so `value` is a tensor. Its TensorImpl and autograd
  // metadata are logged as addresses to prefetch, never to read through.
  c10::TensorImpl* impl = THPVariable_Unpack(value).unsafeGetTensorImpl();
  recorder.tensor(this, value, impl, impl->autograd_meta());
}

std::string TENSOR_MATCH::mismatch(PyObject* value) const {
  std::ostringstream out;
  if (reinterpret_cast<PyObject*>(Py_TYPE(value)) != pytype_.ptr() || !THPVariable_Check(value)) {
    out << "expected type of '" << tensor_name_ << "' to be a tensor type, ' but found "
        << py::repr(reinterpret_cast<PyObject*>(Py_TYPE(value))).cast<std::string>();
    return out.str();
  }
  const at::Tensor& t = THPVariable_Unpack(value);
  const TensorLocalState* state = tls_current_state;
  TensorLocalState fresh = TensorLocalState::capture();
  if (state == nullptr) {
    state = &fresh;
  }
  c10::DispatchKeySet actual_keys(c10::DispatchKeySet::RAW, effective_keys(*state, t.key_set()));
  if (actual_keys.raw_repr() != expected_.dispatch_keys) {
    out << "tensor '" << tensor_name_ << "' dispatch key set mismatch. expected "
        << c10::DispatchKeySet(c10::DispatchKeySet::RAW, expected_.dispatch_keys) << ", actual " << actual_keys;
    return out.str();
  }
  if (static_cast<int8_t>(t.scalar_type()) != expected_.dtype) {
    out << "tensor '" << tensor_name_ << "' dtype mismatch. expected " << static_cast<c10::ScalarType>(expected_.dtype)
        << ", actual " << t.scalar_type();
    return out.str();
  }
  int expected_index = expected_.device_index;
  if (device_index_is_current_) {
    std::optional<c10::DeviceIndex> current = current_accelerator_index();
    if (!current.has_value()) {
      out << "tensor '" << tensor_name_ << "' Tensor device index mismatch. Expected the current accelerator's, "
          << "and there is no accelerator";
      return out.str();
    }
    expected_index = *current;
  }
  if (t.device().index() != expected_index) {
    out << "tensor '" << tensor_name_ << "' Tensor device index mismatch. Expected device index to be "
        << expected_index << ", actual " << static_cast<int>(t.device().index());
    return out.str();
  }
  if (t.requires_grad() != expected_.requires_grad) {
    out << "tensor '" << tensor_name_ << "' requires_grad mismatch. expected requires_grad=" << expected_.requires_grad;
    return out.str();
  }
  if (t.dim() != expected_.dim) {
    out << "tensor '" << tensor_name_ << "' rank mismatch. expected " << expected_.dim << ", actual " << t.dim();
    return out.str();
  }
  c10::SymIntArrayRef sizes = t.sym_sizes();
  c10::SymIntArrayRef strides = t.sym_strides();
  for (int64_t i = 0; i < expected_.dim; ++i) {
    if (sizes_[i].has_value() && sizes[i].maybe_as_int() != sizes_[i]) {
      out << "tensor '" << tensor_name_ << "' size mismatch at index " << i << ". expected " << *sizes_[i]
          << ", actual " << sizes[i];
      return out.str();
    }
  }
  for (int64_t i = 0; i < expected_.dim; ++i) {
    if (strides_[i].has_value() && strides[i].maybe_as_int() != strides_[i]) {
      out << "tensor '" << tensor_name_ << "' stride mismatch at index " << i << ". expected " << *strides_[i]
          << ", actual " << strides[i];
      return out.str();
    }
  }
  return std::string();
}

void TENSOR_MATCH::explain_failure(PyObject* value, CheckContext& ctx) {
  std::string reason = mismatch(value);
  if (reason.empty()) {
    LeafGuard::explain_failure(value, ctx);
    return;
  }
  // A specific mismatch carries no user stack, as in torch's reports.
  ctx.record_failure(reason);
}

namespace {

// Names TensorImpl's protected fields for offsetof; never constructed.
// offsetof on a class with virtual functions is conditionally supported;
// GCC and Clang give the layout of the headers the engine is built
// against, which is the wheel's. The offsets only aim prefetches, but what
// they assume of the layout is asserted below, so that a torch release
// that moves these fields fails the build, not a prefetch.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
struct TensorImplFields : c10::TensorImpl {
  // Where the autograd_meta_ pointer (private) lies: declared right after storage_.
  static constexpr size_t autograd_meta_pointer();
  // Past key_set_.
  static constexpr size_t key_set_end();
};
constexpr size_t TensorImplFields::autograd_meta_pointer() {
  return offsetof(TensorImplFields, storage_) + sizeof(c10::Storage);
}
constexpr size_t TensorImplFields::key_set_end() {
  return offsetof(TensorImplFields, key_set_) + sizeof(c10::DispatchKeySet);
}
constexpr size_t kRequiresGradOffset = offsetof(torch::autograd::AutogradMeta, requires_grad_);
#pragma GCC diagnostic pop

static_assert(sizeof(c10::Storage) == sizeof(void*), "TensorImpl::storage_ is one intrusive pointer");
static_assert(
    TensorImplFields::key_set_end() >= TensorImplFields::autograd_meta_pointer() + sizeof(void*) + sizeof(c10::DispatchKeySet),
    "TensorImpl::key_set_ follows storage_ and the autograd_meta_ pointer");
static_assert(TensorImplFields::key_set_end() <= sizeof(c10::TensorImpl), "key_set_ lies inside TensorImpl");
static_assert(TensorImplFields::key_set_end() <= UINT16_MAX, "TensorMetadataLayout holds 16-bit offsets");
static_assert(
    std::is_same_v<decltype(torch::autograd::AutogradMeta::requires_grad_), bool>,
    "AutogradMeta::requires_grad_ is the bool a tensor check reads");
static_assert(
    kRequiresGradOffset >= sizeof(void*) && kRequiresGradOffset + sizeof(bool) <= sizeof(torch::autograd::AutogradMeta),
    "AutogradMeta::requires_grad_ lies inside AutogradMeta, past its vtable pointer");

}  // namespace

const TensorMetadataLayout kTensorMetadataLayout = {
    static_cast<uint16_t>(TensorImplFields::autograd_meta_pointer()),
    static_cast<uint16_t>(TensorImplFields::key_set_end()),
    static_cast<uint16_t>(kRequiresGradOffset),
};

}  // namespace dynamo_guards
