# mxlite build. Everything is compiled from the one amalgamated file.
#
#   make amalgamation   build/mxlite-all.cc + build/c_predict_api.h + build/mxlite.h
#   make lib            build/libmxlite.so (one compiler command, printed)
#   make test           the whole test suite (sets up its own environments)
#   make cuda           build/libmxlite-cuda.so: the same file compiled by nvcc,
#                       with the CUDA backend (docs/cuda.md)
#   make wasm           build/wasm: the file for wasm32-wasi (object + API module)
#   make android        mobile/android/build.sh: the JNI library for arm64-v8a
#                       and armeabi-v7a (NDK when ANDROID_NDK is set, else
#                       Debian's cross compilers) plus the Java classes
#   make size-report    scripts/size_report.py: library sizes and compile times
#   make clean

CXX ?= c++
PYTHON ?= python3
BUILD := build
OPT ?= -O2
WARN := -Wall -Wextra
# Sections per function and --gc-sections drop code nothing reaches (about 7%).
LIB_FLAGS := -std=c++17 $(OPT) $(WARN) -fPIC -shared -fvisibility=hidden -ffunction-sections \
             -fdata-sections -Wl,--gc-sections
PREDICT_SOURCES := $(shell find predict -type f) amalgamation/sources.txt amalgamation/amalgamate.py

.PHONY: all amalgamation lib test demo clean

all: lib

amalgamation: $(BUILD)/mxlite-all.cc

$(BUILD)/mxlite-all.cc $(BUILD)/c_predict_api.h $(BUILD)/mxlite.h: $(PREDICT_SOURCES)
	$(PYTHON) amalgamation/amalgamate.py --out-dir $(BUILD)

lib: $(BUILD)/libmxlite.so

$(BUILD)/libmxlite.so: $(BUILD)/mxlite-all.cc
	$(CXX) $(LIB_FLAGS) $(BUILD)/mxlite-all.cc -o $@ -lpthread

test:
	bash scripts/run_tests.sh

# The CUDA build: the one file compiled by nvcc as CUDA C++ (the CUDA parts
# sit under #ifndef MXLITE_NO_CUDA, which nvcc leaves off). PTX for Turing,
# the oldest GPU CUDA 13 supports, runs on every later GPU; Hopper also gets
# machine code. cudafe++ (nvcc's front end) does not know GCC's loop pragmas
# (1675) and misreads loops in some template instantiations as unreachable
# (128); the host compiler checks that code with -Wall -Wextra.
NVCC ?= nvcc
CUDA_ARCH ?= -gencode arch=compute_75,code=compute_75 -gencode arch=compute_90,code=sm_90
CUDA_LIBS ?= -lcublas -lcudart
CUDA_SUPPRESS := -Xcudafe --diag_suppress=1675,--diag_suppress=128
CUDA_FLAGS := -x cu -std=c++17 $(OPT) $(CUDA_ARCH) -shared -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra \
              $(CUDA_SUPPRESS)

.PHONY: cuda
cuda: $(BUILD)/libmxlite-cuda.so

$(BUILD)/libmxlite-cuda.so: $(BUILD)/mxlite-all.cc
	$(NVCC) $(CUDA_FLAGS) $(BUILD)/mxlite-all.cc -o $@ $(CUDA_LIBS) -lpthread -ldl

clean:
	rm -rf $(BUILD)

# WebAssembly (wasm32-wasi) with clang, lld and Debian's wasi-libc and
# libc++ for wasm32. wasm32-wasi has no threads and no C++ exception runtime
# (base/config.h picks the rest from the target). The module exports the C
# predict API plus malloc/free, for wasmtime or a browser (mobile/wasm/).
WASM_CXX ?= clang++
WASM_FLAGS := --target=wasm32-wasi -std=c++17 $(OPT) $(WARN) -fno-exceptions -msimd128
WASM_EXPORTS := MXGetLastError MXPredCreate MXPredCreateEx MXPredCreatePartialOut \
  MXPredCreateMultiThread MXPredReshape MXPredGetOutputShape MXPredGetOutputType \
  MXPredSetInput MXPredForward MXPredPartialForward MXPredGetOutput MXPredFree \
  MXNDListCreate MXNDListGet MXPredSetMonitorCallback MXNDListFree MXLitePredCreateWithOptions \
  malloc free

.PHONY: wasm android size-report

wasm: $(BUILD)/wasm/mxlite.o $(BUILD)/wasm/mxlite.wasm

$(BUILD)/wasm/mxlite.o: $(BUILD)/mxlite-all.cc
	@mkdir -p $(@D)
	$(WASM_CXX) $(WASM_FLAGS) -c $(BUILD)/mxlite-all.cc -o $@

$(BUILD)/wasm/mxlite.wasm: $(BUILD)/wasm/mxlite.o
	$(WASM_CXX) --target=wasm32-wasi -mexec-model=reactor -Wl,--strip-all \
	  $(addprefix -Wl$(comma)--export=,$(WASM_EXPORTS)) $(BUILD)/wasm/mxlite.o -o $@

comma := ,

android: $(BUILD)/mxlite-all.cc
	bash mobile/android/build.sh

size-report: $(BUILD)/mxlite-all.cc
	$(PYTHON) scripts/size_report.py --write BENCHMARKS.md
