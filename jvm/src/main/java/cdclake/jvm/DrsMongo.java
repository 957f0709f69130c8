package cdclake.jvm;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * The fast path of {@code drs_mongo} ({@code include/cdclake/formats/drs_mongo.py}, whose rules this
 * repeats for the shape it takes; the documents read by {@link MongoShell}). Taken: {@code op}
 * INSERT, UPDATE or DELETE (any case); {@code value} (and {@code where}, when given) a string
 * holding one shell-syntax document {@link MongoShell} reads; an INSERT's document with
 * {@code _id}; a DELETE's key in {@code where}, else in {@code value}; an UPDATE replacing the
 * whole document (key from {@code where}, else from the document), or, under {@code recordType}
 * (else {@code extra}) update, applying {@code $set}/{@code $unset} or the oplog v2 {@code diff}
 * ({@code u}, {@code i}, {@code d}) to plain field names, key from {@code where}; {@code coll}
 * non-empty text, {@code db}/{@code dbType} text or absent; {@code es} (and {@code ts}, when
 * set) integer epoch milliseconds; {@code clusterTime} text or a number, {@code id} text or a
 * number. Declined (to the Python decoder): everything else, DDL, documents given as JSON objects,
 * the values {@link MongoShell} leaves to Python (BinData, NumberDecimal, ...), other update
 * operators, nested diffs, dotted field names in an update (Python warns), operator documents
 * outside an update record, and what Python rejects (no key, a missing document, a bad op).
 */
final class DrsMongo {
    private static final Map<String, String> OPS =
            Map.of("INSERT", "INSERT", "UPDATE", "UPDATE", "DELETE", "DELETE");
    private static final List<String> KEY_COLUMNS = List.of("_id");
    private static final Pattern LETTERS = Pattern.compile("[A-Za-z]+");
    /** Python's ASCII whitespace (what {@code str.strip} and {@code \s} take of ASCII text). */
    private static final String SPACE = "[ \\t\\n\\r\\f\\u000b\\u001c-\\u001f]*";
    private static final Pattern CLUSTER_TIME =
            Pattern.compile(SPACE + "([0-9]+)" + SPACE + ":" + SPACE + "([0-9]+)" + SPACE);
    private static final Pattern STRIP = Pattern.compile("^" + SPACE + "|" + SPACE + "$");
    private static final Pattern BLANK = Pattern.compile("[ \\t\\r\\n]*");
    /** What {@link #document} returns for no document (a null or blank {@code where}). */
    private static final Map<String, Object> NONE = Map.of();

    private DrsMongo() {
    }

    static InternalRow decode(byte[] message) {
        if (!(Json.parse(message) instanceof Map<?, ?> doc) || !(doc.get("op") instanceof String opText)
                || !LETTERS.matcher(opText).matches()) {
            return null;
        }
        String op = OPS.get(opText.toUpperCase(Locale.ROOT));
        Object dbType = doc.get("dbType") == null ? "MongoDB" : doc.get("dbType");
        Object database = doc.get("db");
        if (op == null || !(dbType instanceof String) || !(database == null || database instanceof String)
                || !(doc.get("coll") instanceof String table) || table.isEmpty()) {
            return null;
        }
        Long eventTime = epochMicros(doc.get("es"));
        Object ts = doc.get("ts");
        Long producedTime = ts == null || ts instanceof Boolean ? null : epochMicros(ts);
        Object clusterTime = doc.get("clusterTime");
        String position = clusterTime instanceof String text ? text
                : clusterTime instanceof Json.Num num ? num.text() : null;
        String[] sequence = sequence(position, doc.get("id"));
        if (eventTime == null || producedTime == null && ts != null && !(ts instanceof Boolean)
                || position == null && clusterTime != null || sequence == null) {
            return null;
        }
        Map<String, Object> value = document(doc.get("value"));
        Map<String, Object> where = document(doc.get("where"));
        String recordType = op.equals("UPDATE") ? recordType(doc) : "";
        if (value == null || value == NONE || where == null || recordType == null) {
            return null;
        }
        Map<String, String> types = new LinkedHashMap<>();
        Map<String, String> before = null;
        Map<String, String> after = null;
        Map<String, String> keyImage;
        boolean afterIsFull = false;
        if (op.equals("INSERT")) {
            after = image(value, types);
            keyImage = after;
            afterIsFull = true;
        } else if (op.equals("DELETE")) {
            before = image(where.isEmpty() ? value : where, types);
            keyImage = before;
        } else if (recordType.equals("update") && isOperatorDocument(value)) {
            Map<String, String> changed = applyOperators(value, types);
            if (changed == null) {
                return null;
            }
            keyImage = image(where, types);
            after = new LinkedHashMap<>();
            after.put("_id", keyImage.get("_id"));
            after.putAll(changed);
        } else if (isOperatorDocument(value)) {
            return null; // operators outside an update record: Python keeps them as columns
        } else { // a replace (or an update whose value is a whole document)
            after = image(value, types);
            keyImage = where.isEmpty() ? after : image(where, types);
            afterIsFull = true;
            if (!after.containsKey("_id") && keyImage.containsKey("_id")) {
                Map<String, String> keyed = new LinkedHashMap<>();
                keyed.put("_id", keyImage.get("_id"));
                keyed.putAll(after);
                after = keyed;
            }
        }
        String rowKey = Rows.keyOf(keyImage, KEY_COLUMNS);
        if (rowKey == null) {
            return null; // Python rejects it (MISSING_KEY)
        }
        return Rows.change(op, new Rows.Table((String) dbType, (String) database, null, table), KEY_COLUMNS,
                rowKey, before, after, afterIsFull, new Rows.Lineage(eventTime, sequence[0], position, null),
                types, producedTime);
    }

