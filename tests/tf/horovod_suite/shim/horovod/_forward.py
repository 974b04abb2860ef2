"""Module-level __getattr__ that forwards every name a shim module does not
define to the ringscope module it stands for."""

import importlib


def forwarder(target):
    module = importlib.import_module(target)

    def __getattr__(name):
        return getattr(module, name)

    return __getattr__
