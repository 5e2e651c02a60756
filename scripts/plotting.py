"""Shared by the scripts that draw figures (plot_memory.py, plot_bench.py):
matplotlib from build/venv-plot, created on first use when the running
interpreter lacks it."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLOT_VENV = os.path.join(ROOT, 'build', 'venv-plot')


def ensure_matplotlib(script):
    """Re-runs `script` (with this process's arguments) under build/venv-plot
    when matplotlib is missing; returns when it can be imported here."""
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    python = os.path.join(PLOT_VENV, 'bin', 'python')
    if os.path.realpath(sys.prefix) == os.path.realpath(PLOT_VENV):
        sys.exit('matplotlib is missing from build/venv-plot; delete it and run again')
    if not os.path.exists(python):
        print(f'== creating {PLOT_VENV} with matplotlib', file=sys.stderr)
        subprocess.run([sys.executable, '-m', 'venv', PLOT_VENV], check=True)
        subprocess.run([python, '-m', 'pip', 'install', '-q', 'matplotlib', 'numpy'], check=True)
    os.execv(python, [python, os.path.abspath(script), *sys.argv[1:]])
