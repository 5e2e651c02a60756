# Toolchain file: Debian's 32-bit ARM cross compiler (g++-arm-linux-gnueabihf)
# set to what Android's armeabi-v7a ABI guarantees: ARMv7-A with NEON. Used
# when no NDK is at hand to prove that the sources build for it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR armv7-a)
set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_CXX_COMPILER arm-linux-gnueabihf-g++)
set(CMAKE_C_FLAGS_INIT "-march=armv7-a -mfpu=neon")
set(CMAKE_CXX_FLAGS_INIT "-march=armv7-a -mfpu=neon")
set(CMAKE_FIND_ROOT_PATH /usr/arm-linux-gnueabihf)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
