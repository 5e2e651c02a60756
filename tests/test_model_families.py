"""One small GluonCV / GluonNLP / plain-symbol model per family against MXNet 1.9.1, through
the C API and through the Python package.

The checkpoints and MXNet's outputs are made by scripts/model_families.py --suite (run by
scripts/run_tests.sh into build/fixtures/families). A model whose manifest entry says
``expect: match`` must load and match MXNet; every model that loads must match (a model may
fail to load for a missing operator, never give other numbers). docs/models.md is the same
check over the whole GluonCV zoo.
"""
import json
import os

import numpy as np
import pytest

from capi import CAPIError
from conftest import ROOT, Case, assert_close

FAMILIES_DIR = os.environ.get('MXLITE_FAMILY_FIXTURES',
                              os.path.join(ROOT, 'build', 'fixtures', 'families'))
RTOL = 1e-4
# The suite's models that mxlite must run (scripts/model_families.py SUITE, expect="match").
EXPECTED_TO_MATCH = ['cifar_resnet20_v1', 'cifar_resnet20_v1_int8', 'mobilenetv3_small', 'se_resnet18_v1', 'resnest14',
                     'hrnet_w18_small_v1_c', 'nasnet_4_1056', 'cifar_resnext29_32x4d',
                     'cifar_wideresnet16_10',
                     'fastscnn_citys', 'fcn_resnet_thin', 'psp_resnet_thin', 'deeplab_resnet_thin',
                     'icnet_resnet_thin', 'simple_pose_resnet18_v1b',
                     'mobile_pose_mobilenetv3_small', 'alpha_pose_thin',
                     'r2plus1d_resnet_thin', 'p3d_resnet_thin', 'i3d_inceptionv1_kinetics400',
                     'slowfast_4x16_thin', 'resnet18_v1b_kinetics400',
                     'rnn_lstm_unrolled', 'rnn_gru_unrolled', 'rnn_gluon_lstm', 'rnn_gluon_gru',
                     'ssd_vgg_atrous_thin', 'center_net_mobilenetv3_small_duc_voc',
                     'center_net_resnet18_v1b_dcnv2_voc', 'ssd_300_mobilenet0.25_voc',
                     'yolo3_mobilenet0.25_voc', 'faster_rcnn_resnet_thin', 'mask_rcnn_resnet_thin',
                     'monodepth2_resnet_thin', 'bert_tiny',
                     'rcnn_proposal_roipooling', 'rcnn_proposal_roialign', 'fpn_roi_levels',
                     'ssd_symbol', 'mobilefacenet', 'arcface_resnet', 'retinaface_heads', 'rnn_fused_lstm',
                     'rnn_fused_gru',
                     'nlp_standard_lstm_lm', 'nlp_awd_lstm_lm', 'nlp_transformer_encoder']
# Those whose files must also match MXNet at batch 2 (Spec.batch: the manifest's "batch" entry
# and NAME-b2-io.npz; the others' inputs are already batches, have the batch on axis 1, or the
# graph takes one image).
NO_BATCH_RUN = ('rnn_lstm_unrolled', 'rnn_gru_unrolled', 'rnn_gluon_lstm', 'rnn_gluon_gru',
                'bert_tiny', 'faster_rcnn_resnet_thin', 'mask_rcnn_resnet_thin',
                'rcnn_proposal_roipooling', 'rcnn_proposal_roialign', 'fpn_roi_levels', 'ssd_symbol',
                'rnn_fused_lstm', 'rnn_fused_gru',
                'nlp_standard_lstm_lm', 'nlp_awd_lstm_lm', 'nlp_transformer_encoder')
EXPECTED_TO_MATCH_AT_BATCH = [name for name in EXPECTED_TO_MATCH if name not in NO_BATCH_RUN]


def load_manifest():
    path = os.path.join(FAMILIES_DIR, 'manifest.json')
    if not os.path.exists(path):
        return {}
    with open(path, encoding='utf-8') as f:
        return json.load(f)['models']


MODELS = load_manifest()


def run(api, name, batch=None):
    entry = MODELS[name]
    case = Case(FAMILIES_DIR, name, entry)
    if batch is None:
        inputs, expected = case.io()
    else:
        data = np.load(case.path('-b%d-io.npz' % batch['n']))
        inputs = {k.split(':', 1)[1]: data[k] for k in data.files if k.startswith('input:')}
        expected = [data['output:%d' % i] for i in range(len(batch['outputs']))]
    return api.predict(case.symbol_json, case.params, inputs, num_outputs=len(expected)), expected


@pytest.mark.parametrize('name', EXPECTED_TO_MATCH)
def test_family_model_matches_mxnet(api, name):
    assert name in MODELS, f'{name} missing from {FAMILIES_DIR}: run scripts/run_tests.sh'
    assert MODELS[name]['status'] == 'exported', MODELS[name].get('error')
    assert MODELS[name]['expect'] == 'match'
    outputs, expected = run(api, name)
    for i, (ours, theirs) in enumerate(zip(outputs, expected)):
        assert_close(ours, theirs, RTOL, f'{name} output {i}')


