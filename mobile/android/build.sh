#!/usr/bin/env bash
# Builds mxlite for Android: libmxlite_jni.so for arm64-v8a and armeabi-v7a
# (the amalgamated core + the JNI layer) and mxlite.jar (org.mxlite).
#
#   mobile/android/build.sh [OUT]            default OUT: build/android
#
# With ANDROID_NDK set, each ABI is built by the NDK's own CMake toolchain
# file (API level ANDROID_PLATFORM, default android-21). Without it, the same
# CMakeLists.txt builds the same sources with Debian's cross compilers
# (g++-aarch64-linux-gnu, g++-arm-linux-gnueabihf) through the toolchain
# files in cmake/, which proves they compile for both ARM ABIs; those
# libraries link against glibc, so ship the NDK ones in an app.
#
#   mobile/android/build.sh --host OUT       libmxlite_jni.so for this
#                                            machine, for tests on the JVM
#
# Output: OUT/<abi>/libmxlite_jni.so (copy to app/src/main/jniLibs/<abi>/)
# and OUT/mxlite.jar (Java 8 bytecode, for app/libs/).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

host_only=""
if [ "${1:-}" = "--host" ]; then
  host_only=yes
  shift
fi
out="$(mkdir -p "${1:-$root/build/android}" && cd "${1:-$root/build/android}" && pwd)"
amalgamation="$out/amalgamation"

python3 "$root/amalgamation/amalgamate.py" --out-dir "$amalgamation" >/dev/null

jdk_home() {
  local javac
  javac="$(command -v javac)" || {
    echo "build.sh: javac not found: apt-get install default-jdk-headless" >&2
    exit 1
  }
  dirname "$(dirname "$(readlink -f "$javac")")"
}

configure_and_build() {  # build_dir, then extra cmake arguments
  local build_dir="$1"
  shift
  cmake -S "$here" -B "$build_dir" -DMXLITE_AMALGAMATION_DIR="$amalgamation" "$@" >/dev/null
  cmake --build "$build_dir" >/dev/null
}

if [ -n "$host_only" ]; then
  jdk="$(jdk_home)"
  configure_and_build "$out/cmake-host" -DJNI_INCLUDE_DIRS="$jdk/include;$jdk/include/linux"
  mkdir -p "$out/host"
  cp "$out/cmake-host/libmxlite_jni.so" "$out/host/"
  echo "build.sh: $out/host/libmxlite_jni.so"
else
  for abi in arm64-v8a armeabi-v7a; do
    if [ -n "${ANDROID_NDK:-}" ]; then
      configure_and_build "$out/cmake-$abi" \
        -DCMAKE_TOOLCHAIN_FILE="$ANDROID_NDK/build/cmake/android.toolchain.cmake" \
        -DANDROID_ABI="$abi" -DANDROID_PLATFORM="${ANDROID_PLATFORM:-android-21}"
    else
      case "$abi" in
        arm64-v8a) triple=aarch64-linux-gnu ;;
        armeabi-v7a) triple=arm-linux-gnueabihf ;;
      esac
      command -v "$triple-g++" >/dev/null || {
        echo "build.sh: set ANDROID_NDK, or apt-get install g++-$triple" >&2
        exit 1
      }
      jdk="$(jdk_home)"
      configure_and_build "$out/cmake-$abi" \
        -DCMAKE_TOOLCHAIN_FILE="$here/cmake/$triple.cmake" \
        -DJNI_INCLUDE_DIRS="$jdk/include;$jdk/include/linux"
    fi
    mkdir -p "$out/$abi"
    cp "$out/cmake-$abi/libmxlite_jni.so" "$out/$abi/"
    echo "build.sh: $out/$abi/libmxlite_jni.so"
  done
fi

# The Java classes, as Java 8 bytecode so that every Android toolchain
# accepts them.
classes="$out/classes"
rm -rf "$classes" && mkdir -p "$classes"
javac -Xlint:-options --release 8 -d "$classes" "$here"/java/org/mxlite/*.java
jar cf "$out/mxlite.jar" -C "$classes" .
echo "build.sh: $out/mxlite.jar"
