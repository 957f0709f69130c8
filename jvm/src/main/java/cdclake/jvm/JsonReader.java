package cdclake.jvm;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Strict JSON (RFC 8259) read straight from UTF-8 bytes into the tree {@link Json#parse} returns:
 * {@link JsonObject}s, lists, strings, {@link Json.Num}s, booleans and null. It replaces a
 * streaming parser's tokens and character buffers: a string without escapes becomes a Java string
 * in one copy, and an object's names come from a small per-thread table of the names already
 * seen, so the same few names of every message are neither decoded nor allocated again.
 *
 * <p>It accepts exactly what Python's {@code json} module reads with {@code strict=True} (the
 * reference decoders' {@code values.loads_exact}), minus what the fast path leaves to Python:
 * NaN and Infinity, a string holding a lone surrogate, nesting deeper than {@link #MAX_DEPTH},
 * numbers longer than {@link #MAX_NUMBER_LENGTH} characters. For any of those, and for text that
 * is not JSON, {@link #read} returns {@link Json#UNREADABLE} and the caller declines the message.
 * The bytes must be strict UTF-8 already ({@link Utf8#isStrict}).
 */
final class JsonReader {
    /** Deeper documents are left to Python (whose own limit is its recursion limit). */
    static final int MAX_DEPTH = 500;
    /** Longer numbers are left to Python (Jackson's default limit, which the fast path had). */
    static final int MAX_NUMBER_LENGTH = 1000;
    private static final ThreadLocal<Names> NAMES = ThreadLocal.withInitial(Names::new);
    /** A string's plain run is scanned a word of eight bytes at a time ({@link Utf8#WORDS}). */
    private static final long ONES = 0x0101010101010101L;
    private static final long QUOTES = 0x2222222222222222L;
    private static final long BACKSLASHES = 0x5C5C5C5C5C5C5C5CL;
    private static final long SPACES = 0x2020202020202020L;

    private final byte[] bytes;
    private final boolean uniqueNames;
    private final Names names;
    private int at;
    private int depth;

    private JsonReader(byte[] bytes, boolean uniqueNames) {
        this.bytes = bytes;
        this.uniqueNames = uniqueNames;
        this.names = NAMES.get();
    }

    /**
     * The document in {@code bytes}, or {@link Json#UNREADABLE}; with {@code uniqueNames}, also
     * unreadable when an object repeats a name (else the name keeps its first place and its last
     * value, as a Python dict does).
     */
    static Object read(byte[] bytes, boolean uniqueNames) {
        JsonReader reader = new JsonReader(bytes, uniqueNames);
        try {
            reader.skipSpace();
            Object document = reader.value();
            reader.skipSpace();
            return reader.at == bytes.length ? document : Json.UNREADABLE;
        } catch (Unreadable e) {
            return Json.UNREADABLE;
        }
    }

    /** Thrown inside a read for text the fast path does not read (one instance, no stack). */
    private static final class Unreadable extends RuntimeException {
        private static final long serialVersionUID = 1L;
        static final Unreadable INSTANCE = new Unreadable();

        private Unreadable() {
            super(null, null, false, false);
        }
    }

    /** The byte at the cursor; 0 past the end (never valid where a caller tests it). */
    private int peek() {
        return at < bytes.length ? bytes[at] : 0;
    }

    private void skipSpace() {
        while (at < bytes.length) {
            byte b = bytes[at];
            if (b != ' ' && b != '\n' && b != '\r' && b != '\t') {
                return;
            }
            at++;
        }
    }

    private Object value() {
        int b = peek();
        switch (b) {
            case '{':
                return object();
            case '[':
                return array();
            case '"':
                return string(false);
            case 't':
                literal("true");
                return Boolean.TRUE;
            case 'f':
                literal("false");
                return Boolean.FALSE;
            case 'n':
                literal("null");
                return null;
            default:
                if (b == '-' || b >= '0' && b <= '9') {
                    return number();
                }
                throw Unreadable.INSTANCE;
        }
    }

    private void literal(String word) {
        int n = word.length();
        if (at + n > bytes.length) {
            throw Unreadable.INSTANCE;
        }
        for (int i = 0; i < n; i++) {
            if (bytes[at + i] != word.charAt(i)) {
                throw Unreadable.INSTANCE;
            }
        }
        at += n;
    }

    private void enter() {
        if (++depth > MAX_DEPTH) {
            throw Unreadable.INSTANCE;
        }
        at++;
        skipSpace();
    }

    private JsonObject object() {
        enter();
        JsonObject object = new JsonObject();
        if (closed('}')) {
            return object;
        }
        do {
            if (peek() != '"') {
                throw Unreadable.INSTANCE;
            }
            String name = string(true);
            skipSpace();
            if (peek() != ':') {
                throw Unreadable.INSTANCE;
            }
            at++;
            skipSpace();
            Object item = value();
            if (uniqueNames && object.containsKey(name)) {
                throw Unreadable.INSTANCE; // Python keeps such a JSON value as sent, warned
            }
            object.put(name, item);
        } while (more('}'));
        return object;
    }

    private List<Object> array() {
        enter();
        List<Object> array = new ArrayList<>();
        if (closed(']')) {
            return array;
        }
        do {
            array.add(value());
        } while (more(']'));
        return array;
    }

    /** Right after an opening bracket: true, past it, when {@code close} follows at once. */
    private boolean closed(char close) {
        if (peek() != close) {
            return false;
        }
        at++;
        depth--;
        return true;
    }

    /**
     * After a member: true, past the comma and the space after it, when another member follows;
     * false, past {@code close}, at the end of the object or array.
     */
    private boolean more(char close) {
        skipSpace();
        int next = peek();
        at++;
        if (next == close) {
            depth--;
            return false;
        }
        if (next != ',') {
            throw Unreadable.INSTANCE;
        }
        skipSpace();
        return true;
    }

    /** The string at the cursor (its opening quote); a name comes from the table of names. */
    private String string(boolean name) {
        int start = ++at;
        for (int i = plainWords(start); i < bytes.length; i++) {
            int b = bytes[i];
            if (b == '"') {
                at = i + 1;
                return name ? names.get(bytes, start, i - start)
                        : new String(bytes, start, i - start, StandardCharsets.UTF_8);
            }
            if (b == '\\') {
                return escaped(start, i);
            }
            if (b >= 0 && b < 0x20) {
                throw Unreadable.INSTANCE; // a raw control character: strict JSON refuses it
            }
        }
        throw Unreadable.INSTANCE;
    }

    /**
     * The first index from {@code from} whose word of eight bytes may hold a quote, a backslash
     * or a control character (the bytes from there are read one by one): each test is the
     * classic "has a zero byte" bit trick, exact when it says none.
     */
    private int plainWords(int from) {
        int i = from;
        while (i + Long.BYTES <= bytes.length) {
            long word = (long) Utf8.WORDS.get(bytes, i);
            long quotes = word ^ QUOTES;
            long backslashes = word ^ BACKSLASHES;
            long special = (quotes - ONES) & ~quotes | (backslashes - ONES) & ~backslashes
                    | (word - SPACES) & ~word;
            if ((special & Utf8.HIGH_BITS) != 0) {
                return i;
            }
            i += Long.BYTES;
        }
        return i;
    }

    /** The rest of a string from its first backslash at {@code from} (its text began at {@code start}). */
    private String escaped(int start, int from) {
        StringBuilder out = new StringBuilder(from - start + 16);
        out.append(new String(bytes, start, from - start, StandardCharsets.UTF_8));
        int i = from;
        int run = from;
        while (i < bytes.length) {
            int b = bytes[i];
            if (b == '"') {
                out.append(new String(bytes, run, i - run, StandardCharsets.UTF_8));
                at = i + 1;
                return checked(out.toString());
            }
            if (b >= 0 && b < 0x20) {
                throw Unreadable.INSTANCE;
            }
            if (b != '\\') {
                i++;
                continue;
            }
            out.append(new String(bytes, run, i - run, StandardCharsets.UTF_8));
            if (i + 1 >= bytes.length) {
                throw Unreadable.INSTANCE;
            }
            int escape = bytes[i + 1];
            i += 2;
            switch (escape) {
                case '"' -> out.append('"');
                case '\\' -> out.append('\\');
                case '/' -> out.append('/');
                case 'b' -> out.append('\b');
                case 'f' -> out.append('\f');
                case 'n' -> out.append('\n');
                case 'r' -> out.append('\r');
                case 't' -> out.append('\t');
                case 'u' -> {
                    if (i + 4 > bytes.length) {
                        throw Unreadable.INSTANCE;
                    }
                    int code = 0;
                    for (int k = 0; k < 4; k++) {
                        code = code << 4 | hex(bytes[i + k]);
                    }
                    out.append((char) code);
                    i += 4;
                }
                default -> throw Unreadable.INSTANCE;
            }
            run = i;
        }
        throw Unreadable.INSTANCE;
    }

    private static int hex(byte b) {
        if (b >= '0' && b <= '9') {
            return b - '0';
        }
        if (b >= 'a' && b <= 'f') {
            return b - 'a' + 10;
        }
        if (b >= 'A' && b <= 'F') {
            return b - 'A' + 10;
        }
        throw Unreadable.INSTANCE;
    }

    /** {@code text}, unless it holds a surrogate that is not half of a pair. */
    static String checked(String text) {
        if (!Json.pairedSurrogates(text)) {
            throw Unreadable.INSTANCE;
        }
        return text;
    }

    private static boolean isDigit(int b) {
        return b >= '0' && b <= '9';
    }

    private void digits() {
        while (isDigit(peek())) {
            at++;
        }
    }

    /** A number as Python's {@code json} reads one: {@code -?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?}. */
    private Json.Num number() {
        int start = at;
        boolean integer = true;
        if (peek() == '-') {
            at++;
        }
        if (peek() == '0') {
            at++;
        } else if (isDigit(peek())) {
            digits();
        } else {
            throw Unreadable.INSTANCE;
        }
        if (peek() == '.') {
            at++;
            if (!isDigit(peek())) {
                throw Unreadable.INSTANCE;
            }
            digits();
            integer = false;
        }
        if (peek() == 'e' || peek() == 'E') {
            at++;
            if (peek() == '+' || peek() == '-') {
                at++;
            }
            if (!isDigit(peek())) {
                throw Unreadable.INSTANCE;
            }
            digits();
            integer = false;
        }
        if (at - start > MAX_NUMBER_LENGTH) {
            throw Unreadable.INSTANCE;
        }
        return new Json.Num(new String(bytes, start, at - start, StandardCharsets.ISO_8859_1), integer);
    }

    /**
     * The names one thread has read, by their bytes: a slot per hash, the last name of that hash
     * kept (names are interned, so a decoder's literal name matches by identity). Long names are
     * decoded each time and not kept.
     */
    private static final class Names {
        private static final int SLOTS = 1024;
        private static final int MAX_KEPT = 64;
        private final byte[][] keys = new byte[SLOTS][];
        private final String[] values = new String[SLOTS];

        String get(byte[] bytes, int from, int length) {
            if (length > MAX_KEPT) {
                return new String(bytes, from, length, StandardCharsets.UTF_8);
            }
            int hash = 0;
            for (int i = from; i < from + length; i++) {
                hash = 31 * hash + bytes[i];
            }
            int slot = (hash ^ hash >>> 10) & (SLOTS - 1);
            byte[] key = keys[slot];
            if (key != null && Arrays.equals(key, 0, key.length, bytes, from, from + length)) {
                return values[slot];
            }
            String name = new String(bytes, from, length, StandardCharsets.UTF_8).intern();
            keys[slot] = Arrays.copyOfRange(bytes, from, from + length);
            values[slot] = name;
            return name;
        }
    }
}