@pytest.mark.parametrize('name', EXPECTED_TO_MATCH)
def test_family_model_matches_mxnet_through_python(name):
    """The same files through the Python package (mxlite.Predictor, the nanobind module) as a
    user loads them: the symbol text, the params bytes, numpy inputs."""
    import mxlite
    assert name in MODELS, f'{name} missing from {FAMILIES_DIR}: run scripts/run_tests.sh'
    case = Case(FAMILIES_DIR, name, MODELS[name])
    inputs, expected = case.io()
    predictor = mxlite.Predictor(case.symbol_json, case.params,
                                 {k: v.shape for k, v in inputs.items()})
    outputs = predictor.predict(**inputs)
    if len(expected) == 1:  # predict returns a one-output model's array itself
        outputs = [outputs]
    assert len(outputs) == len(expected)
    for i, (ours, theirs) in enumerate(zip(outputs, expected)):
        assert_close(np.asarray(ours), theirs, RTOL, f'{name} output {i} (Python)')


@pytest.mark.parametrize('options', [{'threads': '1'}, {'threads': '2', 'split_batch': '0'},
                                     {'threads': '2', 'split_batch': '0',
                                      'compact_weights': '1'}])
@pytest.mark.parametrize('name', ['simple_pose_resnet18_v1b', 'center_net_resnet18_v1b_dcnv2_voc'])
def test_prepacked_deconvolution_and_deformable_match(api, name, options):
    """Deconvolution and the deformable convolution pack their constant weights once, shared
    by a model's handles, and split the product, the column scatter and the sampling over the
    threads; under compact_weights they pack the weights in each call instead. Each way (two
    threads with the batch kept whole), two handles of one model give MXNet's numbers
    (SimplePose: three 4x4 stride-2 Deconvolutions; CenterNet: three modulated deformable 3x3
    layers, each before a Deconvolution)."""
    case = Case(FAMILIES_DIR, name, MODELS[name])
    inputs, expected = case.io()
    shapes = {key: value.shape for key, value in inputs.items()}
    handles = api.create_with_options(case.symbol_json, case.params, shapes, options,
                                      num_handles=2)
    try:
        for handle in handles:
            for key, value in inputs.items():
                api.set_input(handle, key, value)
            api.forward(handle)
            for i, theirs in enumerate(expected):
                assert_close(api.output(handle, i), theirs, RTOL, f'{name} {options} output {i}')
    finally:
        for handle in handles:
            api.free(handle)


@pytest.mark.parametrize('name', EXPECTED_TO_MATCH_AT_BATCH)
def test_family_model_matches_mxnet_at_batch(api, name):
    assert name in MODELS, f'{name} missing from {FAMILIES_DIR}: run scripts/run_tests.sh'
    batch = MODELS[name].get('batch', {})
    assert batch.get('status') == 'exported', batch.get('error', 'no batch run in the manifest')
    outputs, expected = run(api, name, batch)
    assert expected[0].shape[0] == batch['n'] > 1
    for i, (ours, theirs) in enumerate(zip(outputs, expected)):
        assert_close(ours, theirs, RTOL, f'{name} at batch {batch["n"]}, output {i}')


@pytest.mark.parametrize('name', sorted(n for n, e in MODELS.items() if 'nms' in e))
def test_nms_fixture_is_well_conditioned(name):
    """An R-CNN's outputs hang on its NMS decisions: model_families draws its weights and
    input until, in MXNet's own values, no IoU is within 1e-4 of a box_nms threshold and no
    deciding score gap within 1e-5 (Spec.nms_draw), so rounding cannot flip a decision."""
    for where, nms in (('batch 1', MODELS[name]['nms']),
                       ('batch', MODELS[name].get('batch', {}).get('nms'))):
        assert nms is None or nms['well_conditioned'], \
            f"{name} at {where}: no well-conditioned draw: {nms['margins']}"


def test_suite_lists_what_the_test_expects():
    assert MODELS, f'no manifest in {FAMILIES_DIR}: run scripts/run_tests.sh'
    assert sorted(n for n, e in MODELS.items() if e['expect'] == 'match') == sorted(EXPECTED_TO_MATCH)
    assert sorted(n for n, e in MODELS.items() if e['expect'] == 'match' and 'batch' in e) == \
        sorted(EXPECTED_TO_MATCH_AT_BATCH)


