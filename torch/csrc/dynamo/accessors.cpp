#include "torch/csrc/dynamo/accessors.h"

#include "torch/csrc/dynamo/function_code_match.h"
#include "torch/csrc/dynamo/py_ref.h"
#include "torch/csrc/dynamo/python_compat.h"

namespace dynamo_guards {

static void require_callable(const py::object& fn) {
  if (!PyCallable_Check(fn.ptr())) {
    throw py::type_error(std::string("expected a callable, got ") + Py_TYPE(fn.ptr())->tp_name);
  }
}

// Unwraps a bound method to its function, as `method.__defaults__` does.
static PyObject* as_function(PyObject* obj) {  // borrowed in, borrowed out
  if (PyMethod_Check(obj)) {
    obj = PyMethod_GET_FUNCTION(obj);
  }
  return PyFunction_Check(obj) ? obj : nullptr;
}

// The field `member` of `parent` when it is an exact function (whose
// layout fixes it); nullptr for anything else.
static PyObject* const* function_field(PyObject* parent, PyObject* PyFunctionObject::*member) {
  return PyFunction_Check(parent) ? &(reinterpret_cast<PyFunctionObject*>(parent)->*member) : nullptr;
}

static PyObject* new_ref_or_none(PyObject* borrowed) {
  return Py_NewRef(borrowed != nullptr ? borrowed : Py_None);
}

// str(key): torch prints these keys without quotes.
static std::string key_str(const py::object& key) {
  return py::str(key).cast<std::string>();
}

FrameLocalsGuardAccessor::FrameLocalsGuardAccessor(
    py::object name,
    std::unique_ptr<GuardManager> c,
    Py_ssize_t framelocals_idx)
    : GuardAccessor(interned_name(name, "frame local name"), std::move(c)), framelocals_idx_(framelocals_idx) {}
std::string FrameLocalsGuardAccessor::repr() const {
  return std::string(kKind) + "(key=" + py::repr(key_).cast<std::string>() +
      ", framelocals_idx=" + std::to_string(framelocals_idx_) + ")";
}
PyObject* FrameLocalsGuardAccessor::access(PyObject* parent) {
  if (!PyDict_Check(parent)) {
    return nullptr;
  }
  return Py_XNewRef(PyDict_GetItemWithError(parent, key_.ptr()));
}

GlobalsGuardAccessor::GlobalsGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {
  if (!PyDict_Check(key_.ptr())) {
    throw py::type_error("globals_dict_manager needs the frame's globals dict");
  }
}
PyObject* GlobalsGuardAccessor::access(PyObject* /*parent*/) {
  return Py_NewRef(key_.ptr());
}

DictGetItemGuardAccessor::DictGetItemGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {
  require_hashable(key_, "dict key");
}
PyObject* DictGetItemGuardAccessor::access(PyObject* parent) {
  if (!PyDict_Check(parent)) {
    return nullptr;
  }
  return Py_XNewRef(PyDict_GetItemWithError(parent, key_.ptr()));
}

// Item `index` of a tuple, read by a memoized subtree: an anchored exact
// tuple is the very tuple recorded and never changes, so the item is
// anchored with no step; on a tuple matched by address only (the memo's
// own value), a child subtree that decides by address alone is logged as a
// TupleItem step; anything else is walked.
// `index` when `parent` is an exact tuple holding an item there; else -1.
static Py_ssize_t exact_tuple_index(PyObject* parent, Py_ssize_t index) {
  return PyTuple_CheckExact(parent) && index >= 0 && index < PyTuple_GET_SIZE(parent) ? index : -1;
}

static bool record_tuple_item(MemoRecorder& recorder, PyObject* tuple, Py_ssize_t index, PyObject* child) {
  if (index < 0 || !PyTuple_CheckExact(tuple) || !recorder.anchored(tuple)) {
    return false;
  }
  recorder.anchor(child);
  return true;
}
static bool record_tuple_item_identity(
    MemoRecorder& recorder,
    PyObject* tuple,
    Py_ssize_t index,
    PyObject* child,
    const GuardManager& child_manager) {
  if (index < 0 || recorder.anchored(tuple) || !child_manager.decides_by_identity()) {
    return false;  // an anchored tuple anchors the item instead (record_tuple_item)
  }
  return recorder.tuple_item(tuple, index, child);
}

static Py_ssize_t non_negative_int(const py::object& key) {
  if (!PyLong_CheckExact(key.ptr())) {
    return -1;
  }
  Py_ssize_t i = PyLong_AsSsize_t(key.ptr());
  if (i == -1 && PyErr_Occurred()) {
    PyErr_Clear();  // too large for any tuple
  }
  return i < 0 ? -1 : i;
}

GetItemGuardAccessor::GetItemGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)), tuple_index_(non_negative_int(key_)) {}
PyObject* GetItemGuardAccessor::access(PyObject* parent) {
  return PyObject_GetItem(parent, key_.ptr());
}
std::string GetItemGuardAccessor::repr() const {
  return std::string(kKind) + "(" + key_str(key_) + ")";
}
bool GetItemGuardAccessor::record(MemoRecorder& recorder, PyObject* parent, PyObject* child) {
  return record_tuple_item(recorder, parent, tuple_index_, child);
}
bool GetItemGuardAccessor::record_identity_read(MemoRecorder& recorder, PyObject* parent, PyObject* child) {
  return record_tuple_item_identity(recorder, parent, tuple_index_, child, *child_);
}
Py_ssize_t GetItemGuardAccessor::held_tuple_index(PyObject* parent) const {
  return exact_tuple_index(parent, tuple_index_);
}

