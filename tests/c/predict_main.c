/*
 * A C program that uses mxlite only through c_predict_api.h, as a program
 * written for MXNet's predictor would. The cross-build tests compile it for
 * other targets and run it under qemu.
 *
 *   predict_main SYMBOL.json PARAMS INPUT.f32 OUTPUT.f32 NAME D0,D1,...
 *
 * Reads raw little-endian float32 input, writes output 0 the same way and
 * prints its shape. Exit status 1 with MXGetLastError() on failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_predict_api.h"

static char *read_file(const char *path, long *size) {
  FILE *file = fopen(path, "rb");
  char *data;
  if (!file) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(2);
  }
  fseek(file, 0, SEEK_END);
  *size = ftell(file);
  fseek(file, 0, SEEK_SET);
  data = (char *)malloc((size_t)*size + 1);
  if (!data || fread(data, 1, (size_t)*size, file) != (size_t)*size) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(2);
  }
  data[*size] = '\0';
  fclose(file);
  return data;
}

static int fail(const char *what) {
  fprintf(stderr, "%s failed: %s\n", what, MXGetLastError());
  return 1;
}

int main(int argc, char **argv) {
  long symbol_size, params_size, input_size;
  char *symbol, *params, *input;
  mx_uint shape[8], indptr[2] = {0, 0}, *out_shape, out_ndim, i, out_size = 1;
  const char *keys[1];
  char *dims;
  float *output;
  PredictorHandle handle;
  FILE *out;

  if (argc != 7) {
    fprintf(stderr, "usage: %s SYMBOL PARAMS INPUT OUTPUT NAME D0,D1,...\n", argv[0]);
    return 2;
  }
  symbol = read_file(argv[1], &symbol_size);
  params = read_file(argv[2], &params_size);
  input = read_file(argv[3], &input_size);
  keys[0] = argv[5];
  for (dims = strtok(argv[6], ","); dims && indptr[1] < 8; dims = strtok(NULL, ","))
    shape[indptr[1]++] = (mx_uint)atoi(dims);

  if (MXPredCreate(symbol, params, (int)params_size, 1, 0, 1, keys, indptr, shape, &handle))
    return fail("MXPredCreate");
  if (MXPredSetInput(handle, keys[0], (const mx_float *)input,
                     (mx_uint)(input_size / sizeof(float))))
    return fail("MXPredSetInput");
  if (MXPredForward(handle)) return fail("MXPredForward");
  if (MXPredGetOutputShape(handle, 0, &out_shape, &out_ndim))
    return fail("MXPredGetOutputShape");
  printf("output shape:");
  for (i = 0; i < out_ndim; ++i) {
    printf(" %u", out_shape[i]);
    out_size *= out_shape[i];
  }
  printf("\n");
  output = (float *)malloc(out_size * sizeof(float));
  if (MXPredGetOutput(handle, 0, output, out_size)) return fail("MXPredGetOutput");
  out = fopen(argv[4], "wb");
  if (!out || fwrite(output, sizeof(float), out_size, out) != out_size) {
    fprintf(stderr, "cannot write %s\n", argv[4]);
    return 2;
  }
  fclose(out);
  if (MXPredFree(handle)) return fail("MXPredFree");
  free(output);
  free(symbol);
  free(params);
  free(input);
  return 0;
}
