/*
 * Detection post-processing (GluonCV SSD/YOLO/Faster-RCNN heads):
 * _contrib_box_nms, _contrib_box_decode, _contrib_box_encode, with MXNet
 * 1.9.1's CPU semantics (src/operator/contrib/bounding_box-inl.h and
 * bounding_box-common.h).
 *
 * _contrib_box_nms, on data (..., N, W), every leading dim a batch:
 *   1. topk < 0 means N, else min(topk, N); topk 0 copies the input.
 *   2. A box is valid when score > valid_thresh (and, with id_index >= 0,
 *      its class != background_id). No valid box in the whole input: every
 *      output element is -1.
 *   3. Each batch's valid boxes are ordered by score, descending, with a
 *      stable sort (MXNet's CPU SortByKey is std::stable_sort), so equal
 *      scores keep their input order.
 *   4. Only the first topk of that order take part: each, unless already
 *      suppressed, suppresses every later one (of the same class unless
 *      force_suppress, with id_index >= 0; classes compared as int) whose
 *      IoU with it is > overlap_thresh. IoU is computed in float:
 *      intersection / (area_a + area_b - intersection), a negative width or
 *      height giving area 0 (two zero-area boxes give NaN: never suppressed).
 *   5. The survivors are written in order from row 0, whole rows copied; the
 *      remaining rows are -1. With in_format != out_format the coordinates
 *      of each written row are converted, except (as MXNet) a row whose first
 *      coordinate is negative.
 *   The hidden second output (N rows of 1) holds, for each written row, the
 *   input row it came from counted over the whole flattened input (b * N +
 *   i), else -1; with topk 0 it holds 0, 1, 2, ...
 *
 * _contrib_box_decode: data (B, N, 4) offsets, anchors (1, N, 4):
 *   x = d0 * std0 * aw + ax, y = d1 * std1 * ah + ay,
 *   w = exp(min(d2 * std2, clip)) * aw / 2 (clip only when > 0), h alike,
 *   out = (x - w, y - h, x + w, y + h); anchors in 'center' (x, y, w, h) or
 *   'corner' form.
 *
 * _contrib_box_encode: samples (B, N), matches (B, N), anchors (B, N, 4),
 *   refs (B, M, 4), means (4), stds (4), all boxes corners; for samples > 0.5
 *   the targets ((rx - ax) / aw - m0) / s0, ((ry - ay) / ah - m1) / s1,
 *   (log(rw / aw) - m2) / s2, (log(rh / ah) - m3) / s3 against
 *   refs[b, matches[b, i]], and masks 1; else targets and masks 0.
 *
 * _contrib_MultiBoxDetection (MXNet's SSD example; contrib/multibox_detection.cc):
 *   cls_prob (B, C, N), loc_pred (B, N * 4), anchor (., N, 4) corners (only
 *   the first N anchors are read); output (B, N, 6) rows
 *   (class - 1, score, xmin, ymin, xmax, ymax), -1 where empty. Per anchor
 *   the class is the first of the highest probability among classes 1..C-1
 *   (class 0 is the background whatever background_id says: MXNet's kernel
 *   ignores that attribute); a score below threshold makes it background.
 *   Boxes decode as box_decode with std = variances, clipped into [0, 1]
 *   with clip. The non-background rows are compacted to the front in anchor
 *   order; then, when 0 < nms_threshold <= 1, the first min(nms_topk, valid)
 *   of them by a stable descending sort on score take their places, a valid
 *   row beyond nms_topk keeps its unsorted contents with class -1 (as
 *   MXNet), and each kept row suppresses (class set to -1, the rest left)
 *   every later one of its class (any class with force_suppress) whose IoU
 *   with it is >= nms_threshold.
 */
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace bounding_box_op {

enum BoxFormat { kCorner = 0, kCenter = 1 };

// static_cast<int>(float) as x86's cvttss2si does it: NaN and values
// outside int's range give INT_MIN (a plain cast would be undefined).
int ClassId(float v) {
  if (!(v >= -2147483648.f && v < 2147483648.f)) return INT_MIN;
  return static_cast<int>(v);
}

// MXNet's BoxArea: a negative width or height gives 0.
float BoxArea(const float* box, int format) {
  float width, height;
  if (format == kCorner) {
    width = box[2] - box[0];
    height = box[3] - box[1];
  } else {
    width = box[2];
    height = box[3];
  }
  if (width < 0 || height < 0) return 0.f;
  return width * height;
}

// MXNet's Intersect along one axis (a[0], a[2] are that axis' coordinates).
inline float Intersect(const float* a, const float* b, int format) {
  float w;
  if (format == kCorner) {
    const float left = a[0] > b[0] ? a[0] : b[0];
    const float right = a[2] < b[2] ? a[2] : b[2];
    w = right - left;
  } else {
    const float aw = a[2] / 2, bw = b[2] / 2;
    const float al = a[0] - aw, ar = a[0] + aw;
    const float bl = b[0] - bw, br = b[0] + bw;
    const float left = bl > al ? bl : al;
    const float right = br < ar ? br : ar;
    w = right - left;
  }
  return w > 0 ? w : 0.f;
}

// --------------------------------------------------------------------------
// _contrib_box_nms
// --------------------------------------------------------------------------

// Each of the k boxes (coordinates 4 apart, in sorted order), unless already
// suppressed, suppresses every later one of its class whose IoU with it is
// above `overlap`. The format is a template argument so that Intersect's
// branch on it leaves the loop.
template <int kFormat>
void Suppress(int64_t k, const float* coords, const int* classes, const float* areas,
              float overlap, char* suppressed) {
  for (int64_t r = 0; r < k; ++r) {
    if (suppressed[r]) continue;
    const float* rc = coords + 4 * r;
    const int ref_id = classes[r];
    for (int64_t q = r + 1; q < k; ++q) {
      if (suppressed[q] || classes[q] != ref_id) continue;
      const float* pc = coords + 4 * q;
      float inter = Intersect(rc, pc, kFormat);
      inter *= Intersect(rc + 1, pc + 1, kFormat);
      const float iou = inter / (areas[r] + areas[q] - inter);
      if (iou > overlap) suppressed[q] = 1;
    }
  }
}

struct NmsParams {
  float overlap_thresh = 0.5f;
  float valid_thresh = 0.f;
  int64_t topk = -1;
  int64_t coord_start = 2;
  int64_t score_index = 1;
  int64_t id_index = -1;
  int64_t background_id = -1;
  bool force_suppress = false;
  int in_format = kCorner;
  int out_format = kCorner;
};

class BoxNms : public Operator {
 public:
  explicit BoxNms(const NmsParams& p) : p_(p) {}

  std::vector<std::string> OutputNames() const override { return NumberedNames("output", 2); }
  int NumVisibleOutputs() const override { return 1; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    if (!data.is_complete()) return Status();
    const int nd = data.ndim();
    MXL_CHECK(nd >= 2, "input 'data' has shape ", data.ToString(),
              " but box_nms needs (..., num_boxes, box_width)");
    const int64_t width = data[nd - 1];
    const int64_t need = p_.id_index >= 0 ? 6 : 5;
    MXL_CHECK(width >= need, "input 'data' has shape ", data.ToString(), ": each box needs at ",
              "least ", need, " elements (score, 4 coordinates",
              p_.id_index >= 0 ? " and the class id of id_index)" : ")");
    MXL_CHECK(p_.score_index < width, "score_index ", p_.score_index,
              " is out of range for boxes of width ", width, " (input 'data' ",
              data.ToString(), ")");
    MXL_CHECK(p_.coord_start + 3 < width, "coordinates ", p_.coord_start, "..",
              p_.coord_start + 3, " (coord_start) are out of range for boxes of width ", width,
              " (input 'data' ", data.ToString(), ")");
    MXL_CHECK(p_.id_index < width, "id_index ", p_.id_index,
              " is out of range for boxes of width ", width, " (input 'data' ", data.ToString(),
              ")");
    std::vector<int64_t> record(data.dims());
    record[nd - 1] = 1;
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, data, "output", OutputNames()));
    return AssignShape(out, 1, Shape(record), "output", OutputNames());
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>&,
                 size_t* workspace_bytes) override {
    *workspace_bytes = 0;
    const Shape& s = in[0].shape();
    const int nd = s.ndim();
    num_ = s[nd - 2];
    width_ = s[nd - 1];
    batches_ = s.ProdRange(0, nd - 2);
    candidates_.resize(static_cast<size_t>(num_));
    coords_.resize(static_cast<size_t>(4 * num_));
    classes_.resize(static_cast<size_t>(num_));
    areas_.resize(static_cast<size_t>(num_));
    suppressed_.resize(static_cast<size_t>(num_));
    return Status();
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    float* record = out[1].fdata();
    const int64_t total = batches_ * num_;
    const int64_t topk = p_.topk < 0 ? num_ : std::min(num_, p_.topk);
    if (topk < 1) {
      std::memcpy(y, x, sizeof(float) * static_cast<size_t>(total * width_));
      for (int64_t i = 0; i < total; ++i) record[i] = static_cast<float>(i);
      return Status();
    }
    std::fill(y, y + total * width_, -1.f);
    std::fill(record, record + total, -1.f);
    const bool has_class = p_.id_index >= 0;
    const bool by_class = has_class && !p_.force_suppress;
    const float background = static_cast<float>(p_.background_id);
    for (int64_t b = 0; b < batches_; ++b) {
      const float* xb = x + b * num_ * width_;
      // The first k valid boxes of the stable sort by descending score:
      // ordering (score descending, then input position) is that sort's
      // order (valid scores are never NaN, and -0 ties with +0 as there), so
      // a partial sort finds them without sorting the rest. YOLOv3 keeps 400
      // of 20160 boxes; the whole stable sort took most of the operator.
      int64_t count = 0;
      for (int64_t i = 0; i < num_; ++i) {
        const float* row = xb + i * width_;
        bool valid = row[p_.score_index] > p_.valid_thresh;
        if (has_class) valid = valid && row[p_.id_index] != background;
        if (valid) candidates_[count++] = {row[p_.score_index], i};
      }
      const int64_t k = std::min(count, topk);
      std::partial_sort(candidates_.begin(), candidates_.begin() + k,
                        candidates_.begin() + count, [](const Candidate& a, const Candidate& c) {
                          return a.score > c.score || (!(c.score > a.score) && a.index < c.index);
                        });
      // The kept boxes' coordinates and classes gathered in sorted order,
      // so that the pairwise loop below reads them in sequence.
      for (int64_t r = 0; r < k; ++r) {
        const float* row = xb + candidates_[r].index * width_;
        std::memcpy(&coords_[4 * r], row + p_.coord_start, 4 * sizeof(float));
        classes_[r] = by_class ? ClassId(row[p_.id_index]) : 0;
        areas_[r] = BoxArea(&coords_[4 * r], p_.in_format);
        suppressed_[r] = 0;
      }
      if (p_.in_format == kCorner) {
        Suppress<kCorner>(k, coords_.data(), classes_.data(), areas_.data(), p_.overlap_thresh,
                          suppressed_.data());
      } else {
        Suppress<kCenter>(k, coords_.data(), classes_.data(), areas_.data(), p_.overlap_thresh,
                          suppressed_.data());
      }
      float* yb = y + b * num_ * width_;
      int64_t written = 0;
      for (int64_t r = 0; r < k; ++r) {
        if (suppressed_[r]) continue;
        float* row = yb + written * width_;
        std::memcpy(row, xb + candidates_[r].index * width_,
                    sizeof(float) * static_cast<size_t>(width_));
        record[b * num_ + written] = static_cast<float>(b * num_ + candidates_[r].index);
        if (p_.in_format != p_.out_format) Convert(row + p_.coord_start);
        ++written;
      }
    }
    return Status();
  }

 private:
  // MXNet's corner_to_center / center_to_corner, which leave a box whose
  // first coordinate is negative as it is.
  void Convert(float* c) const {
    if (c[0] < 0) return;
    if (p_.out_format == kCenter) {
      const float left = c[0], top = c[1], right = c[2], bottom = c[3];
      c[0] = (left + right) / 2;
      c[1] = (top + bottom) / 2;
      c[2] = right - left;
      c[3] = bottom - top;
    } else {
      const float cx = c[0], cy = c[1], half_w = c[2] / 2, half_h = c[3] / 2;
      c[0] = cx - half_w;
      c[1] = cy - half_h;
      c[2] = cx + half_w;
      c[3] = cy + half_h;
    }
  }

  NmsParams p_;
  int64_t num_ = 0, width_ = 0, batches_ = 0;
  struct Candidate {
    float score;
    int64_t index;  // the box's row in its batch
  };
  std::vector<Candidate> candidates_;
  std::vector<float> coords_;  // 4 per kept box, in sorted order
  std::vector<int> classes_;   // ClassId of each kept box (0 when classes are ignored)
  std::vector<float> areas_;
  std::vector<char> suppressed_;
};