    /**
     * {@code _document}: the document of a {@code value}/{@code where} string; {@link #NONE} for
     * none (null or blank); null to decline (a JSON object, another kind, text not read).
     */
    private static Map<String, Object> document(Object field) {
        if (field == null || field instanceof String text && BLANK.matcher(text).matches()) {
            return NONE;
        }
        return field instanceof String text ? MongoShell.parse(text) : null;
    }

    /** {@code _image}: each field's canonical text, its logical type recorded in {@code types}. */
    private static Map<String, String> image(Map<String, Object> document, Map<String, String> types) {
        Map<String, String> image = new LinkedHashMap<>();
        for (Map.Entry<String, Object> entry : document.entrySet()) {
            String[] text = MongoShell.fieldText(entry.getValue());
            image.put(entry.getKey(), text[0]);
            if (text[1] != null) {
                types.put(entry.getKey(), text[1]);
            }
        }
        return image;
    }

    /**
     * {@code str(recordType or extra or "").strip().lower()} of ASCII text (or none); null to
     * decline (another kind, or text Python may strip or lower otherwise).
     */
    private static String recordType(Map<?, ?> doc) {
        Object recordType = doc.get("recordType");
        Object kind = recordType instanceof String s && !s.isEmpty() ? recordType : doc.get("extra");
        if (recordType != null && !(recordType instanceof String) || kind != null && !(kind instanceof String)) {
            return null;
        }
        String text = kind == null ? "" : (String) kind;
        return Rows.isAscii(text) ? STRIP.matcher(text).replaceAll("").toLowerCase(Locale.ROOT) : null;
    }

    private static boolean isOperatorDocument(Map<String, Object> document) {
        if (document.isEmpty()) {
            return false;
        }
        for (String name : document.keySet()) {
            if (!name.startsWith("$") && !name.equals("diff")) {
                return false;
            }
        }
        return true;
    }

    /** {@code _apply_operators}: the partial after image of $set/$unset/diff; null to decline. */
    private static Map<String, String> applyOperators(Map<String, Object> update, Map<String, String> types) {
        Map<String, Object> changes = new LinkedHashMap<>();
        List<String> removed = new ArrayList<>();
        for (Map.Entry<String, Object> entry : update.entrySet()) {
            String operator = entry.getKey();
            if (operator.equals("$v")) {
                continue;
            }
            if (!(entry.getValue() instanceof Map<?, ?> fields)) {
                return null;
            }
            if (operator.equals("$set")) {
                putAll(changes, fields);
            } else if (operator.equals("$unset")) {
                fields.keySet().forEach(name -> removed.add((String) name));
            } else if (operator.equals("diff")) {
                for (Map.Entry<?, ?> section : fields.entrySet()) {
                    if (!(section.getValue() instanceof Map<?, ?> body)) {
                        return null;
                    }
                    switch ((String) section.getKey()) {
                        case "u", "i" -> putAll(changes, body);
                        case "d" -> body.keySet().forEach(name -> removed.add((String) name));
                        default -> {
                            return null; // a nested or array diff: Python rejects it
                        }
                    }
                }
            } else {
                return null; // $inc, $push, ...: Python rejects it
            }
        }
        Map<String, String> image = image(changes, types);
        for (String name : removed) {
            image.put(name, null);
        }
        for (String name : image.keySet()) {
            if (name.contains(".")) {
                return null; // a nested path: Python keeps it with a warning
            }
        }
        return image;
    }

    private static void putAll(Map<String, Object> changes, Map<?, ?> fields) {
        for (Map.Entry<?, ?> entry : fields.entrySet()) {
            changes.put((String) entry.getKey(), entry.getValue());
        }
    }

    /**
     * {@code _sequence}: {@code clusterTime} "seconds:increment" zero-padded, else the DRS
     * {@code id} ({@code sortable_sequence}). A one-element array (its element may be null: no
     * sequence), or null to decline.
     */
    private static String[] sequence(String clusterTime, Object id) {
        if (clusterTime != null && !clusterTime.isEmpty()) {
            if (!Rows.isAscii(clusterTime)) {
                return null;
            }
            Matcher match = CLUSTER_TIME.matcher(clusterTime);
            if (match.matches()) {
                return match.group(1).length() > 1000 || match.group(2).length() > 1000 ? null
                        : new String[] {padded(match.group(1)) + ":" + padded(match.group(2))};
            }
        }
        if (id == null) {
            return new String[] {null};
        }
        String text = id instanceof String s ? s : id instanceof Json.Num num ? num.text() : null;
        String sequence = text == null ? null : Rows.sortableSequence(text);
        return sequence != null || Rows.isNoSequence(text) ? new String[] {sequence} : null;
    }

    /** {@code f"{int(digits):020d}"}. */
    private static String padded(String digits) {
        String number = digits.replaceFirst("^0+(?=.)", "");
        return number.length() >= 20 ? number : "0".repeat(20 - number.length()) + number;
    }

    /** {@code epoch_micros(value, "ms")} of integer epoch milliseconds; null unless in range. */
    private static Long epochMicros(Object value) {
        String text = value instanceof String s ? s : value instanceof Json.Num num && num.integer() ? num.text() : null;
        if (text == null || !Rows.isDigits(text, true, 1, 15)) {
            return null;
        }
        long micros = Long.parseLong(text) * 1000L;
        return micros < Rows.MIN_MICROS || micros > Rows.MAX_MICROS ? null : micros;
    }
}
