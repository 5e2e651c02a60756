#!/usr/bin/env bash
# Fills build/gpu_carry with what scripts/gpu/gpu_check.sh reads from the
# zoo fixtures (build/fixtures/zoo, made by scripts/make_fixtures.py zoo):
# every symbol file and the manifest, plus params and MXNet's outputs of the
# models small enough to send to a GPU machine (its working tree is limited
# to 64 MiB): squeezenet1.1, mobilenetv2_1.0, mobilenet1.0.
set -eu
zoo=${1:-build/fixtures/zoo}
carry=build/gpu_carry
rm -rf "$carry"
mkdir -p "$carry"
cp "$zoo"/manifest.json "$zoo"/*-symbol.json "$carry"/
for model in squeezenet1.1 mobilenetv2_1.0 mobilenet1.0; do
  cp "$zoo/$model-0000.params" "$zoo/$model-io.npz" "$carry"/
done
du -sh "$carry"
