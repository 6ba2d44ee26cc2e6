#include "torch/csrc/dynamo/attribute_resolution.h"

#include <array>
#include <stdexcept>

#include "torch/csrc/dynamo/python_compat.h"

namespace dynamo_guards {

namespace {

struct ModuleFacts {
  PyObject* module_getattr = nullptr;     // nn.Module.__getattr__ (strong)
  getattrofunc module_getattro = nullptr;  // the getattr slot of classes defining __getattr__
  PyObject* object_getattribute = nullptr;  // object.__getattribute__ (borrowed from object's dict)
  PyObject* object_class = nullptr;  // object.__class__, a getset (borrowed from object's dict)
  PyObject* type_getattribute = nullptr;  // type.__getattribute__ (borrowed from type's dict)
  getter instance_dict_getter = nullptr;  // what the `__dict__` getset of Python classes' instances runs
  PyObject* getattr_name = nullptr;
  PyObject* getattribute_name = nullptr;
  PyObject* class_name = nullptr;  // "__class__"
  PyObject* dict_name = nullptr;   // "__dict__"
};

// The getter of the `__dict__` getset CPython gives every Python class that
// adds an instance __dict__ (one C function, shared by all of them), read
// from a class made for the purpose; nullptr if none could be made.
getter python_class_dict_getter(PyObject* dict_name) {
  PyObject* probe = PyObject_CallFunction(reinterpret_cast<PyObject*>(&PyType_Type), "s(){}", "DictProbe");  // new
  if (probe == nullptr) {
    return nullptr;
  }
  getter get = nullptr;
  PyObject* descr = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(probe), dict_name);  // borrowed
  if (descr != nullptr && Py_IS_TYPE(descr, &PyGetSetDescr_Type)) {
    get = reinterpret_cast<PyGetSetDescrObject*>(descr)->d_getset->get;
  }
  Py_DECREF(probe);
  return get;
}

// Read once; torch.nn.Module and object live for the whole process.
const ModuleFacts& module_facts() {
  static ModuleFacts facts = [] {
    ModuleFacts f;
    f.getattr_name = PyUnicode_InternFromString("__getattr__");
    f.getattribute_name = PyUnicode_InternFromString("__getattribute__");
    f.object_getattribute = PyDict_GetItemWithError(type_dict(&PyBaseObject_Type), f.getattribute_name);
    f.class_name = PyUnicode_InternFromString("__class__");
    f.object_class = PyDict_GetItemWithError(type_dict(&PyBaseObject_Type), f.class_name);
    f.type_getattribute = PyDict_GetItemWithError(type_dict(&PyType_Type), f.getattribute_name);
    f.dict_name = PyUnicode_InternFromString("__dict__");
    f.instance_dict_getter = python_class_dict_getter(f.dict_name);
    PyObject* nn = PyImport_ImportModule("torch.nn");
    PyObject* module_type = nn != nullptr ? PyObject_GetAttrString(nn, "Module") : nullptr;
    if (module_type != nullptr && PyType_Check(module_type)) {
      auto* t = reinterpret_cast<PyTypeObject*>(module_type);
      f.module_getattro = t->tp_getattro;
      f.module_getattr = PyDict_GetItemWithError(type_dict(t), f.getattr_name);
      Py_XINCREF(f.module_getattr);
    }
    Py_XDECREF(module_type);
    Py_XDECREF(nn);
    PyErr_Clear();
    return f;
  }();
  return facts;
}

}  // namespace

PyObject* getattribute_name() { return module_facts().getattribute_name; }
PyObject* getattr_name() { return module_facts().getattr_name; }

namespace {

// The class in type's MRO whose __dict__ defines `name` (for reasons).
std::string defining_class(PyTypeObject* type, PyObject* name) {
  PyObject* mro = type->tp_mro;
  if (mro != nullptr && PyTuple_Check(mro)) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i) {
      auto* base = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, i));
      PyObject* base_dict = type_dict(base);
      if (base_dict != nullptr && PyDict_GetItemWithError(base_dict, name) != nullptr) {
        return base->tp_name;
      }
      PyErr_Clear();
    }
  }
  return type->tp_name;
}

std::string describe(PyObject* descr) {
  if (PyObject_TypeCheck(descr, &PyProperty_Type)) {
    return "property";
  }
  return std::string("data descriptor ") + Py_TYPE(descr)->tp_name;
}

AttrPlan classify_class_attribute(PyTypeObject* type, PyObject* name, AttrPath when_absent) {
  PyObject* found = _PyType_Lookup(type, name);  // borrowed; never sets an error
  if (found == nullptr) {
    return {when_absent, when_absent == AttrPath::ModuleDicts ? "nn.Module dicts" : "instance __dict__"};
  }
  if (Py_TYPE(found)->tp_descr_set != nullptr) {
    return {AttrPath::GetAttr, describe(found) + " on class " + defining_class(type, name)};
  }
  return {AttrPath::InstanceDictThenClass, "class attribute on " + defining_class(type, name)};
}

