package cdclake.jvm;

import java.math.BigDecimal;
import java.time.DateTimeException;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * The fast path of {@code canal_json} and {@code drs_json} ({@code include/cdclake/formats/
 * _canal_family.py}, whose rules this repeats for the shape it takes), and {@code cloudcanal_json}
 * (the same rules under its field names: {@code cloudcanal_json.py}). Taken: {@code type} INSERT,
 * UPDATE, DELETE or INIT; no TiCDC extension ({@code _tidb}); rows in {@code data} (a DRS delete:
 * in {@code old}); {@code pkNames} naming columns every row spells the same, or none; every
 * column typed by a {@code mysqlType} name this class knows (integers, decimals, floating types,
 * text, dates, datetimes, MySQL TIMESTAMP, binary, JSON, BIT(1)) or untyped text; every value in
 * the plain form of its type, so no conversion warns; {@code es} set. Declined (to the Python
 * decoder): everything else, DDL, controls, ENUM/SET/GEOMETRY (Canal renders them), TIME,
 * unsigned BIGINT, values the Python decoder keeps with a warning.
 */
final class CanalFamily {
    /**
     * What tells the formats apart here: their field names, how binary travels, the sequence
     * field, whether {@code gtid} is the position, Canal's renderings (ENUM/SET/GEOMETRY, partial
     * {@code old} arrays) and CloudCanal's {@code entryType}.
     */
    record Format(String kindField, String oldField, String typeNamesField, String sqlTypesField,
                  String keysField, String databaseField, String schemaField, String eventField,
                  String producedField, boolean byteListBinary, String sequenceField,
                  boolean gtidPosition, boolean canalRenderings, boolean entryType) {
    }

    static final Format CANAL_JSON = new Format("type", "old", "mysqlType", "sqlType", "pkNames",
            "database", null, "es", "ts", false, null, true, true, false);
    static final Format DRS_JSON = new Format("type", "old", "mysqlType", "sqlType", "pkNames",
            "database", null, "es", "ts", true, "id", true, false, false);
    static final Format CLOUDCANAL_JSON = new Format("action", "before", "dbValType", "jdbcType",
            "pks", "db", "schema", "execTs", "sendTs", false, null, false, false, true);

    private static final Map<String, String> OPS = Map.of(
            "INSERT", "INSERT", "UPDATE", "UPDATE", "DELETE", "DELETE", "INIT", "SNAPSHOT");
    private static final Set<String> UTC_NAMES = Set.of("UTC", "Z", "Etc/UTC");
    // values._MYSQL_TYPE, as Python's re reads it.
    private static final Pattern SQL_TYPE = Pattern.compile(
            "^\\s*([a-zA-Z][a-zA-Z0-9 _]*?)\\s*(?:\\((\\d+)\\s*(?:,\\s*(\\d+))?\\))?\\s*"
            + "(unsigned|signed)?\\s*(zerofill)?\\s*$", Pattern.CASE_INSENSITIVE);
    private static final Set<String> INTEGER_NAMES = Set.of("tinyint", "smallint", "mediumint",
            "int", "integer", "int2", "int4", "int8", "smallserial", "serial", "bigserial", "year",
            "number_int");
    private static final Set<String> DECIMAL_NAMES = Set.of("decimal", "numeric", "number", "dec",
            "fixed", "money", "smallmoney");
    private static final Set<String> DOUBLE_NAMES = Set.of("float", "double", "real", "float4",
            "float8", "double precision", "binary_float", "binary_double");
    private static final Set<String> TEXT_NAMES = Set.of("char", "varchar", "character",
            "character varying", "nchar", "nvarchar", "national char", "national varchar", "text",
            "tinytext", "mediumtext", "longtext", "string", "uuid", "clob", "nclob", "varchar2",
            "nvarchar2");
    private static final Set<String> BINARY_NAMES = Set.of("binary", "varbinary", "blob",
            "tinyblob", "mediumblob", "longblob", "bytea", "raw", "long raw", "image");
    private static final Pattern DECIMAL_TEXT = Pattern.compile("-?\\d{1,400}(?:\\.\\d{1,400})?");
    private static final Pattern DOUBLE_TEXT =
            Pattern.compile("-?\\d{1,400}(?:\\.\\d{1,400})?(?:[eE][+-]?\\d{1,4})?");
    private static final Pattern DATE_TEXT = Pattern.compile("(\\d{4})-(\\d{2})-(\\d{2})");
    private static final Pattern EPOCH_SECONDS_TEXT = Pattern.compile("(\\d{1,12})(?:\\.(\\d{1,30}))?");
    /** The last second a row can hold (9999-12-31T23:59:59Z). */
    private static final long MAX_SECONDS = 253_402_300_799L;

