/*
 * JNI layer of org.mxlite.Predictor: Java arrays in, C predict API calls,
 * Java arrays out. It uses nothing but c_predict_api.h and mxlite.h (for
 * MXLitePredCreateWithOptions), so it links against any build of the one
 * file (Android, Debian cross builds, the host JVM).
 *
 * Inputs are float32, as MXPredCreate makes them. Outputs come out of the
 * core in their own type (MXPredGetOutputType) and are converted to Java
 * floats here.
 *
 * Every failure of the core becomes org.mxlite.MXLiteException carrying
 * MXGetLastError()'s message. A native method that has thrown returns at
 * once with a dummy value, which the JVM ignores.
 */
#include <jni.h>

#include <cstdint>
#include <string>
#include <vector>

#include "c_predict_api.h"
#include "mxlite.h"
#include "mxlite_output_float.h"

namespace mxlite_jni {

void ThrowMXLiteException(JNIEnv* env, const std::string& message) {
  jclass type = env->FindClass("org/mxlite/MXLiteException");
  if (type != nullptr) env->ThrowNew(type, message.c_str());
}

// Throws the core's last error when `status` is non-zero; returns whether
// it did.
bool ThrowIfFailed(JNIEnv* env, int status) {
  if (status == 0) return false;
  ThrowMXLiteException(env, MXGetLastError());
  return true;
}

// Input names and shapes in the C API's layout (keys, indptr, data).
struct InputShapes {
  std::vector<std::string> names;
  std::vector<const char*> keys;
  std::vector<mx_uint> indptr{0};
  std::vector<mx_uint> dims;
};

// Reads String[] names and int[][] shapes (validated by the Java side).
// Returns false with a Java exception pending on failure.
bool ReadInputShapes(JNIEnv* env, jobjectArray names, jobjectArray shapes, InputShapes* out) {
  const jsize count = env->GetArrayLength(names);
  for (jsize i = 0; i < count; ++i) {
    jstring name = static_cast<jstring>(env->GetObjectArrayElement(names, i));
    jintArray shape = static_cast<jintArray>(env->GetObjectArrayElement(shapes, i));
    if (name == nullptr || shape == nullptr) {
      ThrowMXLiteException(env, "input names and shapes must not be null");
      return false;
    }
    const char* utf = env->GetStringUTFChars(name, nullptr);
    if (utf == nullptr) return false;  // OutOfMemoryError pending
    out->names.emplace_back(utf);
    env->ReleaseStringUTFChars(name, utf);
    const jsize ndim = env->GetArrayLength(shape);
    std::vector<jint> dims(static_cast<size_t>(ndim));
    env->GetIntArrayRegion(shape, 0, ndim, dims.data());
    for (jint d : dims) out->dims.push_back(static_cast<mx_uint>(d));
    out->indptr.push_back(static_cast<mx_uint>(out->dims.size()));
    env->DeleteLocalRef(name);
    env->DeleteLocalRef(shape);
  }
  for (const std::string& name : out->names) out->keys.push_back(name.c_str());
  if (out->dims.empty()) out->dims.push_back(0);  // never read; keeps data() non-null
  return true;
}

PredictorHandle AsHandle(jlong handle) {
  return reinterpret_cast<PredictorHandle>(static_cast<intptr_t>(handle));
}

jlong AsJLong(PredictorHandle handle) {
  return static_cast<jlong>(reinterpret_cast<intptr_t>(handle));
}

// Runtime option names and values (String[] each, same length, checked by
// the Java side) as the C strings MXLitePredCreateWithOptions takes.
struct Options {
  std::vector<std::string> names;
  std::vector<std::string> values;
  std::vector<const char*> name_ptrs;
  std::vector<const char*> value_ptrs;
};

// Copies a Java string; returns false with a Java exception pending.
bool ReadString(JNIEnv* env, jstring text, std::string* out) {
  if (text == nullptr) {
    ThrowMXLiteException(env, "option names and values must not be null");
    return false;
  }
  const char* utf = env->GetStringUTFChars(text, nullptr);
  if (utf == nullptr) return false;  // OutOfMemoryError pending
  out->assign(utf);
  env->ReleaseStringUTFChars(text, utf);
  return true;
}

// Reads String[] names and String[] values (either may be null: no
// options). Returns false with a Java exception pending on failure.
bool ReadOptions(JNIEnv* env, jobjectArray names, jobjectArray values, Options* out) {
  if (names == nullptr || values == nullptr) return true;
  const jsize count = env->GetArrayLength(names);
  if (env->GetArrayLength(values) != count) {
    ThrowMXLiteException(env, "option names and values differ in number");
    return false;
  }
  out->names.resize(static_cast<size_t>(count));
  out->values.resize(static_cast<size_t>(count));
  for (jsize i = 0; i < count; ++i) {
    jstring name = static_cast<jstring>(env->GetObjectArrayElement(names, i));
    jstring value = static_cast<jstring>(env->GetObjectArrayElement(values, i));
    const bool ok = ReadString(env, name, &out->names[static_cast<size_t>(i)]) &&
                    ReadString(env, value, &out->values[static_cast<size_t>(i)]);
    if (name != nullptr) env->DeleteLocalRef(name);
    if (value != nullptr) env->DeleteLocalRef(value);
    if (!ok) return false;
  }
  for (const std::string& name : out->names) out->name_ptrs.push_back(name.c_str());
  for (const std::string& value : out->values) out->value_ptrs.push_back(value.c_str());
  return true;
}

}  // namespace mxlite_jni