ListGetItemGuardAccessor::ListGetItemGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {
  index_key(key_, "list index");
}
PyObject* ListGetItemGuardAccessor::access(PyObject* parent) {
  Py_ssize_t i = PyLong_AsSsize_t(key_.ptr());
  if (!PyList_Check(parent) || i < 0 || i >= PyList_GET_SIZE(parent)) {
    return nullptr;
  }
  return Py_NewRef(PyList_GET_ITEM(parent, i));
}

TupleGetItemGuardAccessor::TupleGetItemGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {
  index_key(key_, "tuple index");
  index_ = PyLong_AsSsize_t(key_.ptr());
  if (index_ == -1 && PyErr_Occurred()) {
    PyErr_Clear();  // beyond Py_ssize_t: no tuple is that long, and -1 never matches
  }
}
PyObject* TupleGetItemGuardAccessor::access(PyObject* parent) {
  if (!PyTuple_Check(parent) || index_ < 0 || index_ >= PyTuple_GET_SIZE(parent)) {
    return nullptr;
  }
  return Py_NewRef(PyTuple_GET_ITEM(parent, index_));
}
bool TupleGetItemGuardAccessor::record(MemoRecorder& recorder, PyObject* parent, PyObject* child) {
  return record_tuple_item(recorder, parent, index_, child);
}
bool TupleGetItemGuardAccessor::record_identity_read(MemoRecorder& recorder, PyObject* parent, PyObject* child) {
  return record_tuple_item_identity(recorder, parent, index_, child, *child_);
}
Py_ssize_t TupleGetItemGuardAccessor::held_tuple_index(PyObject* parent) const {
  return exact_tuple_index(parent, index_);
}

IndexedGuardAccessor::IndexedGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {}
PyObject* IndexedGuardAccessor::access(PyObject* parent) {
  return PyTuple_Pack(2, key_.ptr(), parent);
}
std::string IndexedGuardAccessor::repr() const {
  // torch 2.13 spells it so.
  return "IndexedGuardAccesor(" + key_str(key_) + ")";
}

FuncDefaultsGuardAccessor::FuncDefaultsGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {}
PyObject* FuncDefaultsGuardAccessor::access(PyObject* parent) {
  PyObject* fn = as_function(parent);
  return fn == nullptr ? nullptr : new_ref_or_none(PyFunction_GET_DEFAULTS(fn));
}
PyObject* const* FuncDefaultsGuardAccessor::held_field(PyObject* parent) const {
  return function_field(parent, &PyFunctionObject::func_defaults);
}

FuncKwDefaultsGuardAccessor::FuncKwDefaultsGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {}
PyObject* FuncKwDefaultsGuardAccessor::access(PyObject* parent) {
  PyObject* fn = as_function(parent);
  return fn == nullptr ? nullptr : new_ref_or_none(PyFunction_GET_KW_DEFAULTS(fn));
}
PyObject* const* FuncKwDefaultsGuardAccessor::held_field(PyObject* parent) const {
  return function_field(parent, &PyFunctionObject::func_kwdefaults);
}

