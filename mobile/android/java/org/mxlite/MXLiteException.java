package org.mxlite;

/**
 * A failure reported by the mxlite core. The message is the core's own
 * (MXGetLastError()): it names the file, node, input or parameter at fault.
 */
public class MXLiteException extends Exception {
  private static final long serialVersionUID = 1L;

  public MXLiteException(String message) {
    super(message);
  }
}
