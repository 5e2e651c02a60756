/*
 * engine_test: the dependency engine's contract (predict/engine/engine.h),
 * checked on the naive engine, the threaded engine with one worker and the
 * threaded engine with many workers.
 *
 * Operations sleep for pseudo-random short times so that a missing
 * dependency shows up as a wrong value, and each one checks on entry that
 * no operation it conflicts with is running (readers and writers of one
 * variable are counted). A random program of reads and writes must end with
 * the values a plain sequential run computes. Failures must surface at the
 * next wait, once per variable and once overall.
 *
 *   engine_test [--repeat N] [--threads T]   run everything N times (3, 16)
 *   engine_test --global                     print the engine GetEngine()
 *                                            chose (MXLITE_ENGINE), or its error
 *
 * Prints "<checks> checks, <failures> failures" last.
 */
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef MXLITE_NO_THREADS
#include <mutex>
#include <thread>
#endif  // !MXLITE_NO_THREADS

#include "../../predict/c_api/environment.h"
#include "../../predict/engine/engine.h"

namespace engine_test {

using namespace mxlite;

std::atomic<int> g_checks{0};
std::atomic<int> g_failures{0};

void Expect(bool ok, const std::string& what) {
  ++g_checks;
  if (!ok) {
    ++g_failures;
    std::printf("FAIL: %s\n", what.c_str());
    std::fflush(stdout);
  }
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A pseudo-random pause of up to max_us microseconds, different per id.
void Nap(uint64_t id, int max_us) {
  uint64_t x = id * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  const int us = static_cast<int>(x % static_cast<uint64_t>(max_us + 1));
#ifndef MXLITE_NO_THREADS
  std::this_thread::sleep_for(std::chrono::microseconds(us));
#else
  (void)us;
#endif  // !MXLITE_NO_THREADS
}

uint64_t Mix(uint64_t a, uint64_t b) {
  uint64_t x = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

// How many operations of one kind run at once, and the most ever.
struct Concurrency {
  std::atomic<int> running{0};
  std::atomic<int> peak{0};
  void Enter() {
    int now = ++running;
    int seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {
    }
  }
  void Leave() { --running; }
};

// Who is touching one variable's data right now: an operation reading it
// must see no writer, and one writing it must see nobody.
struct Activity {
  std::atomic<int> readers{0};
  std::atomic<int> writers{0};
  std::atomic<int> violations{0};
  void BeginRead() {
    ++readers;
    if (writers.load() != 0) ++violations;
  }
  void EndRead() { --readers; }
  void BeginWrite() {
    if (++writers != 1 || readers.load() != 0) ++violations;
  }
  void EndWrite() { --writers; }
};

struct Setup {
  const char* label;
  std::unique_ptr<Engine> engine;
  int workers;  // 0 for the naive engine
};

std::string Where(const Setup& setup, const char* test) {
  return StrCat(setup.label, ": ", test);
}

// Read after write and write after write: a chain of slow read-modify-write
// operations on one variable, each seeing exactly the previous one's value.
void TestWriteChain(Setup& setup) {
  Engine& engine = *setup.engine;
  VarHandle var = engine.NewVariable();
  auto value = std::make_shared<int>(0);
  auto wrong = std::make_shared<std::atomic<int>>(0);
  auto activity = std::make_shared<Activity>();
  const int kOps = 150;
  for (int i = 0; i < kOps; ++i) {
    engine.Push(
        [=] {
          activity->BeginWrite();
          const int seen = *value;
          Nap(static_cast<uint64_t>(i), 150);
          if (seen != i) ++*wrong;
          *value = seen + 1;
          activity->EndWrite();
          return Status();
        },
        {}, {var});
  }
  Status status = engine.WaitForVar(var);
  Expect(status.ok(), Where(setup, "write chain: wait ") + status.message());
  Expect(*value == kOps, Where(setup, "write chain: final value ") + std::to_string(*value));
  Expect(*wrong == 0, Where(setup, "write chain: operations saw a stale value"));
  Expect(activity->violations == 0, Where(setup, "write chain: two writers overlapped"));
  Expect(var->version() == static_cast<uint64_t>(kOps),
         Where(setup, "write chain: version ") + std::to_string(var->version()));
}

// Epochs of one write followed by several slow reads: every read sees its
// epoch's value (read after write) and the next write waits for all of them
// (write after read); reads of one epoch overlap on a threaded engine.
void TestReadersBetweenWrites(Setup& setup) {
  Engine& engine = *setup.engine;
  VarHandle var = engine.NewVariable();
  auto value = std::make_shared<int>(-1);
  auto wrong = std::make_shared<std::atomic<int>>(0);
  auto activity = std::make_shared<Activity>();
  auto readers = std::make_shared<Concurrency>();
  const int kEpochs = 12, kReaders = 8;
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    engine.Push(
        [=] {
          activity->BeginWrite();
          Nap(static_cast<uint64_t>(epoch) * 7, 300);
          *value = epoch;
          activity->EndWrite();
          return Status();
        },
        {}, {var});
    for (int r = 0; r < kReaders; ++r) {
      engine.Push(
          [=] {
            activity->BeginRead();
            readers->Enter();
            Nap(static_cast<uint64_t>(epoch * kReaders + r), 2000);
            if (*value != epoch) ++*wrong;
            readers->Leave();
            activity->EndRead();
            return Status();
          },
          {var}, {});
    }
  }
  Status status = engine.WaitForAll();
  Expect(status.ok(), Where(setup, "readers between writes: wait ") + status.message());
  Expect(*wrong == 0, Where(setup, "readers between writes: a read saw another epoch's value"));
  Expect(activity->violations == 0,
         Where(setup, "readers between writes: a read overlapped a write"));
  if (setup.workers >= 2) {
    Expect(readers->peak >= 2, Where(setup, "readers between writes: reads never overlapped"));
  }
  if (setup.workers == 0 || setup.workers == 1) {
    Expect(readers->peak == 1, Where(setup, "readers between writes: one thread overlapped"));
  }
}

// Operations on different variables run in parallel (threaded engine).
void TestIndependentParallel(Setup& setup) {
  Engine& engine = *setup.engine;
  auto running = std::make_shared<Concurrency>();
  std::vector<VarHandle> vars;
  for (int i = 0; i < 8; ++i) {
    vars.push_back(engine.NewVariable());
    engine.Push(
        [=] {
          running->Enter();
          Nap(0, 0);
#ifndef MXLITE_NO_THREADS
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
#endif  // !MXLITE_NO_THREADS
          running->Leave();
          return Status();
        },
        {}, {vars.back()});
  }
  Expect(engine.WaitForAll().ok(), Where(setup, "independent: wait"));
  if (setup.workers >= 2) {
    Expect(running->peak >= 2, Where(setup, "independent: operations on different variables "
                                            "never ran at the same time"));
  }
}

// Push returns before a slow operation finishes (threaded engine).
void TestPushReturnsAtOnce(Setup& setup) {
#ifndef MXLITE_NO_THREADS
  if (setup.workers == 0) return;
  Engine& engine = *setup.engine;
  VarHandle var = engine.NewVariable();
  auto done = std::make_shared<std::atomic<bool>>(false);
  const auto start = std::chrono::steady_clock::now();
  engine.Push(
      [=] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        *done = true;
        return Status();
      },
      {}, {var});
  const double push_ms = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - start).count();
  Expect(push_ms < 150, Where(setup, "push returns at once: took ") + std::to_string(push_ms));
  Expect(engine.WaitForVar(var).ok() && *done, Where(setup, "push returns at once: wait"));
#else
  (void)setup;
#endif  // !MXLITE_NO_THREADS
}

