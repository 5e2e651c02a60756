package org.mxlite;

import java.util.Map;

/**
 * Runs an MXNet checkpoint (symbol JSON + params) with mxlite, through the C
 * predict API.
 *
 * <pre>{@code
 * Map<String, int[]> shapes = Collections.singletonMap("data", new int[] {1, 3, 224, 224});
 * try (Predictor predictor = Predictor.load(symbolJson, params, shapes)) {
 *   predictor.setInput("data", ImageTensor.fromArgbPixels(pixels, width, height,
 *       ImageTensor.IMAGENET_MEAN, ImageTensor.IMAGENET_STD));
 *   predictor.forward();
 *   float[] scores = predictor.getOutput(0);
 * }
 * }</pre>
 *
 * A predictor is not thread-safe: use one per thread (they may load the same
 * bytes). Every failure of the core becomes an {@link MXLiteException} with
 * the core's message; misuse of the Java API itself (a closed predictor, a
 * negative dimension) throws the usual unchecked exceptions.
 */
public final class Predictor implements AutoCloseable {
  static {
    System.loadLibrary("mxlite_jni");
  }

  /** The C predictor handle; 0 once closed. */
  private long handle;

  private Predictor(long handle) {
    this.handle = handle;
  }

  /**
   * Creates a predictor.
   *
   * @param symbolJson the bytes of {@code prefix-symbol.json} (UTF-8)
   * @param params the bytes of {@code prefix-0000.params}
   * @param inputShapes the shape of every input, by name (e.g. "data")
   */
  public static Predictor load(byte[] symbolJson, byte[] params, Map<String, int[]> inputShapes)
      throws MXLiteException {
    return create(symbolJson, params, inputShapes, null);
  }

  /**
   * Creates a predictor with runtime options, by name, as strings (the names
   * and values of docs/options.md, e.g. {@code "threads" -> "2"},
   * {@code "memory_budget" -> "256M"}, {@code "spin_ms" -> "0"}). They
   * override the process environment's MXLITE_* settings for this predictor.
   * An unknown name or a bad value throws an {@link MXLiteException} naming
   * it.
   *
   * <pre>{@code
   * Map<String, String> options = new HashMap<>();
   * options.put("threads", "2");
   * options.put("spin_ms", "0");  // idle threads sleep at once: saves battery
   * Predictor predictor = Predictor.load(symbolJson, params, shapes, options);
   * }</pre>
   *
   * @param options option name to value; applied in the map's iteration
   *     order (use a LinkedHashMap where order matters); empty: the defaults
   */
  public static Predictor load(byte[] symbolJson, byte[] params, Map<String, int[]> inputShapes,
                               Map<String, String> options) throws MXLiteException {
    if (options == null) {
      throw new NullPointerException("options must not be null (use the 3-argument load)");
    }
    return create(symbolJson, params, inputShapes, options);
  }

  /** options null: MXPredCreate (the environment's settings only). */
  private static Predictor create(byte[] symbolJson, byte[] params,
                                  Map<String, int[]> inputShapes, Map<String, String> options)
      throws MXLiteException {
    if (symbolJson == null || params == null) {
      throw new NullPointerException("symbolJson and params must not be null");
    }
    String[] names = new String[inputShapes.size()];
    int[][] shapes = new int[names.length][];
    flattenShapes(inputShapes, names, shapes);
    String[] optionNames = null;
    String[] optionValues = null;
    if (options != null) {
      optionNames = new String[options.size()];
      optionValues = new String[optionNames.length];
      int i = 0;
      for (Map.Entry<String, String> entry : options.entrySet()) {
        if (entry.getKey() == null || entry.getValue() == null) {
          throw new NullPointerException("option names and values must not be null");
        }
        optionNames[i] = entry.getKey();
        optionValues[i] = entry.getValue();
        ++i;
      }
    }
    return new Predictor(nativeCreate(symbolJson, params, names, shapes, optionNames,
                                      optionValues));
  }

  /**
   * Sets input {@code name}; {@code data} holds exactly as many elements as
   * the input's shape (row-major). Inputs are float32 (a symbol that types
   * an input otherwise needs the C API's MXPredCreateEx).
   */
  public void setInput(String name, float[] data) throws MXLiteException {
    if (name == null || data == null) {
      throw new NullPointerException("name and data must not be null");
    }
    nativeSetInput(checkedHandle(), name, data);
  }

  /** Runs the network on the inputs set so far. */
  public void forward() throws MXLiteException {
    nativeForward(checkedHandle());
  }

  /** The number of outputs of the network. */
  public int getOutputCount() {
    return nativeOutputCount(checkedHandle());
  }

  /** The shape of output {@code index}. */
  public int[] getOutputShape(int index) throws MXLiteException {
    return nativeGetOutputShape(checkedHandle(), index);
  }

  /**
   * A copy of output {@code index} after {@link #forward()}, row-major. An
   * output of another element type (float16, float64, integers: an argmax or
   * a Cast) comes back converted to float.
   */
  public float[] getOutput(int index) throws MXLiteException {
    return nativeGetOutput(checkedHandle(), index);
  }

  /**
   * Changes the input shapes (for example the batch size). The weights are
   * kept; inputs must be set again before the next {@link #forward()}.
   */
  public void reshape(Map<String, int[]> inputShapes) throws MXLiteException {
    String[] names = new String[inputShapes.size()];
    int[][] shapes = new int[names.length][];
    flattenShapes(inputShapes, names, shapes);
    long reshaped = nativeReshape(checkedHandle(), names, shapes);
    nativeFree(handle);
    handle = reshaped;
  }

  /** Frees the native predictor; calling it again does nothing. */
  @Override
  public void close() {
    if (handle != 0) {
      nativeFree(handle);
      handle = 0;
    }
  }

  private long checkedHandle() {
    if (handle == 0) {
      throw new IllegalStateException("the predictor is closed");
    }
    return handle;
  }

  private static void flattenShapes(Map<String, int[]> inputShapes, String[] names,
                                    int[][] shapes) {
    int i = 0;
    for (Map.Entry<String, int[]> entry : inputShapes.entrySet()) {
      int[] shape = entry.getValue();
      if (entry.getKey() == null || shape == null) {
        throw new NullPointerException("input names and shapes must not be null");
      }
      for (int dim : shape) {
        if (dim <= 0) {
          throw new IllegalArgumentException(
              "input '" + entry.getKey() + "': dimensions must be positive");
        }
      }
      names[i] = entry.getKey();
      shapes[i] = shape.clone();
      ++i;
    }
  }

  /** optionNames and optionValues: both null for MXPredCreate. */
  private static native long nativeCreate(byte[] symbolJson, byte[] params, String[] names,
                                          int[][] shapes, String[] optionNames,
                                          String[] optionValues) throws MXLiteException;

  private static native long nativeReshape(long handle, String[] names, int[][] shapes)
      throws MXLiteException;

  private static native void nativeSetInput(long handle, String name, float[] data)
      throws MXLiteException;

  private static native void nativeForward(long handle) throws MXLiteException;

  private static native int nativeOutputCount(long handle);

  private static native int[] nativeGetOutputShape(long handle, int index)
      throws MXLiteException;

  private static native float[] nativeGetOutput(long handle, int index) throws MXLiteException;

  private static native void nativeFree(long handle);
}
