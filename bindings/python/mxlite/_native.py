"""The compiled module, imported with an explanation when it is missing."""
try:
    from . import _core as core
except ImportError as error:  # a pure-Python copy of the package
    raise ImportError(
        'mxlite.Predictor and mxlite.nd need the compiled module mxlite._core, which this '
        'installation lacks (install with `pip install .` on a machine with a C++17 compiler); '
        'mxlite.ctypes_predict works without it over libmxlite') from error

__all__ = ['core']
