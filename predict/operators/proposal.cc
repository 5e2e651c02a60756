/*
 * R-CNN region proposals: _contrib_Proposal (one image) and
 * _contrib_MultiProposal (a batch), with MXNet 1.9.1's CPU semantics
 * (src/operator/contrib/proposal.cc, multi_proposal.cc, proposal-inl.h).
 *
 * Inputs: cls_prob (N, 2A, H, W) (channels A..2A-1 are the foreground
 * scores), bbox_pred (N, 4A, H, W), im_info (N, 3) = (height, width, scale).
 * A = |ratios| * |scales|. Per image:
 *   1. Anchors: base box (0, 0, s - 1, s - 1), s = feature_stride; for each
 *      ratio (outer) and scale (inner): size = s * s, w = floor(sqrt(floor(
 *      size / ratio)) + 0.5) * scale, h = floor(w / scale * ratio + 0.5) *
 *      scale, centred on the base box's centre with MXNet's "- 1" corners;
 *      shifted by (x * s, y * s) for every feature position. Proposal row
 *      index = (y * W + x) * A + a, its score cls_prob[A + a, y, x].
 *   2. Positions at or beyond (floor(im_h / s), floor(im_w / s)) get score -1.
 *   3. Boxes decode from the deltas (the Fast R-CNN transform with "+ 1"
 *      widths, or with iou_loss the deltas added to the corners), then are
 *      clipped into [0, im_w - 1] x [0, im_h - 1].
 *   4. A box narrower or lower than rpn_min_size * im_scale (widths x2 - x1 +
 *      1) is grown by half that size on every side and its score set to -1:
 *      it stays in the list (MXNet's FilterBox).
 *   5. A stable sort by descending score; the first pre = min(
 *      rpn_pre_nms_top_n (<= 0: all), count) boxes go into a greedy NMS
 *      ("+ 1" areas, suppression when IoU > threshold) that stops once
 *      min(rpn_post_nms_top_n, pre) boxes are kept.
 *   6. Output rows (rpn_post_nms_top_n per image): (image index, x1, y1, x2,
 *      y2) of kept box i, and when fewer were kept, row i repeats kept box
 *      i % kept (MXNet's padding). The hidden (or, with output_score,
 *      visible) second output holds each row's score.
 * The arithmetic mixes float and double exactly where MXNet's source does,
 * so the boxes (and with them the NMS decisions) are MXNet's bit for bit.
 */
#include <algorithm>
#include <climits>
#include <cmath>

#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace proposal_op {

struct ProposalParams {
  int64_t pre_nms_top_n = 6000;
  int64_t post_nms_top_n = 300;
  float threshold = 0.7f;
  int64_t min_size = 16;
  std::vector<float> scales;
  std::vector<float> ratios;
  int64_t feature_stride = 16;
  bool output_score = false;
  bool iou_loss = false;
  bool multi = false;
};

// static_cast<int>(float) as x86's cvttss2si does it (out of range: INT_MIN).
int TruncToInt(float v) {
  if (!(v >= -2147483648.f && v < 2147483648.f)) return INT_MIN;
  return static_cast<int>(v);
}

class Proposal : public Operator {
 public:
  explicit Proposal(const ProposalParams& p) : p_(p) {}

