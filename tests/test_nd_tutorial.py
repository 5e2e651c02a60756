"""MXNet's NDArray tutorial, run with `import mxlite as mx`, against MXNet 1.9.1.

Each snippet below is the tutorial's code (MXNet 1.x docs, "NDArray - Imperative
tensor operations on CPU/GPU", plus the read/write dependency example of the
architecture notes). It runs once here with mx = mxlite and once in the oracle
venv with mx = mxnet; what it prints must be identical, and the files it saves
must be byte for byte the same.
"""
import contextlib
import io
import json
import os

import numpy as np
import pytest

import mxlite
from test_python_nd import oracle

SNIPPETS = {
    'create': '''
a = mx.nd.array([1,2,3])
b = mx.nd.array([[1,2,3], [2,3,4]])
print(a.shape, b.shape, a.size, b.ndim)
print(a.dtype, b.dtype)
c = np.arange(15).reshape(3,5)
a = mx.nd.array(c)
print(a.shape)
a = mx.nd.array([1,2,3], dtype=np.int32)
print(a.dtype)
print(a)
a = mx.nd.zeros((2,3))
b = mx.nd.ones((2,3))
c = mx.nd.full((2,3), 7)
d = mx.nd.empty((2,3))
print(a.asnumpy(), b.asnumpy(), c.asnumpy(), d.shape)
b = mx.nd.arange(18).reshape((3,2,3))
print(b)
print(mx.nd.arange(2, 9, 2, dtype='int32'))
''',
    'operations': '''
a = mx.nd.ones((2,3))
b = mx.nd.ones((2,3))
c = a + b
d = - c
e = mx.nd.sin(c**2).T
f = mx.nd.maximum(a, c)
print(f.asnumpy())
print(d)
print(e)
a = mx.nd.arange(4).reshape((2,2))
b = a * a
c = mx.nd.dot(a,a)
print("b: %s, \\n c: %s" % (b.asnumpy(), c.asnumpy()))
a = mx.nd.ones((2,2))
b = mx.nd.ones(a.shape)
b += a
print(b.asnumpy())
x = mx.nd.array([[1, 2], [3, 4]])
print(x / 2, 1 / x, x ** 2, 2 ** x, x - 1, 5 - x, x % 3)
print(x > 2, x <= 2, x == 3, 2 < x)
x *= 3
x -= 1
x /= 2
print(x)
print(mx.nd.exp(x), mx.nd.sqrt(x), mx.nd.relu(x - 3))
print(mx.nd.dot(x, x, transpose_a=True), mx.nd.dot(x, x, transpose_b=True))
''',
    'indexing': '''
a = mx.nd.array(np.arange(6).reshape(3,2))
a[1:2] = 1
print(a[:].asnumpy())
print(a[1:].asnumpy())
d = mx.nd.slice_axis(a, axis=1, begin=1, end=2)
print(d)
print(a[1], a[-1], a[0:2, 1], a[:, 0], a[2, 1])
a[0] = mx.nd.array([7, 8])
a[:] = a * 2
a[2:3] = np.array([[4, 5]])
print(a)
b = mx.nd.zeros((2, 3))
b[:] = 2
b[1, 1:3] = 9
print(b)
''',
    'shapes': '''
a = mx.nd.array(np.arange(24))
b = a.reshape((2,3,4))
print(b.asnumpy())
b[0][0][0] = -1
print(a[0].asnumpy())
print(a.reshape((-1, 6)).shape, b.reshape((0, -1)).shape, b.reshape(4, 6).shape)
a = mx.nd.ones((2,3))
b = mx.nd.ones((2,3))*2
c = mx.nd.concat(a,b)
print(c.asnumpy())
print(mx.nd.concat(a, b, dim=0).shape, mx.nd.transpose(c).shape, c.T.shape)
''',
    'reduce': '''
a = mx.nd.ones((2,3))
b = mx.nd.sum(a)
print(b.asnumpy())
c = mx.nd.sum_axis(a, axis=1)
print(c.asnumpy())
x = mx.nd.arange(12).reshape((3, 4))
print(mx.nd.sum(x, axis=0), mx.nd.sum(x, axis=1, keepdims=True))
print(mx.nd.max(x, axis=1), mx.nd.min(x), mx.nd.mean(x, axis=0), mx.nd.argmax(x, axis=1))
print(x.sum(axis=1), x.max(), round(float(mx.nd.norm(x).asscalar()), 4))
''',
    'broadcast': '''
a = mx.nd.array(np.arange(6).reshape(6,1))
b = a.broadcast_to((6,4))
print(b.asnumpy())
c = a.reshape((2,1,1,3))
d = c.broadcast_to((2,2,2,3))
print(d.asnumpy())
a = mx.nd.ones((3,2))
b = mx.nd.ones((1,2))
c = a + b
print(c.asnumpy())
print(mx.nd.arange(3).reshape((3, 1)) * mx.nd.arange(4))
''',
    'copies': '''
a = mx.nd.ones((2,2))
b = a
print(b is a)
b = a.copy()
print(b is a)
b = mx.nd.ones(a.shape)
c = b
c[:] = a
d = b
a.copyto(d)
print(c is b, d is b)
''',
    'context': '''
a = mx.nd.ones((2,3), mx.cpu())
b = mx.nd.ones((2,3), ctx=mx.cpu(0))
print(a.context, b.context, a.context == b.context)
c = a.copyto(mx.cpu())
print(c)
d = b.as_in_context(mx.cpu())
print(d is b)
print(mx.nd.zeros((1, 2), ctx=mx.cpu(0)).as_in_context(mx.cpu(0)).context)
''',
    'serialize': '''
import os
import pickle as pkl
a = mx.nd.ones((2, 3)) * 2
data = pkl.dumps(a)
b = pkl.loads(data)
print(b.asnumpy())
a = mx.nd.ones((2,3))*2
b = mx.nd.ones((2,3))*3
mx.nd.save(os.path.join(tmp, 'mydata.bin'), [a, b])
c = mx.nd.load(os.path.join(tmp, 'mydata.bin'))
print(c)
mx.nd.save(os.path.join(tmp, 'mydict.bin'), {'a':a, 'b':b})
c = mx.nd.load(os.path.join(tmp, 'mydict.bin'))
print(c)
print(mx.nd.array([3, 4], dtype='int64').asscalar if False else mx.nd.array([7]).asscalar())
''',
    'lazy': '''
def do(x, n):
    """push computation into the backend engine"""
    return [mx.nd.dot(x,x) for i in range(n)]
def wait(x):
    """wait until all results are available"""
    for y in x:
        y.wait_to_read()
a = mx.nd.ones((200,200))
b = do(a, 20)
wait(b)
print(b[0].asnumpy()[0, 0], len(b))
# Read and write dependencies: each operation sees exactly the writes pushed before it.
a = mx.nd.ones((2, 2))
b = a * 2
a[:] = 5
c = a + b
a += 1
d = mx.nd.dot(a, c)
a[:] = 0
mx.nd.waitall()
print(b.asnumpy(), c.asnumpy(), d.asnumpy(), a.asnumpy())
''',
}

