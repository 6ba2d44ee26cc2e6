#include "torch/csrc/dynamo/watchers.h"

#include <algorithm>
#include <unordered_map>

#include "torch/csrc/dynamo/inline_values.h"
#include "torch/csrc/dynamo/python_compat.h"

namespace dynamo_guards {

#if PY_VERSION_HEX >= 0x030C0000

// Which sets watch which dicts and types. Entries exist only for objects
// that are alive: a dict's DEALLOCATED event and a type's death callback
// remove its entry, so an address found here is the watched object itself.
struct WatchRegistry {
  int dict_watcher = -1;
  int type_watcher = -1;
  std::unordered_map<PyObject*, std::vector<WatchSet*>> dicts;
  struct TypeWatch {
    std::vector<WatchSet*> sets;
    PyObject* death = nullptr;  // new: a weakref to the type, whose callback reports its death
  };
  std::unordered_map<PyTypeObject*, TypeWatch> types;
  // The type each death weakref stands for.
  std::unordered_map<PyObject*, PyTypeObject*> death_refs;
  PyObject* death_callback = nullptr;  // new; lives as long as the process

  static void mark_changed(const std::vector<WatchSet*>& sets) {
    for (WatchSet* set : sets) {
      set->changed_ = true;
    }
  }

  // Every set watching `type` is changed; the type is no longer watched.
  // `unwatch` only while the type is alive.
  void drop_type(std::unordered_map<PyTypeObject*, TypeWatch>::iterator it, bool unwatch) {
    PyTypeObject* type = it->first;
    PyObject* death = it->second.death;
    mark_changed(it->second.sets);
    death_refs.erase(death);
    types.erase(it);
    if (unwatch && PyType_Unwatch(type_watcher, reinterpret_cast<PyObject*>(type)) < 0) {
      PyErr_Clear();
    }
    Py_DECREF(death);  // a weakref's own death calls no callback
  }
};

namespace {

// Never freed: CPython may call the watchers until the interpreter ends,
// after any C++ static would have been destroyed.
WatchRegistry* registry = nullptr;

int on_dict_event(PyDict_WatchEvent, PyObject* dict, PyObject*, PyObject*) {
  auto it = registry->dicts.find(dict);
  if (it == registry->dicts.end()) {
    return 0;  // watched once, by a set that has since let go
  }
  WatchRegistry::mark_changed(it->second);
  // The watch bit stays on the dict (unwatching from inside its own event
  // does not stick): later events on it find no entry here.
  registry->dicts.erase(it);
  return 0;
}

int on_type_modified(PyTypeObject* type) {
  auto it = registry->types.find(type);
  if (it != registry->types.end()) {
    registry->drop_type(it, /*unwatch=*/false);
  }
  return 0;
}

PyObject* on_type_death(PyObject*, PyObject* weakref) {
  auto ref = registry->death_refs.find(weakref);
  if (ref != registry->death_refs.end()) {
    auto it = registry->types.find(ref->second);
    if (it != registry->types.end()) {
      registry->drop_type(it, /*unwatch=*/false);
    }
  }
  Py_RETURN_NONE;
}

PyMethodDef type_death_def = {"_on_watched_type_death", on_type_death, METH_O, nullptr};

}  // namespace

void register_watchers() {
  if (registry != nullptr) {
    return;
  }
  registry = new WatchRegistry;
  registry->dict_watcher = PyDict_AddWatcher(on_dict_event);
  if (registry->dict_watcher < 0) {
    PyErr_Clear();
  }
  registry->death_callback = PyCFunction_New(&type_death_def, nullptr);
  registry->type_watcher = registry->death_callback != nullptr ? PyType_AddWatcher(on_type_modified) : -1;
  if (registry->type_watcher < 0) {
    PyErr_Clear();
  }
}

bool dict_watchers_available() {
  return registry != nullptr && registry->dict_watcher >= 0;
}

bool type_watchers_available() {
  return registry != nullptr && registry->type_watcher >= 0;
}

size_t watched_dict_count() {
  return registry != nullptr ? registry->dicts.size() : 0;
}

size_t watched_type_count() {
  return registry != nullptr ? registry->types.size() : 0;
}

bool WatchSet::watch_dict(PyObject* dict, uint64_t seen_version) {
  if (!dict_watchers_available() || !dict_writes_reported(dict)) {
    return false;
  }
  if (PyDict_Watch(registry->dict_watcher, dict) < 0) {
    PyErr_Clear();
    return false;
  }
  // From here on every change is reported; one made since the read is not.
  if (dict_version(dict) != seen_version) {
    return false;
  }
  registry->dicts[dict].push_back(this);
  dicts_.push_back(dict);
  return true;
}

bool WatchSet::watch_type(PyTypeObject* type, unsigned int seen_tag) {
  if (!type_watchers_available() || seen_tag == 0) {
    return false;
  }
  // The weakref is made before any lookup into the registry: making it can
  // collect garbage, and the callbacks of what dies then edit the registry.
  PyObject* death = nullptr;
  if (registry->types.find(type) == registry->types.end()) {
    death = PyWeakref_NewRef(reinterpret_cast<PyObject*>(type), registry->death_callback);  // new
    if (death == nullptr) {
      PyErr_Clear();
      return false;
    }
  }
  if (PyType_Watch(registry->type_watcher, reinterpret_cast<PyObject*>(type)) < 0) {
    PyErr_Clear();
    Py_XDECREF(death);
    return false;
  }
  // Reported from here on only while the tag is valid: the one read must
  // still be the type's.
  if (type_version_tag(type) != seen_tag) {
    Py_XDECREF(death);
    return false;
  }
  auto [it, inserted] = registry->types.try_emplace(type);
  if (inserted) {
    if (death == nullptr) {
      // The entry that was there went away meanwhile: a set must not hold
      // a type no death callback reports.
      registry->types.erase(it);
      return false;
    }
    it->second.death = death;
    registry->death_refs[death] = type;
  } else {
    Py_XDECREF(death);
  }
  it->second.sets.push_back(this);
  types_.push_back(type);
  return true;
}

void WatchSet::clear() {
  if (registry != nullptr) {
    for (PyObject* dict : dicts_) {
      auto it = registry->dicts.find(dict);
      if (it == registry->dicts.end()) {
        continue;  // an event already removed it (the dict may be dead)
      }
      auto& sets = it->second;
      sets.erase(std::remove(sets.begin(), sets.end(), this), sets.end());
      if (sets.empty()) {
        // Alive (it has an entry) and watched by no set: stop the events.
        registry->dicts.erase(it);
        if (PyDict_Unwatch(registry->dict_watcher, dict) < 0) {
          PyErr_Clear();
        }
      }
    }
    for (PyTypeObject* type : types_) {
      auto it = registry->types.find(type);
      if (it == registry->types.end()) {
        continue;
      }
      auto& sets = it->second.sets;
      sets.erase(std::remove(sets.begin(), sets.end(), this), sets.end());
      if (sets.empty()) {
        registry->drop_type(it, /*unwatch=*/true);
      }
    }
  }
  dicts_.clear();
  types_.clear();
  changed_ = false;
}

#else  // CPython 3.11: no watchers; every memo validates by version.

void register_watchers() {}
bool dict_watchers_available() {
  return false;
}
bool type_watchers_available() {
  return false;
}
size_t watched_dict_count() {
  return 0;
}
size_t watched_type_count() {
  return 0;
}
bool WatchSet::watch_dict(PyObject*, uint64_t) {
  return false;
}
bool WatchSet::watch_type(PyTypeObject*, unsigned int) {
  return false;
}
void WatchSet::clear() {
  changed_ = false;
}

#endif

}  // namespace dynamo_guards
