# mxlite build. Everything is compiled from the one amalgamated file.
#
#   make amalgamation   build/mxlite-all.cc + build/c_predict_api.h
#   make lib            build/libmxlite.so (one compiler command, printed)
#   make test           the whole test suite (sets up its own environments)
#   make clean

CXX ?= c++
PYTHON ?= python3
BUILD := build
OPT ?= -O2
WARN := -Wall -Wextra
LIB_FLAGS := -std=c++17 $(OPT) $(WARN) -fPIC -shared -fvisibility=hidden
PREDICT_SOURCES := $(shell find predict -type f) amalgamation/sources.txt amalgamation/amalgamate.py

.PHONY: all amalgamation lib test demo clean

all: lib

amalgamation: $(BUILD)/mxlite-all.cc

$(BUILD)/mxlite-all.cc $(BUILD)/c_predict_api.h: $(PREDICT_SOURCES)
	$(PYTHON) amalgamation/amalgamate.py --out-dir $(BUILD)

lib: $(BUILD)/libmxlite.so

$(BUILD)/libmxlite.so: $(BUILD)/mxlite-all.cc
	$(CXX) $(LIB_FLAGS) $(BUILD)/mxlite-all.cc -o $@ -lpthread

test:
	bash scripts/run_tests.sh

clean:
	rm -rf $(BUILD)
