/*
 * winograd1d_test: Winograd convolution along one axis (kernels/
 * winograd1d.cc) against a naive double-precision direct convolution:
 * the 1x7, 7x1, 5x5 and 3x3 layers Winograd1dPays takes and, through the same
 * plan, other row counts (2 to 7: every A^T and G) and widths (shifted
 * views of 1 to 4 columns); outputs 1 to 19 down the kernel's axis (partial
 * last tiles), 1 to 19 across (lane groups over 1 to 16 tile rows: one or
 * two contiguous runs, or gathers), paddings 0 to the kernel's extent - 1,
 * channel counts that are not multiples of anything, a workspace filled with
 * NaN, with bias, residual and clamp, and with the bias alone, on one
 * thread and on two.
 * Without AVX-512 (MXLITE_ISA or the processor) it checks that
 * Winograd1dPays says no, since no layer can reach the kernel there.
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "../../predict/c_api/environment.h"
#include "../../predict/kernels/cpu_features.h"
#include "../../predict/kernels/winograd1d.h"
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
  const bool available = Winograd1dPays(1, 7, 1, 1, 1, 1, 1, 64, 64, 28, 28, 2);
  // DenseNet's 3x3 layers (128 -> 32): 56x56 on two threads, 28x28 on
  // one; not on AMD.
  const bool takes_3x3 = Winograd1dPays(3, 3, 1, 1, 1, 1, 1, 128, 32, 56, 56, 2) &&
                         Winograd1dPays(3, 3, 1, 1, 1, 1, 1, 128, 32, 28, 28, 1);
  const bool amd = GetCpuFeatures().vendor == CpuVendor::kAmd;
  checks += 2;
  if (available != (SelectedIsa() == Isa::kAvx512) || takes_3x3 != (available && !amd)) {
    ++failures;
    std::printf("FAIL: Winograd1dPays is %d (1x7), %d (3x3) with ISA %s\n", available,
                takes_3x3, IsaName(SelectedIsa()));
  }
  // What it must refuse: other kernels, strides, dilations, groups, too
  // few channels or filters; 3x3 layers of more than 32 filters, on
  // outputs below 28x28 or above 56x56 / 2 a thread.
  const bool refused[] = {Winograd1dPays(1, 3, 1, 1, 1, 1, 1, 64, 64, 28, 28, 2),
                          Winograd1dPays(3, 3, 1, 1, 1, 1, 1, 64, 64, 28, 28, 2),
                          Winograd1dPays(5, 5, 2, 2, 1, 1, 1, 64, 64, 28, 28, 2),
                          Winograd1dPays(7, 7, 1, 1, 1, 1, 1, 64, 64, 28, 28, 2),
                          Winograd1dPays(1, 7, 1, 2, 1, 1, 1, 64, 64, 28, 28, 2),
                          Winograd1dPays(7, 1, 1, 1, 2, 1, 1, 64, 64, 28, 28, 2),
                          Winograd1dPays(1, 7, 1, 1, 1, 1, 2, 64, 64, 28, 28, 2),
                          Winograd1dPays(7, 1, 1, 1, 1, 1, 1, 16, 64, 28, 28, 2),
                          Winograd1dPays(1, 7, 1, 1, 1, 1, 1, 64, 16, 28, 28, 2),
                          Winograd1dPays(3, 3, 1, 1, 1, 1, 1, 128, 32, 14, 14, 2),
                          Winograd1dPays(3, 3, 1, 1, 1, 1, 1, 128, 32, 56, 56, 1)};
  for (bool applies : refused) {
    ++checks;
    if (applies) {
      ++failures;
      std::printf("FAIL: Winograd1dPays accepted a layer it cannot take\n");
    }
  }
  if (!available) {
    std::printf("no AVX-512: the kernel is unreachable; %d checks, %d failures\n", checks,
                failures);
    return failures == 0 ? 0 : 1;
  }
  TestRandom next(1977u);
  ThreadPool pool(2);
  // (kernel_h, kernel_w): the layers it takes, other row counts and widths
  // (every A^T and G row count, shifted views of 2 to 4 columns), and the
  // 3x3 layers it takes (last, so the cases before keep their inputs).
  const int64_t kernels[][2] = {{1, 7}, {7, 1}, {5, 5}, {3, 1}, {1, 5}, {5, 3},
                                {7, 2}, {2, 1}, {1, 2}, {6, 4}, {4, 1}, {3, 3}};
  const int64_t channel_cases[][2] = {{1, 1}, {5, 3}, {37, 40}};
  int case_number = 0;
  for (const auto& kernel : kernels) {
    const int64_t kh = kernel[0], kw = kernel[1];
    const bool main_case = (kh == 1 && kw == 7) || (kh == 7 && kw == 1) || (kh == 5 && kw == 5) ||
                           (kh == 3 && kw == 3);
    for (const auto& cf : channel_cases) {
      for (int64_t pad = 0; pad < std::max(kh, kw); ++pad) {
        for (int64_t out_h = 1; out_h <= 19; out_h += (main_case ? 1 : 3)) {
          ++case_number;
          Winograd1dGeometry g;
          g.channels = cf[0];
          g.filters = cf[1];
          g.kernel_h = kh;
          g.kernel_w = kw;
          // Pads up to the kernel's extent on its long axis, 0 or 1 on the
          // other; widths 1..19, so lane groups span 1 to 16 tile rows.
          g.pad_h = std::min(pad, kh - 1 + (kh == 1 ? case_number % 2 : 0));
          g.pad_w = std::min(pad, kw - 1 + (kw == 1 ? case_number % 2 : 0));
          g.out_h = out_h;
          g.out_w = 1 + (case_number * 7) % 19;
          g.in_h = g.out_h + kh - 1 - 2 * g.pad_h;
          g.in_w = g.out_w + kw - 1 - 2 * g.pad_w;
          if (g.in_h < 1 || g.in_w < 1) continue;
          std::vector<float> w(g.filters * g.channels * kh * kw),
              in(g.channels * g.in_h * g.in_w), bias(g.filters),
              residual(g.filters * g.out_h * g.out_w), out(residual.size(), NAN);
          for (float& v : w) v = next();
          for (float& v : in) v = next();
          for (float& v : bias) v = next();
          for (float& v : residual) v = next();
          Winograd1dPlan plan;
          if (!plan.Prepare(g, w.data()).ok()) {
            ++failures;
            std::printf("FAIL: Prepare %lldx%lld\n", (long long)kh, (long long)kw);
            continue;
          }
          // NaN-filled: a read outside what the transforms write shows.
          std::vector<float> workspace(g.WorkspaceBytes() / sizeof(float), NAN);
          // Every third case runs without residual and without clamp.
          const bool plain = case_number % 3 == 1;
          if (plain) std::fill(residual.begin(), residual.end(), 0.f);
          const float lower = plain ? -INFINITY : -2.f, upper = plain ? INFINITY : 2.f;
          plan.Convolve(in.data(), bias.data(), plain ? nullptr : residual.data(), lower, upper,
                        out.data(), workspace.data(), case_number % 2 == 0 ? &pool : nullptr);
          ++checks;
          const double worst = WorstConvError({g.channels, g.filters, g.in_h, g.in_w, g.out_h,
                                               g.out_w, g.pad_h, g.pad_w, kh, kw},
                                              w, in, bias, residual, lower, upper, out);
          // Inputs, weights, bias and residual in [-1, 1): errors scale with
          // the terms summed, the bias and the residual among them (a 2-tap,
          // 1-channel output reaches 4 in magnitude, where a rounding is
          // 2.4e-7; the products alone would allow two roundings there).
          const int64_t terms = g.channels * kh * kw + 1 + (plain ? 0 : 1);
          if (!(worst <= 4e-7 * terms)) {
            ++failures;
            std::printf("FAIL %lldx%lld C=%lld F=%lld pad=%lld,%lld out=%lldx%lld: "
                        "max error %g\n",
                        (long long)kh, (long long)kw, (long long)g.channels,
                        (long long)g.filters, (long long)g.pad_h, (long long)g.pad_w,
                        (long long)g.out_h, (long long)g.out_w, worst);
          }
        }
      }
    }
  }
  std::printf("%d checks, %d failures\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
