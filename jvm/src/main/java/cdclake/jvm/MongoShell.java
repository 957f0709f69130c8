package cdclake.jvm;

import java.math.BigInteger;
import java.time.DateTimeException;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The plain part of MongoDB shell syntax as {@code include/cdclake/formats/_mongo_shell.py} reads it
 * (the documents DRS writes in {@code value}/{@code where}), and its canonical text
 * ({@code field_text}, {@code to_ejson}). Read: documents, arrays, double-quoted strings (the
 * parser's escapes), JSON-shaped numbers (text kept, a leading {@code +} dropped), true, false,
 * null, {@code ObjectId("hex")}, {@code NumberLong}/{@code NumberInt}, {@code ISODate(...)},
 * {@code [new] Date(...)} with an ISO text or integer epoch milliseconds within years 1-9999,
 * field names quoted or bare ({@code name}, {@code 12}). {@link #parse} returns null, to
 * decline, for anything else: single quotes, regular expressions, BinData, UUID, NumberDecimal,
 * Timestamp, MinKey/MaxKey, NaN/Infinity, numbers such as {@code 1.} or {@code .5}, trailing
 * commas, repeated field names, a nested document whose first name starts with {@code $} (an
 * extended-JSON wrapper, maybe), strings holding a lone surrogate, very deep nesting.
 */
final class MongoShell {
    /** {@code ObjectId}: its 24 hex digits in lower case. */
    record ObjectId(String hex) {
    }

    /** {@code ISODate} / {@code Date}: its ISO-8601 UTC text, fraction kept. */
    record IsoDate(String iso) {
    }

    /** {@code NumberLong} / {@code NumberInt}: its integer digits. */
    record Int(String digits) {
    }

    /** The top-level names a document may start with although they start with {@code $}. */
    private static final Set<String> OPERATOR_NAMES = Set.of("$set", "$unset", "$v");
    private static final Set<String> CONSTRUCTORS = Set.of("ObjectId", "NumberLong", "NumberInt", "ISODate", "Date");
    private static final int MAX_DEPTH = 64;
    /** Longer number text is left to Python ({@code int()} refuses over 4300 digits). */
    private static final int MAX_NUMBER_LENGTH = 1000;
    private static final BigInteger INT64_MIN = BigInteger.valueOf(Long.MIN_VALUE);
    private static final BigInteger INT64_MAX = BigInteger.valueOf(Long.MAX_VALUE);
    private static final BigInteger INT32_MIN = BigInteger.valueOf(Integer.MIN_VALUE);
    private static final BigInteger INT32_MAX = BigInteger.valueOf(Integer.MAX_VALUE);
    private static final Pattern HEX24 = Pattern.compile("[0-9a-fA-F]{24}");
    private static final Pattern INTEGER = Pattern.compile("[+-]?[0-9]{1,30}");
    private static final Pattern DAY = Pattern.compile("([0-9]{4})-([0-9]{2})-([0-9]{2})");
    // iso_from_date_text's pattern (ASCII digits, spaces only before the zone).
    private static final Pattern INSTANT = Pattern.compile("([0-9]{4})-([0-9]{2})-([0-9]{2})[T ]"
            + "([0-9]{2}):([0-9]{2})(?::([0-9]{2}))?(?:\\.([0-9]+))? *(Z|([+-])([0-9]{2}):?([0-9]{2}))?");

    private MongoShell() {
    }

    /** Thrown inside a parse for text the fast path leaves to Python. */
    private static final class Declined extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Declined() {
            super(null, null, false, false);
        }
    }

    /**
     * The document {@code text} holds (names to values: String, {@link Json.Num}, Boolean, null,
     * {@link ObjectId}, {@link IsoDate}, {@link Int}, Map, List), or null to decline.
     */
    static Map<String, Object> parse(String text) {
        try {
            Parser parser = new Parser(text);
            if (parser.peek() != '{') {
                return null;
            }
            Map<String, Object> document = parser.document(1);
            return parser.peek() == -1 ? document : null;
        } catch (Declined | StringIndexOutOfBoundsException e) {
            return null;
        }
    }

    /** {@code field_text}: a top-level field's canonical text and logical type (null for null). */
    static String[] fieldText(Object value) {
        if (value == null) {
            return new String[] {null, null};
        }
        if (value instanceof Boolean flag) {
            return new String[] {flag ? "true" : "false", "BOOLEAN"};
        }
        if (value instanceof String text) {
            return new String[] {text, "STRING"};
        }
        if (value instanceof Json.Num num) {
            String integer = num.integer() ? int64Text(num.text()) : null;
            return integer != null ? new String[] {integer, "LONG"} : new String[] {num.text(), "DOUBLE"};
        }
        if (value instanceof ObjectId id) {
            return new String[] {id.hex(), "STRING"};
        }
        if (value instanceof IsoDate date) {
            return new String[] {date.iso(), "TIMESTAMP"};
        }
        if (value instanceof Int number) {
            return new String[] {number.digits(), "LONG"};
        }
        return new String[] {Json.compact(ejson(value)), "JSON"};
    }

    /** {@code to_ejson}: relaxed Extended JSON v2 of a parsed value, for {@link Json#compact}. */
    private static Object ejson(Object value) {
        if (value instanceof Map<?, ?> document) {
            Map<String, Object> out = new LinkedHashMap<>();
            for (Map.Entry<?, ?> entry : document.entrySet()) {
                out.put((String) entry.getKey(), ejson(entry.getValue()));
            }
            return out;
        }
        if (value instanceof List<?> array) {
            List<Object> out = new ArrayList<>(array.size());
            for (Object item : array) {
                out.add(ejson(item));
            }
            return out;
        }
        if (value instanceof ObjectId id) {
            return Map.of("$oid", id.hex());
        }
        if (value instanceof IsoDate date) {
            return Map.of("$date", date.iso());
        }
        if (value instanceof Int number) {
            return new Json.Num(number.digits(), true);
        }
        return value;
    }

    /** {@code str(int(text))} of integer text within int64; null beyond it. */
    private static String int64Text(String text) {
        if (text.length() <= 18) {
            return Long.toString(Long.parseLong(text));
        }
        BigInteger number = new BigInteger(text);
        return number.compareTo(INT64_MIN) < 0 || number.compareTo(INT64_MAX) > 0 ? null : number.toString();
    }

    private static final class Parser {
        private final String text;
        private final int n;
        private int pos;

        Parser(String text) {
            this.text = text;
            this.n = text.length();
        }

        /** The parser's spaces ({@code _SPACE}): space, tab, CR, LF, U+FEFF. */
        int peek() {
            while (pos < n) {
                char c = text.charAt(pos);
                if (c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '\ufeff') {
                    return c;
                }
                pos++;
            }
            return -1;
        }

        void expect(char c) {
            if (peek() != c) {
                throw new Declined();
            }
            pos++;
        }

        Object value(int depth) {
            int c = peek();
            if (c == '{') {
                return document(depth + 1);
            }
            if (c == '[') {
                return array(depth + 1);
            }
            if (c == '"') {
                return string();
            }
            if (c == '-' || c == '+' || c >= '0' && c <= '9') {
                return number();
            }
            if (c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' || c == '$') {
                return word(depth);
            }
            throw new Declined();
        }

        Map<String, Object> document(int depth) {
            if (depth > MAX_DEPTH) {
                throw new Declined();
            }
            expect('{');
            Map<String, Object> out = new LinkedHashMap<>();
            if (peek() == '}') {
                pos++;
                return out;
            }
            while (true) {
                String key = key();
                if (out.isEmpty() && key.startsWith("$") && (depth > 1 || !OPERATOR_NAMES.contains(key))) {
                    throw new Declined(); // maybe an extended-JSON wrapper ({"$oid": ...})
                }
                expect(':');
                Object item = value(depth);
                if (out.containsKey(key)) {
                    throw new Declined();
                }
                out.put(key, item);
                int c = peek();
                pos++;
                if (c == '}') {
                    return out;
                }
                if (c != ',' || peek() == '}') {
                    throw new Declined(); // a trailing comma too
                }
            }
        }

        String key() {
            int c = peek();
            if (c == '"') {
                return string();
            }
            int start = pos;
            if (c >= '0' && c <= '9') {
                while (pos < n && isDigit(text.charAt(pos))) {
                    pos++;
                }
                return text.substring(start, pos);
            }
            return identifier();
        }

        /** {@code _IDENT}: {@code [A-Za-z_$][A-Za-z0-9_$]*}. */
        String identifier() {
            int start = pos;
            while (pos < n) {
                char c = text.charAt(pos);
                if (!(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' || c == '$'
                        || pos > start && isDigit(c))) {
                    break;
                }
                pos++;
            }
            if (pos == start) {
                throw new Declined();
            }
            return text.substring(start, pos);
        }

        List<Object> array(int depth) {
            if (depth > MAX_DEPTH) {
                throw new Declined();
            }
            expect('[');
            List<Object> out = new ArrayList<>();
            if (peek() == ']') {
                pos++;
                return out;
            }
            while (true) {
                out.add(value(depth));
                int c = peek();
                pos++;
                if (c == ']') {
                    return out;
                }
                if (c != ',' || peek() == ']') {
                    throw new Declined();
                }
            }
        }

        /** A double-quoted string with the parser's escapes; lone surrogates declined. */
        String string() {
            pos++;
            StringBuilder out = new StringBuilder();
            while (true) {
                char c = text.charAt(pos++); // past the end: declined by parse
                if (c == '"') {
                    break;
                }
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                char code = text.charAt(pos++);
                switch (code) {
                    case '"', '\'', '\\', '/' -> out.append(code);
                    case 'b' -> out.append('\b');
                    case 'f' -> out.append('\f');
                    case 'n' -> out.append('\n');
                    case 'r' -> out.append('\r');
                    case 't' -> out.append('\t');
                    case 'v' -> out.append('\u000b');
                    case '0' -> out.append('\0');
                    case 'u' -> out.append((char) hex(4));
                    case 'x' -> out.append((char) hex(2));
                    default -> throw new Declined();
                }
            }
            String result = out.toString();
            for (int i = 0, m = result.length(); i < m; i++) {
                char c = result.charAt(i);
                if (Character.isHighSurrogate(c) && i + 1 < m && Character.isLowSurrogate(result.charAt(i + 1))) {
                    i++;
                } else if (Character.isSurrogate(c)) {
                    throw new Declined(); // Python keeps a lone surrogate; Spark could not store it
                }
            }
            return result;
        }

        int hex(int width) {
            if (pos + width > n) {
                throw new Declined();
            }
            int point = 0;
            for (int i = 0; i < width; i++) {
                char c = text.charAt(pos + i);
                int digit = isDigit(c) ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
                if (digit < 0) {
                    throw new Declined();
                }
                point = point * 16 + digit;
            }
            pos += width;
            return point;
        }

        /** A number written as JSON writes one (sign, digits, fraction, exponent), or declined. */
        Json.Num number() {
            int start = pos;
            if (text.charAt(pos) == '+' || text.charAt(pos) == '-') {
                pos++;
            }
            digits();
            boolean integer = true;
            if (pos < n && text.charAt(pos) == '.') {
                pos++;
                digits();
                integer = false;
            }
            if (pos < n && (text.charAt(pos) == 'e' || text.charAt(pos) == 'E')) {
                pos++;
                if (pos < n && (text.charAt(pos) == '+' || text.charAt(pos) == '-')) {
                    pos++;
                }
                digits();
                integer = false;
            }
            if (pos - start > MAX_NUMBER_LENGTH) {
                throw new Declined();
            }
            String token = text.substring(text.charAt(start) == '+' ? start + 1 : start, pos);
            return new Json.Num(token, integer);
        }

        /** One or more ASCII digits (else declined). */
        void digits() {
            int start = pos;
            while (pos < n && isDigit(text.charAt(pos))) {
                pos++;
            }
            if (pos == start) {
                throw new Declined();
            }
        }

        /** true, false, null, or a constructor this class reads ({@code new} or not) of one argument. */
        Object word(int depth) {
            String name = identifier();
            switch (name) {
                case "true":
                    return Boolean.TRUE;
                case "false":
                    return Boolean.FALSE;
                case "null":
                    return null;
                case "new":
                    peek();
                    name = identifier();
                    break;
                default:
                    break;
            }
            if (!CONSTRUCTORS.contains(name)) {
                throw new Declined();
            }
            expect('(');
            Object arg = value(depth);
            expect(')');
            switch (name) {
                case "ObjectId":
                    if (arg instanceof String hex && HEX24.matcher(hex).matches()) {
                        return new ObjectId(hex.toLowerCase(Locale.ROOT));
                    }
                    break;
                case "NumberLong":
                    return new Int(integer(arg, INT64_MIN, INT64_MAX));
                case "NumberInt":
                    return new Int(integer(arg, INT32_MIN, INT32_MAX));
                default: // ISODate, Date
                    if (arg instanceof String iso) {
                        return new IsoDate(isoFromText(iso));
                    }
                    if (arg instanceof Json.Num num && Rows.isDigits(num.text(), true, 1, 15)) {
                        return new IsoDate(isoFromMillis(Long.parseLong(num.text())));
                    }
                    break;
            }
            throw new Declined();
        }
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    /** {@code _integer}: integer text (a string or a number) within the range, as its digits. */
    private static String integer(Object arg, BigInteger min, BigInteger max) {
        String raw = arg instanceof String s ? s : arg instanceof Json.Num num ? num.text() : null;
        if (raw == null || !INTEGER.matcher(raw).matches()) {
            throw new Declined();
        }
        BigInteger number = new BigInteger(raw);
        if (number.compareTo(min) < 0 || number.compareTo(max) > 0) {
            throw new Declined();
        }
        return number.toString();
    }

    /** {@code iso_from_date_text}: a date or an instant (zone Z when none) as ISO UTC text. */
    private static String isoFromText(String text) {
        Matcher day = DAY.matcher(text);
        if (day.matches()) {
            utcText(local(day, 0, 0, 0), ""); // validated as strptime does
            return text + "T00:00:00Z";
        }
        Matcher match = INSTANT.matcher(text);
        if (!match.matches()) {
            throw new Declined();
        }
        LocalDateTime moment = local(match, Integer.parseInt(match.group(4)), Integer.parseInt(match.group(5)),
                match.group(6) == null ? 0 : Integer.parseInt(match.group(6)));
        if (match.group(9) != null) {
            int minutes = Integer.parseInt(match.group(10)) * 60 + Integer.parseInt(match.group(11));
            moment = moment.plusMinutes(match.group(9).equals("-") ? minutes : -minutes);
        }
        String fraction = match.group(7) == null ? "" : match.group(7).replaceFirst("0+$", "");
        return utcText(moment, fraction.isEmpty() ? "" : "." + fraction);
    }

    /** {@code _parse_wall}: a valid wall-clock time of years 1-9999, or declined. */
    private static LocalDateTime local(Matcher match, int hour, int minute, int second) {
        if (Integer.parseInt(match.group(1)) < 1) {
            throw new Declined();
        }
        try {
            return LocalDateTime.of(Integer.parseInt(match.group(1)), Integer.parseInt(match.group(2)),
                    Integer.parseInt(match.group(3)), hour, minute, second);
        } catch (DateTimeException e) {
            throw new Declined();
        }
    }

    /** {@code iso_utc_from_epoch_text(ms, "ms")}: whole milliseconds as ISO UTC text. */
    private static String isoFromMillis(long millis) {
        LocalDateTime moment = LocalDateTime.ofEpochSecond(Math.floorDiv(millis, 1000L), 0, ZoneOffset.UTC);
        return utcText(moment, Rows.fraction(Math.floorMod(millis, 1000L), 3));
    }

    /** {@code YYYY-MM-DDTHH:MM:SS[.fraction]Z} ({@code fraction}: "" or ".digits"); declined outside years 1-9999. */
    private static String utcText(LocalDateTime moment, String fraction) {
        if (moment.getYear() < 1 || moment.getYear() > 9999) {
            throw new Declined();
        }
        return Rows.isoSeconds(moment) + fraction + "Z";
    }
}
