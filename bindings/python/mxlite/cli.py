"""The `mxlite` command (also `python -m mxlite`).

    mxlite demo                                  the bundled digits CNN: accuracy vs MXNet's
    mxlite predict PREFIX --input FILE [...]     top-k classes, boxes or per-pixel classes
                                                 of a checkpoint on images or arrays
    mxlite inspect PREFIX [--shape data=1,3,224,224]   nodes, shapes, parameters, MACs
    mxlite plan PREFIX --shape data=1,3,224,224        intermediate memory per strategy

Each subcommand has --help. Errors print one line, "mxlite: error: ...", and
exit with status 1; a bad option value is argparse's "mxlite COMMAND: error:
argument ...", status 2. Output into a closed pipe (`mxlite inspect M | head`)
ends quietly with status 141, as a Unix tool killed by SIGPIPE does.
"""
import argparse
import glob
import io
import json
import math
import os
import sys
import time

import numpy as np

from . import cli_tasks
from .errors import MXLiteError

DEMO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'demo')
SHADES = ' .:-=+*#%@'
IMAGE_EXTENSIONS = ('.png', '.jpg', '.jpeg', '.bmp', '.gif', '.tif', '.tiff', '.webp', '.ppm',
                    '.pgm')
IMAGENET_MEAN = (123.675, 116.28, 103.53)   # 0.485, 0.456, 0.406 x 255
IMAGENET_STD = (58.395, 57.12, 57.375)      # 0.229, 0.224, 0.225 x 255


class UsageError(Exception):
    """A problem with the command line or the files it names."""


class BadArgument(UsageError):
    """An option value that only the model shows to be wrong (e.g. a --mean
    with more values than the input has channels): reported through argparse,
    like a value that does not parse."""

    def __init__(self, option, message):
        super().__init__(f'{option}: {message}')
        self.option = option
        self.message = message


# --- option values ---------------------------------------------------------
# argparse `type=` functions: a value that does not parse ends in one line,
# "mxlite COMMAND: error: argument --OPTION: ...", and exit status 2.

def _int(text):
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected an integer, got {text!r}') from None


def positive_int(text):
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f'must be >= 1, got {value}')
    return value


def nonnegative_int(text):
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f'must be >= 0, got {value}')
    return value


def finite_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected a number, got {text!r}') from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f'must be a finite number, got {text!r}')
    return value


def float_list(text):
    """'0.5' or '123.7,116.3,103.5' -> a tuple of finite floats."""
    try:
        values = tuple(float(v) for v in text.split(','))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f'must be numbers separated by commas (one, or one per channel), got {text!r}'
        ) from None
    if not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f'must be finite numbers, got {text!r}')
    return values


def nonzero_float_list(text):
    values = float_list(text)
    if any(v == 0 for v in values):
        raise argparse.ArgumentTypeError(f'must not contain 0 (it divides), got {text!r}')
    return values


def image_size_arg(text):
    """'224' or '224,320' (or '224x320') -> (height, width)."""
    try:
        parts = [int(v) for v in text.replace('x', ',').split(',')]
    except ValueError:
        parts = []
    if len(parts) == 1:
        parts *= 2
    if len(parts) != 2 or min(parts) <= 0:
        raise argparse.ArgumentTypeError(f'must be N or H,W (positive integers), got {text!r}')
    return tuple(parts)


def shape_arg(text):
    """'data=1,3,224,224' -> ('data', (1, 3, 224, 224))."""
    name, sep, dims = text.partition('=')
    try:
        shape = tuple(int(d) for d in dims.split(',')) if sep else None
    except ValueError:
        shape = None
    if not name or shape is None or any(d < 0 for d in shape):
        raise argparse.ArgumentTypeError(
            f'must look like NAME=D1,D2,... (e.g. data=1,3,224,224), got {text!r}')
    return name, shape


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
    if shown:
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