ORACLE_RUNNER = '''
import contextlib, io, json, os, sys
import numpy as np
import mxnet as mx
snippets = json.loads(open(sys.argv[1]).read())
printed = {}
for name, code in snippets.items():
    tmp = os.path.join(sys.argv[2], name)
    os.makedirs(tmp)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, {'mx': mx, 'np': np, 'tmp': tmp})
    printed[name] = out.getvalue()
json.dump(printed, open(sys.argv[3], 'w'))
'''


@pytest.fixture(scope='module')
def mxnet_run(tmp_path_factory):
    """What each snippet prints under MXNet 1.9.1, and the folder its files went to."""
    folder = tmp_path_factory.mktemp('mxnet_tutorial')
    (folder / 'snippets.json').write_text(json.dumps(SNIPPETS))
    oracle(ORACLE_RUNNER, folder / 'snippets.json', folder, folder / 'printed.json')
    return json.loads((folder / 'printed.json').read_text()), folder


@pytest.mark.parametrize('name', sorted(SNIPPETS))
def test_tutorial_prints_what_mxnet_prints(name, mxnet_run, tmp_path):
    printed, mxnet_folder = mxnet_run
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(SNIPPETS[name], {'mx': mxlite, 'np': np, 'tmp': str(tmp_path)})
    assert out.getvalue() == printed[name]
    for saved in sorted(os.listdir(tmp_path)):
        with open(os.path.join(mxnet_folder, name, saved), 'rb') as f:
            assert (tmp_path / saved).read_bytes() == f.read(), f'{saved} differs from MXNet\'s'
