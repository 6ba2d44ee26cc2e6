// Python bindings: the same class and method names, argument order and
// return types as torch._C._dynamo.guards of the torch release the engine is
// built against (2.13, 2.14 or 2.15; what differs is named in
// torch_release.h), so that release's own GuardBuilder drives this engine
// unchanged.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <map>
#include <utility>

#include "torch/csrc/dynamo/accessors.h"
#include "torch/csrc/dynamo/attribute_hooks_match.h"
#include "torch/csrc/dynamo/container_guards.h"
#include "torch/csrc/dynamo/dict_guard_manager.h"
#include "torch/csrc/dynamo/function_code_match.h"
#include "torch/csrc/dynamo/global_state_guards.h"
#include "torch/csrc/dynamo/inline_values.h"
#include "torch/csrc/dynamo/leaf_floor.h"
#include "torch/csrc/dynamo/memo_tensor_floor.h"
#include "torch/csrc/dynamo/memo_touch_floor.h"
#include "torch/csrc/dynamo/module_attr_guards.h"
#include "torch/csrc/dynamo/nn_module_attr_accessor.h"
#include "torch/csrc/dynamo/odict_state.h"
#include "torch/csrc/dynamo/ordered_dict_order.h"
#include "torch/csrc/dynamo/python_guards.h"
#include "torch/csrc/dynamo/relational_guards.h"
#include "torch/csrc/dynamo/root_checker.h"
#include "torch/csrc/dynamo/root_guard_manager.h"
#include "torch/csrc/dynamo/tensor_match.h"
#include "torch/csrc/dynamo/torch_release.h"
#include "torch/csrc/dynamo/value_guards.h"
#include "torch/csrc/dynamo/watchers.h"

namespace dynamo_guards {
namespace {

constexpr auto kChild = py::return_value_policy::reference_internal;

// Managers live inside their tree; Python only ever borrows them, and a
// borrowed manager keeps the object it was obtained from alive.
template <typename Accessor>
void def_keyless_manager(py::class_<GuardManager, std::unique_ptr<GuardManager, py::nodelete>>& cls, const char* name) {
  cls.def(
      name,
      [](GuardManager& self, std::string source, py::object example_value, py::object guard_manager_enum) {
        return self.child_manager<Accessor>(py::none(), std::move(source), example_value, guard_manager_enum);
      },
      py::arg("source"),
      py::arg("example_value"),
      py::arg("guard_manager_enum"),
      kChild);
}

template <typename Accessor>
void def_keyed_manager(
    py::class_<GuardManager, std::unique_ptr<GuardManager, py::nodelete>>& cls,
    const char* name,
    const char* key_name) {
  cls.def(
      name,
      [](GuardManager& self, py::object key, std::string source, py::object example_value, py::object guard_manager_enum) {
        return self.child_manager<Accessor>(std::move(key), std::move(source), example_value, guard_manager_enum);
      },
      py::arg(key_name),
      py::arg("source"),
      py::arg("example_value"),
      py::arg("guard_manager_enum"),
      kChild);
}

template <typename Guard, typename... Args>
void add_leaf(GuardManager& self, Args&&... args) {
  self.add_leaf_guard(std::make_shared<Guard>(std::forward<Args>(args)...));
}

template <typename Guard>
using LeafClass = py::class_<Guard, LeafGuard, std::shared_ptr<Guard>>;

// torch's leaf constructors: (root, the guard's own arguments...,
// verbose_code_parts: list, user_stack). A leaf built this way belongs to no
// tree, so the root is only taken for torch's argument order.
template <typename Guard, typename... Args>
auto torch_leaf_init() {
  return py::init([](const RootGuardManager& /*root*/, Args... args, py::list parts, py::object stack) {
    return std::make_shared<Guard>(std::move(args)..., std::move(parts), std::move(stack));
  });
}

// Leaves evaluated by a Python predicate (python_guards.h): torch's
// constructor arguments are the predicate factory's.
template <typename Guard, typename... Args>
auto torch_python_leaf_init(const char* predicate) {
  return py::init([predicate](const RootGuardManager& /*root*/, Args... args, py::list parts, py::object stack) {
    return std::make_shared<Guard>(make_python_predicate(predicate, py::make_tuple(args...)), std::move(parts), std::move(stack));
  });
}

// torch's GuardDebugInfo text, which tests and logs compare.
std::string debug_info_text(const GuardDebugInfo& info) {
  return "GuardDebugInfo(\nresult=" + std::to_string(info.result ? 1 : 0) +
      ",\nverbose_code_parts=" + py::str(info.verbose_code_parts).cast<std::string>() +
      ",\nnum_guards_executed=" + std::to_string(info.num_guards_executed) +
      ",\nuser_stack=" + py::str(info.user_stack).cast<std::string>() + ")\n";
}

// What get_leaf_guards() shows: a relational slot appears as its relation's
// shared leaf, as torch shows one leaf object on every participating manager.
std::vector<LeafGuardPtr> public_leaves(const std::vector<LeafGuardPtr>& leaves) {
  std::vector<LeafGuardPtr> out;
  out.reserve(leaves.size());
  for (const LeafGuardPtr& leaf : leaves) {
    auto* slot = dynamic_cast<RelationalSlot*>(leaf.get());
    out.push_back(slot != nullptr ? slot->public_leaf() : leaf);
  }
  return out;
}

std::vector<GuardManager*> managers_from(const py::object& seq, const char* what) {
  std::vector<GuardManager*> out;
  for (py::handle item : seq) {
    try {
      out.push_back(item.cast<GuardManager*>());
    } catch (const py::cast_error&) {
      throw py::type_error(std::string(what) + " must contain dynamo_guards GuardManagers, got " + Py_TYPE(item.ptr())->tp_name);
    }
  }
  return out;
}

RootGuardManager* common_root(const std::vector<GuardManager*>& managers) {
  if (managers.empty()) {
    throw py::value_error("a relational guard needs at least one guard manager");
  }
  RootGuardManager* root = managers.front()->root();
  for (GuardManager* m : managers) {
    if (m->root() != root) {
      throw py::value_error("all guard managers of a relational guard must belong to one tree");
    }
  }
  return root;
}

// Slot i of `state` goes on managers[i]; the managers of group g (the first
// group_sizes[0] managers, then the next group_sizes[1], ...) share one
// public leaf of class PublicLeaf.
template <typename PublicLeaf>
void install_relation(
    const std::vector<GuardManager*>& managers,
    const std::shared_ptr<RelationalState>& state,
    const std::vector<size_t>& group_sizes) {
  RootGuardManager* root = common_root(managers);
  size_t slot = 0;
  for (size_t size : group_sizes) {
    auto public_leaf = std::make_shared<PublicLeaf>(*state);
    for (size_t end = slot + size; slot < end; ++slot) {
      managers[slot]->add_leaf_guard(std::make_shared<RelationalSlot>(state, slot, public_leaf));
    }
  }
  root->register_relation(state);
}

}  // namespace
}  // namespace dynamo_guards

using namespace dynamo_guards;  // NOLINT: the module body below names every engine class

