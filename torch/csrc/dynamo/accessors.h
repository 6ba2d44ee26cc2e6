// The accessors: how a child value is reached from its parent. Each class
// is named as torch names it, so one grep finds the C++ class, its Python
// binding and the builder method that creates it.
#pragma once

#include "torch/csrc/dynamo/argument_checks.h"
#include "torch/csrc/dynamo/attribute_resolution.h"
#include "torch/csrc/dynamo/guard_accessor.h"
#include "torch/csrc/dynamo/guard_manager.h"

namespace dynamo_guards {

// Supplies kind() and clone_with() for accessors whose whole state is the key.
template <typename Derived>
class KeyedAccessor : public GuardAccessor {
 public:
  using GuardAccessor::GuardAccessor;
  const char* kind() const override { return Derived::kKind; }
  std::unique_ptr<GuardAccessor> clone_with(std::unique_ptr<GuardManager> child) const override {
    return std::make_unique<Derived>(key_, std::move(child));
  }
};

#define DYNAMO_GUARDS_ACCESSOR(NAME)                        \
  class NAME : public KeyedAccessor<NAME> {                \
   public:                                                 \
    static constexpr const char* kKind = #NAME;            \
    NAME(py::object key, std::unique_ptr<GuardManager> c); \
    PyObject* access(PyObject* parent) override;           \
  }

// Accessors whose failure torch reports as a missing key or attribute.
#define DYNAMO_GUARDS_ACCESSOR_REPORTING(NAME, PREFIX)                                       \
  class NAME : public KeyedAccessor<NAME> {                                                 \
   public:                                                                                  \
    static constexpr const char* kKind = #NAME;                                             \
    NAME(py::object key, std::unique_ptr<GuardManager> c);                                  \
    PyObject* access(PyObject* parent) override;                                            \
    std::string access_failure() const override { return PREFIX + child_->source(); }      \
  }

// f_locals[name]; the root's value is the frame's locals dict.
DYNAMO_GUARDS_ACCESSOR_REPORTING(FrameLocalsGuardAccessor, "KeyError on ");
// The globals dict captured at build time (key); ignores the parent.
class GlobalsGuardAccessor : public KeyedAccessor<GlobalsGuardAccessor> {
 public:
  static constexpr const char* kKind = "GlobalsGuardAccessor";
  GlobalsGuardAccessor(py::object key, std::unique_ptr<GuardManager> c);
  PyObject* access(PyObject* parent) override;
  std::string repr() const override { return kKind; }
};
// dict.__getitem__ without calling an overridden __getitem__.
class DictGetItemGuardAccessor : public KeyedAccessor<DictGetItemGuardAccessor> {
 public:
  static constexpr const char* kKind = "DictGetItemGuardAccessor";
  DictGetItemGuardAccessor(py::object key, std::unique_ptr<GuardManager> c);
  PyObject* access(PyObject* parent) override;
  std::string access_failure() const override { return "KeyError on " + child_->source(); }
  // The item is pinned by the dict's version.
  bool record(MemoRecorder& recorder, PyObject* parent, PyObject* child) override {
    recorder.dict(parent);
    recorder.anchor(child);
    return true;
  }
};
// parent[key] through the full protocol.
DYNAMO_GUARDS_ACCESSOR_REPORTING(GetItemGuardAccessor, "KeyError on ");
DYNAMO_GUARDS_ACCESSOR(ListGetItemGuardAccessor);
class TupleGetItemGuardAccessor : public KeyedAccessor<TupleGetItemGuardAccessor> {
 public:
  static constexpr const char* kKind = "TupleGetItemGuardAccessor";
  TupleGetItemGuardAccessor(py::object key, std::unique_ptr<GuardManager> c);
  PyObject* access(PyObject* parent) override;
  // A tuple never changes: an anchored tuple pins its items.
  bool record(MemoRecorder& recorder, PyObject* parent, PyObject* child) override {
    if (!recorder.anchored(parent) || !PyTuple_CheckExact(parent)) {
      return false;
    }
    recorder.anchor(child);
    return true;
  }
};
// (idx, parent): the builder's IndexedSource.
DYNAMO_GUARDS_ACCESSOR(IndexedGuardAccessor);
DYNAMO_GUARDS_ACCESSOR(FuncDefaultsGuardAccessor);
DYNAMO_GUARDS_ACCESSOR(FuncKwDefaultsGuardAccessor);
DYNAMO_GUARDS_ACCESSOR(CodeGuardAccessor);
DYNAMO_GUARDS_ACCESSOR(ClosureGuardAccessor);
DYNAMO_GUARDS_ACCESSOR(TypeGuardAccessor);
DYNAMO_GUARDS_ACCESSOR(TypeDictGuardAccessor);
DYNAMO_GUARDS_ACCESSOR(TypeMROGuardAccessor);
DYNAMO_GUARDS_ACCESSOR(WeakRefCallGuardAccessor);
DYNAMO_GUARDS_ACCESSOR(CallFunctionNoArgsGuardAccessor);
DYNAMO_GUARDS_ACCESSOR(TupleIteratorGetItemAccessor);
DYNAMO_GUARDS_ACCESSOR(SetGetItemGuardAccessor);
// globals[name]() for a weakref stored in the globals dict.
DYNAMO_GUARDS_ACCESSOR(GlobalWeakRefGuardAccessor);
// key(parent) for a Python callable key.
DYNAMO_GUARDS_ACCESSOR(PythonLambdaGuardAccessor);
DYNAMO_GUARDS_ACCESSOR(GradGuardAccessor);
// The instance __dict__ (materialised if CPython keeps it lazily).
class GetGenericDictGuardAccessor : public KeyedAccessor<GetGenericDictGuardAccessor> {
 public:
  static constexpr const char* kKind = "GetGenericDictGuardAccessor";
  GetGenericDictGuardAccessor(py::object key, std::unique_ptr<GuardManager> c);
  PyObject* access(PyObject* parent) override;
  // The dict is pinned by the object's dict pointer and the dict's version.
  bool record(MemoRecorder& recorder, PyObject* parent, PyObject* child) override {
    recorder.object_dict(parent);
    return true;
  }
};
// object.__getattribute__(parent, name): skips a class's __getattr__.
// Supplies the memo hooks of the two getattr accessors: a read the instance
// __dict__ answered is pinned by the class tag and that dict.
template <typename Derived>
class InstanceAttrAccessor : public KeyedAccessor<Derived> {
 public:
  using KeyedAccessor<Derived>::KeyedAccessor;
  std::string access_failure() const override { return "getattr failed on source " + this->child_->source(); }
  bool record(MemoRecorder& recorder, PyObject* parent, PyObject* child) override {
    if (!instance_dict_answers(parent, this->key_.ptr(), child)) {
      return false;
    }
    recorder.type_tag(parent);
    recorder.object_dict(parent);
    recorder.anchor(child);
    return true;
  }
};

class GenericGetAttrGuardAccessor : public InstanceAttrAccessor<GenericGetAttrGuardAccessor> {
 public:
  static constexpr const char* kKind = "GenericGetAttrGuardAccessor";
  GenericGetAttrGuardAccessor(py::object key, std::unique_ptr<GuardManager> c);
  PyObject* access(PyObject* parent) override;
};
// getattr(parent, name).
class GetAttrGuardAccessor : public InstanceAttrAccessor<GetAttrGuardAccessor> {
 public:
  static constexpr const char* kKind = "GetAttrGuardAccessor";
  GetAttrGuardAccessor(py::object key, std::unique_ptr<GuardManager> c);
  PyObject* access(PyObject* parent) override;

