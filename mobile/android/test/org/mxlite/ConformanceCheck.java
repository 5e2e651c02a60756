package org.mxlite;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Drives the Java API for tests/test_mobile_java.py. Each mode writes what
 * it computed to files or stdout; the Python test compares with MXNet 1.9.1.
 *
 * <pre>
 *   plan PLAN                         run the cases of a plan (see
 *                                     tests/mobile_support.py), same report
 *                                     as tests/c/conformance_main.c
 *   image PIXELS WIDTH HEIGHT OUT     ImageTensor on int32 ARGB pixels:
 *                                     OUT.gluon.f32 and OUT.bgr.f32
 *   reshape SYMBOL PARAMS NAME D0,.. INPUT OUT
 *                                     load with shape D0,.., reshape to batch
 *                                     1, run INPUT, write output 0 to OUT
 *   errors SYMBOL PARAMS NAME D0,..   print how misuse is reported
 *   options SYMBOL PARAMS NAME D0,.. INPUT OUT
 *                                     load with threads=2, run INPUT, write
 *                                     output 0 to OUT; then print how an
 *                                     unknown option and a bad value are
 *                                     reported
 * </pre>
 */
public final class ConformanceCheck {
  private static final PrintStream OUT = System.out;

  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "plan":
        System.exit(runPlan(args[1]));
        break;
      case "image":
        image(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]), args[4]);
        break;
      case "reshape":
        reshape(args[1], args[2], args[3], parseDims(args[4]), args[5], args[6]);
        break;
      case "errors":
        errors(args[1], args[2], args[3], parseDims(args[4]));
        break;
      case "options":
        options(args[1], args[2], args[3], parseDims(args[4]), args[5], args[6]);
        break;
      default:
        throw new IllegalArgumentException("unknown mode " + args[0]);
    }
  }

  private static final class Case {
    String name;
    String symbol;
    String params;
    String outputPrefix;
    final Map<String, int[]> shapes = new LinkedHashMap<>();
    final Map<String, String> inputFiles = new LinkedHashMap<>();
  }

  private static int runPlan(String planPath) throws IOException {
    int failures = 0;
    Case spec = new Case();
    try (BufferedReader reader = Files.newBufferedReader(Paths.get(planPath))) {
      for (String line = reader.readLine(); line != null; line = reader.readLine()) {
        String[] fields = line.trim().split(" ");
        switch (fields[0]) {
          case "case":
            spec = new Case();
            spec.name = fields[1];
            break;
          case "symbol":
            spec.symbol = fields[1];
            break;
          case "params":
            spec.params = fields[1];
            break;
          case "output":
            spec.outputPrefix = fields[1];
            break;
          case "input": {
            int ndim = Integer.parseInt(fields[3]);
            int[] dims = new int[ndim];
            for (int i = 0; i < ndim; ++i) dims[i] = Integer.parseInt(fields[4 + i]);
            spec.shapes.put(fields[1], dims);
            spec.inputFiles.put(fields[1], fields[2]);
            break;
          }
          case "dtype":
            throw new IllegalArgumentException("plan: the Java API takes float32 inputs only");
          case "run":
            failures += runCase(spec);
            break;
          case "":
            break;
          default:
            throw new IllegalArgumentException("plan: unknown directive " + fields[0]);
        }
      }
    }
    return Math.min(failures, 100);
  }

  private static int runCase(Case spec) throws IOException {
    byte[] symbol = Files.readAllBytes(Paths.get(spec.symbol));
    byte[] params = Files.readAllBytes(Paths.get(spec.params));
    try (Predictor predictor = Predictor.load(symbol, params, spec.shapes)) {
      for (Map.Entry<String, String> input : spec.inputFiles.entrySet()) {
        predictor.setInput(input.getKey(), readFloats(input.getValue()));
      }
      predictor.forward();
      int count = predictor.getOutputCount();
      OUT.println("case " + spec.name + " outputs " + count);
      for (int i = 0; i < count; ++i) {
        // The Java API hands every output out as float32 (dtype flag 0).
        StringBuilder line = new StringBuilder("output " + i + " dtype 0 shape");
        for (int d : predictor.getOutputShape(i)) line.append(' ').append(d);
        OUT.println(line);
        writeFloats(spec.outputPrefix + "." + i + ".bin", predictor.getOutput(i));
      }
      return 0;
    } catch (MXLiteException error) {
      OUT.println("case " + spec.name + " error: " + error.getMessage());
      return 1;
    }
  }

  private static void image(String pixelPath, int width, int height, String out)
      throws IOException {
    ByteBuffer bytes = ByteBuffer.wrap(Files.readAllBytes(Paths.get(pixelPath)))
        .order(ByteOrder.LITTLE_ENDIAN);
    int[] pixels = new int[bytes.remaining() / 4];
    bytes.asIntBuffer().get(pixels);
    writeFloats(out + ".gluon.f32", ImageTensor.fromArgbPixels(pixels, width, height,
        ImageTensor.IMAGENET_MEAN, ImageTensor.IMAGENET_STD));
    writeFloats(out + ".bgr.f32", ImageTensor.fromArgbPixels(pixels, width, height, 1.0f,
        new float[] {104.0f, 117.0f, 123.0f}, new float[] {1.0f, 1.0f, 1.0f}, true));
  }

  private static void reshape(String symbolPath, String paramsPath, String name, int[] dims,
                              String inputPath, String out) throws Exception {
    byte[] symbol = Files.readAllBytes(Paths.get(symbolPath));
    byte[] params = Files.readAllBytes(Paths.get(paramsPath));
    try (Predictor predictor = Predictor.load(symbol, params,
        Collections.singletonMap(name, dims))) {
      int[] single = dims.clone();
      single[0] = 1;
      predictor.reshape(Collections.singletonMap(name, single));
      predictor.setInput(name, readFloats(inputPath));
      predictor.forward();
      StringBuilder line = new StringBuilder("reshaped output shape");
      for (int d : predictor.getOutputShape(0)) line.append(' ').append(d);
      OUT.println(line);
      writeFloats(out, predictor.getOutput(0));
    }
  }

  /** Prints "what: ExceptionClass: message" for each kind of misuse. */
  private static void errors(String symbolPath, String paramsPath, String name, int[] dims)
      throws Exception {
    byte[] symbol = Files.readAllBytes(Paths.get(symbolPath));
    byte[] params = Files.readAllBytes(Paths.get(paramsPath));
    Map<String, int[]> shapes = Collections.singletonMap(name, dims);
    List<String> lines = new ArrayList<>();
    try {
      Predictor.load("{\"nodes\": [".getBytes(StandardCharsets.UTF_8), params, shapes);
      lines.add("bad_json: no exception");
    } catch (MXLiteException error) {
      lines.add("bad_json: MXLiteException: " + error.getMessage());
    }
    try {
      Predictor.load(symbol, params, Collections.singletonMap("no_such_input", dims));
      lines.add("unknown_input: no exception");
    } catch (MXLiteException error) {
      lines.add("unknown_input: MXLiteException: " + error.getMessage());
    }
    try {
      Predictor.load(symbol, params, Collections.singletonMap(name, new int[] {1, -3}));
      lines.add("negative_dim: no exception");
    } catch (IllegalArgumentException error) {
      lines.add("negative_dim: IllegalArgumentException: " + error.getMessage());
    }
    Predictor predictor = Predictor.load(symbol, params, shapes);
    try {
      predictor.setInput(name, new float[3]);
      lines.add("wrong_size: no exception");
    } catch (MXLiteException error) {
      lines.add("wrong_size: MXLiteException: " + error.getMessage());
    }
    try {
      predictor.getOutput(predictor.getOutputCount());
      lines.add("bad_index: no exception");
    } catch (MXLiteException error) {
      lines.add("bad_index: MXLiteException: " + error.getMessage());
    }
    predictor.close();
    predictor.close();  // a second close does nothing
    try {
      predictor.forward();
      lines.add("closed: no exception");
    } catch (IllegalStateException error) {
      lines.add("closed: IllegalStateException: " + error.getMessage());
    }
    for (String line : lines) OUT.println(line);
  }

  /**
   * Runs with options through Predictor.load(.., options) and prints
   * "what: ExceptionClass: message" for options the core must refuse.
   */
  private static void options(String symbolPath, String paramsPath, String name, int[] dims,
                              String inputPath, String out) throws Exception {
    byte[] symbol = Files.readAllBytes(Paths.get(symbolPath));
    byte[] params = Files.readAllBytes(Paths.get(paramsPath));
    Map<String, int[]> shapes = Collections.singletonMap(name, dims);
    Map<String, String> options = new LinkedHashMap<>();
    options.put("threads", "2");
    options.put("spin_ms", "0");
    List<String> lines = new ArrayList<>();
    try (Predictor predictor = Predictor.load(symbol, params, shapes, options)) {
      predictor.setInput(name, readFloats(inputPath));
      predictor.forward();
      writeFloats(out, predictor.getOutput(0));
      lines.add("threads_2: ran");
    }
    lines.add(refusal("unknown_option", symbol, params, shapes,
        Collections.singletonMap("no_such_option", "1")));
    lines.add(refusal("bad_value", symbol, params, shapes,
        Collections.singletonMap("threads", "lots")));
    try {
      Predictor.load(symbol, params, shapes, null);
      lines.add("null_options: no exception");
    } catch (NullPointerException error) {
      lines.add("null_options: NullPointerException: " + error.getMessage());
    }
    for (String line : lines) OUT.println(line);
  }

  private static String refusal(String what, byte[] symbol, byte[] params,
                                Map<String, int[]> shapes, Map<String, String> options) {
    try {
      Predictor.load(symbol, params, shapes, options).close();
      return what + ": no exception";
    } catch (MXLiteException error) {
      return what + ": MXLiteException: " + error.getMessage();
    }
  }

  private static int[] parseDims(String text) {
    String[] parts = text.split(",");
    int[] dims = new int[parts.length];
    for (int i = 0; i < parts.length; ++i) dims[i] = Integer.parseInt(parts[i]);
    return dims;
  }

  private static float[] readFloats(String path) throws IOException {
    ByteBuffer bytes = ByteBuffer.wrap(Files.readAllBytes(Paths.get(path)))
        .order(ByteOrder.LITTLE_ENDIAN);
    float[] values = new float[bytes.remaining() / 4];
    bytes.asFloatBuffer().get(values);
    return values;
  }

  private static void writeFloats(String path, float[] values) throws IOException {
    ByteBuffer bytes = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    bytes.asFloatBuffer().put(values);
    Files.write(Paths.get(path), bytes.array());
  }

  private ConformanceCheck() {}
}
