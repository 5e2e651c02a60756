"""Batch prediction with Ray Data: a callable class for `Dataset.map_batches`.

    import ray
    from mxlite.ray_data import MXLiteBatchPredictor

    ds = ray.data.from_numpy(images)                       # column 'data'
    scores = ds.map_batches(MXLiteBatchPredictor,
                            fn_constructor_kwargs=dict(prefix='resnet18_v1', threads=4),
                            concurrency=8, num_cpus=4, batch_size=64)

Ray creates `concurrency` actors; each loads the checkpoint once, in its
constructor, and predicts every batch it is given. Batches are dicts of numpy
arrays (`batch_format='numpy'`); the outputs come back as numpy columns. This
module does not import ray itself, so `import mxlite` never needs it; install
it with `pip install mxlite[ray]`. docs/batch.md shows use on a cluster.
"""
from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

import numpy as np

from .errors import MXLiteError
from .predictor import Predictor

__all__ = ['MXLiteBatchPredictor']


class MXLiteBatchPredictor:
    """Predicts Ray Data batches with one mxlite.Predictor per actor.

    MXLiteBatchPredictor(prefix, epoch=0, threads=1, input_column='data',
                         input_name=None, output_columns=None, keep_columns=(),
                         outputs=None, options=None)

    prefix, epoch: the checkpoint (prefix-symbol.json, prefix-%04d.params),
        read by the worker, so the path must exist on every node.
    threads: threads of each forward pass; give each actor as many as the
        CPUs it reserves (map_batches' num_cpus), so actors do not contend.
    input_column: the batch column holding the images, one row per sample;
        every row must have the model's sample shape (its input shape without
        the batch dimension).
    input_name: the model input it feeds (default: the model's only required
        input).
    output_columns: a column name per model output (default: the output
        names, or 'output' when the model has one output).
    keep_columns: columns copied unchanged into the result (ids, file names).
    outputs, options: as for mxlite.Predictor.

    A batch of another size than the last (the dataset's final, smaller one)
    rebinds the predictor; the weights are shared, not reloaded.
    """

    def __init__(self, prefix: str | os.PathLike[str], epoch: int = 0,
                 threads: int | None = 1, input_column: str = 'data',
                 input_name: str | None = None,
                 output_columns: Sequence[str] | None = None,
                 keep_columns: Sequence[str] = (),
                 outputs: str | int | Sequence[str | int] | None = None,
                 options: Mapping[str, str | int | bool] | None = None) -> None:
        self._predictor = Predictor.load(prefix, epoch, outputs=outputs, threads=threads,
                                         options=options)
        required = self._predictor.required_inputs
        if input_name is None:
            if len(required) != 1:
                raise MXLiteError(f'{os.fspath(prefix)}: the model has inputs {required}; '
                                  'say which one the images feed with input_name=')
            input_name = required[0]
        elif input_name not in self._predictor.input_names:
            raise MXLiteError(f'{os.fspath(prefix)}: no input {input_name!r}; the model\'s '
                              f'inputs are {self._predictor.input_names}')
        others = [name for name in required if name != input_name]
        if others:
            raise MXLiteError(f'{os.fspath(prefix)}: the model also needs inputs {others}; '
                              'MXLiteBatchPredictor feeds one')
        self._input_name = input_name
        self._input_column = input_column
        self._keep_columns = list(keep_columns)
        names = self._predictor.output_names
        if output_columns is None:
            output_columns = ['output'] if len(names) == 1 else list(names)
        elif len(output_columns) != len(names):
            raise MXLiteError(f'output_columns names {len(output_columns)} columns, but the '
                              f'model has {len(names)} outputs: {names}')
        self._output_columns = list(output_columns)
        # The shape of one sample, known once the symbol gives a full input shape.
        shapes = self._input_shapes()
        self._sample_shape = tuple(shapes[input_name][1:]) if input_name in shapes else None

    def _input_shapes(self) -> dict[str, tuple[int, ...]]:
        try:
            return self._predictor.input_shapes
        except MXLiteError:  # not bound yet: no shapes given or hinted
            return {}

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        """Predicts one batch (a dict of numpy columns): returns the
        keep_columns, then a column per output, one row per sample."""
        if self._input_column not in batch:
            raise MXLiteError(f'the batch has no column {self._input_column!r} (its columns: '
                              f'{sorted(batch)}); set input_column=')
        missing = [name for name in self._keep_columns if name not in batch]
        if missing:
            raise MXLiteError(f'keep_columns names {missing}, which the batch lacks '
                              f'(its columns: {sorted(batch)})')
        images = _stack(batch[self._input_column], self._input_column)
        if images.ndim == 0 or images.shape[0] == 0:
            raise MXLiteError(f'column {self._input_column!r} holds no samples')
        if self._sample_shape is not None and images.shape[1:] != self._sample_shape:
            raise MXLiteError(f'column {self._input_column!r} holds samples of shape '
                              f'{images.shape[1:]}; the model\'s input '
                              f'{self._input_name!r} takes {self._sample_shape}')
        # An unbound predictor binds to the first batch; a later batch of
        # another size (the last one) rebinds it.
        shape = self._input_shapes().get(self._input_name)
        if shape is not None and shape != images.shape:
            self._predictor.reshape({self._input_name: images.shape})
        self._sample_shape = images.shape[1:]
        result = self._predictor.predict(**{self._input_name: images})
        arrays = result if isinstance(result, list) else [result]
        columns = {name: batch[name] for name in self._keep_columns}
        columns.update(zip(self._output_columns, arrays))
        return columns


def _stack(column: Any, name: str) -> np.ndarray:
    """The column as one numpy array: Ray hands tensor columns over as arrays,
    and ragged ones as object arrays of arrays, which are stacked here."""
    array = np.asarray(column)
    if array.dtype == object:
        try:
            array = np.stack([np.asarray(row) for row in array])
        except ValueError:
            shapes = sorted({np.shape(row) for row in array})
            raise MXLiteError(f'column {name!r} holds samples of different shapes: '
                              f'{shapes}') from None
    return array