  // The attributes of functions, cells and bound methods that Dynamo
  // guards (`fn.__defaults__`, `cell.cell_contents`, ...), read from the
  // object's own field when the parent is of that exact builtin type.
  // Sound because none of these types can be subclassed or given new
  // attributes, and each name is a data descriptor (getset or member) of
  // the type, which an instance __dict__ cannot shadow: getattr would
  // return that same field. Skipped: the "object.__getattr__" audit event
  // CPython raises for some of them, and generic attribute lookup.
  enum class BuiltinField : uint8_t {
    None,
    FunctionDefaults,
    FunctionKwDefaults,
    FunctionCode,
    FunctionClosure,
    FunctionGlobals,
    CellContents,
    MethodFunction,
    MethodSelf,
  };

 private:
  BuiltinField field_;
};
// tensor.size(i) / stride(i) / storage_offset(); ATen, in tensor_property_accessor.cpp.
DYNAMO_GUARDS_ACCESSOR(TensorSizeGuardAccessor);
DYNAMO_GUARDS_ACCESSOR(TensorStrideGuardAccessor);
DYNAMO_GUARDS_ACCESSOR(TensorStorageOffsetGuardAccessor);

#undef DYNAMO_GUARDS_ACCESSOR
#undef DYNAMO_GUARDS_ACCESSOR_REPORTING


}  // namespace dynamo_guards
