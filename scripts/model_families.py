#!/usr/bin/env python3
"""Export GluonCV / GluonNLP / plain-symbol models with MXNet 1.9.1 for the model-family report.

Runs inside the MXNet oracle venv (scripts/setup_oracle.sh installs GluonCV 0.10.5.post0 and
GluonNLP 0.10.0 there). Every model is built with random weights (pretrained=False,
pretrained_base=False: nothing is downloaded), BatchNorm statistics, gamma/beta and every bias
randomised so that no normalisation or bias bug hides behind the defaults, hybridized, run once
and exported. Usage::

    model_families.py --suite OUTDIR            # one small model per family (CI: build/fixtures/families)
    model_families.py --all OUTDIR [--limit N] [--timeout S] [--models a,b] [--skip REGEX]
                                                # every name of gluoncv.model_zoo.get_model_list()

OUTDIR receives, per model, ``NAME-symbol.json`` + ``NAME-0000.params`` (Gluon ``export``),
``NAME-io.npz`` (``input:<name>`` and ``output:<i>``: MXNet's classic executor run on the files
re-loaded from disk, as in scripts/make_fixtures.py), and ``manifest.json``::

    {"generated_by": ..., "mode": "suite" | "all",
     "models": {NAME: {"family": str, "status": "exported" | "export failed" | "needs download"
                       | "timed out" | "skipped", "error": str, "expect": "match" | "report",
                       "inputs": {name: shape}, "outputs": [shape, ...], "ops": [op, ...],
                       "max_abs_output": [...], "notes": str, "seconds": float,
                       "script_sha256": str}}}

A model whose Spec has ``batch`` N > 1 is run again at batch N from the same files (axis 0 of
every input: the batch-1 input, then new rows) into ``NAME-bN-io.npz``; its entry has
``"batch": {"n": N, "status": ..., "inputs": ..., "outputs": [...], "error": ...}``. For a
detector (Spec ``scores``) ``score_ties`` counts the neighbouring detections whose order is
within rounding (see score_ties), at batch 1 and in ``batch``. A Spec with ``nms_draw`` (the
R-CNNs) redraws its weights and input (seed NAME#k, from k = nms_draw on) until MXNet's own
values leave every _contrib_box_nms decision clear of rounding (nms_margins); its entry has
``"nms": {"draw": k, "margins": {...}, "well_conditioned": bool}``.

``expect: match`` (suite only) means mxlite is expected to run the model and match MXNet;
tests/test_model_families.py asserts it. ``--suite`` redoes a model when this script changed
or its files are gone. ``--all`` resumes: a model already in the manifest is skipped (delete
the manifest to start again), so a long run can be done in chunks (``--limit``) while
scripts/model_report.py checks and prunes what is exported.
"""

import os

os.environ["MXNET_MKLDNN_ENABLED"] = "0"
os.environ["MXNET_SUBGRAPH_BACKEND"] = "NONE"
os.environ["MXNET_USE_MKLDNN_RNN"] = "0"  # see scripts/make_fixtures.py
os.environ["MXNET_STORAGE_FALLBACK_LOG_VERBOSE"] = "0"

import argparse  # noqa: E402
import contextlib  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Callable, Dict, List, Tuple  # noqa: E402

# No model file may come from a cache either: point MXNet's home at an empty directory.
os.environ["MXNET_HOME"] = tempfile.mkdtemp(prefix="model_families_home_")

import numpy as np  # noqa: E402
import mxnet as mx  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_fixtures import (graph_ops, load_checkpoint, rel_err, run_symbol, save_npz,  # noqa: E402
                           seed_all, shape_list, to_json)

warnings.filterwarnings("ignore")
GENERATED_BY = "scripts/model_families.py"
CTX = mx.cpu()


class NeedsDownload(RuntimeError):
    pass


def _no_download(*args, **kwargs):
    raise NeedsDownload("needs a download (pretrained weights or files): %s" %
                        ", ".join(str(a) for a in args[:1]))


def block_downloads() -> None:
    """Make every GluonCV / GluonNLP / Gluon download path raise NeedsDownload."""
    import gluoncv
    import gluoncv.model_zoo.model_store as cv_store
    import gluoncv.utils
    import gluoncv.utils.download
    import mxnet.gluon.model_zoo.model_store as mx_store
    cv_store.get_model_file = _no_download
    mx_store.get_model_file = _no_download
    gluoncv.utils.download = _no_download
    mx.gluon.utils.download = _no_download
    for mod in list(sys.modules.values()):
        name = getattr(mod, "__name__", "")
        if name.startswith(("gluoncv", "gluonnlp")):
            for attr in ("download", "get_model_file"):
                if callable(getattr(mod, attr, None)) and not inspect.ismodule(getattr(mod, attr)):
                    setattr(mod, attr, _no_download)
    try:
        import gluonnlp  # noqa: F401
        import gluonnlp.model.utils as nlp_utils
        nlp_utils._load_pretrained_params = _no_download
    except ImportError:
        pass


# --------------------------------------------------------------------------
# model specs
# --------------------------------------------------------------------------

@dataclass
class Spec:
    name: str
    family: str
    build: Callable[[], object]          # a HybridBlock, or (symbol, {param: value})
    inputs: List[Dict[str, tuple]]       # candidate input shapes, tried in order
    expect: str = "report"               # "match": the suite asserts mxlite matches
    notes: str = ""
    batch: int = 2                       # > 1: also run the files at this batch (axis 0 of
                                         # every input); 0: the inputs have no batch axis 0
    scores: int = -1                     # > 0: outputs scores-1, scores, scores+1 are a
                                         # detector's ids, scores, boxes (see score_ties)
    nms_draw: int = -1                   # >= 0: redraw weights and input, from this draw on,
                                         # until every box_nms is well_conditioned


def reset_ctx_skips_uninitialised():
    """GluonCV's TSN builders (inceptionv1_ucf101 & co.) end with collect_params().reset_ctx(ctx),
    which MXNet refuses for parameters not initialised yet (pretrained_base=False leaves them
    so): let it pass over those, as build_gluon initialises them next."""
    original = mx.gluon.Parameter.reset_ctx

    def reset_ctx(self, ctx):
        if self._data is None and self._deferred_init == ():
            return
        original(self, ctx)
    return replaced(mx.gluon.Parameter, "reset_ctx", reset_ctx)


def gluoncv_model(name: str, **kwargs) -> Callable[[], object]:
    """A zoo model without downloads. Builders that take no pretrained_base (darknet53) or none
    of the family's keyword arguments (the HRNet segmentation nets and crop_size) are called
    again without them."""
    def build():
        from gluoncv import model_zoo
        base = dict(pretrained=False, pretrained_base=False)
        base.update(kwargs)
        while True:
            try:
                with reset_ctx_skips_uninitialised():
                    return model_zoo.get_model(name, **base)
            except (TypeError, Warning) as e:  # MXNet's Block raises Warning on unknown kwargs
                unknown = re.search(r"unexpected keyword argument '(\w+)'", str(e))
                if unknown and unknown.group(1) in base and unknown.group(1) != "pretrained":
                    base.pop(unknown.group(1))
                elif "pretrained_base" in base and ("pretrained_base" in str(e) or
                                                    "should only accept kwargs" in str(e)):
                    base.pop("pretrained_base")
                else:
                    raise
    return build


def quantized_gluoncv(name: str, side: int, **kwargs) -> Callable[[], object]:
    """GluonCV's `name` as its *_int8 zoo models ship: MXNet's MKLDNN quantization pass
    (quantize_model_mkldnn, calib_mode 'naive') over the float symbol, calibrated on one
    random batch with Xavier weights. The suite then draws new weights,
    as the zoo's int8 models with pretrained=False have weights their ranges were not
    calibrated on: quantize_v2 -> _sg_mkldnn_conv (bn, relu, residual sum) ->
    _contrib_quantized_pooling -> _contrib_dequantize -> FullyConnected. It is returned as
    a SymbolBlock, which build_gluon initialises and randomises like the float models."""
    def build():
        from mxnet.contrib import quantization
        net = gluoncv_model(name, **kwargs)()
        net.initialize(mx.init.Xavier(), ctx=CTX)
        rng = np.random.RandomState(0)
        calib = rng.uniform(-1.0, 1.0, (2, 3, side, side)).astype(np.float32)
        net(mx.nd.array(calib, ctx=CTX))
        sym = net(mx.sym.var("data"))
        sym = sym[0] if isinstance(sym, (list, tuple)) else sym
        params = {p.name: p.data() for p in net.collect_params().values()}
        args = {k: v for k, v in params.items() if k in sym.list_arguments()}
        auxs = {k: v for k, v in params.items() if k in sym.list_auxiliary_states()}
        qsym, _, _ = quantization.quantize_model_mkldnn(
            sym, args, auxs, ctx=CTX, calib_mode="naive",
            calib_data=mx.io.NDArrayIter(data=calib, batch_size=2), num_calib_examples=2,
            quantized_dtype="auto", quantize_mode="full", logger=None,
            excluded_op_names=["FullyConnected", "_sg_mkldnn_fully_connected"])
        # The float classifier stays a plain FullyConnected, as in the zoo's int8 models (the
        # pass wraps it in a float _sg_mkldnn_fully_connected, which mxlite does not run).
        graph = json.loads(qsym.tojson())
        for node in graph["nodes"]:
            inner = [n for n in node.get("subgraphs", [{}])[0].get("nodes", []) if n["op"] != "null"]
            if node["op"] == "_sg_mkldnn_fully_connected" and [n["op"] for n in inner] == ["FullyConnected"]:
                node.update(op="FullyConnected", name=inner[0]["name"], attrs=inner[0]["attrs"])
                del node["subgraphs"]
        qsym = mx.sym.load_json(json.dumps(graph))
        # A block, so that the suite draws its weights as for every GluonCV model.
        return mx.gluon.SymbolBlock(qsym, [mx.sym.var("data")])
    return build


def image(*sides) -> List[Dict[str, tuple]]:
    out = []
    for s in sides:
        h, w = (s, s) if isinstance(s, int) else s
        out.append({"data": (1, 3, h, w)})
    return out


def video(*cases) -> List[Dict[str, tuple]]:
    return [{"data": (1, 3, t, s, s)} for t, s in cases]


def unrolled_lstm():
    """A plain-symbol mx.rnn LSTM unrolled over 5 steps (begin state: _zeros)."""
    data = mx.sym.Variable("data")
    cell = mx.rnn.SequentialRNNCell()
    cell.add(mx.rnn.LSTMCell(num_hidden=16, prefix="lstm0_"))
    cell.add(mx.rnn.LSTMCell(num_hidden=16, prefix="lstm1_"))
    outputs, _ = cell.unroll(length=5, inputs=data, merge_outputs=True, layout="NTC")
    pred = mx.sym.FullyConnected(mx.sym.reshape(outputs, shape=(-1, 16)), num_hidden=10, name="pred")
    return mx.sym.softmax(pred, name="prob")


