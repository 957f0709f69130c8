package cdclake.jvm;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * The fast path of {@code maxwell_json} ({@code include/cdclake/formats/maxwell_json.py}, whose rules
 * this repeats for the shape it takes). Taken: one document; {@code type} insert, update,
 * delete or bootstrap-insert (Maxwell's spelling, or INSERT/UPDATE/DELETE); a non-empty table
 * name; {@code ts} an integer (epoch seconds, or milliseconds from 1e11 on); {@code data} a
 * non-empty object and {@code old} an object or absent; {@code primary_key_columns} a non-empty
 * list naming columns of the image as spelled there; {@code xid} and {@code position} text or
 * numbers. Declined (to the Python decoder): everything else, DDL, controls, TiCDC batches,
 * encrypted rows, camel-cased fields, keys from the Kafka key or from {@code primary_key} alone.
 */
final class MaxwellJson {
    private static final Map<String, String> OPS = Map.of(
            "insert", "INSERT", "update", "UPDATE", "delete", "DELETE", "bootstrap-insert", "SNAPSHOT",
            "INSERT", "INSERT", "UPDATE", "UPDATE", "DELETE", "DELETE");
    /** Epoch numbers from here on are milliseconds ({@code micros_from_epoch_guess}). */
    private static final long MILLISECONDS_FROM = 100_000_000_000L;

    private MaxwellJson() {
    }

    static InternalRow decode(byte[] value) {
        if (!(Json.parse(value) instanceof Map<?, ?> doc)) {
            return null;
        }
        String op = doc.get("type") instanceof String type ? OPS.get(type) : null;
        Object database = doc.get("database");
        Object table = doc.get("table");
        if (op == null || !(database == null || database instanceof String)
                || !(table instanceof String tableName) || tableName.isEmpty()) {
            return null;
        }
        Long eventTime = eventTime(doc.get("ts"));
        String position = Json.metadataText(doc.get("position"));
        String transactionId = Json.metadataText(doc.get("xid"));
        if (eventTime == null || position == null && doc.get("position") != null
                || transactionId == null && doc.get("xid") != null) {
            return null;
        }
        if (!(doc.get("data") instanceof Map<?, ?> data) || data.isEmpty()) {
            return null;
        }
        Object old = doc.get("old");
        if (old != null && !(old instanceof Map<?, ?>)) {
            return null;
        }
        Map<String, String> row = Json.untypedImage(data);
        if (row == null) {
            return null;
        }
        Map<String, String> before = null;
        Map<String, String> after = null;
        if (op.equals("DELETE")) {
            before = row;
        } else {
            after = row;
            if (op.equals("UPDATE")) {
                Map<String, String> changed = old == null ? Map.of() : Json.untypedImage((Map<?, ?>) old);
                if (changed == null) {
                    return null;
                }
                for (String name : changed.keySet()) {
                    after.putIfAbsent(name, null); // changed, and left out of data: now NULL
                }
                before = new LinkedHashMap<>(after);
                before.putAll(changed);
            }
        }
        Map<String, String> keyed = op.equals("DELETE") ? before : after;
        if (!(doc.get("primary_key_columns") instanceof List<?> names) || names.isEmpty()) {
            return null;
        }
        List<String> keys = new ArrayList<>(names.size());
        for (Object name : names) {
            if (!(name instanceof String column)) {
                return null;
            }
            keys.add(column);
        }
        String rowKey = Rows.keyOf(keyed, keys);
        if (rowKey == null) {
            return null; // a key column the image lacks or spells otherwise: Python decides
        }
        return Rows.change(op, new Rows.Table(null, (String) database, null, tableName), keys,
                rowKey, before, after, op.equals("INSERT") || op.equals("SNAPSHOT"),
                new Rows.Lineage(eventTime, null, position, transactionId));
    }

    /** A row event's {@code ts} as epoch microseconds; null unless an integer of a printable time. */
    private static Long eventTime(Object ts) {
        if (!(ts instanceof Json.Num num) || !num.integer()) {
            return null;
        }
        String digits = num.text().startsWith("-") ? num.text().substring(1) : num.text();
        if (digits.length() > 15) {
            return null;
        }
        long epoch = Long.parseLong(num.text());
        long micros = Math.abs(epoch) >= MILLISECONDS_FROM ? epoch * 1_000L : epoch * 1_000_000L;
        return micros < Rows.MIN_MICROS || micros > Rows.MAX_MICROS ? null : micros;
    }
}