    private CanalFamily() {
    }

    /** One column's logical type and how its values become canonical text. */
    private enum Kind { STRING, LONG, DECIMAL, DOUBLE, BOOLEAN, DATE, TIMESTAMP_NTZ, TIMESTAMP, BINARY, JSON }

    private record Column(String logical, Kind kind) {
    }

    static List<InternalRow> decode(Format format, byte[] value, String zone) {
        if (!(Json.parse(value) instanceof Map<?, ?> doc) || doc.containsKey("_tidb")
                || doc.containsKey("tableChanges")
                || !(doc.get(format.kindField()) instanceof String type)) {
            return null;
        }
        Object entryType = doc.get("entryType");
        if (format.entryType() && entryType != null && !"ROWDATA".equals(entryType)
                && !"ROW_DATA".equals(entryType)) {
            return null;
        }
        String op = OPS.get(type);
        Object database = doc.get(format.databaseField());
        Object schema = format.schemaField() == null ? null : doc.get(format.schemaField());
        Object table = doc.get("table");
        if (op == null || !(database == null || database instanceof String)
                || !(schema == null || schema instanceof String)
                || !(table instanceof String tableName) || tableName.isEmpty()) {
            return null;
        }
        Object data = doc.get("data");
        Object old = doc.get(format.oldField());
        if (!(data == null || data instanceof List<?>) || !(old == null || old instanceof List<?>)) {
            return null;
        }
        List<?> rows = (List<?>) data;
        List<?> olds = (List<?>) old;
        List<?> source = op.equals("DELETE") && (rows == null || rows.isEmpty()) ? olds : rows;
        if (source == null || source.isEmpty()) {
            return null;
        }
        if (format.canalRenderings() && op.equals("UPDATE") && olds != null && !olds.isEmpty()
                && source == rows && olds.size() < rows.size()) {
            return null; // Canal's old rows belong to the last rows: Python places them
        }
        List<String> keys = keyColumns(doc.get(format.keysField()));
        Map<String, Column> columns = columns(doc.get(format.typeNamesField()), doc.get(format.sqlTypesField()));
        Long eventTime = epochMillis(doc.get(format.eventField()));
        Object producedField = doc.get(format.producedField());
        Long producedTime = epochMillis(producedField);
        Object sequenceField = format.sequenceField() == null ? null : doc.get(format.sequenceField());
        String sequence = sequence(sequenceField);
        if (keys == null || columns == null || eventTime == null || eventTime == 0
                || producedField != null && producedTime == null
                || sequenceField != null && !(sequenceField instanceof Boolean) && sequence == null) {
            return null;
        }
        if (producedTime != null && producedTime == 0) {
            producedTime = null; // 0 is "not set" (TiCDC before v6.1)
        }
        Map<String, String> types = new LinkedHashMap<>();
        columns.forEach((name, column) -> types.put(name, column.logical()));
        Object gtid = format.gtidPosition() ? doc.get("gtid") : null;
        if (gtid instanceof Json.Num) {
            return null; // Python reads a number's text as the position: its text as sent
        }
        String position = gtid instanceof String text && !text.isEmpty() ? text : null;
        Rows.Table where = new Rows.Table(null, (String) database, (String) schema, tableName);
        Rows.Lineage lineage = new Rows.Lineage(eventTime, sequence, position, null);

        List<InternalRow> out = new ArrayList<>(source.size());
        for (int index = 0; index < source.size(); index++) {
            if (!(source.get(index) instanceof Map<?, ?> raw)) {
                return null;
            }
            Map<String, String> image = image(raw, columns, format, zone);
            if (image == null) {
                return null;
            }
            Map<String, String> before = null;
            Map<String, String> after = null;
            if (op.equals("DELETE")) {
                before = image;
            } else {
                after = image;
            }
            if (op.equals("UPDATE") && olds != null && index < olds.size() && olds.get(index) != null) {
                if (!(olds.get(index) instanceof Map<?, ?> previous) || !raw.keySet().containsAll(previous.keySet())) {
                    return null;
                }
                // data overlaid with old; a value old repeats (DRS sends the whole row) is
                // converted once
                before = new LinkedHashMap<>(image);
                for (Map.Entry<?, ?> entry : previous.entrySet()) {
                    String name = (String) entry.getKey();
                    Object was = entry.getValue();
                    if (was != null && was.equals(raw.get(name))) {
                        continue;
                    }
                    String text = was == null ? null : text(name, was, columns, format, zone);
                    if (was != null && text == null) {
                        return null;
                    }
                    before.put(name, text);
                }
            }
            if (keys.isEmpty()) {
                if (format.canalRenderings() && op.equals("UPDATE") && before == null) {
                    return null; // Python warns: nothing identifies the row
                }
                out.add(Rows.change(op, where, keys, null, before, after, !op.equals("DELETE"), lineage,
                        types, producedTime));
                continue;
            }
            String rowKey = Rows.keyOf(op.equals("DELETE") ? before : after, keys);
            if (rowKey == null) {
                return null; // a key spelled otherwise, or missing: Python decides
            }
            out.add(Rows.change(op, where, keys, rowKey, before, after,
                    !op.equals("DELETE"), lineage, types, producedTime));
        }
        return out;
    }

