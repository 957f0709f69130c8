package cdclake.jvm;

import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * The fast path of {@code dataworks_json} ({@code include/cdclake/formats/dataworks_json.py} and
 * {@code _dataworks.py}, whose rules this repeats for the shape it takes). Taken: {@code
 * payload.op} INSERT, DELETE, UPDATE_AFTER carrying both images (the one-message update), and
 * the halves of two-message updates (UPDATE_BEFOR, UPDATE_AFTER with one image each, paired in
 * Spark by their pair key as the Python rows are); {@code schema.source.tableName} non-empty text; {@code payload.timestamp.eventTime} set (epoch
 * milliseconds, an integer); {@code schema.dataColumn} typed by DataWorks' six types (or
 * undeclared columns, kept as written); every value in the plain form of its type, so no
 * conversion warns; the key from {@code schema.primaryKey}, else a vendor row id column. Declined
 * (to the Python decoder): everything else, DDL, TRUNCATE, controls, full-load rows without an
 * event time.
 */
final class DataWorksJson {
    private static final Map<String, String> OPS = Map.of("INSERT", "INSERT", "UPDATE_AFTER", "UPDATE",
            "UPDATE_BEFOR", "UPDATE", "UPDATE_BEFORE", "UPDATE", "DELETE", "DELETE");
    /** {@code _dataworks.ROW_ID_COLUMNS}: a keyless table's identity, in this order. */
    private static final List<String> ROW_ID_COLUMNS =
            List.of("#alibaba_rds_row_id#", "__#alibaba_rds_row_id#__", "rowid", "ROWID");
    private static final Set<String> TYPES = Set.of("LONG", "DOUBLE", "BOOLEAN", "DATE", "BYTES", "STRING");
    private static final Map<String, String> LOGICAL = Map.of("LONG", "LONG", "DOUBLE", "DOUBLE",
            "BOOLEAN", "BOOLEAN", "DATE", "TIMESTAMP", "BYTES", "BINARY", "STRING", "STRING");
    private static final Pattern BASE64 = Pattern.compile("[A-Za-z0-9+/]*={0,2}");
    /** What {@link #imageData} returns for an image the fast path leaves to Python. */
    private static final Map<?, ?> UNREADABLE_IMAGE = Map.of("", "");
    /** The last millisecond a row can hold (9999-12-31T23:59:59.999Z). */
    private static final long MAX_MILLIS = 253_402_300_799_999L;

    private DataWorksJson() {
    }