def first_convolution(predictor, target):
    """(node, layout, channels) of the Convolution that reads the input
    `target` directly, or None: the layout and channel count it expects."""
    params = {node['name']: node for node in predictor._core.nodes() if node['is_param']}
    for node in predictor._core.nodes():
        if node['op'] not in ('Convolution', 'Convolution_v1') or not node['inputs'] or \
                node['inputs'][0] != target or len(node['inputs']) < 2:
            continue
        weight = params.get(node['inputs'][1])
        layout = node['attrs'].get('layout', 'NCHW').upper()
        if weight is None or len(weight['param_shape']) != 4 or layout not in ('NCHW', 'NHWC'):
            return None
        groups = int(node['attrs'].get('num_group', '1'))
        per_group = weight['param_shape'][1 if layout == 'NCHW' else 3]
        return node, layout, per_group * groups
    return None


def image_geometry(args, predictor, target):
    """(height, width, channels) of the image input `target`, from --size,
    the model's first convolution and its shape hint. Refuses a --layout
    that the first convolution contradicts."""
    hint = predictor.input_shapes.get(target)
    hint = tuple(hint) if hint is not None and len(hint) == 4 else None
    layout = args.layout
    conv = first_convolution(predictor, target)
    channels = None
    if conv is not None:
        node, expected, channels = conv
        if expected.lower() != layout:
            raise UsageError(
                f'--layout {layout}: the model expects {expected} input (its first '
                f'convolution, {node["name"]!r}, takes {channels} channel(s) on axis '
                f'{1 if expected == "NCHW" else 3}); use --layout {expected.lower()}')
    if hint is not None:
        hint_channels = hint[1] if layout == 'nchw' else hint[3]
        if channels is not None and hint_channels != channels:
            raise UsageError(
                f'the input shape {hint} does not fit --layout {layout}: the model\'s first '
                f'convolution takes {channels} channel(s), the shape has {hint_channels} on '
                f'axis {1 if layout == "nchw" else 3}')
        channels = hint_channels
    if channels is None:
        channels = 3
    if channels not in (1, 3, 4):
        raise UsageError(f'the model\'s input has {channels} channels: an image gives 1 (grey), '
                         '3 (RGB) or 4 (RGBA); give an .npy array instead')
    if args.size:
        height, width = args.size
    elif hint is not None:
        height, width = (hint[2], hint[3]) if layout == 'nchw' else (hint[1], hint[2])
    else:
        height, width = 224, 224
    return height, width, channels


def channel_statistics(args, channels):
    """--mean and --std as arrays of one value or one per channel."""
    mean, std = args.mean, args.std
    if args.imagenet:
        if channels != 3:
            raise BadArgument('--imagenet', f'ImageNet statistics are for 3 channels; the model\'s '
                              f'input has {channels}')
        mean, std = IMAGENET_MEAN, IMAGENET_STD
        if args.channel_order == 'bgr':
            mean, std = mean[::-1], std[::-1]
    for option, values in (('--mean', mean), ('--std', std)):
        if len(values) not in (1, channels):
            raise BadArgument(option, f'{len(values)} values; give 1, or one per channel (the '
                              f'model\'s input has {channels} channels)')
    return np.asarray(mean, np.float32), np.asarray(std, np.float32)


def load_image(path, args, geometry):
    """An image file as a (1, C, H, W) (or NHWC) float32 batch, preprocessed
    as the options say: resize, crop, scale, mean/std, channel order."""
    try:
        from PIL import Image
    except ImportError:
        raise UsageError('reading images needs Pillow: pip install Pillow') from None
    height, width, channels = geometry
    mean, std = channel_statistics(args, channels)
    try:
        image = Image.open(path)
        image = image.convert({1: 'L', 3: 'RGB', 4: 'RGBA'}[channels])
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
    if args.channel_order == 'bgr' and pixels.shape[2] >= 3:
        pixels = np.concatenate([pixels[:, :, 2::-1], pixels[:, :, 3:]], axis=2)
    pixels = pixels * np.float32(args.scale)
    pixels = (pixels - mean) / std
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
        return {target: load_image(path, args, image_geometry(args, predictor, target))}
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


