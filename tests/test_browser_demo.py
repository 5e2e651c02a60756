"""The browser demo (mobile/wasm/digits.html) in headless Chromium.

- the page, mxlite.js, the wasm build and the demo digits model are served
  from a localhost http.server; Chromium (Debian's `chromium`) is driven over
  the DevTools protocol: the test draws a digit from the demo's test set with
  mouse events on the canvas, and the page's prediction, probabilities and
  logits equal mxlite.Predictor's on the very input the page fed (which the
  page exposes as window.mxliteDemo.input);
- a wasm file that is missing or is not WebAssembly gives a visible error
  naming the file, not a page that waits forever.
"""
import functools
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request

import numpy as np
import pytest

from conftest import ROOT
from mobile_support import require_tool
from test_mobile_wasm import import_or_install, wasm_build  # noqa: F401  (`make wasm`)

DEMO_DIR = os.path.join(ROOT, 'bindings', 'python', 'mxlite', 'demo')
PAGE_DIR = os.path.join(ROOT, 'mobile', 'wasm')
TIMEOUT = 60


def import_websocket():
    return import_or_install('websocket', 'websocket_client')


@pytest.fixture(scope='module')
def site(wasm_build, tmp_path_factory):  # noqa: F811
    """A folder served on localhost: the page, the binding, the wasm, the model,
    and a file that is not WebAssembly. Yields the base URL."""
    root = tmp_path_factory.mktemp('site')
    for name in ('digits.html', 'mxlite.js'):
        shutil.copy(os.path.join(PAGE_DIR, name), root)
    for name in ('digits-symbol.json', 'digits-0000.params'):
        shutil.copy(os.path.join(DEMO_DIR, name), root)
    shutil.copy(os.path.join(wasm_build, 'wasm', 'mxlite.wasm'), root)
    (root / 'not-wasm.wasm').write_bytes(b'<html>not a module</html>')

    class Handler(http.server.SimpleHTTPRequestHandler):
        extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                          '.js': 'text/javascript', '.wasm': 'application/wasm'}

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ('127.0.0.1', 0), functools.partial(Handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f'http://127.0.0.1:{server.server_address[1]}'
    server.shutdown()
    server.server_close()


class Browser:
    """Headless Chromium with one page, driven over the DevTools protocol."""

    def __init__(self, websocket):
        self.profile = tempfile.mkdtemp(prefix='mxlite-chromium-')
        # Chromium's log goes to a file: a pipe nobody reads would fill and stall it.
        self.log = open(os.path.join(self.profile, 'chromium.log'), 'w+b')
        self.process = subprocess.Popen(
            ['chromium', '--headless=new', '--remote-debugging-port=0', '--no-sandbox',
             '--disable-gpu', '--no-first-run', '--no-default-browser-check',
             f'--user-data-dir={self.profile}', '--window-size=800,800', 'about:blank'],
            stdout=subprocess.DEVNULL, stderr=self.log)
        port_file = os.path.join(self.profile, 'DevToolsActivePort')
        deadline = time.monotonic() + TIMEOUT
        while not (os.path.exists(port_file) and open(port_file).read().count('\n') >= 1):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.log.seek(0)
                log = self.log.read().decode(errors='replace')[-2000:]
                self.close()
                raise AssertionError(f'chromium did not start:\n{log}')
            time.sleep(0.1)
        port = int(open(port_file).read().split('\n')[0])
        with urllib.request.urlopen(f'http://127.0.0.1:{port}/json/list') as response:
            pages = [t for t in json.load(response) if t['type'] == 'page']
        self.socket = websocket.create_connection(pages[0]['webSocketDebuggerUrl'],
                                                  timeout=TIMEOUT, suppress_origin=True)
        self.next_id = 0

    def send(self, method, **params):
        self.next_id += 1
        self.socket.send(json.dumps({'id': self.next_id, 'method': method, 'params': params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get('id') == self.next_id:
                assert 'error' not in message, f'{method}: {message["error"]}'
                return message['result']

    def evaluate(self, expression):
        result = self.send('Runtime.evaluate', expression=expression, returnByValue=True,
                           awaitPromise=True)
        assert 'exceptionDetails' not in result, result['exceptionDetails']
        return result['result'].get('value')

    def wait_for(self, expression):
        """Polls until the page's expression is truthy; returns its value."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f'timed out waiting for {expression}: page says ' +
                             repr(self.evaluate('document.body.innerText')))

    def open(self, url):
        self.send('Page.enable')
        self.send('Page.navigate', url=url)
        self.wait_for("document.readyState === 'complete' && window.mxliteDemo && "
                      "window.mxliteDemo.state !== 'loading'")

    def mouse(self, kind, x, y):
        self.send('Input.dispatchMouseEvent', type=kind, x=x, y=y, button='left',
                  buttons=0 if kind == 'mouseReleased' else 1, clickCount=1,
                  pointerType='mouse')

    def close(self):
        if getattr(self, 'socket', None):
            self.socket.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


@pytest.fixture(scope='module')
def browser():
    require_tool('chromium', 'chromium')
    websocket = import_websocket()
    chromium = Browser(websocket)
    yield chromium
    chromium.close()


def draw(browser, image):
    """Draws an 8x8 digit (values 0..16) on the page's canvas: one horizontal
    stroke through each row's run of inked cells."""
    box = browser.evaluate('(() => { const b = document.getElementById("pad")'
                           '.getBoundingClientRect(); return [b.left, b.top, b.width]; })()')
    left, top, width = box
    cell = width / 8
    for row in range(8):
        col = 0
        while col < 8:
            if image[row, col] < 6:
                col += 1
                continue
            start = col
            while col < 8 and image[row, col] >= 6:
                col += 1
            y = top + (row + 0.5) * cell
            xs = np.linspace(left + (start + 0.5) * cell, left + (col - 0.5) * cell,
                             max(2, 2 * (col - start)))
            browser.mouse('mousePressed', xs[0], y)
            for x in xs[1:]:
                browser.mouse('mouseMoved', x, y)
            browser.mouse('mouseReleased', xs[-1], y)


@pytest.mark.parametrize('index', [0, 1, 2])
def test_drawn_digit_matches_python_api(site, browser, index):
    import mxlite

    test = np.load(os.path.join(DEMO_DIR, 'digits-test.npz'))
    image, label = test['images'][index], int(test['labels'][index])
    browser.open(f'{site}/digits.html')
    assert browser.evaluate('window.mxliteDemo.state') == 'ready', \
        browser.evaluate('document.body.innerText')

    draw(browser, image)
    # The page predicts when each stroke ends.
    browser.wait_for('window.mxliteDemo.count >= 1')
    page = browser.evaluate('window.mxliteDemo')
    assert page['state'] == 'predicted'
    shown_digit = int(browser.evaluate('document.getElementById("prediction").textContent'))
    shown_probabilities = [float(text) for text in browser.evaluate(
        'Array.from(document.querySelectorAll("#probabilities .p"), (e) => e.textContent)')]

    page_input = np.array(page['input'], dtype=np.float32).reshape(1, 1, 8, 8)
    assert page_input.max() == 1.0 and (page_input > 0).sum() > 8, page_input
    predictor = mxlite.Predictor.load(os.path.join(DEMO_DIR, 'digits'),
                                      input_shapes={'data': (1, 1, 8, 8)})
    logits = predictor(data=page_input)[0]
    np.testing.assert_allclose(page['logits'], logits, rtol=1e-5, atol=1e-5)
    exps = np.exp(logits.astype(np.float64) - logits.max())
    probabilities = exps / exps.sum()
    np.testing.assert_allclose(page['probabilities'], probabilities, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(shown_probabilities, probabilities, atol=5e-5)
    assert page['digit'] == shown_digit == int(logits.argmax())
    # The drawing is a rough copy of the test image; the model still reads it.
    assert shown_digit == label, (shown_digit, label, page_input[0, 0] * 16)

    browser.evaluate('document.getElementById("clear").click()')
    assert browser.evaluate('document.getElementById("prediction").textContent') == ''


@pytest.mark.parametrize('wasm', ['missing.wasm', 'not-wasm.wasm'])
def test_wasm_that_fails_to_load_shows_an_error(site, browser, wasm):
    browser.open(f'{site}/digits.html?wasm={wasm}')
    assert browser.evaluate('window.mxliteDemo.state') == 'error'
    status = browser.evaluate('document.getElementById("status").textContent')
    assert status.startswith('Error: could not load the WebAssembly module'), status
    assert wasm in status
    assert browser.evaluate('document.getElementById("status").className') == 'error'