// A random program of reads and writes over a few variables ends with the
// values a plain sequential run computes, and no conflicting operations
// ever overlap.
void TestRandomProgram(Setup& setup, uint64_t seed) {
  Engine& engine = *setup.engine;
  const int kVars = 10, kOps = 500;
  std::vector<VarHandle> vars;
  auto values = std::make_shared<std::vector<uint64_t>>(kVars, 0);
  auto activity = std::make_shared<std::vector<Activity>>(kVars);
  std::vector<uint64_t> expected(kVars, 0);
  std::vector<uint64_t> writes(kVars, 0);
  for (int v = 0; v < kVars; ++v) vars.push_back(engine.NewVariable());
  uint64_t rng = seed;
  auto next = [&rng](int bound) {
    rng = Mix(rng, 0x1234567);
    return static_cast<int>(rng % static_cast<uint64_t>(bound));
  };
  for (int op = 0; op < kOps; ++op) {
    std::vector<int> reads, writes_of_op;
    const int read_count = next(4), write_count = 1 + next(2);
    for (int i = 0; i < read_count; ++i) reads.push_back(next(kVars));
    for (int i = 0; i < write_count; ++i) writes_of_op.push_back(next(kVars));
    // The engine's rules: duplicates count once, read-and-written is written.
    std::vector<int> read_set, write_set;
    for (int w : writes_of_op) {
      bool seen = false;
      for (int x : write_set) seen |= x == w;
      if (!seen) write_set.push_back(w);
    }
    for (int r : reads) {
      bool seen = false;
      for (int x : write_set) seen |= x == r;
      for (int x : read_set) seen |= x == r;
      if (!seen) read_set.push_back(r);
    }
    // Sequential reference.
    uint64_t hash = static_cast<uint64_t>(op);
    for (int r : read_set) hash = Mix(hash, expected[r]);
    for (int w : write_set) hash = Mix(hash, expected[w]);
    for (int w : write_set) {
      expected[w] = Mix(hash, static_cast<uint64_t>(w));
      ++writes[w];
    }
    std::vector<VarHandle> const_vars, mutable_vars;
    for (int r : reads) const_vars.push_back(vars[r]);
    for (int w : writes_of_op) mutable_vars.push_back(vars[w]);
    const int nap = op % 4 == 0 ? 200 : 0;
    engine.Push(
        [=] {
          for (int r : read_set) (*activity)[r].BeginRead();
          for (int w : write_set) (*activity)[w].BeginWrite();
          uint64_t h = static_cast<uint64_t>(op);
          for (int r : read_set) h = Mix(h, (*values)[r]);
          for (int w : write_set) h = Mix(h, (*values)[w]);
          if (nap > 0) Nap(static_cast<uint64_t>(op) ^ seed, nap);
          for (int w : write_set) (*values)[w] = Mix(h, static_cast<uint64_t>(w));
          for (int w : write_set) (*activity)[w].EndWrite();
          for (int r : read_set) (*activity)[r].EndRead();
          return Status();
        },
        const_vars, mutable_vars);
  }
  Status status = engine.WaitForAll();
  Expect(status.ok(), Where(setup, "random program: wait ") + status.message());
  for (int v = 0; v < kVars; ++v) {
    Expect((*values)[v] == expected[v],
           Where(setup, "random program: variable ") + std::to_string(v) +
               " differs from the sequential run (seed " + std::to_string(seed) + ")");
    Expect((*activity)[v].violations == 0,
           Where(setup, "random program: conflicting operations overlapped on variable ") +
               std::to_string(v));
    Expect(vars[v]->version() == writes[v], Where(setup, "random program: version of ") +
                                                std::to_string(v));
  }
}