Status CreateBoxNms(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  NmsParams p;
  const double overlap = attrs->Float("overlap_thresh", 0.5);
  const double valid = attrs->Float("valid_thresh", 0);
  p.topk = attrs->Int("topk", -1);
  p.coord_start = attrs->Int("coord_start", 2);
  p.score_index = attrs->Int("score_index", 1);
  p.id_index = attrs->Int("id_index", -1);
  p.background_id = attrs->Int("background_id", -1);
  p.force_suppress = attrs->Bool("force_suppress", false);
  p.in_format = attrs->Enum("in_format", {"corner", "center"}, kCorner);
  p.out_format = attrs->Enum("out_format", {"corner", "center"}, kCorner);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  p.overlap_thresh = static_cast<float>(overlap);
  p.valid_thresh = static_cast<float>(valid);
  const int64_t c0 = p.coord_start, c3 = p.coord_start + 3;
  const auto in_coords = [&](int64_t i) { return i >= c0 && i <= c3; };
  if (p.coord_start < 0) {
    attrs->Fail("coord_start", StrCat(p.coord_start, " must be >= 0"));
  } else if (p.coord_start > INT_MAX - 3) {
    attrs->Fail("coord_start", StrCat(p.coord_start, " is too large"));
  } else if (p.score_index < 0 || p.score_index > INT_MAX) {
    attrs->Fail("score_index", StrCat(p.score_index, " must be >= 0"));
  } else if (in_coords(p.score_index)) {
    attrs->Fail("score_index", StrCat(p.score_index, " is one of the coordinates ", c0, "..",
                                      c3, " (coord_start ", c0, ")"));
  } else if (p.id_index > INT_MAX) {
    attrs->Fail("id_index", StrCat(p.id_index, " is too large"));
  } else if (p.id_index >= 0 && in_coords(p.id_index)) {
    attrs->Fail("id_index", StrCat(p.id_index, " is one of the coordinates ", c0, "..", c3,
                                   " (coord_start ", c0, ")"));
  } else if (p.id_index >= 0 && p.id_index == p.score_index) {
    attrs->Fail("id_index", StrCat(p.id_index, " is also score_index"));
  } else if (p.background_id < INT_MIN || p.background_id > INT_MAX) {
    attrs->Fail("background_id", StrCat(p.background_id, " is out of int's range"));
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new BoxNms(p));
  return Status();
}

