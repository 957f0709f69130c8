package cdclake.jvm;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * The fast path of {@code debezium_json} ({@code include/cdclake/formats/debezium/}, whose rules
 * this repeats for the shape it takes): the envelope of the MySQL and PostgreSQL connectors,
 * schemaless or with schemas ({@code {"schema": ..., "payload": ...}}, the JsonConverter's
 * schemas.enable=true). Taken: {@code op} c, u, d or r; {@code source.connector} {@code mysql} or
 * {@code postgresql}; {@code source.db} and {@code source.table} non-empty text; row images of
 * plain values (text, numbers, booleans, null), kept as written, or, with schemas, typed by the
 * {@code after} struct's column schemas as {@link DebeziumSchema} reads them (integers, floats,
 * strings, booleans, fixed-scale decimals, dates, times and timestamps; their column types set);
 * a source time in the {@code ts_*} fields; the key from the Kafka key (a JSON object of plain
 * values, or a {schema, payload} envelope of one, typed by its schema) or none. Declined (to the
 * Python decoder): everything else: envelopes whose schema has another shape or a column schema
 * {@link DebeziumSchema} does not decode (bytes, Json, Geometry, structs, arrays, maps,
 * variable-scale decimals, ...), values Python would warn about or reject (out of range, a
 * schema and a value that disagree), CloudEvents, flattened rows, tombstones, DDL, truncates,
 * transaction and heartbeat events, other connectors (MongoDB, Cassandra, OMS, TiCDC, ...),
 * arrays, structs, cells and unavailable-value placeholders in the images.
 */
final class DebeziumJson {
    private static final Map<String, String> OPS = Map.of(
            "c", "INSERT", "u", "UPDATE", "d", "DELETE", "r", "SNAPSHOT");
    private static final Set<String> CONNECTORS = Set.of("mysql", "postgresql");
    private static final Set<String> SNAPSHOT_FLAGS = Set.of("true", "first", "first_in_data_collection",
            "last", "last_in_data_collection");
    /** {@code _TIME_FIELDS}, finest first, and their units in microseconds (negative: divide). */
    private static final String[] TIME_FIELDS = {"ts_ns", "ts_us", "ts_usec", "ts_micro", "ts_ms", "ts_sec"};
    private static final long[] TIME_FACTORS = {-1000, 1, 1, 1, 1000, 1_000_000};
    private static final String[] POSITION_FIELDS = {"lsn", "change_lsn", "scn", "commit_lsn",
            "commit_scn", "commit_ts", "vgtid"};
    private static final String[] TRANSACTION_FIELDS = {"txId", "gtid", "xid", "server_transaction_id",
            "commit_ts", "commit_lsn"};
    /** What the readers below return for a value the fast path leaves to Python (compared by identity). */
    private static final String UNREADABLE = new String("unreadable");
    /** Every text rendering of Debezium's default unavailable-value placeholder. */
    private static final Set<String> PLACEHOLDERS = placeholders("__debezium_unavailable_value");

    private DebeziumJson() {
    }

