/*
 * Concurrency and churn driver for the C predict API (tests/test_tsan.py,
 * tests/test_churn.py).
 *
 *   stress_main threads SYMBOL PARAMS SHAPE HANDLES ITERATIONS
 *     HANDLES handles from MXPredCreateMultiThread, each driven by a thread
 *     of its own at the same time: set input, forward, get output, and an
 *     MXPredReshape of its handle (batch 1) run and freed, ITERATIONS times.
 *     Then one handle from MXPredCreate (threads in its operator pool as
 *     MXLITE_NUM_THREADS says) runs ITERATIONS forwards. Every output must
 *     match the one a lone handle computed first. Built with
 *     -fsanitize=thread, this is the data-race check.
 *
 *   stress_main churn|churn-reshape|churn-ndlist|churn-leak SYMBOL PARAMS SHAPE CYCLES
 *     CYCLES create/forward/free cycles in this one process (churn-reshape
 *     adds an MXPredReshape of each handle to batch 1 and a forward on it;
 *     churn-ndlist is MXNDListCreate, MXNDListGet of every array,
 *     MXNDListFree; churn-leak never frees its handles). Prints the resident set size, from /proc/self/statm,
 *     after the first 1000 cycles and at the end: "rss_kib A B".
 *
 * SHAPE is the input 'data''s shape, such as 2,3,13,13. Any failing call
 * prints MXGetLastError() and exits 1; a wrong output exits 2.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c_predict_api.h"

#define MAX_HANDLES 16
#define MAX_DIMS 8

static char *symbol_json;
static char *params;
static long params_size;
static mx_uint shape[MAX_DIMS], batch1_shape[MAX_DIMS];
static mx_uint ndim;
static size_t input_size;
static float *reference;    /* the lone handle's output */
static size_t output_size;  /* elements of output 0 */
static int iterations;

static void check(int rc, const char *what) {
  if (rc != 0) {
    fprintf(stderr, "%s failed (%d): %s\n", what, rc, MXGetLastError());
    exit(1);
  }
}

static char *read_file(const char *path, long *size) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  *size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *data = malloc((size_t)*size + 1);
  if (data == NULL || fread(data, 1, (size_t)*size, f) != (size_t)*size) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(1);
  }
  data[*size] = '\0';
  fclose(f);
  return data;
}

static void parse_shape(const char *text) {
  ndim = 0;
  input_size = 1;
  while (*text && ndim < MAX_DIMS) {
    char *end = NULL;
    shape[ndim] = (mx_uint)strtoul(text, &end, 10);
    batch1_shape[ndim] = ndim == 0 ? 1 : shape[ndim];
    input_size *= shape[ndim++];
    text = *end == ',' ? end + 1 : end;
    if (end == text && *end != '\0') break;
  }
}

/* The input: a fixed pattern, the same for every handle and call. */
static float *make_input(size_t size) {
  float *data = malloc(size * sizeof(float));
  for (size_t i = 0; i < size; ++i) data[i] = (float)((int)(i * 7919 % 211) - 105) / 53.0f;
  return data;
}

static PredictorHandle create(void) {
  const char *keys[1] = {"data"};
  const mx_uint indptr[2] = {0, ndim};
  PredictorHandle handle = NULL;
  check(MXPredCreate(symbol_json, params, (int)params_size, 1, 0, 1, keys, indptr, shape,
                     &handle),
        "MXPredCreate");
  return handle;
}

static PredictorHandle reshape_to_batch1(PredictorHandle handle) {
  const char *keys[1] = {"data"};
  const mx_uint indptr[2] = {0, ndim};
  PredictorHandle reshaped = NULL;
  check(MXPredReshape(1, keys, indptr, batch1_shape, handle, &reshaped), "MXPredReshape");
  return reshaped;
}

static size_t output_elements(PredictorHandle handle) {
  mx_uint *out_shape = NULL;
  mx_uint out_ndim = 0;
  check(MXPredGetOutputShape(handle, 0, &out_shape, &out_ndim), "MXPredGetOutputShape");
  size_t size = 1;
  for (mx_uint i = 0; i < out_ndim; ++i) size *= out_shape[i];
  return size;
}

/* Runs one forward pass on `handle` with `input` and returns output 0 in `out`. */
static void run(PredictorHandle handle, const float *input, size_t size, float *out,
                size_t out_size) {
  check(MXPredSetInput(handle, "data", input, (mx_uint)size), "MXPredSetInput");
  check(MXPredForward(handle), "MXPredForward");
  check(MXPredGetOutput(handle, 0, out, (mx_uint)out_size), "MXPredGetOutput");
}

/* Handles may split work over different thread counts (a MultiThread handle
 * runs single-threaded), which may change the order of a sum: equal within
 * 1e-5 of the largest output, not bit for bit. A race gives garbage. */
static void expect_reference(const float *out, const char *who, int iteration) {
  float scale = 0, error = 0;
  for (size_t i = 0; i < output_size; ++i) {
    const float magnitude = reference[i] < 0 ? -reference[i] : reference[i];
    const float diff = out[i] - reference[i];
    if (magnitude > scale) scale = magnitude;
    const float distance = diff != diff ? 1e30f : diff < 0 ? -diff : diff;  /* NaN: far */
    if (distance > error) error = distance;
  }
  if (error > 1e-5f * scale) {
    fprintf(stderr, "%s: iteration %d: output differs from the lone handle's by %g\n", who,
            iteration, error);
    exit(2);
  }
}

