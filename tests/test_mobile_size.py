"""scripts/size_report.py: the size budget of issue 7.

The x86-64 build of the one file, stripped, stays within 1.75 MB; the
predict-only build is smaller; the report gives the one-core -O2 compile
time and lands in its BENCHMARKS.md section with the command that made it.
The compile-time goal (60 s of one core) is reported there, not asserted:
it depends on the machine (24 s of one core in the run BENCHMARKS.md
records, 57 s of an Intel Xeon @ 2.50GHz core for the same file), and speed
goals are benchmarks, not tests.
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
    assert default_kib * 1024 <= 1.75 * 1024 * 1024
    assert minimal_kib < default_kib
    assert compile_s > 0
    text = markdown.read_text()
    assert '## Other\n\nkept' in text
    assert '## Size and compile time' in text
    assert 'Command: `python3 scripts/size_report.py --targets x86-64 --write' in text
    assert 'Budget (x86-64 stripped' in text