CodeGuardAccessor::CodeGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {}
PyObject* CodeGuardAccessor::access(PyObject* parent) {
  PyObject* fn = as_function(parent);
  return fn == nullptr ? nullptr : Py_NewRef(PyFunction_GET_CODE(fn));
}

// A function's code is its func_code field, which `f.__code__ = c` replaces
// in place; an exact function (a builtin type, which refuses __class__
// assignment) has that field at one offset. Once the log has validated the
// function, comparing the field with the code object's address is what a
// subtree that decides by address alone (an ID_MATCH on the code) decides:
// the field holds a reference, so the object at that address is alive, and
// the walk would compare the same address. A bound method's function is
// not the parent's own field: that read is walked.
bool CodeGuardAccessor::record_identity_read(MemoRecorder& recorder, PyObject* parent, PyObject* child) {
  if (!PyFunction_Check(parent) || !child_->decides_by_identity()) {
    return false;
  }
  return recorder.field_identity(parent, &reinterpret_cast<PyFunctionObject*>(parent)->func_code, child);
}
PyObject* const* CodeGuardAccessor::held_field(PyObject* parent) const {
  return function_field(parent, &PyFunctionObject::func_code);
}

ClosureGuardAccessor::ClosureGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {}
PyObject* ClosureGuardAccessor::access(PyObject* parent) {
  PyObject* fn = as_function(parent);
  return fn == nullptr ? nullptr : new_ref_or_none(PyFunction_GET_CLOSURE(fn));
}
PyObject* const* ClosureGuardAccessor::held_field(PyObject* parent) const {
  return function_field(parent, &PyFunctionObject::func_closure);
}

TypeGuardAccessor::TypeGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {}
PyObject* TypeGuardAccessor::access(PyObject* parent) {
  return Py_NewRef(reinterpret_cast<PyObject*>(Py_TYPE(parent)));
}

TypeDictGuardAccessor::TypeDictGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {}
PyObject* TypeDictGuardAccessor::access(PyObject* parent) {
  if (!PyType_Check(parent)) {
    return nullptr;
  }
  return Py_XNewRef(type_dict(reinterpret_cast<PyTypeObject*>(parent)));
}

TypeMROGuardAccessor::TypeMROGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {}
PyObject* TypeMROGuardAccessor::access(PyObject* parent) {
  if (!PyType_Check(parent)) {
    return nullptr;
  }
  return Py_XNewRef(reinterpret_cast<PyTypeObject*>(parent)->tp_mro);
}

WeakRefCallGuardAccessor::WeakRefCallGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {}
PyObject* WeakRefCallGuardAccessor::access(PyObject* parent) {
  if (!PyWeakref_Check(parent)) {
    return nullptr;
  }
  return Py_NewRef(weakref_referent(parent));  // None once the referent died
}
std::string WeakRefCallGuardAccessor::repr() const {
  return std::string(kKind) + "()";
}

CallFunctionNoArgsGuardAccessor::CallFunctionNoArgsGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {}
PyObject* CallFunctionNoArgsGuardAccessor::access(PyObject* parent) {
  return PyObject_CallNoArgs(parent);
}
std::string CallFunctionNoArgsGuardAccessor::repr() const {
  return std::string(kKind) + "()";
}

TupleIteratorGetItemAccessor::TupleIteratorGetItemAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {
  index_key(key_, "tuple iterator index");
}
PyObject* TupleIteratorGetItemAccessor::access(PyObject* parent) {
  // it.__reduce__() == (iter, (the_tuple,), position) for a live iterator.
  OwnedRef reduced(PyObject_CallMethod(parent, "__reduce__", nullptr));
  if (!reduced || !PyTuple_Check(reduced.get()) || PyTuple_GET_SIZE(reduced.get()) != 3) {
    return nullptr;
  }
  PyObject* args = PyTuple_GET_ITEM(reduced.get(), 1);
  PyObject* position = PyTuple_GET_ITEM(reduced.get(), 2);
  if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) != 1 || !PyTuple_Check(PyTuple_GET_ITEM(args, 0)) ||
      !PyLong_Check(position)) {
    return nullptr;
  }
  PyObject* seq = PyTuple_GET_ITEM(args, 0);
  Py_ssize_t i = PyLong_AsSsize_t(position) + PyLong_AsSsize_t(key_.ptr());
  if (i < 0 || i >= PyTuple_GET_SIZE(seq)) {
    return nullptr;
  }
  return Py_NewRef(PyTuple_GET_ITEM(seq, i));
}

