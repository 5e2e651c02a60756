"""The `mxlite` command (also `python -m mxlite`).

    mxlite demo                                  the bundled digits CNN: accuracy vs MXNet's
    mxlite predict PREFIX --input FILE [...]     top-k of a checkpoint on an image or array
    mxlite inspect PREFIX [--shape data=1,3,224,224]   nodes, shapes, parameters, MACs
    mxlite plan PREFIX --shape data=1,3,224,224        intermediate memory per strategy

Each subcommand has --help. Errors print one line, "mxlite: error: ...", and
exit with status 1 (2 for bad command-line usage).
"""
import argparse
import json
import os
import sys
import time

import numpy as np

from .errors import MXLiteError

DEMO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'demo')
SHADES = ' .:-=+*#%@'
IMAGE_EXTENSIONS = ('.png', '.jpg', '.jpeg', '.bmp', '.gif', '.tif', '.tiff', '.webp', '.ppm',
                    '.pgm')
IMAGENET_MEAN = (123.675, 116.28, 103.53)   # 0.485, 0.456, 0.406 x 255
IMAGENET_STD = (58.395, 57.12, 57.375)      # 0.229, 0.224, 0.225 x 255


class UsageError(Exception):
    """A problem with the command line or the files it names."""


# --- demo ------------------------------------------------------------------

