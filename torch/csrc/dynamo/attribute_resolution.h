// Where Python's attribute lookup finds `obj.name`, decided per type and
// remembered while the type is unchanged.
//
// object.__getattribute__ looks in the MRO's class dicts first: a data
// descriptor there wins; else the instance __dict__; else the class
// attribute; else type(obj).__getattr__ (nn.Module's reads _parameters, then
// _buffers, then _modules from the instance __dict__). Which of these steps
// can apply is a property of the type alone, so it is computed once per type
// and cached with the type's version tag.
//
// Soundness of the cache: CPython invalidates a type's version tag whenever
// the type or any of its bases is modified (attribute set or deleted,
// __bases__ assigned, a slot updated), and hands out a fresh tag, never
// reused, on the next lookup (type_version_tag in python_compat.h says how
// each release marks a valid tag). A cached plan is used only while the
// object's type is the cached type AND that type still carries the cached,
// valid tag; anything else recomputes the plan. Types whose tag cannot be
// assigned are planned on every use.
#pragma once

#include <Python.h>

#include <string>

#include "torch/csrc/dynamo/python_compat.h"

namespace dynamo_guards {

enum class AttrPath : unsigned char {
  // No class attribute of that name; generic __getattribute__; nn.Module's
  // __getattr__: instance __dict__, then _parameters, _buffers, _modules.
  ModuleDicts,
  // No class attribute; generic __getattribute__; no __getattr__: the
  // instance __dict__ alone decides (hasattr == membership).
  InstanceDictOnly,
  // A non-data class attribute (method, plain value): instance __dict__,
  // else the class attribute through its __get__.
  InstanceDictThenClass,
  // A data descriptor on the class, a custom __getattribute__ or
  // __getattr__, or a type whose getattr slot is not Python's: the full
  // getattr protocol, every time.
  GetAttr,
};

struct AttrPlan {
  AttrPath path = AttrPath::GetAttr;
  // Why, in the user's terms; cold (printing only).
  std::string reason;
};

// Decides the path for `name` (an interned str) on instances of `type`.
// Never raises; a lookup error yields GetAttr.
AttrPlan plan_attribute(PyTypeObject* type, PyObject* name);

// The plan for one attribute name, cached per (type, version tag).
class CachedAttrPlan {
 public:
  // `type` is borrowed and compared by identity only.
  const AttrPlan& get(PyTypeObject* type, PyObject* name) {
    if (type == type_ && tag_ != 0 && type_version_tag(type) == tag_) {
      return plan_;
    }
    return refresh(type, name);
  }

 private:
  const AttrPlan& refresh(PyTypeObject* type, PyObject* name);