// --------------------------------------------------------------------------
// _contrib_box_decode
// --------------------------------------------------------------------------

class BoxDecode : public Operator {
 public:
  BoxDecode(const float std[4], float clip, int format) : clip_(clip), format_(format) {
    for (int i = 0; i < 4; ++i) std_[i] = std[i];
  }

  std::vector<std::string> InputNames() const override { return {"data", "anchors"}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    const Shape& anchors = (*in)[1];
    if (!data.is_complete() || !anchors.is_complete()) return Status();
    MXL_CHECK(data.ndim() == 3 && data[2] == 4, "input 'data' has shape ", data.ToString(),
              " but box_decode needs (batch, num_boxes, 4)");
    MXL_CHECK(anchors.ndim() >= 3 && anchors[anchors.ndim() - 1] == 4, "input 'anchors' has ",
              "shape ", anchors.ToString(), " but box_decode needs (1, num_boxes, 4)");
    // MXNet reads anchor i % N for box i: the first N anchors must exist.
    MXL_CHECK(anchors.Size() >= data[1] * 4, "input 'anchors' has shape ", anchors.ToString(),
              ": fewer anchors than the ", data[1], " boxes of input 'data' ", data.ToString());
    return AssignShape(out, 0, data, "output", OutputNames());
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& s = in[0].shape();
    const int64_t n = s[1], count = s[0] * s[1];
    const float* x = in[0].fdata();
    const float* anchors = in[1].fdata();
    float* y = out[0].fdata();
    for (int64_t i = 0; i < count; ++i) {
      const float* a = anchors + (i % n) * 4;
      float ax = a[0], ay = a[1], aw = a[2], ah = a[3];
      if (format_ == kCorner) {
        aw = aw - ax;
        ah = ah - ay;
        ax = ax + aw * 0.5f;
        ay = ay + ah * 0.5f;
      }
      const float* d = x + i * 4;
      const float ox = d[0] * std_[0] * aw + ax;
      const float oy = d[1] * std_[1] * ah + ay;
      float dw = d[2] * std_[2];
      float dh = d[3] * std_[3];
      if (clip_ > 0) {
        dw = dw < clip_ ? dw : clip_;
        dh = dh < clip_ ? dh : clip_;
      }
      const float ow = std::exp(dw) * aw * 0.5f;
      const float oh = std::exp(dh) * ah * 0.5f;
      float* o = y + i * 4;
      o[0] = ox - ow;
      o[1] = oy - oh;
      o[2] = ox + ow;
      o[3] = oy + oh;
    }
    return Status();
  }

