// tensor.size(i), tensor.stride(i), tensor.storage_offset() as Python ints:
// the values the symbolic shape guards relate.
#include <torch/csrc/autograd/python_variable.h>

#include "torch/csrc/dynamo/accessors.h"

namespace dynamo_guards {

namespace {

PyObject* int_or_fail(const c10::SymInt& v) {
  std::optional<int64_t> concrete = v.maybe_as_int();
  return concrete.has_value() ? PyLong_FromLongLong(*concrete) : nullptr;
}

bool in_range(Py_ssize_t i, int64_t dim) {
  return i >= 0 && i < dim;
}

// torch prints the three tensor property accessors as one template class.
std::string tensor_property_repr(const char* property, const py::object& index) {
  std::string shown = index.is_none() ? "-1" : py::str(index).cast<std::string>();
  return std::string("TensorPropertyGuardAccessor<TensorProperty::") + property + ">(" + shown + ")";
}

}  // namespace

TensorSizeGuardAccessor::TensorSizeGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {
  index_key(key_, "size index");
}
PyObject* TensorSizeGuardAccessor::access(PyObject* parent) {
  if (!THPVariable_Check(parent)) {
    return nullptr;
  }
  const at::Tensor& t = THPVariable_Unpack(parent);
  Py_ssize_t i = PyLong_AsSsize_t(key_.ptr());
  return in_range(i, t.dim()) ? int_or_fail(t.sym_sizes()[i]) : nullptr;
}
std::string TensorSizeGuardAccessor::repr() const {
  return tensor_property_repr("SIZE", key_);
}

TensorStrideGuardAccessor::TensorStrideGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {
  index_key(key_, "stride index");
}
PyObject* TensorStrideGuardAccessor::access(PyObject* parent) {
  if (!THPVariable_Check(parent)) {
    return nullptr;
  }
  const at::Tensor& t = THPVariable_Unpack(parent);
  Py_ssize_t i = PyLong_AsSsize_t(key_.ptr());
  return in_range(i, t.dim()) ? int_or_fail(t.sym_strides()[i]) : nullptr;
}
std::string TensorStrideGuardAccessor::repr() const {
  return tensor_property_repr("STRIDE", key_);
}

TensorStorageOffsetGuardAccessor::TensorStorageOffsetGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {}
PyObject* TensorStorageOffsetGuardAccessor::access(PyObject* parent) {
  if (!THPVariable_Check(parent)) {
    return nullptr;
  }
  return int_or_fail(THPVariable_Unpack(parent).sym_storage_offset());
}
std::string TensorStorageOffsetGuardAccessor::repr() const {
  return tensor_property_repr("STORAGE_OFFSET", key_);
}

}  // namespace dynamo_guards