// Several threads push increments of one shared variable at once; none is
// lost, because writes of one variable never overlap.
void TestConcurrentPushers(Setup& setup) {
#ifndef MXLITE_NO_THREADS
  Engine& engine = *setup.engine;
  VarHandle shared = engine.NewVariable();
  auto counter = std::make_shared<int>(0);
  const int kThreads = 4, kEach = 200;
  std::vector<std::thread> pushers;
  for (int t = 0; t < kThreads; ++t) {
    pushers.emplace_back([&engine, shared, counter, t] {
      VarHandle own = engine.NewVariable();
      for (int i = 0; i < kEach; ++i) {
        engine.Push(
            [=] {
              const int seen = *counter;
              Nap(static_cast<uint64_t>(t * kEach + i), i % 16 == 0 ? 50 : 0);
              *counter = seen + 1;
              return Status();
            },
            {own}, {shared});
      }
    });
  }
  for (std::thread& pusher : pushers) pusher.join();
  Expect(engine.WaitForVar(shared).ok(), Where(setup, "concurrent pushers: wait"));
  Expect(*counter == kThreads * kEach,
         Where(setup, "concurrent pushers: lost increments, counter ") + std::to_string(*counter));
#else
  (void)setup;
#endif  // !MXLITE_NO_THREADS
}

