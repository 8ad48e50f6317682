"""KJIT_TRITON in a process's environment, read at its start by the
kjit-triton.pth file the package installs (no code change in the process):

  KJIT_TRITON=compile  Triton's cache manager and remote compile (kjit.triton.install(compile=True))
  KJIT_TRITON=cache    the cache manager alone (as TRITON_CACHE_MANAGER=kjit.triton:KjitCacheManager)

Nothing is imported at start but this module: the cache manager is named in
TRITON_CACHE_MANAGER, which Triton reads when it needs one, and remote
compile is put in place right after the process imports triton.
"""

import importlib.abc
import importlib.machinery
import logging
import os
import sys

_MODES = ("compile", "cache")


class _AfterTritonImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for the module `triton` it hands back the spec
    the other finders give, with a loader that installs remote compile once
    Triton has been executed."""

    def find_spec(self, name, path=None, target=None):
        if name != "triton":
            return None
        sys.meta_path.remove(self)  # once, and without finding itself
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        original = spec.loader.exec_module

        def exec_module(module):
            original(module)
            try:
                from kjit import _triton_remote  # noqa: PLC0415
                _triton_remote.install()
            except Exception as error:  # noqa: BLE001  (Triton works as it would without kjit)
                logging.getLogger("kjit.triton").warning("kjit: KJIT_TRITON=compile not in force: %s", error)

        spec.loader.exec_module = exec_module
        return spec


def start(mode: str) -> None:
    if mode not in _MODES:
        logging.getLogger("kjit.triton").warning("kjit: KJIT_TRITON=%s is none of %s; ignored", mode, ", ".join(_MODES))
        return
    os.environ.setdefault("TRITON_CACHE_MANAGER", "kjit.triton:KjitCacheManager")
    if mode == "compile":
        if "triton" in sys.modules:
            from kjit import _triton_remote  # noqa: PLC0415
            _triton_remote.install()
        else:
            sys.meta_path.insert(0, _AfterTritonImport())


start(os.environ.get("KJIT_TRITON", ""))