// nn.Module.__getattr__'s search order.
const std::array<PyObject*, 3>& module_dict_keys() {
  static const std::array<PyObject*, 3> keys = {
      PyUnicode_InternFromString("_parameters"),
      PyUnicode_InternFromString("_buffers"),
      PyUnicode_InternFromString("_modules"),
  };
  return keys;
}

PyObject* set_attribute_error(PyObject* name) {
  PyErr_SetObject(PyExc_AttributeError, name);
  return nullptr;
}

// The value for `name` in dict `d` (borrowed), nullptr if absent; -1 in
// *error on a lookup error.
PyObject* dict_lookup(PyObject* d, PyObject* name, int* error) {
  PyObject* v = PyDict_GetItemWithError(d, name);
  if (v == nullptr && PyErr_Occurred()) {
    *error = -1;
  }
  return v;
}

}  // namespace

AttrPlan plan_attribute(PyTypeObject* type, PyObject* name) {
  const ModuleFacts& facts = module_facts();
  if (type->tp_getattro == PyObject_GenericGetAttr) {
    return classify_class_attribute(type, name, AttrPath::InstanceDictOnly);
  }
  if (facts.module_getattro == nullptr || type->tp_getattro != facts.module_getattro) {
    return {AttrPath::GetAttr, std::string("custom getattr slot on ") + type->tp_name};
  }
  // A Python class with __getattr__: the slot runs __getattribute__, then
  // __getattr__ on AttributeError. Both must be the ones whose behaviour the
  // fast path reproduces.
  if (_PyType_Lookup(type, facts.getattribute_name) != facts.object_getattribute) {
    return {AttrPath::GetAttr, "custom __getattribute__ on " + defining_class(type, facts.getattribute_name)};
  }
  if (_PyType_Lookup(type, facts.getattr_name) != facts.module_getattr) {
    return {AttrPath::GetAttr, "custom __getattr__ on " + defining_class(type, facts.getattr_name)};
  }
  return classify_class_attribute(type, name, AttrPath::ModuleDicts);
}

const AttrPlan& CachedAttrPlan::refresh(PyTypeObject* type, PyObject* name) {
  plan_ = plan_attribute(type, name);
  type_ = type;
  // plan_attribute's _PyType_Lookup assigned a version tag when it could.
  tag_ = type_version_tag(type);
  return plan_;
}

PyObject* instance_dict(PyObject* obj) {
  PyObject** slot = _PyObject_GetDictPtr(obj);
  return slot != nullptr ? *slot : nullptr;
}

PyObject* read_attribute(PyObject* obj, PyObject* name, const AttrPlan& plan) {
  int error = 0;
  switch (plan.path) {
    case AttrPath::GetAttr:
      return PyObject_GetAttr(obj, name);
    case AttrPath::InstanceDictOnly: {
      PyObject* d = instance_dict(obj);
      PyObject* v = d != nullptr ? dict_lookup(d, name, &error) : nullptr;
      if (v != nullptr) {
        return Py_NewRef(v);
      }
      return error != 0 ? nullptr : set_attribute_error(name);
    }
    case AttrPath::InstanceDictThenClass: {
      PyObject* d = instance_dict(obj);
      PyObject* v = d != nullptr ? dict_lookup(d, name, &error) : nullptr;
      if (v != nullptr) {
        return Py_NewRef(v);
      }
      return error != 0 ? nullptr : PyObject_GenericGetAttr(obj, name);
    }
    case AttrPath::ModuleDicts: {
      const auto& keys = module_dict_keys();
      PyObject* d = instance_dict(obj);
      if (d == nullptr) {
        return set_attribute_error(name);
      }
      PyObject* v = dict_lookup(d, name, &error);
      if (v != nullptr || error != 0) {
        return Py_XNewRef(v);
      }
      for (PyObject* key : keys) {
        PyObject* sub = dict_lookup(d, key, &error);
        if (error != 0) {
          return nullptr;
        }
        if (sub == nullptr) {
          continue;
        }
        if (!PyDict_CheckExact(sub)) {
          // nn.Module.__getattr__ would use this object's own __contains__
          // and __getitem__: let Python do exactly that.
          return PyObject_GetAttr(obj, name);
        }
        v = dict_lookup(sub, name, &error);
        if (v != nullptr || error != 0) {
          return Py_XNewRef(v);
        }
      }
      return set_attribute_error(name);
    }
  }
  return PyObject_GetAttr(obj, name);
}

