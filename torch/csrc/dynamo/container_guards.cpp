#include "torch/csrc/dynamo/container_guards.h"

#include "torch/csrc/dynamo/argument_checks.h"
#include "torch/csrc/dynamo/inline_values.h"
#include "torch/csrc/dynamo/py_ref.h"
#include "torch/csrc/dynamo/python_compat.h"

namespace dynamo_guards {

DICT_CONTAINS::DICT_CONTAINS(bool contains, py::object key, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), contains_(contains), key_(std::move(key)) {
  require_hashable(key_, "key");
}

bool DICT_CONTAINS::check(PyObject* value) {
  if (!PyDict_Check(value)) {
    return false;
  }
  int found = PyDict_Contains(value, key_.ptr());
  if (found < 0) {
    discard_python_error();
    return false;
  }
  return (found == 1) == contains_;
}

SET_CONTAINS::SET_CONTAINS(bool contains, py::object item, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), contains_(contains), item_(std::move(item)) {
  require_hashable(item_, "item");
}

bool SET_CONTAINS::check(PyObject* value) {
  if (!PyAnySet_Check(value)) {
    return false;
  }
  int found = PySet_Contains(value, item_.ptr());
  if (found < 0) {
    discard_python_error();
    return false;
  }
  return (found == 1) == contains_;
}

DICT_VERSION::DICT_VERSION(py::object value, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)) {
  if (!PyDict_Check(value.ptr())) {
    throw py::type_error(std::string("DICT_VERSION needs a dict, got ") + Py_TYPE(value.ptr())->tp_name);
  }
  version_ = dict_version(value.ptr());
}

bool DICT_VERSION::check(PyObject* value) {
  // A dict whose writes its version does not count (an object's __dict__
  // sharing inline values on 3.13.0, inline_values.h) fails: its version
  // says nothing.
  return PyDict_Check(value) && dict_writes_reported(value) && dict_version(value) == version_;
}

NO_HASATTR::NO_HASATTR(py::object attr_name, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), attr_name_(interned_name(attr_name, "attr_name")) {}

bool NO_HASATTR::check(PyObject* value) {
  int r = has_attribute(value, attr_name_.ptr(), plan_.get(Py_TYPE(value), attr_name_.ptr()));
  if (r < 0) {
    // hasattr() propagates non-AttributeError exceptions; a guard treats the
    // value as changed.
    discard_python_error();
    return false;
  }
  return r == 0;
}

void NO_HASATTR::record(MemoRecorder& recorder, PyObject* value) {
  if (!recorder.instance_lookup(value, plan_.get(Py_TYPE(value), attr_name_.ptr()).path)) {
    recorder.leaf(this, value);
  }
}

MAPPING_KEYS_MATCH::MAPPING_KEYS_MATCH(py::object value, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)) {
  PyObject* keys = PyMapping_Keys(value.ptr());
  if (keys == nullptr) {
    throw py::error_already_set();
  }
  keys_ = py::reinterpret_steal<py::list>(keys);
}

bool MAPPING_KEYS_MATCH::check(PyObject* value) {
  OwnedRef keys(PyMapping_Keys(value));
  if (!keys) {
    discard_python_error();
    return false;
  }
  int eq = PyObject_RichCompareBool(keys.get(), keys_.ptr(), Py_EQ);
  if (eq < 0) {
    discard_python_error();
    return false;
  }
  return eq == 1;
}

DIMENSION_DYNAMIC_MARKING_GUARD::DIMENSION_DYNAMIC_MARKING_GUARD(
    py::dict expected,
    py::list absent,
    py::dict dependent,
    py::object parts,
    py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)) {
  auto attribute = [](py::handle name, const char* what) {
    return Attribute{interned_name(py::reinterpret_borrow<py::object>(name), what), CachedAttrPlan()};
  };
  for (auto item : expected) {
    expected_.push_back({attribute(item.first, "marking name"), py::reinterpret_borrow<py::object>(item.second)});
  }
  for (py::handle name : absent) {
    absent_.push_back(attribute(name, "marking name"));
  }
  for (auto item : dependent) {
    py::tuple pair = py::reinterpret_borrow<py::object>(item.second).cast<py::tuple>();
    if (pair.size() != 2) {
      throw py::value_error("dependent markings map a name to (value, gate_attribute)");
    }
    dependent_.push_back({attribute(item.first, "marking name"), pair[0], attribute(pair[1], "gate attribute")});
  }
}

int DIMENSION_DYNAMIC_MARKING_GUARD::lookup(PyObject* value, Attribute& attr, PyObject** found) {
  const AttrPlan& plan = attr.plan.get(Py_TYPE(value), attr.name.ptr());
  if (found == nullptr) {
    return has_attribute(value, attr.name.ptr(), plan);
  }
  *found = read_attribute(value, attr.name.ptr(), plan);
  if (*found != nullptr) {
    return 1;
  }
  if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
    PyErr_Clear();
    return 0;
  }
  return -1;
}

void DIMENSION_DYNAMIC_MARKING_GUARD::record(MemoRecorder& recorder, PyObject* value) {
  bool pinned = expected_.empty() && dependent_.empty();
  for (Attribute& attr : absent_) {
    pinned = pinned && attr.plan.get(Py_TYPE(value), attr.name.ptr()).path == AttrPath::InstanceDictOnly;
  }
  if (!pinned) {
    recorder.leaf(this, value);
    return;
  }
  recorder.type_tag(value);
  recorder.object_dict(value);
}

bool DIMENSION_DYNAMIC_MARKING_GUARD::check(PyObject* value) {
  for (Attribute& attr : absent_) {
    if (lookup(value, attr, nullptr) != 0) {
      discard_python_error();
      return false;
    }
  }
  for (Expected& e : expected_) {
    PyObject* found = nullptr;
    int r = lookup(value, e.attr, &found);
    if (r < 0) {
      discard_python_error();
      return false;
    }
    if (r == 0) {
      continue;  // unspecified at run time: the compiled graph is general enough
    }
    OwnedRef current(found);
    OwnedRef subset(PyObject_CallMethod(current.get(), "issubset", "O", e.allowed.ptr()));
    if (!subset) {
      discard_python_error();
      return false;
    }
    if (subset.get() != Py_True) {
      return false;
    }
  }
  for (Dependent& d : dependent_) {
    int gated = lookup(value, d.gate, nullptr);
    if (gated < 0) {
      discard_python_error();
      return false;
    }
    if (gated == 0) {
      continue;
    }
    PyObject* found = nullptr;
    int r = lookup(value, d.attr, &found);
    if (r < 0) {
      discard_python_error();
      return false;
    }
    OwnedRef current(r == 1 ? found : Py_NewRef(Py_None));
    int eq = PyObject_RichCompareBool(current.get(), d.value.ptr(), Py_EQ);
    if (eq != 1) {
      discard_python_error();
      return false;
    }
  }
  return true;
}

}  // namespace dynamo_guards