PYBIND11_MODULE(_C, m) {
  m.doc() = "dynamo_guards' C++ guard engine (torch._C._dynamo.guards-compatible API)";
  // The torch release whose headers the engine was built against; the
  // Python side refuses to run it under another (torch_release.py).
  m.attr("TORCH_RELEASE") = py::make_tuple(torch_release::kMajor, torch_release::kMinor);
  probe_inline_values();
  probe_odict_state();
  register_watchers();

  py::class_<GuardDebugInfo>(m, "GuardDebugInfo")
      .def(py::init([](bool result, py::list parts, int64_t num_guards_executed) {
        return GuardDebugInfo{result, std::move(parts), num_guards_executed, py::none()};
      }))
      .def(py::init([](bool result, py::list parts, int64_t num_guards_executed, py::object user_stack) {
        return GuardDebugInfo{result, std::move(parts), num_guards_executed, std::move(user_stack)};
      }))
      .def_readonly("result", &GuardDebugInfo::result)
      .def_readonly("verbose_code_parts", &GuardDebugInfo::verbose_code_parts)
      .def_readonly("num_guards_executed", &GuardDebugInfo::num_guards_executed)
      .def_readonly("user_stack", &GuardDebugInfo::user_stack)
      .def("__str__", &debug_info_text);

  // ---- leaf guards ----
  // torch's classes with torch's constructors; the fork's own leaves
  // (nn.Module attribute guards) keep constructors without a root.
  py::class_<LeafGuard, std::shared_ptr<LeafGuard>>(m, "LeafGuard")
      .def("verbose_code_parts", &LeafGuard::verbose_code_parts)
      .def("user_stack", &LeafGuard::user_stack)
      .def("kind", &LeafGuard::kind)
      .def("__call__", [](LeafGuard& self, py::object value) { return self.check(value.ptr()); });

  const auto root_arg = py::arg("root");
  const auto parts_arg = py::arg("verbose_code_parts");
  const auto stack_arg = py::arg("user_stack") = py::none();
  LeafClass<TYPE_MATCH>(m, "TYPE_MATCH").def(torch_leaf_init<TYPE_MATCH, py::object>(), root_arg, py::arg("type_id"), parts_arg, stack_arg);
  LeafClass<ID_MATCH>(m, "ID_MATCH").def(torch_leaf_init<ID_MATCH, py::object>(), root_arg, py::arg("id_val"), parts_arg, stack_arg);
  LeafClass<EQUALS_MATCH>(m, "EQUALS_MATCH").def(torch_leaf_init<EQUALS_MATCH, py::object>(), root_arg, py::arg("value"), parts_arg, stack_arg);
  LeafClass<NONE_MATCH>(m, "NONE_MATCH").def(torch_leaf_init<NONE_MATCH>(), root_arg, parts_arg, stack_arg);
  LeafClass<NOT_NONE>(m, "NOT_NONE").def(torch_leaf_init<NOT_NONE>(), root_arg, parts_arg, stack_arg);
  LeafClass<TRUE_MATCH>(m, "TRUE_MATCH").def(torch_leaf_init<TRUE_MATCH>(), root_arg, parts_arg, stack_arg);
  LeafClass<FALSE_MATCH>(m, "FALSE_MATCH").def(torch_leaf_init<FALSE_MATCH>(), root_arg, parts_arg, stack_arg);
  LeafClass<LENGTH_CHECK>(m, "LENGTH_CHECK").def(torch_leaf_init<LENGTH_CHECK, py::object>(), root_arg, py::arg("length"), parts_arg, stack_arg);
  LeafClass<DICT_LENGTH>(m, "DICT_LENGTH").def(torch_leaf_init<DICT_LENGTH, py::object>(), root_arg, py::arg("length"), parts_arg, stack_arg);
  LeafClass<TUPLE_ITERATOR_LEN>(m, "TUPLE_ITERATOR_LEN")
      .def(torch_leaf_init<TUPLE_ITERATOR_LEN, py::object, py::object>(), root_arg, py::arg("length"), py::arg("type_id"), parts_arg, stack_arg);
  if constexpr (torch_release::kNanGuardsTakeTheValue) {
    LeafClass<FLOAT_IS_NAN>(m, "FLOAT_IS_NAN").def(torch_leaf_init<FLOAT_IS_NAN, py::object>(), root_arg, py::arg("value"), parts_arg, stack_arg);
    LeafClass<COMPLEX_IS_NAN>(m, "COMPLEX_IS_NAN")
        .def(torch_leaf_init<COMPLEX_IS_NAN, py::object>(), root_arg, py::arg("value"), parts_arg, stack_arg);
  } else {
    LeafClass<FLOAT_IS_NAN>(m, "FLOAT_IS_NAN").def(torch_leaf_init<FLOAT_IS_NAN>(), root_arg, parts_arg, stack_arg);
    LeafClass<COMPLEX_IS_NAN>(m, "COMPLEX_IS_NAN").def(torch_leaf_init<COMPLEX_IS_NAN>(), root_arg, parts_arg, stack_arg);
  }
  LeafClass<DEFAULT_DEVICE>(m, "DEFAULT_DEVICE").def(torch_leaf_init<DEFAULT_DEVICE>(), root_arg, parts_arg, stack_arg);
  LeafClass<DICT_CONTAINS>(m, "DICT_CONTAINS")
      .def(torch_leaf_init<DICT_CONTAINS, bool, py::object>(), root_arg, py::arg("contains"), py::arg("key"), parts_arg, stack_arg);
  LeafClass<SET_CONTAINS>(m, "SET_CONTAINS")
      .def(torch_leaf_init<SET_CONTAINS, bool, py::object>(), root_arg, py::arg("contains"), py::arg("item"), parts_arg, stack_arg);
  LeafClass<DICT_VERSION>(m, "DICT_VERSION").def(torch_leaf_init<DICT_VERSION, py::object>(), root_arg, py::arg("value"), parts_arg, stack_arg);
  LeafClass<NO_HASATTR>(m, "NO_HASATTR").def(torch_leaf_init<NO_HASATTR, py::object>(), root_arg, py::arg("attr_name"), parts_arg, stack_arg);
  LeafClass<MAPPING_KEYS_MATCH>(m, "MAPPING_KEYS_MATCH")
      .def(torch_leaf_init<MAPPING_KEYS_MATCH, py::object>(), root_arg, py::arg("value"), parts_arg, stack_arg);
  LeafClass<DIMENSION_DYNAMIC_MARKING_GUARD>(m, "DIMENSION_DYNAMIC_MARKING_GUARD")
      .def(
          torch_leaf_init<DIMENSION_DYNAMIC_MARKING_GUARD, py::dict, py::list, py::dict>(),
          root_arg, py::arg("expected_attrs"), py::arg("absent_attrs"), py::arg("dependent_attrs"), parts_arg, stack_arg);
  {
    LeafClass<TENSOR_MATCH> tensor_match(m, "TENSOR_MATCH");
    auto init = [](const RootGuardManager& root, py::object value, py::object sizes, py::object strides,
                   std::string tensor_name, py::list verbose_code_parts, py::object user_stack, py::type pytype,
                   py::object dispatch_keys, bool device_index_is_current) {
      return std::make_shared<TENSOR_MATCH>(
          std::move(value), std::move(sizes), std::move(strides), py::str(tensor_name), std::move(verbose_code_parts),
          std::move(user_stack), std::move(pytype), std::move(dispatch_keys), root.build_local_state,
          device_index_is_current);
    };
    if constexpr (torch_release::kTensorMatchTakesDeviceIndexIsCurrent) {
      tensor_match.def(
          py::init(init), root_arg, py::arg("value"), py::arg("sizes"), py::arg("strides"), py::arg("tensor_name"),
          parts_arg, py::arg("user_stack"), py::arg("pytype"), py::arg("dispatch_keys"),
          py::arg("device_index_is_current"));
    } else {
      tensor_match.def(
          py::init([init](const RootGuardManager& root, py::object value, py::object sizes, py::object strides,
                          std::string tensor_name, py::list verbose_code_parts, py::object user_stack, py::type pytype,
                          py::object dispatch_keys) {
            return init(root, std::move(value), std::move(sizes), std::move(strides), std::move(tensor_name),
                        std::move(verbose_code_parts), std::move(user_stack), std::move(pytype),
                        std::move(dispatch_keys), false);
          }),
          root_arg, py::arg("value"), py::arg("sizes"), py::arg("strides"), py::arg("tensor_name"), parts_arg,
          py::arg("user_stack"), py::arg("pytype"), py::arg("dispatch_keys"));
    }
  }
  LeafClass<LAMBDA_GUARD>(m, "LAMBDA_GUARD")
      .def(
          py::init([](const RootGuardManager& /*root*/, py::function fn, py::list verbose_code_parts, py::object user_stack) {
            return std::make_shared<LAMBDA_GUARD>(std::move(fn), std::move(verbose_code_parts), std::move(user_stack));
          }),
          root_arg, py::arg("guard_check_fn"), parts_arg, stack_arg);
  LeafClass<DUAL_LEVEL_MATCH>(m, "DUAL_LEVEL_MATCH")
      .def(torch_python_leaf_init<DUAL_LEVEL_MATCH, int64_t>("dual_level_match"), root_arg, py::arg("level"), parts_arg, stack_arg);
  LeafClass<FAKE_SCRIPT_TYPE_MATCH>(m, "FAKE_SCRIPT_TYPE_MATCH")
      .def(
          torch_python_leaf_init<FAKE_SCRIPT_TYPE_MATCH, py::object, py::object>("fake_script_type_match"),
          root_arg, py::arg("fake_script_type"), py::arg("type_id"), parts_arg, stack_arg);
  LeafClass<DISPATCH_KEY_SET_MATCH>(m, "DISPATCH_KEY_SET_MATCH")
      .def(torch_python_leaf_init<DISPATCH_KEY_SET_MATCH, py::object>("dispatch_key_set_match"), root_arg, py::arg("dispatch_key"), parts_arg, stack_arg);
  LeafClass<RANGE_ITERATOR_MATCH>(m, "RANGE_ITERATOR_MATCH")
      .def(
          torch_python_leaf_init<RANGE_ITERATOR_MATCH, py::object, py::object, py::object, py::object>("range_iterator_match"),
          root_arg, py::arg("start"), py::arg("stop"), py::arg("step"), py::arg("type_id"), parts_arg, stack_arg);
  LeafClass<GLOBAL_STATE>(m, "GLOBAL_STATE")
      .def(
          py::init([](const RootGuardManager& /*root*/, py::list verbose_code_parts, py::object user_stack) {
            // torch's leaf compares with the state at its construction.
            py::object now = py::module_::import("torch._C._dynamo.guards").attr("GlobalStateGuard")();
            return std::make_shared<GLOBAL_STATE>(std::move(now), std::move(verbose_code_parts), std::move(user_stack));
          }),
          root_arg, parts_arg, stack_arg)
      .def("check_verbose", [](GLOBAL_STATE& self, py::object value) {
        // torch counts the guard only when it passes.
        CheckContext ctx;
        bool ok = self.run(value.ptr(), &ctx);
        if (ok) {
          return GuardDebugInfo{true, py::list(), 1, py::none()};
        }
        return GuardDebugInfo{false, py::reinterpret_borrow<py::list>(ctx.verbose_code_parts), 0, ctx.user_stack};
      }, py::arg("value"))
      .def("is_native", &GLOBAL_STATE::is_native);
  LeafClass<TORCH_FUNCTION_MODE_STACK>(m, "TORCH_FUNCTION_MODE_STACK")
      .def(torch_leaf_init<TORCH_FUNCTION_MODE_STACK, py::list>(), root_arg, py::arg("initial_stack"), parts_arg, stack_arg);
  LeafClass<NN_MODULE_ATTR_RESOLUTION>(m, "NN_MODULE_ATTR_RESOLUTION")
      .def(py::init<py::object, py::object, py::object, py::object>(), py::arg("name"), py::arg("dict_name"), parts_arg, stack_arg);
  LeafClass<GETATTR_FALLTHROUGH>(m, "GETATTR_FALLTHROUGH")
      .def(py::init<py::object, py::object, py::object>(), py::arg("name"), parts_arg, stack_arg);
  LeafClass<NN_MODULE_HOOKS_EMPTY>(m, "NN_MODULE_HOOKS_EMPTY")
      .def(py::init<py::object, py::object, py::object>(), py::arg("name"), parts_arg, stack_arg);
  LeafClass<CLASS_ATTR_MATCH>(m, "CLASS_ATTR_MATCH")
      .def(py::init<py::object, py::object, py::object, py::object>(), py::arg("name"), py::arg("expected"), parts_arg, stack_arg);
  LeafClass<METACLASS_ATTR_MATCH>(m, "METACLASS_ATTR_MATCH")
      .def(py::init<py::object, py::object, py::object, py::object>(), py::arg("name"), py::arg("expected"), parts_arg, stack_arg);
  LeafClass<ATTRIBUTE_HOOKS_MATCH>(m, "ATTRIBUTE_HOOKS_MATCH")
      .def(py::init<py::object, py::object, py::object, py::object, py::object>(), py::arg("cls"), py::arg("getattribute_chain"),
           py::arg("getattr"), parts_arg, stack_arg);

  LeafClass<CLASS_ATTR_SHADOWED>(m, "CLASS_ATTR_SHADOWED")
      .def(py::init<py::object, py::object, py::object>(), py::arg("name"), parts_arg, stack_arg);
  LeafClass<ORDERED_DICT_ORDER>(m, "ORDERED_DICT_ORDER");
  LeafClass<FUNCTION_CODE_MATCH>(m, "FUNCTION_CODE_MATCH")
      .def(py::init<py::object, py::object, py::object>(), py::arg("function"), parts_arg, stack_arg);
  // Relational guards: built by the install_*_guard functions only.
  LeafClass<RelationalGuard>(m, "RelationalGuard").def("__call__", [](RelationalGuard&, py::object) -> bool {
    throw py::type_error("a relational guard relates the values of several guard managers; its root checks it");
  });
  py::class_<NO_TENSOR_ALIASING, RelationalGuard, std::shared_ptr<NO_TENSOR_ALIASING>>(m, "NO_TENSOR_ALIASING");
  py::class_<OBJECT_ALIASING, RelationalGuard, std::shared_ptr<OBJECT_ALIASING>>(m, "OBJECT_ALIASING");
  py::class_<STORAGE_OVERLAPPING, RelationalGuard, std::shared_ptr<STORAGE_OVERLAPPING>>(m, "STORAGE_OVERLAPPING");
  py::class_<SYMBOLIC_SHAPE_GUARD, RelationalGuard, std::shared_ptr<SYMBOLIC_SHAPE_GUARD>>(m, "SYMBOLIC_SHAPE_GUARD");

  // ---- accessors ----
  py::class_<GuardAccessor, std::unique_ptr<GuardAccessor, py::nodelete>>(m, "GuardAccessor")
      .def("repr", &GuardAccessor::repr)
      .def("kind", &GuardAccessor::kind)
      .def("get_key", &GuardAccessor::key);
  // The accessor classes torch registers (the others show as GuardAccessor,
  // as in torch), and the fork's own NNModuleAttrGuardAccessor.
#define DYNAMO_GUARDS_BIND_ACCESSOR(NAME) \
  py::class_<NAME, GuardAccessor, std::unique_ptr<NAME, py::nodelete>>(m, #NAME)
  DYNAMO_GUARDS_BIND_ACCESSOR(FrameLocalsGuardAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(GlobalsGuardAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(DictGetItemGuardAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(GetItemGuardAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(ListGetItemGuardAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(TupleGetItemGuardAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(FuncDefaultsGuardAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(FuncKwDefaultsGuardAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(CodeGuardAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(ClosureGuardAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(TypeGuardAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(TypeDictGuardAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(TypeMROGuardAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(WeakRefCallGuardAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(CallFunctionNoArgsGuardAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(TupleIteratorGetItemAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(GlobalWeakRefGuardAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(GetGenericDictGuardAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(GenericGetAttrGuardAccessor);
  DYNAMO_GUARDS_BIND_ACCESSOR(GetAttrGuardAccessor).def("get_attr_name", [](const GetAttrGuardAccessor& self) {
    return self.key().cast<std::string>();
  });
  DYNAMO_GUARDS_BIND_ACCESSOR(NNModuleAttrGuardAccessor).def("path_at_build", &NNModuleAttrGuardAccessor::path_at_build);
#undef DYNAMO_GUARDS_BIND_ACCESSOR

  // ---- managers ----
  py::class_<GuardManager, std::unique_ptr<GuardManager, py::nodelete>> gm(m, "GuardManager");
  gm.def("get_source", &GuardManager::source)
      .def("fail_count", &GuardManager::fail_count)
      .def("has_object_aliasing_guard", &GuardManager::has_relational_guard)
      .def("is_guarded_value_immutable", &GuardManager::is_guarded_value_immutable)
      .def("has_no_accessors", [](const GuardManager& self) { return self.accessors().empty(); })
      .def("mark_tag_safe", [](GuardManager& self) { self.tag_safe = true; })
      .def("mark_tag_safe_root", [](GuardManager& self) { self.tag_safe_root = true; })
      .def("is_tag_safe", [](const GuardManager& self) { return self.tag_safe; })
      .def("is_tag_safe_root", [](const GuardManager& self) { return self.tag_safe_root; })
      .def("is_recursive_dict_tag_matching_disabled", [](const GuardManager&) { return true; })
      .def("get_type_of_guarded_value", &GuardManager::type_of_guarded_value)
      .def(
          "get_accessors",
          [](const GuardManager& self) {
            std::vector<GuardAccessor*> out;
            for (const auto& a : self.accessors()) {
              out.push_back(a.get());
            }
            return out;
          },
          kChild)
      .def(
          "get_child_managers",
          [](const GuardManager& self) {
            std::vector<GuardManager*> out;
            for (const auto& a : self.accessors()) {
              out.push_back(a->child());
            }
            return out;
          },
          kChild)
      .def("get_leaf_guards", [](const GuardManager& self) { return public_leaves(self.leaf_guards()); })
      .def("is_memoized", [](const GuardManager& self) { return self.memo() != nullptr; })
      .def("memo_log_size", [](const GuardManager& self) -> py::object {
        if (self.memo() == nullptr || !self.memo()->has_log()) {
          return py::none();
        }
        return py::int_(self.memo()->num_steps());
      })
      .def(
          "memo_touch_floor_us",
          [](const GuardManager& self, int iters, bool tensors) -> py::object {
            // The benchmark's floor for this subtree (memo_touch_floor.h);
            // None before a passing check has recorded a log here.
            if (self.memo() == nullptr || !self.memo()->has_log() || iters <= 0) {
              return py::none();
            }
            std::vector<const void*> addresses;
            collect_memo_touch_addresses(self, addresses, tensors);
            TouchTiming timing = time_touches(addresses, iters);
            return py::make_tuple(timing.microseconds_per_pass, timing.sink & 1, addresses.size());
          },
          py::arg("iters"),
          py::arg("tensors") = true)
      .def(
          "leaf_floor_us",
          [](const GuardManager& self, py::handle value, int iters) -> py::object {
            // The benchmark's floor for this manager's own leaf guards
            // (leaf_floor.h): (microseconds per pass, whether every leaf
            // passed); None when iters < 1.
            if (iters <= 0) {
              return py::none();
            }
            LeafFloorTiming timing = time_leaf_guards(self, value.ptr(), iters);
            return py::make_tuple(timing.microseconds_per_pass, timing.passed);
          },
          py::arg("value"),
          py::arg("iters"))
      .def("memo_log_kinds", [](const GuardManager& self) {
        py::dict counts;
        if (self.memo() == nullptr || !self.memo()->has_log()) {
          return counts;
        }
        self.memo()->for_each_step([&](MemoStep::Kind kind, void*, const MemoStep&) {
          py::str name(memo_step_kind_name(kind));
          counts[name] = py::int_(counts.contains(name) ? counts[name].cast<size_t>() + 1 : 1);
        });
        return counts;
      })
      // The log's steps in order, each fused step as the steps it stands
      // for: (kind, address of the object the step reads) pairs. The
      // addresses are numbers only (the objects may have died since).
      .def("memo_log_steps", [](const GuardManager& self) {
        py::list steps;
        if (self.memo() == nullptr || !self.memo()->has_log()) {
          return steps;
        }
        self.memo()->for_each_step([&](MemoStep::Kind kind, void* object, const MemoStep&) {
          steps.append(py::make_tuple(memo_step_kind_name(kind), reinterpret_cast<uintptr_t>(object)));
        });
        return steps;
      })
      // The reads the memo's log re-runs with their subtrees (its Walk
      // steps), as the accessors' reprs, in log order; empty without a log.
      .def("memo_walked_reads", [](const GuardManager& self) {
        py::list reads;
        if (self.memo() == nullptr || !self.memo()->has_log()) {
          return reads;
        }
        self.memo()->for_each_step([&](MemoStep::Kind kind, void*, const MemoStep& step) {
          if (kind == MemoStep::Kind::Walk) {
            reads.append(py::str(static_cast<const GuardAccessor*>(step.b)->repr()));
          }
        });
        return reads;
      })
      // The steps of the memo's log that may run Python code, after which
      // validation checks the steps before them again: (position in
      // memo_log_steps(), the leaf guard's kind or "Walk") pairs; empty
      // without a log.
      .def("memo_python_steps", [](const GuardManager& self) {
        py::list found;
        if (self.memo() == nullptr || !self.memo()->has_log()) {
          return found;
        }
        size_t position = 0;
        self.memo()->for_each_step([&](MemoStep::Kind kind, void*, const MemoStep& step) {
          if (kind == MemoStep::Kind::Walk) {
            found.append(py::make_tuple(position, "Walk"));
          } else if (kind == MemoStep::Kind::Leaf && step.c != 0) {
            found.append(py::make_tuple(position, static_cast<const LeafGuard*>(step.b)->kind()));
          }
          ++position;
        });
        return found;
      })
      // What the memo's log pins by watching (watchers.h): the number of
      // watched dicts and types, and whether an event has voided the log;
      // None without a log.
      .def("memo_watches", [](const GuardManager& self) -> py::object {
        if (self.memo() == nullptr || !self.memo()->has_log()) {
          return py::none();
        }
        const WatchSet& watches = self.memo()->watches();
        py::dict out;
        out["dicts"] = watches.num_dicts();
        out["types"] = watches.num_types();
        out["changed"] = watches.changed();
        return out;
      });

  // Leaf guards, in torch's argument order: the guard's own arguments, then
  // verbose_code_parts, then user_stack.
  gm.def("add_lambda_guard", [](GuardManager& self, py::object fn, py::object parts, py::object stack) {
      add_leaf<LAMBDA_GUARD>(self, fn, parts, stack);
    }, py::arg("guard_check_fn"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_type_match_guard", [](GuardManager& self, py::object type_id, py::object parts, py::object stack) {
      add_leaf<TYPE_MATCH>(self, type_id, parts, stack);
    }, py::arg("type_id"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_id_match_guard", [](GuardManager& self, py::object id_val, py::object parts, py::object stack) {
      add_leaf<ID_MATCH>(self, id_val, parts, stack);
    }, py::arg("id_val"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_equals_match_guard", [](GuardManager& self, py::object value, py::object parts, py::object stack) {
      add_leaf<EQUALS_MATCH>(self, value, parts, stack);
    }, py::arg("value"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_none_match_guard", [](GuardManager& self, py::object parts, py::object stack) {
      add_leaf<NONE_MATCH>(self, parts, stack);
    }, py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_not_none_guard", [](GuardManager& self, py::object parts, py::object stack) {
      add_leaf<NOT_NONE>(self, parts, stack);
    }, py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_true_match_guard", [](GuardManager& self, py::object parts, py::object stack) {
      add_leaf<TRUE_MATCH>(self, parts, stack);
    }, py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_false_match_guard", [](GuardManager& self, py::object parts, py::object stack) {
      add_leaf<FALSE_MATCH>(self, parts, stack);
    }, py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_length_check_guard", [](GuardManager& self, py::object length, py::object parts, py::object stack) {
      add_leaf<LENGTH_CHECK>(self, length, parts, stack);
    }, py::arg("length"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_dict_length_check_guard", [](GuardManager& self, py::object length, py::object parts, py::object stack) {
      add_leaf<DICT_LENGTH>(self, length, parts, stack);
    }, py::arg("length"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_tuple_iterator_length_guard", [](GuardManager& self, py::object length, py::object type_id, py::object parts, py::object stack) {
      add_leaf<TUPLE_ITERATOR_LEN>(self, length, type_id, parts, stack);
    }, py::arg("length"), py::arg("type_id"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_range_iterator_match_guard", [](GuardManager& self, py::object start, py::object stop, py::object step, py::object type_id, py::object parts, py::object stack) {
      add_leaf<RANGE_ITERATOR_MATCH>(self, make_python_predicate("range_iterator_match", py::make_tuple(start, stop, step, type_id)), parts, stack);
    }, py::arg("start"), py::arg("stop"), py::arg("step"), py::arg("type_id"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_default_device_guard", [](GuardManager& self, py::object parts, py::object stack) {
      add_leaf<DEFAULT_DEVICE>(self, parts, stack);
    }, py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_mapping_keys_guard", [](GuardManager& self, py::object value, py::object parts, py::object stack) {
      add_leaf<MAPPING_KEYS_MATCH>(self, value, parts, stack);
    }, py::arg("value"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_dispatch_key_set_guard", [](GuardManager& self, py::object value, py::object parts, py::object stack) {
      add_leaf<DISPATCH_KEY_SET_MATCH>(self, make_python_predicate("dispatch_key_set_match", py::make_tuple(value)), parts, stack);
    }, py::arg("dispatch_key"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_global_state_guard", [](GuardManager& self, py::object initial_state, py::object parts, py::object stack) {
      add_leaf<GLOBAL_STATE>(self, initial_state, parts, stack);
    }, py::arg("initial_state"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_torch_function_mode_stack_guard", [](GuardManager& self, py::list initial_stack, py::object parts, py::object stack) {
      add_leaf<TORCH_FUNCTION_MODE_STACK>(self, initial_stack, parts, stack);
    }, py::arg("initial_stack"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_no_hasattr_guard", [](GuardManager& self, py::object attr_name, py::object parts, py::object stack) {
      add_leaf<NO_HASATTR>(self, attr_name, parts, stack);
    }, py::arg("attr_name"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_dict_contains_guard", [](GuardManager& self, bool contains, py::object key, py::object parts, py::object stack) {
      add_leaf<DICT_CONTAINS>(self, contains, key, parts, stack);
    }, py::arg("contains"), py::arg("key"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_set_contains_guard", [](GuardManager& self, bool contains, py::object item, py::object parts, py::object stack) {
      add_leaf<SET_CONTAINS>(self, contains, item, parts, stack);
    }, py::arg("contains"), py::arg("item"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_dual_level_match_guard", [](GuardManager& self, py::object level, py::object parts, py::object stack) {
      add_leaf<DUAL_LEVEL_MATCH>(self, make_python_predicate("dual_level_match", py::make_tuple(level)), parts, stack);
    }, py::arg("level"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_fake_script_type_match_guard", [](GuardManager& self, py::object fake_type, py::object obj_id, py::object parts, py::object stack) {
      add_leaf<FAKE_SCRIPT_TYPE_MATCH>(self, make_python_predicate("fake_script_type_match", py::make_tuple(fake_type, obj_id)), parts, stack);
    }, py::arg("fake_script_type"), py::arg("type_id"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_dimension_marking_guard", [](GuardManager& self, py::dict expected, py::list absent, py::dict dependent, py::object parts, py::object stack) {
      add_leaf<DIMENSION_DYNAMIC_MARKING_GUARD>(self, expected, absent, dependent, parts, stack);
    }, py::arg("expected_attrs"), py::arg("absent_attrs"), py::arg("dependent_attrs"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_nn_module_attr_resolution_guard", [](GuardManager& self, py::object name, py::object dict_name, py::object parts, py::object stack) {
      add_leaf<NN_MODULE_ATTR_RESOLUTION>(self, name, dict_name, parts, stack);
    }, py::arg("name"), py::arg("dict_name"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_getattr_fallthrough_guard", [](GuardManager& self, py::object name, py::object parts, py::object stack) {
      add_leaf<GETATTR_FALLTHROUGH>(self, name, parts, stack);
    }, py::arg("name"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_nn_module_hooks_empty_guard", [](GuardManager& self, py::object name, py::object parts, py::object stack) {
      add_leaf<NN_MODULE_HOOKS_EMPTY>(self, name, parts, stack);
    }, py::arg("name"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_class_attr_match_guard", [](GuardManager& self, py::object name, py::object expected, py::object parts, py::object stack) {
      add_leaf<CLASS_ATTR_MATCH>(self, name, expected, parts, stack);
    }, py::arg("name"), py::arg("expected"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_metaclass_attr_match_guard", [](GuardManager& self, py::object name, py::object expected, py::object parts, py::object stack) {
      add_leaf<METACLASS_ATTR_MATCH>(self, name, expected, parts, stack);
    }, py::arg("name"), py::arg("expected"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_attribute_hooks_match_guard", [](GuardManager& self, py::object cls, py::object chain, py::object getattr, py::object parts, py::object stack) {
      add_leaf<ATTRIBUTE_HOOKS_MATCH>(self, cls, chain, getattr, parts, stack);
    }, py::arg("cls"), py::arg("getattribute_chain"), py::arg("getattr"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_function_code_match_guard", [](GuardManager& self, py::object function, py::object parts, py::object stack) {
      add_leaf<FUNCTION_CODE_MATCH>(self, function, parts, stack);
    }, py::arg("function"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_class_attr_shadowed_guard", [](GuardManager& self, py::object name, py::object parts, py::object stack) {
      add_leaf<CLASS_ATTR_SHADOWED>(self, name, parts, stack);
    }, py::arg("name"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
    .def("add_dict_version_guard", [](GuardManager& self, py::object value, py::object parts, py::object stack) {
      add_leaf<DICT_VERSION>(self, value, parts, stack);
    }, py::arg("value"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none());
  // The builder methods whose signature depends on the torch release.
  if constexpr (torch_release::kNanGuardsTakeTheValue) {
    gm.def("add_float_is_nan_guard", [](GuardManager& self, py::object value, py::object parts, py::object stack) {
        add_leaf<FLOAT_IS_NAN>(self, value, parts, stack);
      }, py::arg("value"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
      .def("add_complex_is_nan_guard", [](GuardManager& self, py::object value, py::object parts, py::object stack) {
        add_leaf<COMPLEX_IS_NAN>(self, value, parts, stack);
      }, py::arg("value"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none());
  } else {
    gm.def("add_float_is_nan_guard", [](GuardManager& self, py::object parts, py::object stack) {
        add_leaf<FLOAT_IS_NAN>(self, parts, stack);
      }, py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
      .def("add_complex_is_nan_guard", [](GuardManager& self, py::object parts, py::object stack) {
        add_leaf<COMPLEX_IS_NAN>(self, parts, stack);
      }, py::arg("verbose_code_parts"), py::arg("user_stack") = py::none());
  }
  auto add_tensor_match = [](GuardManager& self, py::object value, py::object sizes, py::object strides, py::object tensor_name, py::object parts, py::object stack, py::object pytype, py::object dispatch_keys, bool device_index_is_current) {
    add_leaf<TENSOR_MATCH>(self, value, sizes, strides, tensor_name, parts, stack, pytype, dispatch_keys, self.root()->build_local_state, device_index_is_current);
  };
  if constexpr (torch_release::kTensorMatchTakesDeviceIndexIsCurrent) {
    gm.def("add_tensor_match_guard", add_tensor_match, py::arg("value"), py::arg("sizes"), py::arg("strides"), py::arg("tensor_name"), py::arg("verbose_code_parts"), py::arg("user_stack"), py::arg("pytype"), py::arg("dispatch_keys"), py::arg("device_index_is_current") = false);
  } else {
    gm.def("add_tensor_match_guard", [add_tensor_match](GuardManager& self, py::object value, py::object sizes, py::object strides, py::object tensor_name, py::object parts, py::object stack, py::object pytype, py::object dispatch_keys) {
      add_tensor_match(self, value, sizes, strides, tensor_name, parts, stack, pytype, dispatch_keys, false);
    }, py::arg("value"), py::arg("sizes"), py::arg("strides"), py::arg("tensor_name"), py::arg("verbose_code_parts"), py::arg("user_stack"), py::arg("pytype"), py::arg("dispatch_keys"));
  }
  if constexpr (torch_release::kManagerHasUnoptimizedRelationalGuard) {
    // torch's tag-safety pass asks it; the engine marks no manager tag safe
    // (is_tag_safe() is False), and answers as torch would of a manager
    // with any relational guard.
    gm.def("has_unoptimized_relational_guard", &GuardManager::has_relational_guard);
  }

  // Accessors, in torch's argument order: key, source, example_value,
  // guard_manager_enum.
  def_keyed_manager<GetItemGuardAccessor>(gm, "getitem_manager", "key");
  gm.def(
      "framelocals_manager_by_name",
      [](GuardManager& self, py::object name, std::string source, py::object example_value, py::object guard_manager_enum) {
        return self.child_manager<FrameLocalsGuardAccessor>(std::move(name), std::move(source), example_value, guard_manager_enum, Py_ssize_t{-1});
      },
      py::arg("key"), py::arg("source"), py::arg("example_value"), py::arg("guard_manager_enum"), kChild);
  gm.def(
      "framelocals_manager",
      [](GuardManager& self, py::object key, std::string source, py::object example_value, py::object guard_manager_enum) {
        // torch passes (name, index into the frame's localsplus); the engine
        // sees the locals as a dict and reads them by name.
        py::object name = key;
        Py_ssize_t index = -1;
        if (PyTuple_Check(key.ptr())) {
          if (PyTuple_GET_SIZE(key.ptr()) != 2) {
            throw py::value_error("framelocals_manager key must be a name or (name, index)");
          }
          name = py::reinterpret_borrow<py::object>(PyTuple_GET_ITEM(key.ptr(), 0));
          index = index_key(py::reinterpret_borrow<py::object>(PyTuple_GET_ITEM(key.ptr(), 1)), "frame local index");
        }
        return self.child_manager<FrameLocalsGuardAccessor>(name, std::move(source), example_value, guard_manager_enum, index);
      },
      py::arg("key"), py::arg("source"), py::arg("example_value"), py::arg("guard_manager_enum"), kChild);
  def_keyed_manager<DictGetItemGuardAccessor>(gm, "dict_getitem_manager", "key");
  def_keyed_manager<ListGetItemGuardAccessor>(gm, "list_getitem_manager", "key");
  def_keyed_manager<IndexedGuardAccessor>(gm, "indexed_manager", "idx");
  def_keyed_manager<TensorSizeGuardAccessor>(gm, "tensor_property_size_manager", "idx");
  def_keyed_manager<TensorStrideGuardAccessor>(gm, "tensor_property_stride_manager", "idx");
  def_keyed_manager<TensorStorageOffsetGuardAccessor>(gm, "tensor_property_storage_offset_manager", "idx");
  def_keyed_manager<TupleGetItemGuardAccessor>(gm, "tuple_getitem_manager", "key");
  def_keyless_manager<FuncDefaultsGuardAccessor>(gm, "func_defaults_manager");
  def_keyless_manager<FuncKwDefaultsGuardAccessor>(gm, "func_kwdefaults_manager");
  def_keyed_manager<GlobalsGuardAccessor>(gm, "globals_dict_manager", "f_globals");
  def_keyless_manager<TypeGuardAccessor>(gm, "type_manager");
  def_keyless_manager<TypeDictGuardAccessor>(gm, "type_dict_manager");
  def_keyless_manager<TypeMROGuardAccessor>(gm, "type_mro_manager");
  def_keyless_manager<WeakRefCallGuardAccessor>(gm, "weakref_call_manager");
  def_keyless_manager<CallFunctionNoArgsGuardAccessor>(gm, "call_function_no_args_manager");
  def_keyed_manager<TupleIteratorGetItemAccessor>(gm, "tuple_iterator_getitem_manager", "index");
  def_keyed_manager<SetGetItemGuardAccessor>(gm, "set_getitem_manager", "index");
  def_keyless_manager<CodeGuardAccessor>(gm, "code_manager");
  def_keyless_manager<ClosureGuardAccessor>(gm, "closure_manager");
  def_keyed_manager<GlobalWeakRefGuardAccessor>(gm, "global_weakref_manager", "global_name");
  def_keyed_manager<PythonLambdaGuardAccessor>(gm, "lambda_manager", "python_lambda");
  def_keyless_manager<GradGuardAccessor>(gm, "grad_manager");
  def_keyless_manager<GetGenericDictGuardAccessor>(gm, "get_generic_dict_manager");
  def_keyed_manager<GenericGetAttrGuardAccessor>(gm, "generic_getattr_manager", "attr");
  def_keyed_manager<GetAttrGuardAccessor>(gm, "getattr_manager", "attr");
  gm.def(
      "nn_module_attr_manager",
      [](GuardManager& self, py::object attr, std::string source, py::object example_value, py::object guard_manager_enum, py::object example_module) {
        return self.child_manager<NNModuleAttrGuardAccessor>(attr, std::move(source), example_value, guard_manager_enum, example_module);
      },
      py::arg("attr"), py::arg("source"), py::arg("example_value"), py::arg("guard_manager_enum"), py::arg("example_module"), kChild);

  py::class_<DictGuardManager, GuardManager, std::unique_ptr<DictGuardManager, py::nodelete>>(m, "DictGuardManager")
      // The manager checks the dict's length itself; like torch's, it adds
      // no leaf for the same length.
      .def("add_dict_length_check_guard", [](DictGuardManager& self, py::object length, py::object parts, py::object stack) {
        if (checked_length(length, "length") != self.size()) {
          add_leaf<DICT_LENGTH>(self, length, parts, stack);
        }
      }, py::arg("length"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none())
      .def(
          "get_key_manager",
          [](DictGuardManager& self, py::object index, std::string source, py::object example_value, py::object e) {
            return self.key_manager(index, std::move(source), example_value, e);
          },
          py::arg("index"), py::arg("source"), py::arg("example_value"), py::arg("guard_manager_enum"), kChild)
      .def(
          "get_value_manager",
          [](DictGuardManager& self, py::object index, std::string source, py::object example_value, py::object e) {
            return self.value_manager(index, std::move(source), example_value, e);
          },
          py::arg("index"), py::arg("source"), py::arg("example_value"), py::arg("guard_manager_enum"), kChild)
      .def(
          "get_key_value_managers",
          [](const DictGuardManager& self) {
            std::map<Py_ssize_t, std::pair<GuardManager*, GuardManager*>> out;
            for (const auto& [index, entry] : self.entries()) {
              out.emplace(index, std::make_pair(entry.key.get(), entry.value.get()));
            }
            return out;
          },
          kChild);

  // The benchmark's tensor floor (memo_tensor_floor.h), made by
  // RootGuardManager.tensor_floor.
  py::class_<TensorFloor, std::unique_ptr<TensorFloor>>(m, "TensorFloor")
      .def("__len__", &TensorFloor::size)
      .def(
          "time_us",
          [](const TensorFloor& self, int iters) -> py::object {
            // (microseconds per pass, tensors that did not match on the last
            // pass); None when iters < 1.
            if (iters <= 0) {
              return py::none();
            }
            TensorFloorTiming timing = self.time(iters);
            return py::make_tuple(timing.microseconds_per_pass, timing.mismatches);
          },
          py::arg("iters"));

  py::class_<RootGuardManager, GuardManager, std::unique_ptr<RootGuardManager>> root_manager(m, "RootGuardManager");
  root_manager.def(py::init<>())
      .def("check", [](RootGuardManager& self, py::handle f_locals) { return self.check_fast(f_locals.ptr()); })
      .def(
          "tensor_floor",
          [](RootGuardManager& self, py::handle f_locals) -> py::object {
            // Checks `f_locals` once, keeping the tensors of every log that
            // validates (memo_tensor_floor.h); None when the check fails.
            TensorFloorCollector collector;
            bool ok = self.check_fast(f_locals.ptr());
            if (PyErr_Occurred() != nullptr) {
              throw py::error_already_set();
            }
            if (!ok) {
              return py::none();
            }
            return py::cast(std::make_unique<TensorFloor>(collector.take()));
          },
          py::arg("f_locals"),
          py::keep_alive<0, 1>())  // the floor borrows the root's TENSOR_MATCH guards
      .def("check_verbose", [](RootGuardManager& self, py::handle f_locals) { return self.check_verbose(f_locals.ptr()); })
      .def("attach_compile_id", [](RootGuardManager& self, std::string id) { self.compile_id = std::move(id); })
      .def("get_compile_id", [](const RootGuardManager& self) { return self.compile_id; })
      .def("finalize", &RootGuardManager::finalize)
      .def("clone_manager", [](const RootGuardManager& self, py::object keep) {
        if (!PyCallable_Check(keep.ptr())) {
          throw py::type_error("clone_manager needs a callable filter");
        }
        return self.clone_root(keep);
      })
      .def("get_epilogue_lambda_guards", &RootGuardManager::epilogue_guards)
      .def("add_epilogue_lambda_guard", [](RootGuardManager& self, py::object fn, py::object parts, py::object stack) {
        self.add_epilogue_guard(std::make_shared<LAMBDA_GUARD>(fn, parts, stack));
      }, py::arg("guard_check_fn"), py::arg("verbose_code_parts"), py::arg("user_stack") = py::none());
  if constexpr (torch_release::kRootHasLocalState) {
    // The dispatch-key state TENSOR_MATCH guards on the tree apply, as an
    // opaque object (torch's LocalState shows no fields either).
    py::class_<TensorLocalState>(m, "LocalState").def(py::init([] { return TensorLocalState::capture(); }));
    root_manager.def("get_local_state", [](const RootGuardManager& self) { return self.build_local_state; })
        .def("set_local_state", [](RootGuardManager& self, const TensorLocalState& state) { self.build_local_state = state; });
  }
  if constexpr (torch_release::kRootHasCompileOnOneRank) {
    root_manager.def("set_compile_on_one_rank", [](RootGuardManager& self, bool value) { self.compile_on_one_rank = value; });
  }

  // ---- relational guards ----
  m.def("install_no_tensor_aliasing_guard", [](py::list managers, py::list tensor_names, py::object parts, py::object stack) {
    std::vector<GuardManager*> ms = managers_from(managers, "guard_managers");
    if (py::len(tensor_names) != ms.size()) {
      throw py::value_error("install_no_tensor_aliasing_guard needs one tensor name per guard manager");
    }
    install_relation<NO_TENSOR_ALIASING>(ms, std::make_shared<NoTensorAliasing>(ms.size(), CodeParts(parts), stack), {ms.size()});
  });
  m.def("install_object_aliasing_guard", [](GuardManager* x, GuardManager* y, py::object parts, py::object stack) {
    std::vector<GuardManager*> ms{x, y};
    install_relation<OBJECT_ALIASING>(ms, std::make_shared<ObjectAliasing>(2, CodeParts(parts), stack), {2});
  });
  m.def("install_storage_overlapping_guard", [](py::list overlapping, py::list non_overlapping, py::object parts, py::object stack) {
    std::vector<GuardManager*> ms = managers_from(overlapping, "overlapping");
    std::vector<GuardManager*> rest = managers_from(non_overlapping, "non_overlapping");
    size_t n_overlapping = ms.size();
    ms.insert(ms.end(), rest.begin(), rest.end());
    install_relation<STORAGE_OVERLAPPING>(
        ms, std::make_shared<StorageOverlapping>(n_overlapping, rest.size(), CodeParts(parts), stack), {n_overlapping, rest.size()});
  });
  m.def("install_symbolic_shape_guard", [](py::list managers, size_t num_ints, size_t num_floats, uintptr_t fn, py::object keep_alive, py::object parts, py::object stack) {
    std::vector<GuardManager*> ms = managers_from(managers, "guard_managers");
    if (ms.size() != num_ints + num_floats) {
      throw py::value_error("install_symbolic_shape_guard needs one guard manager per int and float input");
    }
    install_relation<SYMBOLIC_SHAPE_GUARD>(
        ms, std::make_shared<SymbolicShapeGuard>(num_ints, num_floats, fn, keep_alive, CodeParts(parts), stack), {ms.size()});
  });

  m.def("profile_guard_manager", [](RootGuardManager& root, py::handle f_locals, int n_iters) {
    if (n_iters <= 0) {
      throw py::value_error("n_iters must be positive");
    }
    auto start = std::chrono::high_resolution_clock::now();
    for (int i = 0; i < n_iters; ++i) {
      root.check_fast(f_locals.ptr());
    }
    std::chrono::duration<double, std::micro> total = std::chrono::high_resolution_clock::now() - start;
    return total.count() / n_iters;
  });

  // The rest of torch._C._dynamo.guards is not guard-tree machinery: the
  // state guards torch's convert_frame and GLOBAL_STATE use, the small id
  // checks of torch's Python guard code, and inductor's runtime helpers.
  // They are torch's own objects (dict_version is the engine's, below).
  py::module_ torch_guards = py::module_::import("torch._C._dynamo.guards");
  for (const char* name :
       {"GlobalStateGuard", "TensorGuards", "check_obj_id", "check_type_id", "assert_size_stride", "assert_size_stride_grouped", "assert_alignment",
        "copy_if_misaligned", "compute_overlapping_tensors", "set_is_in_mode_without_ignore_compile_internals",
        "_empty_strided_cpu", "_empty_strided_cpu_pinned", "_empty_strided_cuda", "_empty_strided_mtia",
        "_empty_strided_xpu", "_reinterpret_tensor", "_torchinductor_get_thp_dtype", "_torchinductor_get_thp_layout",
        "_torchinductor_get_thp_memory_format", "_torchinductor_pyobject_tensor_data_ptr",
        "_torchinductor_thp_device_new", "_torchinductor_thp_variable_wrap", "_torchinductor_thputils_unpack_int"}) {
    if (py::hasattr(torch_guards, name)) {  // assert_size_stride_grouped: torch 2.14 and later
      m.attr(name) = torch_guards.attr(name);
    }
  }

  m.attr("MAX_TREE_DEPTH") = GuardManager::kMaxTreeDepth;

  // Engine objects alive in the process: the lifetime tests compare them
  // before and after compiling and discarding frames.
  m.def("live_object_counts", []() {
    py::dict counts;
    counts["managers"] = GuardManager::live_count();
    counts["leaf_guards"] = LeafGuard::live_count();
    return counts;
  });

  // The dict's version as the engine reads it (python_compat.h): it
  // changes whenever the dict's contents change.
  m.def("dict_version", [](py::handle d) {
    if (!PyDict_Check(d.ptr())) {
      throw py::type_error(std::string("dict_version needs a dict, got ") + Py_TYPE(d.ptr())->tp_name);
    }
    return dict_version(d.ptr());
  });

  // Whether this interpreter gave the engine a dict watcher and a type
  // watcher (3.12+, when an id was free), and how many dicts and types are
  // watched for some memo right now.
  m.def("watchers", []() {
    py::dict out;
    out["dict_watcher"] = dict_watchers_available();
    out["type_watcher"] = type_watchers_available();
    out["watched_dicts"] = watched_dict_count();
    out["watched_types"] = watched_type_count();
    return out;
  });

  // Whether the start-up probe confirmed OrderedDict's relink counter (see
  // odict_state.h): the tests assert it on every supported interpreter.
  m.def("odict_state_readable", &odict_state_readable);

  // What the start-up probe found about objects' inline values (see
  // inline_values.h): the tests assert the policy the interpreter needs.
  m.def("inline_values_policy", []() {
    switch (inline_values_policy()) {
      case InlineValuesPolicy::WritesReported:
        return "writes reported";
      case InlineValuesPolicy::DetachBeforePinning:
        return "detach before pinning";
      case InlineValuesPolicy::SplitDictsUnpinnable:
        return "split dicts unpinnable";
    }
    return "?";
  });

  // The evaluation of every guard kind the builder can add: the source of
  // the coverage table (docs/coverage.md) (test_guard_manager checks the two agree).
  m.def("guard_kinds", []() {
    py::dict kinds;
    for (const char* k : {"TYPE_MATCH", "ID_MATCH", "EQUALS_MATCH", "NONE_MATCH", "NOT_NONE", "TRUE_MATCH", "FALSE_MATCH",
                          "LENGTH_CHECK", "DICT_LENGTH", "TUPLE_ITERATOR_LEN", "FLOAT_IS_NAN", "COMPLEX_IS_NAN",
                          "DEFAULT_DEVICE", "DICT_CONTAINS", "SET_CONTAINS", "DICT_VERSION", "NO_HASATTR",
                          "MAPPING_KEYS_MATCH", "DIMENSION_DYNAMIC_MARKING_GUARD", "TENSOR_MATCH", "NO_TENSOR_ALIASING",
                          "OBJECT_ALIASING", "SYMBOLIC_SHAPE_GUARD", "LAMBDA_GUARD", "NN_MODULE_ATTR_RESOLUTION", "CLASS_ATTR_MATCH", "METACLASS_ATTR_MATCH", "ATTRIBUTE_HOOKS_MATCH", "GETATTR_FALLTHROUGH",
                          "NN_MODULE_HOOKS_EMPTY", "CLASS_ATTR_SHADOWED", "FUNCTION_CODE_MATCH", "ORDERED_DICT_ORDER",
                          "GLOBAL_STATE",
                          "TORCH_FUNCTION_MODE_STACK"}) {
      kinds[k] = "native";
    }
    for (const char* k : {"DUAL_LEVEL_MATCH", "FAKE_SCRIPT_TYPE_MATCH",
                          "DISPATCH_KEY_SET_MATCH", "RANGE_ITERATOR_MATCH", "STORAGE_OVERLAPPING"}) {
      kinds[k] = "python";
    }
    return kinds;
  });

  if (register_root_check_type(m.ptr()) < 0) {
    throw py::error_already_set();
  }
}