def expand_inputs(patterns):
    """--input values as files: a file as given, a folder's images and
    arrays (sorted), a glob's matches (sorted)."""
    files = []
    for pattern in patterns:
        if os.path.isdir(pattern):
            found = sorted(os.path.join(pattern, name) for name in os.listdir(pattern)
                           if name.lower().endswith(IMAGE_EXTENSIONS + ('.npy', '.npz')))
            if not found:
                raise UsageError(f'{pattern}: no images or arrays in this folder')
            files += found
        elif not os.path.exists(pattern) and glob.has_magic(pattern):
            found = sorted(path for path in glob.glob(pattern) if os.path.isfile(path))
            if not found:
                raise UsageError(f'{pattern}: no file matches')
            files += found
        else:
            files.append(pattern)
    return files


def run_predict(args):
    """Loads a checkpoint, predicts input files (images or arrays; several
    files, folders and globs are batched) and prints, per sample, the top-k
    classes (with labels from a synset file, one label per line), the
    detected boxes of a detection model (--task detect; recognised by its
    outputs under the default --task auto), or the classes by area of a
    segmentation model (--task segment; --mask-dir writes the class maps)."""
    from .predictor import Predictor

    from .context import Context

    shapes = dict(args.shape)
    ctx = Context('gpu', args.gpu) if args.gpu is not None else None
    predictor = Predictor.load(args.prefix, args.epoch, input_shapes=shapes or None,
                               threads=args.threads, ctx=ctx)
    labels = read_labels(args.synset)
    files = expand_inputs(args.input)
    if args.json and args.format not in (None, 'json'):
        raise BadArgument('--json', f'contradicts --format {args.format}')
    if args.mask_dir is not None and args.task != 'segment':
        raise BadArgument('--mask-dir', 'needs --task segment')
    if (len(files) > 1 or args.format in ('csv', 'text') or args.output is not None or
            args.task in ('detect', 'segment')):
        return predict_many(args, predictor, labels, files)
    args.input = files[0]
    inputs = load_inputs(args.input, args, predictor)
    if not predictor._core.is_bound or any(
            tuple(predictor.input_shapes.get(name, ())) != np.shape(value)
            for name, value in inputs.items()):
        predictor.reshape({name: np.shape(value) for name, value in inputs.items()})
    if cli_tasks.choose_task(args.task, predictor.output_shapes, args.output_index)[0] != \
            'classify':
        return predict_many(args, predictor, labels, files)
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
    if args.top_k > samples.shape[1]:
        print(f'mxlite: note: --top-k {args.top_k}: the output has {samples.shape[1]} classes; '
              'printing all of them', file=sys.stderr)

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


