"""scripts/size_report.py: the size and compile-time budget of issue 7.

The x86-64 build of the one file, stripped, stays within 1.5 MB and one -O2
compile within 60 s of one core; the predict-only build is smaller; the
report lands in its BENCHMARKS.md section with the command that made it.
"""
import os
import re
import subprocess
import sys

from conftest import ROOT

SCRIPT = os.path.join(ROOT, 'scripts', 'size_report.py')


def test_x86_64_build_is_within_budget(tmp_path):
    markdown = tmp_path / 'BENCHMARKS.md'
    markdown.write_text('# Benchmarks\n\n## Other\n\nkept\n')
    result = subprocess.run([sys.executable, SCRIPT, '--targets', 'x86-64', '--check',
                             '--write', str(markdown)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    match = re.search(r'x86-64\s+default\s+([\d.]+) KiB\s+minimal\s+([\d.]+) KiB\s+'
                      r'-O2 compile\s+([\d.]+) s CPU', result.stdout)
    assert match, result.stdout
    default_kib, minimal_kib, compile_s = map(float, match.groups())
    assert default_kib * 1024 <= 1.5 * 1024 * 1024
    assert minimal_kib < default_kib
    assert 0 < compile_s <= 60
    text = markdown.read_text()
    assert '## Other\n\nkept' in text
    assert '## Size and compile time' in text
    assert 'Command: `python3 scripts/size_report.py --targets x86-64 --write' in text
    assert 'within budget' in text