static void *worker(void *arg) {
  PredictorHandle handle = arg;
  float *input = make_input(input_size);
  float *out = malloc(output_size * sizeof(float));
  for (int i = 0; i < iterations; ++i) {
    run(handle, input, input_size, out, output_size);
    expect_reference(out, "a MXPredCreateMultiThread handle", i);
    /* A reshaped handle shares its parent's thread (the header's rule): it
     * runs here, on this thread only, at the same time as the others. */
    PredictorHandle small = reshape_to_batch1(handle);
    const size_t small_size = output_elements(small);
    float *small_out = malloc(small_size * sizeof(float));
    run(small, input, input_size / shape[0], small_out, small_size);
    free(small_out);
    check(MXPredFree(small), "MXPredFree");
  }
  free(out);
  free(input);
  return NULL;
}

static int threads_mode(int handles) {
  if (handles < 1 || handles > MAX_HANDLES) {
    fprintf(stderr, "HANDLES must be 1..%d\n", MAX_HANDLES);
    return 1;
  }
  float *input = make_input(input_size);
  PredictorHandle lone = create();
  output_size = output_elements(lone);
  reference = malloc(output_size * sizeof(float));
  run(lone, input, input_size, reference, output_size);

  const char *keys[1] = {"data"};
  const mx_uint indptr[2] = {0, ndim};
  PredictorHandle multi[MAX_HANDLES];
  check(MXPredCreateMultiThread(symbol_json, params, (int)params_size, 1, 0, 1, keys, indptr,
                                shape, handles, multi),
        "MXPredCreateMultiThread");
  pthread_t threads[MAX_HANDLES];
  for (int i = 0; i < handles; ++i) {
    if (pthread_create(&threads[i], NULL, worker, multi[i]) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      return 1;
    }
  }
  for (int i = 0; i < handles; ++i) pthread_join(threads[i], NULL);
  for (int i = 0; i < handles; ++i) check(MXPredFree(multi[i]), "MXPredFree");

  /* The lone handle again, many times: with MXLITE_NUM_THREADS=2 each
   * operator splits its work over the pool's threads. */
  float *out = malloc(output_size * sizeof(float));
  for (int i = 0; i < iterations * 4; ++i) {
    run(lone, input, input_size, out, output_size);
    expect_reference(out, "the MXPredCreate handle", i);
  }
  PredictorHandle small = reshape_to_batch1(lone);
  const size_t small_size = output_elements(small);
  float *small_out = malloc(small_size * sizeof(float));
  for (int i = 0; i < iterations; ++i) {
    run(small, input, input_size / shape[0], small_out, small_size);
    run(lone, input, input_size, out, output_size);
    expect_reference(out, "the MXPredCreate handle after a reshape", i);
  }
  check(MXPredFree(small), "MXPredFree");
  check(MXPredFree(lone), "MXPredFree");
  free(small_out);
  free(out);
  free(reference);
  free(input);
  printf("ok: %d handles x %d iterations\n", handles, iterations);
  return 0;
}

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, resident = 0;
  if (f == NULL || fscanf(f, "%ld %ld", &size, &resident) != 2) {
    fprintf(stderr, "cannot read /proc/self/statm\n");
    exit(1);
  }
  fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void churn_cycle(const char *mode, const float *input, float *out) {
  if (strcmp(mode, "churn-ndlist") == 0) {
    NDListHandle list = NULL;
    mx_uint length = 0;
    check(MXNDListCreate(params, (int)params_size, &list, &length), "MXNDListCreate");
    for (mx_uint i = 0; i < length; ++i) {
      const char *key = NULL;
      const mx_float *data = NULL;
      const mx_uint *dims = NULL;
      mx_uint nd = 0;
      check(MXNDListGet(list, i, &key, &data, &dims, &nd), "MXNDListGet");
    }
    check(MXNDListFree(list), "MXNDListFree");
    return;
  }
  PredictorHandle handle = create();
  run(handle, input, input_size, out, output_size);
  if (strcmp(mode, "churn-reshape") == 0) {
    PredictorHandle small = reshape_to_batch1(handle);
    run(small, input, input_size / shape[0], out, output_elements(small));
    check(MXPredFree(small), "MXPredFree");
  }
  /* churn-leak keeps every handle: the test's proof that the RSS check
   * sees a leak. */
  if (strcmp(mode, "churn-leak") != 0) check(MXPredFree(handle), "MXPredFree");
}

static int churn_mode(const char *mode, int cycles) {
  float *input = make_input(input_size);
  PredictorHandle first = create();
  output_size = output_elements(first);
  check(MXPredFree(first), "MXPredFree");
  float *out = malloc(output_size * sizeof(float));
  long after_warmup = 0;
  for (int i = 0; i < cycles; ++i) {
    churn_cycle(mode, input, out);
    if (i + 1 == 1000) after_warmup = rss_kib();
  }
  printf("rss_kib %ld %ld\n", after_warmup, rss_kib());
  free(out);
  free(input);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: %s threads SYMBOL PARAMS SHAPE HANDLES ITERATIONS\n"
                    "       %s churn|churn-reshape|churn-ndlist SYMBOL PARAMS SHAPE CYCLES\n",
            argv[0], argv[0]);
    return 1;
  }
  long symbol_size = 0;
  symbol_json = read_file(argv[2], &symbol_size);
  params = read_file(argv[3], &params_size);
  parse_shape(argv[4]);
  int rc;
  if (strcmp(argv[1], "threads") == 0 && argc == 7) {
    iterations = atoi(argv[6]);
    rc = threads_mode(atoi(argv[5]));
  } else if (strncmp(argv[1], "churn", 5) == 0) {
    rc = churn_mode(argv[1], atoi(argv[5]));
  } else {
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    rc = 1;
  }
  free(symbol_json);
  free(params);
  return rc;
}
