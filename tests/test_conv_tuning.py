"""conv_tuning (predict/operators/conv_tuning.h): a timed choice of convolution algorithm per
layer, kept in a cache file per processor model. Whatever it chooses must keep MXNet's numbers;
the file it writes must be read back; a damaged file must be ignored line by line, never
trusted and never a crash; a cache that cannot be written is an error naming it."""
import os
import re

import numpy as np
import pytest

from capi import CAPIError
from conftest import ZOO_DIR, load_cases

TAG = 'mxlite-conv-tuning-1'


def zoo_case(name):
    cases = {case.name: case for case in load_cases(ZOO_DIR)}
    assert name in cases, f'{name} missing from {ZOO_DIR}: run scripts/run_tests.sh'
    return cases[name]


def predict(api, case, options):
    inputs, expected = case.io()
    shapes = {name: value.shape for name, value in inputs.items()}
    [handle] = api.create_with_options(case.symbol_json, case.params, shapes,
                                       dict(options, threads=1))
    try:
        for name, value in inputs.items():
            api.set_input(handle, name, value.astype(np.float32))
        api.forward(handle)
        return api.output(handle, 0), expected[0]
    finally:
        api.free(handle)


def cache_lines(path):
    with open(path, 'rb') as f:
        return f.read().decode('utf-8', 'replace').splitlines()


def conv_kernels(stderr):
    """The convolution algorithms a profile=1 report names (without the
    fused max pooling a stem's name adds after a comma)."""
    return {name.split(',')[0] for name in re.findall(r'_FusedConvolution (.+?)\s{2,}', stderr)}


@pytest.mark.parametrize('model', ['squeezenet1.1', 'resnet18_v1'])
def test_tuned_choices_keep_mxnets_numbers_and_are_written(api, tmp_path, model):
    case = zoo_case(model)
    cache = str(tmp_path / 'tuning.txt')
    out, expected = predict(api, case, {'conv_tuning': 1, 'tuning_cache': cache})
    np.testing.assert_allclose(out, expected, rtol=case.rtol, atol=case.rtol * np.abs(expected).max())
    lines = cache_lines(cache)
    assert lines, 'no choice was written'
    for line in lines:
        fields = line.split('\t')
        assert len(fields) == 6 and fields[0] == TAG, line
        assert fields[3] == '1' and fields[4].startswith('batch 1, '), line
    assert not os.path.exists(cache + '.tmp')


def test_the_cache_is_read_back_and_its_choices_run(api, tmp_path, capfd):
    case = zoo_case('squeezenet1.1')
    first = str(tmp_path / 'first.txt')
    predict(api, case, {'conv_tuning': 1, 'tuning_cache': first})
    # Every layer sent to im2col + GEMM (it computes every layer here): the
    # next predictor must run exactly that, without timing anything.
    forced = str(tmp_path / 'forced.txt')
    with open(forced, 'w') as f:
        for line in cache_lines(first):
            f.write('\t'.join(line.split('\t')[:5] + ['im2col+gemm']) + '\n')
    capfd.readouterr()
    out, expected = predict(api, case, {'conv_tuning': 1, 'tuning_cache': forced,
                                        'profile': 1})
    assert conv_kernels(capfd.readouterr().err) == {'im2col+gemm'}
    np.testing.assert_allclose(out, expected, rtol=case.rtol, atol=case.rtol * np.abs(expected).max())


def test_damaged_cache_lines_are_ignored_and_dropped(api, tmp_path, capfd):
    case = zoo_case('squeezenet1.1')
    good = str(tmp_path / 'good.txt')
    predict(api, case, {'conv_tuning': 1, 'tuning_cache': good})
    lines = cache_lines(good)
    # The file holds every choice of this process (other tests' models too):
    # damage the line of a layer only squeezenet1.1 has, its 1000-class conv.
    [layer] = [line.split('\t') for line in lines if ' -> 1000 channels' in line]
    lines.remove('\t'.join(layer))
    foreign = '\t'.join([TAG, 'Some Other CPU', 'avx2-6x16', '1', layer[4], 'direct'])
    damaged = [
        '\t'.join(layer[:5] + ['depthwise']),        # does not apply to this layer
        '\t'.join(layer[:5] + ['the fastest one']),   # no such algorithm
        '\t'.join(layer[:3] + ['0'] + layer[4:]),     # no such thread count
        '\t'.join(layer[:3] + ['99999999'] + layer[4:]),
        '\t'.join(layer[:5]),                         # a field short
        'garbage', '', '\t\t\t\t\t', foreign,
    ] + lines
    path = str(tmp_path / 'damaged.txt')
    with open(path, 'wb') as f:
        f.write('\n'.join(damaged).encode() + b'\n\xff\xfe\x00binary\n')
    capfd.readouterr()
    out, expected = predict(api, case, {'conv_tuning': 1, 'tuning_cache': path, 'profile': 2})
    np.testing.assert_allclose(out, expected, rtol=case.rtol, atol=case.rtol * np.abs(expected).max())
    assert 'depthwise' not in capfd.readouterr().err
    # The first layer was timed again (its line named an algorithm that does
    # not apply), so the file was rewritten: valid lines only, the other
    # processor's kept.
    rewritten = cache_lines(path)
    assert foreign in rewritten
    assert all(len(line.split('\t')) == 6 and line.startswith(TAG + '\t') for line in rewritten)
    mine = [line for line in rewritten if line != foreign]
    assert sorted(line.split('\t')[4] for line in mine) == sorted(
        [layer[4]] + [other.split('\t')[4] for other in lines])
    assert all(line.split('\t')[5] != 'depthwise' for line in mine)


def test_a_cache_that_cannot_be_written_is_an_error_naming_it(api, tmp_path):
    case = zoo_case('squeezenet1.1')
    path = str(tmp_path / 'no-such-directory' / 'tuning.txt')
    with pytest.raises(CAPIError, match="tuning_cache: cannot write '%s'" % re.escape(path)):
        predict(api, case, {'conv_tuning': 1, 'tuning_cache': path})


@pytest.mark.parametrize('name, value, message', [
    ('conv_tuning', 'maybe', "option conv_tuning: invalid value 'maybe' (expected switch)"),
    ('tuning_cache', 'a\nb', 'option tuning_cache: invalid value'),
])
def test_bad_tuning_options_are_errors(api, name, value, message):
    with pytest.raises(CAPIError, match=re.escape(message)):
        predict(api, zoo_case('squeezenet1.1'), {name: value})