SetGetItemGuardAccessor::SetGetItemGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {
  index_key(key_, "set index");
}
PyObject* SetGetItemGuardAccessor::access(PyObject* parent) {
  if (!PyAnySet_Check(parent)) {
    return nullptr;
  }
  Py_ssize_t wanted = PyLong_AsSsize_t(key_.ptr());
  OwnedRef it(PyObject_GetIter(parent));
  if (!it) {
    return nullptr;
  }
  for (Py_ssize_t i = 0;; ++i) {
    OwnedRef item(PyIter_Next(it.get()));
    if (!item) {
      return nullptr;
    }
    if (i == wanted) {
      return Py_NewRef(item.get());
    }
  }
}
std::string SetGetItemGuardAccessor::repr() const {
  return std::string(kKind) + "(index=" + key_str(key_) + ")";
}

GlobalWeakRefGuardAccessor::GlobalWeakRefGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(interned_name(key, "global name"), std::move(c)) {}
PyObject* GlobalWeakRefGuardAccessor::access(PyObject* parent) {
  if (!PyDict_Check(parent)) {
    return nullptr;
  }
  PyObject* ref = PyDict_GetItemWithError(parent, key_.ptr());  // borrowed
  if (ref == nullptr || !PyWeakref_Check(ref)) {
    return nullptr;
  }
  return Py_NewRef(weakref_referent(ref));
}
std::string GlobalWeakRefGuardAccessor::repr() const {
  return std::string(kKind) + "(" + key_str(key_) + ")";
}

PythonLambdaGuardAccessor::PythonLambdaGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {
  require_callable(key_);
}
PyObject* PythonLambdaGuardAccessor::access(PyObject* parent) {
  return PyObject_CallOneArg(key_.ptr(), parent);
}

GradGuardAccessor::GradGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {}
PyObject* GradGuardAccessor::access(PyObject* parent) {
  static PyObject* grad = PyUnicode_InternFromString("grad");
  return PyObject_GetAttr(parent, grad);
}
std::string GradGuardAccessor::repr() const {
  return std::string(kKind) + "(grad)";
}

GetGenericDictGuardAccessor::GetGenericDictGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : KeyedAccessor(std::move(key), std::move(c)) {}
PyObject* GetGenericDictGuardAccessor::access(PyObject* parent) {
  PyObject** dictptr = _PyObject_GetDictPtr(parent);
  if (dictptr == nullptr) {
    return nullptr;
  }
  if (*dictptr == nullptr) {
    return PyObject_GenericGetDict(parent, nullptr);
  }
  return Py_NewRef(*dictptr);
}

GenericGetAttrGuardAccessor::GenericGetAttrGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : InstanceAttrAccessor(interned_name(key, "attr"), std::move(c)) {}
PyObject* GenericGetAttrGuardAccessor::access(PyObject* parent) {
  return PyObject_GenericGetAttr(parent, key_.ptr());
}
std::string GenericGetAttrGuardAccessor::repr() const {
  return std::string(kKind) + "(" + key_str(key_) + ")";
}

// A name field of a heap type whose metaclass is exactly `type`; nullptr
// for anything else.
static PyObject* const* heap_type_field(PyObject* parent, PyObject* PyHeapTypeObject::*member) {
  if (!Py_IS_TYPE(parent, &PyType_Type) || !PyType_HasFeature(reinterpret_cast<PyTypeObject*>(parent), Py_TPFLAGS_HEAPTYPE)) {
    return nullptr;
  }
  return &(reinterpret_cast<PyHeapTypeObject*>(parent)->*member);
}

// The slot of an exact classmethod or property (`type`) that holds the
// function it calls (function_code_match.h); nullptr for anything else.
static PyObject* const* wrapped_function_slot(PyObject* parent, PyTypeObject* type) {
  if (!Py_IS_TYPE(parent, type)) {
    return nullptr;
  }
  const Py_ssize_t offset = wrapped_function_offset(parent);
  return offset < 0 ? nullptr : reinterpret_cast<PyObject* const*>(reinterpret_cast<char*>(parent) + offset);
}

