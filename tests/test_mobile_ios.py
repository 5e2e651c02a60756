"""The iOS pieces, checked as far as a Linux machine allows.

Building MXLite.xcframework needs a Mac (mobile/ios/build_ios.sh). Here
clang compiles for the iOS target triple itself (arm64-apple-ios, the
Apple ARM64 ABI, ARC, the modern Objective-C runtime):
- the public C headers (c_predict_api.h, mxlite.h), as C, Objective-C and
  C++;
- the Objective-C wrapper with ARC, warning-free. Apple's SDK is not here,
  so Foundation (and libc's memcpy) is a stand-in written below that
  declares, with Apple's signatures, exactly the API the wrapper uses;
  anything else the wrapper called would fail to compile.
- a caller of the wrapper (both initializers, the options one with a
  dictionary literal) against the same stand-in, and that a dictionary of
  NSNumber values is refused at compile time by the generic types;
- the module map names headers that exist, and the build script is valid
  bash that names every file it copies.
"""
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT
from mobile_support import AMALGAMATE, require_tool, run

IOS = os.path.join(ROOT, 'mobile', 'ios')
TARGET = 'arm64-apple-ios12.0'

# The subset of Apple's Foundation that MXLitePredictor uses, with the SDK's
# declarations (nullability and generics included).
FOUNDATION_STAND_IN = r'''
#pragma once
#include <stdint.h>
#include <stddef.h>
#define NS_ASSUME_NONNULL_BEGIN _Pragma("clang assume_nonnull begin")
#define NS_ASSUME_NONNULL_END _Pragma("clang assume_nonnull end")
#define NS_SWIFT_NAME(name) __attribute__((swift_name(#name)))
#define NS_DESIGNATED_INITIALIZER __attribute__((objc_designated_initializer))
#define NS_UNAVAILABLE __attribute__((unavailable))
#define NS_ENUM(type, name) enum name : type name; enum name : type
#define FOUNDATION_EXPORT extern
typedef long NSInteger;
typedef unsigned long NSUInteger;
typedef signed char BOOL;
#define YES ((BOOL)1)
#define NO ((BOOL)0)
#define nil ((id)0)
typedef NSUInteger NSStringEncoding;
enum { NSUTF8StringEncoding = 4 };
@class NSString, NSData, NSDictionary;
__attribute__((objc_root_class))
@interface NSObject
+ (instancetype)alloc;
+ (Class)class;
- (instancetype)init;
- (BOOL)isKindOfClass:(Class)aClass;
@end
typedef struct {
  unsigned long state;
  id __unsafe_unretained _Nullable * _Nullable itemsPtr;
  unsigned long * _Nullable mutationsPtr;
  unsigned long extra[5];
} NSFastEnumerationState;
@protocol NSFastEnumeration
- (NSUInteger)countByEnumeratingWithState:(NSFastEnumerationState *)state
                                  objects:(id __unsafe_unretained _Nullable [_Nonnull])buffer
                                    count:(NSUInteger)len;
@end
@interface NSNumber : NSObject
@property(readonly) long long longLongValue;
+ (NSNumber *)numberWithUnsignedInt:(unsigned int)value;
+ (NSNumber *)numberWithInt:(int)value;
@end
@interface NSString : NSObject
@property(nullable, readonly) const char *UTF8String __attribute__((objc_returns_inner_pointer));
+ (nullable instancetype)stringWithUTF8String:(const char *)nullTerminatedCString;
+ (instancetype)stringWithFormat:(NSString *)format, ... __attribute__((format(__NSString__, 1, 2)));
- (nullable NSData *)dataUsingEncoding:(NSStringEncoding)encoding;
@end
@interface NSData : NSObject
@property(readonly) NSUInteger length;
@property(readonly) const void *bytes __attribute__((objc_returns_inner_pointer));
@end
@interface NSMutableData : NSData
@property(readonly) void *mutableBytes __attribute__((objc_returns_inner_pointer));
@property NSUInteger length;
+ (instancetype)data;
+ (instancetype)dataWithData:(NSData *)data;
+ (nullable instancetype)dataWithLength:(NSUInteger)length;
- (void)appendBytes:(const void *)bytes length:(NSUInteger)length;
- (void)setLength:(NSUInteger)length;
@end
@interface NSArray<__covariant ObjectType> : NSObject <NSFastEnumeration>
@property(readonly) NSUInteger count;
+ (instancetype)arrayWithObjects:(const ObjectType _Nonnull [_Nonnull])objects
                           count:(NSUInteger)cnt;
@end
@interface NSMutableArray<ObjectType> : NSArray<ObjectType>
+ (instancetype)array;
+ (instancetype)arrayWithCapacity:(NSUInteger)numItems;
- (void)addObject:(ObjectType)anObject;
@end
@interface NSDictionary<__covariant KeyType, __covariant ObjectType> : NSObject <NSFastEnumeration>
- (nullable ObjectType)objectForKeyedSubscript:(KeyType)key;
+ (instancetype)dictionaryWithObjects:(const ObjectType _Nonnull [_Nullable])objects
                              forKeys:(const KeyType _Nonnull [_Nullable])keys
                                count:(NSUInteger)cnt;
@end
@interface NSError : NSObject
+ (instancetype)errorWithDomain:(NSString *)domain code:(NSInteger)code
                       userInfo:(nullable NSDictionary<NSString *, id> *)dict;
@end
FOUNDATION_EXPORT NSString *const NSLocalizedDescriptionKey;
'''


@pytest.fixture(scope='module')
def amalgamation(tmp_path_factory):
    out = tmp_path_factory.mktemp('amalgamation')
    run([sys.executable, AMALGAMATE, '--out-dir', str(out)])
    return out


