/*
 * The environment, read at the API boundary and nowhere else.
 *
 * Every MXLITE_* variable that changes the runtime's behaviour is read here,
 * by the front ends (the C API, the Python module) when a predictor or the
 * first array is made, and passed down as RuntimeOptions and ProcessOptions
 * (base/options.h). Code below the boundary never calls getenv, so a
 * setting can also come from the caller's arguments, and tests switch
 * options in one process.
 */
#ifndef MXLITE_C_API_ENVIRONMENT_H_
#define MXLITE_C_API_ENVIRONMENT_H_

#include "../base/options.h"

namespace mxlite {

// The per-predictor options as the environment sets them (the variables of
// kRuntimeOptionList), defaults elsewhere. A variable set to a value its
// option refuses is an error naming the variable.
Status OptionsFromEnvironment(RuntimeOptions* options);

// Applies MXLITE_ISA, MXLITE_ENGINE and MXLITE_ENGINE_THREADS to the process
// the first time it is called; later calls return the first call's result.
Status ApplyProcessEnvironment();

}  // namespace mxlite

#endif  // MXLITE_C_API_ENVIRONMENT_H_
