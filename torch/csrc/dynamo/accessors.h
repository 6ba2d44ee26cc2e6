// The accessors: how a child value is reached from its parent. Each class
// is named as torch names it, so one grep finds the C++ class, its Python
// binding and the builder method that creates it.
#pragma once

#include "torch/csrc/dynamo/argument_checks.h"
#include "torch/csrc/dynamo/attribute_resolution.h"
#include "torch/csrc/dynamo/guard_accessor.h"
#include "torch/csrc/dynamo/guard_manager.h"
#include "torch/csrc/dynamo/python_compat.h"

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

// Accessors whose repr() is not the default kind(repr(key)), as torch
// prints each of them.
#define DYNAMO_GUARDS_ACCESSOR_WITH_REPR(NAME)             \
  class NAME : public KeyedAccessor<NAME> {                \
   public:                                                 \
    static constexpr const char* kKind = #NAME;            \
    NAME(py::object key, std::unique_ptr<GuardManager> c); \
    PyObject* access(PyObject* parent) override;           \
    std::string repr() const override;                     \
  }

// f_locals[name]; the root's value is the frame's locals dict. torch's
// builder passes (name, index into the frame's localsplus); the engine reads
// by name and keeps the index for its repr (-1 when only a name was given).
class FrameLocalsGuardAccessor : public GuardAccessor {
 public:
  static constexpr const char* kKind = "FrameLocalsGuardAccessor";
  FrameLocalsGuardAccessor(py::object name, std::unique_ptr<GuardManager> c, Py_ssize_t framelocals_idx);
  PyObject* access(PyObject* parent) override;
  const char* kind() const override { return kKind; }
  std::string repr() const override;
  std::string access_failure() const override { return "KeyError on " + child_->source(); }
  std::unique_ptr<GuardAccessor> clone_with(std::unique_ptr<GuardManager> child) const override {
    return std::make_unique<FrameLocalsGuardAccessor>(key_, std::move(child), framelocals_idx_);
  }

 private:
  Py_ssize_t framelocals_idx_;
};
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
class GetItemGuardAccessor : public KeyedAccessor<GetItemGuardAccessor> {
 public:
  static constexpr const char* kKind = "GetItemGuardAccessor";
  GetItemGuardAccessor(py::object key, std::unique_ptr<GuardManager> c);
  PyObject* access(PyObject* parent) override;
  std::string repr() const override;
  std::string access_failure() const override { return "KeyError on " + child_->source(); }
  // On an exact tuple with a non-negative int key, the full protocol is
  // tuple's own item read (the class is tuple itself, which cannot be
  // changed), so the read is pinned as TupleGetItemGuardAccessor's is.
  bool record(MemoRecorder& recorder, PyObject* parent, PyObject* child) override;
  bool record_identity_read(MemoRecorder& recorder, PyObject* parent, PyObject* child) override;

 protected:
  Py_ssize_t held_tuple_index(PyObject* parent) const override;

 private:
  Py_ssize_t tuple_index_;  // the key as a tuple index; -1 unless it is an exact int >= 0
};
// list[i]: pinned by identity (MemoRecorder::list_item).
class ListGetItemGuardAccessor : public KeyedAccessor<ListGetItemGuardAccessor> {
 public:
  static constexpr const char* kKind = "ListGetItemGuardAccessor";
  ListGetItemGuardAccessor(py::object key, std::unique_ptr<GuardManager> c);
  PyObject* access(PyObject* parent) override;
  bool record(MemoRecorder& recorder, PyObject* parent, PyObject* child) override {
    return recorder.list_item(parent, PyLong_AsSsize_t(this->key_.ptr()), child);
  }
};
class TupleGetItemGuardAccessor : public KeyedAccessor<TupleGetItemGuardAccessor> {
 public:
  static constexpr const char* kKind = "TupleGetItemGuardAccessor";
  TupleGetItemGuardAccessor(py::object key, std::unique_ptr<GuardManager> c);
  PyObject* access(PyObject* parent) override;
  // A tuple never changes: an anchored tuple pins its items.
  bool record(MemoRecorder& recorder, PyObject* parent, PyObject* child) override;
  // The memo's own tuple (matched by address only) under a subtree that
  // decides by the item's address: a TupleItem step.
  bool record_identity_read(MemoRecorder& recorder, PyObject* parent, PyObject* child) override;

 protected:
  Py_ssize_t held_tuple_index(PyObject* parent) const override;

 private:
  Py_ssize_t index_;  // the key, checked to be an int at construction
};
// (idx, parent): the builder's IndexedSource.
DYNAMO_GUARDS_ACCESSOR_WITH_REPR(IndexedGuardAccessor);
// A field of a function, read as held (GuardAccessor::held_field) from an
// exact function; a bound method's function is not the parent's own field.
#define DYNAMO_GUARDS_FUNCTION_FIELD_ACCESSOR(NAME)                                  \
  class NAME : public KeyedAccessor<NAME> {                                         \
   public:                                                                          \
    static constexpr const char* kKind = #NAME;                                     \
    NAME(py::object key, std::unique_ptr<GuardManager> c);                          \
    PyObject* access(PyObject* parent) override;                                    \
                                                                                    \
   protected:                                                                       \
    PyObject* const* held_field(PyObject* parent) const override;                   \
  }