def gluon_rnn(kind: str, **kwargs) -> Callable[[], object]:
    """A Gluon rnn.LSTM / rnn.GRU given its begin states as inputs (data0 the sequence,
    data1... the states), returning the output and the final states: the export has the
    layer's Reshape + _rnn_param_concat of every weight and bias, then RNN."""
    def build():
        from mxnet.gluon import rnn

        class WithStates(mx.gluon.HybridBlock):
            def __init__(self):
                super().__init__(prefix=kind.lower() + "_")
                with self.name_scope():
                    self.layer = getattr(rnn, kind)(**kwargs)

            def hybrid_forward(self, F, x, *states):
                out, ends = self.layer(x, list(states))
                return [out] + ends
        return WithStates()
    return build


def thin_r2plus1d():
    from gluoncv.model_zoo.action_recognition.r2plus1d import R2Plus1D, BasicBlock
    return R2Plus1D(nclass=10, block=BasicBlock, layers=[1, 1, 1, 1])


def thin_p3d():
    from gluoncv.model_zoo.action_recognition.p3d import P3D, Bottleneck
    return P3D(nclass=10, block=Bottleneck, layers=[1, 1, 1, 1])


def tsn_resnet(depth: int, nclass: int = 10):
    """GluonCV's resnetNN_v1b_kinetics400 & co. pass pretrained_base=True whatever they are
    given (0.10.5): build their ActionRecResNetV1b directly."""
    def build():
        from gluoncv.model_zoo.action_recognition.actionrec_resnetv1b import ActionRecResNetV1b
        return ActionRecResNetV1b(depth=depth, nclass=nclass, pretrained_base=False,
                                  dropout_ratio=0.5, init_std=0.01)
    return build


def tiny_bert():
    import gluonnlp as nlp
    encoder = nlp.model.BERTEncoder(num_layers=2, units=32, hidden_size=64, max_length=16,
                                    num_heads=4, dropout=0.0, output_attention=False,
                                    output_all_encodings=False)
    return nlp.model.BERTModel(encoder, vocab_size=50, token_type_vocab_size=2, units=32,
                               embed_size=32, word_embed=None, use_pooler=True,
                               use_decoder=False, use_classifier=False)


def rcnn_head(roi_op: str):
    """MXNet's example R-CNN (example/rcnn, symbol_vgg/resnet test symbols) in miniature: a
    stride-8 conv trunk, the RPN (3x3 conv, 1x1 cls and bbox convs, channel softmax through
    Reshape), _contrib_Proposal, ROIPooling or _contrib_ROIAlign on the rois, two FC layers and
    the class / box heads. Inputs data and im_info; outputs the rois, class probabilities and
    box deltas."""
    def build():
        num_anchors, num_classes = 6, 5
        data, im_info = mx.sym.Variable("data"), mx.sym.Variable("im_info")
        x = data
        for i, filters in enumerate((16, 24, 32)):
            x = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=filters,
                                   name="conv%d" % i)
            x = mx.sym.Activation(x, act_type="relu", name="relu%d" % i)
            x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool%d" % i)
        rpn = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=32, name="rpn_conv_3x3")
        rpn = mx.sym.Activation(rpn, act_type="relu", name="rpn_relu")
        cls_score = mx.sym.Convolution(rpn, kernel=(1, 1), num_filter=2 * num_anchors,
                                       name="rpn_cls_score")
        bbox_pred = mx.sym.Convolution(rpn, kernel=(1, 1), num_filter=4 * num_anchors,
                                       name="rpn_bbox_pred")
        cls_reshape = mx.sym.Reshape(cls_score, shape=(0, 2, -1, 0), name="rpn_cls_score_reshape")
        cls_prob = mx.sym.SoftmaxActivation(cls_reshape, mode="channel", name="rpn_cls_prob")
        cls_prob = mx.sym.Reshape(cls_prob, shape=(0, 2 * num_anchors, -1, 0),
                                  name="rpn_cls_prob_reshape")
        rois = mx.sym.contrib.Proposal(cls_prob, bbox_pred, im_info, feature_stride=8,
                                       scales=(2, 4), ratios=(0.5, 1, 2), rpn_pre_nms_top_n=120,
                                       rpn_post_nms_top_n=24, threshold=0.7, rpn_min_size=4,
                                       name="rois")
        if roi_op == "ROIPooling":
            pool = mx.sym.ROIPooling(x, rois, pooled_size=(3, 3), spatial_scale=0.125,
                                     name="roi_pool5")
        else:
            pool = mx.sym.contrib.ROIAlign(x, rois, pooled_size=(3, 3), spatial_scale=0.125,
                                           sample_ratio=2, name="roi_align5")
        h = mx.sym.Flatten(pool, name="flatten")
        for i in (6, 7):
            h = mx.sym.FullyConnected(h, num_hidden=48, name="fc%d" % i)
            h = mx.sym.Activation(h, act_type="relu", name="relu%d" % i)
        cls = mx.sym.FullyConnected(h, num_hidden=num_classes, name="cls_score")
        cls = mx.sym.softmax(cls, name="cls_prob")
        box = mx.sym.FullyConnected(h, num_hidden=4 * num_classes, name="bbox_pred")
        return mx.sym.Group([rois, cls, box])
    return build


def fpn_roi_levels():
    """GluonCV's FPN R-CNN pooling (_pyramid_roi_feats) in miniature: each roi goes to one of two
    feature levels by its size; each level's _contrib_ROIAlign gets every roi, the others' with
    batch index -1 (pooled to zeros), and the levels are summed. Inputs the two levels and the
    boxes (x1, y1, x2, y2 in image pixels); the output (R, C, 3, 3)."""
    def build():
        level0, level1 = mx.sym.Variable("level0"), mx.sym.Variable("level1")
        boxes = mx.sym.Variable("boxes")
        width = mx.sym.slice_axis(boxes, axis=1, begin=2, end=3) - \
            mx.sym.slice_axis(boxes, axis=1, begin=0, end=1)
        height = mx.sym.slice_axis(boxes, axis=1, begin=3, end=4) - \
            mx.sym.slice_axis(boxes, axis=1, begin=1, end=2)
        large = mx.sym.sqrt(width * height) >= 12  # level 1 (stride 4) for the larger rois
        pooled = []
        for index, (feature, scale) in enumerate(((level0, 0.5), (level1, 0.25))):
            mine = large if index else 1 - large
            batch_index = mx.sym.where(mine, mx.sym.zeros_like(mine), mx.sym.ones_like(mine) * -1)
            rois = mx.sym.concat(batch_index, boxes, dim=1)
            pooled.append(mx.sym.contrib.ROIAlign(feature, rois, pooled_size=(3, 3),
                                                  spatial_scale=scale, sample_ratio=2,
                                                  name="roi_align_level%d" % index))
        return mx.sym.ElementWiseSum(*pooled, name="pooled")
    return build


def ssd_symbol():
    """MXNet's example SSD (example/ssd/symbol/common.py multibox_layer) in miniature: two conv
    feature maps (4x4 and 2x2 on a 32x32 image), per map MultiBoxPrior and 3x3 loc / cls convs, transposed and
    flattened, concatenated; class scores reshaped to (batch, classes + 1, anchors) through a
    channel softmax, then MultiBoxDetection. MultiBoxDetection sorts the 84 scores and
    suppresses by IoU: with export_symbol's weights the closest two scores are 6.6e-5 apart
    (checked by perturbing the input by 1e-7..3e-6: no decision changes), so rounding cannot
    reorder them."""
    num_classes = 3
    data = mx.sym.Variable("data")
    x = data
    for i, filters in enumerate((16, 24, 32)):
        x = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=filters, name="conv%d" % i)
        x = mx.sym.Activation(x, act_type="relu", name="relu%d" % i)
        x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool%d" % i)
    f1 = x
    f2 = mx.sym.Convolution(f1, kernel=(3, 3), stride=(2, 2), pad=(1, 1), num_filter=32,
                            name="multi_feat_2_conv_3x3")
    f2 = mx.sym.Activation(f2, act_type="relu", name="multi_feat_2_relu")
    locs, clss, anchors = [], [], []
    for k, (feat, sizes, ratios) in enumerate([(f1, (0.2, 0.272), (1, 2, 0.5)),
                                               (f2, (0.37, 0.447), (1, 2, 0.5, 3))]):
        n = len(sizes) + len(ratios) - 1
        loc = mx.sym.Convolution(feat, kernel=(3, 3), pad=(1, 1), num_filter=4 * n,
                                 name="feat%d_loc_pred_conv" % k)
        loc = mx.sym.transpose(loc, axes=(0, 2, 3, 1))
        locs.append(mx.sym.Flatten(loc))
        cls = mx.sym.Convolution(feat, kernel=(3, 3), pad=(1, 1), num_filter=(num_classes + 1) * n,
                                 name="feat%d_cls_pred_conv" % k)
        cls = mx.sym.transpose(cls, axes=(0, 2, 3, 1))
        clss.append(mx.sym.Flatten(cls))
        anchor = mx.sym.contrib.MultiBoxPrior(feat, sizes=sizes, ratios=ratios, clip=False,
                                              steps=(0.25, 0.25) if k == 0 else (0.5, 0.5),
                                              name="feat%d_anchors" % k)
        anchors.append(mx.sym.Flatten(anchor))
    loc_preds = mx.sym.Concat(*locs, num_args=len(locs), dim=1, name="multibox_loc_pred")
    cls_preds = mx.sym.Concat(*clss, num_args=len(clss), dim=1)
    cls_preds = mx.sym.Reshape(cls_preds, shape=(0, -1, num_classes + 1))
    cls_preds = mx.sym.transpose(cls_preds, axes=(0, 2, 1), name="multibox_cls_pred")
    anchor_boxes = mx.sym.Concat(*anchors, num_args=len(anchors), dim=1)
    anchor_boxes = mx.sym.Reshape(anchor_boxes, shape=(0, -1, 4), name="multibox_anchors")
    cls_prob = mx.sym.SoftmaxActivation(cls_preds, mode="channel", name="cls_prob")
    return mx.sym.contrib.MultiBoxDetection(cls_prob, loc_preds, anchor_boxes, name="detection",
                                            nms_threshold=0.45, force_suppress=False,
                                            variances=(0.1, 0.1, 0.2, 0.2), nms_topk=400)


def mobilefacenet():
    """InsightFace's MobileFaceNet (recognition/symbol/fmobilefacenet.py) in miniature:
    Conv-BN-PReLU (LeakyReLU act_type prelu), depthwise convs, residual linear bottlenecks,
    the GDC head (a global depthwise 4x4 conv, BN), FC to a 32-d embedding, BatchNorm fc1
    (fix_gamma, eps 2e-5) and the L2Normalization ArcFace compares."""
    data = mx.sym.Variable("data")

    def conv(x, filters, kernel=(1, 1), stride=(1, 1), pad=(0, 0), group=1, act=True, name=""):
        x = mx.sym.Convolution(x, num_filter=filters, kernel=kernel, stride=stride, pad=pad,
                               num_group=group, no_bias=True, name=name + "_conv2d")
        x = mx.sym.BatchNorm(x, fix_gamma=False, eps=2e-5, momentum=0.9, name=name + "_batchnorm")
        if act:
            x = mx.sym.LeakyReLU(x, act_type="prelu", name=name + "_relu")
        return x

    x = mx.sym.identity(data, name="id")
    x = (x - 127.5) * 0.0078125
    x = conv(x, 16, (3, 3), (2, 2), (1, 1), name="conv_1")
    x = conv(x, 16, (3, 3), (1, 1), (1, 1), group=16, name="conv_2_dw")
    for i, (cin, cout, stride, expand) in enumerate([(16, 24, 2, 2), (24, 24, 1, 2),
                                                    (24, 32, 2, 2), (32, 32, 1, 2)]):
        name = "res_%d" % i
        y = conv(x, cin * expand, name=name + "_sep")
        y = conv(y, cin * expand, (3, 3), (stride, stride), (1, 1), group=cin * expand,
                 name=name + "_dw")
        y = conv(y, cout, act=False, name=name + "_proj")
        x = x + y if stride == 1 and cin == cout else y
    x = conv(x, 64, name="conv_6sep")
    x = conv(x, 64, (4, 4), group=64, act=False, name="conv_6dw4_4")  # GDC: 4x4 -> 1x1
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=32, name="pre_fc1")
    x = mx.sym.BatchNorm(x, fix_gamma=True, eps=2e-5, momentum=0.9, name="fc1")
    return mx.sym.L2Normalization(x, mode="instance", name="embedding")