namespace {

// Whether getattr(obj, name) is Python's generic lookup (or, with
// `generic_read`, is object.__getattribute__ itself).
bool reads_generically(PyTypeObject* type, PyObject* name, bool generic_read) {
  return generic_read || type->tp_getattro == PyObject_GenericGetAttr ||
      type->tp_getattro == PyModule_Type.tp_getattro || plan_attribute(type, name).path != AttrPath::GetAttr;
}

}  // namespace

bool class_value_answers(PyObject* obj, PyObject* name, PyObject* value, bool generic_read) {
  PyTypeObject* type = Py_TYPE(obj);
  if (!reads_generically(type, name, generic_read) || _PyType_Lookup(type, name) != value) {
    return false;
  }
  PyTypeObject* value_type = Py_TYPE(value);
  if (!PyType_HasFeature(value_type, Py_TPFLAGS_IMMUTABLETYPE) || value_type->tp_descr_get != nullptr) {
    return false;
  }
  if (_PyObject_GetDictPtr(obj) == nullptr) {
    return true;  // no instance __dict__ to look in
  }
  PyObject* d = instance_dict(obj);
  if (d == nullptr || !PyDict_Check(d)) {
    return false;
  }
  int contains = PyDict_Contains(d, name);
  if (contains < 0) {
    PyErr_Clear();
  }
  return contains == 0;
}

bool class_of_answers(PyObject* obj, PyObject* name, PyObject* value, bool generic_read) {
  const ModuleFacts& facts = module_facts();
  PyTypeObject* type = Py_TYPE(obj);
  if (value != reinterpret_cast<PyObject*>(type) || name != facts.class_name || facts.object_class == nullptr) {
    return false;
  }
  // The lookup reaches the class's data descriptors before anything else
  // it could run: object.__getattribute__ itself, or the slot of a class
  // defining __getattr__ whose __getattribute__ is object's (its
  // __getattr__ runs only on AttributeError, which the getset never
  // raises).
  const bool objects_lookup = generic_read || type->tp_getattro == PyObject_GenericGetAttr ||
      (facts.module_getattro != nullptr && type->tp_getattro == facts.module_getattro &&
       _PyType_Lookup(type, facts.getattribute_name) == facts.object_getattribute);
  return objects_lookup && _PyType_Lookup(type, name) == facts.object_class;
}

bool instance_dict_read_answers(PyObject* obj, PyObject* name, PyObject* value, bool generic_read) {
  const ModuleFacts& facts = module_facts();
  PyTypeObject* type = Py_TYPE(obj);
  if (name != facts.dict_name || facts.instance_dict_getter == nullptr || !PyDict_Check(value) ||
      instance_dict(obj) != value || !reads_generically(type, name, generic_read)) {
    return false;
  }
  // The generic lookup calls the MRO's first `__dict__` (a data
  // descriptor) before anything else. Two getters return the dict in the
  // object's slot: the one Python classes get, and PyObject_GenericGetDict
  // (builtin types with a __dict__: functools.partial, functions). Any
  // other (an extension type's own) could answer from elsewhere.
  PyObject* descr = _PyType_Lookup(type, name);  // borrowed
  if (descr == nullptr || !Py_IS_TYPE(descr, &PyGetSetDescr_Type)) {
    return false;
  }
  getter get = reinterpret_cast<PyGetSetDescrObject*>(descr)->d_getset->get;
  return get == facts.instance_dict_getter || get == PyObject_GenericGetDict;
}

bool type_attribute_answers(PyObject* cls, PyObject* name, PyObject* value) {
  if (!PyType_Check(cls)) {
    return false;
  }
  auto* type = reinterpret_cast<PyTypeObject*>(cls);
  PyTypeObject* meta = Py_TYPE(cls);
  // type's own lookup answers: the metaclass's getattr slot is type's, or
  // that of a metaclass defining __getattr__ (3.11's EnumType) whose
  // __getattribute__ is type's: the slot runs that lookup and calls
  // __getattr__ only on AttributeError, which a lookup finding `value`
  // below does not raise. A metaclass's own __getattribute__ answers
  // otherwise.
  const ModuleFacts& facts = module_facts();
  const bool types_lookup = meta->tp_getattro == PyType_Type.tp_getattro ||
      (facts.module_getattro != nullptr && meta->tp_getattro == facts.module_getattro &&
       facts.type_getattribute != nullptr && _PyType_Lookup(meta, facts.getattribute_name) == facts.type_getattribute);
  if (!types_lookup) {
    return false;
  }
  // type's lookup: a data descriptor of the metaclass first. Those are
  // left to the caller's other paths: 3.13 reports no PyType_Modified when
  // one of them is set (`cls.__name__ = ...`), so the class's state does
  // not pin what they return.
  PyObject* meta_attribute = _PyType_Lookup(meta, name);
  if (meta_attribute != nullptr && Py_TYPE(meta_attribute)->tp_descr_set != nullptr) {
    return false;
  }
  // Then the class's own MRO, through the attribute's __get__ if its type
  // has one (nullptr: the metaclass's attribute or __getattr__ answers).
  if (_PyType_Lookup(type, name) != value) {
    return false;
  }
  PyTypeObject* value_type = Py_TYPE(value);
  if (value_type == &PyFunction_Type) {
    return true;  // a function's __get__ without an instance returns the function
  }
  // No __get__, and none can be added unseen: an immutable type, or the
  // class itself (an enum's members), whose state the caller pins.
  return value_type->tp_descr_get == nullptr &&
      (PyType_HasFeature(value_type, Py_TPFLAGS_IMMUTABLETYPE) || value_type == type);
}

