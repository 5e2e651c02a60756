// mxlite in JavaScript: the API module that `make wasm` builds
// (build/wasm/mxlite.wasm, wasm32-wasi, exporting the C predict API and
// malloc/free), loaded in a browser or in Node.
//
//   import { loadMXLite } from './mxlite.js';
//   const mxlite = await loadMXLite(await (await fetch('mxlite.wasm')).arrayBuffer());
//   const predictor = mxlite.createPredictor(symbolJsonText, paramsArrayBuffer,
//                                            { data: [1, 3, 224, 224] });
//   predictor.setInput('data', float32Array);
//   predictor.forward();
//   const { shape, data } = predictor.getOutput(0);
//   predictor.free();
//
// Runtime options (docs/options.md) go in a fourth argument, a plain object
// of name -> string or number; in WebAssembly there is one thread, so the
// useful ones are memory_budget, graph_optimization, winograd and profile:
//
//   mxlite.createPredictor(json, params, shapes, { memory_budget: '256M' });
//
// Failures of the core throw an Error whose message is MXGetLastError().
// The module needs only a handful of WASI calls (environment, clock,
// writing to stdout/stderr); the small shim below provides them, so no
// WASI polyfill library is needed.

const WASI_ERRNO_BADF = 8;
const WASI_ERRNO_NOSYS = 52;

class WasiExit extends Error {
  constructor(code) {
    super(`mxlite called proc_exit(${code})`);
    this.code = code;
  }
}

function makeWasiShim(getMemory) {
  const view = () => new DataView(getMemory().buffer);
  const lineBuffers = { 1: '', 2: '' };
  const decoder = new TextDecoder();
  return {
    environ_sizes_get(countPtr, sizePtr) {
      view().setUint32(countPtr, 0, true);
      view().setUint32(sizePtr, 0, true);
      return 0;
    },
    environ_get() {
      return 0;
    },
    clock_time_get(clockId, precision, timePtr) {
      const nanoseconds = BigInt(Math.round(performance.now() * 1e6));
      view().setBigUint64(timePtr, nanoseconds, true);
      return 0;
    },
    fd_write(fd, iovecs, iovecCount, writtenPtr) {
      if (fd !== 1 && fd !== 2) return WASI_ERRNO_BADF;
      const memory = view();
      let written = 0;
      for (let i = 0; i < iovecCount; ++i) {
        const base = memory.getUint32(iovecs + 8 * i, true);
        const length = memory.getUint32(iovecs + 8 * i + 4, true);
        lineBuffers[fd] += decoder.decode(new Uint8Array(getMemory().buffer, base, length));
        written += length;
      }
      // Print whole lines, as a terminal would.
      const lines = lineBuffers[fd].split('\n');
      lineBuffers[fd] = lines.pop();
      for (const line of lines) (fd === 1 ? console.log : console.error)(line);
      memory.setUint32(writtenPtr, written, true);
      return 0;
    },
    fd_close() {
      return WASI_ERRNO_BADF;
    },
    fd_seek() {
      return WASI_ERRNO_NOSYS;
    },
    proc_exit(code) {
      throw new WasiExit(code);
    },
  };
}

export async function loadMXLite(wasmBytes) {
  let memory = null;
  const imports = { wasi_snapshot_preview1: makeWasiShim(() => memory) };
  const { instance } = await WebAssembly.instantiate(wasmBytes, imports);
  const api = instance.exports;
  memory = api.memory;
  api._initialize();
  return new MXLite(api);
}

// Allocations in the module's memory, freed together.
class Scratch {
  constructor(api) {
    this.api = api;
    this.addresses = [];
  }

  alloc(bytes) {
    const address = this.api.malloc(Math.max(bytes, 1));
    if (address === 0) throw new Error('mxlite: out of WebAssembly memory');
    this.addresses.push(address);
    return address;
  }

