/*
 * Runs many oracle cases in one process, through c_predict_api.h only, so
 * that targets with a slow start (qemu-user, a WebAssembly runtime) pay it
 * once. The Python tests write the plan and compare the outputs with MXNet's.
 *
 *   conformance_main PLAN
 *
 * PLAN is text, one directive per line, fields separated by spaces (paths
 * contain none):
 *   case NAME                     start a case
 *   symbol PATH                   the symbol JSON
 *   params PATH                   the params file
 *   input NAME PATH NDIM D0 D1..  an input: raw little-endian values, float32
 *                                 unless a dtype line says otherwise
 *   dtype NAME FLAG               input NAME has mshadow type FLAG (0 float32,
 *                                 1 float64, 2 float16, 3 uint8, 4 int32,
 *                                 5 int8, 6 int64): MXPredCreateEx is used
 *   output PREFIX                 write output i to PREFIX.i.bin, raw, in
 *                                 the output's own type
 *   run                           create the predictor, run it, free it
 * For each case it prints "case NAME outputs K" and one line
 * "output I dtype FLAG shape D0 D1 ..." per output, or
 * "case NAME error: MESSAGE".
 * The exit status is the number of failed cases (capped at 100), 2 for a
 * malformed plan or an unreadable file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_predict_api.h"

#define MAX_INPUTS 16
#define MAX_DIMS 8
#define MAX_PATH_LENGTH 1024
#define MAX_LINE_LENGTH 4096

typedef struct {
  char name[256];
  char path[MAX_PATH_LENGTH];
  mx_uint ndim;
  mx_uint dims[MAX_DIMS];
} InputSpec;

typedef struct {
  char name[256];
  int num_dtypes;
  const char *dtype_names[MAX_INPUTS];
  int dtype_flags[MAX_INPUTS];
  char symbol_path[MAX_PATH_LENGTH];
  char params_path[MAX_PATH_LENGTH];
  char output_prefix[MAX_PATH_LENGTH];
  int num_inputs;
  InputSpec inputs[MAX_INPUTS];
} CaseSpec;

/* Reads a whole file, NUL-terminated (the symbol JSON must be). */
static char *read_whole_file(const char *path, long *size) {
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

/* Bytes per element of an mshadow type flag; 0 for an unknown flag. */
static size_t element_size(int flag) {
  switch (flag) {
    case 0: case 4: return 4;
    case 1: case 6: return 8;
    case 2: return 2;
    case 3: case 5: return 1;
    default: return 0;
  }
}

static int report_failure(const CaseSpec *spec, const char *what) {
  printf("case %s error: %s: %s\n", spec->name, what, MXGetLastError());
  fflush(stdout);
  return 1;
}

/* Runs one case; returns 0 on success, 1 on a reported failure. */
static int run_case(CaseSpec *spec) {
  const char *keys[MAX_INPUTS];
  mx_uint indptr[MAX_INPUTS + 1], shape_data[MAX_INPUTS * MAX_DIMS];
  mx_uint num_outputs = 0, i, j, *out_shape, out_ndim;
  long symbol_size, params_size;
  char *symbol = read_whole_file(spec->symbol_path, &symbol_size);
  char *params = read_whole_file(spec->params_path, &params_size);
  PredictorHandle handle = NULL;
  int failed = 0;

  indptr[0] = 0;
  for (i = 0; i < (mx_uint)spec->num_inputs; ++i) {
    keys[i] = spec->inputs[i].name;
    for (j = 0; j < spec->inputs[i].ndim; ++j) shape_data[indptr[i] + j] = spec->inputs[i].dims[j];
    indptr[i + 1] = indptr[i] + spec->inputs[i].ndim;
  }
  if (MXPredCreateEx(symbol, params, (int)params_size, 1, 0, (mx_uint)spec->num_inputs, keys,
                     indptr, shape_data, (mx_uint)spec->num_dtypes, spec->dtype_names,
                     spec->dtype_flags, &handle)) {
    failed = report_failure(spec, "MXPredCreateEx");
    goto done;
  }
  for (i = 0; i < (mx_uint)spec->num_inputs && !failed; ++i) {
    long input_size;
    char *input = read_whole_file(spec->inputs[i].path, &input_size);
    mx_uint count = 1;
    /* The size is an element count; the bytes are in the input's type. */
    for (j = 0; j < spec->inputs[i].ndim; ++j) count *= spec->inputs[i].dims[j];
    if (MXPredSetInput(handle, keys[i], (const mx_float *)input, count))
      failed = report_failure(spec, "MXPredSetInput");
    free(input);
  }
  if (failed) goto done;
  if (MXPredForward(handle)) {
    failed = report_failure(spec, "MXPredForward");
    goto done;
  }
  /* The API has no output count: ask for shapes until the index is refused. */
  while (MXPredGetOutputShape(handle, num_outputs, &out_shape, &out_ndim) == 0) ++num_outputs;
  printf("case %s outputs %u\n", spec->name, num_outputs);
  for (i = 0; i < num_outputs && !failed; ++i) {
    mx_uint size = 1;
    int dtype = -1;
    size_t width;
    void *output;
    char path[MAX_PATH_LENGTH + 32];
    FILE *file;
    if (MXPredGetOutputType(handle, i, &dtype) || !(width = element_size(dtype))) {
      failed = report_failure(spec, "MXPredGetOutputType");
      break;
    }
    MXPredGetOutputShape(handle, i, &out_shape, &out_ndim);
    printf("output %u dtype %d shape", i, dtype);
    for (j = 0; j < out_ndim; ++j) {
      printf(" %u", out_shape[j]);
      size *= out_shape[j];
    }
    printf("\n");
    /* MXPredGetOutput writes `size` elements of the output's own type. */
    output = malloc((size_t)size * width + 1);
    if (MXPredGetOutput(handle, i, (mx_float *)output, size)) {
      failed = report_failure(spec, "MXPredGetOutput");
    } else {
      snprintf(path, sizeof path, "%s.%u.bin", spec->output_prefix, i);
      file = fopen(path, "wb");
      if (!file || fwrite(output, width, size, file) != size) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
      }
      fclose(file);
    }
    free(output);
  }
  fflush(stdout);

done:
  if (handle && MXPredFree(handle)) failed = report_failure(spec, "MXPredFree");
  free(symbol);
  free(params);
  return failed;
}

