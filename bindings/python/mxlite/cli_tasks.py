"""What `mxlite predict` makes of a model's outputs, per task, and how it
writes them (text, CSV, JSON), with its progress bar.

classify: the top-k classes of one output (scores or probabilities).
detect: boxes. Two output layouts are recognised:
  - GluonCV's detectors (SSD, YOLOv3, Faster/Mask R-CNN, CenterNet) export
    three outputs: class ids (B, N, 1), scores (B, N, 1) (CenterNet: (B, N)
    each) and boxes (B, N, 4) as (x1, y1, x2, y2) in input pixels, padded
    with id -1;
  - one (B, N, 6) output of rows [id, score, x1, y1, x2, y2]
    (MultiBoxDetection, box_nms), boxes as the model gives them (MultiBox:
    fractions of the image).
segment: per pixel, the class of the highest score of a (B, C, H, W)
  output; the classes by area, and optionally the class map as a PNG.
"""
import csv
import json
import os
import re
import sys

import numpy as np

TASKS = ('auto', 'classify', 'detect', 'segment')


def detection_layout(shapes):
    """'triple', 'rows' or None, from the output shapes (batch axis included)."""
    shapes = [tuple(shape) for shape in shapes]
    if len(shapes) >= 3:
        ids, scores, boxes = shapes[:3]
        # ids and scores are (B, N, 1), or (B, N) as CenterNet gives them.
        if (len(ids) in (2, 3) and ids[2:] in ((), (1,)) and scores == ids and
                len(boxes) == 3 and boxes[:2] == ids[:2] and boxes[2] == 4):
            return 'triple'
    if len(shapes) == 1 and len(shapes[0]) == 3 and shapes[0][2] == 6:
        return 'rows'
    return None


def choose_task(task, shapes, output_index):
    """The task to run: `task` itself unless 'auto', which is 'detect' for a
    recognised detection layout and 'classify' otherwise. A task the outputs
    cannot serve is an error message (returned second), else None."""
    layout = detection_layout(shapes)
    if task == 'auto':
        return ('detect' if layout else 'classify'), None
    if task == 'detect' and layout is None:
        return task, ('--task detect: the outputs ' + ', '.join(str(tuple(s)) for s in shapes) +
                      ' are neither (ids, scores, boxes) of shapes (B, N, 1), (B, N, 1), '
                      '(B, N, 4) nor one (B, N, 6) output of [id, score, x1, y1, x2, y2]')
    if task == 'segment' and len(shapes[output_index]) != 4:
        return task, (f'--task segment: output {output_index} has shape '
                      f'{tuple(shapes[output_index])}; per-pixel classes need (B, C, H, W)')
    return task, None


def detections(sample, layout, threshold, limit):
    """[(class index, score, [x1, y1, x2, y2])] of one sample's outputs (batch
    axis removed): score at least `threshold`, class id not negative (the
    padding), best first (equal scores in the model's order), at most `limit`."""
    if layout == 'triple':
        ids, scores, boxes = (np.asarray(a, np.float64) for a in sample[:3])
        ids, scores = ids.reshape(-1), scores.reshape(-1)
        boxes = boxes.reshape(-1, 4)
    else:
        rows = np.asarray(sample[0], np.float64).reshape(-1, 6)
        ids, scores, boxes = rows[:, 0], rows[:, 1], rows[:, 2:]
    keep = np.flatnonzero((ids >= 0) & (scores >= threshold))
    keep = keep[np.argsort(-scores[keep], kind='stable')][:limit]
    return [(int(ids[i]), float(scores[i]), [float(v) for v in boxes[i]]) for i in keep]


def segmentation(scores, k):
    """(class map (H, W), [(class index, pixels, fraction)] of the k largest
    classes) of one sample's (C, H, W) scores; ties go to the lower class."""
    class_map = np.argmax(np.asarray(scores), axis=0)
    counts = np.bincount(class_map.ravel(), minlength=scores.shape[0])
    order = np.argsort(-counts, kind='stable')
    order = order[counts[order] > 0][:k]
    total = class_map.size
    return class_map, [(int(c), int(counts[c]), float(counts[c]) / total) for c in order]


def write_mask(class_map, directory, name):
    """Writes the class map as an 8-bit PNG (16-bit past 255 classes) named
    after the input file ("x.npy[2]", sample 2 of x.npy, gives x_2.png);
    returns its path."""
    from PIL import Image
    os.makedirs(directory, exist_ok=True)
    path, sample = re.fullmatch(r'(.*?)(?:\[(\d+)\])?', name).groups()
    stem = os.path.splitext(os.path.basename(path))[0] + (f'_{sample}' if sample else '')
    path = os.path.join(directory, stem + '.png')
    dtype = np.uint8 if class_map.max(initial=0) < 256 else np.uint16
    Image.fromarray(class_map.astype(dtype)).save(path)
    return path


