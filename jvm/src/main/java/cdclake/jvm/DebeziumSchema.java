package cdclake.jvm;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.DateTimeException;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The typed values of a Debezium envelope with schemas ({@code value_specs}, {@code value_text}
 * and {@code connect_logical_type} of {@code include/cdclake/formats/kafka_connect.py}) for the common
 * column schemas: int8/16/32/64 (range-checked), float32/float64 (the number's text as sent),
 * string (and Debezium's Enum, EnumSet, Uuid, Xml, Ltree), boolean, Connect Decimal of a fixed
 * scale (base64 bytes), Date (days), Time/MicroTime/NanoTime, Timestamp/MicroTimestamp/
 * NanoTimestamp (wall clock) and ZonedTimestamp (text). Any other schema (structs, arrays, maps,
 * bytes, Json, Geometry, VariableScaleDecimal, unknown names, a logical name on an unexpected
 * type, odd parameters) and any value Python would convert with a warning or reject (out of
 * range, a number written as text, ...) is declined: null / {@link #UNREADABLE}.
 */
final class DebeziumSchema {
    /** What {@link #text} returns for a value the fast path leaves to Python (compared by identity). */
    static final String UNREADABLE = new String("unreadable");

    private static final String CONNECT = "org.apache.kafka.connect.data.";
    private static final String TIME = "io.debezium.time.";
    private static final Map<String, Integer> INTEGER_BITS = Map.of("int8", 8, "int16", 16, "int32", 32,
            "int64", 64);
    private static final Set<String> FLOATS = Set.of("float32", "float64", "float", "double");
    private static final Set<String> STRING_NAMES = Set.of("io.debezium.data.Enum", "io.debezium.data.EnumSet",
            "io.debezium.data.Uuid", "io.debezium.data.Xml", "io.debezium.data.Ltree");
    /** Wall-clock and time-of-day names: their units per second. */
    private static final Map<String, Long> WALL_CLOCK = Map.of(CONNECT + "Timestamp", 1000L,
            TIME + "Timestamp", 1000L, TIME + "MicroTimestamp", 1_000_000L, TIME + "NanoTimestamp",
            1_000_000_000L);
    private static final Map<String, Long> TIME_OF_DAY = Map.of(CONNECT + "Time", 1000L, TIME + "Time", 1000L,
            TIME + "MicroTime", 1_000_000L, TIME + "NanoTime", 1_000_000_000L);
    private static final Pattern SCALE = Pattern.compile("-?\\d{1,4}");
    private static final Pattern PRECISION = Pattern.compile("[1-9]\\d{0,3}");
    private static final Pattern BASE64 = Pattern.compile(
            "(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?");
    private static final Pattern ZONED = Pattern.compile(
            "(\\d{4})-(\\d{2})-(\\d{2})[ T](\\d{2}):(\\d{2}):(\\d{2})(?:\\.(\\d+))?(Z|([+-])(\\d{2}):?(\\d{2}))");
    /** Epoch seconds of 0001-01-01T00:00:00 and of 9999-12-31T23:59:59. */
    private static final long MIN_SECONDS = -62_135_596_800L;
    private static final long MAX_SECONDS = 253_402_300_799L;

    private DebeziumSchema() {
    }

    /** How one column is decoded: its kind, unit (or bits, or scale) and logical type. */
    record Spec(Kind kind, long unit, String logicalType) {
    }

    enum Kind { INTEGER, FLOAT, STRING, BOOLEAN, DECIMAL, DATE, TIME, WALL_CLOCK, ZONED, UNSUPPORTED }

    /** The spec of a key column whose schema the fast path does not decode (its values declined). */
    static final Spec UNSUPPORTED = new Spec(Kind.UNSUPPORTED, 0, null);

    /**
     * {@code value_specs} of an envelope schema: the {@code after} struct's columns (Debezium's
     * envelope, which describes {@code op}); null to decline (another shape, or a column schema
     * the fast path does not decode).
     */
    static Map<String, Spec> valueSpecs(Map<?, ?> schema) {
        Map<String, Map<?, ?>> structs = fields(schema);
        Map<?, ?> after = structs == null ? null : structs.get("after");
        if (after == null || !"struct".equals(schema.get("type")) || !structs.containsKey("op")
                || !"struct".equals(after.get("type"))) {
            return null;
        }
        Map<String, Map<?, ?>> columns = fields(after);
        return columns == null || after.get("fields") == null ? null : specs(columns);
    }

    /**
     * The column specs of a Kafka key's schema, as {@code _keys} reads them: its fields that are
     * objects, by their {@code field} name (the last of a name; another schema's spec is {@link
     * #UNSUPPORTED}); null to decline (fields that are no array).
     */
    static Map<String, Spec> keySpecs(Map<?, ?> schema) {
        Object raw = schema.get("fields");
        Map<String, Spec> out = new LinkedHashMap<>();
        if (raw == null) {
            return out;
        }
        if (!(raw instanceof List<?> list)) {
            return null;
        }
        for (Object field : list) {
            if (field instanceof Map<?, ?> map && map.get("field") instanceof String name) {
                Spec spec = spec(map);
                out.put(name, spec == null ? UNSUPPORTED : spec);
            }
        }
        return out;
    }

    private static Map<String, Spec> specs(Map<String, Map<?, ?>> columns) {
        Map<String, Spec> out = new LinkedHashMap<>();
        for (Map.Entry<String, Map<?, ?>> column : columns.entrySet()) {
            Spec spec = spec(column.getValue());
            if (spec == null) {
                return null;
            }
            out.put(column.getKey(), spec);
        }
        return out;
    }

    /** A schema's fields by name: objects with unique text names (none: empty); null to decline. */
    private static Map<String, Map<?, ?>> fields(Map<?, ?> schema) {
        Object raw = schema.get("fields");
        Map<String, Map<?, ?>> out = new LinkedHashMap<>();
        if (raw == null) {
            return out;
        }
        if (!(raw instanceof List<?> list)) {
            return null;
        }
        for (Object field : list) {
            if (!(field instanceof Map<?, ?> map) || !(map.get("field") instanceof String name)
                    || out.put(name, map) != null) {
                return null;
            }
        }
        return out;
    }

    /** One column's spec; null for a schema the fast path does not decode. */
    private static Spec spec(Map<?, ?> field) {
        Object rawName = field.get("name");
        Object params = field.get("parameters");
        if (!(field.get("type") instanceof String type) || rawName != null && !(rawName instanceof String)
                || params != null && !(params instanceof Map<?, ?>)) {
            return null;
        }
        String name = rawName == null ? "" : (String) rawName;
        if (name.isEmpty()) {
            if (INTEGER_BITS.containsKey(type)) {
                return new Spec(Kind.INTEGER, INTEGER_BITS.get(type), "LONG");
            }
            if (FLOATS.contains(type)) {
                return new Spec(Kind.FLOAT, 0, "DOUBLE");
            }
            if (type.equals("string")) {
                return new Spec(Kind.STRING, 0, "STRING");
            }
            return type.equals("boolean") ? new Spec(Kind.BOOLEAN, 0, "BOOLEAN") : null;
        }
        if (STRING_NAMES.contains(name)) {
            return type.equals("string") ? new Spec(Kind.STRING, 0, "STRING") : null;
        }
        if (name.equals(CONNECT + "Decimal")) {
            return type.equals("bytes") ? decimal((Map<?, ?>) params) : null;
        }
        if (name.equals(CONNECT + "Date") || name.equals(TIME + "Date")) {
            return type.equals("int32") ? new Spec(Kind.DATE, 0, "DATE") : null;
        }
        if (WALL_CLOCK.containsKey(name)) {
            return type.equals("int64") ? new Spec(Kind.WALL_CLOCK, WALL_CLOCK.get(name), "TIMESTAMP_NTZ") : null;
        }
        if (TIME_OF_DAY.containsKey(name)) {
            return type.equals(name.endsWith(".Time") ? "int32" : "int64")
                    ? new Spec(Kind.TIME, TIME_OF_DAY.get(name), "TIME") : null;
        }
        if (name.equals(TIME + "ZonedTimestamp")) {
            return type.equals("string") ? new Spec(Kind.ZONED, 0, "TIMESTAMP") : null;
        }
        return null;
    }

    /** A Decimal's scale and {@code connect_logical_type}: DECIMAL, DECIMAL(p,s), DECIMAL(p-s,0). */
    private static Spec decimal(Map<?, ?> params) {
        Object rawScale = params == null ? null : params.get("scale");
        Object rawPrecision = params == null ? null : params.get("connect.decimal.precision");
        if (rawScale == null && params != null && params.containsKey("scale")) {
            return null; // a null scale: Python rejects the schema
        }
        String scaleText = rawScale == null ? "0" : integerText(rawScale, SCALE);
        String precision = rawPrecision == null ? null : integerText(rawPrecision, PRECISION);
        if (scaleText == null || rawPrecision != null && precision == null) {
            return null;
        }
        int scale = Integer.parseInt(scaleText);
        String logical = precision == null ? "DECIMAL" : scale < 0
                ? "DECIMAL(" + (Integer.parseInt(precision) - scale) + ",0)"
                : "DECIMAL(" + precision + "," + scale + ")";
        return new Spec(Kind.DECIMAL, scale, logical);
    }

    /** A parameter's integer text (Debezium writes them as strings) matching {@code form}; else null. */
    private static String integerText(Object value, Pattern form) {
        String text = value instanceof String s ? s : value instanceof Json.Num n && n.integer() ? n.text() : null;
        return text != null && form.matcher(text).matches() ? text : null;
    }

    /** The logical column types of specs ({@code connect_logical_type}). */
    static Map<String, String> columnTypes(Map<String, Spec> specs) {
        Map<String, String> out = new LinkedHashMap<>();
        specs.forEach((column, spec) -> out.put(column, spec.logicalType()));
        return out;
    }

    /** {@code value_text} of a value (not null, not a placeholder) by its spec; UNREADABLE to decline. */
    static String text(Object value, Spec spec) {
        switch (spec.kind()) {
            case STRING:
                return value instanceof String text ? text : UNREADABLE;
            case BOOLEAN:
                return value instanceof Boolean flag ? (flag ? "true" : "false") : UNREADABLE;
            case FLOAT:
                return value instanceof Json.Num n ? n.text() : UNREADABLE;
            case INTEGER: {
                BigInteger number = integer(value);
                return number == null || number.bitLength() >= spec.unit() ? UNREADABLE : number.toString();
            }
            case DECIMAL:
                return decimal(value, (int) spec.unit());
            case DATE: {
                BigInteger days = integer(value);
                if (days == null || days.bitLength() > 31) {
                    return UNREADABLE;
                }
                LocalDate date = LocalDate.ofEpochDay(days.longValue());
                return date.getYear() < 1 || date.getYear() > 9999 ? UNREADABLE : date.toString();
            }
            case TIME:
                return timeOfDay(integer(value), spec.unit());
            case WALL_CLOCK:
                return wallClock(integer(value), spec.unit());
            case ZONED:
                return value instanceof String text ? zoned(text) : UNREADABLE;
            default:
                return UNREADABLE;
        }
    }

    /** An integer written as a JSON integer; null for anything else. */
    private static BigInteger integer(Object value) {
        return value instanceof Json.Num n && n.integer() && n.text().length() <= 40 ? new BigInteger(n.text()) : null;
    }

    /** {@code _decimal_from_bytes}: base64 of the big-endian two's-complement unscaled value. */
    private static String decimal(Object value, int scale) {
        if (!(value instanceof String text) || text.isEmpty() || text.length() > 2000
                || !BASE64.matcher(text).matches()) {
            return UNREADABLE;
        }
        byte[] raw = Base64.getDecoder().decode(text);
        if (raw.length == 0 || raw.length > 1500) {
            return UNREADABLE; // Python rejects empty bytes, warns on longer ones
        }
        BigDecimal decimal = new BigDecimal(new BigInteger(raw), scale);
        if (Math.abs((long) decimal.precision() - scale - 1) > Json.MAX_PLAIN_EXPONENT) {
            return UNREADABLE;
        }
        if (decimal.signum() == 0) {
            return scale > 0 ? "0." + "0".repeat(scale) : "0";
        }
        return decimal.toPlainString();
    }

    /** {@code _time_of_day}: a time since midnight, maybe negative or past 24 hours. */
    private static String timeOfDay(BigInteger count, long perSecond) {
        if (count == null || count.bitLength() > 62) {
            return UNREADABLE;
        }
        long value = count.longValue();
        long magnitude = Math.abs(value);
        long seconds = magnitude / perSecond;
        return String.format(Locale.ROOT, "%s%02d:%02d:%02d%s", value < 0 ? "-" : "", seconds / 3600,
                seconds % 3600 / 60,
                seconds % 60, fraction(magnitude % perSecond, perSecond));
    }

    /** {@code _wall_clock}: epoch units of a wall clock read as UTC, within years 1-9999. */
    private static String wallClock(BigInteger count, long perSecond) {
        if (count == null || count.bitLength() > 63) {
            return UNREADABLE;
        }
        long value = count.longValue();
        long seconds = Math.floorDiv(value, perSecond);
        if (seconds < MIN_SECONDS || seconds > MAX_SECONDS) {
            return UNREADABLE;
        }
        return Rows.isoSeconds(LocalDateTime.ofEpochSecond(seconds, 0, java.time.ZoneOffset.UTC))
                + fraction(Math.floorMod(value, perSecond), perSecond);
    }

    /** {@code _fraction}: ".digits" without trailing zeros, or "". */
    private static String fraction(long units, long perSecond) {
        return Rows.fraction(units, perSecond == 1000 ? 3 : perSecond == 1_000_000 ? 6 : 9);
    }

    /** {@code iso_utc_from_zoned_text}: ISO text with an offset as UTC, the fraction kept. */
    private static String zoned(String text) {
        Matcher m = ZONED.matcher(text);
        if (!m.matches()) {
            return UNREADABLE;
        }
        LocalDateTime local;
        try {
            local = LocalDateTime.of(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)),
                    Integer.parseInt(m.group(3)), Integer.parseInt(m.group(4)), Integer.parseInt(m.group(5)),
                    Integer.parseInt(m.group(6)));
        } catch (DateTimeException e) {
            return UNREADABLE;
        }
        if (local.getYear() < 1) {
            return UNREADABLE;
        }
        long offsetMinutes = 0;
        if (m.group(9) != null) {
            offsetMinutes = (Long.parseLong(m.group(10)) * 60 + Long.parseLong(m.group(11)))
                    * (m.group(9).equals("-") ? -1 : 1);
        }
        LocalDateTime utc = local.minusMinutes(offsetMinutes);
        if (utc.getYear() < 1 || utc.getYear() > 9999) {
            return UNREADABLE;
        }
        String digits = m.group(7) == null ? "" : m.group(7).replaceFirst("0+$", "");
        return Rows.isoSeconds(utc) + (digits.isEmpty() ? "" : "." + digits) + "Z";
    }
}
