package cdclake.jvm;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/** Strict UTF-8, as Python's decoder reads it: no overlong forms, no surrogates, at most U+10FFFF. */
final class Utf8 {
    /** Eight bytes of an array read as one long (any index): ASCII runs are checked a word at a time. */
    static final VarHandle WORDS = MethodHandles.byteArrayViewVarHandle(long[].class,
            ByteOrder.LITTLE_ENDIAN);
    static final long HIGH_BITS = 0x8080808080808080L;

    private Utf8() {
    }

    /** True when {@code bytes} are strict UTF-8. */
    static boolean isStrict(byte[] bytes) {
        int i = 0;
        int n = bytes.length;
        while (i < n) {
            while (i + Long.BYTES <= n && ((long) WORDS.get(bytes, i) & HIGH_BITS) == 0) {
                i += Long.BYTES; // eight ASCII bytes
            }
            if (i >= n) {
                break;
            }
            int b = bytes[i] & 0xFF;
            if (b < 0x80) {
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
                return false;
            }
            if (i + need >= n) {
                return false;
            }
            int code = b & (0x3F >> need);
            for (int k = 1; k <= need; k++) {
                int c = bytes[i + k] & 0xFF;
                if ((c & 0xC0) != 0x80) {
                    return false;
                }
                code = (code << 6) | (c & 0x3F);
            }
            if (code < min || code > 0x10FFFF || code >= 0xD800 && code <= 0xDFFF) {
                return false;
            }
            i += need + 1;
        }
        return true;
    }
}
