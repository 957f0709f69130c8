package cdclake.jvm;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/** Strict UTF-8, as Python's decoder reads it: no overlong forms, no surrogates, at most U+10FFFF. */
final class Utf8 {
    /** Eight bytes of an array read as one long (any index): ASCII runs are checked a word at a time. */
    private static final VarHandle WORDS = MethodHandles.byteArrayViewVarHandle(long[].class,
            ByteOrder.LITTLE_ENDIAN);
    private static final long HIGH_BITS = 0x8080808080808080L;

    private Utf8() {
    }

    /** What {@link #scan} found: strict UTF-8 without a backslash, with one, or not strict UTF-8. */
    static final int PLAIN = 0;
    static final int BACKSLASH = 1;
    static final int INVALID = -1;
    private static final long BACKSLASHES = 0x5C5C5C5C5C5C5C5CL;
    private static final long LOW_BITS = 0x0101010101010101L;

    /**
     * {@link #INVALID} unless {@code bytes} are strict UTF-8; else whether they hold a backslash
     * (0x5C, never part of a multi-byte character), so JSON text without one has no escapes.
     */
    static int scan(byte[] bytes) {
        int i = 0;
        int n = bytes.length;
        long backslash = 0;
        while (i < n) {
            long word;
            while (i + Long.BYTES <= n && ((word = (long) WORDS.get(bytes, i)) & HIGH_BITS) == 0) {
                long x = word ^ BACKSLASHES; // a zero byte where the word has a backslash
                backslash |= (x - LOW_BITS) & ~x & HIGH_BITS;
                i += Long.BYTES; // eight ASCII bytes
            }
            if (i >= n) {
                break;
            }
            int b = bytes[i] & 0xFF;
            if (b < 0x80) {
                backslash |= b == 0x5C ? 1 : 0;
                i++;
                continue;
            }
            int need;
            int min;
            if (b >= 0xC2 && b <= 0xDF) {
                need = 1;
                min = 0x80;
            } else if (b >= 0xE0 && b <= 0xEF) {
                need = 2;
                min = 0x800;
            } else if (b >= 0xF0 && b <= 0xF4) {
                need = 3;
                min = 0x10000;
            } else {
                return INVALID;
            }
            if (i + need >= n) {
                return INVALID;
            }
            int code = b & (0x3F >> need);
            for (int k = 1; k <= need; k++) {
                int c = bytes[i + k] & 0xFF;
                if ((c & 0xC0) != 0x80) {
                    return INVALID;
                }
                code = (code << 6) | (c & 0x3F);
            }
            if (code < min || code > 0x10FFFF || code >= 0xD800 && code <= 0xDFFF) {
                return INVALID;
            }
            i += need + 1;
        }
        return backslash == 0 ? PLAIN : BACKSLASH;
    }
}