def retinaface_heads():
    """RetinaFace's heads (insightface/RetinaFace, symbol_common.py) in miniature: a stride-8/16/32
    conv trunk on a 100x100 image (maps 13x13, 7x7, 4x4: each upsampled map is one row and
    column too large), FPN top-down with UpSampling nearest + Crop (and slice_like), SSH context
    modules, and per level the class softmax through Reshape (0, 2, -1, 0), boxes and five
    landmarks."""
    data = mx.sym.Variable("data")
    num_anchors = 2

    def conv_act(x, filters, kernel, stride, pad, name, act=True):
        x = mx.sym.Convolution(x, kernel=kernel, stride=stride, pad=pad, num_filter=filters,
                               name=name)
        x = mx.sym.BatchNorm(x, fix_gamma=False, eps=2e-5, name=name + "_bn")
        return mx.sym.Activation(x, act_type="relu", name=name + "_relu") if act else x

    x, feats = data, []
    for i, filters in enumerate((8, 16, 24, 32, 32)):
        x = conv_act(x, filters, (3, 3), (2, 2), (1, 1), "stage%d" % i)
        if i >= 2:
            feats.append(x)
    c3, c4, c5 = feats  # 13x13, 7x7, 4x4 for 100x100 (50, 25, 13, 7, 4)
    l5 = conv_act(c5, 16, (1, 1), (1, 1), (0, 0), "ssh_c3_lateral")
    l4 = conv_act(c4, 16, (1, 1), (1, 1), (0, 0), "ssh_c2_lateral")
    up5 = mx.sym.UpSampling(l5, scale=2, sample_type="nearest", workspace=512, name="ssh_c3_up",
                            num_args=1)
    up5 = mx.sym.Crop(*[up5, l4], name="crop0")
    l4 = conv_act(l4 + up5, 16, (3, 3), (1, 1), (1, 1), "ssh_c2_aggr")
    l3 = conv_act(c3, 16, (1, 1), (1, 1), (0, 0), "ssh_m1_red_conv")
    up4 = mx.sym.UpSampling(l4, scale=2, sample_type="nearest", workspace=512, name="ssh_m2_red_up",
                            num_args=1)
    up4 = mx.sym.slice_like(up4, l3, axes=(2, 3), name="slice_like0")
    l3 = conv_act(l3 + up4, 16, (3, 3), (1, 1), (1, 1), "ssh_c1_aggr")

    def ssh(x, filters, name):
        c3x3 = conv_act(x, filters // 2, (3, 3), (1, 1), (1, 1), name + "_conv1", act=False)
        t = conv_act(x, filters // 4, (3, 3), (1, 1), (1, 1), name + "_context_conv1")
        c5x5 = conv_act(t, filters // 4, (3, 3), (1, 1), (1, 1), name + "_context_conv2",
                        act=False)
        t = conv_act(t, filters // 4, (3, 3), (1, 1), (1, 1), name + "_context_conv3_1")
        c7x7 = conv_act(t, filters // 4, (3, 3), (1, 1), (1, 1), name + "_context_conv3_2",
                        act=False)
        out = mx.sym.Concat(*[c3x3, c5x5, c7x7], dim=1, name=name + "_concat")
        return mx.sym.Activation(out, act_type="relu", name=name + "_concat_relu")

    outputs = []
    for stride, feat in ((8, l3), (16, l4), (32, l5)):
        m = ssh(feat, 16, "ssh_m%d_det" % stride)
        cls = mx.sym.Convolution(m, kernel=(1, 1), num_filter=2 * num_anchors,
                                 name="face_rpn_cls_score_stride%d" % stride)
        cls = mx.sym.Reshape(cls, shape=(0, 2, -1, 0),
                             name="face_rpn_cls_score_reshape_stride%d" % stride)
        cls = mx.sym.SoftmaxActivation(cls, mode="channel",
                                       name="face_rpn_cls_prob_stride%d" % stride)
        cls = mx.sym.Reshape(cls, shape=(0, 2 * num_anchors, -1, 0),
                             name="face_rpn_cls_prob_reshape_stride%d" % stride)
        box = mx.sym.Convolution(m, kernel=(1, 1), num_filter=4 * num_anchors,
                                 name="face_rpn_bbox_pred_stride%d" % stride)
        landmark = mx.sym.Convolution(m, kernel=(1, 1), num_filter=10 * num_anchors,
                                      name="face_rpn_landmark_pred_stride%d" % stride)
        outputs += [cls, box, landmark]
    return mx.sym.Group(outputs)


def fused_rnn(mode: str, **kwargs):
    """mx.rnn.FusedRNNCell (one RNN op over a packed parameter vector, begin states _zeros),
    unrolled over 5 steps of NTC data, then a FullyConnected per step."""
    def build():
        data = mx.sym.Variable("data")
        cell = mx.rnn.FusedRNNCell(num_hidden=16, mode=mode, prefix=mode + "_", **kwargs)
        outputs, _ = cell.unroll(length=5, inputs=data, merge_outputs=True, layout="NTC")
        width = 32 if kwargs.get("bidirectional") else 16
        pred = mx.sym.FullyConnected(mx.sym.reshape(outputs, shape=(-1, width)), num_hidden=10,
                                     name="pred")
        return mx.sym.softmax(pred, name="prob")
    return build


def gluonnlp_zoo_model(name: str, **kwargs) -> Callable[[], object]:
    """GluonNLP's `name` at its full size with a 50-token vocabulary (the pretrained vocabularies
    are downloads)."""
    def build():
        import gluonnlp as nlp
        if name.startswith("bert_"):  # 5 special tokens + 45
            vocab = nlp.vocab.BERTVocab(nlp.data.count_tokens(["w%d" % i for i in range(45)]))
        else:  # 4 special tokens + 46
            vocab = nlp.Vocab(nlp.data.count_tokens(["w%d" % i for i in range(46)]))
        assert len(vocab) == 50, len(vocab)
        model, _ = nlp.model.get_model(name, dataset_name=None, vocab=vocab, pretrained=False,
                                       **kwargs)
        return model
    return build


# GluonNLP 0.10's models of the kinds issue 30 names, checked by --all after the GluonCV zoo:
# BERT without its pre-training heads, the standard LSTM language models without dropout
# (StandardRNN calls nd.Dropout inside hybrid_forward when dropout > 0: it cannot be
# hybridized) and the AWD LSTM ones. (big_rnn_lm_2048_512's BigRNN is a plain Block: MXNet
# cannot export it.)
GLUONNLP_ZOO = [
    (name, dict(use_pooler=True, use_decoder=False, use_classifier=False),
     [{"data0": (2, 16), "data1": (2, 16), "data2": (2,)}])
    for name in ("bert_12_768_12", "bert_24_1024_16")
] + [
    (name, dict(dropout=0.0), [{"data": (6, 2)}])
    for name in ("standard_lstm_lm_200", "standard_lstm_lm_650", "standard_lstm_lm_1500")
] + [
    (name, {}, [{"data": (6, 2)}])
    for name in ("awd_lstm_lm_600", "awd_lstm_lm_1150")
]


def nlp_standard_lstm_lm():
    """dropout 0: with dropout > 0 GluonNLP 0.10's StandardRNN calls nd.Dropout inside
    hybrid_forward, so it cannot be hybridized (standard_lstm_lm_200 has 0.2)."""
    import gluonnlp as nlp
    return nlp.model.StandardRNN(mode="lstm", vocab_size=50, embed_size=16, hidden_size=16,
                                 num_layers=2, dropout=0.0, tie_weights=True)


def nlp_awd_lstm_lm():
    import gluonnlp as nlp
    return nlp.model.AWDRNN(mode="lstm", vocab_size=50, embed_size=16, hidden_size=24,
                            num_layers=3, tie_weights=True, dropout=0.4, weight_drop=0.5,
                            drop_h=0.2, drop_i=0.65, drop_e=0.1)


def nlp_transformer_encoder():
    from gluonnlp.model.transformer import TransformerEncoder

    class Encoder(mx.gluon.HybridBlock):
        def __init__(self):
            super().__init__(prefix="enc_")
            with self.name_scope():
                self.encoder = TransformerEncoder(num_layers=2, units=32, hidden_size=64,
                                                  max_length=16, num_heads=4, dropout=0.0)

        def hybrid_forward(self, F, x, valid_length):
            return self.encoder(x, None, valid_length)
    return Encoder()


@contextlib.contextmanager
def replaced(module, attr: str, value):
    """module.attr is value inside the block (GluonCV looks its backbones up by module name)."""
    saved = getattr(module, attr)
    setattr(module, attr, value)
    try:
        yield
    finally:
        setattr(module, attr, saved)


def thin_resnet_v1b(pretrained=False, dilated=False, use_global_stats=False, **kwargs):
    """GluonCV's ResNetV1b with one BasicBlockV1b per stage: resnet18_v1b with layers
    [1, 1, 1, 1] (~4.9 M parameters instead of 11.2 M), the same channels (64 .. 512)."""
    from gluoncv.model_zoo.resnetv1b import ResNetV1b, BasicBlockV1b
    assert not pretrained
    return ResNetV1b(BasicBlockV1b, [1, 1, 1, 1], dilated=dilated,
                     use_global_stats=use_global_stats, name_prefix="resnetv1b_")


def thin_segmentation(kind: str, nclass: int = 5, crop: int = 64):
    """GluonCV's FCN / PSPNet / DeepLabV3 class on thin_resnet_v1b, dilated (output stride 8).
    The classes' heads hard-code a ResNet-50's 2048 / 1024 channels (with resnet50 they hold
    ~50 M parameters): they are rebuilt for 512 / 256 channels from GluonCV's own head blocks
    (_FCNHead, _PyramidPooling + _PSPHead's block, _ASPP); like _FCNHead's and _PyramidPooling's,
    the _PSPHead block's 512 inner channels shrink with the input (to 128). _ASPP fixes its 256
    channels: deeplab_resnet_thin has ~9.8 M parameters, fcn 5.6 M, psp 6.5 M."""
    def build():
        from mxnet.gluon import nn
        import gluoncv.model_zoo.segbase as segbase
        from gluoncv.model_zoo.fcn import FCN, _FCNHead
        from gluoncv.model_zoo.pspnet import PSPNet, _PyramidPooling
        from gluoncv.model_zoo.deeplabv3 import DeepLabV3, _ASPP
        cls = {"fcn": FCN, "psp": PSPNet, "deeplab": DeepLabV3}[kind]
        with replaced(segbase, "get_backbone", lambda name, **kw: thin_resnet_v1b(
                dilated=kw.get("dilated", False))):
            net = cls(nclass, backbone="resnet18", aux=True, pretrained_base=False,
                      crop_size=crop, base_size=crop)
        feat = crop // 8
        with net.name_scope():
            net.auxlayer = _FCNHead(256, nclass)
            if kind == "fcn":
                net.head = _FCNHead(512, nclass)
        if kind == "psp":
            with net.head.name_scope():
                net.head.psp = _PyramidPooling(512, height=feat, width=feat,
                                               norm_layer=nn.BatchNorm, norm_kwargs=None)
                block = nn.HybridSequential(prefix="")
                block.add(nn.Conv2D(in_channels=1024, channels=128, kernel_size=3, padding=1,
                                    use_bias=False),
                          nn.BatchNorm(in_channels=128), nn.Activation("relu"), nn.Dropout(0.1),
                          nn.Conv2D(in_channels=128, channels=nclass, kernel_size=1))
                net.head.block = block
        elif kind == "deeplab":
            with net.head.name_scope():
                net.head.aspp = _ASPP(512, [12, 24, 36], norm_layer=nn.BatchNorm,
                                      norm_kwargs=None, height=feat, width=feat)
        return net
    return build


def thin_monodepth2():
    """GluonCV's MonoDepth2 (ResnetEncoder + DepthDecoder, four disparity scales) with the
    resnet18 encoder made thin_resnet_v1b (same channels, so the decoder is the zoo's). The
    input side must be a multiple of 32."""
    import gluoncv.model_zoo.monodepthv2.resnet_encoder as encoder
    from gluoncv.model_zoo.monodepthv2.monodepth2 import MonoDepth2
    with replaced(encoder, "resnet18_v1b", lambda pretrained=False, ctx=None, **kw:
                  thin_resnet_v1b(**kw)):
        net = MonoDepth2(backbone="resnet18", pretrained_base=False)
    # The encoder never runs the ResNet's classifier; left in, its parameters stop the first
    # hybridized call ("Deferred initialization failed": monodepth2_resnet18_kitti_* too).
    del net.encoder.encoder._children["fc"]
    return net


def thin_slowfast():
    """GluonCV's SlowFast 4x16 (slow 4 frames, fast 32, alpha 8: the input is the 32 fast frames
    then the 4 slow ones, 36 in all: the zoo's slowfast_4x16_* need 36 frames too, a shorter
    input leaves the slow path empty) with one block per stage and width_per_group 16."""
    from gluoncv.model_zoo.action_recognition.slowfast import SlowFast
    return SlowFast(nclass=10, layers=[1, 1, 1, 1], width_per_group=16, slow_frames=4,
                    fast_frames=32, alpha=8, beta_inv=8, fusion_conv_channel_ratio=2,
                    fusion_kernel_size=5, dropout_ratio=0.5, num_segments=1, num_crop=1)


def thin_rcnn_stages():
    """The C4 split of thin_resnet_v1b that GluonCV's R-CNNs take: the stem and layers 1-3 as
    the features, layer4 as the per-RoI head."""
    from mxnet.gluon import nn
    base = thin_resnet_v1b(use_global_stats=True)
    features, top_features = nn.HybridSequential(), nn.HybridSequential()
    for layer in ["conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3"]:
        features.add(getattr(base, layer))
    top_features.add(base.layer4)
    return features, top_features


def thin_faster_rcnn():
    """faster_rcnn_resnet50_v1b_voc's recipe (get_faster_rcnn: C4 features, RoIAlign, layer4 as
    the box head) on thin_resnet_v1b, with three classes, a 256-channel RPN and 32 proposals
    (the zoo's 300 run layer4 on 300 14x14 crops: ~60 GFLOP a forward)."""
    from gluoncv.model_zoo.rcnn.faster_rcnn.faster_rcnn import get_faster_rcnn
    features, top_features = thin_rcnn_stages()
    return get_faster_rcnn(
        name="resnet_thin_v1b", dataset="custom", pretrained=False,
        features=features, top_features=top_features, classes=["a", "b", "c"],
        short=128, max_size=128, nms_thresh=0.3, nms_topk=400, post_nms=100,
        roi_mode="align", roi_size=(14, 14), strides=16, clip=None,
        rpn_channel=256, base_size=16, scales=(2, 4, 8, 16, 32),
        ratios=(0.5, 1, 2), alloc_size=(128, 128), rpn_nms_thresh=0.7,
        rpn_train_pre_nms=12000, rpn_train_post_nms=2000,
        rpn_test_pre_nms=6000, rpn_test_post_nms=32, rpn_min_size=16,
        num_sample=128, pos_iou_thresh=0.5, pos_ratio=0.25, max_num_gt=100)


def thin_mask_rcnn():
    """mask_rcnn_resnet18_v1b_coco's recipe (get_mask_rcnn: C4 features, RoIAlign, layer4 as
    the box and mask head) on thin_resnet_v1b, with three classes and 32 proposals (the zoo's
    1000 make a 128x128 export take ~5 minutes on 2 cores)."""
    from gluoncv.model_zoo.rcnn.mask_rcnn.mask_rcnn import get_mask_rcnn
    features, top_features = thin_rcnn_stages()
    return get_mask_rcnn(
        name="resnet_thin_v1b", dataset="custom", pretrained=False,
        features=features, top_features=top_features, classes=["a", "b", "c"],
        mask_channels=64, rcnn_max_dets=32, short=128, max_size=128,
        nms_thresh=0.5, nms_topk=-1, post_nms=-1,
        roi_mode="align", roi_size=(14, 14), strides=16, clip=4.42,
        rpn_channel=256, base_size=16, scales=(2, 4, 8, 16, 32),
        ratios=(0.5, 1, 2), alloc_size=(128, 128), rpn_nms_thresh=0.7,
        rpn_train_pre_nms=12000, rpn_train_post_nms=2000,
        rpn_test_pre_nms=6000, rpn_test_post_nms=32,
        rpn_min_size=1, num_sample=256, pos_iou_thresh=0.5, pos_ratio=0.25)


def thin_icnet(nclass: int = 5, crop: int = 96):
    """GluonCV's ICNet on thin_resnet_v1b (dilated, as SegBaseModel builds every backbone):
    the three resolution branches, the cascade feature fusion and the four outputs (1, 1/4,
    1/8, 1/16) as in the zoo. ICNet's PSP head and its two reduce convs hard-code a
    ResNet-50's 2048 / 512 channels (icnet_resnet50_citys holds ~47 M parameters): the PSP
    head is rebuilt for 512 channels (as psp_resnet_thin's, its block without the last conv)
    and conv_sub4 / conv_sub2 take its 128 and layer2's 128 channels. A 96x96 input keeps the
    1/32 branch at 3x3 (AdaptiveAvgPooling2D to 1, 2, 3 and 6 on it). ~6.9 M parameters, 4.9 M
    of them the backbone's."""
    def build():
        from mxnet.gluon import nn
        import gluoncv.model_zoo.segbase as segbase
        from gluoncv.model_zoo.icnet import ICNet, ConvBnRelu
        from gluoncv.model_zoo.pspnet import _PyramidPooling
        with replaced(segbase, "get_backbone", lambda name, **kw: thin_resnet_v1b(
                dilated=kw.get("dilated", False))):
            net = ICNet(nclass, backbone="resnet18", pretrained_base=False,
                        crop_size=crop, base_size=crop)
        feat = crop // 32
        with net.psp_head.name_scope():
            net.psp_head.psp = _PyramidPooling(512, height=feat, width=feat,
                                               norm_layer=nn.BatchNorm, norm_kwargs=None)
            block = nn.HybridSequential(prefix="")
            block.add(nn.Conv2D(in_channels=1024, channels=128, kernel_size=3, padding=1,
                                use_bias=False),
                      nn.BatchNorm(in_channels=128), nn.Activation("relu"), nn.Dropout(0.1))
            net.psp_head.block = block
        with net.name_scope():
            net.conv_sub4 = ConvBnRelu(128, 256, 1)
            net.conv_sub2 = ConvBnRelu(128, 256, 1)
        return net
    return build


def thin_alphapose(num_joints: int = 5):
    """GluonCV's AlphaPose (alpha_pose_resnet101_v1b_coco's class: a FastSEResNet, PixelShuffle,
    two DUC blocks, a 3x3 conv to the joint heatmaps) made small: the FastSEResNet keeps its
    Bottleneck + SELayer blocks but has one per stage and a quarter of the widths (planes 16,
    32, 64, 128: 512 channels out instead of 2048), and the DUC blocks take the quarter widths
    too (DUC(256, 128), DUC(128, 64), the heatmap conv 32 -> num_joints). The zoo's DUC head
    alone is ~23 M parameters: this model has ~1.6 M."""
    def build():
        from mxnet.gluon import nn
        from gluoncv.model_zoo.alpha_pose.fast_pose import (AlphaPose, Bottleneck, DUC,
                                                            FastSEResNet)

        class ThinFastSEResNet(FastSEResNet):
            def __init__(self):
                nn.HybridBlock.__init__(self)
                self.inplanes, self.norm_layer, self.block = 16, nn.BatchNorm, Bottleneck
                self.layers = [1, 1, 1, 1]
                self.conv1 = nn.Conv2D(16, in_channels=3, kernel_size=7, strides=2, padding=3,
                                       use_bias=False)
                self.bn1 = nn.BatchNorm()
                self.relu = nn.Activation("relu")
                self.maxpool = nn.MaxPool2D(pool_size=3, strides=2, padding=1)
                self.layer1 = self.make_layer(Bottleneck, 16, 1)
                self.layer2 = self.make_layer(Bottleneck, 32, 1, stride=2)
                self.layer3 = self.make_layer(Bottleneck, 64, 1, stride=2)
                self.layer4 = self.make_layer(Bottleneck, 128, 1, stride=2)

        net = AlphaPose(ThinFastSEResNet(), num_joints)
        with net.name_scope():
            net.duc1 = DUC(256, inplanes=128, upscale_factor=2)
            net.duc2 = DUC(128, inplanes=64, upscale_factor=2)
            net.conv_out = nn.Conv2D(channels=num_joints, in_channels=32, kernel_size=3,
                                     strides=1, padding=1)
        return net
    return build


def thin_ssd_vgg_atrous():
    """ssd_300_vgg16_atrous_voc's recipe (GluonCV SSD on a VGGAtrousExtractor: the input
    scaled by init_scale, conv4's map through Normalize (L2Normalization channel, learned
    scale), fc6 as a dilation-6 3x3 conv, fc7 1x1, extra layers of 1x1 + 3x3 convs, the last
    one unpadded) on a 128x128 image: one conv per VGG stage with an eighth of the widths
    (8 .. 64), fc6 / fc7 with the zoo's 1024 channels, two extra layers (32 channels), three
    classes. Feature maps 16, 8, 4 and 2; ~2.6 M parameters."""
    def build():
        from gluoncv.model_zoo.ssd.ssd import SSD
        from gluoncv.model_zoo.ssd.vgg_atrous import VGGAtrousExtractor

        def features(**kwargs):
            return VGGAtrousExtractor([1, 1, 1, 1, 1], [8, 16, 32, 64, 64],
                                      [((16, 1, 1, 0), (32, 3, 2, 1)),
                                       ((16, 1, 1, 0), (32, 3, 1, 0))])
        net = SSD(None, 128, features=features, num_filters=None,
                  sizes=[13, 26, 51, 77, 102],
                  ratios=[[1, 2, 0.5]] + [[1, 2, 0.5, 3, 1.0 / 3]] * 2 + [[1, 2, 0.5]],
                  steps=[8, 16, 32, 64], classes=["a", "b", "c"], pretrained=False)
        # init_scale (a Constant, exported as a parameter) is 255 * the ImageNet std, for the
        # Caffe weights the zoo loads: on random weights it saturates every class softmax (88
        # score ties at batch 1) and blows the box deltas up to 7e6. 4 * std keeps the scores
        # apart (2 ties) and the boxes within the image's scale.
        net.features.init_scale.value[:] = mx.nd.array([0.229, 0.224, 0.225]).reshape(
            (1, 3, 1, 1)) * 4
        return net
    return build


def unrolled_gru():
    """A plain-symbol mx.rnn GRU unrolled over 5 steps: two GRUCells (begin states _zeros)."""
    data = mx.sym.Variable("data")
    cell = mx.rnn.SequentialRNNCell()
    cell.add(mx.rnn.GRUCell(num_hidden=16, prefix="gru0_"))
    cell.add(mx.rnn.GRUCell(num_hidden=12, prefix="gru1_"))
    outputs, _ = cell.unroll(length=5, inputs=data, merge_outputs=True, layout="NTC")
    pred = mx.sym.FullyConnected(mx.sym.reshape(outputs, shape=(-1, 12)), num_hidden=10,
                                 name="pred")
    return mx.sym.softmax(pred, name="prob")


def arcface_resnet():
    """InsightFace's ArcFace ResNet (recognition/symbol/fresnet.py, the LResNet-E-IR recipe) in
    miniature: pixels (x - 127.5) * 0.0078125, a stride-1 3x3 conv0 + BN + PReLU, then
    residual_unit_v3 blocks (BN, 3x3 conv, BN, PReLU, 3x3 conv with the stride, BN; a 1x1
    conv + BN shortcut where the shape changes, the identity otherwise), three stages of
    (16, 32, 48) channels with 2, 1, 1 units on a 32x32 face, and symbol_utils' fc1 of type
    E: BN, Dropout(0.4), FullyConnected pre_fc1 to a 32-d embedding, BatchNorm fc1
    (fix_gamma, eps 2e-5). The output is fc1, the embedding ArcFace's loss normalises."""
    data = mx.sym.Variable("data")

    def bn(x, name, fix_gamma=False):
        return mx.sym.BatchNorm(x, fix_gamma=fix_gamma, eps=2e-5, momentum=0.9, name=name)

    def conv(x, filters, kernel, stride, pad, name):
        return mx.sym.Convolution(x, num_filter=filters, kernel=kernel, stride=stride, pad=pad,
                                  no_bias=True, name=name)

    def prelu(x, name):
        return mx.sym.LeakyReLU(x, act_type="prelu", name=name)

    def unit(x, filters, stride, dim_match, name):
        y = bn(x, name + "_bn1")
        y = conv(y, filters, (3, 3), (1, 1), (1, 1), name + "_conv1")
        y = prelu(bn(y, name + "_bn2"), name + "_relu1")
        y = conv(y, filters, (3, 3), (stride, stride), (1, 1), name + "_conv2")
        y = bn(y, name + "_bn3")
        if dim_match:
            short = x
        else:
            short = bn(conv(x, filters, (1, 1), (stride, stride), (0, 0), name + "_conv1sc"),
                       name + "_sc")
        return y + short

    x = mx.sym.identity(data, name="id")
    x = (x - 127.5) * 0.0078125
    x = prelu(bn(conv(x, 16, (3, 3), (1, 1), (1, 1), "conv0"), "bn0"), "relu0")
    for i, (filters, units) in enumerate([(16, 2), (32, 1), (48, 1)]):
        x = unit(x, filters, 2, False, "stage%d_unit1" % (i + 1))
        for j in range(1, units):
            x = unit(x, filters, 1, True, "stage%d_unit%d" % (i + 1, j + 1))
    x = bn(x, "bn1")
    x = mx.sym.Dropout(x, p=0.4)
    x = mx.sym.FullyConnected(x, num_hidden=32, name="pre_fc1")
    return bn(x, "fc1", fix_gamma=True)


SUITE = [
    Spec("cifar_resnet20_v1", "CIFAR classification", gluoncv_model("cifar_resnet20_v1"),
         image(32), "match"),
    Spec("cifar_resnet20_v1_int8", "quantized (int8)",
         quantized_gluoncv("cifar_resnet20_v1", 32), image(32), "match",
         "MXNet's quantization pass over cifar_resnet20_v1 (see quantized_gluoncv): "
         "_sg_mkldnn_conv with bn/relu/residual sum, quantized avg pooling, dequantize"),
    Spec("mobilenetv3_small", "ImageNet classification", gluoncv_model("mobilenetv3_small"),
         image(64), "match"),
    Spec("se_resnet18_v1", "ImageNet classification", gluoncv_model("se_resnet18_v1"),
         image(64), "match", "SE blocks: _contrib_AdaptiveAvgPooling2D"),
    Spec("resnest14", "ImageNet classification", gluoncv_model("resnest14"), image(64), "match",
         "split attention: _contrib_AdaptiveAvgPooling2D"),
    Spec("hrnet_w18_small_v1_c", "ImageNet classification", gluoncv_model("hrnet_w18_small_v1_c"),
         image(64), "match", "HRNet: parallel resolutions fused by strided convs and upsampling"),
    Spec("nasnet_4_1056", "ImageNet classification", gluoncv_model("nasnet_4_1056"), image(64),
         "match", "NASNet cells: separable convolutions, pooling branches, cropping pads"),
    Spec("cifar_resnext29_32x4d", "CIFAR classification", gluoncv_model("cifar_resnext29_32x4d"),
         image(32), "match", "ResNeXt: 32-group 3x3 convolutions"),
    Spec("cifar_wideresnet16_10", "CIFAR classification", gluoncv_model("cifar_wideresnet16_10"),
         image(32), "match", "WideResNet 16-10: pre-activation blocks ten times as wide"),
    Spec("fastscnn_citys", "semantic segmentation", gluoncv_model("fastscnn_citys", crop_size=64),
         image(64), "match", "pyramid pooling and upsampling: AdaptiveAvgPooling2D, BilinearResize2D"),
    Spec("fcn_resnet_thin", "semantic segmentation", thin_segmentation("fcn"), image(64),
         "match", "GluonCV FCN on a thin dilated ResNetV1b, heads for its widths "
         "(see thin_segmentation): dilated convolution, BilinearResize2D, aux output"),
    Spec("psp_resnet_thin", "semantic segmentation", thin_segmentation("psp"), image(64),
         "match", "GluonCV PSPNet as fcn_resnet_thin: pyramid pooling with "
         "AdaptiveAvgPooling2D 1/2/3/6"),
    Spec("deeplab_resnet_thin", "semantic segmentation", thin_segmentation("deeplab"), image(64),
         "match", "GluonCV DeepLabV3 as fcn_resnet_thin: ASPP (dilation 12/24/36), image pooling"),
    Spec("icnet_resnet_thin", "semantic segmentation", thin_icnet(), image(96), "match",
         "GluonCV ICNet on thin_resnet_v1b, PSP head for its widths (see thin_icnet): three "
         "resolution branches, cascade feature fusion, four outputs"),
    Spec("simple_pose_resnet18_v1b", "pose estimation", gluoncv_model("simple_pose_resnet18_v1b"),
         image((64, 48)), "match", "Deconvolution head"),
    Spec("mobile_pose_mobilenetv3_small", "pose estimation",
         gluoncv_model("mobile_pose_mobilenetv3_small"), image((64, 48)), "match",
         "MobilePose: MobileNetV3-small, DUC upsampling (PixelShuffle reshapes)"),
    Spec("alpha_pose_thin", "pose estimation", thin_alphapose(), image((96, 64)), "match",
         "GluonCV AlphaPose at a quarter of the widths (see thin_alphapose): SE bottlenecks "
         "(AdaptiveAvgPooling2D, broadcast_like), PixelShuffle, DUC"),
    Spec("r2plus1d_resnet_thin", "video, 3-D convolution", thin_r2plus1d, video((4, 32)), "match",
         "R2Plus1D with one BasicBlock per stage (gluoncv R2Plus1D, layers [1, 1, 1, 1])"),
    Spec("p3d_resnet_thin", "video, 3-D convolution", thin_p3d, video((16, 32)), "match",
         "P3D with one Bottleneck per stage (gluoncv P3D, layers [1, 1, 1, 1])"),
    Spec("i3d_inceptionv1_kinetics400", "video, 3-D convolution",
         gluoncv_model("i3d_inceptionv1_kinetics400", nclass=10), video((8, 32)), "match"),
    Spec("slowfast_4x16_thin", "video, 3-D convolution", thin_slowfast, video((36, 32)),
         "match", "GluonCV SlowFast 4x16 (32 fast + 4 slow frames in one input), one block per "
         "stage, width_per_group 16 (see thin_slowfast)"),
    Spec("resnet18_v1b_kinetics400", "video, 2-D (TSN)", tsn_resnet(18), image(32), "match",
         "ActionRecResNetV1b(depth=18) built directly (see tsn_resnet)"),
    Spec("rnn_lstm_unrolled", "recurrent (plain symbol)", unrolled_lstm,
         [{"data": (2, 5, 8)}], "match", "mx.rnn.LSTMCell x2 unrolled 5 steps; begin state _zeros",
         batch=0),  # already batch 2
    Spec("rnn_gluon_lstm", "recurrent (Gluon)",
         gluon_rnn("LSTM", hidden_size=16, num_layers=2, bidirectional=True),
         [{"data0": (5, 3, 8), "data1": (4, 3, 16), "data2": (4, 3, 16)}], "match",
         "rnn.LSTM(16, num_layers=2, bidirectional) with begin states; output, h and c",
         batch=0),  # already batch 3, on axis 1
    Spec("rnn_gru_unrolled", "recurrent (plain symbol)", unrolled_gru,
         [{"data": (2, 5, 8)}], "match",
         "mx.rnn.GRUCell x2 (16, 12 units) unrolled 5 steps; begin states _zeros",
         batch=0),  # already batch 2
    Spec("rnn_gluon_gru", "recurrent (Gluon)",
         gluon_rnn("GRU", hidden_size=16, num_layers=2, bidirectional=True, layout="NTC"),
         [{"data0": (3, 5, 8), "data1": (4, 3, 16)}], "match",
         "rnn.GRU(16, num_layers=2, bidirectional, layout NTC) with a begin state; output and h",
         batch=0),  # already batch 3 (the state's batch axis is 1)
    Spec("ssd_300_mobilenet0.25_voc", "object detection",
         gluoncv_model("ssd_300_mobilenet0.25_voc"), image(128), "match",
         "SSD decoder: softmax, where, _contrib_box_decode, _contrib_box_nms", scores=1),
    Spec("ssd_vgg_atrous_thin", "object detection", thin_ssd_vgg_atrous(), image(128), "match",
         "SSD on a thin VGGAtrousExtractor (see thin_ssd_vgg_atrous): init_scale, Normalize "
         "(L2Normalization channel), dilated fc6, pooling_convention full, unpadded extra conv",
         scores=1),
    Spec("center_net_mobilenetv3_small_duc_voc", "object detection",
         gluoncv_model("center_net_mobilenetv3_small_duc_voc"), image(128), "match",
         "CenterNet decoder: topk, int64 index arithmetic, gather_nd", scores=1),
    Spec("center_net_resnet18_v1b_dcnv2_voc", "object detection",
         gluoncv_model("center_net_resnet18_v1b_dcnv2_voc"), image(128), "match",
         "CenterNet with DCNv2 upsampling (_contrib_ModulatedDeformableConvolution)",
         scores=1),
    Spec("yolo3_mobilenet0.25_voc", "object detection",
         gluoncv_model("yolo3_mobilenet0.25_voc"), image(128), "match",
         "YOLOv3 decoder: sigmoid/exp anchor decoding, tile, repeat, _contrib_box_nms",
         scores=1, nms_draw=9),
    Spec("faster_rcnn_resnet_thin", "object detection", thin_faster_rcnn, image(64), "match",
         "Faster R-CNN (see thin_faster_rcnn): RPN proposals, ROIAlign, box decoding, NMS",
         scores=1, batch=0, nms_draw=1),  # the graph fixes batch 1 (a Concat of 32 RoIs)
    Spec("mask_rcnn_resnet_thin", "object detection", thin_mask_rcnn, image(64), "match",
         "Mask R-CNN (see thin_mask_rcnn): Faster R-CNN's graph, argsort, gather_nd, mask head",
         scores=1, batch=0, nms_draw=1),  # the graph fixes batch 1
    Spec("monodepth2_resnet_thin", "depth estimation", thin_monodepth2,
         image(64), "match",
         "GluonCV MonoDepth2 on thin_resnet_v1b: reflection padding, nearest UpSampling, 4 scales"),
    Spec("bert_tiny", "NLP (GluonNLP)", tiny_bert,
         [{"data0": (2, 8), "data1": (2, 8), "data2": (2,)}], "match",
         "BERTModel 2 layers, 32 units (inputs: tokens, token types, valid length)",
         batch=0),  # already batch 2
    Spec("rcnn_proposal_roipooling", "object detection (plain symbol)", rcnn_head("ROIPooling"),
         [{"data": (1, 3, 64, 80), "im_info": (1, 3)}], "match",
         "MXNet's example R-CNN: RPN, _contrib_Proposal, ROIPooling, FC heads",
         batch=0),  # _contrib_Proposal takes one image
    Spec("rcnn_proposal_roialign", "object detection (plain symbol)", rcnn_head("ROIAlign"),
         [{"data": (1, 3, 64, 80), "im_info": (1, 3)}], "match",
         "MXNet's example R-CNN with _contrib_ROIAlign (sample_ratio 2) for the rois",
         batch=0),  # _contrib_Proposal takes one image
    Spec("fpn_roi_levels", "object detection (plain symbol)", fpn_roi_levels(),
         [{"level0": (1, 8, 16, 20), "level1": (1, 8, 8, 10), "boxes": (12, 4)}], "match",
         "FPN R-CNN pooling: two levels' _contrib_ROIAlign, the rois of the other level with "
         "batch index -1, summed",
         batch=0),  # the rois have no batch axis
    Spec("ssd_symbol", "object detection (plain symbol)", ssd_symbol, [{"data": (1, 3, 32, 32)}],
         "match", "MXNet's example SSD: MultiBoxPrior on two maps, MultiBoxDetection",
         batch=0),  # scores of a second image not conditioned
    Spec("mobilefacenet", "face recognition (plain symbol)", mobilefacenet,
         [{"data": (1, 3, 32, 32)}], "match",
         "InsightFace MobileFaceNet: PReLU, depthwise, GDC, BatchNorm fc1, L2Normalization"),
    Spec("arcface_resnet", "face recognition (plain symbol)", arcface_resnet,
         [{"data": (1, 3, 32, 32)}], "match",
         "InsightFace ArcFace ResNet (fresnet residual_unit_v3, PReLU) with fc1 type E: "
         "BN, Dropout, FC, BatchNorm fix_gamma"),
    Spec("retinaface_heads", "face detection (plain symbol)", retinaface_heads,
         [{"data": (1, 3, 100, 100)}], "match",
         "RetinaFace: FPN with UpSampling nearest + Crop / slice_like, SSH, per-level heads"),
    Spec("rnn_fused_lstm", "recurrent (plain symbol)", fused_rnn("lstm", num_layers=2),
         [{"data": (2, 5, 8)}], "match", "mx.rnn.FusedRNNCell lstm, 2 layers, unrolled 5 steps",
         batch=0),  # already batch 2
    Spec("rnn_fused_gru", "recurrent (plain symbol)",
         fused_rnn("gru", num_layers=1, bidirectional=True), [{"data": (3, 5, 8)}], "match",
         "mx.rnn.FusedRNNCell gru, bidirectional, unrolled 5 steps",
         batch=0),  # already batch 3
    Spec("nlp_standard_lstm_lm", "NLP (GluonNLP)", nlp_standard_lstm_lm, [{"data": (6, 2)}],
         "match", "StandardRNN lstm (standard_lstm_lm_200's structure), vocab 50, 16 units, "
         "tied weights; tokens (T, N), begin states _zeros",
         batch=0),  # tokens (T, N): batch on axis 1
    Spec("nlp_awd_lstm_lm", "NLP (GluonNLP)", nlp_awd_lstm_lm, [{"data": (6, 2)}], "match",
         "AWDRNN lstm (awd_lstm_lm_1150's structure), 3 layers, vocab 50, tied weights",
         batch=0),  # tokens (T, N): batch on axis 1
    Spec("nlp_transformer_encoder", "NLP (GluonNLP)", nlp_transformer_encoder,
         [{"data0": (2, 7, 32), "data1": (2,)}], "match",
         "gluonnlp TransformerEncoder, 2 layers, 32 units, 4 heads, with valid_length",
         batch=0),  # already batch 2
]


def family_of(name: str) -> str:
    if name.endswith("_int8"):
        return "quantized (int8)"
    if name.startswith(("ssd_", "yolo3_", "faster_rcnn", "mask_rcnn", "center_net",
                        "doublehead_rcnn", "custom_faster", "custom_mask")):
        return "object detection"
    if name.startswith(("fcn_", "psp_", "deeplab_", "icnet_", "fastscnn", "danet_")) or \
            (name.startswith("hrnet") and name.endswith("_s")):
        return "semantic segmentation"
    if "pose" in name and not name.startswith("monodepth"):
        return "pose estimation"
    if name.startswith(("i3d_", "slowfast_", "r2plus1d_", "p3d_", "c3d_")):
        return "video, 3-D convolution"
    if any(k in name for k in ("kinetics", "ucf101", "hmdb51", "sthsthv2")) or \
            name.endswith("_v1b_custom"):
        return "video, 2-D (TSN)"
    if name.startswith("monodepth"):
        return "depth estimation"
    if name.startswith("siamrpn"):
        return "tracking"
    if name.startswith("cifar_"):
        return "CIFAR classification"
    return "ImageNet classification"


def all_specs() -> List[Spec]:
    from gluoncv import model_zoo
    specs = []
    for name in model_zoo.get_model_list():
        family = family_of(name)
        kwargs = {}
        if name.endswith("_custom") or name.startswith("custom_"):
            kwargs = {"classes": ["a", "b", "c"]} if family == "object detection" else {"nclass": 3}
        if family == "CIFAR classification":
            shapes = image(32)
        elif family == "semantic segmentation":
            kwargs["crop_size"] = 64
            shapes = image(64, 128)
        elif family == "object detection":
            # The VGG-atrous and ResNet-34 SSDs end in unpadded 3x3 convs: they need their size.
            size = re.match(r"ssd_(300|512)_", name)
            shapes = image(128, 256, *([int(size.group(1))] if size else []))
        elif family == "pose estimation":
            shapes = image((64, 48), (128, 96), (256, 192))
        elif family == "video, 3-D convolution":
            slowfast = re.match(r"slowfast_(\d+)x(\d+)_", name)
            if name.startswith("c3d"):
                shapes = video((16, 112))
            elif slowfast:  # the fast pathway's frames, then the slow one's, on one time axis
                slow = int(slowfast.group(1))
                frames = slow + (64 if slow == 16 else 32)
                shapes = video((frames, 32), (frames, 64))
            else:  # I3D Inception v3 needs 8 frames of at least 75 x 75
                shapes = video((8, 32), (16, 64), (32, 112), (8, 96))
        elif family == "depth estimation":
            shapes = image(64, (192, 640))
            if "posenet" in name:
                shapes = [{"data": (1, 6, h, w)} for _, _, h, w in (s["data"] for s in shapes)]
        elif family == "tracking":
            shapes = [{"data0": (1, 3, 127, 127), "data1": (1, 3, 255, 255)}]
        else:
            shapes = image(64, 128, 224, 299)
        build, notes = gluoncv_model(name, **kwargs), ""
        tsn = re.match(r"resnet(\d+)_v1b_(kinetics400|sthsthv2|ucf101|hmdb51|custom)$", name)
        if tsn:
            build, notes = tsn_resnet(int(tsn.group(1))), "ActionRecResNetV1b built directly"
        specs.append(Spec(name, family, build, shapes, notes=notes, batch=0))  # suite only
    for name, kwargs, shapes in GLUONNLP_ZOO:
        specs.append(Spec(name, "NLP (GluonNLP)", gluonnlp_zoo_model(name, **kwargs), shapes,
                          notes="GluonNLP 0.10, full size, a 50-token vocabulary", batch=0))
    return specs


# --------------------------------------------------------------------------
# build, run, export
# --------------------------------------------------------------------------

def randomise(net, rng: np.random.RandomState) -> None:
    """BatchNorm statistics, gamma/beta and biases away from their neutral defaults."""
    for pname, p in sorted(net.collect_params().items()):
        if p._data is None:  # never read by the forward, so never initialised (not exported)
            continue
        for suffix, lo, hi in (("running_mean", -0.2, 0.2), ("running_var", 0.5, 1.5),
                               ("gamma", 0.5, 1.5), ("beta", -0.2, 0.2), ("bias", -0.1, 0.1)):
            if pname.endswith("_" + suffix):
                p.set_data(mx.nd.array(rng.uniform(lo, hi, p.shape), ctx=CTX,
                                       dtype=p.data().dtype))


class Init(mx.init.Xavier):
    """Xavier, and ones for the vectors GluonCV leaves to the global initialiser."""

    def _init_weight(self, name, arr):
        if len(arr.shape) < 2:
            arr[:] = 1.0
        else:
            super()._init_weight(name, arr)


def flatten(out) -> List[mx.nd.NDArray]:
    if isinstance(out, (list, tuple)):
        return [a for o in out for a in flatten(o)]
    return [out]


def random_inputs(shapes: Dict[str, tuple], rng, name: str) -> Dict[str, np.ndarray]:
    values = {}
    for key, shape in shapes.items():
        if name.startswith("bert_"):  # token ids, token types, valid lengths
            high = {"data0": 50, "data1": 2, "data2": shapes["data0"][1] + 1}[key]
            low = 1 if key == "data2" else 0
            values[key] = rng.randint(low, high, shape).astype(np.float32)
        elif (name.startswith("nlp_") and name.endswith("_lm")) or "_lm_" in name:  # token ids
            values[key] = rng.randint(0, 50, shape).astype(np.float32)
        elif name == "nlp_transformer_encoder" and key == "data1":  # valid lengths 1..7
            values[key] = rng.randint(1, 8, shape).astype(np.float32)
        elif name in ("mobilefacenet", "arcface_resnet"):  # pixels: the model subtracts 127.5
            values[key] = rng.uniform(0, 255, shape).astype(np.float32)
        elif key == "boxes":  # x1, y1, x2, y2 in a 32 x 40 image, 1 to 24 pixels a side
            corner = rng.uniform(0, 20, shape[:1] + (2,))
            values[key] = np.concatenate([corner, corner + rng.uniform(1, 24, shape[:1] + (2,))],
                                         axis=1).astype(np.float32)
        elif key == "im_info":  # image height, width, scale (R-CNN)
            values[key] = np.array([[shapes["data"][2], shapes["data"][3], 1.0]], np.float32)
        else:
            values[key] = rng.normal(0, 1, shape).astype(np.float32)
    return values


def shape_inference_skips_unused_parameters():
    """Gluon's deferred shape inference (HybridBlock._infer_attrs) looks every parameter of the
    block up in the graph's inferred shapes, and fails with a KeyError for one the forward never
    reads (monodepth2's encoder holds ResNet's classifier). The same inference, passing over
    those: they stay uninitialised, and export() leaves them out."""
    def infer_attrs(self, infer_fn, attr, *args):
        inputs, graph = self._get_graph(*args)
        values = [a for a in mx.gluon.block._flatten(args, "input")[0] if a is not None]
        arg_attrs, _, aux_attrs = getattr(graph, infer_fn)(
            **{var.name: getattr(value, attr) for var, value in zip(inputs, values)})
        if arg_attrs is None:
            raise ValueError("%s found nothing for %s" % (infer_fn, self.name))
        found = dict(zip(graph.list_arguments(), arg_attrs))
        found.update(zip(graph.list_auxiliary_states(), aux_attrs))
        for param in self.collect_params().values():
            if param.name in found:
                setattr(param, attr, found[param.name])
    return replaced(mx.gluon.HybridBlock, "_infer_attrs", infer_attrs)


def build_gluon(spec: Spec, rng) -> Tuple[object, Dict[str, np.ndarray], List[np.ndarray]]:
    """Build, initialise, randomise and run the block on the first input shape that works."""
    errors = []
    for shapes in spec.inputs:
        with mx.name.NameManager():
            net = spec.build()
        if isinstance(net, mx.sym.Symbol):
            return net, shapes, None
        net.initialize(Init(), ctx=CTX, force_reinit=True)
        net.hybridize()
        inputs = random_inputs(shapes, rng, spec.name)
        args = [mx.nd.array(v, ctx=CTX) for v in inputs.values()]
        try:
            with shape_inference_skips_unused_parameters():
                flatten(net(*args))[0].wait_to_read()  # materialise deferred init
            randomise(net, rng)
            outs = [o.asnumpy() for o in flatten(net(*args))]
            return net, inputs, outs
        except NeedsDownload:
            raise
        except Exception as e:  # a shape this architecture does not accept: try the next
            errors.append("%s: %s" % (list(shapes.values()), one_line(e)))
    raise RuntimeError("no input shape works: " + " | ".join(errors))


def one_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    text = lines[-1] if lines else repr(e)
    for ln in lines:  # MXNet errors: the "Check failed" / "Error in operator" line says most
        if "Check failed" in ln or "Error in operator" in ln or "MXNetError" in ln:
            text = ln
            break
    return (type(e).__name__ + ": " + text)[:300]


# Plain-symbol parameters by name suffix: (low, high) of a uniform draw; BatchNorm and biases as
# randomise() sets them; PReLU slopes (LeakyReLU act_type prelu, "<name>_relu_gamma") small.
SYMBOL_PARAM_RANGES = (("_relu_gamma", 0.1, 0.4), ("_gamma", 0.5, 1.5), ("_beta", -0.2, 0.2),
                       ("_bias", -0.1, 0.1), ("_moving_mean", -0.2, 0.2),
                       ("_moving_var", 0.5, 1.5))


def export_symbol(sym: mx.sym.Symbol, shapes: Dict[str, tuple], prefix: str, rng, name: str = ""):
    """Weights uniform with variance 1 / fan_in (the signal neither dies nor explodes through
    a deep plain symbol), the rest by SYMBOL_PARAM_RANGES, else uniform in [-0.2, 0.2]."""
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    params = {}
    for kind, names, all_shapes in (("arg:", sym.list_arguments(), arg_shapes),
                                    ("aux:", sym.list_auxiliary_states(), aux_shapes)):
        for n, s in zip(names, all_shapes):
            if n in shapes:
                continue
            if n.endswith("weight"):
                fan_in = max(1, int(np.prod(s[1:])) if len(s) > 1 else 1)
                value = rng.uniform(-1, 1, s) * np.sqrt(3.0 / fan_in)
            else:
                lo, hi = next(((lo, hi) for suffix, lo, hi in SYMBOL_PARAM_RANGES
                               if n.endswith(suffix)), (-0.2, 0.2))
                value = rng.uniform(lo, hi, s)
            params[kind + n] = mx.nd.array(value)
    sym.save(prefix + "-symbol.json")
    mx.nd.save(prefix + "-0000.params", params)
    return random_inputs(shapes, rng, name)


def zero_left_out_rois(sym: mx.sym.Symbol) -> mx.sym.Symbol:
    """The graph MXNet's goldens come from: sym with every _contrib_ROIAlign reading its rois with
    the batch indices raised to at least 0, and its output followed by
    where(batch index > -1, output, 0).

    MXNet documents that a roi whose batch index truncates below 0 pools to zeros, and its GPU
    kernel writes them, but its CPU kernel (contrib/roi_align.cc) writes a single 0 at the
    output's flat index n for such a roi n (inside the first rois' values) and leaves that roi's
    own output unwritten. GluonCV's FPN R-CNNs rely on the zeros: each level's ROIAlign gets the
    rois of the other levels with batch index -1, and the levels are summed. On the CPU MXNet's
    own result is then wrong in the first roi and whatever the memory held in the others. The
    rewrite gives every roi MXNet's documented output from MXNet's own kernel; a graph without
    negative batch indices computes the same values. The exported files keep the original
    graph: this is only the oracle's view of it."""
    graph = json.loads(sym.tojson())
    nodes = graph["nodes"]
    if not any(n["op"] == "_contrib_ROIAlign" for n in nodes):
        return sym
    row_ptr = graph["node_row_ptr"]
    new_nodes, outputs = [], []  # outputs: how many each new node has (node_row_ptr)
    index_of, remap = {}, {}  # old node -> new index; (old node, 0) -> the where node

    def add(node, count=1):
        new_nodes.append(node)
        outputs.append(count)
        return [len(new_nodes) - 1, 0, 0]

    def edge(e):
        target = remap.get((e[0], e[1]))
        return target if target is not None else [index_of[e[0]], e[1], e[2]]

    for i, node in enumerate(nodes):
        node = dict(node, inputs=[edge(e) for e in node["inputs"]])
        count = row_ptr[i + 1] - row_ptr[i]
        if node["op"] != "_contrib_ROIAlign":
            index_of[i] = add(node, count)[0]
            continue
        name, rois = node["name"], node["inputs"][1]

        def op(suffix, op_name, inputs, **attrs):
            return add({"op": op_name, "name": "%s_oracle_%s" % (name, suffix), "inputs": inputs,
                        "attrs": {k: str(v) for k, v in attrs.items()}})
        column = op("batch_index", "slice_axis", [rois], axis=1, begin=0, end=1)
        boxes = op("boxes", "slice_axis", [rois], axis=1, begin=1, end=5)
        raised = op("raised", "_maximum_scalar", [column], scalar=0)
        valid = op("rois", "Concat", [raised, boxes], dim=1, num_args=2)
        node["inputs"] = [node["inputs"][0], valid] + node["inputs"][2:]
        index_of[i] = add(node, count)[0]
        pooled = [index_of[i], 0, 0]
        flat = op("flat", "Reshape", [column], shape="(-1,)")
        kept = op("kept", "_greater_scalar", [flat], scalar=-1)
        zeros = op("zeros", "zeros_like", [pooled])
        remap[(i, 0)] = op("where", "where", [kept, pooled, zeros])
    graph["nodes"] = new_nodes
    graph["arg_nodes"] = [i for i, n in enumerate(new_nodes) if n["op"] == "null"]
    graph["heads"] = [edge(h) for h in graph["heads"]]
    graph["node_row_ptr"] = [0]
    for count in outputs:
        graph["node_row_ptr"].append(graph["node_row_ptr"][-1] + count)
    return mx.sym.load_json(json.dumps(graph))


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout("timed out")


def make_model(spec: Spec, outdir: str, timeout: int) -> dict:
    prefix = os.path.join(outdir, spec.name)
    t0 = time.time()
    entry = {"family": spec.family, "expect": spec.expect, "notes": spec.notes}
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        for draw in range(max(0, spec.nms_draw), max(0, spec.nms_draw) + NMS_DRAWS):
            rng = seed_all(spec.name if draw == 0 else "%s#%d" % (spec.name, draw))
            net, inputs, live = build_gluon(spec, rng)
            if isinstance(net, mx.sym.Symbol):
                inputs = export_symbol(net, inputs, prefix, rng, spec.name)
            else:
                net.export(prefix)
            sym, args, auxs = load_checkpoint(prefix)
            oracle = zero_left_out_rois(sym)
            names = [n for n in sym.list_arguments() if n not in args]
            if set(inputs) != set(names):  # Gluon names one input "data", several data0, data1..
                inputs = dict(zip(names, inputs.values()))
            if spec.nms_draw < 0:
                break
            margins = nms_conditioning(oracle, inputs, args, auxs)
            entry["nms"] = {"draw": draw, "margins": margins,
                            "well_conditioned": well_conditioned(margins)}
            if entry["nms"]["well_conditioned"]:
                break
        outs = run_symbol(oracle, inputs, args, auxs, dtype=None)
        if live is not None and len(live) == len(outs):
            diffs = [rel_err(a.astype(np.float64), b) for a, b in zip(outs, live) if a.size]
            if diffs and max(diffs) > 1e-5:
                entry["notes"] += " (the exported files differ from the live net by %.2g)" % max(diffs)
        save_npz(prefix + "-io.npz", {**{"input:" + k: v for k, v in inputs.items()},
                                      **{"output:%d" % i: o for i, o in enumerate(outs)}})
        mags = [float(np.max(np.abs(o.astype(np.float64)))) if o.size else 0.0 for o in outs]
        entry.update(status="exported", inputs={k: shape_list(v.shape) for k, v in inputs.items()},
                     outputs=[shape_list(o.shape) for o in outs],
                     output_dtypes=[str(o.dtype) for o in outs], ops=graph_ops(sym),
                     max_abs_output=mags)
        if not all(np.isfinite(m) for m in mags):
            entry["notes"] += " (MXNet's output is not finite)"
        if spec.scores >= 0:
            entry["score_ties"] = score_ties(spec, outs)
        if spec.batch > 1:
            entry["batch"] = run_batch(spec, oracle, args, auxs, inputs, prefix, rng)
    except NeedsDownload as e:
        entry.update(status="needs download", error=one_line(e))
    except Timeout:
        entry.update(status="timed out", error="no export within %ds" % timeout)
    except Exception as e:
        entry.update(status="export failed", error=one_line(e))
    finally:
        signal.alarm(0)
    entry["seconds"] = round(time.time() - t0, 2)
    return entry


TIE_MARGIN = 1e-5  # relative: ~100x the float32 rounding seen in detection scores


def score_ties(spec: Spec, outs: List[np.ndarray]) -> int:
    """How many pairs of neighbouring detections (by score, in one image) have different boxes
    or classes and scores within TIE_MARGIN of the top score: their order is rounding, so
    another runtime may list them the other way round (0 when the Spec has no score output)."""
    if spec.scores < 0:
        return 0
    ties = 0
    rows = [o.reshape(o.shape[0], o.shape[1], -1).astype(np.float64)
            for o in outs[spec.scores - 1:spec.scores + 2]]
    for ids, scores, boxes in zip(*rows):
        s = scores[:, 0]
        order = [i for i in np.argsort(-s, kind="stable") if s[i] > 0]
        for a, b in zip(order, order[1:]):
            if s[a] - s[b] <= TIE_MARGIN * s[order[0]] and (
                    ids[a, 0] != ids[b, 0] or np.max(np.abs(boxes[a] - boxes[b])) > 1e-3):
                ties += 1
    return ties


def _iou(box, boxes):
    w = np.maximum(0, np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]))
    h = np.maximum(0, np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]))
    area = lambda b: np.maximum(0, b[..., 2] - b[..., 0]) * np.maximum(0, b[..., 3] - b[..., 1])
    inter = w * h
    return inter / np.maximum(area(box) + area(boxes) - inter, 1e-12)


