#!/usr/bin/env bash
# Builds MXLite.xcframework on a Mac with Xcode: the amalgamated core and the
# Objective-C wrapper as static libraries for iOS devices (arm64) and the
# iOS simulator (arm64 + x86_64), with the headers and a module map so that
# Swift can `import MXLite`.
#
#   mobile/ios/build_ios.sh [OUT]        default OUT: build/ios
#
# IOS_MIN (default 12.0) sets the deployment target. Nothing but Xcode's own
# tools is used: xcrun clang/clang++, libtool, lipo, xcodebuild.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/ios}"
min="${IOS_MIN:-12.0}"

command -v xcrun >/dev/null || { echo "build_ios.sh: needs macOS with Xcode (xcrun)" >&2; exit 1; }
mkdir -p "$out"
out="$(cd "$out" && pwd)"
python3 "$root/amalgamation/amalgamate.py" --out-dir "$out/amalgamation" >/dev/null

headers="$out/headers"
rm -rf "$headers" && mkdir -p "$headers"
cp "$out/amalgamation/c_predict_api.h" "$out/amalgamation/mxlite.h" "$here/MXLitePredictor.h" \
  "$headers/"
cp "$here/module.modulemap" "$headers/"

build_slice() {  # sdk arch target-triple -> $out/<sdk>-<arch>/libmxlite.a
  local sdk="$1" arch="$2" triple="$3" dir="$out/$1-$2"
  mkdir -p "$dir"
  xcrun -sdk "$sdk" clang++ -target "$triple" -std=c++17 -O2 -fvisibility=hidden \
    -c "$out/amalgamation/mxlite-all.cc" -o "$dir/mxlite-all.o"
  xcrun -sdk "$sdk" clang -target "$triple" -fobjc-arc -O2 -I "$headers" -I "$here/../common" \
    -c "$here/MXLitePredictor.m" -o "$dir/MXLitePredictor.o"
  xcrun libtool -static -o "$dir/libmxlite.a" "$dir/mxlite-all.o" "$dir/MXLitePredictor.o"
}

build_slice iphoneos arm64 "arm64-apple-ios$min"
build_slice iphonesimulator arm64 "arm64-apple-ios$min-simulator"
build_slice iphonesimulator x86_64 "x86_64-apple-ios$min-simulator"

mkdir -p "$out/iphonesimulator"
xcrun lipo -create "$out/iphonesimulator-arm64/libmxlite.a" \
  "$out/iphonesimulator-x86_64/libmxlite.a" -output "$out/iphonesimulator/libmxlite.a"

rm -rf "$out/MXLite.xcframework"
xcodebuild -create-xcframework \
  -library "$out/iphoneos-arm64/libmxlite.a" -headers "$headers" \
  -library "$out/iphonesimulator/libmxlite.a" -headers "$headers" \
  -output "$out/MXLite.xcframework"
echo "build_ios.sh: $out/MXLite.xcframework (link it with -lc++ and Foundation)"
