/*
 * MXLitePredictor: mxlite for iOS (and macOS), in Objective-C over the C
 * predict API, shaped so that Swift imports it naturally:
 *
 *   let predictor = try MXLitePredictor(symbolJSON: json, params: params,
 *                                       inputShapes: ["data": [1, 3, 224, 224]])
 *   try predictor.setInput("data", values: pixels)       // Data of float32
 *   try predictor.forward()
 *   let scores = try predictor.output(at: 0)               // Data of float32
 *
 * Runtime options (docs/options.md: threads, spin_ms, memory_budget, ...)
 * are name/value strings:
 *
 *   let predictor = try MXLitePredictor(symbolJSON: json, params: params,
 *                                       inputShapes: ["data": [1, 3, 224, 224]],
 *                                       options: ["threads": "2", "spin_ms": "0"])
 *
 * Every failure of the core comes back as an NSError in MXLiteErrorDomain
 * whose localizedDescription is the core's message (MXGetLastError()), and
 * Swift sees it as a thrown error. A predictor is not thread-safe: use one
 * per thread.
 */
#import <Foundation/Foundation.h>

// Swift naming is an Apple SDK macro; other Foundations (GNUstep, used for
// the header check on Linux) do without it.
#ifndef NS_SWIFT_NAME
#define NS_SWIFT_NAME(name)
#endif  // !NS_SWIFT_NAME

NS_ASSUME_NONNULL_BEGIN

/*! Errors reported by the mxlite core. */
FOUNDATION_EXPORT NSString *const MXLiteErrorDomain;

/*! Codes in MXLiteErrorDomain. */
typedef NS_ENUM(NSInteger, MXLiteErrorCode) {
  /*! The core refused the call; the description says why. */
  MXLiteErrorCore = 1,
  /*! The arguments could not be passed to the core (shape, size). */
  MXLiteErrorInvalidArgument = 2,
};

@interface MXLitePredictor : NSObject

/*!
 * Loads a checkpoint: the bytes of prefix-symbol.json and prefix-0000.params,
 * and the shape of every input by name. Runtime options come from the
 * process environment (MXLITE_* variables) only.
 */
- (nullable instancetype)initWithSymbolJSON:(NSData *)symbolJSON
                                     params:(NSData *)params
                                inputShapes:(NSDictionary<NSString *, NSArray<NSNumber *> *> *)inputShapes
                                      error:(NSError **)error
    NS_SWIFT_NAME(init(symbolJSON:params:inputShapes:));

/*!
 * The same with runtime options by name, values as strings (docs/options.md;
 * e.g. @{@"threads" : @"2", @"memory_budget" : @"256M"}), applied over the
 * environment's settings through MXLitePredCreateWithOptions. nil: as the
 * initializer above. An unknown name, a bad value or a value that is not an
 * NSString fails with an NSError naming it.
 */
- (nullable instancetype)initWithSymbolJSON:(NSData *)symbolJSON
                                     params:(NSData *)params
                                inputShapes:(NSDictionary<NSString *, NSArray<NSNumber *> *> *)inputShapes
                                    options:(nullable NSDictionary<NSString *, NSString *> *)options
                                      error:(NSError **)error
    NS_SWIFT_NAME(init(symbolJSON:params:inputShapes:options:)) NS_DESIGNATED_INITIALIZER;

- (instancetype)init NS_UNAVAILABLE;

/*! Sets input `name` from float32 values (row-major, exactly its size). */
- (BOOL)setInput:(NSString *)name values:(NSData *)values error:(NSError **)error
    NS_SWIFT_NAME(setInput(_:values:));

/*! The same from a C array of `count` floats. */
- (BOOL)setInput:(NSString *)name
          floats:(const float *)floats
           count:(NSUInteger)count
           error:(NSError **)error NS_SWIFT_NAME(setInput(_:floats:count:));

/*! Runs the network on the inputs set so far. */
- (BOOL)forwardWithError:(NSError **)error NS_SWIFT_NAME(forward());

/*! The number of outputs. */
@property(nonatomic, readonly) NSUInteger outputCount;

/*! The shape of output `index`. */
- (nullable NSArray<NSNumber *> *)outputShapeAtIndex:(NSUInteger)index
                                               error:(NSError **)error
    NS_SWIFT_NAME(outputShape(at:));

/*! A copy of output `index` as float32 values, row-major; an output of
 *  another element type (float16, integers, ...) is converted. Inputs are
 *  float32. */
- (nullable NSData *)outputAtIndex:(NSUInteger)index error:(NSError **)error
    NS_SWIFT_NAME(output(at:));

/*! New input shapes (e.g. another batch size); the weights are kept. */
- (BOOL)reshapeInputs:(NSDictionary<NSString *, NSArray<NSNumber *> *> *)inputShapes
                error:(NSError **)error NS_SWIFT_NAME(reshape(inputShapes:));

@end

NS_ASSUME_NONNULL_END