 private:
  float std_[4];
  float clip_;
  int format_;
};

Status CreateBoxDecode(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const char* keys[4] = {"std0", "std1", "std2", "std3"};
  float std[4];
  for (int i = 0; i < 4; ++i) std[i] = static_cast<float>(attrs->Float(keys[i], 1.0));
  const float clip = static_cast<float>(attrs->Float("clip", -1.0));
  const int format = attrs->Enum("format", {"corner", "center"}, kCenter);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new BoxDecode(std, clip, format));
  return Status();
}

// --------------------------------------------------------------------------
// _contrib_box_encode
// --------------------------------------------------------------------------

class BoxEncode : public Operator {
 public:
  std::vector<std::string> InputNames() const override {
    return {"samples", "matches", "anchors", "refs", "means", "stds"};
  }
  std::vector<std::string> OutputNames() const override { return NumberedNames("output", 2); }
  int NumVisibleOutputs() const override { return 2; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(AssignShape(in, 4, Shape({4}), "input", InputNames()));
    MXL_RETURN_IF_ERROR(AssignShape(in, 5, Shape({4}), "input", InputNames()));
    const Shape& samples = (*in)[0];
    const Shape& matches = (*in)[1];
    const Shape& anchors = (*in)[2];
    const Shape& refs = (*in)[3];
    if (!anchors.is_complete()) return Status();
    MXL_CHECK(anchors.ndim() == 3 && anchors[2] == 4, "input 'anchors' has shape ",
              anchors.ToString(), " but box_encode needs (batch, num_anchors, 4)");
    const int64_t b = anchors[0], n = anchors[1];
    const Shape bn({b, n});
    MXL_RETURN_IF_ERROR(AssignShape(in, 0, bn, "input", InputNames()));
    MXL_RETURN_IF_ERROR(AssignShape(in, 1, bn, "input", InputNames()));
    if (refs.is_complete()) {
      MXL_CHECK(refs.ndim() == 3 && refs[0] == b && refs[2] == 4, "input 'refs' has shape ",
                refs.ToString(), " but box_encode needs (", b, ", num_refs, 4) with input ",
                "'anchors' ", anchors.ToString());
    }
    (void)samples;
    (void)matches;
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, anchors, "output", OutputNames()));
    return AssignShape(out, 1, anchors, "output", OutputNames());
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& as = in[2].shape();
    const int64_t n = as[1], count = as[0] * as[1], m = in[3].shape()[1];
    const float* samples = in[0].fdata();
    const float* matches = in[1].fdata();
    const float* anchors = in[2].fdata();
    const float* refs = in[3].fdata();
    const float* means = in[4].fdata();
    const float* stds = in[5].fdata();
    float* targets = out[0].fdata();
    float* masks = out[1].fdata();
    for (int64_t i = 0; i < count; ++i) {
      const bool valid = samples[i] > 0.5f;
      float* t = targets + i * 4;
      float* k = masks + i * 4;
      const float v = valid ? 1.f : 0.f;
      for (int c = 0; c < 4; ++c) k[c] = v;
      if (!valid) {
        for (int c = 0; c < 4; ++c) t[c] = 0.f;
        continue;
      }
      const float match_value = matches[i];
      // MXNet truncates the match to an index and reads refs there.
      MXL_CHECK(match_value > -1.f && match_value < static_cast<float>(m),
                "input 'matches' holds ", match_value, " for a positive sample (batch ", i / n,
                ", anchor ", i % n, "): out of range [0, ", m, ")");
      const int64_t match = static_cast<int64_t>(match_value);
      const float* r = refs + ((i / n) * m + match) * 4;
      const float rw = r[2] - r[0], rh = r[3] - r[1];
      const float rx = r[0] + rw * 0.5f, ry = r[1] + rh * 0.5f;
      const float* a = anchors + i * 4;
      const float aw = a[2] - a[0], ah = a[3] - a[1];
      const float ax = a[0] + aw * 0.5f, ay = a[1] + ah * 0.5f;
      t[0] = ((rx - ax) / aw - means[0]) / stds[0];
      t[1] = ((ry - ay) / ah - means[1]) / stds[1];
      t[2] = (std::log(rw / aw) - means[2]) / stds[2];
      t[3] = (std::log(rh / ah) - means[3]) / stds[3];
    }
    return Status();
  }
};