    /** {@code pkNames}: the key's column names ([] for none); null when malformed (declined). */
    private static List<String> keyColumns(Object value) {
        return value == null ? List.of() : Json.textList(value);
    }

    /** The declared columns by {@code mysqlType} name; null when one is not known here. */
    private static Map<String, Column> columns(Object typeNames, Object sqlTypes) {
        Map<?, ?> names = typeNames == null || "".equals(typeNames) ? Map.of()
                : typeNames instanceof Map<?, ?> m ? m : null;
        Map<?, ?> codes = sqlTypes == null || "".equals(sqlTypes) ? Map.of()
                : sqlTypes instanceof Map<?, ?> m ? m : null;
        if (names == null || codes == null || !names.keySet().containsAll(codes.keySet())) {
            return null; // a column typed by its java.sql.Types code alone: Python decides
        }
        Map<String, Column> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> entry : names.entrySet()) {
            Column column = entry.getValue() instanceof String name ? column(name) : null;
            if (column == null) {
                return null;
            }
            out.put((String) entry.getKey(), column);
        }
        return out;
    }

    /** Type names seen (a topic repeats a few): their column, or {@link #UNKNOWN}. */
    private static final Map<String, Column> COLUMNS = new ConcurrentHashMap<>();
    private static final Column UNKNOWN = new Column("", Kind.STRING);

    private static Column column(String typeName) {
        Column column = COLUMNS.get(typeName);
        if (column == null) {
            column = columnOf(typeName);
            if (COLUMNS.size() < 10_000) {
                COLUMNS.put(typeName, column == null ? UNKNOWN : column);
            }
        }
        return column == UNKNOWN ? null : column;
    }

    /** {@code column_logical_type} for the names this class converts; null for any other. */
    private static Column columnOf(String typeName) {
        String name = typeName.strip();
        Matcher match = SQL_TYPE.matcher(name);
        if (name.isEmpty() || !Rows.isAscii(name) || !match.matches()) {
            return null;
        }
        String base = match.group(1).strip().toLowerCase(Locale.ROOT);
        String precision = match.group(2);
        String scale = match.group(3);
        boolean unsigned = match.group(4) != null && match.group(4).equalsIgnoreCase("unsigned");
        if (base.equals("bit")) {
            return "1".equals(precision) && scale == null ? new Column("BOOLEAN", Kind.BOOLEAN) : null;
        }
        if (INTEGER_NAMES.contains(base) || base.equals("bigint") && !unsigned) {
            return new Column("LONG", Kind.LONG);
        }
        if (DECIMAL_NAMES.contains(base)) {
            String logical = precision == null ? "DECIMAL"
                    : "DECIMAL(" + precision + "," + (scale == null ? "0" : scale) + ")";
            return new Column(logical, Kind.DECIMAL);
        }
        if (DOUBLE_NAMES.contains(base)) {
            return new Column("DOUBLE", Kind.DOUBLE);
        }
        if (base.equals("bool") || base.equals("boolean")) {
            return new Column("BOOLEAN", Kind.BOOLEAN);
        }
        if (base.equals("date")) {
            return new Column("DATE", Kind.DATE);
        }
        if (base.equals("datetime")) {
            return new Column("TIMESTAMP_NTZ", Kind.TIMESTAMP_NTZ);
        }
        if (base.equals("timestamp")) {
            return new Column("TIMESTAMP", Kind.TIMESTAMP);
        }
        if (BINARY_NAMES.contains(base)) {
            return new Column("BINARY", Kind.BINARY);
        }
        if (base.equals("json")) {
            return new Column("JSON", Kind.JSON);
        }
        // Text types only by their bare name: a character set or collation clause is Python's.
        return TEXT_NAMES.contains(base) && match.group(4) == null && match.group(5) == null
                ? new Column("STRING", Kind.STRING) : null;
    }

    /** One row's canonical texts; null when a value is not in its type's plain form. */
    private static Map<String, String> image(Map<?, ?> raw, Map<String, Column> columns, Format format,
                                             String zone) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> entry : raw.entrySet()) {
            String name = (String) entry.getKey();
            Object value = entry.getValue();
            String text = null;
            if (value != null) {
                text = text(name, value, columns, format, zone);
                if (text == null) {
                    return null;
                }
            }
            out.put(name, text);
        }
        return out;
    }

    /** A value's canonical text by its column's type (untyped: text only); null to decline. */
    private static String text(String name, Object value, Map<String, Column> columns, Format format,
                               String zone) {
        Column column = columns.get(name);
        return column == null ? (value instanceof String s ? s : null) : convert(column.kind(), value, format, zone);
    }

    private static String convert(Kind kind, Object value, Format format, String zone) {
        String text = value instanceof String s ? s : value instanceof Json.Num n ? n.text() : null;
        if (text == null) {
            return kind == Kind.BOOLEAN && value instanceof Boolean flag ? flag.toString() : null;
        }
        switch (kind) {
            case STRING:
                return text;
            case LONG:
                return Rows.isLongText(text) ? Long.toString(Long.parseLong(text)) : null;
            case DECIMAL:
                return DECIMAL_TEXT.matcher(text).matches() ? new BigDecimal(text).toPlainString() : null;
            case DOUBLE: {
                if (!DOUBLE_TEXT.matcher(text).matches()) {
                    return null;
                }
                BigDecimal number = new BigDecimal(text);
                long adjusted = (long) number.precision() - number.scale() - 1;
                boolean signedOrScaledZero = number.signum() == 0
                        && (text.startsWith("-") || text.contains("e") || text.contains("E"));
                return signedOrScaledZero || Math.abs(adjusted) > Json.MAX_PLAIN_EXPONENT
                        ? null : number.toPlainString();
            }
            case BOOLEAN:
                return switch (text) {
                    case "1", "true" -> "true";
                    case "0", "false" -> "false";
                    default -> null;
                };
            case DATE:
                return DATE_TEXT.matcher(text).matches() && validDate(text) ? text : null;
            case TIMESTAMP_NTZ:
                return wallClock(text);
            case TIMESTAMP: {
                if (EPOCH_SECONDS_TEXT.matcher(text).matches()) {
                    return isoFromEpochSeconds(text);
                }
                String wall = UTC_NAMES.contains(zone) ? wallClock(text) : null;
                return wall == null || wall.charAt(0) == '0' ? null : wall + "Z";
            }
            case BINARY:
                return format.byteListBinary() ? base64FromByteList(text) : base64FromLatin1(text);
            case JSON: {
                Object parsed = Json.parseValue(text);
                return parsed == Json.UNREADABLE ? null : Json.compact(parsed);
            }
            default:
                return null;
        }
    }

    private static boolean validDate(String text) {
        try {
            int year = Integer.parseInt(text.substring(0, 4));
            return year >= 1 && LocalDate.of(year, Integer.parseInt(text.substring(5, 7)),
                    Integer.parseInt(text.substring(8, 10))) != null;
        } catch (DateTimeException e) {
            return false;
        }
    }

    /** {@code wall_clock_text} of {@code YYYY-MM-DD[ T]HH:MM:SS[.fraction]}; null otherwise. */
    private static String wallClock(String text) {
        // YYYY-MM-DD[ T]HH:MM:SS[.1-9 digits], checked by hand: a regular expression's groups
        // cost more than the rest of a Canal message's conversion.
        int n = text.length();
        if (n != 19 && (n < 21 || n > 29 || text.charAt(19) != '.')
                || text.charAt(4) != '-' || text.charAt(7) != '-' || text.charAt(13) != ':'
                || text.charAt(16) != ':' || text.charAt(10) != ' ' && text.charAt(10) != 'T'
                || !Rows.digitsAt(text, 0, 4) || !Rows.digitsAt(text, 5, 2) || !Rows.digitsAt(text, 8, 2)
                || !Rows.digitsAt(text, 11, 2) || !Rows.digitsAt(text, 14, 2) || !Rows.digitsAt(text, 17, 2)
                || n > 19 && !Rows.digitsAt(text, 20, n - 20)) {
            return null;
        }
        try {
            int year = Rows.number(text, 0, 4);
            if (year < 1) {
                return null;
            }
            LocalDateTime.of(year, Rows.number(text, 5, 2), Rows.number(text, 8, 2), Rows.number(text, 11, 2),
                    Rows.number(text, 14, 2), Rows.number(text, 17, 2));
        } catch (DateTimeException e) {
            return null;
        }
        String out = text.substring(0, 10) + "T" + text.substring(11, 19);
        String fraction = n > 19 ? stripZeros(text.substring(20)) : "";
        return fraction.isEmpty() ? out : out + "." + fraction;
    }

    /** {@code iso_utc_from_epoch_text(text, "s")}: every fraction digit kept. */
    private static String isoFromEpochSeconds(String text) {
        Matcher match = EPOCH_SECONDS_TEXT.matcher(text);
        if (!match.matches()) {
            return null;
        }
        long seconds = Long.parseLong(match.group(1));
        if (seconds > MAX_SECONDS) {
            return null;
        }
        LocalDateTime moment = LocalDateTime.ofEpochSecond(seconds, 0, ZoneOffset.UTC);
        StringBuilder iso = new StringBuilder(32);
        pad(iso, moment.getYear(), 4).append('-');
        pad(iso, moment.getMonthValue(), 2).append('-');
        pad(iso, moment.getDayOfMonth(), 2).append('T');
        pad(iso, moment.getHour(), 2).append(':');
        pad(iso, moment.getMinute(), 2).append(':');
        pad(iso, moment.getSecond(), 2);
        String out = iso.toString();
        String fraction = stripZeros(match.group(2));
        return (fraction.isEmpty() ? out : out + "." + fraction) + "Z";
    }

    private static StringBuilder pad(StringBuilder out, int number, int width) {
        String digits = Integer.toString(number);
        for (int i = digits.length(); i < width; i++) {
            out.append('0');
        }
        return out.append(digits);
    }

    private static String stripZeros(String fraction) {
        if (fraction == null) {
            return "";
        }
        int end = fraction.length();
        while (end > 0 && fraction.charAt(end - 1) == '0') {
            end--;
        }
        return fraction.substring(0, end);
    }

    /**
     * {@code base64_from_byte_list}: DRS's {@code "[106, 103]"} (signed or unsigned bytes, as
     * Python reads them: signed ones masked, {@code n & 0xFF}); null for anything else.
     */
    private static String base64FromByteList(String text) {
        int n = text.length();
        if (n < 2 || text.charAt(0) != '[' || text.charAt(n - 1) != ']') {
            return null;
        }
        byte[] bytes = new byte[n / 2];
        int count = 0;
        int i = skipSpaces(text, 1);
        if (i == n - 1) {
            return "";
        }
        while (true) {
            boolean negative = i < n && text.charAt(i) == '-';
            if (negative) {
                i++;
            }
            int start = i;
            int number = 0;
            while (i < n && i - start < 4 && text.charAt(i) >= '0' && text.charAt(i) <= '9') {
                number = number * 10 + (text.charAt(i++) - '0');
            }
            int digits = i - start;
            if (digits == 0 || digits > 3) {
                return null;
            }
            number = negative ? -number : number;
            if (number < -128 || number > 255) {
                return null;
            }
            bytes[count++] = (byte) number;
            i = skipSpaces(text, i);
            if (i == n - 1) {
                break;
            }
            if (text.charAt(i) != ',') {
                return null;
            }
            i = skipSpaces(text, i + 1);
        }
        return Base64.getEncoder().encodeToString(Arrays.copyOf(bytes, count));
    }

    /** The index of the first character at or after {@code i} that is no JSON space. */
    private static int skipSpaces(String text, int i) {
        while (i < text.length()) {
            char c = text.charAt(i);
            if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
                break;
            }
            i++;
        }
        return i;
    }

    /** Canal's binary text: each byte one ISO-8859-1 character. */
    private static String base64FromLatin1(String text) {
        byte[] bytes = new byte[text.length()];
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c > 0xFF) {
                return null;
            }
            bytes[i] = (byte) c;
        }
        return Base64.getEncoder().encodeToString(bytes);
    }

    /** {@code _epoch_ms}: epoch milliseconds (seconds below 10^11) as microseconds; null to decline. */
    private static Long epochMillis(Object value) {
        String text = value instanceof String s ? s : value instanceof Json.Num n && n.integer() ? n.text() : null;
        if (text == null || !Rows.isDigits(text, false, 1, 15)) {
            return null;
        }
        long number = Long.parseLong(text);
        // _SECONDS_RANGE ([1-9]\d{0,10}): an epoch number of at most 11 digits is seconds, else milliseconds.
        boolean seconds = text.length() <= 11 && text.charAt(0) != '0';
        long micros = seconds ? number * 1_000_000L : number * 1_000L;
        return micros > Rows.MAX_MICROS ? null : micros;
    }

    /** {@code _sequence}: digits zero-padded to 20; null for none or anything else. */
    private static String sequence(Object value) {
        String text = value instanceof String s ? s : value instanceof Json.Num n && n.integer() ? n.text() : null;
        if (text == null || !Rows.isDigits(text, false, 1, 18)) {
            return null;
        }
        String digits = Long.toString(Long.parseLong(text));
        return "0".repeat(20 - digits.length()) + digits;
    }
}
