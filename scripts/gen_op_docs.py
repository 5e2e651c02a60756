#!/usr/bin/env python3
"""Write docs/operators.md, the table of every operator mxlite runs.

The table comes from the registry itself (predict/operators/op_list.inc): this
script merges the sources (amalgamation/amalgamate.py), compiles
scripts/op_docs.cc with them, and runs it. op_docs asks each operator's factory
to read its attributes with a documentation sink attached, so the names,
types, defaults and required flags are those the parsing code uses.

    gen_op_docs.py            rewrite docs/operators.md
    gen_op_docs.py --check    exit 1 (with a diff) when it is out of date
"""
import argparse
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, 'docs', 'operators.md')


def registry_json(workdir):
    """The registry as op_docs prints it."""
    subprocess.run([sys.executable, os.path.join(ROOT, 'amalgamation', 'amalgamate.py'),
                    '--out-dir', workdir], check=True, capture_output=True)
    compiler = os.environ.get('CXX') or shutil.which('c++') or shutil.which('g++')
    if not compiler:
        sys.exit('gen_op_docs.py: a C++17 compiler (c++ or g++) is required')
    exe = os.path.join(workdir, 'op_docs')
    build = subprocess.run([compiler, '-std=c++17', '-O0', os.path.join(ROOT, 'scripts', 'op_docs.cc'),
                            os.path.join(workdir, 'mxlite-all.cc'), '-o', exe, '-lpthread'],
                           capture_output=True, text=True)
    if build.returncode != 0:
        sys.exit('gen_op_docs.py: compiling op_docs failed:\n' + build.stderr)
    run = subprocess.run([exe], capture_output=True, text=True, check=True)
    return json.loads(run.stdout)


def cell(text):
    return text.replace('|', '\\|')


def attribute_text(attr):
    text = '`%s` %s' % (attr['name'], attr['type'])
    if attr['required']:
        return text + ', required'
    if attr['type'] == 'ignored at inference':
        return '`%s` (ignored at inference)' % attr['name']
    return text + ' = %s' % (attr['default'] if attr['default'] != '' else '""')


def render(ops):
    errors = ['%s: %s' % (op['name'], op['error']) for op in ops if op['error']]
    if errors:
        sys.exit('gen_op_docs.py: the registry has broken entries:\n  ' + '\n  '.join(errors))
    ops = sorted(ops, key=lambda op: op['name'].lower().lstrip('_'))
    # The graph optimiser's own operators (predict/graph/fuse.h) never appear
    # in symbol files: listed apart, after the table.
    internal = [op for op in ops if op['name'].startswith('_Fused')]
    ops = [op for op in ops if not op['name'].startswith('_Fused')]
    aliases = sum(len(op['aliases']) for op in ops)
    lines = [
        '<!-- GENERATED FILE, do not edit: made by scripts/gen_op_docs.py from the operator '
        'registry (predict/operators/op_list.inc). -->',
        '# Operators',
        '',
        'mxlite runs %d operators under %d names more (aliases MXNet accepts, as old files '
        'use them). Attributes are listed as each operator reads them, with MXNet 1.9.1\'s '
        'defaults; an attribute not listed, an unknown operator or a value out of range is '
        'an error when the model loads, naming the node, the operator and the attribute. '
        'Attributes marked "ignored at inference" are accepted and have no effect on the '
        'forward pass.' % (len(ops), aliases),
        '',
        'dtypes: the element types the operator accepts. mxlite computes in float32 and carries '
        'each array\'s MXNet type along: float16 and integer results are rounded to their type '
        'as MXNet\'s would be; float64 is computed in float32.',
        '',
        '| operator | aliases | attributes | dtypes |',
        '|---|---|---|---|',
    ]
    for op in ops:
        attrs = '<br>'.join(cell(attribute_text(a)) for a in op['attrs']) or '—'
        names = ', '.join('`%s`' % a for a in sorted(op['aliases'])) or '—'
        lines.append('| `%s` | %s | %s | %s |' % (op['name'], names, attrs, cell(op['dtypes'])))
    if internal:
        lines += ['', '## Internal operators', '',
                  'Written by the graph optimiser when a predictor is bound (a Convolution '
                  'with the BatchNorm, residual add and relu/clip after it folded in, and '
                  'for a 1x1 Convolution also a BatchNorm and relu/clip before it that '
                  'nothing else reads and an average pooling beside it, for a stem also '
                  'the max pooling after it; a '
                  'BatchNorm with its relu/clip), never read from '
                  'symbol files: ' +
                  ', '.join('`%s`' % op['name'] for op in internal) + '.']
    return '\n'.join(lines) + '\n'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--check', action='store_true', help='compare instead of writing')
    parser.add_argument('--output', default=DOC, help='where to write (default docs/operators.md)')
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        text = render(registry_json(workdir))
    if args.check:
        current = open(args.output, encoding='utf-8').read() if os.path.exists(args.output) else ''
        if current != text:
            diff = difflib.unified_diff(current.splitlines(), text.splitlines(), args.output,
                                        'generated', lineterm='')
            print('\n'.join(list(diff)[:60]))
            print('%s is out of date: run scripts/gen_op_docs.py' % args.output)
            return 1
        return 0
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, 'w', encoding='utf-8') as f:
        f.write(text)
    print('wrote %s' % os.path.relpath(args.output, ROOT))
    return 0


if __name__ == '__main__':
    sys.exit(main())
