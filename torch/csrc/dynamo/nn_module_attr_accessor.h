// NNModuleAttrGuardAccessor: reads `module.name` along the path Python's own
// lookup takes, without calling nn.Module.__getattr__ in Python.
//
// Soundness: the path is a CachedAttrPlan (attribute_resolution.h), valid
// only while the module's type and that type's version tag are the ones it
// was computed for; a changed class (new property, class attribute, method,
// __getattr__), a swapped __class__ or a different module type re-plans
// before the read. The instance-level steps (instance __dict__, then
// _parameters, _buffers, _modules) are re-read on every call, so
// object.__setattr__ shadowing, deletions and re-registrations are seen. The
// value read is therefore always the object `getattr(module, name)` returns,
// and the child manager guards that object.
#pragma once

#include "torch/csrc/dynamo/accessors.h"
#include "torch/csrc/dynamo/attribute_resolution.h"

namespace dynamo_guards {

class NNModuleAttrGuardAccessor : public GuardAccessor {
 public:
  static constexpr const char* kKind = "NNModuleAttrGuardAccessor";
  // `example_module` is the module seen at build time (borrowed, not kept):
  // it only decides the path shown when the tree is printed.
  NNModuleAttrGuardAccessor(py::object name, std::unique_ptr<GuardManager> child, py::handle example_module);
  PyObject* access(PyObject* parent) override;
  const char* kind() const override { return kKind; }
  std::string repr() const override;
  std::string access_failure() const override { return "getattr failed on source " + child_->source(); }
  std::unique_ptr<GuardAccessor> clone_with(std::unique_ptr<GuardManager> child) const override;
  // Pinned by the class's version tag and the dicts the read went through;
  // a class attribute (a fresh bound method per read) or a getattr aborts.
  bool record(MemoRecorder& recorder, PyObject* parent, PyObject* child) override;

  // Where the attribute was found at build time: "__dict__", "_parameters",
  // "_buffers", "_modules", "class attribute on Base", or "getattr: <why>".
  const std::string& path_at_build() const { return path_at_build_; }

 private:
  NNModuleAttrGuardAccessor(py::object name, std::unique_ptr<GuardManager> child, std::string path_at_build);

  CachedAttrPlan plan_;
  std::string path_at_build_;
};

}  // namespace dynamo_guards
