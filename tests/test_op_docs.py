"""docs/operators.md is generated from the operator registry and must match it;
it lists every operator the issue names (with the aliases old files use)."""
import os
import re
import subprocess
import sys

from conftest import ROOT

DOC = os.path.join(ROOT, 'docs', 'operators.md')

# The operators and aliases classic MXNet inference models use (issue 4).
REQUIRED = """
Deconvolution UpSampling LRN LeakyReLU softmax log_softmax SoftmaxActivation SoftmaxOutput
LinearRegressionOutput LogisticRegressionOutput MAERegressionOutput Pooling Embedding
InstanceNorm LayerNorm L2Normalization Pad Crop Reshape transpose SwapAxis expand_dims squeeze
slice slice_axis SliceChannel Concat stack tile repeat where Cast BlockGrad _copy identity
zeros_like ones_like take one_hot argmax argmin topk sum mean max min prod norm dot batch_dot
elemwise_add elemwise_sub elemwise_mul elemwise_div broadcast_add broadcast_sub broadcast_mul
broadcast_div broadcast_maximum broadcast_minimum broadcast_power broadcast_equal
broadcast_not_equal broadcast_greater broadcast_lesser _plus_scalar _minus_scalar _rminus_scalar
_mul_scalar _div_scalar _rdiv_scalar _power_scalar _maximum_scalar _minimum_scalar
_equal_scalar _greater_scalar _lesser_scalar add_n abs sign exp log log1p expm1 sqrt rsqrt
square sin cos tanh sigmoid relu floor ceil round negative reciprocal erf
Softmax ElementWiseSum _Plus split crop sum_axis broadcast_plus
""".split()


def test_operator_table_is_up_to_date():
    result = subprocess.run([sys.executable, os.path.join(ROOT, 'scripts', 'gen_op_docs.py'),
                             '--check'], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_table_lists_every_required_operator():
    with open(DOC, encoding='utf-8') as f:
        text = f.read()
    assert text.startswith('<!-- GENERATED FILE')
    names = set()
    for row in text.splitlines():
        match = re.match(r'\| `([^`]+)` \| ([^|]*) \|', row)
        if match:
            names.add(match.group(1))
            names.update(re.findall(r'`([^`]+)`', match.group(2)))
    missing = [op for op in REQUIRED if op not in names]
    assert not missing, f'not in docs/operators.md: {missing}'