// WaitToWrite also waits for earlier readers; WaitForVar for earlier writers.
void TestWaits(Setup& setup) {
  Engine& engine = *setup.engine;
  VarHandle var = engine.NewVariable();
  auto read_done = std::make_shared<std::atomic<bool>>(false);
  auto written = std::make_shared<std::atomic<int>>(0);
  engine.Push(
      [=] {
        Nap(1, 3000);
        *written = 7;
        return Status();
      },
      {}, {var});
  Expect(engine.WaitForVar(var).ok() && *written == 7,
         Where(setup, "WaitForVar returned before the write finished"));
  engine.Push(
      [=] {
#ifndef MXLITE_NO_THREADS
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
#endif  // !MXLITE_NO_THREADS
        *read_done = true;
        return Status();
      },
      {var}, {});
  Expect(engine.WaitToWrite(var).ok() && *read_done,
         Where(setup, "WaitToWrite returned before an earlier read finished"));
  Expect(var->version() == 1, Where(setup, "waits changed the version"));
}

// An operation may push more operations, but may not wait.
void TestInsideOperation(Setup& setup) {
  Engine& engine = *setup.engine;
  VarHandle outer = engine.NewVariable(), inner = engine.NewVariable();
  auto inner_value = std::make_shared<std::atomic<int>>(0);
  auto wait_var = std::make_shared<Status>();
  auto wait_all = std::make_shared<Status>();
  Engine* engine_ptr = &engine;
  engine.Push(
      [=] {
        *wait_var = engine_ptr->WaitForVar(inner);
        *wait_all = engine_ptr->WaitForAll();
        engine_ptr->Push(
            [=] {
              Nap(3, 2000);
              *inner_value = 5;
              return Status();
            },
            {}, {inner});
        return Status();
      },
      {}, {outer});
  Expect(engine.WaitForAll().ok(), Where(setup, "inside: wait"));
  Expect(*inner_value == 5, Where(setup, "inside: WaitForAll missed a nested push"));
  Expect(!wait_var->ok() && Contains(wait_var->message(), "inside an engine operation"),
         Where(setup, "inside: WaitForVar inside an operation was not refused: ") +
             wait_var->message());
  Expect(!wait_all->ok() && Contains(wait_all->message(), "inside an engine operation"),
         Where(setup, "inside: WaitForAll inside an operation was not refused"));
}

// Failures: recorded on the outputs, spread to dependants (which do not
// run), reported once per variable at its next wait, and once overall.
void TestFailures(Setup& setup) {
  Engine& engine = *setup.engine;
  VarHandle a = engine.NewVariable(), b = engine.NewVariable(), c = engine.NewVariable();
  auto dependant_ran = std::make_shared<std::atomic<bool>>(false);
  auto reader_ran = std::make_shared<std::atomic<bool>>(false);
  engine.Push(
      [] {
        Nap(5, 2000);
        return Status::Error("conv0 failed: boom");
      },
      {}, {a, b});
  engine.Push(
      [=] {
        *dependant_ran = true;
        return Status();
      },
      {a}, {c});
  engine.Push(
      [=] {
        *reader_ran = true;
        return Status();
      },
      {b}, {});
  Status on_c = engine.WaitForVar(c);
  Expect(!on_c.ok() && on_c.message() == "conv0 failed: boom",
         Where(setup, "failure: a dependant's output did not carry the failure: ") +
             on_c.message());
  Expect(!*dependant_ran, Where(setup, "failure: a dependant of a failed variable ran"));
  Status on_a = engine.WaitForVar(a);
  Expect(!on_a.ok() && on_a.message() == "conv0 failed: boom",
         Where(setup, "failure: the failing operation's output did not report it"));
  Expect(engine.WaitForVar(a).ok(), Where(setup, "failure: reported twice on the same variable"));
  Status on_b = engine.WaitToWrite(b);
  Expect(!on_b.ok(), Where(setup, "failure: the second output did not report it"));
  Expect(!*reader_ran, Where(setup, "failure: a reader of a failed variable ran"));
  Expect(engine.WaitForAll().ok(),
         Where(setup, "failure: WaitForAll repeated a failure a wait had reported"));

  // Unreported: WaitForAll reports it, once.
  VarHandle d = engine.NewVariable();
  engine.Push([] { return Status::Error("pool1 failed"); }, {}, {d});
  Status all = engine.WaitForAll();
  Expect(!all.ok() && all.message() == "pool1 failed",
         Where(setup, "failure: WaitForAll lost a failure: ") + all.message());
  Expect(engine.WaitForAll().ok(), Where(setup, "failure: WaitForAll reported a failure twice"));
  Expect(!engine.WaitForVar(d).ok(),
         Where(setup, "failure: the variable forgot its failure before a wait on it"));

  // Once reported, the variable is usable again.
  auto value = std::make_shared<int>(0);
  engine.Push(
      [=] {
        *value = 5;
        return Status();
      },
      {}, {a});
  Expect(engine.WaitForVar(a).ok() && *value == 5,
         Where(setup, "failure: a variable stayed broken after its failure was reported"));

#ifndef MXLITE_NO_EXCEPTIONS
  VarHandle e = engine.NewVariable();
  engine.Push([]() -> Status { throw std::runtime_error("thrown in fc1"); }, {}, {e});
  Status thrown = engine.WaitForVar(e);
  Expect(!thrown.ok() && Contains(thrown.message(), "thrown in fc1"),
         Where(setup, "failure: an exception was not turned into a failure: ") +
             thrown.message());
#endif  // !MXLITE_NO_EXCEPTIONS
  Expect(engine.WaitForAll().ok(), Where(setup, "failure: final wait"));
}

