#include "torch/csrc/dynamo/ordered_dict_order.h"

#include <unordered_map>

#include "torch/csrc/dynamo/immutable_constants.h"
#include "torch/csrc/dynamo/odict_state.h"
#include "torch/csrc/dynamo/py_ref.h"
#include "torch/csrc/dynamo/python_compat.h"

namespace dynamo_guards {

namespace {

// The keys of `d` (borrowed) in storage order.
std::vector<PyObject*> stored_keys(PyObject* d) {
  std::vector<PyObject*> keys;
  keys.reserve(static_cast<size_t>(PyDict_GET_SIZE(d)));
  Py_ssize_t pos = 0;
  PyObject* key = nullptr;    // borrowed
  PyObject* value = nullptr;  // borrowed
  while (PyDict_Next(d, &pos, &key, &value)) {
    keys.push_back(key);
  }
  return keys;
}

// The next key of an OrderedDict iterator (new), or nullptr at the end or
// on an error (cleared).
OwnedRef next_key(PyObject* it) {
  OwnedRef key(Py_TYPE(it)->tp_iternext(it));
  if (!key) {
    PyErr_Clear();
  }
  return key;
}

// The failure text: the linked order the trace saw.
py::list describe(const std::string& source, PyObject* linked_keys) {
  std::string text = "list(OrderedDict.keys(" + source + "))";
  OwnedRef shown(PyObject_Repr(linked_keys));
  const char* utf8 = shown ? PyUnicode_AsUTF8(shown.get()) : nullptr;
  if (utf8 != nullptr) {
    text += std::string(" == ") + utf8;
  } else {
    PyErr_Clear();
    text += " in the order of the trace";
  }
  py::list parts;
  parts.append(py::str(text));
  return parts;
}

}  // namespace

ORDERED_DICT_ORDER::ORDERED_DICT_ORDER(PyObject* example, const std::string& source)
    : LeafGuard(py::list(), py::none()), constant_keys_(true), passed_(py::none()) {
  if (!PyODict_Check(example)) {
    throw py::type_error("ORDERED_DICT_ORDER needs an OrderedDict");
  }
  std::vector<PyObject*> keys = stored_keys(example);
  std::unordered_map<PyObject*, Py_ssize_t> position;
  for (size_t i = 0; i < keys.size(); ++i) {
    position[keys[i]] = static_cast<Py_ssize_t>(i);
    constant_keys_ = constant_keys_ && is_immutable_constant(keys[i]);
  }
  OwnedRef it(PyODict_Type.tp_iter(example));
  if (!it) {
    throw py::error_already_set();
  }
  py::list linked_keys;
  while (OwnedRef key = next_key(it.get())) {
    auto found = position.find(key.get());
    if (found == position.end()) {
      throw py::value_error("an OrderedDict whose linked keys are not its stored keys");
    }
    positions_.push_back(found->second);
    linked_keys.append(py::handle(key.get()));
  }
  if (positions_.size() != keys.size()) {
    throw py::value_error("an OrderedDict whose linked keys are not its stored keys");
  }
  verbose_code_parts_ = CodeParts(describe(source, linked_keys.ptr()));
}

bool ORDERED_DICT_ORDER::walk_matches(PyObject* od) const {
  std::vector<PyObject*> keys = stored_keys(od);
  if (keys.size() != positions_.size()) {
    return false;
  }
  if (constant_keys_) {
    for (PyObject* key : keys) {
      if (!is_immutable_constant(key)) {
        return false;  // a lookup could run its __eq__ (see the header)
      }
    }
  }
  OwnedRef it(PyODict_Type.tp_iter(od));
  if (!it) {
    PyErr_Clear();
    return false;
  }
  for (Py_ssize_t position : positions_) {
    OwnedRef key = next_key(it.get());
    if (!key || key.get() != keys[static_cast<size_t>(position)]) {
      return false;
    }
  }
  return !next_key(it.get());
}

bool ORDERED_DICT_ORDER::check(PyObject* value) {
  if (!PyODict_Check(value)) {
    return false;
  }
  size_t state = 0;
  bool counted = odict_state(value, &state);
  if (counted && !passed_.is_none() && own_weakref_referent(passed_.ptr()) == value && state == passed_state_) {
    return true;
  }
  if (!walk_matches(value)) {
    return false;
  }
  if (counted) {
    PyObject* ref = PyWeakref_NewRef(value, nullptr);  // new
    if (ref == nullptr) {
      PyErr_Clear();
      passed_ = py::none();
    } else {
      passed_ = py::reinterpret_steal<py::object>(ref);
      passed_state_ = state;
    }
  }
  return true;
}

}  // namespace dynamo_guards
