#include "torch/csrc/dynamo/odict_state.h"

#include <array>

#include "torch/csrc/dynamo/py_ref.h"

namespace dynamo_guards {

namespace {

bool readable = false;

// The layout described in odict_state.h, from the offsets the type
// publishes: od_state right before the instance __dict__ slot, which is
// right before the weakref list, which ends the struct.
bool layout_as_expected() {
  const PyTypeObject& t = PyODict_Type;
  Py_ssize_t word = static_cast<Py_ssize_t>(sizeof(void*));
  Py_ssize_t dict_slot = static_cast<Py_ssize_t>(sizeof(PyDictObject)) + 6 * word;
  return sizeof(size_t) == sizeof(void*) && t.tp_dictoffset == dict_slot && t.tp_weaklistoffset == dict_slot + word &&
      t.tp_basicsize == dict_slot + 2 * word;
}

// One change to the probe dict; false on any error.
using Change = bool (*)(PyObject* od, PyObject* a, PyObject* b);

bool counts_as_expected() {
  OwnedRef od(PyObject_CallNoArgs(reinterpret_cast<PyObject*>(&PyODict_Type)));
  OwnedRef a(PyUnicode_FromString("a"));
  OwnedRef b(PyUnicode_FromString("b"));
  if (!od || !a || !b || !PyODict_Check(od.get())) {
    return false;
  }
  struct Step {
    Change change;
    size_t counted;
  };
  const std::array<Step, 5> steps = {{
      {[](PyObject* d, PyObject* x, PyObject*) { return PyODict_SetItem(d, x, Py_None) == 0; }, 1},
      {[](PyObject* d, PyObject*, PyObject* y) { return PyODict_SetItem(d, y, Py_None) == 0; }, 1},
      {[](PyObject* d, PyObject* x, PyObject*) { return PyODict_SetItem(d, x, Py_True) == 0; }, 0},
      {[](PyObject* d, PyObject* x, PyObject*) {
         OwnedRef r(PyObject_CallMethod(d, "move_to_end", "O", x));
         return static_cast<bool>(r);
       },
       2},
      {[](PyObject* d, PyObject*, PyObject* y) { return PyODict_DelItem(d, y) == 0; }, 1},
  }};
  size_t before = odict_state_field(od.get());
  for (const Step& step : steps) {
    if (!step.change(od.get(), a.get(), b.get())) {
      return false;
    }
    size_t after = odict_state_field(od.get());
    if (after - before != step.counted) {
      return false;
    }
    before = after;
  }
  return true;
}

}  // namespace

void probe_odict_state() {
  readable = layout_as_expected() && counts_as_expected();
  PyErr_Clear();
}

bool odict_state_readable() {
  return readable;
}

}  // namespace dynamo_guards
