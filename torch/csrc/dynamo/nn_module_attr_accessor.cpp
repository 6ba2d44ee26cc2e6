#include "torch/csrc/dynamo/nn_module_attr_accessor.h"

namespace dynamo_guards {

namespace {

std::string where_found(PyObject* module, PyObject* name) {
  AttrPlan plan = plan_attribute(Py_TYPE(module), name);
  PyObject* d = instance_dict(module);
  bool in_instance_dict = d != nullptr && PyDict_Check(d) && PyDict_GetItemWithError(d, name) != nullptr;
  PyErr_Clear();
  switch (plan.path) {
    case AttrPath::GetAttr:
      return "getattr: " + plan.reason;
    case AttrPath::InstanceDictThenClass:
      return in_instance_dict ? "__dict__" : plan.reason;
    case AttrPath::InstanceDictOnly:
      return "__dict__";
    case AttrPath::ModuleDicts:
      if (in_instance_dict) {
        return "__dict__";
      }
      for (const char* key : {"_parameters", "_buffers", "_modules"}) {
        PyObject* sub = d != nullptr ? PyDict_GetItemString(d, key) : nullptr;
        if (sub != nullptr && PyDict_Check(sub) && PyDict_GetItemWithError(sub, name) != nullptr) {
          return key;
        }
        PyErr_Clear();
      }
      return "not found";
  }
  return "getattr";
}

}  // namespace

NNModuleAttrGuardAccessor::NNModuleAttrGuardAccessor(
    py::object name,
    std::unique_ptr<GuardManager> child,
    py::handle example_module)
    : GuardAccessor(interned_name(name, "attr"), std::move(child)),
      path_at_build_(where_found(example_module.ptr(), key_.ptr())) {}

NNModuleAttrGuardAccessor::NNModuleAttrGuardAccessor(
    py::object name,
    std::unique_ptr<GuardManager> child,
    std::string path_at_build)
    : GuardAccessor(std::move(name), std::move(child)), path_at_build_(std::move(path_at_build)) {}

PyObject* NNModuleAttrGuardAccessor::access(PyObject* parent) {
  return read_attribute(parent, key_.ptr(), plan_.get(Py_TYPE(parent), key_.ptr()));
}

bool NNModuleAttrGuardAccessor::record(MemoRecorder& recorder, PyObject* parent, PyObject* child) {
  if (class_of_answers(parent, key_.ptr(), child)) {
    return recorder.type_of(parent);  // `__class__`: pinned as type(parent), which it anchors
  }
  const AttrPlan& plan = plan_.get(Py_TYPE(parent), key_.ptr());
  PyObject* d = instance_dict(parent);
  bool from_instance_dict = d != nullptr && PyDict_Check(d) && PyDict_GetItemWithError(d, key_.ptr()) == child;
  PyErr_Clear();
  if (plan.path == AttrPath::InstanceDictThenClass && !from_instance_dict) {
    return false;  // a class attribute through its __get__: a fresh object per read
  }
  if (!recorder.instance_lookup(parent, plan.path)) {
    return false;  // walk it
  }
  recorder.anchor(child);
  return true;
}

std::string NNModuleAttrGuardAccessor::repr() const {
  return std::string(kKind) + "(" + py::repr(key_).cast<std::string>() + " from " + path_at_build_ + ")";
}

std::unique_ptr<GuardAccessor> NNModuleAttrGuardAccessor::clone_with(std::unique_ptr<GuardManager> child) const {
  return std::unique_ptr<GuardAccessor>(new NNModuleAttrGuardAccessor(key_, std::move(child), path_at_build_));
}

}  // namespace dynamo_guards