Status CreateBoxEncode(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new BoxEncode());
  return Status();
}

// --------------------------------------------------------------------------
// _contrib_MultiBoxDetection
// --------------------------------------------------------------------------

struct MultiBoxParams {
  bool clip = true;
  float threshold = 0.01f;
  float nms_threshold = 0.5f;
  bool force_suppress = false;
  float variances[4] = {0.1f, 0.1f, 0.2f, 0.2f};
  int64_t nms_topk = -1;
};

class MultiBoxDetection : public Operator {
 public:
  explicit MultiBoxDetection(const MultiBoxParams& p) : p_(p) {}

  std::vector<std::string> InputNames() const override {
    return {"cls_prob", "loc_pred", "anchor"};
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& cls = (*in)[0];
    const Shape& loc = (*in)[1];
    const Shape& anchor = (*in)[2];
    if (!cls.is_complete() || !loc.is_complete() || !anchor.is_complete()) return Status();
    MXL_CHECK(cls.ndim() == 3, "input 'cls_prob' has shape ", cls.ToString(),
              " but needs (batch, classes, anchors)");
    MXL_CHECK(anchor.ndim() == 3 && anchor[2] == 4 && anchor[1] == cls[2], "input 'anchor' has shape ",
              anchor.ToString(), " but needs (1, ", cls[2], ", 4) for 'cls_prob' ", cls.ToString());
    MXL_CHECK(loc.ndim() == 2 && loc[0] == cls[0] && loc[1] == cls[2] * 4, "input 'loc_pred' has shape ",
              loc.ToString(), " but needs (", cls[0], ", ", cls[2] * 4, ") for 'cls_prob' ",
              cls.ToString());
    return AssignShape(out, 0, Shape({cls[0], cls[2], 6}), "output", OutputNames());
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& cls = in[0].shape();
    const int64_t batches = cls[0], classes = cls[1], anchors = cls[2];
    const float* anchor = in[2].fdata();
    std::vector<float> rows(static_cast<size_t>(anchors * 6)), sorted_from(rows.size());
    float* y = out[0].fdata();
    std::fill(y, y + out[0].Size(), -1.f);
    for (int64_t b = 0; b < batches; ++b) {
      const float* prob = in[0].fdata() + b * classes * anchors;
      const float* loc = in[1].fdata() + b * anchors * 4;
      float* o = y + b * anchors * 6;
      for (int64_t i = 0; i < anchors; ++i) {
        float score = -1;
        int64_t id = 0;
        for (int64_t j = 1; j < classes; ++j) {
          const float p = prob[j * anchors + i];
          if (p > score) {
            score = p;
            id = j;
          }
        }
        if (id > 0 && score < p_.threshold) id = 0;
        float* row = rows.data() + i * 6;
        row[0] = static_cast<float>(id - 1);
        row[1] = score;
        Decode(anchor + i * 4, loc + i * 4, row + 2);
      }
      int64_t valid = 0;
      for (int64_t i = 0; i < anchors; ++i) {
        if (rows[i * 6] >= 0) {
          std::copy(rows.data() + i * 6, rows.data() + i * 6 + 6, o + valid * 6);
          ++valid;
        }
      }
      if (valid < 1 || p_.nms_threshold <= 0 || p_.nms_threshold > 1) continue;
      std::copy(o, o + anchors * 6, sorted_from.data());
      std::vector<int64_t> order(static_cast<size_t>(valid));
      for (int64_t i = 0; i < valid; ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t c) {
        return sorted_from[a * 6 + 1] > sorted_from[c * 6 + 1];
      });
      int64_t keep = valid;
      if (p_.nms_topk > 0 && p_.nms_topk < keep) {
        keep = p_.nms_topk;
        for (int64_t i = keep; i < valid; ++i) o[i * 6] = -1;
      }
      for (int64_t i = 0; i < keep; ++i) {
        std::copy(sorted_from.data() + order[i] * 6, sorted_from.data() + order[i] * 6 + 6,
                  o + i * 6);
      }
      for (int64_t i = 0; i < keep; ++i) {
        const float* a = o + i * 6;
        if (a[0] < 0) continue;
        for (int64_t j = i + 1; j < keep; ++j) {
          float* c = o + j * 6;
          if (c[0] < 0) continue;
          if ((p_.force_suppress || a[0] == c[0]) && Overlap(a + 2, c + 2) >= p_.nms_threshold) {
            c[0] = -1;
          }
        }
      }
    }
    return Status();
  }

 private:
  // MXNet's TransformLocations.
  void Decode(const float* anchor, const float* loc, float* out) const {
    const float al = anchor[0], at = anchor[1], ar = anchor[2], ab = anchor[3];
    const float aw = ar - al, ah = ab - at;
    const float ax = (al + ar) / 2.f, ay = (at + ab) / 2.f;
    const float ox = loc[0] * p_.variances[0] * aw + ax;
    const float oy = loc[1] * p_.variances[1] * ah + ay;
    const float ow = std::exp(loc[2] * p_.variances[2]) * aw / 2;
    const float oh = std::exp(loc[3] * p_.variances[3]) * ah / 2;
    const float v[4] = {ox - ow, oy - oh, ox + ow, oy + oh};
    for (int k = 0; k < 4; ++k) {
      out[k] = p_.clip ? std::max(0.f, std::min(1.f, v[k])) : v[k];
    }
  }

  // MXNet's CalculateOverlap (corners).
  static float Overlap(const float* a, const float* b) {
    const float w = std::max(0.f, std::min(a[2], b[2]) - std::max(a[0], b[0]));
    const float h = std::max(0.f, std::min(a[3], b[3]) - std::max(a[1], b[1]));
    const float i = w * h;
    const float u = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - i;
    return u <= 0.f ? 0.f : i / u;
  }

  MultiBoxParams p_;
};

Status CreateMultiBoxDetection(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  MultiBoxParams p;
  p.clip = attrs->Bool("clip", true);
  p.threshold = static_cast<float>(attrs->Float("threshold", 0.01));
  attrs->Int("background_id", 0);  // declared by MXNet, unused by its kernel (class 0 is it)
  p.nms_threshold = static_cast<float>(attrs->Float("nms_threshold", 0.5));
  p.force_suppress = attrs->Bool("force_suppress", false);
  const std::vector<double> variances = attrs->FloatTuple("variances", {0.1, 0.1, 0.2, 0.2});
  p.nms_topk = attrs->Int("nms_topk", -1);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (variances.size() != 4) {
    attrs->Fail("variances", StrCat("has ", variances.size(), " entries: needs 4"));
    return attrs->Finish();
  }
  for (int k = 0; k < 4; ++k) p.variances[k] = static_cast<float>(variances[k]);
  out->reset(new MultiBoxDetection(p));
  return Status();
}

}  // namespace bounding_box_op
}  // namespace mxlite