def write_classes(fmt, rows, label, out):
    """Top-k rows: JSON (a list of {file, predictions}), CSV (file, then
    index, label, probability, score per rank) or text."""
    if fmt == 'json':
        json.dump([{'file': name,
                    'predictions': [{'rank': rank + 1, 'index': index, 'score': score,
                                     'probability': probability, 'label': label(index)}
                                    for rank, (index, score, probability) in enumerate(result)]}
                   for name, result in rows], out, indent=2)
        out.write('\n')
    elif fmt == 'csv':
        k = max((len(result) for _, result in rows), default=0)
        writer = csv.writer(out, lineterminator='\n')
        writer.writerow(['file'] + [f'{column}_{rank}' for rank in range(1, k + 1)
                                    for column in ('index', 'label', 'probability', 'score')])
        for name, result in rows:
            writer.writerow([name] + [value for index, score, probability in result
                                      for value in (index, label(index) or '',
                                                    f'{probability:.6g}', f'{score:.6g}')])
    else:
        for name, result in rows:
            out.write(f'{name}:\n')
            for rank, (index, score, probability) in enumerate(result):
                text = label(index)
                out.write(f'  {rank + 1}. class {index:<5d} p={probability:.4f}  '
                          f'score={score:+.4f}' + (f'  {text}' if text is not None else '') + '\n')


def write_detections(fmt, rows, label, out):
    """Boxes: JSON (a list of {file, detections: [{index, label, score,
    box}]}), CSV (one row per box: file, index, label, score, x1, y1, x2, y2)
    or text."""
    if fmt == 'json':
        json.dump([{'file': name,
                    'detections': [{'index': index, 'label': label(index), 'score': score,
                                    'box': box} for index, score, box in found]}
                   for name, found in rows], out, indent=2)
        out.write('\n')
    elif fmt == 'csv':
        writer = csv.writer(out, lineterminator='\n')
        writer.writerow(['file', 'index', 'label', 'score', 'x1', 'y1', 'x2', 'y2'])
        for name, found in rows:
            for index, score, box in found:
                writer.writerow([name, index, label(index) or '', f'{score:.6g}'] +
                                [f'{v:.6g}' for v in box])
    else:
        for name, found in rows:
            out.write(f'{name}: {len(found)} box{"" if len(found) == 1 else "es"}\n')
            for index, score, box in found:
                text = label(index)
                corners = ', '.join(f'{v:.1f}' for v in box)
                out.write(f'  class {index:<5d} score={score:.4f}  [{corners}]' +
                          (f'  {text}' if text is not None else '') + '\n')


def write_segments(fmt, rows, label, out):
    """Classes by area: JSON (a list of {file, classes: [{index, label,
    pixels, fraction}], mask}), CSV (one row per class) or text."""
    if fmt == 'json':
        json.dump([{'file': name, 'mask': mask,
                    'classes': [{'index': index, 'label': label(index), 'pixels': pixels,
                                 'fraction': fraction} for index, pixels, fraction in classes]}
                   for name, (classes, mask) in rows], out, indent=2)
        out.write('\n')
    elif fmt == 'csv':
        writer = csv.writer(out, lineterminator='\n')
        writer.writerow(['file', 'index', 'label', 'pixels', 'fraction', 'mask'])
        for name, (classes, mask) in rows:
            for index, pixels, fraction in classes:
                writer.writerow([name, index, label(index) or '', pixels, f'{fraction:.6g}',
                                 mask or ''])
    else:
        for name, (classes, mask) in rows:
            out.write(f'{name}:' + (f' mask {mask}' if mask else '') + '\n')
            for index, pixels, fraction in classes:
                text = label(index)
                out.write(f'  class {index:<5d} {fraction:7.2%} of the pixels' +
                          (f'  {text}' if text is not None else '') + '\n')


class Progress:
    """A progress bar on stderr for predictions over several files: tqdm's
    when it is installed, else a counter line. On by default when stderr is
    a terminal and there is more than one file (--progress/--no-progress)."""

    def __init__(self, files, wanted):
        self.enabled = wanted if wanted is not None else (files > 1 and sys.stderr.isatty())
        self.files, self.done, self.bar = files, 0, None
        if not self.enabled:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            return
        self.bar = tqdm(total=files, unit='file', file=sys.stderr)

    def advance(self, samples, files):
        if not self.enabled:
            return
        self.done += files
        if self.bar is not None:
            self.bar.update(files)
        else:
            print(f'\rmxlite: {min(self.done, self.files)}/{self.files} files, {samples} '
                  'samples', end='', file=sys.stderr, flush=True)

    def close(self):
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(self.files - self.bar.n)
            self.bar.close()
        else:
            print(f'\rmxlite: {self.files}/{self.files} files', file=sys.stderr, flush=True)