def nms_margins(x: np.ndarray, attrs: dict) -> Dict[str, float]:
    """How far _contrib_box_nms's decisions on its input x are from flipping, by greedy NMS in
    float64 (per batch row, per class unless force_suppress): "iou", the smallest |IoU - thresh|
    of a box against one kept before it; "score", the smallest score gap (relative to the top
    score) between a kept box and one it suppresses; "order", between neighbouring kept boxes
    (their output order, and which make a top-k cut)."""
    cs, si = int(attrs.get("coord_start", 2)), int(attrs.get("score_index", 1))
    ii = int(attrs.get("id_index", -1))
    thresh, valid = float(attrs.get("overlap_thresh", 0.5)), float(attrs.get("valid_thresh", 0))
    force = attrs.get("force_suppress", "False") in ("True", "true", "1")
    topk = int(attrs.get("topk", -1))
    out = {"iou": float("inf"), "score": float("inf"), "order": float("inf")}
    for row in x.reshape((-1,) + x.shape[-2:]).astype(np.float64):
        s, boxes = row[:, si], row[:, cs:cs + 4]
        top = max(float(np.max(np.abs(s))), 1e-30)
        cand = np.where(s > valid)[0]
        cand = cand[np.argsort(-s[cand], kind="stable")]
        if topk > 0:
            if cand.size > topk:
                out["order"] = min(out["order"], (s[cand[topk - 1]] - s[cand[topk]]) / top)
            cand = cand[:topk]
        groups = [cand] if force or ii < 0 else [cand[row[cand, ii] == c]
                                                 for c in np.unique(row[cand, ii])]
        kept = []
        for idx in groups:
            alive = np.ones(len(idx), bool)
            for a in range(len(idx)):
                if not alive[a]:
                    continue
                kept.append(idx[a])
                rest = np.arange(a + 1, len(idx))[alive[a + 1:]]
                if not rest.size:
                    continue
                o = _iou(boxes[idx[a]], boxes[idx[rest]])
                out["iou"] = min(out["iou"], float(np.min(np.abs(o - thresh))))
                hit = rest[o > thresh]
                if hit.size:
                    out["score"] = min(out["score"], float(np.min(s[idx[a]] - s[idx[hit]])) / top)
                alive[hit] = False
        ks = np.sort(s[kept])
        if ks.size > 1:
            out["order"] = min(out["order"], float(np.min(np.diff(ks))) / top)
    return out