    static InternalRow decode(byte[] value) {
        if (!(Json.parse(value) instanceof Map<?, ?> doc)
                || !(doc.get("payload") instanceof Map<?, ?> payload)
                || !(payload.get("op") instanceof String vendorOp)
                || !(doc.get("schema") instanceof Map<?, ?> schema)
                || !(schema.get("source") instanceof Map<?, ?> source)
                || !(source.get("tableName") instanceof String table) || table.isEmpty()) {
            return null;
        }
        String op = OPS.get(vendorOp);
        String dbType = optionalText(source, "dbType");
        String database = optionalText(source, "dbName");
        String schemaName = optionalText(source, "schemaName");
        if (op == null || dbType == null && source.get("dbType") != null
                || database == null && source.get("dbName") != null
                || schemaName == null && source.get("schemaName") != null) {
            return null;
        }
        Object sequenceField = payload.get("sequenceId");
        String sequence = Rows.sortableSequence(sequenceField instanceof String text ? text
                : sequenceField instanceof Json.Num n && n.integer() ? n.text() : null);
        Object scn = payload.get("scn");
        String position = scn instanceof String s ? (s.equalsIgnoreCase("null") ? null : s)
                : scn instanceof Json.Num n ? n.text() : null;
        if (sequence == null && sequenceField != null && !Rows.isNoSequence(sequenceField)
                || position == null && scn != null && !(scn instanceof String)) {
            return null;
        }
        if (!(payload.get("timestamp") instanceof Map<?, ?> stamp)) {
            return null; // no event time: Python fills one in and warns
        }
        Long eventTime = epochMillis(stamp.get("eventTime"));
        Long producedTime = epochMillis(stamp.get("systemTime"));
        if (eventTime == null || producedTime == null && stamp.get("systemTime") != null
                && !unsetTime(stamp.get("systemTime"))) {
            return null;
        }
        Map<String, String> declared = declaredTypes(schema.get("dataColumn"));
        Map<?, ?> rawBefore = imageData(payload.get("before"));
        Map<?, ?> rawAfter = imageData(payload.get("after"));
        if (declared == null || rawBefore == UNREADABLE_IMAGE || rawAfter == UNREADABLE_IMAGE) {
            return null;
        }
        // As in Python, both images are converted and searched for a row id whatever the op;
        // the op then keeps the image(s) it uses.
        Map<String, String> types = new LinkedHashMap<>();
        Map<String, String> before = rawBefore == null ? null : image(rawBefore, declared, types);
        Map<String, String> after = rawAfter == null ? null : image(rawAfter, declared, types);
        List<String> keys = keyColumns(schema.get("primaryKey"), rawAfter, rawBefore);
        if (rawBefore != null && before == null || rawAfter != null && after == null || keys == null) {
            return null;
        }
        if (op.equals("INSERT")) {
            before = null;
        } else if (op.equals("DELETE")) {
            after = null;
        }
        boolean beforeHalf = vendorOp.startsWith("UPDATE_BEFOR");
        if ((op.equals("DELETE") || beforeHalf ? before : after) == null) {
            return null; // a missing image: Python rejects it
        }
        String pairKey = null;
        String pairRole = null;
        if (op.equals("UPDATE") && (before == null || after == null) && sequenceField != null) {
            // One half of a two-message update: paired with the other half by the pair key.
            String id = Json.metadataText(sequenceField);
            if (id == null) {
                return null;
            }
            pairKey = "dataworks:" + (database == null ? "None" : database) + "." + table + ":" + id;
            pairRole = after == null ? "BEFORE" : "AFTER";
        }
        Set<String> present = new HashSet<>();
        for (Map<String, String> kept : Arrays.asList(before, after)) {
            if (kept != null) {
                present.addAll(kept.keySet());
            }
        }
        types.keySet().retainAll(present);
        String rowKey = Rows.keyOf(op.equals("DELETE") || after == null ? before : after, keys);
        if (!keys.isEmpty() && rowKey == null) {
            return null; // Python rejects it (MISSING_KEY)
        }
        return Rows.change(op, new Rows.Table(dbType, database, schemaName, table), keys, rowKey,
                before, after, after != null, new Rows.Lineage(eventTime, sequence, position, null),
                types, producedTime, pairKey, pairRole);
    }

    /** {@code image_data}: {@code <side>.dataColumn}, null when absent; UNREADABLE_IMAGE to decline. */
    private static Map<?, ?> imageData(Object holder) {
        if (holder == null) {
            return null;
        }
        if (!(holder instanceof Map<?, ?> side)) {
            return UNREADABLE_IMAGE;
        }
        Object data = side.get("dataColumn");
        return data == null ? null : data instanceof Map<?, ?> row ? row : UNREADABLE_IMAGE;
    }

    private static String optionalText(Map<?, ?> object, String name) {
        return object.get(name) instanceof String text ? text : null;
    }

    /** {@code declared_types(upper=True)}: column -> type name; null to decline. */
    private static Map<String, String> declaredTypes(Object columns) {
        if (columns == null) {
            return Map.of();
        }
        if (!(columns instanceof List<?> list)) {
            return null;
        }
        Map<String, String> declared = new LinkedHashMap<>();
        for (Object column : list) {
            if (!(column instanceof Map<?, ?> entry) || !(entry.get("name") instanceof String name)) {
                return null;
            }
            Object type = entry.get("type");
            if (type != null && !(type instanceof String)) {
                return null;
            }
            String text = type == null ? "" : (String) type;
            if (!Rows.isAscii(text)) {
                return null;
            }
            declared.put(name, text.toUpperCase(Locale.ROOT));
        }
        return declared;
    }