    static InternalRow decode(byte[] value, byte[] key) {
        if (!(Json.parse(value) instanceof Map<?, ?> message)) {
            return null;
        }
        Unwrapped unwrapped = unwrap(message, DebeziumSchema::valueSpecs);
        if (unwrapped == null) {
            return null;
        }
        Map<?, ?> doc = unwrapped.doc();
        Map<String, DebeziumSchema.Spec> specs = unwrapped.specs();
        if (doc.containsKey("payload") || doc.containsKey("specversion")
                || !(doc.containsKey("before") || doc.containsKey("after"))
                || !(doc.get("op") instanceof String code)
                || !(doc.get("source") instanceof Map<?, ?> source)
                || !(source.get("connector") instanceof String connector) || !CONNECTORS.contains(connector)
                || !(source.get("db") instanceof String database) || database.isEmpty()
                || !(source.get("table") instanceof String table) || table.isEmpty()
                || doc.containsKey("updateDescription") || doc.containsKey("patch")
                || doc.containsKey("tableChanges")) {
            return null;
        }
        String op = code.length() == 1 ? OPS.get(code.toLowerCase(Locale.ROOT)) : null;
        Object schema = source.get("schema");
        if (op == null || schema != null && !(schema instanceof String)) {
            return null;
        }
        if (op.equals("INSERT") && connector.equals("mysql") && code.equalsIgnoreCase("c")
                && isSnapshot(source.get("snapshot"))) {
            op = "SNAPSHOT"; // _row_op: MySQL's snapshot rows sent as creates
        }
        Object rawBefore = doc.get("before");
        Object rawAfter = doc.get("after");
        if (rawBefore != null && !(rawBefore instanceof Map<?, ?>) || rawAfter != null && !(rawAfter instanceof Map<?, ?>)) {
            return null;
        }
        Map<String, String> before = rawBefore == null ? null : image((Map<?, ?>) rawBefore, specs);
        Map<String, String> after = rawAfter == null ? null : image((Map<?, ?>) rawAfter, specs);
        if (rawBefore != null && before == null || rawAfter != null && after == null) {
            return null;
        }
        boolean inserts = op.equals("INSERT") || op.equals("SNAPSHOT");
        if (inserts && before != null && before.isEmpty()) {
            before = null;
        }
        if (op.equals("DELETE") && after != null && after.isEmpty()) {
            after = null;
        }
        if (!op.equals("DELETE") && (after == null || after.isEmpty())) {
            return null; // Python rejects it
        }
        Map<String, String> keyValues = new LinkedHashMap<>();
        List<String> keys = keys(key, keyValues);
        if (keys == null) {
            return null;
        }
        String rowKey = Rows.keyOf(op.equals("DELETE") ? before : after, keys);
        if (rowKey == null && !keys.isEmpty() && keyValues.keySet().containsAll(keys)) {
            List<String> values = new ArrayList<>(keys.size());
            for (String name : keys) {
                values.add(keyValues.get(name));
            }
            rowKey = Json.compact(values);
        }
        if (!keys.isEmpty() && rowKey == null && !inserts
                || op.equals("DELETE") && (before == null || before.isEmpty()) && rowKey == null
                || op.equals("UPDATE") && (before == null || before.isEmpty()) && rowKey == null) {
            return null; // Python rejects it
        }
        Long eventTime = time(source);
        Long producedTime = time(doc);
        String position = position(source);
        String transaction = transactionId(doc, source);
        if (eventTime == null || eventTime == 0 || producedTime == null && hasTime(doc)
                || position == UNREADABLE || transaction == UNREADABLE) {
            return null;
        }
        return Rows.change(op, new Rows.Table(connector, database, (String) schema, table), keys, rowKey,
                before, after, after != null, new Rows.Lineage(eventTime, null, position, transaction),
                specs == null ? Map.of() : DebeziumSchema.columnTypes(specs), producedTime == 0 ? null : producedTime);
    }

    private static boolean isSnapshot(Object flag) {
        return Boolean.TRUE.equals(flag)
                || flag instanceof String text && SNAPSHOT_FLAGS.contains(text.toLowerCase(Locale.ROOT));
    }

    /** A message, or a Kafka Connect envelope's payload, and its columns' specs (null without a schema). */
    private record Unwrapped(Map<?, ?> doc, Map<String, DebeziumSchema.Spec> specs) {
    }