def predict_many(args, predictor, labels, files):
    """Predicts files in batches of --batch-size samples and writes one row
    per sample (per box, for detections in CSV): text, CSV or JSON. The
    task (cli_tasks) is settled by the first batch's outputs."""
    rows = []   # (file, the task's result for one sample)
    pending = []   # (file, {name: array}) waiting for a full batch
    state = {'task': None, 'layout': None, 'noted': False}

    def result(sample):
        if state['task'] == 'detect':
            return cli_tasks.detections(sample, state['layout'], args.threshold,
                                        args.max_detections)
        scores = sample[args.output_index]
        if state['task'] == 'segment':
            return cli_tasks.segmentation(scores, args.top_k)
        if args.top_k > scores.size and not state['noted']:
            state['noted'] = True
            print(f'mxlite: note: --top-k {args.top_k}: the output has {scores.size} '
                  'classes; printing all of them', file=sys.stderr)
        return top_k(scores, args.top_k)

    def flush():
        if not pending:
            return
        names = list(pending[0][1])
        for path, arrays in pending[1:]:
            if list(arrays) != names or any(np.shape(arrays[n])[1:] != np.shape(
                    pending[0][1][n])[1:] for n in names):
                raise UsageError(f'{path}: its input shapes differ from {pending[0][0]}\'s; '
                                 'files predicted together need the same shapes')
        batch = {n: np.concatenate([np.asarray(a[n], np.float32) for _, a in pending])
                 for n in names}
        if not predictor._core.is_bound or any(
                tuple(predictor.input_shapes.get(n, ())) != batch[n].shape for n in names):
            predictor.reshape({n: batch[n].shape for n in names})
        outputs = predictor(**batch)
        outputs = outputs if isinstance(outputs, list) else [outputs]
        if not 0 <= args.output_index < len(outputs):
            raise UsageError(f'--output-index {args.output_index}: the model has '
                             f'{len(outputs)} output(s)')
        if state['task'] is None:
            shapes = [output.shape for output in outputs]
            state['task'], problem = cli_tasks.choose_task(args.task, shapes, args.output_index)
            if problem:
                raise UsageError(problem)
            state['layout'] = cli_tasks.detection_layout(shapes)
        at = 0
        for path, arrays in pending:
            count = np.shape(arrays[names[0]])[0]
            for i in range(count):
                name = path if count == 1 else f'{path}[{i}]'
                value = result([output[at + i] for output in outputs])
                if state['task'] == 'segment':
                    class_map, classes = value
                    mask = (cli_tasks.write_mask(class_map, args.mask_dir, name)
                            if args.mask_dir is not None else None)
                    value = (classes, mask)
                rows.append((name, value))
            at += count
        pending.clear()

    progress = cli_tasks.Progress(len(files), args.progress)
    queued = 0
    for path in files:
        arrays = load_inputs(path, args, predictor)
        pending.append((path, arrays))
        queued += np.shape(next(iter(arrays.values())))[0] if arrays else 1
        if queued >= args.batch_size:
            flush()
            progress.advance(len(rows), queued)
            queued = 0
    flush()
    progress.close()

    def label(index):
        return labels[index] if labels is not None and index < len(labels) else None

    fmt = args.format or ('json' if args.json else 'text')
    out = io.StringIO()
    writer = {'classify': cli_tasks.write_classes, 'detect': cli_tasks.write_detections,
              'segment': cli_tasks.write_segments}[state['task'] or 'classify']
    writer(fmt, rows, label, out)
    if args.output is None:
        sys.stdout.write(out.getvalue())
    else:
        try:
            with open(args.output, 'w', encoding='utf-8', newline='') as f:
                f.write(out.getvalue())
        except OSError as error:
            raise UsageError(f'{args.output}: cannot write: {error.strerror or error}') from None
    return 0


# --- inspect ---------------------------------------------------------------

def run_inspect(args):
    """Prints the graph of a checkpoint: every operator with its output
    shape, parameter count and multiply-accumulates, then the totals
    (parameters and bytes, MACs and FLOPs, planned memory). Shapes need the
    input shapes: --shape, or the model's own "__shape__" hints."""
    from .graph_info import analyze, format_report
    from .predictor import Predictor

    from ._core import memory_report

    shapes = dict(args.shape)
    predictor = Predictor.load(args.prefix, args.epoch, input_shapes=shapes or None)
    report = analyze(predictor)
    if report.memory is not None:
        # The predictor plans the graph it runs (fused); `mxlite plan` plans
        # the graph as written unless --fused: report both, each named.
        with open(f'{args.prefix}-symbol.json', 'rb') as f:
            written = memory_report(f.read(), dict(predictor._core.input_shapes), fuse=False)
        report.memory_as_written = {'planned_bytes': written['planned_bytes'],
                                    'naive_bytes': written['naive_bytes']}
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

    shapes = dict(args.shape)
    if not shapes:
        raise UsageError('give the input shapes, e.g. --shape data=1,3,224,224')
    path = args.prefix if args.prefix.endswith('.json') else args.prefix + '-symbol.json'
    try:
        with open(path, 'rb') as f:
            symbol = f.read()
    except OSError as error:
        raise UsageError(f'cannot read {path}: {error.strerror}') from None
    report = memory_report(symbol, shapes, fuse=args.fused)
    graph = 'fused' if args.fused else 'as written'
    if args.json:
        print(json.dumps({**{key: report[key] for key in PLAN_KEYS}, 'graph': graph}, indent=2))
        return 0
    labels = {'naive_bytes': 'no sharing', 'inplace_bytes': 'in place only',
              'coshare_bytes': 'co-share only', 'planned_bytes': 'planned (both)',
              'lower_bound_bytes': 'lower bound'}
    print(f'{path}: {report["entries"]} operator outputs of the '
          f'{"fused graph (what a predictor runs)" if args.fused else "graph as written"}')
    for key in PLAN_KEYS:
        print(f'  {labels[key]:15s} {report[key]:>14,d} bytes  {report[key] / 2**20:9.2f} MiB')
    return 0


