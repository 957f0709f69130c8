package cdclake.jvm;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JSON as the Python decoders read it ({@code values.loads_exact}): objects as insertion-ordered
 * maps (a repeated name keeps its first place and its last value, as a Python dict does), numbers
 * as their exact source text ({@link Num}), never through a double. {@link JsonReader} reads it.
 * Where Python's reader and the fast path's could disagree, {@link #parse} returns null and the
 * caller declines the message: bytes that are not strict UTF-8, a byte-order mark, anything after
 * the document, NaN and Infinity, strings holding a lone surrogate (Python keeps one; Spark could
 * not store it).
 */
final class Json {
    /** Past this exponent the Python decoders keep a number's text as sent ({@code MAX_PLAIN_EXPONENT}). */
    static final int MAX_PLAIN_EXPONENT = 10_000;
    /** What {@link #parseValue} returns for text it leaves to Python (null is JSON's null). */
    static final Object UNREADABLE = new Object();

    private Json() {
    }

    /** A JSON number: its text as sent, and whether it was written as an integer. */
    record Num(String text, boolean integer) {
    }

    /** The document of {@code value}, or null when the fast path must not read it. */
    static Object parse(byte[] value) {
        if (!Utf8.isStrict(value) || value.length >= 3 && value[0] == (byte) 0xEF
                && value[1] == (byte) 0xBB && value[2] == (byte) 0xBF) {
            return null; // not UTF-8 as Python decodes it, or a byte-order mark
        }
        Object document = JsonReader.read(value, false);
        return document == UNREADABLE ? null : document;
    }

    /**
     * A JSON column's text as {@code values.json_value_text} reads it: {@link #UNREADABLE} when
     * Python would keep it as sent with a warning (no JSON, or an object repeating a name).
     */
    static Object parseValue(String text) {
        if (text.startsWith("\ufeff") || !pairedSurrogates(text)) {
            return UNREADABLE;
        }
        return JsonReader.read(text.getBytes(StandardCharsets.UTF_8), true);
    }

    /** True unless {@code text} holds a surrogate that is not half of a pair. */
    static boolean pairedSurrogates(String text) {
        for (int i = 0, n = text.length(); i < n; i++) {
            char c = text.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(text.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                return false;
            }
        }
        return true;
    }

    /**
     * {@code _plain_json.untyped_text}: a value's canonical text with no type information. An
     * integer keeps its digits; another number becomes plain decimal text with every digit (its
     * text as sent past an exponent of 10,000); a string stays as sent; true/false; an object or
     * array becomes compact JSON. Null for a negative zero written as a decimal, whose sign
     * Python keeps and BigDecimal drops: the caller declines.
     */
    static String untypedText(Object value) {
        if (value instanceof Num num) {
            if (num.integer()) {
                return num.text();
            }
            BigDecimal decimal = new BigDecimal(num.text());
            if (decimal.signum() == 0 && num.text().startsWith("-")) {
                return null;
            }
            long adjusted = (long) decimal.precision() - decimal.scale() - 1;
            return Math.abs(adjusted) > MAX_PLAIN_EXPONENT ? num.text() : decimal.toPlainString();
        }
        return textOf(value);
    }

    /**
     * {@code _plain_json.untyped_image}: each value's canonical text ({@link #untypedText}, null
     * kept); null when one value must be declined.
     */
    static Map<String, String> untypedImage(Map<?, ?> values) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> entry : values.entrySet()) {
            String text = null;
            if (entry.getValue() != null) {
                text = untypedText(entry.getValue());
                if (text == null) {
                    return null;
                }
            }
            out.put((String) entry.getKey(), text);
        }
        return out;
    }

    /** A JSON array of strings as a list; null for anything else (an element that is no string). */
    static List<String> textList(Object value) {
        if (!(value instanceof List<?> items)) {
            return null;
        }
        List<String> out = new ArrayList<>(items.size());
        for (Object item : items) {
            if (!(item instanceof String text)) {
                return null;
            }
            out.add(text);
        }
        return out;
    }

    /** {@code _plain_json.plain_text} of text or a number; null for anything else (and null). */
    static String metadataText(Object value) {
        return value instanceof String || value instanceof Num ? textOf(value) : null;
    }

    /** {@code values.text_of} of a parsed value (not null): strings as sent, numbers' text. */
    static String textOf(Object value) {
        if (value instanceof String text) {
            return text;
        }
        if (value instanceof Num num) {
            return num.text();
        }
        if (value instanceof Boolean flag) {
            return flag ? "true" : "false";
        }
        StringBuilder out = new StringBuilder();
        compact(value, out);
        return out.toString();
    }

    /** {@code values.dumps_compact}: compact JSON, numbers digit for digit, non-ASCII as is. */
    static String compact(Object value) {
        StringBuilder out = new StringBuilder();
        compact(value, out);
        return out.toString();
    }

    private static void compact(Object value, StringBuilder out) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof String text) {
            quote(text, out);
        } else if (value instanceof Num num) {
            out.append(num.text());
        } else if (value instanceof Boolean flag) {
            out.append(flag ? "true" : "false");
        } else if (value instanceof Map<?, ?> object) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> entry : object.entrySet()) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                quote((String) entry.getKey(), out);
                out.append(':');
                compact(entry.getValue(), out);
            }
            out.append('}');
        } else if (value instanceof List<?> array) {
            out.append('[');
            for (int i = 0; i < array.size(); i++) {
                if (i > 0) {
                    out.append(',');
                }
                compact(array.get(i), out);
            }
            out.append(']');
        } else {
            throw new IllegalArgumentException("not a JSON value: " + value.getClass());
        }
    }

    /** Python's {@code json.encoder.encode_basestring} (what {@code ensure_ascii=False} writes). */
    private static void quote(String text, StringBuilder out) {
        out.append('"');
        for (int i = 0, n = text.length(); i < n; i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
