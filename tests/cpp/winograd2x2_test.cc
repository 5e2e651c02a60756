/*
 * winograd2x2_test: F(2x2, 3x3) convolution (kernels/winograd2x2.cc)
 * against a naive double-precision direct convolution: outputs 1..14 wide
 * (odd sizes leave half tiles on the right and bottom edges), non-square
 * planes, paddings 0..2, channel counts that are not multiples of anything,
 * 1 to 4 groups of tile rows (2 to 16 rows a group, the last one short), with bias,
 * residual and clamp, and with the bias alone, on one thread and on two.
 * The kernel is AVX-512 code: where MXLITE_ISA or the processor rules
 * AVX-512 out, the test checks that Winograd2x2Pays says no, since no
 * layer can reach the kernel there.
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "../../predict/c_api/environment.h"
#include "../../predict/kernels/cpu_features.h"
#include "../../predict/kernels/winograd2x2.h"
#include "conv_reference.h"
#include "test_random.h"

int main() {
  // This driver is the API boundary: the environment (MXLITE_ISA caps the
  // kernels' instruction set) applies here.
  {
    const mxlite::Status environment = mxlite::ApplyProcessEnvironment();
    if (!environment.ok()) {
      std::fprintf(stderr, "%s\n", environment.message().c_str());
      return 2;
    }
  }
  using namespace mxlite;
  int checks = 0, failures = 0;
  const bool available = Winograd2x2Pays(3, 3, 1, 1, 1, 1, 1, 128, 32, 14, 14);
  ++checks;
  if (available != (SelectedIsa() == Isa::kAvx512)) {
    ++failures;
    std::printf("FAIL: Winograd2x2Pays is %d with ISA %s\n", available,
                IsaName(SelectedIsa()));
  }
  // What it must refuse: F(4x4)'s sizes, strides, groups, too few channels.
  const bool refused[] = {Winograd2x2Pays(3, 3, 1, 1, 1, 1, 1, 64, 64, 15, 15),
                          Winograd2x2Pays(3, 3, 2, 2, 1, 1, 1, 64, 64, 7, 7),
                          Winograd2x2Pays(3, 3, 1, 1, 2, 2, 1, 64, 64, 7, 7),
                          Winograd2x2Pays(3, 3, 1, 1, 1, 1, 2, 64, 64, 7, 7),
                          Winograd2x2Pays(5, 5, 1, 1, 1, 1, 1, 64, 64, 7, 7),
                          Winograd2x2Pays(3, 3, 1, 1, 1, 1, 1, 64, 16, 7, 7)};
  for (bool applies : refused) {
    ++checks;
    if (applies) {
      ++failures;
      std::printf("FAIL: Winograd2x2Pays accepted a layer it cannot take\n");
    }
  }
  if (!available) {
    std::printf("no AVX-512: the kernel is unreachable; %d checks, %d failures\n", checks,
                failures);
    return failures == 0 ? 0 : 1;
  }
  TestRandom next(2024u);
  ThreadPool pool(2);
  // 72 -> 20 splits its depth on two threads (WinogradSplitsDepth).
  const int64_t channel_cases[][2] = {{1, 1}, {5, 3}, {37, 70}, {72, 20}};
  for (const auto& cf : channel_cases) {
    for (int64_t pad = 0; pad <= 2; ++pad) {
      for (int64_t out_size = 1; out_size <= 14; ++out_size) {
        Winograd2x2Geometry g;
        g.channels = cf[0];
        g.filters = cf[1];
        g.pad_h = g.pad_w = pad;
        g.out_h = out_size;
        g.out_w = out_size + (out_size % 3 == 0 ? 1 : 0);  // some planes not square
        g.in_h = g.out_h + 2 - 2 * pad;
        g.in_w = g.out_w + 2 - 2 * pad;
        if (g.in_h < 1 || g.in_w < 1) continue;
        std::vector<float> w(g.filters * g.channels * 9), in(g.channels * g.in_h * g.in_w),
            bias(g.filters), residual(g.filters * g.out_h * g.out_w), out(residual.size(), NAN);
        for (float& v : w) v = next();
        for (float& v : in) v = next();
        for (float& v : bias) v = next();
        for (float& v : residual) v = next();
        Winograd2x2Plan plan;
        if (!plan.Prepare(g, w.data()).ok()) {
          ++failures;
          std::printf("FAIL: Prepare\n");
          continue;
        }
        std::vector<float> workspace(g.WorkspaceBytes() / sizeof(float));
        // Every third size runs without residual and without clamp.
        const bool plain = out_size % 3 == 1;
        if (plain) std::fill(residual.begin(), residual.end(), 0.f);
        const float lower = plain ? -INFINITY : -2.f, upper = plain ? INFINITY : 2.f;
        plan.Convolve(1, in.data(), bias.data(), plain ? nullptr : residual.data(), lower, upper,
                      out.data(), workspace.data(), out_size % 2 == 0 ? &pool : nullptr);
        ++checks;
        const double worst = WorstConvError(
            {g.channels, g.filters, g.in_h, g.in_w, g.out_h, g.out_w, g.pad_h, g.pad_w}, w, in,
            bias, residual, lower, upper, out);
        // Inputs and weights in [-1, 1): errors scale with the channel count.
        if (!(worst <= 1e-5 * (g.channels * 9))) {
          ++failures;
          std::printf("FAIL C=%lld F=%lld pad=%lld out=%lldx%lld: max error %g\n",
                      (long long)g.channels, (long long)g.filters, (long long)pad,
                      (long long)g.out_h, (long long)g.out_w, worst);
        }
        if (out_size % 2 == 0 && g.SplitsDepth()) {
          // The two halves' sums add up to the one-thread result's bits.
          std::vector<float> one_thread(out.size(), NAN);
          plan.Convolve(1, in.data(), bias.data(), plain ? nullptr : residual.data(), lower,
                        upper, one_thread.data(), workspace.data(), nullptr);
          ++checks;
          if (std::memcmp(one_thread.data(), out.data(), out.size() * sizeof(float)) != 0) {
            ++failures;
            std::printf("FAIL C=%lld F=%lld pad=%lld out=%lldx%lld: two threads differ from one\n",
                        (long long)g.channels, (long long)g.filters, (long long)pad,
                        (long long)g.out_h, (long long)g.out_w);
          }
        }
        // Three images in one pass (their tiles side by side in the GEMMs'
        // columns) give each image's bits of a pass of its own.
        {
          const int64_t images = 3;
          const size_t in_size = in.size(), out_size_all = out.size();
          std::vector<float> batch_in(images * in_size), batch_res(images * out_size_all);
          std::vector<float> together(images * out_size_all, NAN), apart(together.size(), NAN);
          for (float& v : batch_in) v = next();
          for (float& v : batch_res) v = next();
          std::vector<float> batch_workspace(plan.WorkspaceBytes(images) / sizeof(float));
          ThreadPool* runs_on = out_size % 2 == 0 ? &pool : nullptr;
          plan.Convolve(images, batch_in.data(), bias.data(), plain ? nullptr : batch_res.data(),
                        lower, upper, together.data(), batch_workspace.data(), runs_on);
          for (int64_t n = 0; n < images; ++n) {
            plan.Convolve(1, batch_in.data() + n * in_size, bias.data(),
                          plain ? nullptr : batch_res.data() + n * out_size_all, lower, upper,
                          apart.data() + n * out_size_all, workspace.data(), runs_on);
          }
          ++checks;
          if (std::memcmp(together.data(), apart.data(), together.size() * sizeof(float)) != 0) {
            ++failures;
            std::printf("FAIL C=%lld F=%lld pad=%lld out=%lldx%lld: a pass of 3 images differs "
                        "from 3 passes\n",
                        (long long)g.channels, (long long)g.filters, (long long)pad,
                        (long long)g.out_h, (long long)g.out_w);
          }
        }
      }
    }
  }
  std::printf("%d checks, %d failures\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