DYNAMO_GUARDS_FUNCTION_FIELD_ACCESSOR(FuncDefaultsGuardAccessor);
DYNAMO_GUARDS_FUNCTION_FIELD_ACCESSOR(FuncKwDefaultsGuardAccessor);
DYNAMO_GUARDS_FUNCTION_FIELD_ACCESSOR(ClosureGuardAccessor);
#undef DYNAMO_GUARDS_FUNCTION_FIELD_ACCESSOR
class CodeGuardAccessor : public KeyedAccessor<CodeGuardAccessor> {
 public:
  static constexpr const char* kKind = "CodeGuardAccessor";
  CodeGuardAccessor(py::object key, std::unique_ptr<GuardManager> c);
  PyObject* access(PyObject* parent) override;
  bool record_identity_read(MemoRecorder& recorder, PyObject* parent, PyObject* child) override;

 protected:
  PyObject* const* held_field(PyObject* parent) const override;
};
// type(parent): pinned by the type's tag or watch (MemoRecorder::type_of).
class TypeGuardAccessor : public KeyedAccessor<TypeGuardAccessor> {
 public:
  static constexpr const char* kKind = "TypeGuardAccessor";
  TypeGuardAccessor(py::object key, std::unique_ptr<GuardManager> c);
  PyObject* access(PyObject* parent) override;
  // A type without a valid tag (modified since its last lookup) is walked
  // rather than aborting the whole recording.
  bool record(MemoRecorder& recorder, PyObject* parent, PyObject* child) override {
    return type_version_tag(Py_TYPE(parent)) != 0 && recorder.type_of(parent);
  }
};
// A type's own dict: one object for the type's whole life (made when the
// type is readied, for a static builtin type once per interpreter, and
// cleared only when the type is torn down), so an anchored type pins which
// dict it is; what the dict holds is pinned by the dict steps below it.
class TypeDictGuardAccessor : public KeyedAccessor<TypeDictGuardAccessor> {
 public:
  static constexpr const char* kKind = "TypeDictGuardAccessor";
  TypeDictGuardAccessor(py::object key, std::unique_ptr<GuardManager> c);
  PyObject* access(PyObject* parent) override;
  bool record(MemoRecorder& recorder, PyObject* parent, PyObject* child) override {
    if (!recorder.anchored(parent) || !PyType_Check(parent)) {
      return false;
    }
    recorder.anchor(child);
    return true;
  }
};
// A type's __mro__ tuple is replaced only when the MRO is computed again
// (__bases__ assigned on the type or on a base), which modifies the type
// (PyType_Modified, for every subclass too): with the type's own tag pinned
// or the type watched, the tuple is the one recorded, and a tuple never
// changes.
class TypeMROGuardAccessor : public KeyedAccessor<TypeMROGuardAccessor> {
 public:
  static constexpr const char* kKind = "TypeMROGuardAccessor";
  TypeMROGuardAccessor(py::object key, std::unique_ptr<GuardManager> c);
  PyObject* access(PyObject* parent) override;
  bool record(MemoRecorder& recorder, PyObject* parent, PyObject* child) override {
    if (!recorder.anchored(parent) || !PyType_Check(parent) || !recorder.type_state_pinned(parent)) {
      return false;
    }
    recorder.anchor(child);
    return true;
  }
};
DYNAMO_GUARDS_ACCESSOR_WITH_REPR(WeakRefCallGuardAccessor);
DYNAMO_GUARDS_ACCESSOR_WITH_REPR(CallFunctionNoArgsGuardAccessor);
DYNAMO_GUARDS_ACCESSOR(TupleIteratorGetItemAccessor);
DYNAMO_GUARDS_ACCESSOR_WITH_REPR(SetGetItemGuardAccessor);
// globals[name]() for a weakref stored in the globals dict.
DYNAMO_GUARDS_ACCESSOR_WITH_REPR(GlobalWeakRefGuardAccessor);
// key(parent) for a Python callable key; a failure reports what it raised.
class PythonLambdaGuardAccessor : public KeyedAccessor<PythonLambdaGuardAccessor> {
 public:
  static constexpr const char* kKind = "PythonLambdaGuardAccessor";
  PythonLambdaGuardAccessor(py::object key, std::unique_ptr<GuardManager> c);
  PyObject* access(PyObject* parent) override;
  std::string repr() const override { return kKind; }
  bool reports_raised_error() const override { return true; }
};
DYNAMO_GUARDS_ACCESSOR_WITH_REPR(GradGuardAccessor);
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
// __dict__ answered is pinned by the class tag and that dict; a read a
// class attribute answered with a plain value (class_value_answers), by
// the class tag and the instance __dict__ lacking the name; `__class__`
// through object's getset (class_of_answers), as type(parent) is;
// `__dict__` through a Python class's getset (instance_dict_read_answers),
// by the class tag and the __dict__ slot; a class's
// own attribute (type_attribute_answers), by the metaclass's tag and the
// class's own state (MemoRecorder::type_state).
template <typename Derived>
class InstanceAttrAccessor : public KeyedAccessor<Derived> {
 public:
  using KeyedAccessor<Derived>::KeyedAccessor;
  std::string access_failure() const override { return "getattr failed on source " + this->child_->source(); }
  bool record(MemoRecorder& recorder, PyObject* parent, PyObject* child) override {
    PyObject* name = this->key_.ptr();
    if (instance_dict_answers(parent, name, child, Derived::kReadsGenerically)) {
      recorder.type_tag(parent);
      recorder.object_dict(parent);
    } else if (class_value_answers(parent, name, child, Derived::kReadsGenerically)) {
      recorder.type_tag(parent);
      if (_PyObject_GetDictPtr(parent) != nullptr) {
        recorder.object_dict(parent);
      }
    } else if (class_of_answers(parent, name, child, Derived::kReadsGenerically)) {
      return recorder.type_of(parent);  // anchors the class
    } else if (instance_dict_read_answers(parent, name, child, Derived::kReadsGenerically)) {
      recorder.type_tag(parent);
      recorder.object_dict(parent);  // anchors the dict
    } else if (!Derived::kReadsGenerically && type_attribute_answers(parent, name, child)) {
      if (!recorder.type_state(parent)) {
        return false;
      }
      recorder.type_tag(parent);  // the metaclass
    } else {
      return false;
    }
    recorder.anchor(child);
    return true;
  }
};