extern "C" {

// option_names/option_values null: MXPredCreate's behaviour (the
// environment's settings); otherwise MXLitePredCreateWithOptions with one
// handle, all outputs.
JNIEXPORT jlong JNICALL Java_org_mxlite_Predictor_nativeCreate(JNIEnv* env, jclass,
                                                               jbyteArray symbol_json,
                                                               jbyteArray params,
                                                               jobjectArray names,
                                                               jobjectArray shapes,
                                                               jobjectArray option_names,
                                                               jobjectArray option_values) {
  using namespace mxlite_jni;
  InputShapes inputs;
  if (!ReadInputShapes(env, names, shapes, &inputs)) return 0;
  Options options;
  if (!ReadOptions(env, option_names, option_values, &options)) return 0;
  // MXPredCreate reads the JSON as a C string: copy it with a terminating
  // NUL (MXNet's JNI layer passed the Java bytes without one).
  const jsize json_size = env->GetArrayLength(symbol_json);
  std::vector<char> json(static_cast<size_t>(json_size) + 1, '\0');
  env->GetByteArrayRegion(symbol_json, 0, json_size, reinterpret_cast<jbyte*>(json.data()));
  const jsize params_size = env->GetArrayLength(params);
  std::vector<char> param_bytes(static_cast<size_t>(params_size));
  env->GetByteArrayRegion(params, 0, params_size, reinterpret_cast<jbyte*>(param_bytes.data()));

  PredictorHandle handle = nullptr;
  int status = 0;
  if (option_names == nullptr) {
    status = MXPredCreate(json.data(), param_bytes.data(), static_cast<int>(params_size), 1, 0,
                          static_cast<mx_uint>(inputs.keys.size()), inputs.keys.data(),
                          inputs.indptr.data(), inputs.dims.data(), &handle);
  } else {
    status = MXLitePredCreateWithOptions(
        json.data(), param_bytes.data(), static_cast<int>(params_size), 1, 0,
        static_cast<mx_uint>(inputs.keys.size()), inputs.keys.data(), inputs.indptr.data(),
        inputs.dims.data(), 0, nullptr, static_cast<mx_uint>(options.name_ptrs.size()),
        options.name_ptrs.data(), options.value_ptrs.data(), 1, &handle);
  }
  if (ThrowIfFailed(env, status)) return 0;
  return AsJLong(handle);
}

JNIEXPORT jlong JNICALL Java_org_mxlite_Predictor_nativeReshape(JNIEnv* env, jclass,
                                                                jlong handle,
                                                                jobjectArray names,
                                                                jobjectArray shapes) {
  using namespace mxlite_jni;
  InputShapes inputs;
  if (!ReadInputShapes(env, names, shapes, &inputs)) return 0;
  PredictorHandle reshaped = nullptr;
  const int status = MXPredReshape(static_cast<mx_uint>(inputs.keys.size()), inputs.keys.data(),
                                   inputs.indptr.data(), inputs.dims.data(), AsHandle(handle),
                                   &reshaped);
  if (ThrowIfFailed(env, status)) return 0;
  return AsJLong(reshaped);
}

JNIEXPORT void JNICALL Java_org_mxlite_Predictor_nativeSetInput(JNIEnv* env, jclass,
                                                                jlong handle, jstring name,
                                                                jfloatArray data) {
  using namespace mxlite_jni;
  const char* key = env->GetStringUTFChars(name, nullptr);
  if (key == nullptr) return;
  const jsize size = env->GetArrayLength(data);
  // Critical access avoids copying a large input; nothing between Get and
  // Release calls back into the JVM.
  void* values = env->GetPrimitiveArrayCritical(data, nullptr);
  int status = -1;
  if (values != nullptr) {
    status = MXPredSetInput(AsHandle(handle), key, static_cast<const mx_float*>(values),
                            static_cast<mx_uint>(size));
    env->ReleasePrimitiveArrayCritical(data, values, JNI_ABORT);
  }
  env->ReleaseStringUTFChars(name, key);
  if (values != nullptr) ThrowIfFailed(env, status);
}

JNIEXPORT void JNICALL Java_org_mxlite_Predictor_nativeForward(JNIEnv* env, jclass,
                                                               jlong handle) {
  mxlite_jni::ThrowIfFailed(env, MXPredForward(mxlite_jni::AsHandle(handle)));
}

JNIEXPORT jint JNICALL Java_org_mxlite_Predictor_nativeOutputCount(JNIEnv*, jclass,
                                                                   jlong handle) {
  // The C API has no count: outputs are numbered from 0 until the index is
  // refused.
  mx_uint* shape = nullptr;
  mx_uint ndim = 0;
  jint count = 0;
  while (MXPredGetOutputShape(mxlite_jni::AsHandle(handle), static_cast<mx_uint>(count), &shape,
                              &ndim) == 0) {
    ++count;
  }
  return count;
}

JNIEXPORT jintArray JNICALL Java_org_mxlite_Predictor_nativeGetOutputShape(JNIEnv* env, jclass,
                                                                          jlong handle,
                                                                          jint index) {
  using namespace mxlite_jni;
  mx_uint* shape = nullptr;
  mx_uint ndim = 0;
  if (ThrowIfFailed(env, MXPredGetOutputShape(AsHandle(handle), static_cast<mx_uint>(index),
                                              &shape, &ndim))) {
    return nullptr;
  }
  std::vector<jint> dims(shape, shape + ndim);
  jintArray result = env->NewIntArray(static_cast<jsize>(ndim));
  if (result != nullptr) env->SetIntArrayRegion(result, 0, static_cast<jsize>(ndim), dims.data());
  return result;
}

JNIEXPORT jfloatArray JNICALL Java_org_mxlite_Predictor_nativeGetOutput(JNIEnv* env, jclass,
                                                                       jlong handle,
                                                                       jint index) {
  using namespace mxlite_jni;
  mx_uint* shape = nullptr;
  mx_uint ndim = 0;
  if (ThrowIfFailed(env, MXPredGetOutputShape(AsHandle(handle), static_cast<mx_uint>(index),
                                              &shape, &ndim))) {
    return nullptr;
  }
  size_t size = 1;
  for (mx_uint i = 0; i < ndim; ++i) size *= shape[i];
  int dtype = -1;
  if (ThrowIfFailed(env, MXPredGetOutputType(AsHandle(handle), static_cast<mx_uint>(index),
                                             &dtype))) {
    return nullptr;
  }
  const size_t width = mxlite_element_size(dtype);
  if (width == 0) {
    ThrowMXLiteException(env, "output " + std::to_string(index) + " has element type flag " +
                                  std::to_string(dtype) + ", which Java cannot receive");
    return nullptr;
  }
  // MXPredGetOutput writes `size` elements of the output's own type.
  std::vector<unsigned char> raw(size * width);
  if (ThrowIfFailed(env, MXPredGetOutput(AsHandle(handle), static_cast<mx_uint>(index),
                                         reinterpret_cast<mx_float*>(raw.data()),
                                         static_cast<mx_uint>(size)))) {
    return nullptr;
  }
  std::vector<float> values(size);
  mxlite_output_to_float(dtype, raw.data(), size, values.data());
  jfloatArray result = env->NewFloatArray(static_cast<jsize>(size));
  if (result != nullptr) {
    env->SetFloatArrayRegion(result, 0, static_cast<jsize>(size), values.data());
  }
  return result;
}

JNIEXPORT void JNICALL Java_org_mxlite_Predictor_nativeFree(JNIEnv*, jclass, jlong handle) {
  MXPredFree(mxlite_jni::AsHandle(handle));
}

}  // extern "C"
