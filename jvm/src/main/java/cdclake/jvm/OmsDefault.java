package cdclake.jvm;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * The fast path of {@code oms_default} ({@code include/cdclake/formats/_oms.py}, whose rules this
 * repeats for the shape it takes). Taken: {@code recordType} INSERT, UPDATE, DELETE or ROW
 * (upper case, as OMS writes it) with the image it needs; no {@code __light_type} (values by JSON
 * kind, as Maxwell's); a non-empty {@code table_name}; {@code allMetaData.timestamp} epoch
 * seconds as digits (a fraction of at most 6 digits); metadata fields text or numbers; the key
 * from the image, else from {@code record_primary_value}. Declined (to the Python decoder):
 * everything else, DDL and HEARTBEAT records, typed images ({@code oms_default_ext}).
 */
final class OmsDefault {
    private static final Map<String, String> OPS = Map.of(
            "INSERT", "INSERT", "UPDATE", "UPDATE", "DELETE", "DELETE", "ROW", "SNAPSHOT");
    private static final Set<String> OCEANBASE_DB_TYPES =
            Set.of("OB_MYSQL", "OB_ORACLE", "OCEANBASE", "OB_IN_ORACLE_MODE");
    private static final String LIGHT_TYPE = "__light_type";
    private static final String KEY_SEPARATOR = "\u0001";
    private static final Pattern EPOCH_SECONDS = Pattern.compile("(\\d{1,12})(?:\\.(\\d{1,6}))?");

    private OmsDefault() {
    }

    static InternalRow decode(byte[] value) {
        if (!(Json.parse(value) instanceof Map<?, ?> doc)
                || !(doc.get("allMetaData") instanceof Map<?, ?> meta)
                || !(doc.get("recordType") instanceof String recordType)) {
            return null;
        }
        String op = OPS.get(recordType);
        Object prev = doc.get("prevStruct");
        Object post = doc.get("postStruct");
        if (op == null || prev != null && !(prev instanceof Map<?, ?>)
                || post != null && !(post instanceof Map<?, ?>)
                || (op.equals("DELETE") ? prev : post) == null
                || prev instanceof Map<?, ?> p && p.containsKey(LIGHT_TYPE)
                || post instanceof Map<?, ?> q && q.containsKey(LIGHT_TYPE)) {
            return null;
        }
        String[] texts = new String[7];
        String[] names = {"dbType", "db", "table_name", "checkpoint", "uniqueId", "transId",
                          "record_primary_key"};
        for (int i = 0; i < names.length; i++) {
            Object field = meta.get(names[i]);
            texts[i] = Json.metadataText(field);
            if (texts[i] == null && field != null) {
                return null;
            }
        }
        String dbType = texts[0];
        String db = texts[1];
        String table = texts[2];
        if (table == null || table.isEmpty() || dbType != null && !Rows.isAscii(dbType)) {
            return null;
        }
        String tenant = null;
        if (db != null && dbType != null && OCEANBASE_DB_TYPES.contains(dbType.toUpperCase(Locale.ROOT))
                && db.contains(".")) {
            int dot = db.indexOf('.');
            tenant = db.substring(0, dot);
            db = db.substring(dot + 1);
        }
        Long eventTime = eventTime(meta.get("timestamp"));
        Object sequenceField = meta.get("storeDataSequence");
        String sequence = Rows.sortableSequence(sequenceField instanceof String text ? text
                : sequenceField instanceof Json.Num n ? n.text() : null);
        if (eventTime == null || sequence == null && sequenceField != null && !Rows.isNoSequence(sequenceField)) {
            return null;
        }
        String transactionId = texts[4] != null && !texts[4].isEmpty() ? texts[4] : texts[5];

        Map<String, String> before = null;
        Map<String, String> after = null;
        if ((op.equals("UPDATE") || op.equals("DELETE")) && prev != null) {
            before = Json.untypedImage((Map<?, ?>) prev);
            if (before == null) {
                return null;
            }
        }
        if (!op.equals("DELETE")) {
            after = Json.untypedImage((Map<?, ?>) post);
            if (after == null) {
                return null;
            }
        }
        List<String> keys = new ArrayList<>();
        for (String name : splitKeyText(texts[6])) {
            if (!name.isEmpty()) {
                keys.add(name);
            }
        }
        String rowKey = Rows.keyOf(op.equals("DELETE") ? before : after, keys);
        if (rowKey == null) {
            Object primaryValue = meta.get("record_primary_value");
            String values = Json.metadataText(primaryValue);
            List<String> parts = splitKeyText(values);
            if (values == null && primaryValue != null || parts.isEmpty() && !keys.isEmpty()) {
                return null; // the key from the before image, or a rejection: Python decides
            }
            rowKey = parts.isEmpty() ? null : Json.compact(parts);
        }
        return Rows.change(op, new Rows.Table(dbType, db, tenant, table), keys, rowKey, before, after,
                !op.equals("DELETE"), new Rows.Lineage(eventTime, sequence, texts[3], transactionId));
    }

    /** {@code split_key_text}: U+0001-joined names or values (or the six characters \\u0001). */
    private static List<String> splitKeyText(String text) {
        if (text == null || text.isEmpty()) {
            return List.of();
        }
        String separator = !text.contains(KEY_SEPARATOR) && text.contains("\\u0001") ? "\\u0001" : KEY_SEPARATOR;
        List<String> parts = new ArrayList<>();
        int start = 0;
        for (int at = text.indexOf(separator); at >= 0; at = text.indexOf(separator, start)) {
            parts.add(text.substring(start, at));
            start = at + separator.length();
        }
        parts.add(text.substring(start));
        return parts;
    }

    /** {@code allMetaData.timestamp} (epoch seconds) as epoch microseconds; null to decline. */
    private static Long eventTime(Object value) {
        String text = value instanceof String s ? s : value instanceof Json.Num n ? n.text() : null;
        Matcher match = text == null ? null : EPOCH_SECONDS.matcher(text);
        if (match == null || !match.matches()) {
            return null;
        }
        String fraction = match.group(2) == null ? "" : match.group(2);
        long micros = Long.parseLong(match.group(1)) * 1_000_000L
                + (fraction.isEmpty() ? 0 : Long.parseLong((fraction + "00000").substring(0, 6)));
        return micros > Rows.MAX_MICROS ? null : micros;
    }
}