def draw_digit(pixels):
    """8x8 values in 0..16 as text, two characters per pixel."""
    return [''.join(SHADES[min(int(v) * len(SHADES) // 17, len(SHADES) - 1)] * 2 for v in row)
            for row in pixels]


def run_demo(args):
    """Runs the digits CNN that ships with mxlite (trained with MXNet 1.9.1 by
    scripts/train_demo_model.py) on its 360 held-out images, one at a time,
    and prints the accuracy beside MXNet's on the same images, a few digits
    drawn as text with their predictions, and the time per image. Exits with
    status 1 if the accuracy differs from MXNet's."""
    from .predictor import Predictor

    prefix = os.path.join(DEMO_DIR, 'digits')
    with open(prefix + '.json', encoding='utf-8') as f:
        meta = json.load(f)
    test = np.load(prefix + '-test.npz')
    images, labels = test['images'], test['labels']
    inputs = (images.astype(np.float32) / np.float32(16.0))[:, None, :, :]

    predictor = Predictor.load(prefix, input_shapes={'data': (1, 1, 8, 8)},
                               threads=args.threads)
    predictor(data=inputs[:1])  # warm up: first-touch of the buffers
    predictions = np.empty(len(images), dtype=np.int64)
    start = time.perf_counter()
    for i in range(len(images)):
        predictions[i] = int(predictor(data=inputs[i:i + 1]).argmax())
    seconds = time.perf_counter() - start

    correct = int((predictions == labels).sum())
    total = len(images)
    print(f'mxlite demo: a CNN trained with MXNet {meta["mxnet_version"]} on 8x8 digits')
    print()
    shown = range(min(args.show, total))
    pictures = [draw_digit(images[i]) for i in shown]
    for line in range(8):
        print('   '.join(picture[line] for picture in pictures))
    print('   '.join(f'pred {predictions[i]} true {labels[i]}'.ljust(16) for i in shown))
    print()
    print(f'held-out accuracy: {correct}/{total} = {correct / total:.4f}'
          f'   (MXNet 1.9.1 on the same images: {meta["mxnet_correct"]}/{total} = '
          f'{meta["mxnet_accuracy"]:.4f})')
    threads = f'{args.threads} thread{"s" if args.threads != 1 else ""}'
    print(f'time per image: {seconds / total * 1e6:.1f} us (batch 1, {threads})')
    if correct != meta['mxnet_correct']:
        print('mxlite: error: the accuracy differs from MXNet\'s', file=sys.stderr)
        return 1
    return 0


# --- predict ---------------------------------------------------------------

def parse_floats(text, what):
    try:
        values = tuple(float(v) for v in text.split(','))
    except ValueError:
        raise UsageError(f'{what} must be numbers separated by commas, got {text!r}') from None
    return values


def parse_shape(text):
    """'data=1,3,224,224' -> ('data', (1, 3, 224, 224))."""
    name, sep, dims = text.partition('=')
    try:
        shape = tuple(int(d) for d in dims.split(',')) if sep else None
    except ValueError:
        shape = None
    if not name or shape is None or any(d < 0 for d in shape):
        raise UsageError(f'--shape must look like NAME=D1,D2,... (e.g. data=1,3,224,224), '
                         f'got {text!r}')
    return name, shape


def image_size(args, hint):
    """(height, width) for an image input: --size, else the model's hint, else 224."""
    if args.size:
        parts = [int(v) for v in args.size.replace('x', ',').split(',')]
        if len(parts) == 1:
            parts *= 2
        if len(parts) != 2 or min(parts) <= 0:
            raise UsageError(f'--size must be N or H,W, got {args.size!r}')
        return tuple(parts)
    if hint and len(hint) == 4:
        return (hint[2], hint[3]) if args.layout == 'nchw' else (hint[1], hint[2])
    return 224, 224


def load_image(path, args, hint):
    """An image file as a (1, C, H, W) (or NHWC) float32 batch, preprocessed
    as the options say: resize, crop, scale, mean/std, channel order."""
    try:
        from PIL import Image
    except ImportError:
        raise UsageError('reading images needs Pillow: pip install Pillow') from None
    height, width = image_size(args, hint)
    channels = hint[1 if args.layout == 'nchw' else 3] if hint and len(hint) == 4 else 3
    try:
        image = Image.open(path)
        image = image.convert('L' if channels == 1 else 'RGB')
    except OSError as error:
        raise UsageError(f'{path}: cannot read the image: {error}') from None
    if args.resize_short:
        # Shorter side to N, then the centre (height x width) crop.
        scale = args.resize_short / min(image.size)
        image = image.resize((max(width, round(image.size[0] * scale)),
                              max(height, round(image.size[1] * scale))), Image.BILINEAR)
        left = (image.size[0] - width) // 2
        top = (image.size[1] - height) // 2
        image = image.crop((left, top, left + width, top + height))
    else:
        image = image.resize((width, height), Image.BILINEAR)
    pixels = np.asarray(image, dtype=np.float32)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    if args.channel_order == 'bgr' and pixels.shape[2] == 3:
        pixels = pixels[:, :, ::-1]
    mean, std = args.mean, args.std
    if args.imagenet:
        mean, std = IMAGENET_MEAN, IMAGENET_STD
        if args.channel_order == 'bgr':
            mean, std = mean[::-1], std[::-1]
    pixels = pixels * np.float32(args.scale)
    pixels = (pixels - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    batch = pixels[None] if args.layout == 'nhwc' else pixels.transpose(2, 0, 1)[None]
    return np.ascontiguousarray(batch, dtype=np.float32)


def load_inputs(path, args, predictor):
    """{input name: array} from an .npy/.npz file or an image."""
    names = predictor.input_names
    if args.input_name:
        if args.input_name not in names:
            raise UsageError(f'--input-name {args.input_name!r} is not an input of the model '
                             f'(its inputs: {", ".join(names)})')
        target = args.input_name
    elif len(names) == 1:
        target = names[0]
    else:
        target = None
    if not os.path.exists(path):
        raise UsageError(f'{path}: no such file')
    lower = path.lower()
    if lower.endswith('.npz'):
        with np.load(path) as archive:
            data = {key: archive[key] for key in archive.files}
        if target is not None and len(data) == 1 and target not in data:
            data = {target: next(iter(data.values()))}
        return data
    if lower.endswith('.npy'):
        if target is None:
            raise UsageError(f'the model has several inputs ({", ".join(names)}): use an .npz '
                             'file keyed by input name, or --input-name')
        return {target: np.load(path)}
    if lower.endswith(IMAGE_EXTENSIONS):
        if target is None:
            raise UsageError(f'the model has several inputs ({", ".join(names)}): say which one '
                             'the image is with --input-name')
        hint = predictor.input_shapes.get(target)
        return {target: load_image(path, args, hint)}
    raise UsageError(f'{path}: unknown input type; give an .npy/.npz array or an image '
                     f'({", ".join(IMAGE_EXTENSIONS)})')


def read_labels(path):
    if path is None:
        return None
    try:
        with open(path, encoding='utf-8') as f:
            return [line.strip() for line in f]
    except OSError as error:
        raise UsageError(f'{path}: cannot read the labels: {error.strerror or error}') from None


def top_k(scores, k):
    """[(index, score, probability)] of the k best classes of one sample.
    The probability is the score itself when the output already is a
    distribution (softmax output), else the softmax of the scores."""
    scores = scores.astype(np.float64).ravel()
    total = scores.sum()
    if scores.min() >= 0 and abs(total - 1.0) < 1e-3:
        probabilities = scores
    else:
        shifted = np.exp(scores - scores.max())
        probabilities = shifted / shifted.sum()
    order = np.argsort(-scores, kind='stable')[:k]
    return [(int(i), float(scores[i]), float(probabilities[i])) for i in order]


def run_predict(args):
    """Loads a checkpoint, predicts one input file and prints the top-k
    classes (with labels from a synset file, one label per line)."""
    from .predictor import Predictor

    args.mean = parse_floats(args.mean, '--mean')
    args.std = parse_floats(args.std, '--std')
    shapes = dict(parse_shape(text) for text in args.shape)
    predictor = Predictor.load(args.prefix, args.epoch, input_shapes=shapes or None,
                               threads=args.threads)
    labels = read_labels(args.synset)
    inputs = load_inputs(args.input, args, predictor)
    if not predictor._core.is_bound or any(
            tuple(predictor.input_shapes.get(name, ())) != np.shape(value)
            for name, value in inputs.items()):
        predictor.reshape({name: np.shape(value) for name, value in inputs.items()})
    predictor(**inputs)  # warm up: the first pass touches fresh memory
    start = time.perf_counter()
    outputs = predictor(**inputs)
    seconds = time.perf_counter() - start
    outputs = outputs if isinstance(outputs, list) else [outputs]
    if not 0 <= args.output_index < len(outputs):
        raise UsageError(f'--output-index {args.output_index}: the model has {len(outputs)} '
                         'output(s)')
    output = outputs[args.output_index]
    output_name = predictor.output_names[args.output_index]
    samples = output.reshape(output.shape[0], -1) if output.ndim > 1 else output.reshape(1, -1)
    results = [top_k(sample, args.top_k) for sample in samples]

    def label(index):
        return labels[index] if labels is not None and index < len(labels) else None

    if args.json:
        print(json.dumps({
            'model': args.prefix, 'input': args.input,
            'input_shapes': {name: list(np.shape(value)) for name, value in inputs.items()},
            'output': output_name, 'output_shape': list(output.shape), 'seconds': seconds,
            'predictions': [[{'rank': rank + 1, 'index': index, 'score': score,
                              'probability': probability, 'label': label(index)}
                             for rank, (index, score, probability) in enumerate(result)]
                            for result in results]}, indent=2))
        return 0
    shapes_text = ', '.join(f'{name} {tuple(np.shape(value))}' for name, value in inputs.items())
    print(f'{os.path.basename(args.prefix)}: {args.input} -> {output_name} {tuple(output.shape)}'
          f' in {seconds * 1e3:.2f} ms ({shapes_text})')
    for sample, result in enumerate(results):
        heading = f'top-{len(result)}' + (f' of sample {sample}' if len(results) > 1 else '')
        print(f'{heading}:')
        for rank, (index, score, probability) in enumerate(result):
            name = label(index)
            print(f'  {rank + 1}. class {index:<5d} p={probability:.4f}  score={score:+.4f}'
                  + (f'  {name}' if name is not None else ''))
    return 0


# --- inspect ---------------------------------------------------------------

def run_inspect(args):
    """Prints the graph of a checkpoint: every operator with its output
    shape, parameter count and multiply-accumulates, then the totals
    (parameters and bytes, MACs and FLOPs, planned memory). Shapes need the
    input shapes: --shape, or the model's own "__shape__" hints."""
    from .graph_info import analyze, format_report
    from .predictor import Predictor

    shapes = dict(parse_shape(text) for text in args.shape)
    predictor = Predictor.load(args.prefix, args.epoch, input_shapes=shapes or None)
    report = analyze(predictor)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
        return 0
    print(f'{args.prefix}:')
    print(format_report(report, max_rows=None if args.all else 60))
    if any(shape is None for shape in report.inputs.values()):
        missing = [name for name, shape in report.inputs.items() if shape is None]
        print(f'(give the input shapes for shapes and MACs, e.g. --shape {missing[0]}=1,3,224,224)')
    return 0


PLAN_KEYS = ('naive_bytes', 'inplace_bytes', 'coshare_bytes', 'planned_bytes',
             'lower_bound_bytes')


def run_plan(args):
    """Prints the internal memory (operator outputs; not weights, inputs or
    scratch) of one forward pass under each planning strategy: no sharing,
    in place only, co-share only, both (what a predictor allocates), and the
    lower bound (the most bytes live at once). Needs only the symbol file."""
    from ._core import memory_report

    shapes = dict(parse_shape(text) for text in args.shape)
    if not shapes:
        raise UsageError('give the input shapes, e.g. --shape data=1,3,224,224')
    path = args.prefix if args.prefix.endswith('.json') else args.prefix + '-symbol.json'
    try:
        with open(path, 'rb') as f:
            symbol = f.read()
    except OSError as error:
        raise UsageError(f'cannot read {path}: {error.strerror}') from None
    report = memory_report(symbol, shapes, fuse=args.fused)
    if args.json:
        print(json.dumps({key: report[key] for key in PLAN_KEYS}, indent=2))
        return 0
    labels = {'naive_bytes': 'no sharing', 'inplace_bytes': 'in place only',
              'coshare_bytes': 'co-share only', 'planned_bytes': 'planned (both)',
              'lower_bound_bytes': 'lower bound'}
    print(f'{path}: {report["entries"]} operator outputs'
          f'{" (fused graph)" if args.fused else ""}')
    for key in PLAN_KEYS:
        print(f'  {labels[key]:15s} {report[key]:>14,d} bytes  {report[key] / 2**20:9.2f} MiB')
    return 0


# --- the parser ------------------------------------------------------------

def build_parser():
    parser = argparse.ArgumentParser(
        prog='mxlite', description='Run and inspect Apache MXNet checkpoints with mxlite.')
    commands = parser.add_subparsers(dest='command', metavar='COMMAND')
    commands.required = True

    demo = commands.add_parser('demo', help='predict the bundled digits test set',
                               description=run_demo.__doc__)
    demo.add_argument('--show', type=int, default=6, help='digits to draw (default 6)')
    demo.add_argument('--threads', type=int, default=1,
                      help='threads per forward pass (default 1: a model this small gains '
                           'nothing from more)')
    demo.set_defaults(handler=run_demo)

    predict = commands.add_parser(
        'predict', help='top-k classes of a checkpoint on an image or array',
        description=run_predict.__doc__,
        epilog='Image preprocessing: resize to --size (or the shorter side to --resize-short, '
               'then a centre crop), multiply by --scale, subtract --mean, divide by --std, '
               'per channel in --channel-order. For Gluon model-zoo networks use --imagenet '
               '(--resize-short 256 for the classic crop).')
    predict.add_argument('prefix', metavar='PREFIX',
                         help='checkpoint prefix: PREFIX-symbol.json and PREFIX-%%04d.params')
    predict.add_argument('--input', required=True, metavar='FILE',
                         help='.npy / .npz (keyed by input name) array, or an image file')
    predict.add_argument('--epoch', type=int, default=0, help='params epoch (default 0)')
    predict.add_argument('--input-name', help='which input FILE is (default: the only one)')
    predict.add_argument('--shape', action='append', default=[], metavar='NAME=D1,D2,...',
                         help='bind an input shape (repeatable); default: the input\'s own')
    predict.add_argument('--top-k', type=int, default=5, help='classes to print (default 5)')
    predict.add_argument('--synset', metavar='FILE', help='class labels, one per line')
    predict.add_argument('--output-index', type=int, default=0,
                         help='which output holds the scores (default 0)')
    predict.add_argument('--json', action='store_true', help='print JSON instead of text')
    predict.add_argument('--threads', type=int, help='threads per forward pass')
    image = predict.add_argument_group('image input')
    image.add_argument('--size', help='network input size N or H,W (default: the model\'s '
                       '__shape__ hint, else 224)')
    image.add_argument('--resize-short', type=int, metavar='N',
                       help='resize the shorter side to N, then centre-crop to --size')
    image.add_argument('--scale', type=float, default=1.0,
                       help='multiply 0..255 pixels by this first (default 1)')
    image.add_argument('--mean', default='0', help='per-channel mean to subtract (default 0)')
    image.add_argument('--std', default='1', help='per-channel std to divide by (default 1)')
    image.add_argument('--imagenet', action='store_true',
                       help=f'ImageNet mean {IMAGENET_MEAN} and std {IMAGENET_STD} '
                            '(on 0..255 pixels; Gluon model zoo)')
    image.add_argument('--channel-order', choices=('rgb', 'bgr'), default='rgb',
                       help='channel order the network expects (default rgb)')
    image.add_argument('--layout', choices=('nchw', 'nhwc'), default='nchw',
                       help='input layout (default nchw)')
    predict.set_defaults(handler=run_predict)

    inspect = commands.add_parser(
        'inspect', help='nodes, shapes, parameters and MACs of a checkpoint',
        description=run_inspect.__doc__)
    inspect.add_argument('prefix', metavar='PREFIX',
                         help='checkpoint prefix: PREFIX-symbol.json and PREFIX-%%04d.params')
    inspect.add_argument('--epoch', type=int, default=0, help='params epoch (default 0)')
    inspect.add_argument('--shape', action='append', default=[], metavar='NAME=D1,D2,...',
                         help='input shape (repeatable), e.g. data=1,3,224,224')
    inspect.add_argument('--all', action='store_true', help='list every operator (default: '
                         'the first and last 30 of a long graph)')
    inspect.add_argument('--json', action='store_true', help='print JSON instead of text')
    inspect.set_defaults(handler=run_inspect)

    plan = commands.add_parser(
        'plan', help='intermediate memory of a forward pass under each planning strategy',
        description=run_plan.__doc__)
    plan.add_argument('prefix', metavar='PREFIX',
                      help='checkpoint prefix (reads PREFIX-symbol.json) or a .json path')
    plan.add_argument('--shape', action='append', default=[], metavar='NAME=D1,D2,...',
                      help='input shape (repeatable), e.g. data=1,3,224,224')
    plan.add_argument('--fused', action='store_true',
                      help='plan the optimised graph a predictor runs (default: the graph '
                           'as written, comparable with MXNet)')
    plan.add_argument('--json', action='store_true',
                      help='print the five byte counts as JSON')
    plan.set_defaults(handler=run_plan)
    return parser


def main(argv=None):
    """Entry point of the `mxlite` console script and `python -m mxlite`."""
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (MXLiteError, UsageError) as error:
        print(f'mxlite: error: {error}', file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main())
