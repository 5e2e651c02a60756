/*
 * Test values in [-1, 1) from a linear congruential generator: the same
 * sequence on every compiler and platform (the std:: distributions are
 * not), so a failing case reproduces anywhere. Shared by the kernel test
 * drivers; call it like a function.
 */
#ifndef MXLITE_TESTS_CPP_TEST_RANDOM_H_
#define MXLITE_TESTS_CPP_TEST_RANDOM_H_

class TestRandom {
 public:
  explicit TestRandom(unsigned seed) : state_(seed) {}

  float operator()() {
    state_ = state_ * 1664525u + 1013904223u;
    return static_cast<float>((state_ >> 8) & 0xffff) / 32768.f - 1.f;
  }

 private:
  unsigned state_;
};

#endif  // MXLITE_TESTS_CPP_TEST_RANDOM_H_
