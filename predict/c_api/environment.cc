#include "environment.h"

#include <cstdlib>
#include <string>

namespace mxlite {

Status OptionsFromEnvironment(RuntimeOptions* options) {
  *options = RuntimeOptions();
  for (int i = 0; i < kRuntimeOptionCount; ++i) {
    const RuntimeOptionInfo& info = kRuntimeOptionList[i];
    const char* value = std::getenv(info.environment);
    if (value == nullptr || *value == '\0') continue;
    Status status = SetRuntimeOption(options, info.name, value);
    if (!status.ok()) {
      return Status::Error(StrCat("environment variable ", info.environment, ": ",
                                  status.message()));
    }
  }
  return Status();
}

namespace environment_cc {

Status ReadProcessEnvironment() {
  ProcessOptions options;
  if (const char* isa = std::getenv("MXLITE_ISA")) options.isa = isa;
  if (const char* engine = std::getenv("MXLITE_ENGINE")) options.engine = engine;
  if (const char* threads = std::getenv("MXLITE_ENGINE_THREADS")) {
    if (*threads != '\0') {
      char* end = nullptr;
      const long value = std::strtol(threads, &end, 10);
      MXL_CHECK(*end == '\0' && value >= 1 && value <= 4096,
                "MXLITE_ENGINE_THREADS must be a whole number from 1 to 4096, not '", threads,
                "'");
      options.engine_threads = static_cast<int>(value);
    }
  }
  if (const char* huge = std::getenv("MXLITE_HUGE_PAGES")) {
    const std::string value = huge;
    MXL_CHECK(value.empty() || ParseSwitch(value, &options.huge_pages),
              "MXLITE_HUGE_PAGES must be 1/true/on or 0/false/off, not '", value, "'");
  }
  if (const char* wide = std::getenv("MXLITE_GEMM_WIDE_TILES")) {
    const std::string value = wide;
    bool on = false;
    if (!value.empty() && value != "auto") {
      MXL_CHECK(ParseSwitch(value, &on),
                "MXLITE_GEMM_WIDE_TILES must be auto, 1/true/on or 0/false/off, not '", value,
                "'");
      options.gemm_wide_tiles = on ? 1 : 0;
    }
  }
  RuntimeOptions predictor_options;
  if (OptionsFromEnvironment(&predictor_options).ok()) {
    options.nd_threads = predictor_options.threads;
  }
  return SetProcessOptions(options);
}

}  // namespace environment_cc

Status ApplyProcessEnvironment() {
  static const Status result = environment_cc::ReadProcessEnvironment();
  return result;
}

}  // namespace mxlite