static GetAttrGuardAccessor::BuiltinField builtin_field(PyObject* name) {
  using Field = GetAttrGuardAccessor::BuiltinField;
  static const std::pair<const char*, Field> kFields[] = {
      {"__defaults__", Field::FunctionDefaults},
      {"__kwdefaults__", Field::FunctionKwDefaults},
      {"__code__", Field::FunctionCode},
      {"__closure__", Field::FunctionClosure},
      {"__globals__", Field::FunctionGlobals},
      {"__name__", Field::Name},
      {"__qualname__", Field::Qualname},
      {"cell_contents", Field::CellContents},
      {"__func__", Field::MethodFunction},
      {"__self__", Field::MethodSelf},
      {"fget", Field::PropertyGetter},
      {"co_varnames", Field::CodeAttribute},
      {"co_cellvars", Field::CodeAttribute},
      {"co_freevars", Field::CodeAttribute},
      {"co_names", Field::CodeAttribute},
      {"co_argcount", Field::CodeAttribute},
      {"co_posonlyargcount", Field::CodeAttribute},
      {"co_kwonlyargcount", Field::CodeAttribute},
      {"co_nlocals", Field::CodeAttribute},
      {"co_flags", Field::CodeAttribute},
      {"co_name", Field::CodeAttribute},
      {"co_qualname", Field::CodeAttribute},
      {"co_filename", Field::CodeAttribute},
      {"co_firstlineno", Field::CodeAttribute},
  };
  for (const auto& [attr, field] : kFields) {
    if (PyUnicode_CompareWithASCIIString(name, attr) == 0) {
      return field;
    }
  }
  return Field::None;
}

GetAttrGuardAccessor::GetAttrGuardAccessor(py::object key, std::unique_ptr<GuardManager> c)
    : InstanceAttrAccessor(interned_name(key, "attr"), std::move(c)), field_(builtin_field(key_.ptr())) {}

PyObject* GetAttrGuardAccessor::access(PyObject* parent) {
  // A builtin field is read where held_field finds it. An empty one (a
  // function without defaults, an empty cell, a property without a getter)
  // reads as None or raises, as its descriptor says: the generic lookup
  // answers that, as it answers every other attribute and type.
  if (field_ != BuiltinField::None) {
    if (PyObject* const* slot = GetAttrGuardAccessor::held_field(parent); slot != nullptr && *slot != nullptr) {
      return Py_NewRef(*slot);
    }
  }
  return PyObject_GetAttr(parent, key_.ptr());
}

PyObject* const* GetAttrGuardAccessor::held_field(PyObject* parent) const {
  // The one table of which field each attribute reads on which exact type;
  // access() reads through it.
  switch (field_) {
    case BuiltinField::FunctionDefaults:
      return function_field(parent, &PyFunctionObject::func_defaults);
    case BuiltinField::FunctionKwDefaults:
      return function_field(parent, &PyFunctionObject::func_kwdefaults);
    case BuiltinField::FunctionCode:
      return function_field(parent, &PyFunctionObject::func_code);
    case BuiltinField::FunctionClosure:
      return function_field(parent, &PyFunctionObject::func_closure);
    case BuiltinField::FunctionGlobals:
      return function_field(parent, &PyFunctionObject::func_globals);
    case BuiltinField::Name:
      if (PyObject* const* slot = heap_type_field(parent, &PyHeapTypeObject::ht_name)) {
        return slot;
      }
      return function_field(parent, &PyFunctionObject::func_name);
    case BuiltinField::Qualname:
      if (PyObject* const* slot = heap_type_field(parent, &PyHeapTypeObject::ht_qualname)) {
        return slot;
      }
      return function_field(parent, &PyFunctionObject::func_qualname);
    default:
      break;
  }
  if (field_ == BuiltinField::CellContents && Py_IS_TYPE(parent, &PyCell_Type)) {
    return &reinterpret_cast<PyCellObject*>(parent)->ob_ref;
  }
  if (Py_IS_TYPE(parent, &PyMethod_Type)) {
    auto* method = reinterpret_cast<PyMethodObject*>(parent);
    if (field_ == BuiltinField::MethodFunction) {
      return &method->im_func;
    }
    if (field_ == BuiltinField::MethodSelf) {
      return &method->im_self;
    }
  }
  if (field_ == BuiltinField::MethodFunction) {
    return wrapped_function_slot(parent, &PyClassMethod_Type);
  }
  if (field_ == BuiltinField::PropertyGetter) {
    return wrapped_function_slot(parent, &PyProperty_Type);
  }
  return nullptr;
}

std::string GetAttrGuardAccessor::repr() const {
  return std::string(kKind) + "(" + key_str(key_) + ")";
}

}  // namespace dynamo_guards