    /**
     * {@code unwrap}: an envelope's payload object with the specs {@code readSpecs} reads of its
     * schema object, or the message itself, not an envelope, with none; null to decline (a
     * payload that is no object, a schema whose specs are not read).
     */
    private static Unwrapped unwrap(Map<?, ?> message,
                                    Function<Map<?, ?>, Map<String, DebeziumSchema.Spec>> readSpecs) {
        if (!isEnvelope(message)) {
            return new Unwrapped(message, null);
        }
        if (!(message.get("payload") instanceof Map<?, ?> payload)) {
            return null;
        }
        if (!(message.get("schema") instanceof Map<?, ?> schema)) {
            return new Unwrapped(payload, null);
        }
        Map<String, DebeziumSchema.Spec> specs = readSpecs.apply(schema);
        return specs == null ? null : new Unwrapped(payload, specs);
    }

    /** {@code unwrap}'s Kafka Connect envelope: a payload, and a schema or nothing else. */
    private static boolean isEnvelope(Map<?, ?> doc) {
        return doc.containsKey("payload") && (doc.size() == 1 || doc.size() == 2 && doc.containsKey("schema"));
    }

    /**
     * A row image ({@code _image}): values by their column's spec, else plain values as written
     * ({@code text_of}); null to decline.
     */
    private static Map<String, String> image(Map<?, ?> raw, Map<String, DebeziumSchema.Spec> specs) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> entry : raw.entrySet()) {
            String text = typed(entry.getValue(), specs == null ? null : specs.get(entry.getKey()));
            if (text == UNREADABLE || text == DebeziumSchema.UNREADABLE) {
                return null;
            }
            out.put((String) entry.getKey(), text);
        }
        return out;
    }

    /** {@code value_text}: by the spec when there is one; UNREADABLE (either class's) to decline. */
    private static String typed(Object value, DebeziumSchema.Spec spec) {
        if (spec == null || value == null) {
            return plain(value);
        }
        return value instanceof String text && PLACEHOLDERS.contains(text) ? UNREADABLE
                : DebeziumSchema.text(value, spec);
    }

    /** A plain value's text (null for null); UNREADABLE for arrays, objects and placeholders. */
    private static String plain(Object value) {
        if (value == null) {
            return null;
        }
        if (value instanceof String text) {
            return PLACEHOLDERS.contains(text) ? UNREADABLE : text;
        }
        return value instanceof Json.Num || value instanceof Boolean ? Json.textOf(value) : UNREADABLE;
    }

    /**
     * {@code _keys}: the key columns of the Kafka key (a JSON object of plain values, or a
     * {schema, payload} envelope of one, its values typed by the key schema; its values into
     * {@code values}), or none without a key; null to decline.
     */
    private static List<String> keys(byte[] key, Map<String, String> values) {
        if (key == null || key.length == 0) {
            return List.of();
        }
        if (!(Json.parse(key) instanceof Map<?, ?> message)) {
            return null; // no JSON object
        }
        if (isEnvelope(message) && message.get("payload") == null) {
            return List.of(); // a key of no columns
        }
        Unwrapped unwrapped = unwrap(message, DebeziumSchema::keySpecs);
        if (unwrapped == null) {
            return null;
        }
        Map<?, ?> doc = unwrapped.doc();
        Map<String, DebeziumSchema.Spec> specs = unwrapped.specs();
        if (doc.containsKey("payload") || doc.containsKey("TableId")) {
            return null; // no envelope, Flink CDC's table id
        }
        for (Map.Entry<?, ?> entry : doc.entrySet()) {
            String text = typed(entry.getValue(), specs == null ? null : specs.get(entry.getKey()));
            if (text == UNREADABLE || text == DebeziumSchema.UNREADABLE) {
                // (Python keeps a placeholder in a key: declined here, too)
                return null;
            }
            values.put((String) entry.getKey(), text);
        }
        return List.copyOf(values.keySet());
    }

    private static boolean hasTime(Map<?, ?> object) {
        for (String name : TIME_FIELDS) {
            if (object.get(name) != null) {
                return true;
            }
        }
        return false;
    }

    /** {@code _time}: the finest time field as epoch microseconds (0: none); null to decline. */
    private static Long time(Map<?, ?> object) {
        for (int i = 0; i < TIME_FIELDS.length; i++) {
            Object value = object.get(TIME_FIELDS[i]);
            if (value == null) {
                continue;
            }
            Long micros = micros(value, TIME_FACTORS[i]);
            if (micros == null || TIME_FIELDS[i].equals("ts_usec") && micros > Rows.MAX_MICROS) {
                return null;
            }
            if (TIME_FIELDS[i].equals("ts_ns") && micros % 1000 == 0 && object.get("ts_us") != null) {
                Long finer = micros(object.get("ts_us"), 1);
                if (finer == null) {
                    return null;
                }
                if (Math.floorDiv(finer, 1000) == micros / 1000) {
                    micros = finer;
                }
            }
            return micros > Rows.MAX_MICROS ? null : micros;
        }
        return 0L;
    }

    /**
     * An epoch count as the fast path takes it ({@code \d{1,18}|[1-8]\d{18}}): a non-negative
     * long, as sent (ts_ns has 19 digits).
     */
    private static boolean isEpochText(String text) {
        return Rows.isDigits(text, false, 1, 18)
                || Rows.isDigits(text, false, 19, 19) && text.charAt(0) >= '1' && text.charAt(0) <= '8';
    }

    /** A non-negative integer in a unit (factor: microseconds per unit, negative: units per microsecond). */
    private static Long micros(Object value, long factor) {
        if (!(value instanceof Json.Num n) || !n.integer() || !isEpochText(n.text())) {
            return null;
        }
        long number = Long.parseLong(n.text());
        if (factor < 0) {
            return number / -factor;
        }
        return number > Rows.MAX_MICROS / factor ? null : number * factor;
    }

    /** {@code _position}: binlog file:pos, else the first LSN/SCN-like field; UNREADABLE to decline. */
    private static String position(Map<?, ?> source) {
        Object file = source.get("file");
        Object pos = source.get("pos");
        if (file != null && !"".equals(file) && pos != null) {
            String fileText = text(file);
            String posText = text(pos);
            return fileText == null || posText == null ? UNREADABLE : fileText + ":" + posText;
        }
        if (source.get("ord") != null) {
            return UNREADABLE; // MongoDB's oplog position
        }
        for (String name : POSITION_FIELDS) {
            Object field = source.get(name);
            if (field != null) {
                String out = text(field);
                return out == null ? UNREADABLE : out;
            }
        }
        return null;
    }

    /** {@code _transaction_id}: the transaction block's id, else a source field; UNREADABLE to decline. */
    private static String transactionId(Map<?, ?> doc, Map<?, ?> source) {
        if (doc.get("transaction") instanceof Map<?, ?> transaction && transaction.get("id") != null) {
            String out = text(transaction.get("id"));
            return out == null ? UNREADABLE : out;
        }
        if (doc.get("transaction") != null && !(doc.get("transaction") instanceof Map<?, ?>)) {
            return UNREADABLE;
        }
        for (String name : TRANSACTION_FIELDS) {
            Object field = source.get(name);
            if (field != null && !"".equals(field)) {
                String out = text(field);
                return out == null ? UNREADABLE : out;
            }
        }
        return null;
    }

    /** Python's {@code str()} of text or a number; null for anything else. */
    private static String text(Object value) {
        return value instanceof String || value instanceof Json.Num ? Json.textOf(value) : null;
    }

    /** {@code Placeholder.of}'s whole-value texts of a placeholder. */
    private static Set<String> placeholders(String text) {
        byte[] raw = text.getBytes(StandardCharsets.UTF_8);
        String hex = HexFormat.of().formatHex(raw);
        Map<String, String> mapping = new LinkedHashMap<>();
        mapping.put(text, text);
        return Set.of(text, Base64.getEncoder().encodeToString(raw), hex, hex.toUpperCase(Locale.ROOT),
                Json.compact(mapping));
    }
}