# --- the parser ------------------------------------------------------------

def build_parser():
    parser = argparse.ArgumentParser(
        prog='mxlite', description='Run and inspect Apache MXNet checkpoints with mxlite.')
    parser.add_argument('--version', action='version', version=version_text(),
                        help='print the version of mxlite (and where its library is) and exit')
    commands = parser.add_subparsers(dest='command', metavar='COMMAND')
    commands.required = True

    demo = commands.add_parser('demo', help='predict the bundled digits test set',
                               description=run_demo.__doc__)
    demo.add_argument('--show', type=nonnegative_int, default=6,
                      help='digits to draw (default 6; 0 draws none)')
    demo.add_argument('--threads', type=positive_int, default=1,
                      help='threads per forward pass (default 1: a model this small gains '
                           'nothing from more)')
    demo.set_defaults(handler=run_demo, parser=demo)

    predict = commands.add_parser(
        'predict', help='classes, boxes or per-pixel classes of a checkpoint on images or '
                        'arrays',
        description=run_predict.__doc__,
        epilog='Image preprocessing: resize to --size (or the shorter side to --resize-short, '
               'then a centre crop), multiply by --scale, subtract --mean, divide by --std, '
               'per channel in --channel-order. For Gluon model-zoo networks use --imagenet '
               '(--resize-short 256 for the classic crop).')
    predict.add_argument('prefix', metavar='PREFIX',
                         help='checkpoint prefix: PREFIX-symbol.json and PREFIX-%%04d.params')
    predict.add_argument('--input', required=True, metavar='FILE', nargs='+',
                         help='.npy / .npz (keyed by input name) array, or an image file; '
                              'several files, folders or (quoted) globs are batched')
    predict.add_argument('--epoch', type=nonnegative_int, default=0,
                         help='params epoch (default 0)')
    predict.add_argument('--input-name', help='which input FILE is (default: the only one)')
    predict.add_argument('--shape', action='append', default=[], metavar='NAME=D1,D2,...',
                         type=shape_arg,
                         help='bind an input shape (repeatable); default: the input\'s own')
    predict.add_argument('--top-k', type=positive_int, default=5,
                         help='classes to print (default 5; more than the model has prints '
                              'all)')
    predict.add_argument('--synset', metavar='FILE', help='class labels, one per line')
    predict.add_argument('--output-index', type=nonnegative_int, default=0,
                         help='which output holds the scores (default 0)')
    predict.add_argument('--task', choices=cli_tasks.TASKS, default='auto',
                         help='classify (top-k), detect (boxes) or segment (per-pixel '
                              'classes); auto (default): detect for a detection model\'s '
                              'outputs, else classify')
    predict.add_argument('--threshold', type=finite_float, default=0.5,
                         help='--task detect: lowest score printed (default 0.5)')
    predict.add_argument('--max-detections', type=positive_int, default=100,
                         help='--task detect: most boxes per sample (default 100)')
    predict.add_argument('--mask-dir', metavar='DIR',
                         help='--task segment: write each class map there as a PNG')
    predict.add_argument('--progress', action=argparse.BooleanOptionalAction, default=None,
                         help='a progress bar on stderr (default: when stderr is a terminal '
                              'and there are several files)')
    predict.add_argument('--json', action='store_true', help='print JSON instead of text')
    predict.add_argument('--format', choices=('text', 'csv', 'json'),
                         help='one row per sample: text, CSV or JSON (the default for one '
                              'file without --output is the report above)')
    predict.add_argument('--output', metavar='FILE', help='write the rows to FILE')
    predict.add_argument('--batch-size', type=positive_int, default=8,
                         help='samples per forward pass over several files (default 8)')
    predict.add_argument('--threads', type=positive_int, help='threads per forward pass')
    predict.add_argument('--gpu', type=nonnegative_int, metavar='N',
                         help='run on CUDA GPU N (a package built with MXLITE_CUDA=1, '
                              'docs/cuda.md)')
    image = predict.add_argument_group('image input')
    image.add_argument('--size', type=image_size_arg,
                       help='network input size N or H,W (default: the model\'s __shape__ '
                            'hint, else 224)')
    image.add_argument('--resize-short', type=positive_int, metavar='N',
                       help='resize the shorter side to N, then centre-crop to --size')
    image.add_argument('--scale', type=finite_float, default=1.0,
                       help='multiply 0..255 pixels by this first (default 1)')
    image.add_argument('--mean', type=float_list, default=(0.0,),
                       help='mean to subtract: one value or one per channel (default 0)')
    image.add_argument('--std', type=nonzero_float_list, default=(1.0,),
                       help='std to divide by: one value or one per channel (default 1)')
    image.add_argument('--imagenet', action='store_true',
                       help=f'ImageNet mean {IMAGENET_MEAN} and std {IMAGENET_STD} '
                            '(on 0..255 pixels; Gluon model zoo)')
    image.add_argument('--channel-order', choices=('rgb', 'bgr'), default='rgb',
                       help='channel order the network expects (default rgb)')
    image.add_argument('--layout', choices=('nchw', 'nhwc'), default='nchw',
                       help='input layout (default nchw)')
    predict.set_defaults(handler=run_predict, parser=predict)

    inspect = commands.add_parser(
        'inspect', help='nodes, shapes, parameters and MACs of a checkpoint',
        description=run_inspect.__doc__)
    inspect.add_argument('prefix', metavar='PREFIX',
                         help='checkpoint prefix: PREFIX-symbol.json and PREFIX-%%04d.params')
    inspect.add_argument('--epoch', type=nonnegative_int, default=0,
                         help='params epoch (default 0)')
    inspect.add_argument('--shape', action='append', default=[], metavar='NAME=D1,D2,...',
                         type=shape_arg,
                         help='input shape (repeatable), e.g. data=1,3,224,224')
    inspect.add_argument('--all', action='store_true', help='list every operator (default: '
                         'the first and last 30 of a long graph)')
    inspect.add_argument('--json', action='store_true', help='print JSON instead of text')
    inspect.set_defaults(handler=run_inspect, parser=inspect)

    plan = commands.add_parser(
        'plan', help='intermediate memory of a forward pass under each planning strategy',
        description=run_plan.__doc__)
    plan.add_argument('prefix', metavar='PREFIX',
                      help='checkpoint prefix (reads PREFIX-symbol.json) or a .json path')
    plan.add_argument('--shape', action='append', default=[], metavar='NAME=D1,D2,...',
                      type=shape_arg,
                      help='input shape (repeatable), e.g. data=1,3,224,224')
    plan.add_argument('--fused', action='store_true',
                      help='plan the optimised graph a predictor runs (default: the graph '
                           'as written, comparable with MXNet)')
    plan.add_argument('--json', action='store_true',
                      help='print the five byte counts as JSON')
    plan.set_defaults(handler=run_plan, parser=plan)
    return parser


def version_text():
    from . import __version__, lib_path
    try:
        library = f' (library: {lib_path()})'
    except MXLiteError:
        library = ' (library: not installed)'
    return f'mxlite {__version__}{library}'


def main(argv=None):
    """Entry point of the `mxlite` console script and `python -m mxlite`."""
    args = build_parser().parse_args(argv)
    try:
        status = args.handler(args)
        sys.stdout.flush()   # a closed pipe shows here, not at interpreter exit
        return status
    except BadArgument as error:
        args.parser.error(f'argument {error.option}: {error.message}')   # exits with 2
    except (MXLiteError, UsageError) as error:
        print(f'mxlite: error: {error}', file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`mxlite inspect M | head`): stop quietly, as
        # a Unix tool killed by SIGPIPE does. Python would otherwise report
        # the error again when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + 13   # 128 + SIGPIPE, the status a shell shows for such a tool


if __name__ == '__main__':
    sys.exit(main())
