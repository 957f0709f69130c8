package cdclake.jvm;

import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The struct a fast-path decoder returns: the change-row fields a format decides (the lineage
 * and constant fields are filled in Spark by {@code spark_jobs/jvm_decode.py}). Times are epoch
 * microseconds (UTC), as in the Python rows. The decoders work in Java strings, lists and maps;
 * {@link #change} turns them into Spark's own values (UTF-8 strings, array and map data).
 */
final class Rows {
    /** The Spark type of the struct, from {@code fast_path.json} (the order {@link #change} fills). */
    static final String SCHEMA_DDL = FastPath.ROW_SCHEMA;

    /** Epoch microseconds of 0001-01-01 and 9999-12-31T23:59:59.999999 (what a row can hold). */
    static final long MIN_MICROS = -62_135_596_800_000_000L;
    static final long MAX_MICROS = 253_402_300_799_999_999L;

    private Rows() {
    }

    /** Where a change comes from: the source's database type, database, schema and table. */
    record Table(String dbType, String database, String schema, String name) {
    }

    /** Where a change sits in the source's history: commit time, sequence, position, transaction. */
    record Lineage(long eventTime, String sequence, String position, String transactionId) {
    }

    /**
     * {@code _sequence.sortable_sequence} of a vendor sequence's text: digits zero-padded to 20
     * (leading zeros dropped first), other text as is; null to decline (text Python would strip
     * or read as none, or not ASCII, where Python's digits and Java's differ).
     */
    static String sortableSequence(String text) {
        if (text == null || text.isEmpty() || !isAscii(text) || !text.strip().equals(text)
                || text.equalsIgnoreCase("null")) {
            return null;
        }
        if (text.chars().allMatch(c -> c >= '0' && c <= '9')) {
            String digits = text.replaceFirst("^0+", "");
            digits = digits.isEmpty() ? "0" : digits;
            return digits.length() >= 20 ? digits : "0".repeat(20 - digits.length()) + digits;
        }
        return text;
    }

    /** A sequence that {@code sortable_sequence} reads as none: "" or "null" (any case). */
    static boolean isNoSequence(Object value) {
        return value instanceof String s && (s.isEmpty() || s.equalsIgnoreCase("null"));
    }

    /** {@code YYYY-MM-DDTHH:MM:SS} of a wall-clock time, the whole seconds of the rows' ISO texts. */
    static String isoSeconds(LocalDateTime moment) {
        return String.format(Locale.ROOT, "%04d-%02d-%02dT%02d:%02d:%02d", moment.getYear(),
                moment.getMonthValue(), moment.getDayOfMonth(), moment.getHour(), moment.getMinute(),
                moment.getSecond());
    }

    /** {@code ".digits"}: {@code units} of a second in {@code places} digits, trailing zeros dropped; "" for none. */
    static String fraction(long units, int places) {
        if (units == 0) {
            return "";
        }
        return "." + String.format(Locale.ROOT, "%0" + places + "d", units).replaceFirst("0+$", "");
    }

    /**
     * True when {@code text} is {@code min} to {@code max} ASCII digits, after one leading minus
     * sign when {@code signed} (a regular expression's {@code -?\d{min,max}}, without one's cost:
     * these run for every integer value and time of a message).
     */
    static boolean isDigits(String text, boolean signed, int min, int max) {
        int start = signed && !text.isEmpty() && text.charAt(0) == '-' ? 1 : 0;
        int count = text.length() - start;
        if (count < min || count > max) {
            return false;
        }
        return digitsAt(text, start, count);
    }

    /** True when {@code text} has {@code count} ASCII digits from {@code from}. */
    static boolean digitsAt(String text, int from, int count) {
        for (int i = from; i < from + count; i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '9') {
                return false;
            }
        }
        return true;
    }

    /** The number that {@code count} ASCII digits from {@code from} write (see {@link #digitsAt}). */
    static int number(String text, int from, int count) {
        int value = 0;
        for (int i = from; i < from + count; i++) {
            value = value * 10 + (text.charAt(i) - '0');
        }
        return value;
    }

    /** {@code -?\d{1,18}}: an integer that a long holds, as sent. */
    static boolean isLongText(String text) {
        return isDigits(text, true, 1, 18);
    }

    static boolean isAscii(String text) {
        return text.chars().allMatch(c -> c < 0x80);
    }

    /** {@code base.key_of}: the key values' JSON array, or null unless the image has every key column. */
    static String keyOf(Map<String, String> image, List<String> keys) {
        if (image == null || image.isEmpty() || keys.isEmpty()) {
            return null;
        }
        List<String> values = new ArrayList<>(keys.size());
        for (String key : keys) {
            if (!image.containsKey(key)) {
                return null;
            }
            values.add(image.get(key));
        }
        return Json.compact(values);
    }

    static InternalRow change(String op, Table table, List<String> keyColumns, String rowKey,
                      Map<String, String> before, Map<String, String> after, boolean afterIsFull,
                      Lineage lineage) {
        return change(op, table, keyColumns, rowKey, before, after, afterIsFull, lineage, Map.of(), null);
    }

    static InternalRow change(String op, Table table, List<String> keyColumns, String rowKey,
                      Map<String, String> before, Map<String, String> after, boolean afterIsFull,
                      Lineage lineage, Map<String, String> columnTypes, Long producedTime) {
        return change(op, table, keyColumns, rowKey, before, after, afterIsFull, lineage, columnTypes,
                producedTime, null, null);
    }

    /**
     * A change row that is one half of a two-message update: {@code pairKey} names the pair and
     * {@code pairRole} (BEFORE or AFTER) the half (Python's {@code _pair_key}/{@code _pair_role}).
     */
    static InternalRow change(String op, Table table, List<String> keyColumns, String rowKey,
                      Map<String, String> before, Map<String, String> after, boolean afterIsFull,
                      Lineage lineage, Map<String, String> columnTypes, Long producedTime,
                      String pairKey, String pairRole) {
        return new GenericInternalRow(new Object[] {utf8(op), utf8(table.dbType()),
            utf8(table.database()), utf8(table.schema()), utf8(table.name()), strings(keyColumns),
            utf8(rowKey), map(before), map(after), afterIsFull, map(columnTypes), lineage.eventTime(),
            producedTime, utf8(lineage.sequence()), utf8(lineage.position()),
            utf8(lineage.transactionId()), utf8(pairKey), utf8(pairRole)});
    }

    private static UTF8String utf8(String text) {
        return text == null ? null : UTF8String.fromString(text);
    }

    private static ArrayData strings(List<String> texts) {
        if (texts == null) {
            return null;
        }
        Object[] items = new Object[texts.size()];
        for (int i = 0; i < items.length; i++) {
            items[i] = utf8(texts.get(i));
        }
        return new GenericArrayData(items);
    }

    private static MapData map(Map<String, String> map) {
        if (map == null) {
            return null;
        }
        Names names = NAMES.get();
        Object[] keys = new Object[map.size()];
        Object[] values = new Object[keys.length];
        int i = 0;
        for (Map.Entry<String, String> entry : map.entrySet()) {
            keys[i] = names.utf8(entry.getKey());
            values[i++] = utf8(entry.getValue());
        }
        return new ArrayBasedMapData(new GenericArrayData(keys), new GenericArrayData(values));
    }

    private static final ThreadLocal<Names> NAMES = ThreadLocal.withInitial(Names::new);

    /**
     * The UTF-8 strings of the column names one thread has put in images, by the Java string's
     * identity (a slot per hash, the last name kept): the parsed names are interned
     * ({@link JsonReader}), so every message's same names are encoded once. Spark's UTF-8 strings
     * never change, so rows can share them.
     */
    private static final class Names {
        private static final int SLOTS = 1024;
        private final String[] texts = new String[SLOTS];
        private final UTF8String[] utf8 = new UTF8String[SLOTS];

        UTF8String utf8(String text) {
            int slot = text.hashCode() & (SLOTS - 1);
            if (texts[slot] == text) {
                return utf8[slot];
            }
            UTF8String encoded = UTF8String.fromString(text);
            texts[slot] = text;
            utf8[slot] = encoded;
            return encoded;
        }
    }
}
