#!/usr/bin/env python3
"""Writes docs/api.md, the API reference, from the code's own documentation.

The Python part comes from the installed package's docstrings and
signatures: every name in `__all__` of the modules listed in PYTHON_MODULES,
classes with their public methods and properties. The C part comes from the
doc comments (`/*! ... */`) before each exported function of
predict/include/c_predict_api.h and mxlite.h. So the reference says what the
code says; tests/test_docs.py fails when docs/api.md is not what this script
writes from the current code.

    gen_api_docs.py [--out docs/api.md] [--check]

--check writes nothing and exits 1 when the file differs.
"""
import argparse
import importlib
import inspect
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (module, what it is for), in the order the reference presents them.
PYTHON_MODULES = [
    ('mxlite', 'the package: Predictor, errors, options, the library path'),
    ('mxlite.predictor', 'the compiled predictor'),
    ('mxlite.model', "MXNet's checkpoint loader"),
    ('mxlite.symbol', 'a light Symbol (mx.sym)'),
    ('mxlite.nd', "MXNet's imperative NDArray API (mx.nd) and its file format"),
    ('mxlite.ndarray', 'the lazy NDArray and its functions'),
    ('mxlite.random', "mxlite's random generator (mx.nd.random)"),
    ('mxlite.context', 'devices (mx.cpu(), mx.gpu())'),
    ('mxlite.ctypes_predict', "MXNet's mxnet_predict.py API over the C library, in pure Python"),
    ('mxlite.errors', 'the exceptions'),
    ('mxlite.ray_data', "batch prediction with Ray Data's map_batches (mxlite[ray])"),
]
C_HEADERS = ['predict/include/c_predict_api.h', 'predict/include/mxlite.h']


def anchor(title):
    """GitHub's anchor for a heading."""
    slug = re.sub(r'[^\w\- ]', '', title.strip().lower())
    return slug.replace(' ', '-')


def signature(obj, name):
    """`name(args) -> result` as the object declares it."""
    text = getattr(obj, '__nb_signature__', None)
    if text:  # nanobind: ((signature text, doc, defaults), ...)
        return re.sub(r'^def \w+', name, text[0][0]).rstrip(':')
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return name + '(...)'
    # Postponed annotations print as strings; a method's first argument is
    # implied.
    text = re.sub(r"(: |-> )'([^']*)'", r'\1\2', text)
    text = re.sub(r'^\((self|cls)(, )?', '(', text)
    return name + text


def docstring(obj):
    """The object's own docstring (not one inherited from object)."""
    own = obj.__doc__ if not isinstance(obj, type) else obj.__dict__.get('__doc__')
    return inspect.cleandoc(own).strip() if own else ''


def doc_block(doc):
    """A docstring as markdown. An indented paragraph after a blank line is
    an example (a code block); indented lines right after text continue it
    (the hanging indent of `name: description` entries, which become list
    items)."""
    if not doc:
        return ['*(undocumented)*', '']
    lines, code, previous_blank = [], False, True
    for line in doc.splitlines():
        indented = line.startswith('    ') and line.strip()
        if code and not indented and line.strip():
            while lines and not lines[-1]:
                lines.pop()
            lines += ['```', '']
            code = False
        if indented and (code or previous_blank):
            if not code:
                lines.append('```python')
                code = True
            lines.append(line[4:])
        elif indented:
            lines.append('  ' + line.strip())
        else:
            entry = re.match(r'([A-Za-z_][\w.]*(?:, [A-Za-z_][\w.]*)*): (.*)', line)
            lines.append(f'- `{entry.group(1)}`: {entry.group(2)}' if entry else line)
        previous_blank = not line.strip()
    if code:
        while lines and not lines[-1]:
            lines.pop()
        lines.append('```')
    return lines + ['']


def own_members(cls):
    """Public methods and properties the class itself defines, in source order."""
    members = []
    for name, value in cls.__dict__.items():
        if name.startswith('_') and name not in ('__init__', '__call__', '__getitem__'):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if name == '__init__' and not value.__doc__:
            continue  # the class's docstring describes the constructor
        if isinstance(value, property) or inspect.isfunction(value) or inspect.isroutine(value):
            members.append((name, value))
    return members