  std::vector<std::string> InputNames() const override {
    return {"cls_prob", "bbox_pred", "im_info"};
  }
  std::vector<std::string> OutputNames() const override { return {"output", "score"}; }
  int NumVisibleOutputs() const override { return p_.output_score ? 2 : 1; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& cls = (*in)[0];
    if (!cls.is_complete()) return Status();
    MXL_CHECK(cls.ndim() == 4, "input 'cls_prob' has shape ", cls.ToString(),
              " but needs (batch, 2 * anchors, height, width)");
    const int64_t anchors = static_cast<int64_t>(p_.scales.size() * p_.ratios.size());
    MXL_CHECK(cls[1] == 2 * anchors, "input 'cls_prob' has shape ", cls.ToString(), ", but ",
              p_.ratios.size(), " ratios x ", p_.scales.size(), " scales give ", anchors,
              " anchors: it needs ", 2 * anchors, " channels (background and foreground)");
    MXL_CHECK(p_.multi || cls[0] == 1, "input 'cls_prob' has shape ", cls.ToString(),
              ": _contrib_Proposal takes one image (batch 1); _contrib_MultiProposal takes more");
    MXL_RETURN_IF_ERROR(AssignShape(in, 1, Shape({cls[0], cls[1] * 2, cls[2], cls[3]}), "input",
                                    InputNames()));
    MXL_RETURN_IF_ERROR(AssignShape(in, 2, Shape({cls[0], 3}), "input", InputNames()));
    const int64_t rows = cls[0] * p_.post_nms_top_n;
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, Shape({rows, 5}), "output", OutputNames()));
    return AssignShape(out, 1, Shape({rows, 1}), "output", OutputNames());
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>&,
                 size_t* workspace_bytes) override {
    *workspace_bytes = 0;
    const Shape& s = in[0].shape();
    images_ = s[0];
    anchors_ = s[1] / 2;
    height_ = s[2];
    width_ = s[3];
    count_ = anchors_ * height_ * width_;
    MXL_CHECK(count_ > 0, "input 'cls_prob' has shape ", s.ToString(), ": no anchors");
    MXL_CHECK(count_ <= (int64_t{1} << 24), "input 'cls_prob' has shape ", s.ToString(), ": ",
              count_, " anchors, more than 2^24");
    pre_ = p_.pre_nms_top_n > 0 ? std::min(p_.pre_nms_top_n, count_) : count_;
    post_ = std::min(p_.post_nms_top_n, pre_);
    base_.clear();
    GenerateAnchors();
    boxes_.resize(static_cast<size_t>(count_ * 5));
    order_.resize(static_cast<size_t>(count_));
    ordered_.resize(static_cast<size_t>(pre_ * 5));
    area_.resize(static_cast<size_t>(pre_));
    suppressed_.resize(static_cast<size_t>(pre_));
    keep_.resize(static_cast<size_t>(pre_));
    return Status();
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const float* cls = in[0].fdata();
    const float* deltas = in[1].fdata();
    const float* info = in[2].fdata();
    float* rois = out[0].fdata();
    float* scores = out[1].fdata();
    const int64_t plane = height_ * width_;
    const float stride = static_cast<float>(p_.feature_stride);
    for (int64_t b = 0; b < images_; ++b) {
      const float im_h = info[b * 3], im_w = info[b * 3 + 1], im_scale = info[b * 3 + 2];
      const float* fg = cls + (b * 2 * anchors_ + anchors_) * plane;
      const float* delta = deltas + b * 4 * anchors_ * plane;
      const int real_h = TruncToInt(im_h / stride);
      const int real_w = TruncToInt(im_w / stride);
      MXL_CHECK(height_ >= real_h && width_ >= real_w, "image ", b, ": im_info's ", im_h, " x ",
                im_w, " needs a feature map of at least ", real_h, " x ", real_w,
                " at feature_stride ", p_.feature_stride, ", but cls_prob's is ", height_, " x ",
                width_);
      const float clip_w = im_w - 1.0f, clip_h = im_h - 1.0f;
      for (int64_t y = 0; y < height_; ++y) {
        for (int64_t x = 0; x < width_; ++x) {
          for (int64_t a = 0; a < anchors_; ++a) {
            float* box = &boxes_[static_cast<size_t>(((y * width_ + x) * anchors_ + a) * 5)];
            const float* base = &base_[static_cast<size_t>(a * 4)];
            const float x1 = base[0] + static_cast<float>(x * p_.feature_stride);
            const float y1 = base[1] + static_cast<float>(y * p_.feature_stride);
            const float x2 = base[2] + static_cast<float>(x * p_.feature_stride);
            const float y2 = base[3] + static_cast<float>(y * p_.feature_stride);
            const int64_t at = y * width_ + x;
            const float d0 = delta[(a * 4 + 0) * plane + at];
            const float d1 = delta[(a * 4 + 1) * plane + at];
            const float d2 = delta[(a * 4 + 2) * plane + at];
            const float d3 = delta[(a * 4 + 3) * plane + at];
            float px1, py1, px2, py2;
            if (p_.iou_loss) {
              px1 = x1 + d0;
              py1 = y1 + d1;
              px2 = x2 + d2;
              py2 = y2 + d3;
            } else {
              const float w = static_cast<float>(static_cast<double>(x2 - x1) + 1.0);
              const float h = static_cast<float>(static_cast<double>(y2 - y1) + 1.0);
              const float cx = static_cast<float>(static_cast<double>(x1) +
                                                  0.5 * (static_cast<double>(w) - 1.0));
              const float cy = static_cast<float>(static_cast<double>(y1) +
                                                  0.5 * (static_cast<double>(h) - 1.0));
              const float pcx = d0 * w + cx;
              const float pcy = d1 * h + cy;
              const float pw = std::exp(d2) * w;
              const float ph = std::exp(d3) * h;
              const double hw = 0.5 * (static_cast<double>(pw) - 1.0);
              const double hh = 0.5 * (static_cast<double>(ph) - 1.0);
              px1 = static_cast<float>(static_cast<double>(pcx) - hw);
              py1 = static_cast<float>(static_cast<double>(pcy) - hh);
              px2 = static_cast<float>(static_cast<double>(pcx) + hw);
              py2 = static_cast<float>(static_cast<double>(pcy) + hh);
            }
            box[0] = std::max(std::min(px1, clip_w), 0.0f);
            box[1] = std::max(std::min(py1, clip_h), 0.0f);
            box[2] = std::max(std::min(px2, clip_w), 0.0f);
            box[3] = std::max(std::min(py2, clip_h), 0.0f);
            box[4] = (y >= real_h || x >= real_w) ? -1.0f : fg[a * plane + at];
          }
        }
      }
      // FilterBox: too small boxes grow by half the minimum and score -1.
      const float min_size = static_cast<float>(p_.min_size) * im_scale;
      for (int64_t i = 0; i < count_; ++i) {
        float* box = &boxes_[static_cast<size_t>(i * 5)];
        const float iw = box[2] - box[0] + 1.0f;
        const float ih = box[3] - box[1] + 1.0f;
        if (iw < min_size || ih < min_size) {
          box[0] -= min_size / 2;
          box[1] -= min_size / 2;
          box[2] += min_size / 2;
          box[3] += min_size / 2;
          box[4] = -1.0f;
        }
      }
      for (int64_t i = 0; i < count_; ++i) order_[static_cast<size_t>(i)] = i;
      const float* bx = boxes_.data();
      std::stable_sort(order_.begin(), order_.end(), [bx](int64_t l, int64_t r) {
        return bx[l * 5 + 4] > bx[r * 5 + 4];
      });
      for (int64_t i = 0; i < pre_; ++i) {
        std::copy(bx + order_[static_cast<size_t>(i)] * 5,
                  bx + order_[static_cast<size_t>(i)] * 5 + 5, &ordered_[static_cast<size_t>(i * 5)]);
      }
      const int64_t kept = Nms();
      for (int64_t i = 0; i < p_.post_nms_top_n; ++i) {
        const int64_t row = b * p_.post_nms_top_n + i;
        const int64_t index = keep_[static_cast<size_t>(i < kept ? i : i % kept)];
        const float* src = &ordered_[static_cast<size_t>(index * 5)];
        rois[row * 5] = static_cast<float>(b);
        for (int j = 0; j < 4; ++j) rois[row * 5 + 1 + j] = src[j];
        scores[row] = src[4];
      }
    }
    return Status();
  }

 private:
  // MXNet's GenerateAnchors (_Transform / _MakeAnchor), float and double as there.
  void GenerateAnchors() {
    const float base_max = static_cast<float>(static_cast<double>(p_.feature_stride) - 1.0);
    const float w = base_max - 0.0f + 1.0f;
    const float h = base_max - 0.0f + 1.0f;
    const float x_ctr = static_cast<float>(0.0 + 0.5 * static_cast<double>(w - 1.0f));
    const float y_ctr = static_cast<float>(0.0 + 0.5 * static_cast<double>(h - 1.0f));
    const float size = w * h;
    for (const float ratio : p_.ratios) {
      for (const float scale : p_.scales) {
        const float size_ratios = std::floor(size / ratio);
        const float new_w = std::floor(std::sqrt(size_ratios) + 0.5f) * scale;
        const float new_h = std::floor((new_w / scale * ratio) + 0.5f) * scale;
        base_.push_back(x_ctr - 0.5f * (new_w - 1.0f));
        base_.push_back(y_ctr - 0.5f * (new_h - 1.0f));
        base_.push_back(x_ctr + 0.5f * (new_w - 1.0f));
        base_.push_back(y_ctr + 0.5f * (new_h - 1.0f));
      }
    }
  }

  // MXNet's NonMaximumSuppression over ordered_ (pre_ rows); returns the count kept.
  int64_t Nms() {
    const float* d = ordered_.data();
    for (int64_t i = 0; i < pre_; ++i) {
      area_[static_cast<size_t>(i)] = (d[i * 5 + 2] - d[i * 5] + 1) * (d[i * 5 + 3] - d[i * 5 + 1] + 1);
      suppressed_[static_cast<size_t>(i)] = 0;
    }
    int64_t kept = 0;
    for (int64_t i = 0; i < pre_ && kept < post_; ++i) {
      if (suppressed_[static_cast<size_t>(i)]) continue;
      keep_[static_cast<size_t>(kept++)] = i;
      const float ix1 = d[i * 5], iy1 = d[i * 5 + 1], ix2 = d[i * 5 + 2], iy2 = d[i * 5 + 3];
      const float iarea = area_[static_cast<size_t>(i)];
      for (int64_t j = i + 1; j < pre_; ++j) {
        if (suppressed_[static_cast<size_t>(j)]) continue;
        const float xx1 = std::max(ix1, d[j * 5]);
        const float yy1 = std::max(iy1, d[j * 5 + 1]);
        const float xx2 = std::min(ix2, d[j * 5 + 2]);
        const float yy2 = std::min(iy2, d[j * 5 + 3]);
        const float w = std::max(0.0f, xx2 - xx1 + 1.0f);
        const float h = std::max(0.0f, yy2 - yy1 + 1.0f);
        const float inter = w * h;
        const float ovr = inter / (iarea + area_[static_cast<size_t>(j)] - inter);
        if (ovr > p_.threshold) suppressed_[static_cast<size_t>(j)] = 1;
      }
    }
    return kept;
  }

  ProposalParams p_;
  int64_t images_ = 0, anchors_ = 0, height_ = 0, width_ = 0, count_ = 0, pre_ = 0, post_ = 0;
  std::vector<float> base_, boxes_, ordered_, area_;
  std::vector<int64_t> order_, keep_;
  std::vector<char> suppressed_;
};

