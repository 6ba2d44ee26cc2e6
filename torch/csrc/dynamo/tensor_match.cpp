#include "torch/csrc/dynamo/tensor_match.h"

#include <c10/core/DispatchKeySet.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/python_variable.h>

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

inline c10::DispatchKeySet apply(const TensorLocalState& state, c10::DispatchKeySet ks) {
  c10::DispatchKeySet included(c10::DispatchKeySet::RAW, state.included);
  c10::DispatchKeySet excluded(c10::DispatchKeySet::RAW, state.excluded);
  c10::DispatchKeySet result = (ks | included) - excluded;
  if (state.mask_python_keys) {
    result = result -
        c10::DispatchKeySet(
                 {c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot, c10::DispatchKey::PythonDispatcher});
  }
  return result;
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
    py::object dispatch_keys)
    : LeafGuard(std::move(parts), std::move(stack)), pytype_(std::move(pytype)) {
  if (!THPVariable_Check(value.ptr())) {
    throw py::type_error(std::string("TENSOR_MATCH needs a tensor, got ") + Py_TYPE(value.ptr())->tp_name);
  }
  if (!PyType_Check(pytype_.ptr())) {
    throw py::type_error("pytype must be a type");
  }
  // By MRO, as CPython lays instances out: no __subclasscheck__ is asked.
  pytype_is_tensor_ = THPVariableClass != nullptr &&
      PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(pytype_.ptr()), reinterpret_cast<PyTypeObject*>(THPVariableClass));
  if (!PyUnicode_Check(tensor_name.ptr())) {
    throw py::type_error("tensor_name must be a str");
  }
  tensor_name_ = tensor_name.cast<std::string>();
  const at::Tensor& t = THPVariable_Unpack(value.ptr());
  uint64_t raw_keys = dispatch_keys.attr("raw_repr")().cast<uint64_t>();
  dispatch_keys_ = apply(TensorLocalState::capture(), c10::DispatchKeySet(c10::DispatchKeySet::RAW, raw_keys)).raw_repr();
  dtype_ = static_cast<int8_t>(t.scalar_type());
  device_index_ = t.device().index();
  requires_grad_ = t.requires_grad();
  dim_ = t.dim();
  sizes_ = optional_ints(sizes, "sizes");
  strides_ = optional_ints(strides, "strides");
  if (static_cast<int64_t>(sizes_.size()) != dim_ || static_cast<int64_t>(strides_.size()) != dim_) {
    throw py::value_error("sizes and strides must have one entry per dimension of the tensor");
  }
  inline_static_ = dim_ <= kInlineRank;
  for (int64_t i = 0; i < dim_ && inline_static_; ++i) {
    inline_static_ = sizes_[i].has_value() && strides_[i].has_value();
    inline_sizes_[i] = sizes_[i].value_or(0);
    inline_strides_[i] = strides_[i].value_or(0);
  }
}

bool TENSOR_MATCH::check(PyObject* value) {
  TensorLocalState fresh;
  return matches(value, TensorLocalState::current(fresh));
}

bool TENSOR_MATCH::matches(PyObject* value, const TensorLocalState& state) const {
  if (reinterpret_cast<PyObject*>(Py_TYPE(value)) != pytype_.ptr() || (!pytype_is_tensor_ && !THPVariable_Check(value))) {
    return false;
  }
  const at::Tensor& t = THPVariable_Unpack(value);
  if (apply(state, t.key_set()).raw_repr() != dispatch_keys_ ||
      static_cast<int8_t>(t.scalar_type()) != dtype_ || t.device().index() != device_index_ ||
      t.requires_grad() != requires_grad_ || t.dim() != dim_) {
    return false;
  }
  if (inline_static_ && !t.unsafeGetTensorImpl()->has_symbolic_sizes_strides()) {
    c10::IntArrayRef sizes = t.sizes();
    c10::IntArrayRef strides = t.strides();
    for (int64_t i = 0; i < dim_; ++i) {
      if (sizes[i] != inline_sizes_[i] || strides[i] != inline_strides_[i]) {
        return false;
      }
    }
    return true;
  }
  c10::SymIntArrayRef sizes = t.sym_sizes();
  c10::SymIntArrayRef strides = t.sym_strides();
  for (int64_t i = 0; i < dim_; ++i) {
    if (sizes_[i].has_value()) {
      std::optional<int64_t> actual = sizes[i].maybe_as_int();
      if (!actual.has_value() || *actual != *sizes_[i]) {
        return false;
      }
    }
    if (strides_[i].has_value()) {
      std::optional<int64_t> actual = strides[i].maybe_as_int();
      if (!actual.has_value() || *actual != *strides_[i]) {
        return false;
      }
    }
  }
  return true;
}

void TENSOR_MATCH::record(MemoRecorder& recorder, PyObject* value) {
  // check() passed, so `value` is a tensor: its TensorImpl's address is
  // logged for prefetching only.
  c10::TensorImpl* impl = THPVariable_Unpack(value).unsafeGetTensorImpl();
  autograd_meta_hint_ = impl->autograd_meta();
  recorder.tensor(this, value, impl);
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
  c10::DispatchKeySet actual_keys = apply(*state, t.key_set());
  if (actual_keys.raw_repr() != dispatch_keys_) {
    out << "tensor '" << tensor_name_ << "' dispatch key set mismatch. expected "
        << c10::DispatchKeySet(c10::DispatchKeySet::RAW, dispatch_keys_) << ", actual " << actual_keys;
    return out.str();
  }
  if (static_cast<int8_t>(t.scalar_type()) != dtype_) {
    out << "tensor '" << tensor_name_ << "' dtype mismatch. expected " << static_cast<c10::ScalarType>(dtype_)
        << ", actual " << t.scalar_type();
    return out.str();
  }
  if (t.device().index() != device_index_) {
    out << "tensor '" << tensor_name_ << "' Tensor device index mismatch. Expected device index to be "
        << device_index_ << ", actual " << static_cast<int>(t.device().index());
    return out.str();
  }
  if (t.requires_grad() != requires_grad_) {
    out << "tensor '" << tensor_name_ << "' requires_grad mismatch. expected requires_grad=" << requires_grad_;
    return out.str();
  }
  if (t.dim() != dim_) {
    out << "tensor '" << tensor_name_ << "' rank mismatch. expected " << dim_ << ", actual " << t.dim();
    return out.str();
  }
  c10::SymIntArrayRef sizes = t.sym_sizes();
  c10::SymIntArrayRef strides = t.sym_strides();
  for (int64_t i = 0; i < dim_; ++i) {
    if (sizes_[i].has_value() && sizes[i].maybe_as_int() != sizes_[i]) {
      out << "tensor '" << tensor_name_ << "' size mismatch at index " << i << ". expected " << *sizes_[i]
          << ", actual " << sizes[i];
      return out.str();
    }
  }
  for (int64_t i = 0; i < dim_; ++i) {
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

}  // namespace dynamo_guards
