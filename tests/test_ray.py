"""mxlite.ray_data.MXLiteBatchPredictor on a local Ray instance: thousands of
images through Ray Data's map_batches give the single-process outputs."""
import os

import numpy as np
import pytest

import mxlite
from mxlite.errors import MXLiteError
from mxlite.ray_data import MXLiteBatchPredictor

ray = pytest.importorskip('ray')

DIGITS = os.path.join(os.path.dirname(mxlite.__file__), 'demo', 'digits')
IMAGES = 3000
BATCH = 128  # 3000 = 23 * 128 + 56: the last batch is smaller


def _assert_close(actual, expected):
    # The batch size picks the kernels' blocking, so a row's sums may be added
    # in another order than in one pass over all images: equal to float32
    # rounding of the largest score, not bit for bit.
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-6 * np.abs(expected).max())


def _images(count):
    rng = np.random.default_rng(35)
    return rng.uniform(0, 1, size=(count, 1, 8, 8)).astype(np.float32)


@pytest.fixture(scope='module')
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False, ignore_reinit_error=True)
    yield
    ray.shutdown()


def test_map_batches_matches_single_process(local_ray):
    images = _images(IMAGES)
    ids = np.arange(IMAGES, dtype=np.int64)
    single = mxlite.Predictor.load(DIGITS, threads=1)(data=images)

    dataset = ray.data.from_items([{'id': int(i), 'image': images[i]} for i in ids])
    predicted = dataset.map_batches(
        MXLiteBatchPredictor,
        fn_constructor_kwargs=dict(prefix=DIGITS, epoch=0, threads=1, input_column='image',
                                   output_columns=['scores'], keep_columns=['id']),
        concurrency=2, num_cpus=1, batch_size=BATCH, batch_format='numpy')
    rows = predicted.take_all()

    assert len(rows) == IMAGES
    order = np.argsort([row['id'] for row in rows])
    scores = np.stack([rows[i]['scores'] for i in order])
    assert [rows[i]['id'] for i in order] == list(ids)
    _assert_close(scores, single)


def test_last_smaller_batch_rebinds():
    images = _images(10)
    predictor = MXLiteBatchPredictor(DIGITS, threads=1)
    single = mxlite.Predictor.load(DIGITS, threads=1)(data=images)
    first = predictor({'data': images[:8]})['output']
    last = predictor({'data': images[8:]})['output']
    _assert_close(np.concatenate([first, last]), single)


def test_clear_errors():
    predictor = MXLiteBatchPredictor(DIGITS, threads=1, keep_columns=['id'])
    images = _images(4)
    with pytest.raises(MXLiteError, match="no column 'data'"):
        predictor({'pixels': images, 'id': np.arange(4)})
    with pytest.raises(MXLiteError, match=r"keep_columns names \['id'\]"):
        predictor({'data': images})
    predictor({'data': images, 'id': np.arange(4)})
    with pytest.raises(MXLiteError, match=r'samples of shape \(1, 9, 9\).*takes \(1, 8, 8\)'):
        predictor({'data': np.zeros((4, 1, 9, 9), np.float32), 'id': np.arange(4)})
    with pytest.raises(MXLiteError, match='output_columns names 2 columns'):
        MXLiteBatchPredictor(DIGITS, output_columns=['a', 'b'])
    with pytest.raises(MXLiteError, match="no input 'pixels'"):
        MXLiteBatchPredictor(DIGITS, input_name='pixels')


def test_import_mxlite_needs_no_ray():
    import subprocess
    import sys
    code = ('import sys, mxlite, mxlite.ray_data; '
            'assert "ray" not in sys.modules, "mxlite imported ray"')
    subprocess.run([sys.executable, '-c', code], check=True)
