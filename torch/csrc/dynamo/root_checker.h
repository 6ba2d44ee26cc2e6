// RootCheck: the callable that torch's own RootGuardManager runs as its one
// lambda guard. It enters our engine through vectorcall, so the delegation
// costs one C call and no argument conversion.
#pragma once

#include <Python.h>

namespace dynamo_guards {

// Registers dynamo_guards._C.RootCheck on `module`; returns -1 on error.
int register_root_check_type(PyObject* module);

}  // namespace dynamo_guards