@pytest.mark.parametrize('name', sorted(set(MODELS) - set(EXPECTED_TO_MATCH)))
def test_other_family_models_load_or_match(api, name):
    """The rest of the suite (detection, NLP) may lack operators, but never gives wrong numbers."""
    if MODELS[name]['status'] != 'exported':
        pytest.skip('MXNet did not export it: ' + MODELS[name].get('error', ''))
    try:
        outputs, expected = run(api, name)
    except CAPIError as e:
        message = str(e)
        assert 'not supported by mxlite' in message, message
        pytest.skip(message.splitlines()[0])
    for i, (ours, theirs) in enumerate(zip(outputs, expected)):
        if np.issubdtype(theirs.dtype, np.floating):
            assert_close(ours, theirs, RTOL, f'{name} output {i}')
        else:
            np.testing.assert_array_equal(ours, theirs, f'{name} output {i}')


def model_report():
    """scripts/model_report.py as a module."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        'mxlite_model_report', os.path.join(ROOT, 'scripts', 'model_report.py'))
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    return report


def oracle_python():
    """The MXNet 1.9.1 venv's python (MXLITE_ORACLE_PYTHON, else build/venv-mxnet)."""
    oracle = os.environ.get('MXLITE_ORACLE_PYTHON',
                            os.path.join(ROOT, 'build', 'venv-mxnet', 'bin', 'python'))
    assert os.path.exists(oracle), 'the MXNet oracle venv is missing: run scripts/run_tests.sh'
    return oracle


def test_report_compares_the_tensors_entering_nms():
    """scripts/model_report.py's check for a model whose detections differ: MXNet's values of
    the tensor the suite's SSD gives box_nms (from the oracle venv) against mxlite's."""
    oracle, report = oracle_python(), model_report()
    result = report.decision_check(os.path.join(FAMILIES_DIR, 'ssd_300_mobilenet0.25_voc'),
                                   oracle, 600)
    assert result.get('status') == 'differs after ties', result
    errors = result['decision_inputs']  # box_nms's input, and what its output becomes
    entering = [name for step in result['decision_steps'] for name in step['inputs']]
    assert entering and max(errors[name] for name in entering) <= RTOL, errors


def test_report_record_keeps_earlier_results():
    """scripts/model_report.py --record: a model this run skipped keeps its earlier row, one it
    checked gets the new row, and a run no row refers to any more is dropped."""
    report = model_report()
    row = lambda status, run: {'family': 'f', 'status': status, 'run': run, 'error': '',
                               'input': '', 'missing': []}
    record = {'runs': {'A': {'command': 'a'}, 'old': {'command': 'o'}},
              'models': {'m1': row('matches', 'A'), 'm2': row('skipped', 'A'),
                         'm3': row('export failed', 'old')}}
    merged = report.merge_record(record, {'m1': row('skipped', 'B'), 'm2': row('matches', 'B'),
                                          'm3': row('matches', 'B'),
                                          'm4': row('not checked', 'B')},
                                 'B', {'command': 'b'})
    assert {n: (r['status'], r['run']) for n, r in merged['models'].items()} == {
        'm1': ('matches', 'A'), 'm2': ('matches', 'B'), 'm3': ('matches', 'B'),
        'm4': ('not checked', 'B')}
    assert sorted(merged['runs']) == ['A', 'B']


def test_report_tells_ill_conditioned_models(tmp_path):
    """scripts/model_report.py's float64 check: (x + 1e4) - 1e4 in float32 loses x's low bits
    in MXNet and in mxlite alike, so against MXNet's own float64 outputs it is ill-conditioned
    (MXNet's float32 misses by more than 1e-4, mxlite's no further); x * 2 is exact in
    float32, so it is not."""
    import subprocess
    oracle, report = oracle_python(), model_report()

    def export(name, expression):
        prefix = str(tmp_path / name)
        make = f"""
import numpy as np, mxnet as mx
x = mx.sym.var("data")
y = mx.sym.identity({expression}, name="out")
y.save({prefix!r} + "-symbol.json")
mx.nd.save({prefix!r} + "-0000.params", {{}})
data = np.random.RandomState(0).uniform(0.001, 0.01, (1, 64)).astype(np.float32)
out = y.bind(mx.cpu(), {{"data": mx.nd.array(data)}}).forward()[0].asnumpy()
np.savez({prefix!r} + "-io.npz", **{{"input:data": data, "output:0": out}})
"""
        subprocess.run([oracle, '-c', make], check=True, capture_output=True)
        return prefix

    result = report.conditioning_check(export('cancel', '(x + 1e4) - 1e4'), oracle, 600)
    assert result.get('status') == 'ill-conditioned', result
    assert max(result['float64']['mxnet']) > RTOL
    assert max(result['float64']['mxlite']) <= report.ILL_CONDITIONED_FACTOR * max(
        result['float64']['mxnet'])
    exact = report.conditioning_check(export('double', 'x * 2'), oracle, 600)
    assert 'status' not in exact and max(exact['float64']['mxnet']) == 0.0, exact
