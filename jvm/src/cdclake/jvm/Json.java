package cdclake.jvm;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JSON as the Python decoders read it ({@code values.loads_exact}): objects as insertion-ordered
 * maps (a repeated name keeps its first place and its last value, as a Python dict does), numbers
 * as their exact source text ({@link Num}), never through a double. Where Python's reader and
 * Jackson's could disagree, {@link #parse} returns null and the caller declines the message:
 * bytes that are not strict UTF-8, a byte-order mark, anything after the document, NaN and
 * Infinity, strings holding a lone surrogate (Python keeps one; Spark could not store it).
 */
final class Json {
    private static final JsonFactory FACTORY = new JsonFactory();
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
        int scanned = Utf8.scan(value);
        if (scanned == Utf8.INVALID || value.length >= 3 && value[0] == (byte) 0xEF
                && value[1] == (byte) 0xBB && value[2] == (byte) 0xBF) {
            return null; // not UTF-8 as Python decodes it, or a byte-order mark
        }
        try (JsonParser parser = FACTORY.createParser(value)) {
            // A lone surrogate can only come from a \\u escape (scan refuses encoded ones), so
            // a document without a backslash has none and its strings need no check.
            Object document = read(parser, false, scanned == Utf8.BACKSLASH);
            return document == UNREADABLE ? null : document;
        } catch (IOException e) {
            return null;
        }
    }

    /**
     * A JSON column's text as {@code values.json_value_text} reads it: {@link #UNREADABLE} when
     * Python would keep it as sent with a warning (no JSON, or an object repeating a name).
     */
    static Object parseValue(String text) {
        return read(text, true);
    }

    private static Object read(String text, boolean uniqueNames) {
        if (text.startsWith("\ufeff")) {
            return UNREADABLE;
        }
        try (JsonParser parser = FACTORY.createParser(text)) {
            return read(parser, uniqueNames, true);
        } catch (IOException e) {
            return UNREADABLE;
        }
    }

    private static Object read(JsonParser parser, boolean uniqueNames, boolean escaped) throws IOException {
        try {
            JsonToken first = parser.nextToken();
            if (first == null) {
                return UNREADABLE;
            }
            Object document = read(parser, first, uniqueNames, escaped);
            return parser.nextToken() == null ? document : UNREADABLE;
        } catch (IOException | Unreadable e) {
            return UNREADABLE;
        }
    }

    /** Thrown inside a parse for what the fast path leaves to Python (a lone surrogate). */
    private static final class Unreadable extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Unreadable() {
            super(null, null, false, false);
        }
    }

    private static Object read(JsonParser parser, JsonToken token, boolean uniqueNames, boolean escaped)
            throws IOException {
        switch (token) {
            case START_OBJECT: {
                JsonObject object = new JsonObject();
                JsonToken next;
                while ((next = parser.nextToken()) == JsonToken.FIELD_NAME) {
                    String name = escaped ? checked(parser.currentName()) : parser.currentName();
                    Object item = read(parser, parser.nextToken(), uniqueNames, escaped);
                    if (uniqueNames && object.containsKey(name)) {
                        throw new Unreadable(); // Python keeps such a JSON value as sent, warned
                    }
                    object.put(name, item);
                }
                if (next != JsonToken.END_OBJECT) {
                    throw new Unreadable();
                }
                return object;
            }
            case START_ARRAY: {
                List<Object> array = new ArrayList<>();
                JsonToken next;
                while ((next = parser.nextToken()) != JsonToken.END_ARRAY) {
                    if (next == null) {
                        throw new Unreadable();
                    }
                    array.add(read(parser, next, uniqueNames, escaped));
                }
                return array;
            }
            case VALUE_STRING:
                return escaped ? checked(parser.getText()) : parser.getText();
            case VALUE_NUMBER_INT:
                return new Num(parser.getText(), true);
            case VALUE_NUMBER_FLOAT:
                return new Num(parser.getText(), false);
            case VALUE_TRUE:
                return Boolean.TRUE;
            case VALUE_FALSE:
                return Boolean.FALSE;
            case VALUE_NULL:
                return null;
            default:
                throw new Unreadable();
        }
    }

    /** {@code text}, unless it holds a surrogate that is not half of a pair. */
    private static String checked(String text) {
        for (int i = 0, n = text.length(); i < n; i++) {
            char c = text.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(text.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new Unreadable();
            }
        }
        return text;
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