class GenericGetAttrGuardAccessor : public InstanceAttrAccessor<GenericGetAttrGuardAccessor> {
 public:
  static constexpr const char* kKind = "GenericGetAttrGuardAccessor";
  static constexpr bool kReadsGenerically = true;
  GenericGetAttrGuardAccessor(py::object key, std::unique_ptr<GuardManager> c);
  PyObject* access(PyObject* parent) override;
  std::string repr() const override;
};
// getattr(parent, name).
class GetAttrGuardAccessor : public InstanceAttrAccessor<GetAttrGuardAccessor> {
 public:
  static constexpr const char* kKind = "GetAttrGuardAccessor";
  static constexpr bool kReadsGenerically = false;
  GetAttrGuardAccessor(py::object key, std::unique_ptr<GuardManager> c);
  PyObject* access(PyObject* parent) override;
  std::string repr() const override;

  // The attributes of functions, cells, bound methods, classmethods and
  // properties that Dynamo guards (`fn.__defaults__`, `cell.cell_contents`,
  // `prop.fget`, ...), read from the object's own field when the parent is
  // of that exact builtin type (a subclass takes the generic lookup).
  // Sound because these types' attributes cannot be replaced (immutable
  // builtin types), and each name is a data descriptor (getset or member)
  // of the type, which an instance __dict__ cannot shadow: getattr would
  // return that same field. Skipped: the "object.__getattr__" audit event
  // CPython raises for some of them, and generic attribute lookup. The
  // same holds for `cls.__name__` and `cls.__qualname__` of a heap type
  // whose metaclass is exactly `type` (type's getsets return its ht_name
  // and ht_qualname fields; such a class's `__class__` cannot be
  // assigned), fields that only heap types have
  // (field_fixed_by_exact_type).
  enum class BuiltinField : uint8_t {
    None,
    FunctionDefaults,
    FunctionKwDefaults,
    FunctionCode,
    FunctionClosure,
    FunctionGlobals,
    Name,  // a function's, or a heap type's
    Qualname,  // likewise
    CellContents,
    MethodFunction,  // a bound method's, or a classmethod's
    MethodSelf,
    PropertyGetter,
    // A code object's `co_varnames`, `co_names`, `co_argcount`, ...: no
    // field to hold (3.11 builds `co_varnames` anew on every read), but a
    // code object is immutable, its type is neither subclassable nor
    // patchable and has no instance __dict__, so each of these reads
    // returns an equal value for the code object's whole life.
    CodeAttribute,
  };

  // An exact code object's attribute of the list above.
  bool reads_value_fixed_by(PyObject* parent) const override {
    return field_ == BuiltinField::CodeAttribute && PyCode_Check(parent);
  }

 protected:
  PyObject* const* held_field(PyObject* parent) const override;
  bool field_fixed_by_exact_type(PyObject* parent) const override { return !PyType_Check(parent); }

 private:
  BuiltinField field_;
};
// tensor.size(i) / stride(i) / storage_offset(); ATen, in tensor_property_accessor.cpp.
DYNAMO_GUARDS_ACCESSOR_WITH_REPR(TensorSizeGuardAccessor);
DYNAMO_GUARDS_ACCESSOR_WITH_REPR(TensorStrideGuardAccessor);
DYNAMO_GUARDS_ACCESSOR_WITH_REPR(TensorStorageOffsetGuardAccessor);

#undef DYNAMO_GUARDS_ACCESSOR
#undef DYNAMO_GUARDS_ACCESSOR_WITH_REPR


}  // namespace dynamo_guards