@pytest.mark.parametrize('language', ['c', 'objective-c', 'c++'])
def test_c_header_compiles_for_ios(amalgamation, tmp_path, language):
    require_tool('clang', 'clang')
    source = tmp_path / 'use.h'
    source.write_text('#include "c_predict_api.h"\n'
                      'static int (*const create)(const char *, const void *, int, int, int, '
                      'mx_uint, const char **, const mx_uint *, const mx_uint *, '
                      'PredictorHandle *) = MXPredCreate;\n'
                      'int use(void) { return create != 0 && MXPredFree(0) == 0; }\n')
    compiler = 'clang++' if language == 'c++' else 'clang'
    # No Apple SDK here: -ffreestanding takes stdint.h/stdbool.h from clang.
    extra = ['-stdlib=libc++'] if language == 'c++' else []
    run([compiler, '-target', TARGET, '-ffreestanding', *extra, '-fsyntax-only', '-x', language,
         '-Wall', '-Wextra', '-Werror', '-I', str(amalgamation), str(source)])
    # mxlite.h (MXLitePredCreateWithOptions, which the wrapper calls) too.
    extension = tmp_path / 'use_mxlite.h'
    extension.write_text('#include "mxlite.h"\n'
                         'static int (*const create)(const char *, const void *, int, int, int, '
                         'mx_uint, const char **, const mx_uint *, const mx_uint *, mx_uint, '
                         'const char **, mx_uint, const char **, const char **, int, '
                         'PredictorHandle *) = MXLitePredCreateWithOptions;\n'
                         'int use(void) { return create != 0; }\n')
    run([compiler, '-target', TARGET, '-ffreestanding', *extra, '-fsyntax-only', '-x', language,
         '-Wall', '-Wextra', '-Werror', '-I', str(amalgamation), str(extension)])


def objective_c_command(amalgamation, tmp_path):
    """clang for the iOS target with ARC against the Foundation stand-in."""
    require_tool('clang', 'clang')
    foundation = tmp_path / 'sdk' / 'Foundation'
    foundation.mkdir(parents=True, exist_ok=True)
    (foundation / 'Foundation.h').write_text(FOUNDATION_STAND_IN)
    # The one libc function the shared conversion header uses.
    (tmp_path / 'sdk' / 'string.h').write_text(
        '#pragma once\n#include <stddef.h>\nvoid *memcpy(void *, const void *, size_t);\n')
    return ['clang', '-target', TARGET, '-ffreestanding', '-fobjc-arc', '-fsyntax-only',
            '-Wall', '-Wextra', '-Werror', '-Wno-nullability-completeness',
            '-isystem', str(tmp_path / 'sdk'), '-I', str(amalgamation), '-I', IOS,
            '-I', os.path.join(ROOT, 'mobile', 'common')]


def test_objective_c_wrapper_compiles_for_ios_with_arc(amalgamation, tmp_path):
    run([*objective_c_command(amalgamation, tmp_path), os.path.join(IOS, 'MXLitePredictor.m')])


# A caller of the public interface: both initializers, options as a
# dictionary literal of strings. MISUSE swaps in NSNumber values, which the
# NSDictionary<NSString *, NSString *> parameter must refuse.
CALLER = r'''
#import "MXLitePredictor.h"
MXLitePredictor *_Nullable load(NSData *json, NSData *params, NSError **error) {
  NSDictionary<NSString *, NSArray<NSNumber *> *> *shapes = @{@"data" : @[ @1, @3 ]};
  MXLitePredictor *plain = [[MXLitePredictor alloc] initWithSymbolJSON:json
                                                                params:params
                                                           inputShapes:shapes
                                                                 error:error];
  if (plain == nil) return nil;
  return [[MXLitePredictor alloc] initWithSymbolJSON:json
                                              params:params
                                         inputShapes:shapes
                                             options:@{@"threads" : OPTION_VALUE}
                                               error:error];
}
'''


def test_objective_c_caller_passes_options(amalgamation, tmp_path):
    command = objective_c_command(amalgamation, tmp_path)
    caller = tmp_path / 'caller.m'
    caller.write_text(CALLER)
    run([*command, '-DOPTION_VALUE=@"2"', str(caller)])
    # The generic type is what tells an Objective-C caller that values are
    # strings: @2 must not compile.
    refused = subprocess.run([*command, '-DOPTION_VALUE=@2', str(caller)],
                             capture_output=True, text=True)
    assert refused.returncode != 0, 'an NSNumber option value compiled'
    assert 'NSNumber' in refused.stderr and 'NSString' in refused.stderr, refused.stderr


def test_module_map_and_build_script_name_real_files(amalgamation):
    modulemap = open(os.path.join(IOS, 'module.modulemap'), encoding='utf-8').read()
    for header in re.findall(r'header "([^"]+)"', modulemap):
        assert os.path.exists(os.path.join(IOS, header)) or \
            os.path.exists(amalgamation / header), header
    script = os.path.join(IOS, 'build_ios.sh')
    run(['bash', '-n', script])
    text = open(script, encoding='utf-8').read()
    for name in ('MXLitePredictor.h', 'MXLitePredictor.m', 'module.modulemap', 'mxlite.h'):
        assert name in text
    # On this machine the script stops with a message, not a half build.
    result = subprocess.run(['bash', script], capture_output=True, text=True,
                            env={**os.environ, 'PATH': '/usr/bin:/bin'})
    if sys.platform != 'darwin':
        assert result.returncode == 1
        assert 'needs macOS with Xcode' in result.stderr