bool instance_dict_answers(PyObject* obj, PyObject* name, PyObject* value, bool generic_read) {
  PyTypeObject* type = Py_TYPE(obj);
  if (!reads_generically(type, name, generic_read)) {
    return false;
  }
  PyObject* descr = _PyType_Lookup(type, name);
  if (descr != nullptr && Py_TYPE(descr)->tp_descr_set != nullptr) {
    return false;
  }
  PyObject* d = instance_dict(obj);
  if (d == nullptr || !PyDict_Check(d)) {
    return false;
  }
  PyObject* found = PyDict_GetItemWithError(d, name);
  PyErr_Clear();
  return found == value;
}

bool instance_dict_precedes_class(PyTypeObject* type, PyObject* name) {
  const ModuleFacts& facts = module_facts();
  bool generic = type->tp_getattro == PyObject_GenericGetAttr ||
      (facts.module_getattro != nullptr && type->tp_getattro == facts.module_getattro &&
       _PyType_Lookup(type, facts.getattribute_name) == facts.object_getattribute);
  if (!generic) {
    return false;
  }
  PyObject* descr = _PyType_Lookup(type, name);  // borrowed
  return descr == nullptr || Py_TYPE(descr)->tp_descr_set == nullptr;
}

ModuleDictSlot locate_in_module_dicts(PyObject* obj, PyObject* name, const AttrPlan& plan) {
  if (plan.path != AttrPath::ModuleDicts) {
    return ModuleDictSlot::Elsewhere;
  }
  PyObject* d = instance_dict(obj);
  if (d == nullptr) {
    return ModuleDictSlot::Missing;
  }
  int error = 0;
  if (dict_lookup(d, name, &error) != nullptr) {
    return ModuleDictSlot::InstanceDict;
  }
  const auto& keys = module_dict_keys();
  const ModuleDictSlot slots[] = {ModuleDictSlot::Parameters, ModuleDictSlot::Buffers, ModuleDictSlot::Modules};
  for (size_t i = 0; i < keys.size() && error == 0; ++i) {
    PyObject* sub = dict_lookup(d, keys[i], &error);
    if (sub == nullptr) {
      continue;
    }
    if (!PyDict_CheckExact(sub)) {
      return ModuleDictSlot::Elsewhere;
    }
    if (dict_lookup(sub, name, &error) != nullptr) {
      return slots[i];
    }
  }
  return error != 0 ? ModuleDictSlot::Error : ModuleDictSlot::Missing;
}

ModuleDictSlot module_dict_slot_from_name(const std::string& key) {
  if (key == "_parameters") {
    return ModuleDictSlot::Parameters;
  }
  if (key == "_buffers") {
    return ModuleDictSlot::Buffers;
  }
  if (key == "_modules") {
    return ModuleDictSlot::Modules;
  }
  throw std::invalid_argument("expected _parameters, _buffers or _modules, got " + key);
}

int has_attribute(PyObject* obj, PyObject* name, const AttrPlan& plan) {
  if (plan.path == AttrPath::InstanceDictOnly) {
    PyObject* d = instance_dict(obj);
    return d != nullptr ? PyDict_Contains(d, name) : 0;
  }
  PyObject* v = read_attribute(obj, name, plan);
  if (v != nullptr) {
    Py_DECREF(v);
    return 1;
  }
  if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
    PyErr_Clear();
    return 0;
  }
  return -1;
}

bool module_dicts_are_exact(PyObject* module) {
  PyObject* d = instance_dict(module);
  if (d == nullptr || !PyDict_Check(d)) {
    return false;
  }
  for (const char* key : {"_parameters", "_buffers", "_modules"}) {
    PyObject* sub = PyDict_GetItemString(d, key);  // borrowed
    if (sub != nullptr && !PyDict_CheckExact(sub)) {
      return false;
    }
  }
  return true;
}

}  // namespace dynamo_guards
