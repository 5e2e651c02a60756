package org.mxlite;

/**
 * Turns a camera or bitmap image into the input tensor an image network
 * expects: planar (channel, row, column) float32, each value
 * {@code (pixel * scale - mean[c]) / std[c]}.
 *
 * <p>Pixels come as Android's {@code Bitmap.getPixels} gives them: one
 * {@code int} per pixel, 0xAARRGGBB, row after row, {@code width} pixels a
 * row. (Call {@code bitmap.getPixels(pixels, 0, width, 0, 0, width, height)};
 * the stride is the width, and a non-square image keeps its width and height
 * apart.) Alpha is ignored.
 */
public final class ImageTensor {
  /** Gluon model-zoo normalisation, applied after {@link #UNIT_SCALE}. */
  public static final float[] IMAGENET_MEAN = {0.485f, 0.456f, 0.406f};
  public static final float[] IMAGENET_STD = {0.229f, 0.224f, 0.225f};
  /** Maps 0..255 to 0..1. */
  public static final float UNIT_SCALE = 1.0f / 255.0f;

  private ImageTensor() {}

  /**
   * Gluon-style input: pixels scaled to 0..1, then {@code (x - mean) / std}
   * per channel. Returns {@code 3 * height * width} floats: the red plane,
   * then green, then blue.
   */
  public static float[] fromArgbPixels(int[] pixels, int width, int height, float[] mean,
                                       float[] std) {
    return fromArgbPixels(pixels, width, height, UNIT_SCALE, mean, std, false);
  }

  /**
   * The general form.
   *
   * @param scale multiplies each 0..255 channel value first (1 keeps 0..255,
   *     as older MXNet models trained on mean-subtracted pixels expect)
   * @param mean per channel, in output order
   * @param std per channel, in output order (all 1 for none)
   * @param bgr output planes in blue, green, red order (Caffe-converted models)
   */
  public static float[] fromArgbPixels(int[] pixels, int width, int height, float scale,
                                       float[] mean, float[] std, boolean bgr) {
    if (width <= 0 || height <= 0) {
      throw new IllegalArgumentException("width and height must be positive, got " + width
          + "x" + height);
    }
    int plane = width * height;
    if (pixels.length != plane) {
      throw new IllegalArgumentException("expected width*height = " + plane + " pixels, got "
          + pixels.length);
    }
    if (mean.length != 3 || std.length != 3) {
      throw new IllegalArgumentException("mean and std need 3 values each");
    }
    float[] tensor = new float[3 * plane];
    // Shifts that pick red, green and blue out of 0xAARRGGBB, in output order.
    int[] shifts = bgr ? new int[] {0, 8, 16} : new int[] {16, 8, 0};
    for (int channel = 0; channel < 3; ++channel) {
      int shift = shifts[channel];
      float offset = mean[channel];
      float inverseStd = 1.0f / std[channel];
      int base = channel * plane;
      for (int i = 0; i < plane; ++i) {
        int value = (pixels[i] >> shift) & 0xff;
        tensor[base + i] = (value * scale - offset) * inverseStd;
      }
    }
    return tensor;
  }
}