    /** {@code key_columns}: the declared key, else a vendor row id the images carry; null to decline. */
    private static List<String> keyColumns(Object declared, Map<?, ?> after, Map<?, ?> before) {
        if (declared instanceof String name) {
            return name.isEmpty() ? null : List.of(name);
        }
        if (declared != null && !(declared instanceof List<?>)) {
            return null;
        }
        if (declared instanceof List<?> names && !names.isEmpty()) {
            return Json.textList(names);
        }
        for (String rowId : ROW_ID_COLUMNS) {
            if (after != null && after.containsKey(rowId) || before != null && before.containsKey(rowId)) {
                return List.of(rowId);
            }
        }
        return List.of();
    }

    /** {@code convert_image} under DataWorks' type rules; null when a value must be declined. */
    private static Map<String, String> image(Map<?, ?> data, Map<String, String> declared,
                                             Map<String, String> types) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> entry : data.entrySet()) {
            String column = (String) entry.getKey();
            Object value = entry.getValue();
            String type = declared.get(column);
            boolean typed = type != null && TYPES.contains(type); // Set.of(...) throws on null
            String text = null;
            if (value != null) {
                text = typed ? convert(type, value) : Json.textOf(value);
                if (text == null) {
                    return null;
                }
            }
            if (typed) {
                types.put(column, LOGICAL.get(type));
            }
            out.put(column, text);
        }
        return out;
    }

    /** One value's canonical text under its declared type; null when Python would warn (declined). */
    private static String convert(String type, Object value) {
        String text = value instanceof String s ? s : value instanceof Json.Num n ? n.text() : null;
        switch (type) {
            case "LONG":
                if (value instanceof Boolean flag) {
                    return flag ? "1" : "0";
                }
                return text != null && Rows.isLongText(text) ? Long.toString(Long.parseLong(text)) : null;
            case "BOOLEAN":
                if (value instanceof Boolean flag) {
                    return flag.toString();
                }
                if (text == null || !Rows.isAscii(text)) {
                    return null;
                }
                return switch (text.strip().toLowerCase(Locale.ROOT)) {
                    case "1", "true", "t", "yes", "y", "on" -> "true";
                    case "0", "false", "f", "no", "n", "off" -> "false";
                    default -> null;
                };
            case "DATE":
                return text != null && Rows.isDigits(text, false, 1, 15) ? isoFromEpochMillis(text) : null;
            case "BYTES":
                return value instanceof String s ? base64(s) : null;
            default: // DOUBLE, STRING: the value as written
                return Json.textOf(value);
        }
    }

    /** {@code iso_utc_from_epoch_text(text, "ms")}; null beyond year 9999. */
    private static String isoFromEpochMillis(String digits) {
        long millis = Long.parseLong(digits);
        if (millis > MAX_MILLIS) {
            return null;
        }
        LocalDateTime moment = LocalDateTime.ofEpochSecond(millis / 1000, 0, ZoneOffset.UTC);
        return Rows.isoSeconds(moment) + Rows.fraction(millis % 1000, 3) + "Z";
    }

    /** {@code strict_base64}: valid base64 text, re-encoded; null otherwise. */
    private static String base64(String text) {
        if (text.length() % 4 != 0 || !BASE64.matcher(text).matches()) {
            return null;
        }
        try {
            return Base64.getEncoder().encodeToString(Base64.getDecoder().decode(text));
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    /** {@code times}: epoch milliseconds as microseconds; null when absent, unset (below 0) or to decline. */
    private static Long epochMillis(Object value) {
        if (!(value instanceof Json.Num n) || !n.integer() || !Rows.isDigits(n.text(), false, 1, 15)) {
            return null;
        }
        long millis = Long.parseLong(n.text());
        return millis > MAX_MILLIS ? null : millis * 1000L;
    }

    /** A time Python reads as unset: a negative integer (DataWorks' -1 on full-load rows). */
    private static boolean unsetTime(Object value) {
        return value instanceof Json.Num n && n.integer() && n.text().startsWith("-") && Rows.isLongText(n.text())
                && !n.text().chars().skip(1).allMatch(c -> c == '0');
    }
}
