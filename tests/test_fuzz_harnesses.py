"""The libFuzzer harnesses (tests/fuzz), each for its seed corpus and a fixed
number of mutated inputs, with clang's AddressSanitizer,
UndefinedBehaviorSanitizer (float-cast-overflow included) and LeakSanitizer: the symbol JSON, the params/NDArray-list
reader, and all three inputs of MXPredCreate at once, each from its seed
corpus (the fixtures) with tests/fuzz/mxlite.dict. A crash, a sanitizer
report, a leak, a timeout or an out-of-memory fails the test with the
harness's log and the input saved. docs/security.md records the last long
campaign (tests/fuzz/run_fuzz.py --seconds N)."""
import os
import shutil
import sys

import pytest

from conftest import HERE

sys.path.insert(0, os.path.join(HERE, 'fuzz'))
import run_fuzz  # noqa: E402

# The work is bounded, not the time: machines differ by 40x in executions per
# second here (2 000/s for the structured harness on an idle Xeon, 45/s on a
# busy CI machine), so each harness runs its seed corpus and then MUTATIONS
# mutated inputs with a fixed seed; CAP_SECONDS only guards against a hang.
MUTATIONS = 1000
CAP_SECONDS = 240


@pytest.fixture(scope='module')
def harnesses(tmp_path_factory):
    assert shutil.which('clang++'), 'clang++ is required (.ci/run installs it from Debian)'
    out = tmp_path_factory.mktemp('fuzz')
    return out, run_fuzz.build(str(out), opt='-O0')


@pytest.mark.parametrize('name', run_fuzz.HARNESSES)
def test_harness_finds_nothing(harnesses, name):
    out, built = harnesses
    ok, executions, seeds, corpus, log = run_fuzz.run(
        name, built[name], str(out), CAP_SECONDS, mutations=MUTATIONS)
    assert ok, log
    assert executions >= seeds + MUTATIONS, log[-2000:]