  bytes(data) {
    const address = this.alloc(data.length);
    new Uint8Array(this.api.memory.buffer, address, data.length).set(data);
    return address;
  }

  cString(text) {
    const encoded = new TextEncoder().encode(text);
    const withNul = new Uint8Array(encoded.length + 1);
    withNul.set(encoded);
    return this.bytes(withNul);
  }

  uint32s(values) {
    const address = this.alloc(4 * Math.max(values.length, 1));
    new Uint32Array(this.api.memory.buffer, address, values.length).set(values);
    return address;
  }

  free() {
    for (const address of this.addresses) this.api.free(address);
    this.addresses = [];
  }
}

export class MXLite {
  constructor(api) {
    this.api = api;
  }

  lastError() {
    const address = this.api.MXGetLastError();
    const bytes = new Uint8Array(this.api.memory.buffer, address);
    return new TextDecoder().decode(bytes.subarray(0, bytes.indexOf(0)));
  }

  check(status) {
    if (status !== 0) throw new Error(this.lastError());
  }

  // symbolJson: the text of prefix-symbol.json; params: the bytes of
  // prefix-0000.params (ArrayBuffer or Uint8Array); inputShapes:
  // { name: [d0, d1, ...] }; options (optional): { name: value, ... },
  // values strings or numbers, passed to MXLitePredCreateWithOptions (an
  // unknown name or a bad value throws the core's message naming it).
  // Without options MXPredCreate is called, as before.
  createPredictor(symbolJson, params, inputShapes, options) {
    const optionEntries = optionList(options);
    const scratch = new Scratch(this.api);
    try {
      const names = Object.keys(inputShapes);
      const indptr = [0];
      const dims = [];
      for (const name of names) {
        dims.push(...inputShapes[name]);
        indptr.push(dims.length);
      }
      const paramBytes = params instanceof Uint8Array ? params : new Uint8Array(params);
      const handleOut = scratch.uint32s([0]);
      const symbol = scratch.cString(symbolJson);
      const paramAddress = scratch.bytes(paramBytes);
      const keys = scratch.uint32s(names.map((name) => scratch.cString(name)));
      if (optionEntries === null) {
        this.check(this.api.MXPredCreate(
            symbol, paramAddress, paramBytes.length, 1, 0, names.length, keys,
            scratch.uint32s(indptr), scratch.uint32s(dims), handleOut));
      } else {
        // One handle, every output of the symbol.
        this.check(this.api.MXLitePredCreateWithOptions(
            symbol, paramAddress, paramBytes.length, 1, 0, names.length, keys,
            scratch.uint32s(indptr), scratch.uint32s(dims), 0, 0, optionEntries.length,
            scratch.uint32s(optionEntries.map(([name]) => scratch.cString(name))),
            scratch.uint32s(optionEntries.map(([, value]) => scratch.cString(value))), 1,
            handleOut));
      }
      const handle = new Uint32Array(this.api.memory.buffer, handleOut, 1)[0];
      return new Predictor(this, handle);
    } finally {
      scratch.free();
    }
  }
}

// Options as [name, string value] pairs, or null for none given. Numbers
// and booleans become their decimal text (true: 1); anything else (an
// object, undefined) is refused here by name, before the core sees it.
function optionList(options) {
  if (options === undefined || options === null) return null;
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError('mxlite: options must be a plain object of name: value');
  }
  return Object.entries(options).map(([name, value]) => {
    if (typeof value === 'string') return [name, value];
    if (typeof value === 'number' && Number.isFinite(value)) return [name, String(value)];
    if (typeof value === 'boolean') return [name, value ? '1' : '0'];
    throw new TypeError(`mxlite: option '${name}' must be a string or a number, ` +
                        `not ${value === null ? 'null' : typeof value}`);
  });
}

export class Predictor {
  constructor(mxlite, handle) {
    this.mxlite = mxlite;
    this.api = mxlite.api;
    this.handle = handle;
  }