NMS_IOU_MARGIN, NMS_SCORE_MARGIN = 1e-4, 1e-5  # ~100x float32 rounding of IoUs / scores
NMS_DRAWS = 20


def nms_conditioning(sym, inputs, args, auxs) -> Dict[str, Dict[str, float]]:
    """nms_margins of every _contrib_box_nms in the graph, on MXNet's own values."""
    nodes = json.loads(sym.tojson())["nodes"]
    internals = sym.get_internals()
    names = internals.list_outputs()
    picks, attrs = [], []
    for n in nodes:
        if n["op"] == "_contrib_box_nms":
            src = nodes[n["inputs"][0][0]]["name"] + "_output"
            picks.append(names.index(src))
            attrs.append((n["name"], n.get("attrs", {})))
    if not picks:
        return {}
    group = mx.sym.Group([internals[i] for i in picks])
    values = run_symbol(group, inputs, {k: v for k, v in args.items()
                                        if k in group.list_arguments()}, auxs, dtype=None)
    return {name: nms_margins(v, a) for (name, a), v in zip(attrs, values)}


def well_conditioned(margins: Dict[str, Dict[str, float]]) -> bool:
    return all(m["iou"] > NMS_IOU_MARGIN and m["score"] > NMS_SCORE_MARGIN and
               m["order"] > NMS_SCORE_MARGIN for m in margins.values())