def python_section(module_name, purpose):
    module = importlib.import_module(module_name)
    out = [f'### `{module_name}`', '', f'{purpose[0].upper()}{purpose[1:]}.', '']
    summary = (inspect.getdoc(module) or '').split('\n\n')[0]
    if module_name != 'mxlite' and summary:
        out += [summary, '']
    for name in getattr(module, '__all__', []):
        value = getattr(module, name)
        qualified = f'{module_name}.{name}'
        owner = getattr(value, '__module__', module_name)
        if inspect.ismodule(value):
            out += [f'- `{qualified}`: the module [`{value.__name__}`]'
                    f'(#{anchor(value.__name__)})', '']
            continue
        if owner != module_name and owner in dict(PYTHON_MODULES):
            # Documented once, where it is defined.
            out += [f'- `{qualified}`: see [`{owner}.{name}`](#{anchor(owner)})', '']
            continue
        if inspect.isclass(value):
            bases = [b.__name__ for b in value.__bases__ if b is not object]
            heading = f'class {qualified}' + (f'({", ".join(bases)})' if bases else '')
            out += [f'#### `{heading}`', '']
            out += doc_block(docstring(value))
            for member, member_value in own_members(value):
                if isinstance(member_value, property):
                    out += [f'- **`{member}`** (property)', '']
                    out += ['  ' + line if line else '' for line in
                            doc_block(docstring(member_value))]
                else:
                    out += [f'- **`{signature(member_value, member)}`**', '']
                    out += ['  ' + line if line else '' for line in
                            doc_block(docstring(member_value))]
        elif getattr(value, '__origin__', None) is not None:  # a typing alias
            text = re.sub(r'numpy\.ndarray\[tuple\[typing\.Any, \.\.\.\], '
                          r'numpy\.dtype\[typing\.Any\]\]', 'numpy.ndarray', str(value))
            out += [f'#### `{qualified}`', '', f'A type: `{text}`.', '']
        elif callable(value):
            out += [f'#### `{signature(value, qualified)}`', '']
            out += doc_block(docstring(value))
        else:
            out += [f'#### `{qualified}` = `{value!r}`', '']
    return out


def c_functions(path):
    """(declaration, doc comment) for each exported function of a header."""
    with open(os.path.join(ROOT, path), encoding='utf-8') as f:
        text = f.read()
    found = []
    comment = r'/\*!?((?:(?!\*/).)*)\*/'
    for match in re.finditer(comment + r'\s*MXNET_DLL\s+([^;]+);', text, re.S):
        comment, declaration = match.groups()
        lines = [re.sub(r'^\s*\*? ?', '', line) for line in comment.splitlines()]
        declaration = re.sub(r'\s+', ' ', declaration).replace('( ', '(').strip()
        found.append((declaration, lines))
    return found


def c_doc(lines):
    """A doxygen comment as markdown: the brief, the parameters as a list."""
    out, params = [], []
    for line in lines:
        line = line.rstrip()
        param = re.match(r'\\param\s+(\w+)\s*(.*)', line)
        if param:
            params.append([param.group(1), param.group(2)])
        elif re.match(r'\\return', line):
            params.append(['returns', re.sub(r'\\return\s*', '', line)])
        elif params and line and not line.startswith('\\'):
            params[-1][1] += ' ' + line.strip()
        else:
            out.append(re.sub(r'\\brief\s*', '', line))
    text = '\n'.join(out).strip()
    result = [text, ''] if text else []
    for name, description in params:
        result.append(f'- `{name}`: {description.strip()}')
    return result + ([''] if params else [])


def c_section():
    out = []
    for header in C_HEADERS:
        title = os.path.basename(header)
        out += [f'### `{title}`', '', f'[{header}](../{header})', '']
        for declaration, lines in c_functions(header):
            name = re.search(r'(\w+)\s*\(', declaration).group(1)
            out += [f'#### `{name}`', '', '```c', declaration + ';', '```', '']
            out += c_doc(lines)
    return out


def generate():
    import mxlite
    out = ['# API reference', '',
           f'mxlite {mxlite.__version__}. Generated by `scripts/gen_api_docs.py` from the '
           'docstrings and the C headers\' doc comments; do not edit by hand '
           '(tests/test_docs.py checks that it is current).', '',
           'The runtime options every front end takes are in [options.md](options.md); the '
           'command line is `mxlite --help`.', '',
           '## Python', '']
    out += [f'- [`{name}`](#{anchor(name)}): {purpose}' for name, purpose in PYTHON_MODULES]
    out += ['', '## C', '']
    out += [f'- [`{os.path.basename(h)}`](#{anchor(os.path.basename(h))})' for h in C_HEADERS]
    out += ['', '## Python modules', '']
    for name, purpose in PYTHON_MODULES:
        out += python_section(name, purpose)
    out += ['## C functions', '']
    out += c_section()
    text = '\n'.join(out)
    return re.sub(r'\n{3,}', '\n\n', text).rstrip() + '\n'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--out', default=os.path.join(ROOT, 'docs', 'api.md'))
    parser.add_argument('--check', action='store_true', help='exit 1 if the file is stale')
    args = parser.parse_args()
    text = generate()
    if args.check:
        try:
            with open(args.out, encoding='utf-8') as f:
                current = f.read()
        except FileNotFoundError:
            current = ''
        if current != text:
            print(f'{args.out} is stale: run scripts/gen_api_docs.py', file=sys.stderr)
            return 1
        return 0
    with open(args.out, 'w', encoding='utf-8') as f:
        f.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
