"""What a graph holds and costs: the data behind Predictor.summary() and `mxlite inspect`.

For each operator: its output shape, the parameters it reads (count and
bytes) and its multiply-accumulates (MACs). MACs are counted for the
operators that dominate inference time, from the shapes alone:

  Convolution     output elements x (input channels / groups) x kernel size
                  = prod(output shape) x prod(weight shape[1:])
  Deconvolution   input elements x (filters / groups) x kernel size
                  = prod(data shape) x prod(weight shape[1:])
  FullyConnected  output elements x input features
                  = prod(output shape) x weight shape[1]

Bias additions, BatchNorm, activations, pooling and element-wise operators
are not counted (they are cheap next to these and memory-bound). FLOPs are
reported as 2 x MACs, the usual convention.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .predictor import Predictor

__all__ = ['NodeReport', 'GraphReport', 'analyze', 'format_report', 'MACS_NOTE']

MACS_NOTE = ('MACs: multiply-accumulates of Convolution, Deconvolution and FullyConnected '
             '(bias adds and other operators not counted); FLOPs = 2 x MACs')


def _prod(dims):
    result = 1
    for d in dims:
        result *= int(d)
    return result


@dataclass
class NodeReport:
    """One operator of the graph."""
    index: int
    name: str
    op: str
    output_shape: tuple = None    # first output; None while input shapes are unknown
    params: int = 0               # elements of the parameters it reads
    param_bytes: int = 0
    macs: int = None              # None: not counted for this operator (or shapes unknown)


@dataclass
class GraphReport:
    """A whole graph: its operators and the totals."""
    inputs: dict                  # name -> shape (None if unknown)
    outputs: list                 # (name, shape or None)
    nodes: list = field(default_factory=list)   # NodeReport per operator, graph order
    num_variables: int = 0
    total_params: int = 0         # every parameter once
    total_param_bytes: int = 0
    total_macs: int = 0
    ops: dict = field(default_factory=dict)      # op name -> count
    memory: dict = None           # planned intermediate bytes of the graph the predictor
                                  # runs, when bound; 'graph' says which ('fused' or
                                  # 'as written', with MXLITE_GRAPH_OPT=0)
    memory_as_written: dict = None   # planned_bytes and naive_bytes of the graph as
                                     # written (`mxlite plan` without --fused), if known

    @property
    def total_flops(self):
        return 2 * self.total_macs

    def to_dict(self):
        """A JSON-ready dict."""
        return {
            'inputs': {k: list(v) if v is not None else None for k, v in self.inputs.items()},
            'outputs': [{'name': n, 'shape': list(s) if s is not None else None}
                        for n, s in self.outputs],
            'num_operators': len(self.nodes), 'num_variables': self.num_variables,
            'ops': self.ops,
            'params': self.total_params, 'param_bytes': self.total_param_bytes,
            'macs': self.total_macs, 'flops': self.total_flops, 'macs_counted': MACS_NOTE,
            'memory': self.memory, 'memory_as_written': self.memory_as_written,
            'nodes': [{'index': n.index, 'name': n.name, 'op': n.op,
                       'output_shape': list(n.output_shape) if n.output_shape else None,
                       'params': n.params, 'param_bytes': n.param_bytes, 'macs': n.macs}
                      for n in self.nodes],
        }


def _macs(op, output_shape, input_shapes):
    """MACs of one operator from its shapes, or None when not counted."""
    if output_shape is None or any(s is None for s in input_shapes):
        return None
    if op in ('Convolution', 'Convolution_v1') and len(input_shapes) >= 2:
        return _prod(output_shape) * _prod(input_shapes[1][1:])
    if op == 'Deconvolution' and len(input_shapes) >= 2:
        return _prod(input_shapes[0]) * _prod(input_shapes[1][1:])
    if op == 'FullyConnected' and len(input_shapes) >= 2:
        return _prod(output_shape) * int(input_shapes[1][1])
    return None


def analyze(predictor: Predictor) -> GraphReport:
    """A GraphReport of an mxlite.Predictor (its selected outputs' graph)."""
    core = predictor._core
    nodes = core.nodes()
    shape_of = {}   # entry name -> shape
    param_of = {}   # variable name -> node dict, for parameters
    for node in nodes:
        for name, shape in zip(node['outputs'], node['output_shapes']):
            shape_of[name] = tuple(shape) if shape is not None else None
        if node['is_param']:
            param_of[node['name']] = node
    known = core.input_shapes
    report = GraphReport(
        inputs={name: tuple(known[name]) if name in known else None
                for name in core.input_names},
        outputs=[(name, shape_of.get(name)) for name in core.output_names])
    for node in nodes:
        if node['op'] == 'null':
            report.num_variables += 1
            if node['is_param']:
                report.total_params += _prod(node['param_shape'])
                report.total_param_bytes += node['param_bytes']
            continue
        params = [param_of[name] for name in node['inputs'] if name in param_of]
        output_shape = shape_of.get(node['outputs'][0])
        macs = _macs(node['op'], output_shape, [shape_of.get(name) for name in node['inputs']])
        report.nodes.append(NodeReport(
            index=len(report.nodes), name=node['name'], op=node['op'], output_shape=output_shape,
            params=sum(_prod(p['param_shape']) for p in params),
            param_bytes=sum(p['param_bytes'] for p in params), macs=macs))
        report.ops[node['op']] = report.ops.get(node['op'], 0) + 1
        report.total_macs += macs or 0
    if core.is_bound:
        # The executor fuses operators unless MXLITE_GRAPH_OPT=0 (README,
        # "Environment variables"): the plan is the one of the graph it runs.
        fused = os.environ.get('MXLITE_GRAPH_OPT') != '0'
        report.memory = {**core.memory_stats(), 'graph': 'fused' if fused else 'as written'}
    return report


def _count(value):
    """1234567 -> '1.23 M'."""
    for unit, size in (('G', 1e9), ('M', 1e6), ('k', 1e3)):
        if value >= size:
            return f'{value / size:.3g} {unit}'
    return str(value)


def _bytes(value):
    for unit, size in (('GiB', 1 << 30), ('MiB', 1 << 20), ('KiB', 1 << 10)):
        if value >= size:
            return f'{value / size:.3g} {unit}'
    return f'{value} B'


def _mib(value):
    """Bytes in MiB with two decimals, as `mxlite plan` prints them."""
    return f'{value / 2**20:.2f} MiB'


def _shape(shape):
    return '?' if shape is None else '(' + ','.join(str(d) for d in shape) + ')'


def format_report(report: GraphReport, max_rows: int | None = None) -> str:
    """The report as a text table; max_rows elides the middle of long graphs."""
    header = ('#', 'name', 'op', 'output shape', 'params', 'MACs')
    rows = [(str(n.index), n.name, n.op, _shape(n.output_shape),
             f'{n.params:,}' if n.params else '-', f'{n.macs:,}' if n.macs is not None else '-')
            for n in report.nodes]
    if max_rows is not None and len(rows) > max_rows:
        half = max_rows // 2
        rows = rows[:half] + [('...',) + ('',) * 5] + rows[-half:]
    widths = [max(len(row[i]) for row in [header] + rows) for i in range(len(header))]
    right = {0, 4, 5}

    def line(row):
        return '  '.join(cell.rjust(w) if i in right else cell.ljust(w)
                         for i, (cell, w) in enumerate(zip(row, widths))).rstrip()

    inputs = ', '.join(f'{name} {_shape(shape)}' for name, shape in report.inputs.items())
    outputs = ', '.join(f'{name} {_shape(shape)}' for name, shape in report.outputs)
    ops = ', '.join(f'{op} x{count}' for op, count in sorted(report.ops.items(),
                                                             key=lambda item: -item[1]))
    text = [f'inputs:  {inputs or "none"}', f'outputs: {outputs}',
            f'{len(report.nodes)} operators ({ops}), {report.num_variables} variables', '',
            line(header), line(tuple('-' * w for w in widths))]
    text += [line(row) for row in rows]
    text.append('')
    text.append(f'parameters: {report.total_params:,} ({_bytes(report.total_param_bytes)})')
    if any(shape is None for shape in report.inputs.values()):
        text.append('MACs: unknown until the input shapes are given')
    else:
        text.append(f'MACs: {report.total_macs:,} ({_count(report.total_macs)}), '
                    f'FLOPs: {_count(report.total_flops)}')
    text.append(f'  ({MACS_NOTE})')
    if report.memory:
        graph = report.memory.get('graph', 'fused')
        name = 'fused graph' if graph == 'fused' else 'graph as written'
        text.append(f'intermediate memory, {name}'
                    f' (what the predictor allocates): {_mib(report.memory["arena_bytes"])} '
                    f'planned ({_mib(report.memory["unshared_bytes"])} without sharing)')
        if 'prepared_bytes' in report.memory:
            text.append(f'prepared weights (packed and transformed copies the kernels read; '
                        f'shared by predictors of one model): '
                        f'{_mib(report.memory["prepared_bytes"])}, parameters '
                        f'{_mib(report.memory["param_bytes"])}, operator scratch '
                        f'{_mib(report.memory["workspace_bytes"])}')
        if report.memory_as_written and graph == 'fused':
            written = report.memory_as_written
            text.append(f'intermediate memory, graph as written (`mxlite plan` without '
                        f'--fused): {_mib(written["planned_bytes"])} planned '
                        f'({_mib(written["naive_bytes"])} without sharing)')
    return '\n'.join(text)
