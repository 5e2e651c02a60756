"""The installed package is typed for its users: `mypy --strict` accepts a
script that uses the README's API and sees each deliberate mistake in
another (an unknown method, an output used as an array without checking
that it is not a list, wrong argument types, a missing argument).

mxlite/__init__.py imports its public names lazily (module __getattr__),
which a type checker cannot follow: it imports them under TYPE_CHECKING, so
mxlite.Predictor is the class, not Any. py.typed and _core.pyi ship in the
package. The test needs mypy (run_tests.sh installs it).
"""
import importlib.util
import re
import subprocess
import sys

import pytest

GOOD = '''
import numpy as np
import numpy.typing as npt
import mxlite
import mxlite as mx


def top5(prefix: str) -> list[int]:
    pred = mxlite.Predictor.load(prefix, input_shapes={'data': (1, 3, 224, 224)})
    image = np.random.rand(1, 3, 224, 224).astype(np.float32)
    scores = pred(data=image)                  # an array, or a list for several outputs
    assert isinstance(scores, np.ndarray)
    names: list[str] = pred.output_names
    shapes: list[tuple[int, ...]] = pred.output_shapes
    inputs: dict[str, tuple[int, ...]] = pred.input_shapes
    pred.reshape(data=(8, 3, 224, 224))
    features: mxlite.Predictor = pred.with_outputs(pred.get_internals()[-1])
    table: str = pred.summary()
    order: npt.NDArray[np.intp] = np.argsort(scores[0])[::-1][:5]
    return [int(i) for i in order]


def from_checkpoint(prefix: str) -> mxlite.Predictor:
    sym, arg_params, aux_params = mx.model.load_checkpoint(prefix, 0)
    names: list[str] = sym.list_outputs() + sym.list_arguments()
    weights: dict[str, mx.nd.NDArray] = {**arg_params, **aux_params}
    return mx.Predictor(sym.get_internals()[names[0]], weights, threads=2)


params = mxlite.nd.load('resnet18_v1-0000.params')
mxlite.nd.save('copy.params', params)
library: str = mxlite.lib_path()
'''

# Each mistake on its own line, with the error code mypy must give there.
BAD = [
    ('pred.no_such_method()', 'attr-defined'),
    ('print(pred(data=image).shape)', 'union-attr'),
    ("mxlite.Predictor.load('m', epoch='0')", 'arg-type'),
    ('count: int = pred.output_names', 'assignment'),
    ("pred.reshape(data='1,3,224,224')", 'arg-type'),
    ('mx.model.load_checkpoint(prefix)', 'call-arg'),
    ('sym.list_outputs() + 1', 'operator'),
]
BAD_HEADER = '''
import numpy as np
import mxlite
import mxlite as mx

prefix = 'resnet18_v1'
pred = mxlite.Predictor.load(prefix)
image = np.zeros((1, 3, 224, 224), np.float32)
sym = mx.sym.load('resnet18_v1-symbol.json')
'''


def mypy(tmp_path, name, text):
    if not importlib.util.find_spec('mypy'):
        pytest.skip('mypy is not installed in this environment (run_tests.sh installs it)')
    (tmp_path / name).write_text(text)
    # Away from the source tree, so that the installed package is checked.
    return subprocess.run([sys.executable, '-m', 'mypy', '--strict', '--no-incremental',
                           '--show-error-codes', name], capture_output=True, text=True,
                          cwd=tmp_path)


def test_mypy_strict_accepts_the_readme_api(tmp_path):
    result = mypy(tmp_path, 'good.py', GOOD)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_reports_each_mistake(tmp_path):
    lines = BAD_HEADER.count('\n') + 1
    text = BAD_HEADER + ''.join(f'{line}\n' for line, _ in BAD)
    result = mypy(tmp_path, 'bad.py', text)
    assert result.returncode == 1, result.stdout + result.stderr
    found = re.findall(r'^bad\.py:(\d+): error: .*\[([a-z-]+)\]$', result.stdout, re.M)
    expected = [(str(lines + i), code) for i, (_, code) in enumerate(BAD)]
    assert sorted(set(found)) == sorted(expected), result.stdout