Status CreateProposalOp(AttrParser* attrs, bool multi, std::unique_ptr<Operator>* out) {
  ProposalParams p;
  p.multi = multi;
  p.pre_nms_top_n = attrs->Int("rpn_pre_nms_top_n", 6000);
  p.post_nms_top_n = attrs->Int("rpn_post_nms_top_n", 300);
  const double threshold = attrs->Float("threshold", 0.7);
  p.min_size = attrs->Int("rpn_min_size", 16);
  const std::vector<double> scales = attrs->FloatTuple("scales", {4.0, 8.0, 16.0, 32.0});
  const std::vector<double> ratios = attrs->FloatTuple("ratios", {0.5, 1.0, 2.0});
  p.feature_stride = attrs->Int("feature_stride", 16);
  p.output_score = attrs->Bool("output_score", false);
  p.iou_loss = attrs->Bool("iou_loss", false);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (p.post_nms_top_n < 1 || p.post_nms_top_n > INT_MAX) {
    attrs->Fail("rpn_post_nms_top_n", StrCat(p.post_nms_top_n, " must be a positive int"));
  } else if (p.pre_nms_top_n > INT_MAX || p.pre_nms_top_n < INT_MIN) {
    attrs->Fail("rpn_pre_nms_top_n", StrCat(p.pre_nms_top_n, " is out of int's range"));
  } else if (p.min_size > INT_MAX || p.min_size < INT_MIN) {
    attrs->Fail("rpn_min_size", StrCat(p.min_size, " is out of int's range"));
  } else if (p.feature_stride < 1 || p.feature_stride > (1 << 20)) {
    attrs->Fail("feature_stride", StrCat(p.feature_stride, " must be in [1, 2^20]"));
  } else if (scales.empty()) {
    attrs->Fail("scales", "is empty: needs at least one scale");
  } else if (ratios.empty()) {
    attrs->Fail("ratios", "is empty: needs at least one ratio");
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  p.threshold = static_cast<float>(threshold);
  for (const double s : scales) p.scales.push_back(static_cast<float>(s));
  for (const double r : ratios) p.ratios.push_back(static_cast<float>(r));
  out->reset(new Proposal(p));
  return Status();
}

Status CreateProposal(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  return CreateProposalOp(attrs, false, out);
}

Status CreateMultiProposal(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  return CreateProposalOp(attrs, true, out);
}

}  // namespace proposal_op
}  // namespace mxlite
