/*
 * MXLitePredictor over the C predict API (ARC). The C calls are the whole
 * implementation; this file only converts Foundation types and turns a
 * non-zero status into an NSError carrying MXGetLastError().
 */
#import "MXLitePredictor.h"

#include "c_predict_api.h"
#include "mxlite.h"
#include "mxlite_output_float.h"

NSString *const MXLiteErrorDomain = @"org.mxlite";

/* Fills *error (when asked for) and returns NO. */
static BOOL MXLiteFail(NSError **error, MXLiteErrorCode code, NSString *message) {
  if (error != NULL) {
    *error = [NSError errorWithDomain:MXLiteErrorDomain
                                 code:code
                             userInfo:@{NSLocalizedDescriptionKey : message}];
  }
  return NO;
}

static BOOL MXLiteCoreFailed(int status, NSError **error) {
  if (status == 0) return NO;
  const char *message = MXGetLastError();
  MXLiteFail(error, MXLiteErrorCore,
             [NSString stringWithUTF8String:message != NULL ? message : "unknown error"]);
  return YES;
}

/* Input names and shapes in the C API's layout. The key pointers point into
 * `names`, which the caller keeps alive for the call. */
static BOOL MXLiteFlattenShapes(NSDictionary<NSString *, NSArray<NSNumber *> *> *inputShapes,
                                NSMutableArray<NSData *> *names, NSMutableData *keys,
                                NSMutableData *indptr, NSMutableData *dims, NSError **error) {
  mx_uint offset = 0;
  [indptr appendBytes:&offset length:sizeof offset];
  for (NSString *name in inputShapes) {
    NSData *utf8 = [name dataUsingEncoding:NSUTF8StringEncoding];
    NSMutableData *terminated = [NSMutableData dataWithData:utf8];
    [terminated appendBytes:"" length:1];
    [names addObject:terminated];
    const char *key = (const char *)terminated.bytes;
    [keys appendBytes:&key length:sizeof key];
    for (NSNumber *number in inputShapes[name]) {
      long long dim = number.longLongValue;
      if (dim <= 0 || dim > UINT32_MAX) {
        return MXLiteFail(error, MXLiteErrorInvalidArgument,
                          [NSString stringWithFormat:@"input '%@': dimensions must be positive "
                                                     @"and fit in 32 bits, got %lld",
                                                     name, dim]);
      }
      mx_uint value = (mx_uint)dim;
      [dims appendBytes:&value length:sizeof value];
      ++offset;
    }
    [indptr appendBytes:&offset length:sizeof offset];
  }
  if (dims.length == 0) [dims setLength:sizeof(mx_uint)];  // keeps the pointer non-NULL
  return YES;
}

/* Option names and values as C strings (pointers into `strings`, which the
 * caller keeps alive for the call). A key or value that is not an NSString
 * (an NSNumber from an untyped dictionary) is refused by name. */
static BOOL MXLiteFlattenOptions(NSDictionary<NSString *, NSString *> *options,
                                 NSMutableArray<NSData *> *strings, NSMutableData *names,
                                 NSMutableData *values, NSError **error) {
  for (id name in options) {
    id value = options[name];
    if (![name isKindOfClass:[NSString class]] || ![value isKindOfClass:[NSString class]]) {
      return MXLiteFail(error, MXLiteErrorInvalidArgument,
                        [NSString stringWithFormat:@"option '%@': names and values must be "
                                                   @"strings (e.g. @\"2\", not @2)",
                                                   name]);
    }
    const char *pair[2] = {NULL, NULL};
    NSString *texts[2] = {name, value};
    for (int i = 0; i < 2; ++i) {
      NSMutableData *terminated =
          [NSMutableData dataWithData:[texts[i] dataUsingEncoding:NSUTF8StringEncoding]];
      [terminated appendBytes:"" length:1];
      [strings addObject:terminated];
      pair[i] = (const char *)terminated.bytes;
    }
    [names appendBytes:&pair[0] length:sizeof pair[0]];
    [values appendBytes:&pair[1] length:sizeof pair[1]];
  }
  return YES;
}

@implementation MXLitePredictor {
  PredictorHandle _handle;
}

- (nullable instancetype)initWithSymbolJSON:(NSData *)symbolJSON
                                     params:(NSData *)params
                                inputShapes:(NSDictionary<NSString *, NSArray<NSNumber *> *> *)inputShapes
                                      error:(NSError **)error {
  return [self initWithSymbolJSON:symbolJSON
                           params:params
                      inputShapes:inputShapes
                          options:nil
                            error:error];
}