// Handles may be dropped right after pushing; the operation keeps its
// variables alive. A destroyed engine finishes its work first, failed or not.
void TestLifetime(Setup& setup, int threads) {
  auto ran = std::make_shared<std::atomic<int>>(0);
  {
    std::unique_ptr<Engine> engine =
        setup.workers == 0 ? NewNaiveEngine() : NewThreadedEngine(threads);
    for (int i = 0; i < 50; ++i) {
      VarHandle var = engine->NewVariable();
      engine->Push(
          [=] {
            Nap(static_cast<uint64_t>(i), 500);
            ++*ran;
            return i % 3 == 0 ? Status::Error("dropped failure") : Status();
          },
          {}, {var});
    }
  }
  Expect(*ran == 50, Where(setup, "lifetime: destroying the engine dropped operations"));
}

}  // namespace engine_test

int main(int argc, char** argv) {
  using namespace engine_test;
  int repeat = 3, threads = 16;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--global") {
      // This driver is the API boundary: it applies the environment.
      Engine* engine = nullptr;
      Status status = ApplyProcessEnvironment();
      if (status.ok()) status = GetEngine(&engine);
      if (!status.ok()) {
        std::printf("error: %s\n", status.message().c_str());
        return 1;
      }
      std::printf("engine: %s\n", engine->name());
      return 0;
    } else if (arg == "--repeat" && a + 1 < argc) {
      repeat = std::atoi(argv[++a]);
    } else if (arg == "--threads" && a + 1 < argc) {
      threads = std::atoi(argv[++a]);
    } else {
      std::fprintf(stderr, "usage: %s [--repeat N] [--threads T] | --global\n", argv[0]);
      return 2;
    }
  }
  for (int round = 0; round < repeat; ++round) {
    std::vector<Setup> setups;
    setups.push_back({"naive", NewNaiveEngine(), 0});
#ifndef MXLITE_NO_THREADS
    setups.push_back({"threaded x1", NewThreadedEngine(1), 1});
    setups.push_back({"threaded xN", NewThreadedEngine(threads), threads});
#endif  // !MXLITE_NO_THREADS
    for (Setup& setup : setups) {
      TestWriteChain(setup);
      TestReadersBetweenWrites(setup);
      TestIndependentParallel(setup);
      TestPushReturnsAtOnce(setup);
      TestRandomProgram(setup, 1000 + static_cast<uint64_t>(round));
      TestRandomProgram(setup, 2000 + static_cast<uint64_t>(round));
      TestConcurrentPushers(setup);
      TestWaits(setup);
      TestInsideOperation(setup);
      TestFailures(setup);
      TestLifetime(setup, threads);
    }
  }
  std::printf("%d checks, %d failures\n", g_checks.load(), g_failures.load());
  return g_failures.load() == 0 ? 0 : 1;
}
