"""Importing timm and transformers beside a torchvision whose C++ ops
library cannot load (the registries' torchvision for torch 2.13 is a CUDA
build; the 3.11 venv has the CPU wheel)."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pathlib
import sys
from typing import Any

import torch


class ModelUnavailable(Exception):
    """The model cannot be built here (a package is missing)."""


# Schemas of the torchvision ops that torchvision's import registers fake
# kernels for whether or not its C++ library loaded.
_TORCHVISION_OPS_FAKED_AT_IMPORT: dict[str, str] = {
    "nms": "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}


@functools.cache
def declare_torchvision_ops_if_unloadable() -> None:
    """Lets torchvision import when its C++ ops library cannot load.

    The registries' torchvision 0.28 (the release for torch 2.13) is a CUDA
    build: its ``_C`` library does not load against the CPU torch wheel, and
    torchvision's import then fails while registering fake kernels for
    ``nms`` and ``qnms``, which that library would have defined. timm (and
    transformers, where torchvision is installed) import torchvision for
    Python helpers only, and the models benchmarked here call none of its
    ops. So, when the library does not load, this declares those two
    schemas, without kernels (a call raises), before either imports
    torchvision. Where the library loads, it defines them itself and this
    does nothing.
    """
    if "torchvision" in sys.modules:
        return
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return
    try:
        for library in pathlib.Path(spec.submodule_search_locations[0]).glob("_C*.so"):
            torch.ops.load_library(str(library))
        return
    except OSError:
        pass
    for name, schema in _TORCHVISION_OPS_FAKED_AT_IMPORT.items():
        torch.library.define(f"torchvision::{name}", schema)


def import_or_unavailable(module: str) -> Any:
    try:
        declare_torchvision_ops_if_unloadable()  # timm and transformers import it when present
        return importlib.import_module(module)
    except ImportError as e:
        raise ModelUnavailable(f"{module} is not installed ({e})") from e
    except RuntimeError as e:  # e.g. a torchvision built for another torch
        raise ModelUnavailable(f"{module} fails to import ({e})") from e
