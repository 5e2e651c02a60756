"""Command line: `python -m mxlite demo`.

demo: runs the digits CNN that ships with the package (trained with MXNet
1.9.1 by scripts/train_demo_model.py) on its held-out images, and prints the
accuracy beside the one MXNet measured on the same images, a few digits drawn
as text with their predictions, and the time per image.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

DEMO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'demo')
SHADES = ' .:-=+*#%@'


def draw_digit(pixels):
    """8x8 values in 0..16 as text, two characters per pixel."""
    rows = []
    for row in pixels:
        rows.append(''.join(SHADES[min(int(v) * len(SHADES) // 17, len(SHADES) - 1)] * 2
                            for v in row))
    return rows


def run_demo(args):
    from .ctypes_predict import Predictor

    prefix = os.path.join(DEMO_DIR, 'digits')
    with open(prefix + '.json', encoding='utf-8') as f:
        meta = json.load(f)
    with open(prefix + '-symbol.json', encoding='utf-8') as f:
        symbol = f.read()
    with open(prefix + '-0000.params', 'rb') as f:
        params = f.read()
    test = np.load(prefix + '-test.npz')
    images, labels = test['images'], test['labels']
    inputs = (images.astype(np.float32) / 16.0)[:, None, :, :]

    predictor = Predictor(symbol, params, {'data': (1, 1, 8, 8)})
    predictions = np.empty(len(images), dtype=np.int64)
    start = time.perf_counter()
    for i in range(len(images)):
        predictor.forward(data=inputs[i:i + 1])
        predictions[i] = int(predictor.get_output(0).argmax())
    seconds = time.perf_counter() - start

    correct = int((predictions == labels).sum())
    print(f'mxlite demo: a CNN trained with MXNet {meta["mxnet_version"]} on 8x8 digits')
    print()
    shown = range(min(args.show, len(images)))
    pictures = [draw_digit(images[i]) for i in shown]
    for line in range(8):
        print('   '.join(picture[line] for picture in pictures))
    print('   '.join(f'pred {predictions[i]} true {labels[i]}'.ljust(16) for i in shown))
    print()
    print(f'held-out accuracy: {correct}/{len(images)} = {correct / len(images):.4f}'
          f'   (MXNet 1.9.1 on the same images: {meta["mxnet_correct"]}/{len(images)} = '
          f'{meta["mxnet_accuracy"]:.4f})')
    print(f'time per image: {seconds / len(images) * 1e6:.1f} us (batch 1)')
    return 0 if correct == meta['mxnet_correct'] else 1


def main(argv=None):
    parser = argparse.ArgumentParser(prog='mxlite', description='mxlite command line')
    commands = parser.add_subparsers(dest='command', required=True)
    demo = commands.add_parser('demo', help='predict the bundled digits test set',
                               description=run_demo.__doc__ or __doc__)
    demo.add_argument('--show', type=int, default=6, help='digits to draw (default 6)')
    demo.set_defaults(handler=run_demo)
    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == '__main__':
    sys.exit(main())