def run_batch(spec: Spec, sym, args, auxs, inputs, prefix: str, rng) -> dict:
    """MXNet's classic executor on the exported files at batch spec.batch: the batch-1 input
    as row 0, random rows after it (drawn again, with nms_draw, until well_conditioned)."""
    n = spec.batch
    nms = {}
    try:
        for draw in range(NMS_DRAWS):
            more = random_inputs({k: (n - 1,) + v.shape[1:] for k, v in inputs.items()}, rng,
                                 spec.name)
            batched = {k: np.concatenate([v, more[k].astype(v.dtype)]) for k, v in inputs.items()}
            outs = run_symbol(sym, batched, args, auxs, dtype=None)
            if spec.nms_draw < 0:
                break
            margins = nms_conditioning(sym, batched, args, auxs)
            nms = {"nms": {"draw": draw, "margins": margins,
                           "well_conditioned": well_conditioned(margins)}}
            if nms["nms"]["well_conditioned"]:
                break
        save_npz("%s-b%d-io.npz" % (prefix, n),
                 {**{"input:" + k: v for k, v in batched.items()},
                  **{"output:%d" % i: o for i, o in enumerate(outs)}})
        return {"n": n, "status": "exported", "score_ties": score_ties(spec, outs), **nms,
                "inputs": {k: shape_list(v.shape) for k, v in batched.items()},
                "outputs": [shape_list(o.shape) for o in outs]}
    except Exception as e:  # a graph that fixes its batch (a Reshape to 1, ...)
        return {"n": n, "status": "export failed", "error": one_line(e)}