  PyTypeObject* type_ = nullptr;  // identity only; may dangle, never dereferenced
  unsigned int tag_ = 0;          // 0: nothing cached
  AttrPlan plan_;
};

// The instance __dict__ of `obj` (borrowed), or nullptr when its type has
// none. Like `obj.__dict__`, this may create the dict CPython keeps lazily.
PyObject* instance_dict(PyObject* obj);

// getattr(obj, name) along `plan`: a new reference, or nullptr with
// AttributeError (or another error) set, exactly as Python's lookup.
PyObject* read_attribute(PyObject* obj, PyObject* name, const AttrPlan& plan);

// hasattr(obj, name) along `plan`: 1, 0, or -1 with an error set.
int has_attribute(PyObject* obj, PyObject* name, const AttrPlan& plan);

// The interned names `__getattribute__` and `__getattr__` (borrowed; they
// live as long as the engine).
PyObject* getattribute_name();
PyObject* getattr_name();

// True when `obj.name` is `value` because the instance __dict__ answered:
// the getattr slot is the generic one (or a module's, or a Python class's
// whose __getattribute__ is object's), no data descriptor for `name` is on
// the class, and the instance __dict__ holds exactly `value`. Such a read is
// pinned by the class's version tag and the __dict__'s contents. With
// `generic_read` (the read is `object.__getattribute__(obj, name)` itself,
// whatever the class's own slot) the slot is not consulted.
bool instance_dict_answers(PyObject* obj, PyObject* name, PyObject* value, bool generic_read = false);

// True when `obj.name` is `value` because the class answered with a plain
// value: the lookup is the generic one (as for instance_dict_answers), the
// MRO's first class attribute `name` is `value` itself, `value`'s type is
// immutable and defines no __get__ (so the lookup returns it unbound, and
// no later change can make it a descriptor), and the instance __dict__, if
// the object has one, lacks `name`. Such a read is pinned by the class's
// version tag (which pins every class dict along the MRO, hence the value)
// and the instance __dict__'s contents.
bool class_value_answers(PyObject* obj, PyObject* name, PyObject* value, bool generic_read = false);

// True when `obj.name` is `obj.__class__` answered by object's own getset,
// which returns type(obj): `name` is "__class__", `value` is type(obj), the
// lookup reaches the class's data descriptors first (object's
// __getattribute__, with or without a __getattr__ after it; always with
// `generic_read`) and the MRO's first `__class__` is object's. All of that
// is decided by type(obj)'s state: such a read is pinned as type(obj) is
// (MemoRecorder::type_of).
bool class_of_answers(PyObject* obj, PyObject* name, PyObject* value, bool generic_read = false);

// True when `obj.__dict__` is `value`, the dict in obj's __dict__ slot,
// returned by the `__dict__` getset CPython gives Python classes: the
// lookup is the generic one (as for instance_dict_answers), whose first
// step calls that data descriptor, found first along the MRO. Such a read
// is pinned by the class's version tag (which pins the MRO's `__dict__`
// and the getattr slot) and by the object's __dict__ slot still holding
// `value` (MemoRecorder::object_dict).
bool instance_dict_read_answers(PyObject* obj, PyObject* name, PyObject* value, bool generic_read);

// True when `cls.name` is `value` by type's own lookup on the class `cls`:
// the metaclass's getattr slot is type's (or runs type's __getattribute__
// before a __getattr__), it has no data descriptor `name`,
// and the first `name` along cls's MRO is `value` itself, returned unbound:
// a function (whose __get__ without an instance returns it) or an object
// whose type has no __get__ and is immutable or `cls` itself. Sound while
// the metaclass's tag (its data descriptors, its getattr slot) and cls's
// own state (its MRO's dicts, its __get__) are pinned; `value` is then held
// by cls. (A heap type's `__name__` and `__qualname__`, which the
// metaclass's descriptors answer, are fields: GetAttrGuardAccessor.)
bool type_attribute_answers(PyObject* cls, PyObject* name, PyObject* value);

// Whether Python's lookup of `name` on instances of `type` consults the
// instance __dict__ before any class attribute: the generic lookup (the
// getattr slot is object's, or a Python class's whose __getattribute__ is
// object's: a __getattr__ only runs after the dict missed) and no data
// descriptor `name` on the class.
bool instance_dict_precedes_class(PyTypeObject* type, PyObject* name);

// Which step of the lookup answers `obj.name` for a ModuleDicts plan. For
// any other plan the answer is Elsewhere (instance __dict__, class, getattr).
enum class ModuleDictSlot : unsigned char { Parameters, Buffers, Modules, InstanceDict, Missing, Elsewhere, Error };
ModuleDictSlot locate_in_module_dicts(PyObject* obj, PyObject* name, const AttrPlan& plan);
// Whether the instance __dict__ is a dict and _parameters, _buffers and
// _modules (those present) are plain dicts, so that nn.Module.__getattr__'s
// reads are those dicts' own storage.
bool module_dicts_are_exact(PyObject* module);

// "_parameters" -> Parameters etc.; throws std::invalid_argument otherwise.
ModuleDictSlot module_dict_slot_from_name(const std::string& key);

}  // namespace dynamo_guards