static void copy_field(char *to, size_t capacity, const char *from, const char *what) {
  if (!from || strlen(from) >= capacity) {
    fprintf(stderr, "plan: missing or too long %s\n", what);
    exit(2);
  }
  strcpy(to, from);
}

int main(int argc, char **argv) {
  FILE *plan;
  char line[MAX_LINE_LENGTH];
  CaseSpec spec;
  int failures = 0;

  if (argc != 2) {
    fprintf(stderr, "usage: %s PLAN\n", argv[0]);
    return 2;
  }
  plan = fopen(argv[1], "r");
  if (!plan) {
    fprintf(stderr, "cannot open plan %s\n", argv[1]);
    return 2;
  }
  memset(&spec, 0, sizeof spec);
  while (fgets(line, sizeof line, plan)) {
    char *directive = strtok(line, " \r\n");
    if (!directive) continue;
    if (strcmp(directive, "case") == 0) {
      memset(&spec, 0, sizeof spec);
      copy_field(spec.name, sizeof spec.name, strtok(NULL, " \r\n"), "case name");
    } else if (strcmp(directive, "symbol") == 0) {
      copy_field(spec.symbol_path, sizeof spec.symbol_path, strtok(NULL, " \r\n"), "symbol");
    } else if (strcmp(directive, "params") == 0) {
      copy_field(spec.params_path, sizeof spec.params_path, strtok(NULL, " \r\n"), "params");
    } else if (strcmp(directive, "output") == 0) {
      copy_field(spec.output_prefix, sizeof spec.output_prefix, strtok(NULL, " \r\n"),
                 "output prefix");
    } else if (strcmp(directive, "dtype") == 0) {
      const char *name = strtok(NULL, " \r\n"), *flag = strtok(NULL, " \r\n");
      int k;
      if (!name || !flag) {
        fprintf(stderr, "plan: dtype needs a name and a flag\n");
        return 2;
      }
      /* Point at the input's own name, which lives as long as the case. */
      for (k = 0; k < spec.num_inputs && strcmp(spec.inputs[k].name, name) != 0; ++k) continue;
      if (k == spec.num_inputs) {
        fprintf(stderr, "plan: dtype for %s, which is not an input (yet)\n", name);
        return 2;
      }
      spec.dtype_names[spec.num_dtypes] = spec.inputs[k].name;
      spec.dtype_flags[spec.num_dtypes++] = atoi(flag);
    } else if (strcmp(directive, "input") == 0) {
      InputSpec *input;
      const char *field;
      int ndim;
      if (spec.num_inputs == MAX_INPUTS) {
        fprintf(stderr, "plan: case %s has more than %d inputs\n", spec.name, MAX_INPUTS);
        return 2;
      }
      input = &spec.inputs[spec.num_inputs++];
      copy_field(input->name, sizeof input->name, strtok(NULL, " \r\n"), "input name");
      copy_field(input->path, sizeof input->path, strtok(NULL, " \r\n"), "input path");
      field = strtok(NULL, " \r\n");
      ndim = field ? atoi(field) : 0;
      if (ndim < 1 || ndim > MAX_DIMS) {
        fprintf(stderr, "plan: input %s needs 1 to %d dimensions\n", input->name, MAX_DIMS);
        return 2;
      }
      input->ndim = (mx_uint)ndim;
      for (ndim = 0; ndim < (int)input->ndim; ++ndim) {
        field = strtok(NULL, " \r\n");
        if (!field) {
          fprintf(stderr, "plan: input %s lacks dimension %d\n", input->name, ndim);
          return 2;
        }
        input->dims[ndim] = (mx_uint)strtoul(field, NULL, 10);
      }
    } else if (strcmp(directive, "run") == 0) {
      failures += run_case(&spec);
    } else {
      fprintf(stderr, "plan: unknown directive '%s'\n", directive);
      return 2;
    }
  }
  fclose(plan);
  return failures > 100 ? 100 : failures;
}