def write_manifest(outdir: str, mode: str, models: dict) -> None:
    head = {"generated_by": GENERATED_BY,
            "note": "GENERATED FILE, do not edit; regenerate with: %s --%s OUTDIR" % (GENERATED_BY, mode)}
    text = json.dumps(head)[:-1] + "," + to_json({"mode": mode, "models": models})[1:]
    json.loads(text)
    tmp = os.path.join(outdir, "manifest.json.tmp")
    with open(tmp, "w") as f:
        f.write(text + "\n")
    os.replace(tmp, os.path.join(outdir, "manifest.json"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--suite", action="store_true", help="one small model per family (CI)")
    mode.add_argument("--all", action="store_true", help="every GluonCV model-zoo name")
    ap.add_argument("outdir")
    ap.add_argument("--models", help="comma-separated subset, exported in this order")
    ap.add_argument("--limit", type=int, default=0, help="--all: export at most N new models, then stop")
    ap.add_argument("--skip", metavar="REGEX",
                    help="--all: record the models whose name matches as skipped, unbuilt")
    ap.add_argument("--timeout", type=int, default=0,
                    help="seconds per model (default 600 for --suite, 180 for --all)")
    a = ap.parse_args(argv)
    if mx.__version__ != "1.9.1":
        ap.error("needs mxnet 1.9.1, found %s (run scripts/setup_oracle.sh)" % mx.__version__)
    block_downloads()
    mode_name = "suite" if a.suite else "all"
    specs = SUITE if a.suite else all_specs()
    if a.models:
        wanted = a.models.split(",")
        unknown = set(wanted) - {s.name for s in specs}
        if unknown:
            ap.error("unknown models: " + ", ".join(sorted(unknown)))
        by_name = {s.name: s for s in specs}
        specs = [by_name[n] for n in dict.fromkeys(wanted)]  # in the order given
    timeout = a.timeout or (600 if a.suite else 180)
    os.makedirs(a.outdir, exist_ok=True)
    digest = script_sha256_here()
    manifest_path = os.path.join(a.outdir, "manifest.json")
    models = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            old = json.load(f)
        if old.get("mode") == mode_name:
            models = old.get("models", {})
    if a.suite:  # forget models the suite no longer lists
        models = {k: v for k, v in models.items() if k in {s.name for s in SUITE}}
    t_all = time.time()
    done = 0
    for spec in specs:
        old = models.get(spec.name)
        prefix = os.path.join(a.outdir, spec.name)
        if old and (a.all or old.get("script_sha256") == digest) and (
                a.all or old["status"] != "exported" or
                all(os.path.exists(prefix + s) for s in ("-symbol.json", "-0000.params", "-io.npz")
                    + (("-b%d-io.npz" % spec.batch,)
                       if old.get("batch", {}).get("status") == "exported" else ()))):
            continue
        if a.limit and done >= a.limit:
            break
        if a.skip and re.search(a.skip, spec.name):
            models[spec.name] = {"family": spec.family, "expect": spec.expect, "status": "skipped",
                                 "error": "not built in this run (--skip %s)" % a.skip}
            continue
        entry = make_model(spec, a.outdir, timeout)
        entry["script_sha256"] = digest
        models[spec.name] = entry
        done += 1
        print("  %-44s %-14s %6.1fs %s" % (spec.name, entry["status"], entry["seconds"],
                                           entry.get("error", entry.get("outputs", ""))), flush=True)
        write_manifest(a.outdir, mode_name, models)
    write_manifest(a.outdir, mode_name, models)
    left = sum(1 for s in specs if s.name not in models)
    print("model_families --%s: %d exported now in %.1fs, %d left" % (
        mode_name, done, time.time() - t_all, left), flush=True)
    return 0


def script_sha256_here() -> str:
    import hashlib
    with open(os.path.abspath(__file__), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


if __name__ == "__main__":
    sys.exit(main())