  setInput(name, values) {
    const scratch = new Scratch(this.api);
    try {
      const floats = values instanceof Float32Array ? values : Float32Array.from(values);
      const address = scratch.alloc(floats.byteLength);
      new Float32Array(this.api.memory.buffer, address, floats.length).set(floats);
      this.mxlite.check(this.api.MXPredSetInput(this.handle, scratch.cString(name), address,
                                                floats.length));
    } finally {
      scratch.free();
    }
  }

  forward() {
    this.mxlite.check(this.api.MXPredForward(this.handle));
  }

  getOutputShape(index) {
    const scratch = new Scratch(this.api);
    try {
      const shapeOut = scratch.uint32s([0]);
      const ndimOut = scratch.uint32s([0]);
      this.mxlite.check(this.api.MXPredGetOutputShape(this.handle, index, shapeOut, ndimOut));
      const memory = this.api.memory.buffer;
      const ndim = new Uint32Array(memory, ndimOut, 1)[0];
      const shapeAddress = new Uint32Array(memory, shapeOut, 1)[0];
      return Array.from(new Uint32Array(memory, shapeAddress, ndim));
    } finally {
      scratch.free();
    }
  }

  // Output `index` after forward(): { shape, dtype, data }, data a fresh
  // typed array (row-major) of the output's own type: Float32Array for
  // float32 and float16 (converted), Float64Array, Uint8Array, Int32Array,
  // Int8Array or BigInt64Array.
  getOutput(index) {
    const shape = this.getOutputShape(index);
    const size = shape.reduce((a, b) => a * b, 1);
    const scratch = new Scratch(this.api);
    try {
      const typeOut = scratch.uint32s([0]);
      this.mxlite.check(this.api.MXPredGetOutputType(this.handle, index, typeOut));
      const flag = new Int32Array(this.api.memory.buffer, typeOut, 1)[0];
      const dtype = OUTPUT_TYPES[flag];
      if (!dtype) throw new Error(`output ${index} has unknown element type flag ${flag}`);
      // MXPredGetOutput writes `size` elements of the output's own type.
      const address = scratch.alloc(dtype.array.BYTES_PER_ELEMENT * size);
      this.mxlite.check(this.api.MXPredGetOutput(this.handle, index, address, size));
      const raw = new dtype.array(this.api.memory.buffer, address, size).slice();
      const data = dtype.name === 'float16' ? Float32Array.from(raw, halfToFloat) : raw;
      return { shape, dtype: dtype.name, data };
    } finally {
      scratch.free();
    }
  }

  free() {
    if (this.handle !== 0) {
      this.api.MXPredFree(this.handle);
      this.handle = 0;
    }
  }
}

// Element types by mshadow flag, as MXPredGetOutputType reports them.
const OUTPUT_TYPES = {
  0: { name: 'float32', array: Float32Array },
  1: { name: 'float64', array: Float64Array },
  2: { name: 'float16', array: Uint16Array },
  3: { name: 'uint8', array: Uint8Array },
  4: { name: 'int32', array: Int32Array },
  5: { name: 'int8', array: Int8Array },
  6: { name: 'int64', array: BigInt64Array },
};

// IEEE half-precision bits to a number.
function halfToFloat(bits) {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0x1f) return mantissa ? NaN : sign * Infinity;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

// ImageNet-style input from canvas pixels (ImageData.data: RGBA bytes, row
// after row): planar RGB floats, (value / 255 - mean[c]) / std[c].
export function imageToTensor(rgba, width, height,
                              mean = [0.485, 0.456, 0.406], std = [0.229, 0.224, 0.225]) {
  const plane = width * height;
  const tensor = new Float32Array(3 * plane);
  for (let c = 0; c < 3; ++c) {
    for (let i = 0; i < plane; ++i) {
      tensor[c * plane + i] = (rgba[4 * i + c] / 255 - mean[c]) / std[c];
    }
  }
  return tensor;
}
