"""Kernel families choose their instruction set once, in their tables.

Each kernel family has one table of implementations, one line per
instruction set and a generic line last, chosen once through
ChooseImplementation (predict/kernels/cpu_features.h), the only caller of
SelectedIsa(). Operators and algorithm tables ask the family what it has
(GemmKernels(), WinogradKernels(), PoolKernels(), DepthwiseBlockedPays, ...)
and never look at the ISA. This test scans predict/ (comments left out) and
fails where that stops being true.
"""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREDICT = os.path.join(ROOT, 'predict')

# Where SelectedIsa() may be called: its definition and ChooseImplementation.
SELECTED_ISA_FILES = {'kernels/cpu_features.h', 'kernels/cpu_features.cc'}

# The family tables: the only files that name an instruction set (Isa::k...),
# each with one table of implementations chosen once.
TABLE_FILES = {
    'kernels/depthwise.cc',
    'kernels/direct_conv.cc',
    'kernels/gemm.cc',
    'kernels/int16_pair_gemm.cc',
    'kernels/strided_copy.cc',
    'kernels/winograd.cc',
    'operators/activation_row.cc',
    'operators/batch_norm_row.cc',
    'operators/math_row.cc',
    'operators/pool_algorithms.cc',
}


def without_comments(text):
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
    return re.sub(r'//[^\n]*', '', text)


def sources():
    for directory, _, names in os.walk(PREDICT):
        for name in sorted(names):
            if name.endswith(('.cc', '.h', '.inc')):
                path = os.path.join(directory, name)
                with open(path, encoding='utf-8') as f:
                    yield os.path.relpath(path, PREDICT), without_comments(f.read())


def test_selected_isa_only_in_the_table_selector():
    callers = {path for path, text in sources() if re.search(r'\bSelectedIsa\s*\(', text)}
    assert callers <= SELECTED_ISA_FILES, (
        f'SelectedIsa() called outside the table selector: {sorted(callers - SELECTED_ISA_FILES)};'
        ' give the family a table line and ask the family instead')


def test_instruction_sets_named_only_in_family_tables():
    naming = {path for path, text in sources() if re.search(r'\bIsa::k\w+', text)}
    allowed = TABLE_FILES | SELECTED_ISA_FILES
    assert naming <= allowed, (
        f'instruction sets named outside the family tables: {sorted(naming - allowed)}')


def test_each_family_table_is_chosen_once():
    texts = dict(sources())
    for path in sorted(TABLE_FILES):
        text = texts[path]
        tables = re.findall(r'\bconst \w+Implementation (k\w+Implementations)\[\] = \{', text)
        assert len(tables) == 1, f'{path}: expected one table of implementations, found {tables}'
        choices = re.findall(r'\bChooseImplementation\(([\w:]+)\)', text)
        assert len(choices) == 1 and choices[0].endswith(tables[0]), (
            f'{path}: {tables[0]} must be chosen once through ChooseImplementation ({choices})')
        generic = re.findall(r'\{Isa::k(\w+)', text)
        assert generic and generic[-1] == 'Generic', (
            f'{path}: the last line of {tables[0]} must be the generic one ({generic})')