- (nullable instancetype)initWithSymbolJSON:(NSData *)symbolJSON
                                     params:(NSData *)params
                                inputShapes:(NSDictionary<NSString *, NSArray<NSNumber *> *> *)inputShapes
                                    options:(nullable NSDictionary<NSString *, NSString *> *)options
                                      error:(NSError **)error {
  self = [super init];
  if (self == nil) return nil;
  if (params.length > INT32_MAX) {
    MXLiteFail(error, MXLiteErrorInvalidArgument, @"the params are larger than 2 GiB");
    return nil;
  }
  NSMutableArray<NSData *> *names = [NSMutableArray array];
  NSMutableData *keys = [NSMutableData data], *indptr = [NSMutableData data];
  NSMutableData *dims = [NSMutableData data];
  if (!MXLiteFlattenShapes(inputShapes, names, keys, indptr, dims, error)) return nil;
  // MXPredCreate reads the JSON as a C string: add the terminating NUL.
  NSMutableData *json = [NSMutableData dataWithData:symbolJSON];
  [json appendBytes:"" length:1];
  PredictorHandle handle = NULL;
  int status = 0;
  if (options == nil) {
    status = MXPredCreate((const char *)json.bytes, params.bytes, (int)params.length, 1, 0,
                          (mx_uint)names.count, (const char **)keys.mutableBytes,
                          (const mx_uint *)indptr.bytes, (const mx_uint *)dims.bytes, &handle);
  } else {
    NSMutableArray<NSData *> *strings = [NSMutableArray array];
    NSMutableData *optionNames = [NSMutableData data], *optionValues = [NSMutableData data];
    if (!MXLiteFlattenOptions(options, strings, optionNames, optionValues, error)) return nil;
    // One handle, every output of the symbol.
    status = MXLitePredCreateWithOptions(
        (const char *)json.bytes, params.bytes, (int)params.length, 1, 0, (mx_uint)names.count,
        (const char **)keys.mutableBytes, (const mx_uint *)indptr.bytes,
        (const mx_uint *)dims.bytes, 0, NULL, (mx_uint)strings.count / 2,
        (const char **)optionNames.mutableBytes, (const char **)optionValues.mutableBytes, 1,
        &handle);
  }
  if (MXLiteCoreFailed(status, error)) return nil;
  _handle = handle;
  return self;
}

- (void)dealloc {
  if (_handle != NULL) MXPredFree(_handle);
}

- (BOOL)setInput:(NSString *)name values:(NSData *)values error:(NSError **)error {
  if (values.length % sizeof(float) != 0) {
    return MXLiteFail(error, MXLiteErrorInvalidArgument,
                      [NSString stringWithFormat:@"input '%@': %lu bytes is not a whole number "
                                                 @"of float32 values",
                                                 name, (unsigned long)values.length]);
  }
  return [self setInput:name
                 floats:(const float *)values.bytes
                  count:values.length / sizeof(float)
                  error:error];
}

- (BOOL)setInput:(NSString *)name
          floats:(const float *)floats
           count:(NSUInteger)count
           error:(NSError **)error {
  if (count > UINT32_MAX) {
    return MXLiteFail(error, MXLiteErrorInvalidArgument, @"the input has too many values");
  }
  return !MXLiteCoreFailed(MXPredSetInput(_handle, name.UTF8String, floats, (mx_uint)count),
                           error);
}

- (BOOL)forwardWithError:(NSError **)error {
  return !MXLiteCoreFailed(MXPredForward(_handle), error);
}

- (NSUInteger)outputCount {
  // The C API has no count: outputs are numbered from 0 until one is refused.
  mx_uint *shape = NULL, ndim = 0;
  NSUInteger count = 0;
  while (MXPredGetOutputShape(_handle, (mx_uint)count, &shape, &ndim) == 0) ++count;
  return count;
}

- (nullable NSArray<NSNumber *> *)outputShapeAtIndex:(NSUInteger)index error:(NSError **)error {
  mx_uint *shape = NULL, ndim = 0;
  if (MXLiteCoreFailed(MXPredGetOutputShape(_handle, (mx_uint)index, &shape, &ndim), error)) {
    return nil;
  }
  NSMutableArray<NSNumber *> *dims = [NSMutableArray arrayWithCapacity:ndim];
  for (mx_uint i = 0; i < ndim; ++i) [dims addObject:@(shape[i])];
  return dims;
}

- (nullable NSData *)outputAtIndex:(NSUInteger)index error:(NSError **)error {
  mx_uint *shape = NULL, ndim = 0;
  if (MXLiteCoreFailed(MXPredGetOutputShape(_handle, (mx_uint)index, &shape, &ndim), error)) {
    return nil;
  }
  NSUInteger size = 1;
  for (mx_uint i = 0; i < ndim; ++i) size *= shape[i];
  int dtype = -1;
  if (MXLiteCoreFailed(MXPredGetOutputType(_handle, (mx_uint)index, &dtype), error)) return nil;
  size_t width = mxlite_element_size(dtype);
  if (width == 0) {
    MXLiteFail(error, MXLiteErrorInvalidArgument,
               [NSString stringWithFormat:@"output %lu has element type flag %d, which has no "
                                          @"float32 conversion",
                                          (unsigned long)index, dtype]);
    return nil;
  }
  // MXPredGetOutput writes the output in its own type; hand out float32.
  NSMutableData *raw = [NSMutableData dataWithLength:size * width];
  if (MXLiteCoreFailed(MXPredGetOutput(_handle, (mx_uint)index, (float *)raw.mutableBytes,
                                       (mx_uint)size),
                       error)) {
    return nil;
  }
  NSMutableData *values = [NSMutableData dataWithLength:size * sizeof(float)];
  mxlite_output_to_float(dtype, (const unsigned char *)raw.bytes, size,
                         (float *)values.mutableBytes);
  return values;
}

- (BOOL)reshapeInputs:(NSDictionary<NSString *, NSArray<NSNumber *> *> *)inputShapes
                error:(NSError **)error {
  NSMutableArray<NSData *> *names = [NSMutableArray array];
  NSMutableData *keys = [NSMutableData data], *indptr = [NSMutableData data];
  NSMutableData *dims = [NSMutableData data];
  if (!MXLiteFlattenShapes(inputShapes, names, keys, indptr, dims, error)) return NO;
  PredictorHandle reshaped = NULL;
  int status = MXPredReshape((mx_uint)names.count, (const char **)keys.mutableBytes,
                             (const mx_uint *)indptr.bytes, (const mx_uint *)dims.bytes, _handle,
                             &reshaped);
  if (MXLiteCoreFailed(status, error)) return NO;
  MXPredFree(_handle);
  _handle = reshaped;
  return YES;
}

@end
