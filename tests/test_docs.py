"""The documentation builds and its links resolve.

docs/api.md is generated from the docstrings and the C headers
(scripts/gen_api_docs.py): it must be what the script writes from the code
under test. Every relative link in the project's markdown must name a file
that exists and, with a #fragment, a heading in it (GitHub's anchors);
web links are not fetched (CI has no network).
"""
import glob
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

MARKDOWN = sorted({os.path.relpath(p, ROOT) for p in
                   glob.glob(os.path.join(ROOT, '*.md')) +
                   glob.glob(os.path.join(ROOT, 'docs', '*.md')) +
                   glob.glob(os.path.join(ROOT, 'mobile', '**', '*.md'), recursive=True) +
                   glob.glob(os.path.join(ROOT, 'scripts', '**', '*.md'), recursive=True) +
                   glob.glob(os.path.join(ROOT, 'tests', '**', '*.md'), recursive=True)})
LINK = re.compile(r'\[[^\]]*\]\(([^)\s]+)\)')
FENCE = re.compile(r'```.*?```', re.S)
CODE = re.compile(r'```.*?```|`[^`\n]*`', re.S)


def anchors(path):
    """GitHub's anchors for the headings of a markdown file."""
    with open(path, encoding='utf-8') as f:
        text = FENCE.sub('', f.read())
    found, seen = set(), {}
    for heading in re.findall(r'^#{1,6} +(.+?) *#*$', text, re.M):
        slug = re.sub(r'[^\w\- ]', '', heading.strip().lower()).replace(' ', '-')
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f'{slug}-{count}')
    return found


def broken_links(path):
    """Each relative link of the markdown file `path` (outside code) that names
    a missing file or a missing heading, with why."""
    with open(path, encoding='utf-8') as f:
        text = CODE.sub('', f.read())
    broken = []
    for target in LINK.findall(text):
        if re.match(r'[a-z]+:', target):  # https:, mailto: (not fetched)
            continue
        file_part, _, fragment = target.partition('#')
        resolved = (os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                    if file_part else path)
        if not os.path.exists(resolved):
            broken.append(f'{target}: no such file')
        elif fragment and resolved.endswith('.md') and fragment not in anchors(resolved):
            broken.append(f'{target}: no heading with anchor #{fragment}')
    return broken


def test_api_reference_is_current():
    script = os.path.join(ROOT, 'scripts', 'gen_api_docs.py')
    result = subprocess.run([sys.executable, script, '--check'], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr + result.stdout


@pytest.mark.parametrize('path', MARKDOWN)
def test_relative_links_resolve(path):
    broken = broken_links(os.path.join(ROOT, path))
    assert not broken, f'{path}: ' + '; '.join(broken)


def test_link_checker_finds_broken_links(tmp_path):
    """The checker itself: a missing file and a missing heading are caught;
    links in code are not links."""
    page = tmp_path / 'page.md'
    page.write_text('# Title\n\n## Two `words`\n\n[a](page.md#two-words) [b](#title) '
                    '[c](missing.md) [d](#nowhere) `[e](ignored.md)` ![f](figure.png)\n'
                    '```\n# not a heading\n[g](missing2.md)\n```\n', encoding='utf-8')
    assert anchors(str(page)) == {'title', 'two-words'}
    assert broken_links(str(page)) == ['missing.md: no such file',
                                       '#nowhere: no heading with anchor #nowhere',
                                       'figure.png: no such file']
