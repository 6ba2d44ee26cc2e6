"""Builds dynamo_guards: the Python sources under torch/_dynamo and the C++
engine under torch/csrc/dynamo, compiled by CMake + Ninja into dynamo_guards._C.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        target = Path(self.get_ext_fullpath(ext.name)).resolve()
        # One CMake tree per interpreter (the venvs of several CPythons build
        # from the same checkout, each into its own ABI-tagged _C), and per
        # torch release when tools/each_python.sh names the tree: 2.13 and
        # 2.15 on one interpreter must not share a tree. The library is
        # written inside the tree and copied to where setuptools wants it,
        # so that no two trees write one file (Ninja would take a file the
        # other tree wrote for its own, up-to-date output).
        default_build_dir = ROOT / "build" / f"cmake-{sys.implementation.cache_tag}"
        build_dir = Path(os.environ.get("DYNAMO_GUARDS_BUILD_DIR", default_build_dir))
        build_type = os.environ.get("DYNAMO_GUARDS_BUILD_TYPE", "Release")
        library_dir = build_dir / "lib"
        configure = [
            "cmake",
            "-S", str(ROOT),
            "-B", str(build_dir),
            "-G", "Ninja",
            f"-DCMAKE_BUILD_TYPE={build_type}",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-DDYNAMO_GUARDS_OUTPUT_DIR={library_dir}",
        ]
        if os.environ.get("DYNAMO_GUARDS_SANITIZE"):
            configure.append("-DDYNAMO_GUARDS_SANITIZE=ON")
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build_dir)], check=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(library_dir / target.name, target)


setup(
    packages=["dynamo_guards"],
    package_dir={"dynamo_guards": "torch/_dynamo"},
    ext_modules=[CMakeExtension("dynamo_guards._C")],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
